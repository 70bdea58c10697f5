// GET /api/events: the workspace's inbox events as Server-Sent Events.
import { and, eq, gt } from 'drizzle-orm';
import { z } from 'zod';
import type { AppServices } from '../../app.js';
import { sessions } from '../../db/schema/index.js';
import { anyRole, type Api } from '../../http/api.js';
import { errorBody } from '../../http/errors.js';
import { findMembership, workspaceContext } from '../../http/guard.js';
import { eventHub } from './hub.js';
import { streamEvents } from './sse.js';

export const eventStream = z.string().meta({
  description:
    'text/event-stream: `retry: 3000`, then one block per event (`event: <type>`, `id: <n>`, `data: <json>`), and a ' +
    '`: ping` comment every 25 s.',
});

export function registerEventRoutes(app: Api, services: AppServices): void {
  const hub = eventHub(app, services.database);
  const { db } = services.database;

  app.get(
    '/api/events',
    {
      config: anyRole,
      schema: {
        tags: ['Events'],
        summary:
          'Server-Sent Events of the workspace: message.created, message.updated and conversation.updated, each with ' +
          'the record as the REST API returns it',
        description:
          'Events are sent as they are committed, from any server process. Ids count the events of this stream only: ' +
          'a reconnecting client refetches what it shows rather than replaying. Access is checked again at every ' +
          "ping: the stream of a signed-out session or of a removed member ends. A record too large for one " +
          'notification is read back (messages) or sent as `{ref: {id}}` to be fetched (conversations).',
        response: { 200: eventStream, 401: errorBody, 403: errorBody, 429: errorBody, 500: errorBody },
      },
    },
    async (request, reply) => {
      const ctx = workspaceContext(request);
      const session = request.auth!;
      await streamEvents(request, reply, {
        hub,
        subscription: { workspaceId: ctx.workspaceId },
        stillAllowed: async () => {
          if (session.expiresAt.getTime() <= Date.now()) return false;
          const [live] = await db
            .select({ id: sessions.id })
            .from(sessions)
            .where(and(eq(sessions.id, session.sessionId), gt(sessions.expiresAt, new Date())))
            .limit(1);
          return live !== undefined && (await findMembership(db, ctx.userId, ctx.workspaceId)) !== null;
        },
      });
      return reply;
    },
  );
}
