import { z } from 'zod';
import type { AppServices } from '../../app.js';
import { adminOnly, agentOrAbove, anyRole, type Api } from '../../http/api.js';
import { errorBody, validationErrorBody } from '../../http/errors.js';
import { workspaceContext } from '../../http/guard.js';
import { contactPage } from '../contacts/schemas.js';
import {
  createGroupBody,
  group,
  groupContactsQuery,
  groupListQuery,
  groupPage,
  groupParams,
  membersAdded,
  membersBody,
  membersRemoved,
  updateGroupBody,
} from './schemas.js';
import * as groupService from './service.js';

const failures = { 400: validationErrorBody, 401: errorBody, 403: errorBody, 404: errorBody, 500: errorBody };
const tags = ['Groups'];

/**
 * Groups of contacts: everyone reads; Agents and above create, rename and change membership; Admins and Org
 * Owners delete.
 */
export function registerGroupRoutes(app: Api, _services: AppServices): void {
  app.get(
    '/api/groups',
    {
      config: anyRole,
      schema: {
        tags,
        summary: 'Groups by name, each with its number of contacts',
        querystring: groupListQuery,
        response: { 200: groupPage, ...failures },
      },
    },
    async (request) => groupService.listGroups(workspaceContext(request), request.query),
  );

  app.post(
    '/api/groups',
    {
      config: agentOrAbove,
      schema: {
        tags,
        summary: 'Create a group (Agent); 409 if another group has the name, ignoring case',
        body: createGroupBody,
        response: { 201: group, ...failures, 409: errorBody },
      },
    },
    async (request, reply) => reply.code(201).send(await groupService.createGroup(workspaceContext(request), request.body)),
  );

  app.get(
    '/api/groups/:id',
    { config: anyRole, schema: { tags, summary: 'One group', params: groupParams, response: { 200: group, ...failures } } },
    async (request) => groupService.getGroup(workspaceContext(request), request.params.id),
  );

  app.patch(
    '/api/groups/:id',
    {
      config: agentOrAbove,
      schema: {
        tags,
        summary: 'Rename a group or change its description (Agent); 409 if another group has the name',
        params: groupParams,
        body: updateGroupBody,
        response: { 200: group, ...failures, 409: errorBody },
      },
    },
    async (request) => groupService.updateGroup(workspaceContext(request), request.params.id, request.body),
  );

  app.delete(
    '/api/groups/:id',
    {
      config: adminOnly,
      schema: {
        tags,
        summary: 'Delete a group (Admin); its contacts stay',
        params: groupParams,
        response: { 204: z.null().describe('Deleted'), ...failures },
      },
    },
    async (request, reply) => {
      await groupService.deleteGroup(workspaceContext(request), request.params.id);
      return reply.code(204).send(null);
    },
  );

  app.get(
    '/api/groups/:id/contacts',
    {
      config: anyRole,
      schema: {
        tags,
        summary: 'The contacts of a group, newest first',
        params: groupParams,
        querystring: groupContactsQuery,
        response: { 200: contactPage, ...failures },
      },
    },
    async (request) => groupService.listGroupContacts(workspaceContext(request), request.params.id, request.query),
  );

  app.post(
    '/api/groups/:id/contacts',
    {
      config: agentOrAbove,
      schema: {
        tags,
        summary: 'Add contacts to a group (Agent), up to 1000 at once; members already in it are ignored',
        params: groupParams,
        body: membersBody,
        response: { 200: membersAdded, ...failures },
      },
    },
    async (request) => groupService.addGroupContacts(workspaceContext(request), request.params.id, request.body.contactIds),
  );

  app.post(
    '/api/groups/:id/contacts/remove',
    {
      config: agentOrAbove,
      schema: {
        tags,
        summary: 'Remove contacts from a group (Agent), up to 1000 at once; contacts not in it are ignored',
        description: 'A POST rather than a DELETE with a body, which some clients and proxies drop.',
        params: groupParams,
        body: membersBody,
        response: { 200: membersRemoved, ...failures },
      },
    },
    async (request) => groupService.removeGroupContacts(workspaceContext(request), request.params.id, request.body.contactIds),
  );
}
