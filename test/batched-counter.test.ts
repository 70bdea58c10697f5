import { like } from 'drizzle-orm';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { rateLimitCounters } from '../src/db/schema/index.js';
import { BatchedWindowCounter } from '../src/http/batched-counter.js';
import { createTestApp, type TestApp } from './helpers.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => t.close());

it('writes the counts of many clients in chunks and learns what another process counted', async () => {
  const db = t.app.services.database.db;
  const a = new BatchedWindowCounter(db, t.app.log, 'test:many', 100, 60_000, 60_000);
  const b = new BatchedWindowCounter(db, t.app.log, 'test:many', 100, 60_000, 60_000);
  const ips = Array.from({ length: 2500 }, (_, i) => `192.0.${Math.floor(i / 250)}.${i % 250}`);
  for (const ip of ips) await a.consume(ip); // first of the window: written at once
  for (const ip of ips) await a.consume(ip); // counted in memory
  await a.flush(); // 2,500 rows: more than one chunk
  const rows = await db.select().from(rateLimitCounters).where(like(rateLimitCounters.key, 'test:many:%'));
  expect(rows).toHaveLength(2500);
  expect(rows.every((row) => row.points === 2)).toBe(true);

  expect((await b.consume(ips[0]!)).remaining).toBe(97); // b writes at once and sees a's two
  await a.consume(ips[0]!);
  await a.flush();
  expect((await a.consume(ips[0]!)).remaining).toBe(95); // a's flush brought back b's one
  await a.close();
  await b.close();
});
