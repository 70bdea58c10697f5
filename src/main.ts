import { buildApp } from './app.js';
import { ConfigError, loadConfig } from './config.js';
import { type Database, openDatabase } from './db/client.js';
import { DataDirLockedError } from './db/lockfile.js';
import { resolveAuthSecret } from './secret.js';

/** In-flight requests get this long after SIGTERM; then the process exits anyway. */
const SHUTDOWN_GRACE_MS = 10_000;

async function main(): Promise<void> {
  const config = loadConfig();
  const database = await openDatabase(config.databaseUrl ? { url: config.databaseUrl } : { dataDir: config.dataDir });
  try {
    await serve(config, database);
  } catch (error) {
    await database.close().catch(() => {});
    throw error;
  }
}

async function serve(config: ReturnType<typeof loadConfig>, database: Database): Promise<void> {
  const app = await buildApp({ config, database, secret: resolveAuthSecret(config) });

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    app.log.info({ signal }, 'shutting down: no new connections, finishing in-flight requests');
    setTimeout(() => {
      app.log.error('in-flight requests did not finish in time; exiting');
      process.exit(1);
    }, SHUTDOWN_GRACE_MS).unref();
    try {
      await app.close();
    } finally {
      await database.close();
      app.log.info('stopped');
      process.exit(0);
    }
  };
  // A response finished during shutdown closes its connection: left open as keep-alive, the idle socket would hold
  // the process (and the PGlite lock) until the keep-alive timeout, 72 s.
  app.addHook('onSend', async (_request, reply) => {
    if (stopping) reply.header('connection', 'close');
  });
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));

  await app.listen({ port: config.port, host: config.host });
  app.log.info(
    { database: database.kind, baseUrl: config.baseUrl, dataDir: database.kind === 'pglite' ? config.dataDir : undefined },
    'service ready',
  );
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError || error instanceof DataDirLockedError) {
    console.error(error.message);
  } else {
    console.error(error);
  }
  process.exit(1);
});
