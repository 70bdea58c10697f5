import { RateLimiterDrizzle } from 'rate-limiter-flexible';
import type { Db } from '../db/client.js';
import { rateLimitCounters } from '../db/schema/index.js';

export const LOCKOUT_FAILURES = 5;
export const LOCKOUT_SECONDS = 15 * 60;

/**
 * Sign-in brute-force protection: 5 failed sign-ins for one e-mail and IP lock that pair out for 15 minutes.
 * Its counters live beside the rate-limit ones (shared, persistent) under their own key prefix.
 */
export class SignInLockout {
  private readonly failures: RateLimiterDrizzle;

  constructor(db: Db) {
    this.failures = new RateLimiterDrizzle({
      storeClient: db,
      schema: rateLimitCounters,
      keyPrefix: 'lockout:sign-in',
      points: LOCKOUT_FAILURES,
      duration: LOCKOUT_SECONDS,
      clearExpiredByTimeout: false,
    });
  }

  private key(email: string, ip: string): string {
    return `${email.trim().toLowerCase()}|${ip}`;
  }

  /** Seconds left in the lockout, or null when sign-in may be attempted. */
  async secondsLocked(email: string, ip: string): Promise<number | null> {
    const state = await this.failures.get(this.key(email, ip));
    if (!state || state.consumedPoints < LOCKOUT_FAILURES) return null;
    return Math.max(1, Math.ceil(state.msBeforeNext / 1000));
  }

  async recordFailure(email: string, ip: string): Promise<void> {
    const key = this.key(email, ip);
    const state = await this.failures.penalty(key, 1);
    // The fifth failure starts a full 15 minutes from now, whenever the first one was.
    if (state.consumedPoints >= LOCKOUT_FAILURES) await this.failures.block(key, LOCKOUT_SECONDS);
  }

  async reset(email: string, ip: string): Promise<void> {
    await this.failures.delete(this.key(email, ip));
  }
}
