import { lt } from 'drizzle-orm';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { RateLimiterDrizzle, RateLimiterRes } from 'rate-limiter-flexible';
import type { Db } from '../db/client.js';
import { rateLimitCounters } from '../db/schema/index.js';
import { errors } from './errors.js';

interface Tier {
  name: string;
  /** Matches `METHOD /path` exactly, or every path under a prefix ending in '/'. */
  method?: string;
  path: string;
  points: number;
  seconds: number;
}

/** The spec's six tiers, most restrictive first. A request counts against its first auth tier, then `api`. */
export const RATE_LIMIT_TIERS: readonly Tier[] = [
  { name: 'forget-password', method: 'POST', path: '/api/auth/forget-password', points: 3, seconds: 3600 },
  { name: 'reset-password', method: 'POST', path: '/api/auth/reset-password', points: 3, seconds: 3600 },
  { name: 'sign-in', method: 'POST', path: '/api/auth/sign-in/email', points: 5, seconds: 60 },
  { name: 'sign-up', method: 'POST', path: '/api/auth/sign-up/email', points: 3, seconds: 300 },
  { name: 'auth', path: '/api/auth/', points: 10, seconds: 60 },
  { name: 'api', path: '/api/', points: 100, seconds: 60 },
];

/** Paths that are not counted at all: liveness probes must not be throttled. */
const EXEMPT = new Set(['/api/health']);

function matches(tier: Tier, method: string, path: string): boolean {
  if (tier.method && tier.method !== method) return false;
  return tier.path.endsWith('/') ? path.startsWith(tier.path) : path === tier.path;
}

type Limiter = { tier: Tier; limiter: RateLimiterDrizzle };

function setHeaders(reply: FastifyReply, points: number, res: RateLimiterRes): void {
  reply.header('RateLimit-Limit', String(points));
  reply.header('RateLimit-Remaining', String(Math.max(0, res.remainingPoints)));
  reply.header('RateLimit-Reset', String(Math.max(0, Math.ceil(res.msBeforeNext / 1000))));
}

async function consume(limiter: RateLimiterDrizzle, key: string): Promise<{ ok: boolean; res: RateLimiterRes }> {
  try {
    return { ok: true, res: await limiter.consume(key) };
  } catch (rejection) {
    if (rejection instanceof RateLimiterRes) return { ok: false, res: rejection };
    throw rejection;
  }
}

/** Per-IP fixed-window limits with counters in the database, so every process shares them and restarts keep them. */
export function registerRateLimits(app: FastifyInstance, options: { db: Db; factor: number }): void {
  const limiters: Limiter[] = RATE_LIMIT_TIERS.map((tier) => ({
    tier,
    limiter: new RateLimiterDrizzle({
      storeClient: options.db,
      schema: rateLimitCounters,
      keyPrefix: `rl:${tier.name}`,
      points: tier.points * options.factor,
      duration: tier.seconds,
      clearExpiredByTimeout: false,
    }),
  }));
  const general = limiters.at(-1)!;
  const specific = limiters.slice(0, -1);

  app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    const path = request.url.split('?', 1)[0]!;
    if (!path.startsWith('/api/') || EXEMPT.has(path) || request.method === 'OPTIONS') return;
    const chain = [specific.find((l) => matches(l.tier, request.method, path)), general].filter(
      (l): l is Limiter => l !== undefined,
    );
    let closest: { limiter: Limiter; res: RateLimiterRes } | undefined;
    for (const entry of chain) {
      const { ok, res } = await consume(entry.limiter, request.ip);
      if (!ok) {
        setHeaders(reply, entry.limiter.points, res);
        throw errors.tooManyRequests(Math.ceil(res.msBeforeNext / 1000));
      }
      if (!closest || res.remainingPoints < closest.res.remainingPoints) closest = { limiter: entry, res };
    }
    if (closest) setHeaders(reply, closest.limiter.limiter.points, closest.res);
  });

  const sweep = setInterval(() => {
    options.db
      .delete(rateLimitCounters)
      .where(lt(rateLimitCounters.expire, new Date(Date.now() - 60 * 60 * 1000)))
      .catch((err: unknown) => app.log.warn({ err }, 'rate-limit sweep failed'));
  }, 5 * 60 * 1000);
  sweep.unref();
  app.addHook('onClose', async () => clearInterval(sweep));
}
