import type { AppServices } from '../../app.js';
import type { Api } from '../../http/api.js';
import { errorBody, validationErrorBody } from '../../http/errors.js';
import { sessionOf } from '../../http/guard.js';
import {
  acceptedInvitation,
  createdOrganization,
  createdWorkspace,
  createOrganizationBody,
  createWorkspaceBody,
  invitationTokenParams,
  meResponse,
  orgParams,
} from './schemas.js';
import { acceptInvitation, createOrganization, createWorkspace, listAccess } from './service.js';

const userRoute = { access: 'user' as const };
const security = [{ session: [] }];
const tags = ['Account'];
const failures = { 400: validationErrorBody, 401: errorBody, 403: errorBody, 404: errorBody, 500: errorBody };

/** Routes on the signed-in user's own account: the session cookie is enough, no x-workspace-id. */
export function registerAccountRoutes(app: Api, services: AppServices): void {
  const { db } = services.database;

  app.get(
    '/api/me',
    {
      config: userRoute,
      schema: {
        tags,
        security,
        summary: 'The signed-in user and every organization and workspace they can reach, with their role',
        response: { 200: meResponse, 401: errorBody },
      },
    },
    async (request) => {
      const { user } = sessionOf(request);
      return { user, organizations: await listAccess(db, user.id) };
    },
  );

  app.post(
    '/api/organizations',
    {
      config: userRoute,
      schema: {
        tags,
        security,
        summary: 'Create an organization (the caller becomes its owner) with a first workspace, "Default"',
        body: createOrganizationBody,
        response: { 201: createdOrganization, ...failures },
      },
    },
    async (request, reply) => {
      const { user } = sessionOf(request);
      const organization = await db.transaction((tx) =>
        createOrganization(tx, { userId: user.id, name: request.body.name, workspaceName: 'Default' }),
      );
      services.cache.forgetUser(user.id);
      return reply.code(201).send(organization);
    },
  );

  app.post(
    '/api/organizations/:orgId/workspaces',
    {
      config: userRoute,
      schema: {
        tags,
        security,
        summary: 'Create a workspace in an organization (Org Owner only)',
        params: orgParams,
        body: createWorkspaceBody,
        response: { 201: createdWorkspace, ...failures },
      },
    },
    async (request, reply) => {
      const { user } = sessionOf(request);
      const workspace = await createWorkspace(db, user.id, request.params.orgId, request.body.name);
      return reply.code(201).send(workspace);
    },
  );

  app.post(
    '/api/invitations/:token/accept',
    {
      config: userRoute,
      schema: {
        tags,
        security,
        summary: 'Join the workspace of an invitation; the caller must be signed in with the invited e-mail',
        params: invitationTokenParams,
        response: { 200: acceptedInvitation, ...failures, 409: errorBody, 410: errorBody },
      },
    },
    async (request) => acceptInvitation(db, services.cache, sessionOf(request).user, request.params.token),
  );
}
