// The job queue on the service's own database: jobs exist exactly when the transaction that sent them commits,
// failing jobs are retried with backoff and end in the dead-letter queue, one waiting job per singleton key.
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { queryRows } from '../src/db/client.js';
import { DEAD_LETTER_QUEUE, defineJob, JobQueue } from '../src/jobs/queue.js';
import { indexDocument } from '../src/modules/content/jobs.js';
import { createTestApp, eventually, signUp, type TestApp } from './helpers.js';

let api: TestApp; // WORKERS=0: jobs stay where they were put
let workspaceId: string;

beforeAll(async () => {
  api = await createTestApp({ WORKERS: '0' });
  ({ workspaceId } = await signUp(api.app));
});
afterAll(async () => api?.close());

const services = { secret: 'x'.repeat(32), graphApiUrl: 'http://127.0.0.1:9' };
const ref = () => ({ workspaceId, documentType: 'article' as const, documentId: crypto.randomUUID() });

async function jobsFor(documentId: string): Promise<{ state: string; name: string }[]> {
  return queryRows(
    api.app.services.database.db,
    sql`select state::text, name from pgboss.job where data->>'documentId' = ${documentId}`,
  );
}

describe('sending a job inside a transaction', () => {
  it('stores the job when the transaction commits', async () => {
    const { db } = api.app.services.database;
    const payload = ref();
    await db.transaction(async (tx) => api.app.services.jobs.send(tx, indexDocument, payload));
    expect(await jobsFor(payload.documentId)).toEqual([{ state: 'created', name: 'content-index' }]);
  });

  it('leaves no job when the transaction rolls back', async () => {
    const { db } = api.app.services.database;
    const payload = ref();
    await expect(
      db.transaction(async (tx) => {
        await api.app.services.jobs.send(tx, indexDocument, payload);
        throw new Error('the write failed after the send');
      }),
    ).rejects.toThrow('the write failed');
    expect(await jobsFor(payload.documentId)).toEqual([]);
  });

  it('rejects a payload that does not match the job schema, before anything is stored', async () => {
    const { db } = api.app.services.database;
    await expect(
      db.transaction(async (tx) => api.app.services.jobs.send(tx, indexDocument, { ...ref(), documentId: 'nope' })),
    ).rejects.toThrow();
  });

  it('keeps one waiting job per singleton key: a document queued twice is indexed once', async () => {
    const { db } = api.app.services.database;
    const payload = ref();
    for (let i = 0; i < 3; i++) await db.transaction(async (tx) => api.app.services.jobs.send(tx, indexDocument, payload));
    expect(await jobsFor(payload.documentId)).toHaveLength(1);
  });
});

describe('running jobs', () => {
  it('retries a failing job with backoff, then moves it to the dead-letter queue', async () => {
    const attempts: number[] = [];
    const flaky = defineJob<{ n: number }>({
      name: 'test-always-fails',
      payload: z.object({ n: z.number() }),
      retry: { limit: 1, delaySeconds: 1 },
      timeoutSeconds: 10,
      handle: async () => {
        attempts.push(Date.now());
        throw new Error('provider down');
      },
    });
    const queue = new JobQueue({
      database: api.app.services.database,
      catalog: [flaky],
      services,
      log: api.app.log,
      workers: 1,
      pollingSeconds: 0.5,
    });
    await queue.start();
    try {
      await api.app.services.database.db.transaction(async (tx) => queue.send(tx, flaky, { n: 7 }));
      await eventually(async () => (await queue.countJobs(flaky.name, ['failed'])) === 1, 15_000, 'job failed');
      expect(attempts).toHaveLength(2);
      expect(attempts[1]! - attempts[0]!).toBeGreaterThanOrEqual(900);
      const dead = await queryRows<{ data: { n: number } }>(
        api.app.services.database.db,
        sql`select data from pgboss.job where name = ${DEAD_LETTER_QUEUE} and data->>'n' = '7'`,
      );
      expect(dead).toEqual([{ data: { n: 7 } }]);
    } finally {
      await queue.stop();
    }
  });

  it('runs a job sent by another process: an API-only process and a worker share the queue', async () => {
    const seen: number[] = [];
    const echo = defineJob<{ n: number }>({
      name: 'test-echo',
      payload: z.object({ n: z.number() }),
      retry: { limit: 0, delaySeconds: 1 },
      timeoutSeconds: 10,
      handle: async ({ n }) => {
        seen.push(n);
      },
    });
    const sender = new JobQueue({ database: api.app.services.database, catalog: [echo], services, log: api.app.log, workers: 0 });
    const worker = new JobQueue({ database: api.app.services.database, catalog: [echo], services, log: api.app.log, workers: 1 });
    await sender.start();
    await worker.start();
    try {
      await api.app.services.database.db.transaction(async (tx) => sender.send(tx, echo, { n: 42 }));
      await eventually(async () => seen.includes(42), 10_000, 'job ran');
    } finally {
      await worker.stop();
      await sender.stop();
    }
  });
});
