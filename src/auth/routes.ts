import { isAPIError } from 'better-auth/api';
import { eq } from 'drizzle-orm';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { AppServices } from '../app.js';
import { sessions, users, verifications } from '../db/schema/index.js';
import type { Api } from '../http/api.js';
import { iso } from '../http/api.js';
import { AppError, errorBody, errors, validationErrorBody } from '../http/errors.js';
import { emailField as email } from '../http/fields.js';
import { readCookie } from '../http/guard.js';
import { createOrganization } from '../modules/account/service.js';
import { PASSWORD_MAX, PASSWORD_MIN, SESSION_COOKIE } from './auth.js';

const newPassword = z
  .string()
  .min(PASSWORD_MIN, `Password must be at least ${PASSWORD_MIN} characters`)
  .max(PASSWORD_MAX, `Password must be at most ${PASSWORD_MAX} characters`);

const userBody = z
  .object({ id: z.string(), email: z.string(), name: z.string(), emailVerified: z.boolean() })
  .meta({ id: 'User' });
const sessionBody = z.object({ id: z.string(), userId: z.string(), expiresAt: z.string() }).meta({ id: 'Session' });

const signUpBody = z.strictObject({ email, password: newPassword, name: z.string().trim().min(1).max(200) });
const signInBody = z.object({ email, password: z.string().min(1).max(1024) });
const forgetPasswordBody = z.object({ email, redirectTo: z.string().max(2048).optional() });
const resetPasswordBody = z.object({ token: z.string().min(1).max(512), newPassword });
const statusBody = z.object({ status: z.boolean() });

const authErrors = { 400: validationErrorBody, 401: errorBody, 409: errorBody, 429: errorBody, 500: errorBody };

/** better-auth's failures, in the spec's shapes. */
function fromBetterAuth(error: unknown): unknown {
  if (!isAPIError(error)) return error;
  const code = (error.body as { code?: string } | undefined)?.code ?? '';
  const message = error.body?.message ?? error.message;
  // FAILED_TO_CREATE_USER: the unique e-mail index refused a concurrent sign-up of the same address.
  if (code.startsWith('USER_ALREADY_EXISTS') || code === 'FAILED_TO_CREATE_USER') return errors.conflict('An account with this email already exists');
  if (code === 'INVALID_EMAIL_OR_PASSWORD') return new AppError('unauthorized', 'Invalid email or password');
  if (code === 'INVALID_TOKEN') return errors.validation([{ path: 'token', message: 'Invalid or expired token' }], 'Invalid or expired token');
  if (code === 'INVALID_EMAIL') return errors.validation([{ path: 'email', message }]);
  if (code.startsWith('PASSWORD_TOO')) return errors.validation([{ path: 'password', message }]);
  if (error.statusCode === 401) return errors.unauthorized();
  if (error.statusCode === 403) return errors.forbidden();
  if (error.statusCode === 400) return errors.validation([{ path: '', message }], message);
  return error;
}

/** Headers better-auth sees: the session cookie, the user agent and the client IP Fastify resolved. */
function authHeaders(request: FastifyRequest): Headers {
  const headers = new Headers({ 'x-client-ip': request.ip });
  const token = readCookie(request.headers.cookie, SESSION_COOKIE);
  if (token) headers.set('cookie', `${SESSION_COOKIE}=${token}`);
  const agent = request.headers['user-agent'];
  if (agent) headers.set('user-agent', agent);
  return headers;
}

function passCookies(reply: FastifyReply, headers: Headers): void {
  const cookies = headers.getSetCookie();
  if (cookies.length > 0) reply.header('set-cookie', cookies);
}

function publicUser(user: { id: string; email: string; name: string; emailVerified: boolean }) {
  return { id: user.id, email: user.email, name: user.name, emailVerified: user.emailVerified };
}

/** A redirect for the reset link must land on the dashboard or the API itself. */
function checkRedirect(redirectTo: string | undefined, trusted: string[], appUrl: string): void {
  if (redirectTo === undefined) return;
  let origin: string | undefined;
  try {
    origin = new URL(redirectTo, appUrl).origin;
  } catch {
    origin = undefined;
  }
  if (!origin || !trusted.includes(origin)) {
    throw errors.validation([{ path: 'redirectTo', message: 'Must be a URL on the dashboard origin' }]);
  }
}

export function registerAuthRoutes(app: Api, services: AppServices): void {
  const { auth, database, lockout, cache, config } = services;
  const db = database.db;
  const tags = ['Auth'];
  const publicRoute = { access: 'public' as const };

  app.post(
    '/api/auth/sign-up/email',
    {
      config: publicRoute,
      schema: {
        tags,
        summary: 'Create an account; also creates its organization with a "Default" workspace',
        security: [],
        body: signUpBody,
        response: { 200: z.object({ user: userBody, session: sessionBody }), ...authErrors },
      },
    },
    async (request, reply) => {
      const { headers, response } = await auth.api
        .signUpEmail({ body: request.body, headers: authHeaders(request), returnHeaders: true })
        .catch((error: unknown) => {
          throw fromBetterAuth(error);
        });
      const user = response.user;
      try {
        await db.transaction((tx) =>
          createOrganization(tx, { userId: user.id, name: `${user.name}'s organization`, workspaceName: 'Default' }),
        );
      } catch (error) {
        await db.delete(users).where(eq(users.id, user.id));
        throw error;
      }
      const [session] = await db
        .select({ id: sessions.id, userId: sessions.userId, expiresAt: sessions.expiresAt })
        .from(sessions)
        .where(eq(sessions.token, response.token ?? ''));
      if (!session) throw new Error('sign-up created no session');
      passCookies(reply, headers);
      return { user: publicUser(user), session: { ...session, expiresAt: iso(session.expiresAt) } };
    },
  );

  app.post(
    '/api/auth/sign-in/email',
    {
      config: publicRoute,
      schema: {
        tags,
        summary: 'Sign in; sets the session cookie. 5 failures per e-mail and IP lock sign-in for 15 minutes (429)',
        security: [],
        body: signInBody,
        response: { 200: z.object({ user: userBody }), ...authErrors },
      },
    },
    async (request, reply) => {
      const { email, password } = request.body;
      const locked = await lockout.secondsLocked(email, request.ip);
      if (locked !== null) throw errors.tooManyRequests(locked);
      try {
        const { headers, response } = await auth.api.signInEmail({
          body: { email, password },
          headers: authHeaders(request),
          returnHeaders: true,
        });
        await lockout.reset(email, request.ip);
        passCookies(reply, headers);
        return { user: publicUser(response.user) };
      } catch (error) {
        const mapped = fromBetterAuth(error);
        if (mapped instanceof AppError && mapped.code === 'unauthorized') await lockout.recordFailure(email, request.ip);
        throw mapped;
      }
    },
  );

  app.post(
    '/api/auth/sign-out',
    {
      config: publicRoute,
      schema: { tags, summary: 'End the current session and clear the cookie', response: { 200: z.object({ success: z.boolean() }) } },
    },
    async (request, reply) => {
      const token = readCookie(request.headers.cookie, SESSION_COOKIE);
      if (token) {
        cache.forgetSession(token);
        const { headers } = await auth.api
          .signOut({ headers: authHeaders(request), returnHeaders: true })
          .catch(() => ({ headers: new Headers() }));
        passCookies(reply, headers);
      }
      if (!reply.hasHeader('set-cookie')) {
        reply.header('set-cookie', `${SESSION_COOKIE}=; Max-Age=0; Path=/; HttpOnly; Secure; SameSite=Lax`);
      }
      return { success: true };
    },
  );

  app.get(
    '/api/auth/get-session',
    {
      config: publicRoute,
      schema: {
        tags,
        summary: 'The current session and user, or null without a valid session',
        response: { 200: z.object({ user: userBody, session: sessionBody }).nullable() },
      },
    },
    async (request, reply) => {
      const { headers, response } = await auth.api.getSession({ headers: authHeaders(request), returnHeaders: true });
      passCookies(reply, headers);
      if (!response) return null;
      const { session, user } = response;
      return {
        user: publicUser(user),
        session: { id: session.id, userId: session.userId, expiresAt: iso(session.expiresAt) },
      };
    },
  );

  app.post(
    '/api/auth/forget-password',
    {
      config: publicRoute,
      schema: {
        tags,
        summary: 'Mail a password-reset link; answers the same whether or not the e-mail has an account',
        description: `The link is \`${'{APP_URL}'}/reset-password?token=…\` (or \`redirectTo\`, which must be on the dashboard origin) and works once, for one hour.`,
        security: [],
        body: forgetPasswordBody,
        response: { 200: z.object({ status: z.boolean(), message: z.string() }), ...authErrors },
      },
    },
    async (request) => {
      const { email, redirectTo } = request.body;
      checkRedirect(redirectTo, [config.appUrl, config.baseUrl], config.appUrl);
      const absolute = redirectTo === undefined ? undefined : new URL(redirectTo, config.appUrl).href;
      try {
        await auth.api.requestPasswordReset({ body: { email, redirectTo: absolute }, headers: authHeaders(request) });
      } catch (error) {
        request.log.error({ err: error }, 'password reset request failed');
      }
      return { status: true, message: 'If this email has an account, a reset link has been sent to it' };
    },
  );

  app.post(
    '/api/auth/reset-password',
    {
      config: publicRoute,
      schema: {
        tags,
        summary: 'Set a new password with a reset token; the token works once and ends every session of the user',
        security: [],
        body: resetPasswordBody,
        response: { 200: statusBody, ...authErrors },
      },
    },
    async (request) => {
      const { token, newPassword: password } = request.body;
      const [pending] = await db
        .select({ userId: verifications.value })
        .from(verifications)
        .where(eq(verifications.identifier, `reset-password:${token}`));
      await auth.api.resetPassword({ body: { token, newPassword: password } }).catch((error: unknown) => {
        throw fromBetterAuth(error);
      });
      if (pending) cache.forgetUser(pending.userId);
      return { status: true };
    },
  );
}
