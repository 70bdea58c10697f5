import { z } from 'zod';
import type { AppServices } from '../../app.js';
import { agentOrAbove, anyRole, type Api } from '../../http/api.js';
import { AppError, errorBody, sendError, validationErrorBody } from '../../http/errors.js';
import { workspaceContext } from '../../http/guard.js';
import * as imports from './imports.js';
import { importContactsJob } from './jobs.js';
import {
  addContactTagsBody,
  contact,
  contactImport,
  contactListQuery,
  contactPage,
  contactParams,
  contactTagParams,
  createContactBody,
  importBody,
  importParams,
  MAX_IMPORT_CSV_CHARS,
  updateContactBody,
} from './schemas.js';
import * as contacts from './service.js';

const read = anyRole;
const write = agentOrAbove;
const failures = { 400: validationErrorBody, 401: errorBody, 403: errorBody, 404: errorBody, 500: errorBody };
const conflict = z.object({ error: z.string(), existingId: z.uuid() }).meta({ id: 'DuplicateContact' });
const tags = ['Contacts'];
const MiB = 1024 * 1024;
/** The CSV's 5 MiB plus room for JSON escaping. */
const IMPORT_BODY_LIMIT = 6 * MiB;

/** Contacts: everyone reads; Agents, Admins and Org Owners create, edit, tag, import and delete. */
export function registerContactRoutes(app: Api, _services: AppServices): void {
  app.get(
    '/api/contacts',
    {
      config: read,
      schema: {
        tags,
        summary: 'Contacts, newest first; search q on name, phone and e-mail; filter by tagId and groupId',
        querystring: contactListQuery,
        response: { 200: contactPage, ...failures },
      },
    },
    async (request) => contacts.listContacts(workspaceContext(request), request.query),
  );

  app.post(
    '/api/contacts',
    {
      config: write,
      schema: {
        tags,
        summary: 'Create a contact (Agent); 409 {error, existingId} if another contact has the phone number',
        body: createContactBody,
        response: { 201: contact, ...failures, 409: conflict },
      },
    },
    async (request, reply) => reply.code(201).send(await contacts.createContact(workspaceContext(request), request.body)),
  );

  // Registered before /:contactId routes; static segments win in the router anyway.
  app.get(
    '/api/contacts/imports/:id',
    {
      config: read,
      schema: {
        tags,
        summary: 'A CSV import: its status and, once completed, created, updated and rejected rows',
        params: importParams,
        response: { 200: contactImport, ...failures },
      },
    },
    async (request) => imports.getImport(workspaceContext(request), request.params.id),
  );

  // The one route that also reads text/csv: the parser lives in this plugin scope only, so every other route
  // still answers 415 to anything but JSON.
  app.register(async (scope: Api) => {
    scope.addContentTypeParser('text/csv', { parseAs: 'string', bodyLimit: IMPORT_BODY_LIMIT }, (_request, body, done) => {
      done(null, { csv: body });
    });
    scope.setErrorHandler((error, request, reply) =>
      sendError(
        request,
        reply,
        (error as { code?: string }).code === 'FST_ERR_CTP_BODY_TOO_LARGE'
          ? new AppError('payload_too_large', `Request body is larger than ${IMPORT_BODY_LIMIT / MiB} MiB`)
          : error,
      ),
    );
    scope.post(
      '/api/contacts/import',
      {
        config: write,
        bodyLimit: IMPORT_BODY_LIMIT,
        schema: {
          tags,
          summary: 'Import contacts from CSV (Agent): 202 with the queued import, processed by a job',
          description:
            `JSON {csv, fileName?} or a text/csv body; the CSV at most ${MAX_IMPORT_CSV_CHARS / MiB} MiB. The header row ` +
            'names the columns: `name` (required on every row), `phone` (international format, stored E.164) and ' +
            '`email`, in any case; every other column is an attribute with that name (at most 50, names up to 64 ' +
            'characters; values stored as strings). Empty cells are ignored. A row matches an existing contact by ' +
            'phone, then by e-mail (the oldest with it): the contact is updated (name replaced, e-mail set, ' +
            'attributes merged, phone set if it had none); otherwise a contact is created. A row with no name, an ' +
            'invalid phone or e-mail is rejected with its reason and row number (1-based, header excluded). Poll ' +
            'GET /api/contacts/imports/{id}.',
          body: importBody,
          response: { 202: contactImport, ...failures, 413: errorBody, 415: errorBody },
        },
      },
      async (request, reply) =>
        reply.code(202).send(await imports.startImport(workspaceContext(request), request.body, importContactsJob)),
    );
  });

  app.get(
    '/api/contacts/:contactId',
    {
      config: read,
      schema: { tags, summary: 'One contact', params: contactParams, response: { 200: contact, ...failures } },
    },
    async (request) => contacts.getContact(workspaceContext(request), request.params.contactId),
  );

  app.patch(
    '/api/contacts/:contactId',
    {
      config: write,
      schema: {
        tags,
        summary: 'Edit a contact (Agent): any field; attributes merge key by key (null deletes a key); tagIds and groupIds replace the sets',
        params: contactParams,
        body: updateContactBody,
        response: { 200: contact, ...failures, 409: conflict },
      },
    },
    async (request) => contacts.updateContact(workspaceContext(request), request.params.contactId, request.body),
  );

  app.delete(
    '/api/contacts/:contactId',
    {
      config: write,
      schema: {
        tags,
        summary: 'Delete a contact (Agent), with its tags, group memberships and conversations',
        params: contactParams,
        response: { 204: z.null().describe('Deleted'), ...failures },
      },
    },
    async (request, reply) => {
      await contacts.deleteContact(workspaceContext(request), request.params.contactId);
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/api/contacts/:contactId/tags',
    {
      config: write,
      schema: {
        tags,
        summary: 'Add tags to a contact (Agent); tags it already has are ignored. Answers the contact',
        params: contactParams,
        body: addContactTagsBody,
        response: { 200: contact, ...failures },
      },
    },
    async (request) => contacts.addContactTags(workspaceContext(request), request.params.contactId, request.body.tagIds),
  );

  app.delete(
    '/api/contacts/:contactId/tags/:tagId',
    {
      config: write,
      schema: {
        tags,
        summary: 'Remove a tag from a contact (Agent); 204 also when the contact did not have it',
        params: contactTagParams,
        response: { 204: z.null().describe('Removed'), ...failures },
      },
    },
    async (request, reply) => {
      await contacts.removeContactTag(workspaceContext(request), request.params.contactId, request.params.tagId);
      return reply.code(204).send(null);
    },
  );
}
