import { z } from 'zod';
import type { AppServices } from '../../app.js';
import { adminOnly, anyRole, type Api } from '../../http/api.js';
import { errorBody, validationErrorBody } from '../../http/errors.js';
import { workspaceContext } from '../../http/guard.js';
import { pageQuery } from '../../http/pagination.js';
import {
  addMemberBody,
  createInvitationBody,
  invitation,
  invitationPage,
  invitationParams,
  member,
  memberPage,
  memberParams,
  updateMemberBody,
  updateWorkspaceBody,
  workspaceRecord,
} from './schemas.js';
import * as workspaces from './service.js';

const read = anyRole;
const manage = adminOnly;
const failures = { 400: validationErrorBody, 401: errorBody, 403: errorBody, 404: errorBody, 500: errorBody };

/** Routes inside the workspace named by x-workspace-id; writes need Admin or Org Owner. */
export function registerWorkspaceRoutes(app: Api, services: AppServices): void {
  const { cache, mailer, config } = services;

  app.get(
    '/api/workspace',
    { config: read, schema: { tags: ['Workspace'], summary: 'The current workspace and the caller\'s role in it', response: { 200: workspaceRecord, ...failures } } },
    async (request) => workspaces.getWorkspace(workspaceContext(request)),
  );

  app.patch(
    '/api/workspace',
    {
      config: manage,
      schema: { tags: ['Workspace'], summary: 'Rename the current workspace (Admin)', body: updateWorkspaceBody, response: { 200: workspaceRecord, ...failures } },
    },
    async (request) => workspaces.renameWorkspace(workspaceContext(request), request.body.name),
  );

  app.get(
    '/api/members',
    {
      config: read,
      schema: {
        tags: ['Members'],
        summary: 'People with access to the workspace: its members and its organization\'s owners',
        querystring: pageQuery,
        response: { 200: memberPage, ...failures },
      },
    },
    async (request) => {
      const ctx = workspaceContext(request);
      const { limit, offset } = request.query;
      return cache.memberPage(ctx.workspaceId, limit, offset, () => workspaces.listMembers(ctx, request.query));
    },
  );

  app.post(
    '/api/members',
    {
      config: manage,
      schema: {
        tags: ['Members'],
        summary: 'Add a user who already has an account (Admin); 404 if none, 409 if already a member',
        body: addMemberBody,
        response: { 201: member, ...failures, 409: errorBody },
      },
    },
    async (request, reply) => {
      const added = await workspaces.addMember(workspaceContext(request), cache, request.body.email, request.body.role);
      return reply.code(201).send(added);
    },
  );

  app.patch(
    '/api/members/:userId',
    {
      config: manage,
      schema: {
        tags: ['Members'],
        summary: 'Change a member\'s role (Admin); organization owners are not changed here (422)',
        params: memberParams,
        body: updateMemberBody,
        response: { 200: member, ...failures, 422: errorBody },
      },
    },
    async (request) =>
      workspaces.changeMemberRole(workspaceContext(request), cache, request.params.userId, request.body.role),
  );

  app.delete(
    '/api/members/:userId',
    {
      config: manage,
      schema: {
        tags: ['Members'],
        summary: 'Remove a member from the workspace (Admin)',
        params: memberParams,
        response: { 204: z.null().describe('Removed'), ...failures, 422: errorBody },
      },
    },
    async (request, reply) => {
      await workspaces.removeMember(workspaceContext(request), cache, request.params.userId);
      return reply.code(204).send(null);
    },
  );

  app.get(
    '/api/invitations',
    {
      config: manage,
      schema: {
        tags: ['Invitations'],
        summary: 'Pending invitations of the workspace (Admin)',
        querystring: pageQuery,
        response: { 200: invitationPage, ...failures },
      },
    },
    async (request) => workspaces.listInvitations(workspaceContext(request), request.query),
  );

  app.post(
    '/api/invitations',
    {
      config: manage,
      schema: {
        tags: ['Invitations'],
        summary: 'Invite an e-mail address (Admin): mails a link to {APP_URL}/invite?token=…, valid 7 days',
        body: createInvitationBody,
        response: { 201: invitation, ...failures, 409: errorBody },
      },
    },
    async (request, reply) => {
      const created = await workspaces.createInvitation(workspaceContext(request), mailer, config.appUrl, request.body);
      return reply.code(201).send(created);
    },
  );

  app.delete(
    '/api/invitations/:id',
    {
      config: manage,
      schema: {
        tags: ['Invitations'],
        summary: 'Revoke a pending invitation (Admin)',
        params: invitationParams,
        response: { 204: z.null().describe('Revoked'), ...failures },
      },
    },
    async (request, reply) => {
      await workspaces.revokeInvitation(workspaceContext(request), request.params.id);
      return reply.code(204).send(null);
    },
  );
}
