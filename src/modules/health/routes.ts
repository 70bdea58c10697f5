import { z } from 'zod';
import type { AppServices } from '../../app.js';
import type { Api } from '../../http/api.js';

const PING_TIMEOUT_MS = 2000;

async function databaseIsUp(services: AppServices): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('timeout')), PING_TIMEOUT_MS);
  });
  try {
    await Promise.race([services.database.ping(), timeout]);
    return true;
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}

export function registerHealthRoutes(app: Api, services: AppServices): void {
  app.get(
    '/api/health',
    {
      config: { access: 'public' },
      schema: {
        tags: ['Operations'],
        summary: 'Liveness and database reachability; 503 when the database does not answer. Not rate limited',
        security: [],
        response: {
          200: z.object({ status: z.literal('ok'), database: z.literal('ok') }),
          503: z.object({ status: z.literal('error'), database: z.literal('unavailable') }),
        },
      },
    },
    async (_request, reply) =>
      (await databaseIsUp(services))
        ? { status: 'ok' as const, database: 'ok' as const }
        : reply.code(503).send({ status: 'error' as const, database: 'unavailable' as const }),
  );
}
