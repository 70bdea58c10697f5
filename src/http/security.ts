import cors from '@fastify/cors';
import type { FastifyInstance } from 'fastify';
import { errors } from './errors.js';

const STATE_CHANGING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * CSRF: a browser always sends Origin on cross-site writes, so a write whose Origin is neither the API's nor the
 * dashboard's is refused. Requests without Origin (server-to-server, curl) are not browser CSRF and pass.
 * CORS: only the dashboard may read responses cross-origin, with credentials.
 */
export async function registerOriginPolicy(app: FastifyInstance, options: { baseUrl: string; appUrl: string }) {
  const trusted = new Set([options.baseUrl, options.appUrl]);
  app.addHook('onRequest', async (request) => {
    if (!STATE_CHANGING.has(request.method)) return;
    // The live-chat visitor API is called from customers' sites: its routes (and only they, by the matched route)
    // check Origin against their channel's allowed origins themselves (src/modules/livechat/routes.ts).
    if (request.routeOptions.url?.startsWith('/api/livechat/')) return;
    const origin = request.headers.origin;
    if (origin !== undefined && !trusted.has(origin)) throw errors.forbidden();
  });
  await app.register(cors, {
    origin: [options.appUrl],
    credentials: true,
    methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
    allowedHeaders: ['content-type', 'x-workspace-id', 'x-request-id'],
    exposedHeaders: ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'Retry-After', 'x-request-id'],
    maxAge: 600,
  });
}
