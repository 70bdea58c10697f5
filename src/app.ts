import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest, type FastifyServerOptions, LogController } from 'fastify';
import { serializerCompiler, validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import { createAuth, type Auth } from './auth/auth.js';
import { SignInLockout } from './auth/lockout.js';
import { registerAuthRoutes } from './auth/routes.js';
import type { Config } from './config.js';
import type { Database } from './db/client.js';
import { errors, sendError } from './http/errors.js';
import { AccessCache, registerGuard } from './http/guard.js';
import { registerOpenApi } from './http/openapi.js';
import { registerRateLimits } from './http/rate-limit.js';
import { closeJobServices, createJobServices, jobCatalog } from './jobs/catalog.js';
import { JobQueue } from './jobs/queue.js';
import { registerOriginPolicy } from './http/security.js';
import { createMailer, type Mailer } from './mail/mailer.js';
import { registerAccountRoutes } from './modules/account/routes.js';
import { registerChannelRoutes } from './modules/channels/routes.js';
import { registerContactRoutes } from './modules/contacts/routes.js';
import { registerContentRoutes } from './modules/content/routes.js';
import { registerConversationRoutes } from './modules/conversations/routes.js';
import { registerEventRoutes } from './modules/events/routes.js';
import { registerGroupRoutes } from './modules/groups/routes.js';
import { registerLivechatRoutes } from './modules/livechat/routes.js';
import { registerTagRoutes } from './modules/tags/routes.js';
import { registerWebhookRoutes } from './modules/webhooks/routes.js';
import { registerHealthRoutes } from './modules/health/routes.js';
import { registerWorkspaceRoutes } from './modules/workspaces/routes.js';

export interface AppServices {
  config: Config;
  database: Database;
  auth: Auth;
  mailer: Mailer;
  lockout: SignInLockout;
  cache: AccessCache;
  jobs: JobQueue;
  /** The service's secret (AUTH_SECRET or the generated one), for keys derived from it. */
  secret: string;
}

export type App = FastifyInstance & { services: AppServices };

export interface BuildOptions {
  config: Config;
  database: Database;
  secret: string;
  logger?: FastifyServerOptions['logger'];
}

const REQUEST_ID = /^[\w.:-]{1,128}$/;

/** One log line per request, when it completes, with the method, URL, status and time. */
class OneLinePerRequest extends LogController {
  override incomingRequest(): void {}
  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    const line = { method: request.method, url: request.url, statusCode: reply.statusCode, ms: Math.round(reply.elapsedTime) };
    if (error) reply.log.error({ ...line, err: error }, 'request errored');
    else reply.log.info(line, 'request completed');
  }
}

export async function buildApp(options: BuildOptions): Promise<App> {
  const { config, database } = options;
  const app = Fastify({
    logger: options.logger ?? { level: config.logLevel },
    // Fastify 5 treats a numeric trustProxy as "trust nothing"; a hop count must be a function: the first N
    // addresses from the socket inwards are our proxies, the next one is the client.
    trustProxy:
      typeof config.trustProxy === 'number'
        ? ((hops: number) => (_address: string, hop: number) => hop < hops)(config.trustProxy)
        : config.trustProxy,
    bodyLimit: 1024 * 1024,
    logController: new OneLinePerRequest(),
    requestIdHeader: false,
    genReqId: (request) => {
      const given = request.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 2048 },
  }).withTypeProvider<ZodTypeProvider>();

  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  // JSON is the only body the API reads: anything else on a write is a 415.
  app.removeContentTypeParser('text/plain');
  app.setErrorHandler((error, request, reply) => sendError(request, reply, error));
  app.setNotFoundHandler((request, reply) => sendError(request, reply, errors.notFound()));

  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });

  const jobServices = createJobServices(config, options.secret);
  const jobs = new JobQueue({
    database,
    catalog: jobCatalog,
    services: jobServices,
    log: app.log,
    workers: config.workers,
    pollingSeconds: config.jobPollSeconds,
  });
  const mailer = createMailer({ db: database.db, jobs, smtpConfigured: jobServices.mail !== undefined, log: app.log });
  const auth = createAuth({
    db: database.db,
    secret: options.secret,
    baseUrl: config.baseUrl,
    appUrl: config.appUrl,
    mailer,
    log: app.log,
  });
  const services: AppServices = {
    config,
    database,
    auth,
    mailer,
    lockout: new SignInLockout(database.db),
    cache: new AccessCache(config.authCacheMs),
    jobs,
    secret: options.secret,
  };
  await jobs.start();
  app.addHook('onClose', async () => {
    await jobs.stop();
    closeJobServices(jobServices);
  });
  app.decorate('services', services);

  registerRateLimits(app, { db: database.db, factor: config.rateLimitFactor });
  await registerOriginPolicy(app, { baseUrl: config.baseUrl, appUrl: config.appUrl });
  registerGuard(app, { db: database.db, jobs: services.jobs, auth, cache: services.cache });
  await registerOpenApi(app, { baseUrl: config.baseUrl });

  registerHealthRoutes(app, services);
  registerAuthRoutes(app, services);
  registerAccountRoutes(app, services);
  registerWorkspaceRoutes(app, services);
  registerContentRoutes(app, services);
  registerContactRoutes(app, services);
  registerTagRoutes(app, services);
  registerGroupRoutes(app, services);
  registerChannelRoutes(app, services);
  registerWebhookRoutes(app, services);
  registerConversationRoutes(app, services);
  registerEventRoutes(app, services);
  registerLivechatRoutes(app, services);

  return app as unknown as App;
}
