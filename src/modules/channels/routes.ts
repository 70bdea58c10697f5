import { z } from 'zod';
import type { AppServices } from '../../app.js';
import { adminOnly, anyRole, type Api } from '../../http/api.js';
import { errorBody, validationErrorBody } from '../../http/errors.js';
import { workspaceContext } from '../../http/guard.js';
import { channel, channelListQuery, channelPage, channelParams, createChannelBody, updateChannelBody } from './schemas.js';
import * as channels from './service.js';

const read = anyRole;
const manage = adminOnly;
const failures = { 400: validationErrorBody, 401: errorBody, 403: errorBody, 404: errorBody, 500: errorBody };
const tags = ['Channels'];

/** Channels of the inbox: every role reads, Admins and Org Owners configure. Credentials are never returned. */
export function registerChannelRoutes(app: Api, services: AppServices): void {
  const deps: channels.ChannelDeps = { secret: services.secret, baseUrl: services.config.baseUrl };

  app.get(
    '/api/channels',
    {
      config: read,
      schema: {
        tags,
        summary: 'Channels, newest first',
        querystring: channelListQuery,
        response: { 200: channelPage, ...failures },
      },
    },
    async (request) => channels.listChannels(workspaceContext(request), deps, request.query),
  );

  app.post(
    '/api/channels',
    {
      config: manage,
      schema: {
        tags,
        summary: 'Connect a channel (Admin): whatsapp, messenger, instagram (with Meta credentials) or livechat',
        body: createChannelBody,
        response: { 201: channel, ...failures },
      },
    },
    async (request, reply) => {
      const created = await channels.createChannel(workspaceContext(request), deps, request.body);
      return reply.code(201).send(created);
    },
  );

  app.get(
    '/api/channels/:id',
    {
      config: read,
      schema: { tags, summary: 'One channel', params: channelParams, response: { 200: channel, ...failures } },
    },
    async (request) => channels.getChannel(workspaceContext(request), deps, request.params.id),
  );

  app.patch(
    '/api/channels/:id',
    {
      config: manage,
      schema: {
        tags,
        summary: 'Edit a channel (Admin): name, config fields, or credentials to replace; the type never changes',
        params: channelParams,
        body: updateChannelBody,
        response: { 200: channel, ...failures },
      },
    },
    async (request) => channels.updateChannel(workspaceContext(request), deps, request.params.id, request.body),
  );

  app.delete(
    '/api/channels/:id',
    {
      config: manage,
      schema: {
        tags,
        summary: 'Delete a channel (Admin) with its conversations and messages',
        params: channelParams,
        response: { 204: z.null().describe('Deleted'), ...failures },
      },
    },
    async (request, reply) => {
      await channels.deleteChannel(workspaceContext(request), request.params.id);
      return reply.code(204).send(null);
    },
  );
}
