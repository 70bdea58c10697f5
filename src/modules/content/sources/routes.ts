import multipart from '@fastify/multipart';
import type { FastifyRequest } from 'fastify';
import type { FastifyRouteSchemaDef, FastifyValidationResult } from 'fastify/types/schema.js';
import { validatorCompiler } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AppServices } from '../../../app.js';
import { adminOnly, anyRole, type Api } from '../../../http/api.js';
import { AppError, errorBody, errors, sendError, validationErrorBody } from '../../../http/errors.js';
import { workspaceContext } from '../../../http/guard.js';
import {
  addItemBody,
  contentSource,
  contentSourceItem,
  contentSourceItemDetail,
  contentSourceItemPage,
  contentSourcePage,
  createSourceBody,
  itemListQuery,
  itemParams,
  MAX_RAW_CONTENT,
  MAX_UPLOAD_FILE_BYTES,
  MAX_UPLOAD_FILES,
  sourceListQuery,
  sourceParams,
  updateManualItemBody,
  updateSourceBody,
  uploadedItems,
} from './schemas.js';
import * as contentSources from './service.js';

const read = anyRole;
const manage = adminOnly;
const failures = { 400: validationErrorBody, 401: errorBody, 403: errorBody, 404: errorBody, 500: errorBody };
const tags = ['Content sources'];
const MiB = 1024 * 1024;

/** Content sources and their items, under /api/content/sources; writes need Admin or Org Owner. */
export function registerSourceRoutes(app: Api, _services: AppServices): void {
  app.get(
    '/api/content/sources',
    {
      config: read,
      schema: {
        tags,
        summary: 'Content sources of the workspace, newest first; `type` filters',
        querystring: sourceListQuery,
        response: { 200: contentSourcePage, ...failures },
      },
    },
    async (request) => contentSources.listSources(workspaceContext(request), request.query),
  );

  app.post(
    '/api/content/sources',
    {
      config: manage,
      schema: {
        tags,
        summary: 'Create a source (Admin): a website to crawl, or a place for uploaded files or typed questions and answers',
        body: createSourceBody,
        response: { 201: contentSource, ...failures },
      },
    },
    async (request, reply) => reply.code(201).send(await contentSources.createSource(workspaceContext(request), request.body)),
  );

  app.get(
    '/api/content/sources/:id',
    {
      config: read,
      schema: {
        tags,
        summary: 'A source, with the live count of its non-deleted items (`itemCount`)',
        params: sourceParams,
        response: { 200: contentSource, ...failures },
      },
    },
    async (request) => contentSources.getSource(workspaceContext(request), request.params.id),
  );

  app.patch(
    '/api/content/sources/:id',
    {
      config: manage,
      schema: {
        tags,
        summary: 'Rename a source, change its visibility (applied to its indexed items at once) or its config (Admin)',
        params: sourceParams,
        body: updateSourceBody,
        response: { 200: contentSource, ...failures },
      },
    },
    async (request) => contentSources.updateSource(workspaceContext(request), request.params.id, request.body),
  );

  app.delete(
    '/api/content/sources/:id',
    {
      config: manage,
      schema: {
        tags,
        summary: 'Delete a source with its items, which leave the search index at once (Admin)',
        params: sourceParams,
        response: { 204: z.null().describe('Deleted'), ...failures },
      },
    },
    async (request, reply) => {
      await contentSources.deleteSource(workspaceContext(request), request.params.id);
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/api/content/sources/:id/sync',
    {
      config: manage,
      schema: {
        tags,
        summary: 'Queue a sync (Admin): a website is crawled again, other sources re-index what is not indexed',
        description:
          'Answers 202 with the source. When a sync is already queued or running nothing more is queued; ' +
          'follow `syncStatus` (queued → syncing → synced or failed).',
        params: sourceParams,
        response: { 202: contentSource, ...failures },
      },
    },
    async (request, reply) => reply.code(202).send(await contentSources.requestSync(workspaceContext(request), request.params.id)),
  );

  app.get(
    '/api/content/sources/:id/items',
    {
      config: read,
      schema: {
        tags,
        summary: 'Items of a source in the order they were added; deleted ones only with `includeDeleted=true`',
        params: sourceParams,
        querystring: itemListQuery,
        response: { 200: contentSourceItemPage, ...failures },
      },
    },
    async (request) => contentSources.listItems(workspaceContext(request), request.params.id, request.query),
  );

  app.get(
    '/api/content/sources/:id/items/:itemId',
    {
      config: read,
      schema: {
        tags,
        summary: 'An item with its full extracted text',
        params: itemParams,
        response: { 200: contentSourceItemDetail, ...failures },
      },
    },
    async (request) => contentSources.getItem(workspaceContext(request), request.params.id, request.params.itemId),
  );

  // The one route that reads multipart bodies: the parser lives in this plugin scope only, so every other
  // route still answers 415 to anything but JSON.
  app.register(async (scope: Api) => {
    await scope.register(multipart, {
      limits: { fileSize: MAX_UPLOAD_FILE_BYTES, files: MAX_UPLOAD_FILES, fields: 20, parts: 40 },
    });
    scope.setErrorHandler((error, request, reply) => sendError(request, reply, uploadError(error)));

    scope.post(
      '/api/content/sources/:id/items',
      {
        config: manage,
        bodyLimit: 8 * MiB,
        // The body is validated by the handler against the source's type (files or manual); multipart has none.
        validatorCompiler: bodyCheckedByHandler,
        schema: {
          tags,
          summary: 'Add an item (Admin): a file to a files source, a question and answer to a manual source',
          description:
            'Files source: JSON {fileName, rawContent, encoding?, contentType?} (.md, .txt, .html, .pdf; a PDF as base64 ' +
            `with encoding "base64"; rawContent at most ${MAX_RAW_CONTENT / MiB} MiB), answered with the item; or ` +
            `multipart/form-data with up to ${MAX_UPLOAD_FILES} \`file\` parts of at most ${MAX_UPLOAD_FILE_BYTES / MiB} MiB, ` +
            'answered with {items}. A file name already in the source replaces that item. Manual source: JSON ' +
            '{question, answer}. A website source takes no items (422); an unreadable file is 422.',
          params: sourceParams,
          body: addItemBody,
          response: { 201: z.union([contentSourceItem, uploadedItems]), ...failures, 413: errorBody, 415: errorBody, 422: errorBody },
        },
      },
      async (request, reply) => {
        const ctx = workspaceContext(request);
        if (request.isMultipart()) {
          const files = await readMultipartFiles(request);
          const items = await contentSources.addItems(ctx, request.params.id, { kind: 'multipart', files });
          return reply.code(201).send({ items });
        }
        const [item] = await contentSources.addItems(ctx, request.params.id, { kind: 'json', body: request.body });
        return reply.code(201).send(item!);
      },
    );
  });

  app.patch(
    '/api/content/sources/:id/items/:itemId',
    {
      config: manage,
      schema: {
        tags,
        summary: 'Edit a question and answer of a manual source (Admin); a change re-indexes it',
        params: itemParams,
        body: updateManualItemBody,
        response: { 200: contentSourceItemDetail, ...failures, 422: errorBody },
      },
    },
    async (request) =>
      contentSources.updateManualItem(workspaceContext(request), request.params.id, request.params.itemId, request.body),
  );

  app.delete(
    '/api/content/sources/:id/items/:itemId',
    {
      config: manage,
      schema: {
        tags,
        summary: 'Delete an item (Admin): it leaves the search index at once and stays listed with `includeDeleted`',
        params: itemParams,
        response: { 204: z.null().describe('Deleted'), ...failures },
      },
    },
    async (request, reply) => {
      await contentSources.deleteItem(workspaceContext(request), request.params.id, request.params.itemId);
      return reply.code(204).send(null);
    },
  );
}

/** Validation of every part but the body, which the handler checks against the source's type (or reads as multipart). */
function bodyCheckedByHandler<S>(route: FastifyRouteSchemaDef<S>): FastifyValidationResult {
  if (route.httpPart === 'body') return (data: unknown) => ({ value: data });
  return validatorCompiler(route as unknown as FastifyRouteSchemaDef<z.ZodType>);
}

/**
 * Reads every part of a multipart upload: `file` parts become files; anything else is refused, after the body
 * has been read to its end.
 */
async function readMultipartFiles(request: FastifyRequest): Promise<contentSources.UploadedFile[]> {
  const files: contentSources.UploadedFile[] = [];
  const problems: { path: string; message: string }[] = [];
  try {
    for await (const part of request.parts()) {
      if (part.type === 'file') {
        const content = await part.toBuffer();
        if (part.fieldname !== 'file') problems.push({ path: part.fieldname, message: 'Unknown property: files are sent as `file` parts' });
        else files.push({ fileName: part.filename, content, ...(part.mimetype ? { contentType: part.mimetype } : {}) });
      } else {
        problems.push({ path: part.fieldname, message: 'Unknown property: only `file` parts are read' });
      }
    }
  } catch (error) {
    throw uploadError(error);
  }
  if (files.length === 0 && problems.length === 0) problems.push({ path: 'file', message: 'At least one `file` part is required' });
  const unnamed = files.findIndex((file) => !file.fileName.trim());
  if (unnamed >= 0) problems.push({ path: `file.${unnamed}`, message: 'The part has no file name' });
  if (problems.length > 0) throw errors.validation(problems);
  return files.map((file) => ({ ...file, fileName: file.fileName.trim() }));
}

/** The multipart plugin's and the body parser's errors, as the API's errors with messages true to this route. */
function uploadError(error: unknown): unknown {
  if (error instanceof AppError) return error;
  const code = (error as { code?: unknown } | null)?.code;
  switch (code) {
    case 'FST_REQ_FILE_TOO_LARGE':
      return new AppError('payload_too_large', `A file is larger than ${MAX_UPLOAD_FILE_BYTES / MiB} MiB`);
    case 'FST_FILES_LIMIT':
      return new AppError('payload_too_large', `At most ${MAX_UPLOAD_FILES} files per upload`);
    case 'FST_PARTS_LIMIT':
    case 'FST_FIELDS_LIMIT':
      return new AppError('payload_too_large', 'Too many parts in the upload');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new AppError('payload_too_large', 'Request body is larger than 8 MiB');
    case 'FST_PROTO_VIOLATION':
    case 'FST_MP_PREMATURE_CLOSE':
      return errors.validation([{ path: '', message: (error as Error).message }], 'Invalid request body');
  }
  // busboy's own parse errors (no boundary, truncated body) carry no code.
  if (error instanceof Error && !('statusCode' in error) && !('validation' in error) && /multipart|boundary|form/i.test(error.message)) {
    return errors.validation([{ path: '', message: `Malformed multipart/form-data body: ${error.message}` }], 'Invalid request body');
  }
  return error;
}
