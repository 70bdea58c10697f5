import { betterAuth } from 'better-auth/minimal';
import { drizzleAdapter } from 'better-auth/adapters/drizzle';
import type { FastifyBaseLogger } from 'fastify';
import type { Db } from '../db/client.js';
import { accounts, sessions, users, verifications } from '../db/schema/index.js';
import { newId } from '../ids.js';
import type { Mailer } from '../mail/mailer.js';

export const SESSION_COOKIE = 'service-auth.session_token';
export const SESSION_SECONDS = 7 * 24 * 60 * 60;
export const SESSION_REFRESH_AFTER_SECONDS = 24 * 60 * 60;
export const RESET_TOKEN_SECONDS = 60 * 60;
export const PASSWORD_MIN = 8;
export const PASSWORD_MAX = 128;

export interface AuthOptions {
  db: Db;
  secret: string;
  baseUrl: string;
  appUrl: string;
  mailer: Mailer;
  log: FastifyBaseLogger;
}

/** The link mailed for a reset: the app's reset page (or the caller's `redirectTo`) with the token. */
export function resetLink(appUrl: string, betterAuthUrl: string, token: string): string {
  const requested = new URL(betterAuthUrl).searchParams.get('callbackURL');
  const target = new URL(requested || '/reset-password', appUrl);
  target.searchParams.set('token', token);
  return target.href;
}

/**
 * better-auth does the credential work (hashing, sessions, reset tokens). Its HTTP handler is not mounted:
 * our own routes call `auth.api.*` so that paths, bodies, errors and cookies follow the spec.
 */
export function createAuth(options: AuthOptions) {
  return betterAuth({
    appName: 'CommOps',
    baseURL: options.baseUrl,
    basePath: '/api/auth',
    secret: options.secret,
    trustedOrigins: [...new Set([options.baseUrl, options.appUrl])],
    telemetry: { enabled: false },
    // Its own warnings ("Invalid password", "User not found") are routine here: keep them at debug in our log.
    logger: {
      level: 'warn',
      log: (level, message) => options.log[level === 'error' ? 'error' : 'debug']({ component: 'better-auth' }, message),
    },
    // Our own database-backed limiter and lockout apply; better-auth's in-memory one would not be shared.
    rateLimit: { enabled: false },
    database: drizzleAdapter(options.db, {
      provider: 'pg',
      transaction: true,
      schema: { user: users, session: sessions, account: accounts, verification: verifications },
    }),
    emailAndPassword: {
      enabled: true,
      autoSignIn: true,
      minPasswordLength: PASSWORD_MIN,
      maxPasswordLength: PASSWORD_MAX,
      resetPasswordTokenExpiresIn: RESET_TOKEN_SECONDS,
      revokeSessionsOnPasswordReset: true,
      sendResetPassword: async ({ user, url, token }) => {
        await options.mailer.send({
          to: user.email,
          subject: 'Reset your password',
          text: [
            `Hello ${user.name},`,
            '',
            'Someone asked to reset the password of your account. To choose a new one, open this link within an hour:',
            resetLink(options.appUrl, url, token),
            '',
            'If it was not you, ignore this message: your password stays as it is.',
          ].join('\n'),
        });
      },
    },
    session: {
      expiresIn: SESSION_SECONDS,
      updateAge: SESSION_REFRESH_AFTER_SECONDS,
    },
    advanced: {
      cookiePrefix: 'service-auth',
      useSecureCookies: false,
      defaultCookieAttributes: { secure: true, httpOnly: true, sameSite: 'lax', path: '/' },
      database: { generateId: () => newId() },
      // Our routes pass the client IP that Fastify resolved (TRUST_PROXY aware) in this header.
      ipAddress: { ipAddressHeaders: ['x-client-ip'] },
      disableCSRFCheck: true, // enforced for every route by our own Origin check (src/http/security.ts)
    },
  });
}

export type Auth = ReturnType<typeof createAuth>;
