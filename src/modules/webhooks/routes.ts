// Meta's webhooks for the WhatsApp, Messenger and Instagram channels: the subscription challenge, and deliveries
// checked against the raw body's X-Hub-Signature-256 with the channel's app secret, then queued for processing
// (the `inbox-webhook` job) so Meta gets its 200 at once.
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AppServices } from '../../app.js';
import type { Api } from '../../http/api.js';
import { AppError, errorBody, errors, validationErrorBody } from '../../http/errors.js';
import { processInboxWebhook } from '../channels/jobs.js';
import { channelSecrets, findChannel, isMetaChannel } from '../channels/service.js';

const tags = ['Webhooks'];
const params = z.object({ channelId: z.uuid() });
const verifyQuery = z.object({
  'hub.mode': z.string().optional().describe('`subscribe`'),
  'hub.verify_token': z.string().optional().describe("The channel's verify token"),
  'hub.challenge': z.string().optional().describe('Echoed back on success'),
});
const failures = { 400: validationErrorBody, 404: errorBody, 429: errorBody, 500: errorBody };

/** `sha256=<hex>` of the raw body with the app secret, compared in constant time. */
export function signatureMatches(raw: Buffer, header: string | string[] | undefined, appSecret: string): boolean {
  if (typeof header !== 'string') return false;
  const match = /^sha256=([0-9a-fA-F]{64})$/.exec(header.trim());
  if (!match) return false;
  const expected = createHmac('sha256', appSecret).update(raw).digest();
  return timingSafeEqual(expected, Buffer.from(match[1]!, 'hex'));
}

export function registerWebhookRoutes(app: Api, services: AppServices): void {
  const metaChannel = async (channelId: string) => {
    const channel = await findChannel(services.database.db, channelId);
    if (!channel || !isMetaChannel(channel.type)) throw errors.notFound();
    return channel;
  };

  app.get(
    '/api/webhooks/meta/:channelId',
    {
      config: { access: 'public' },
      schema: {
        tags,
        summary: "Meta's subscription check: answers hub.challenge (text/plain) when hub.verify_token is the channel's",
        security: [],
        params,
        querystring: verifyQuery,
        response: { 200: z.string().describe('hub.challenge, as text/plain'), 403: errorBody, ...failures },
      },
    },
    async (request, reply) => {
      const channel = await metaChannel(request.params.channelId);
      const query = request.query;
      const given = query['hub.verify_token'];
      const expected = channelSecrets(channel, services.secret).verifyToken;
      const ok =
        query['hub.mode'] === 'subscribe' &&
        given !== undefined &&
        Buffer.byteLength(given) === Buffer.byteLength(expected) &&
        timingSafeEqual(Buffer.from(given), Buffer.from(expected));
      if (!ok) throw errors.forbidden();
      return reply.type('text/plain; charset=utf-8').send(query['hub.challenge'] ?? '');
    },
  );

  // Encapsulated: only this route reads JSON as the raw bytes that were signed.
  app.register(async (plugin) => {
    const scope = plugin.withTypeProvider<ZodTypeProvider>();
    scope.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
    scope.post(
      '/api/webhooks/meta/:channelId',
      {
        config: { access: 'public' },
        schema: {
          tags,
          summary: 'A Meta webhook delivery (WhatsApp Cloud API, Messenger, Instagram), signed with X-Hub-Signature-256',
          description:
            'The signature is checked against the raw body with the channel\'s app secret (401, nothing stored, on a ' +
            'missing or wrong one). A valid delivery is queued and answered 200 at once; processing is idempotent by ' +
            "the provider's message id.",
          security: [],
          params,
          headers: z.looseObject({ 'x-hub-signature-256': z.string().optional().describe('sha256=<hex HMAC-SHA256 of the body>') }),
          response: { 200: z.object({ received: z.literal(true) }), 401: errorBody, ...failures },
        },
      },
      async (request) => {
        const channel = await metaChannel(request.params.channelId);
        const raw = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
        const { appSecret } = channelSecrets(channel, services.secret);
        if (!signatureMatches(raw, request.headers['x-hub-signature-256'], appSecret)) {
          throw new AppError('unauthorized', 'Invalid signature');
        }
        let payload: unknown;
        try {
          payload = JSON.parse(raw.toString('utf8'));
        } catch {
          throw errors.validation([{ path: '', message: 'Body is not valid JSON' }], 'Invalid request body');
        }
        if (payload === null || typeof payload !== 'object' || Array.isArray(payload)) {
          throw errors.validation([{ path: '', message: 'Expected a JSON object' }], 'Invalid request body');
        }
        await services.jobs.send(services.database.db, processInboxWebhook, {
          channelId: channel.id,
          workspaceId: channel.workspaceId,
          payload: payload as Record<string, unknown>,
        });
        return { received: true as const };
      },
    );
  });
}
