import type { AppServices } from '../../app.js';
import { type Api, agentOrAbove, anyRole } from '../../http/api.js';
import { errorBody, validationErrorBody } from '../../http/errors.js';
import { workspaceContext } from '../../http/guard.js';
import {
  conversation,
  conversationListQuery,
  conversationPage,
  conversationParams,
  message,
  messageList,
  messageListQuery,
  sendMessageBody,
  updateConversationBody,
} from './schemas.js';
import * as inbox from './service.js';

const read = anyRole;
const reply = agentOrAbove;
const failures = { 400: validationErrorBody, 401: errorBody, 403: errorBody, 404: errorBody, 500: errorBody };
const tags = ['Conversations'];

/** The inbox: everyone reads conversations and messages; Agents and above triage and reply. */
export function registerConversationRoutes(app: Api, _services: AppServices): void {
  app.get(
    '/api/conversations',
    {
      config: read,
      schema: {
        tags,
        summary:
          'Conversations, most recent message first (never-messaged ones last); filter by status, channelId, assigneeId, contactId',
        description:
          '`total` is exact: read from a per-workspace counter when unfiltered, counted over the matching conversations when filtered.',
        querystring: conversationListQuery,
        response: { 200: conversationPage, ...failures },
      },
    },
    async (request) => inbox.listConversations(workspaceContext(request), request.query),
  );

  app.get(
    '/api/conversations/:id',
    {
      config: read,
      schema: {
        tags,
        summary: 'One conversation, with its channel type, messaging window and contact',
        params: conversationParams,
        response: { 200: conversation, ...failures },
      },
    },
    async (request) => inbox.getConversation(workspaceContext(request), request.params.id),
  );

  app.patch(
    '/api/conversations/:id',
    {
      config: reply,
      schema: {
        tags,
        summary:
          'Change the status (snoozed needs a future snoozedUntil), or assign to a workspace member (Agent); 409 when reopening ' +
          'while the contact has another open conversation on the channel',
        params: conversationParams,
        body: updateConversationBody,
        response: { 200: conversation, ...failures, 409: errorBody },
      },
    },
    async (request) => inbox.updateConversation(workspaceContext(request), request.params.id, request.body),
  );

  app.get(
    '/api/conversations/:id/messages',
    {
      config: read,
      schema: {
        tags,
        summary: 'Messages of the conversation, oldest first: the newest `limit` (before the message `before`, when given)',
        params: conversationParams,
        querystring: messageListQuery,
        response: { 200: messageList, ...failures },
      },
    },
    async (request) => ({
      messages: await inbox.listMessages(workspaceContext(request), request.params.id, request.query),
    }),
  );

  app.post(
    '/api/conversations/:id/messages',
    {
      config: reply,
      schema: {
        tags,
        summary:
          'Reply (Agent): stored as queued and sent by a job. WhatsApp only within 24 hours of the contact\'s last inbound ' +
          'message; Messenger and Instagram 24 hours, or 7 days with humanAgent; live chat always. Outside: 422',
        params: conversationParams,
        body: sendMessageBody,
        response: { 201: message, ...failures, 422: errorBody },
      },
    },
    async (request, res) => {
      const sent = await inbox.sendMessage(workspaceContext(request), request.params.id, request.body);
      return res.code(201).send(sent);
    },
  );
}
