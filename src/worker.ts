// `npm run worker`: a process that runs jobs and serves no HTTP, to scale job handling apart from the API.
// It needs PostgreSQL (DATABASE_URL): an embedded PGlite directory can be opened by one process only.
import pino from 'pino';
import { ConfigError, loadConfig } from './config.js';
import { openDatabase } from './db/client.js';
import { DataDirLockedError } from './db/lockfile.js';
import { closeJobServices, createJobServices, jobCatalog } from './jobs/catalog.js';
import { JobQueue } from './jobs/queue.js';
import { resolveAuthSecret } from './secret.js';

async function main(): Promise<void> {
  const config = loadConfig();
  const log = pino({ level: config.logLevel });
  const database = await openDatabase(config.databaseUrl ? { url: config.databaseUrl } : { dataDir: config.dataDir });
  const services = createJobServices(config, resolveAuthSecret(config));
  const queue = new JobQueue({
    database,
    catalog: jobCatalog,
    services,
    log,
    workers: Math.max(1, config.workers),
    pollingSeconds: config.jobPollSeconds,
  });
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'worker shutting down: finishing running jobs');
    try {
      await queue.stop();
      closeJobServices(services);
    } finally {
      await database.close();
      process.exit(0);
    }
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
  await queue.start();
  log.info({ database: database.kind, workers: Math.max(1, config.workers) }, 'worker ready');
}

main().catch((error: unknown) => {
  console.error(error instanceof ConfigError || error instanceof DataDirLockedError ? error.message : error);
  process.exit(1);
});
