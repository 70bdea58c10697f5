import { z } from 'zod';
import type { AppServices } from '../../app.js';
import { adminOnly, agentOrAbove, anyRole, type Api } from '../../http/api.js';
import { errorBody, validationErrorBody } from '../../http/errors.js';
import { workspaceContext } from '../../http/guard.js';
import { createTagBody, tag, tagList, tagParams, updateTagBody } from './schemas.js';
import * as tagService from './service.js';

const failures = { 400: validationErrorBody, 401: errorBody, 403: errorBody, 404: errorBody, 500: errorBody };
const tags = ['Tags'];

/** Contact tags: everyone reads, Agents and above create (and tag contacts), Admins and Org Owners rename and delete. */
export function registerTagRoutes(app: Api, _services: AppServices): void {
  app.get(
    '/api/tags',
    {
      config: anyRole,
      schema: {
        tags,
        summary: 'Every tag of the workspace by name, with its number of contacts (not paginated: {items, total})',
        response: { 200: tagList, ...failures },
      },
    },
    async (request) => tagService.listTags(workspaceContext(request)),
  );

  app.post(
    '/api/tags',
    {
      config: agentOrAbove,
      schema: {
        tags,
        summary: 'Create a tag (Agent); 409 if another tag has the name, ignoring case',
        body: createTagBody,
        response: { 201: tag, ...failures, 409: errorBody },
      },
    },
    async (request, reply) => reply.code(201).send(await tagService.createTag(workspaceContext(request), request.body)),
  );

  app.get(
    '/api/tags/:id',
    { config: anyRole, schema: { tags, summary: 'One tag', params: tagParams, response: { 200: tag, ...failures } } },
    async (request) => tagService.getTag(workspaceContext(request), request.params.id),
  );

  app.patch(
    '/api/tags/:id',
    {
      config: adminOnly,
      schema: {
        tags,
        summary: 'Rename or recolour a tag (Admin); 409 if another tag has the name, ignoring case',
        params: tagParams,
        body: updateTagBody,
        response: { 200: tag, ...failures, 409: errorBody },
      },
    },
    async (request) => tagService.updateTag(workspaceContext(request), request.params.id, request.body),
  );

  app.delete(
    '/api/tags/:id',
    {
      config: adminOnly,
      schema: {
        tags,
        summary: 'Delete a tag (Admin); it is removed from every contact',
        params: tagParams,
        response: { 204: z.null().describe('Deleted'), ...failures },
      },
    },
    async (request, reply) => {
      await tagService.deleteTag(workspaceContext(request), request.params.id);
      return reply.code(204).send(null);
    },
  );
}
