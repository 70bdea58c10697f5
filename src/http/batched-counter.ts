import { sql } from 'drizzle-orm';
import type { FastifyBaseLogger } from 'fastify';
import { queryRows, type Db } from '../db/client.js';

export interface Verdict {
  ok: boolean;
  limit: number;
  remaining: number;
  msBeforeNext: number;
}

type Entry = {
  /** The shared count as the database last reported it (this process's flushed requests included). */
  stored: number;
  /** Requests being written by the flush under way. */
  flushing: number;
  /** Requests counted here and not yet written. */
  pending: number;
  expire: number;
};

const FLUSH_CHUNK = 1000;

type Row = { key: string; points: number; expire: Date | string };

/**
 * A fixed-window counter for the general tier, which every request passes. The first request of a window is
 * counted in the database at once (so the process learns the shared count); later ones are counted in memory
 * and added to the same `rate_limit_counters` row in one batched upsert every `flushMs`, which also brings back
 * what other processes counted. One process enforces the limit exactly; N processes can together admit at most
 * what a client sends to the others within one flush interval beyond it. A restart keeps the counts (a graceful
 * stop flushes; a crash loses at most one interval).
 */
export class BatchedWindowCounter {
  private readonly entries = new Map<string, Entry>();
  private readonly timer: NodeJS.Timeout;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly db: Db,
    private readonly log: FastifyBaseLogger,
    readonly keyPrefix: string,
    readonly points: number,
    private readonly durationMs: number,
    flushMs = 250,
  ) {
    this.timer = setInterval(() => void this.flush(), flushMs);
    this.timer.unref();
  }

  async consume(id: string): Promise<Verdict> {
    const key = `${this.keyPrefix}:${id}`;
    const now = Date.now();
    let entry = this.entries.get(key);
    if (entry && entry.expire > now) {
      entry.pending += 1;
    } else {
      const [row] = await this.upsert([{ key, count: 1 }]);
      entry = { stored: row!.points, flushing: 0, pending: 0, expire: new Date(row!.expire).getTime() };
      this.entries.set(key, entry);
    }
    const used = entry.stored + entry.flushing + entry.pending;
    return {
      ok: used <= this.points,
      limit: this.points,
      remaining: Math.max(0, this.points - used),
      msBeforeNext: Math.max(0, entry.expire - now),
    };
  }

  /** Writes what was counted since the last flush; entries of ended windows are dropped. */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(() => this.writePending());
    return this.flushing;
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }

  private async writePending(): Promise<void> {
    const now = Date.now();
    const batch: { key: string; count: number; entry: Entry }[] = [];
    for (const [key, entry] of this.entries) {
      if (entry.expire <= now) this.entries.delete(key);
      else if (entry.pending > 0) {
        batch.push({ key, count: entry.pending, entry });
        entry.flushing += entry.pending;
        entry.pending = 0;
      }
    }
    // Three parameters a row: chunks stay far below PostgreSQL's 65,535 per statement however many clients there are.
    for (let i = 0; i < batch.length; i += FLUSH_CHUNK) await this.writeChunk(batch.slice(i, i + FLUSH_CHUNK));
  }

  private async writeChunk(chunk: { key: string; count: number; entry: Entry }[]): Promise<void> {
    try {
      const rows = await this.upsert(chunk);
      const byKey = new Map(rows.map((row) => [row.key, row]));
      for (const { key, count, entry } of chunk) {
        entry.flushing -= count;
        const row = byKey.get(key);
        if (row) entry.stored = row.points;
      }
    } catch (err) {
      for (const { count, entry } of chunk) {
        entry.flushing -= count;
        entry.pending += count;
      }
      this.log.warn({ err }, 'rate-limit flush failed; will retry');
    }
  }

  /** The same fixed-window arithmetic as rate-limiter-flexible's RateLimiterDrizzle, for many keys at once. */
  private upsert(counts: { key: string; count: number }[]): Promise<Row[]> {
    const expire = new Date(Date.now() + this.durationMs);
    const values = sql.join(
      counts.map(({ key, count }) => sql`(${key}, ${count}::int, ${expire}::timestamptz)`),
      sql`, `,
    );
    return queryRows<Row>(
      this.db,
      sql`insert into rate_limit_counters as c (key, points, expire) values ${values}
          on conflict (key) do update set
            points = case when c.expire <= now() then excluded.points else c.points + excluded.points end,
            expire = case when c.expire <= now() then excluded.expire else c.expire end
          returning c.key, c.points, c.expire`,
    );
  }
}
