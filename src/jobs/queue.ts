// The job queue: pg-boss on the service's own database (PGlite or PostgreSQL), jobs sent inside the caller's
// transaction, handlers from one catalog. See docs/jobs.md.
import type { FastifyBaseLogger } from 'fastify';
import PgBoss from 'pg-boss';
import { type SQL, sql } from 'drizzle-orm';
import type { z } from 'zod';
import { type Database, type Db, queryRows, type Tx } from '../db/client.js';
import { listen } from '../db/listen.js';
import type { MailTransport } from '../mail/mailer.js';

/**
 * Sent (with the queue's name) in the transaction of every job, so PostgreSQL delivers it on commit: idle workers
 * of that queue, in any process, fetch at once instead of at their next poll.
 */
const WAKE_CHANNEL = 'commops_jobs';

/** Where a job that has used up its retries is copied, to be inspected (and retried by hand) later. */
export const DEAD_LETTER_QUEUE = 'dead-letter';

/** Clients that handlers talk to, built from the process's configuration (absent when not configured). */
export interface JobServices {
  mail?: MailTransport;
  /** The service's secret (AUTH_SECRET or the generated one): keys for stored channel credentials derive from it. */
  secret: string;
  /** Base URL of the Meta Graph API, with its version. */
  graphApiUrl: string;
}

export interface JobContext {
  db: Db;
  services: JobServices;
  log: FastifyBaseLogger;
  jobs: JobSender;
  jobId: string;
  /** True on the last attempt the retry policy allows: the handler's chance to record a lasting failure. */
  finalAttempt: boolean;
}

export interface JobDefinition<P> {
  /** The pg-boss queue name: letters, digits, `-` and `_`. */
  name: string;
  payload: z.ZodType<P>;
  /** Attempts after the first, and the base delay that doubles with each one (pg-boss adds jitter). */
  retry: { limit: number; delaySeconds: number };
  /** How long one attempt may run before it counts as failed. */
  timeoutSeconds: number;
  /**
   * Jobs with the same key are not queued twice: a send while one with the key is still waiting is dropped
   * (pg-boss `stately` policy: at most one queued and one running per key).
   */
  singletonKey?: (payload: P) => string;
  handle(payload: P, context: JobContext): Promise<void>;
}

// biome-ignore lint/suspicious/noExplicitAny: a catalog holds definitions of many payload types
export type AnyJob = JobDefinition<any>;

export function defineJob<P>(definition: JobDefinition<P>): JobDefinition<P> {
  return definition;
}

export interface SendOptions {
  /** Not before this time (a reminder, a snooze that ends). */
  startAfter?: Date;
}

export interface JobSender {
  /** Stores the job in `tx`: it exists if and only if that transaction commits. */
  send<P>(tx: Tx, job: JobDefinition<P>, payload: P, options?: SendOptions): Promise<void>;
}

export interface QueueOptions {
  database: Database;
  catalog: readonly AnyJob[];
  log: FastifyBaseLogger;
  /** Concurrent workers per job type in this process; 0 runs no handlers (an API-only process). */
  workers: number;
  services: JobServices;
  pollingSeconds?: number;
}

/**
 * pg-boss 10 fetches the next job by sorting every waiting job of the queue (57 ms per fetch with 6,700 waiting,
 * measured); this partial index in its fetch order makes each fetch a single index probe. Created (once, under an
 * advisory lock so that processes starting together do not race) on the partitioned table, so every queue's
 * partition gets it.
 */
const FETCH_ORDER_INDEX = `
  begin;
  select pg_advisory_xact_lock(724120002);
  create index if not exists job_fetch_order_idx on pgboss.job (name, priority desc, created_on, id) where state < 'active';
  commit;`;

/** Public in pg-boss 10 (promoted from its manager) but missing from its type declarations. */
interface BossInternals {
  notifyWorker(workerId: string): void;
}

export class JobQueue implements JobSender {
  private readonly boss: PgBoss;
  private readonly byName: Map<string, AnyJob>;
  private readonly workerIds = new Map<string, string[]>();
  private unlisten: (() => Promise<void>) | undefined;
  private started = false;

  constructor(private readonly options: QueueOptions) {
    this.byName = new Map(options.catalog.map((job) => [job.name, job]));
    this.boss = new PgBoss({
      db: databaseExecutor(options.database),
      // Archive and delete on pg-boss's own schedule; the service only reads live jobs.
      supervise: true,
      schedule: false,
      migrate: true,
    });
    this.boss.on('error', (error) => options.log.error({ err: error }, 'job queue error'));
  }

  async start(): Promise<void> {
    await this.boss.start();
    this.started = true;
    await databaseExecutor(this.options.database).executeSql(FETCH_ORDER_INDEX, []);
    await this.boss.createQueue(DEAD_LETTER_QUEUE, { name: DEAD_LETTER_QUEUE, policy: 'standard', retentionMinutes: 60 * 24 * 30 });
    for (const job of this.options.catalog) {
      const queue: PgBoss.Queue = {
        name: job.name,
        policy: job.singletonKey ? 'stately' : 'standard',
        retryLimit: job.retry.limit,
        retryDelay: job.retry.delaySeconds,
        retryBackoff: true,
        expireInSeconds: job.timeoutSeconds,
        deadLetter: DEAD_LETTER_QUEUE,
      };
      // createQueue leaves an existing queue alone; updateQueue brings its policy up to this catalog.
      await this.boss.createQueue(job.name, queue);
      await this.boss.updateQueue(job.name, queue);
    }
    for (let i = 0; i < this.options.workers; i++) {
      for (const job of this.options.catalog) await this.work(job);
    }
    if (this.options.workers > 0) this.unlisten = await listen(this.options.database, WAKE_CHANNEL, (name) => this.wake(name));
  }

  async send<P>(tx: Tx, job: JobDefinition<P>, payload: P, options: SendOptions = {}): Promise<void> {
    if (!this.byName.has(job.name)) throw new Error(`job ${job.name} is not in the catalog`);
    const data = job.payload.parse(payload) as object;
    await this.boss.send(job.name, data, {
      db: transactionExecutor(tx),
      ...(job.singletonKey ? { singletonKey: job.singletonKey(payload) } : {}),
      ...(options.startAfter ? { startAfter: options.startAfter } : {}),
    });
    await tx.execute(sql`select pg_notify(${WAKE_CHANNEL}, ${job.name})`);
  }

  /** Jobs of one type by state, for tests, health and the bench. */
  async countJobs(name: string, states: readonly string[]): Promise<number> {
    const rows = await queryRows<{ n: number }>(
      this.options.database.db,
      sql`select count(*)::int as n from pgboss.job where name = ${name} and state::text in (${sql.join(states.map((s) => sql`${s}`), sql`, `)})`,
    );
    return rows[0]?.n ?? 0;
  }

  async stop(): Promise<void> {
    if (!this.started) return;
    this.started = false;
    await this.unlisten?.().catch(() => {});
    await this.boss.stop({ graceful: true, wait: true, close: false, timeout: 10_000 });
  }

  private wake(name: string): void {
    const boss = this.boss as unknown as BossInternals;
    for (const id of this.workerIds.get(name) ?? []) boss.notifyWorker(id);
  }

  private async work(job: AnyJob): Promise<void> {
    const { database, log } = this.options;
    let id: string | undefined;
    id = await this.boss.work(
      job.name,
      { batchSize: 1, includeMetadata: true, pollingIntervalSeconds: this.options.pollingSeconds ?? 0.5 },
      async ([item]) => {
        if (!item) return;
        const jobLog = log.child({ job: job.name, jobId: item.id, attempt: item.retryCount + 1 });
        const parsed = job.payload.safeParse(item.data);
        if (!parsed.success) {
          // A payload that no longer matches its schema cannot succeed on retry: record it and stop.
          jobLog.error({ issues: parsed.error.issues }, 'job payload is invalid; dropped');
          return;
        }
        try {
          await job.handle(parsed.data, {
            db: database.db,
            services: this.options.services,
            log: jobLog,
            jobs: this,
            jobId: item.id,
            finalAttempt: item.retryCount >= item.retryLimit,
          });
        } catch (error) {
          jobLog.warn({ err: error }, 'job attempt failed');
          throw error;
        } finally {
          // pg-boss sleeps a polling interval after every fetch unless notified: a worker that just ran a job
          // looks for the next one at once, and only an empty fetch waits.
          if (id) (this.boss as unknown as BossInternals).notifyWorker(id);
        }
      },
    );
    this.workerIds.set(job.name, [...(this.workerIds.get(job.name) ?? []), id]);
  }
}

/** pg-boss's own queries on the service's connection: the pool on PostgreSQL, the one PGlite instance otherwise. */
function databaseExecutor(database: Database): PgBoss.Db {
  const { pool, pglite } = database;
  if (pool) {
    return { executeSql: (text, values) => (values?.length ? pool.query(text, values) : pool.query(text)) };
  }
  if (!pglite) throw new Error('database has neither a pool nor a PGlite instance');
  return {
    executeSql: async (text, values) => {
      if (values?.length) return pglite.query(text, values);
      // pg-boss sends its schema changes as parameterless multi-statement scripts, which only exec() accepts.
      const results = await pglite.exec(text);
      return { rows: results.at(-1)?.rows ?? [] };
    },
  };
}

/** pg-boss's statements (`$1`-style placeholders) run through a Drizzle transaction, so they commit with it. */
function transactionExecutor(tx: Tx): PgBoss.Db {
  return { executeSql: async (text, values) => ({ rows: await queryRows(tx, toDrizzleSql(text, values ?? [])) }) };
}

function toDrizzleSql(text: string, values: unknown[]): SQL {
  const parts = text.split(/\$(\d+)/);
  const chunks: SQL[] = [];
  parts.forEach((part, i) => {
    // Drizzle drops undefined parameters; pg-boss means NULL by them.
    chunks.push(i % 2 === 0 ? sql.raw(part) : sql`${values[Number(part) - 1] ?? null}`);
  });
  return sql.join(chunks);
}
