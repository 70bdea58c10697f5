import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PGlite } from '@electric-sql/pglite';
import { btree_gin } from '@electric-sql/pglite/contrib/btree_gin';
import { pg_trgm } from '@electric-sql/pglite/contrib/pg_trgm';
import { type SQL, sql } from 'drizzle-orm';
import { drizzle as drizzleNodePg } from 'drizzle-orm/node-postgres';
import { migrate as migrateNodePg } from 'drizzle-orm/node-postgres/migrator';
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import { migrate as migratePglite } from 'drizzle-orm/pglite/migrator';
import pg from 'pg';
import * as schema from './schema/index.js';
import { acquireLock } from './lockfile.js';

export type Schema = typeof schema;
/** One Drizzle handle type for PGlite and node-postgres. */
export type Db = PgDatabase<PgQueryResultHKT, Schema>;
/** A Drizzle transaction or the database itself: what services take. */
export type Tx = Parameters<Parameters<Db['transaction']>[0]>[0] | Db;

/** Rows of a raw SQL query; both drivers answer `{ rows }`. */
export async function queryRows<T>(db: Tx, query: SQL): Promise<T[]> {
  const result = (await db.execute(query)) as unknown as { rows: T[] };
  return result.rows;
}

export interface Database {
  db: Db;
  kind: 'pglite' | 'postgres';
  /** The raw client, for libraries that need their own executor (pg-boss). */
  pglite?: PGlite;
  pool?: pg.Pool;
  ping(): Promise<void>;
  close(): Promise<void>;
}

export type DatabaseTarget = { url: string; poolSize?: number } | { dataDir: string } | { memory: true };

const migrationsFolder = fileURLToPath(new URL('./migrations', import.meta.url));
/** Any constant shared by every process of one deployment: serialises migrations on PostgreSQL. */
const MIGRATION_LOCK_ID = 724_120_001;

export async function openDatabase(target: DatabaseTarget): Promise<Database> {
  if ('url' in target) return openPostgres(target.url, target.poolSize ?? 10);
  if ('dataDir' in target) return openPglite(target.dataDir);
  return openPglite(undefined);
}

async function openPostgres(url: string, poolSize: number): Promise<Database> {
  const pool = new pg.Pool({ connectionString: url, max: poolSize });
  pool.on('error', () => {
    // An idle client lost its connection; the pool replaces it and the next query reports real failures.
  });
  const db = drizzleNodePg(pool, { schema }) as unknown as Db;
  const client = await pool.connect();
  try {
    await client.query('select pg_advisory_lock($1)', [MIGRATION_LOCK_ID]);
    await migrateNodePg(drizzleNodePg(client, { schema }), { migrationsFolder });
  } finally {
    await client.query('select pg_advisory_unlock($1)', [MIGRATION_LOCK_ID]).catch(() => {});
    client.release();
  }
  let closed: Promise<void> | undefined;
  return {
    db,
    kind: 'postgres',
    pool,
    ping: async () => {
      await pool.query('select 1');
    },
    close: () => {
      closed ??= pool.end();
      return closed;
    },
  };
}

async function openPglite(dataDir: string | undefined): Promise<Database> {
  let releaseLock = () => {};
  let path: string | undefined;
  if (dataDir !== undefined) {
    const root = resolve(dataDir);
    mkdirSync(root, { recursive: true });
    releaseLock = acquireLock(join(root, 'pglite.lock'));
    path = join(root, 'pglite');
  }
  try {
    // btree_gin (the search index) and pg_trgm (contact search) ship with PostgreSQL; PGlite loads them.
    const options = { extensions: { btree_gin, pg_trgm } };
    const pglite = path ? await PGlite.create(path, options) : await PGlite.create(options);
    const db = drizzlePglite(pglite, { schema }) as unknown as Db;
    await migratePglite(drizzlePglite(pglite, { schema }), { migrationsFolder });
    let closed = false;
    return {
      db,
      kind: 'pglite',
      pglite,
      ping: async () => {
        if (closed) throw new Error('database closed');
        await db.execute(sql`select 1`);
      },
      close: async () => {
        if (closed) return;
        closed = true;
        try {
          await pglite.close();
        } finally {
          releaseLock();
        }
      },
    };
  } catch (error) {
    releaseLock();
    throw error;
  }
}
