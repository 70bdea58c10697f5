// LISTEN for PostgreSQL notifications on either database: the job queue's wake-ups and the inbox's real-time events.
import pg from 'pg';
import type { Database } from './client.js';

/** LISTEN on a dedicated connection (PostgreSQL) or the PGlite instance; resolves to the matching UNLISTEN. */
export async function listen(database: Database, channel: string, onPayload: (payload: string) => void): Promise<() => Promise<void>> {
  if (database.pglite) return database.pglite.listen(channel, onPayload);
  // Its own connection, outside the pool: a LISTEN session is held for the life of the process, and a pool
  // with a client checked out forever could not be ended.
  const options = database.pool!.options;
  let client: pg.Client | undefined;
  let closed = false;
  const connect = async (): Promise<void> => {
    const next = new pg.Client(options);
    client = next;
    next.on('notification', (message) => message.payload && onPayload(message.payload));
    next.on('error', () => reconnect(next));
    try {
      await next.connect();
      await next.query(`listen ${channel}`);
    } catch {
      reconnect(next);
    }
  };
  // A lost listening connection only costs latency (workers still poll); it is replaced after a second.
  const reconnect = (failed: pg.Client) => {
    if (client !== failed) return;
    client = undefined;
    void failed.end().catch(() => {});
    if (!closed) setTimeout(() => void connect(), 1000).unref();
  };
  await connect();
  return async () => {
    closed = true;
    await client?.end().catch(() => {});
  };
}
