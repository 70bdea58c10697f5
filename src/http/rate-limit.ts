import { lt } from 'drizzle-orm';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { RateLimiterDrizzle, RateLimiterRes } from 'rate-limiter-flexible';
import type { Db } from '../db/client.js';
import { rateLimitCounters } from '../db/schema/index.js';
import { BatchedWindowCounter, type Verdict } from './batched-counter.js';
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

function setHeaders(reply: FastifyReply, verdict: Verdict): void {
  reply.header('RateLimit-Limit', String(verdict.limit));
  reply.header('RateLimit-Remaining', String(verdict.remaining));
  reply.header('RateLimit-Reset', String(Math.ceil(verdict.msBeforeNext / 1000)));
}

/** An auth tier: few requests, so each is counted in the database at once and the limit is exact everywhere. */
class ExactCounter {
  private readonly limiter: RateLimiterDrizzle;

  constructor(db: Db, keyPrefix: string, readonly points: number, seconds: number) {
    this.limiter = new RateLimiterDrizzle({
      storeClient: db,
      schema: rateLimitCounters,
      keyPrefix,
      points,
      duration: seconds,
      clearExpiredByTimeout: false,
    });
  }

  async consume(id: string): Promise<Verdict> {
    let res: RateLimiterRes;
    let ok = true;
    try {
      res = await this.limiter.consume(id);
    } catch (rejection) {
      if (!(rejection instanceof RateLimiterRes)) throw rejection;
      res = rejection;
      ok = false;
    }
    return { ok, limit: this.points, remaining: Math.max(0, res.remainingPoints), msBeforeNext: Math.max(0, res.msBeforeNext) };
  }
}

type Counter = { tier: Tier; counter: { consume(id: string): Promise<Verdict> } };

/** Per-IP fixed-window limits with counters in the database, so every process shares them and restarts keep them. */
export function registerRateLimits(app: FastifyInstance, options: { db: Db; factor: number }): void {
  const generalTier = RATE_LIMIT_TIERS.at(-1)!;
  const authTiers = RATE_LIMIT_TIERS.slice(0, -1);
  const auth: Counter[] = authTiers.map((tier) => ({
    tier,
    counter: new ExactCounter(options.db, `rl:${tier.name}`, tier.points * options.factor, tier.seconds),
  }));
  const generalCounter = new BatchedWindowCounter(
    options.db,
    app.log,
    `rl:${generalTier.name}`,
    generalTier.points * options.factor,
    generalTier.seconds * 1000,
  );
  const general: Counter = { tier: generalTier, counter: generalCounter };

  app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    // The matched route's path, not the raw URL: '/api/auth/forget-password/' and '/%61pi/auth/forget-password'
    // reach the same handler and must count against the same tier.
    const path = request.routeOptions.url ?? request.url.split('?', 1)[0]!;
    if (!path.startsWith('/api/') || EXEMPT.has(path) || request.method === 'OPTIONS') return;
    const chain = [auth.find((c) => matches(c.tier, request.method, path)), general].filter(
      (c): c is Counter => c !== undefined,
    );
    let closest: Verdict | undefined;
    for (const { counter } of chain) {
      const verdict = await counter.consume(request.ip);
      if (!verdict.ok) {
        setHeaders(reply, verdict);
        throw errors.tooManyRequests(Math.ceil(verdict.msBeforeNext / 1000));
      }
      if (!closest || verdict.remaining < closest.remaining) closest = verdict;
    }
    if (closest) setHeaders(reply, closest);
  });
  app.addHook('onClose', async () => generalCounter.close());

  const sweep = setInterval(() => {
    options.db
      .delete(rateLimitCounters)
      .where(lt(rateLimitCounters.expire, new Date(Date.now() - 60 * 60 * 1000)))
      .catch((err: unknown) => app.log.warn({ err }, 'rate-limit sweep failed'));
  }, 5 * 60 * 1000);
  sweep.unref();
  app.addHook('onClose', async () => clearInterval(sweep));
}
