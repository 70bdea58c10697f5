import { z } from 'zod';

const trustProxySchema = z
  .string()
  .trim()
  .transform((value, ctx): boolean | number | string[] => {
    if (value === '' || value === '0' || value.toLowerCase() === 'false') return false;
    if (/^\d+$/.test(value)) return Number(value);
    const cidrs = value.split(',').map((part) => part.trim()).filter(Boolean);
    const cidr = /^[0-9a-fA-F:.]+(\/\d{1,3})?$/;
    if (cidrs.length === 0 || !cidrs.every((part) => cidr.test(part))) {
      ctx.addIssue({ code: 'custom', message: 'must be a hop count or a comma-separated list of IPs/CIDRs' });
      return z.NEVER;
    }
    return cidrs;
  });

const origin = z
  .url({ protocol: /^https?$/ })
  .transform((value) => new URL(value).origin);

const envSchema = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  HOST: z.string().min(1).default('0.0.0.0'),
  DATA_DIR: z.string().min(1).default('./data'),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// or postgresql:// URL')
    .optional(),
  BASE_URL: origin.optional(),
  APP_URL: origin.optional(),
  AUTH_SECRET: z.string().min(32, 'must be at least 32 characters').optional(),
  SMTP_URL: z.string().regex(/^smtps?:\/\//, 'must be an smtp:// or smtps:// URL').optional(),
  MAIL_FROM: z.string().min(3).default('CommOps <no-reply@localhost>'),
  TRUST_PROXY: trustProxySchema.default(false),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** Multiplies every rate-limit allowance; 1 is the spec. Only for load tests of a private deployment. */
  RATE_LIMIT_FACTOR: z.coerce.number().int().min(1).default(1),
  /** How long a process may reuse a session or membership it has read (seconds). */
  AUTH_CACHE_SECONDS: z.coerce.number().min(0).max(60).default(5),
  /** Concurrent job workers per job type in this process; 0 makes an API-only process. */
  WORKERS: z.coerce.number().int().min(0).max(64).default(2),
  /** The Meta Graph API, versioned: WhatsApp Cloud API, Messenger and Instagram sends go here. */
  GRAPH_API_URL: z
    .url({ protocol: /^https?$/ })
    .transform((value) => value.replace(/\/+$/, ''))
    .default('https://graph.facebook.com/v21.0'),
  /** How often an idle worker looks for new jobs (seconds; pg-boss's minimum is 0.5). */
  JOB_POLL_SECONDS: z.coerce.number().min(0.5).max(60).default(0.5),
});

export type Config = {
  port: number;
  host: string;
  dataDir: string;
  databaseUrl: string | undefined;
  baseUrl: string;
  appUrl: string;
  authSecret: string | undefined;
  smtpUrl: string | undefined;
  mailFrom: string;
  trustProxy: boolean | number | string[];
  logLevel: string;
  rateLimitFactor: number;
  authCacheMs: number;
  workers: number;
  jobPollSeconds: number;
  graphApiUrl: string;
};

export class ConfigError extends Error {}

/** Reads the environment once; a bad value stops the process with a message naming the variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== ''));
  const parsed = envSchema.safeParse(cleaned);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => `  ${issue.path.join('.')}: ${issue.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  const e = parsed.data;
  if (e.DATABASE_URL && !e.AUTH_SECRET) {
    throw new ConfigError('Invalid configuration:\n  AUTH_SECRET: required when DATABASE_URL is set (at least 32 characters)');
  }
  const baseUrl = e.BASE_URL ?? `http://localhost:${e.PORT}`;
  return {
    port: e.PORT,
    host: e.HOST,
    dataDir: e.DATA_DIR,
    databaseUrl: e.DATABASE_URL,
    baseUrl,
    appUrl: e.APP_URL ?? baseUrl,
    authSecret: e.AUTH_SECRET,
    smtpUrl: e.SMTP_URL,
    mailFrom: e.MAIL_FROM,
    trustProxy: e.TRUST_PROXY,
    logLevel: e.LOG_LEVEL,
    rateLimitFactor: e.RATE_LIMIT_FACTOR,
    authCacheMs: e.AUTH_CACHE_SECONDS * 1000,
    workers: e.WORKERS,
    jobPollSeconds: e.JOB_POLL_SECONDS,
    graphApiUrl: e.GRAPH_API_URL,
  };
}
