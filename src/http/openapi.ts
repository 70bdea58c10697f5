import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { jsonSchemaTransform, jsonSchemaTransformObject } from 'fastify-type-provider-zod';
import { SESSION_COOKIE } from '../auth/auth.js';

export const API_VERSION = '1.0.0';

/** The OpenAPI 3.1 document is generated from the route schemas; the reference page renders it. */
export async function registerOpenApi(app: FastifyInstance, options: { baseUrl: string }) {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Communication Operations Platform API',
        version: API_VERSION,
        description:
          'Sign in to receive the session cookie, then send `x-workspace-id` on every workspace request. ' +
          'Errors are `{error}`; 400s are `{error, details:[{path, message}]}`. Lists take `limit` (1-100, default 20) ' +
          'and `offset` and answer `{items, total}`. Every /api response carries RateLimit-* headers.',
      },
      servers: [{ url: options.baseUrl }],
      components: {
        securitySchemes: {
          session: { type: 'apiKey', in: 'cookie', name: SESSION_COOKIE },
          workspace: { type: 'apiKey', in: 'header', name: 'x-workspace-id' },
        },
      },
      security: [{ session: [], workspace: [] }],
    },
    transform: jsonSchemaTransform,
    transformObject: jsonSchemaTransformObject,
  });
  await app.register(swaggerUi, {
    routePrefix: '/api/docs',
    uiConfig: { docExpansion: 'list', deepLinking: true },
    staticCSP: true,
    uiHooks: {},
  });
  app.get('/api/openapi.json', { schema: { hide: true }, config: { access: 'public' } }, async () => app.swagger());
}
