// The live-chat visitor API, called by the widget on the customer's site: public routes (no cookie, no workspace
// header), each allowed only from the channel's `config.allowedOrigins`, with CORS answered for those origins
// (the app-wide CORS policy, which knows only APP_URL, is switched off on these routes).
import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { AppServices } from '../../app.js';
import type { Api } from '../../http/api.js';
import { errorBody, errors, validationErrorBody } from '../../http/errors.js';
import { eventStream } from '../events/routes.js';
import { eventHub } from '../events/hub.js';
import { messageRecord } from '../channels/message-record.js';
import { streamEvents } from '../events/sse.js';
import {
  authenticateVisitor,
  createSession,
  findLivechatChannel,
  type LivechatChannel,
  listVisitorMessages,
  originAllowed,
  sendVisitorMessage,
  type Visitor,
  visitorMessage,
} from './service.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** `false`: @fastify/cors leaves the route alone (it answers CORS itself). */
    cors?: false;
  }
}

const params = z.object({ channelId: z.uuid() });
const sessionBody = z
  .strictObject({
    name: z.string().trim().min(1).max(200).optional(),
    email: z.email().max(320).optional(),
  })
  .nullish();
const sessionRecord = z
  .object({
    visitorToken: z.string(),
    contactId: z.uuid(),
    conversationId: z.uuid().nullable(),
    greeting: z.string().nullable(),
  })
  .meta({ id: 'LivechatSession' });
const messageBody = z.strictObject({ body: z.string().trim().min(1).max(4096) });
const messagesQuery = z.object({
  before: z.uuid().optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
});
const eventsQuery = z.object({ token: z.string().optional() });

const ALLOWED_METHODS = 'GET, POST';
const ALLOWED_HEADERS = 'authorization, content-type, x-request-id';
const EXPOSED_HEADERS = 'RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset, Retry-After, x-request-id';
const VISITOR_EVENTS: ReadonlySet<string> = new Set(['message.created', 'message.updated']);

const failures = { 401: errorBody, 403: errorBody, 404: errorBody, 429: errorBody, 500: errorBody };
const tags = ['Live chat'];

/** The visitor's token from `Authorization: Bearer …` (or, for EventSource, which sets no headers, `?token=`). */
function bearerToken(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  const match = typeof header === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
  return match?.[1];
}

export function registerLivechatRoutes(app: Api, services: AppServices): void {
  const { db } = services.database;
  const hub = eventHub(app, services.database);
  const channelOf = new WeakMap<FastifyRequest, LivechatChannel>();
  const visitors = new WeakMap<FastifyRequest, Visitor>();

  /** Channel (404), then Origin (403); an allowed origin gets its CORS headers on every answer, errors included. */
  const checkOrigin = async (request: FastifyRequest, reply: FastifyReply) => {
    const { channelId } = request.params as { channelId?: string };
    if (!channelId || !params.shape.channelId.safeParse(channelId).success) throw errors.notFound();
    const channel = await findLivechatChannel(db, channelId);
    if (!channel) throw errors.notFound();
    const origin = request.headers.origin;
    if (!originAllowed(channel, origin)) throw errors.forbidden();
    reply.header('access-control-allow-origin', origin);
    reply.header('vary', 'Origin');
    reply.header('access-control-expose-headers', EXPOSED_HEADERS);
    channelOf.set(request, channel);
  };
  const channel = (request: FastifyRequest): LivechatChannel => {
    const found = channelOf.get(request);
    if (!found) throw new Error('live-chat route without its origin check');
    return found;
  };
  const config = { access: 'public' as const, cors: false as const };

  for (const path of ['/api/livechat/:channelId/sessions', '/api/livechat/:channelId/messages', '/api/livechat/:channelId/events']) {
    app.options(path, { config, schema: { hide: true }, onRequest: checkOrigin }, async (request, reply) => {
      const method = request.headers['access-control-request-method'];
      if (typeof method !== 'string' || !ALLOWED_METHODS.split(', ').includes(method.toUpperCase())) {
        throw errors.validation([{ path: '', message: 'Invalid preflight request' }], 'Bad request');
      }
      reply.header('access-control-allow-methods', ALLOWED_METHODS);
      reply.header('access-control-allow-headers', ALLOWED_HEADERS);
      reply.header('access-control-max-age', '600');
      return reply.code(204).send();
    });
  }

  app.post(
    '/api/livechat/:channelId/sessions',
    {
      config,
      onRequest: checkOrigin,
      schema: {
        tags,
        summary: 'Start a visitor session on a live-chat channel (from one of its allowed origins)',
        description:
          'Creates a contact and its identity on the channel. The visitor token authenticates the visitor\'s ' +
          'later calls (`Authorization: Bearer <token>`); only its SHA-256 is stored, so it cannot be shown again.',
        security: [],
        params,
        body: sessionBody,
        response: { 201: sessionRecord, 400: validationErrorBody, ...failures },
      },
    },
    async (request, reply) => reply.code(201).send(await createSession(db, channel(request), request.body ?? {})),
  );

  app.post(
    '/api/livechat/:channelId/messages',
    {
      config,
      onRequest: checkOrigin,
      schema: {
        tags,
        summary: 'Send a message as the visitor (Authorization: Bearer <visitorToken>)',
        security: [],
        params,
        body: messageBody,
        response: { 201: messageRecord, 400: validationErrorBody, ...failures },
      },
      // The token is checked before the body is read.
      preValidation: async (request) => {
        visitors.set(request, await authenticateVisitor(db, channel(request), bearerToken(request)));
      },
    },
    async (request, reply) => reply.code(201).send(await sendVisitorMessage(db, visitors.get(request)!, request.body.body)),
  );

  app.get(
    '/api/livechat/:channelId/messages',
    {
      config,
      onRequest: checkOrigin,
      schema: {
        tags,
        summary: 'The visitor\'s messages on this channel, oldest first (`before`: a message id, for older ones)',
        security: [],
        params,
        querystring: messagesQuery,
        response: { 200: z.object({ messages: z.array(messageRecord) }), 400: validationErrorBody, ...failures },
      },
      preValidation: async (request) => {
        visitors.set(request, await authenticateVisitor(db, channel(request), bearerToken(request)));
      },
    },
    async (request) => listVisitorMessages(db, visitors.get(request)!, request.query),
  );

  // EventSource puts the token in the URL: it is taken out before anything logs the URL (the request's log line).
  const queryTokens = new WeakMap<FastifyRequest, string>();
  const takeQueryToken = async (request: FastifyRequest) => {
    const url = request.raw.url ?? '';
    const mark = url.indexOf('?');
    if (mark < 0) return;
    const search = new URLSearchParams(url.slice(mark + 1));
    const token = search.get('token');
    if (token === null) return;
    queryTokens.set(request, token);
    search.set('token', 'redacted');
    request.raw.url = `${url.slice(0, mark)}?${search.toString()}`;
  };

  app.get(
    '/api/livechat/:channelId/events',
    {
      config,
      onRequest: [takeQueryToken, checkOrigin],
      schema: {
        tags,
        summary: 'Server-Sent Events of the visitor\'s own messages (message.created, message.updated)',
        description: 'EventSource cannot set headers: the token may be given as `?token=` instead of the bearer header.',
        security: [],
        params,
        querystring: eventsQuery,
        response: { 200: eventStream, 400: validationErrorBody, ...failures },
      },
    },
    async (request, reply) => {
      const token = bearerToken(request) ?? queryTokens.get(request);
      const visitor = await authenticateVisitor(db, channel(request), token);
      await streamEvents(request, reply, {
        hub,
        subscription: {
          workspaceId: visitor.channel.workspaceId,
          types: VISITOR_EVENTS,
          visitor: { contactId: visitor.contactId, channelId: visitor.channel.id },
        },
        transform: (event) => visitorMessage(event.data),
        stillAllowed: async () => (await authenticateVisitor(db, visitor.channel, token).then(() => true, () => false)),
      });
      return reply;
    },
  );
}
