import { z } from 'zod';
import type { AppServices } from '../../../app.js';
import { adminOnly, anyRole, type Api } from '../../../http/api.js';
import { errorBody, validationErrorBody } from '../../../http/errors.js';
import { workspaceContext } from '../../../http/guard.js';
import {
  collection,
  collectionListQuery,
  collectionPage,
  collectionParams,
  createCollectionBody,
  updateCollectionBody,
} from './schemas.js';
import * as collections from './service.js';

const read = anyRole;
const manage = adminOnly;
const failures = { 400: validationErrorBody, 401: errorBody, 403: errorBody, 404: errorBody, 500: errorBody };
const tags = ['Collections'];

/** Collections of knowledge-base articles: everyone reads, Admins and Org Owners write. */
export function registerCollectionRoutes(app: Api, _services: AppServices): void {
  app.get(
    '/api/content/collections',
    {
      config: read,
      schema: {
        tags,
        summary: 'Collections by name, each with its number of articles',
        querystring: collectionListQuery,
        response: { 200: collectionPage, ...failures },
      },
    },
    async (request) => collections.listCollections(workspaceContext(request), request.query),
  );

  app.post(
    '/api/content/collections',
    {
      config: manage,
      schema: {
        tags,
        summary: 'Create a collection (Admin); 409 if the given slug is taken',
        body: createCollectionBody,
        response: { 201: collection, ...failures, 409: errorBody },
      },
    },
    async (request, reply) => {
      const created = await collections.createCollection(workspaceContext(request), request.body);
      return reply.code(201).send(created);
    },
  );

  app.get(
    '/api/content/collections/:id',
    {
      config: read,
      schema: { tags, summary: 'One collection', params: collectionParams, response: { 200: collection, ...failures } },
    },
    async (request) => collections.getCollection(workspaceContext(request), request.params.id),
  );

  app.patch(
    '/api/content/collections/:id',
    {
      config: manage,
      schema: {
        tags,
        summary: 'Edit a collection (Admin); at least one field; 409 if the new slug is taken',
        params: collectionParams,
        body: updateCollectionBody,
        response: { 200: collection, ...failures, 409: errorBody },
      },
    },
    async (request) => collections.updateCollection(workspaceContext(request), request.params.id, request.body),
  );

  app.delete(
    '/api/content/collections/:id',
    {
      config: manage,
      schema: {
        tags,
        summary: 'Delete a collection (Admin); its articles stay, only their links to it are removed',
        params: collectionParams,
        response: { 204: z.null().describe('Deleted'), ...failures },
      },
    },
    async (request, reply) => {
      await collections.deleteCollection(workspaceContext(request), request.params.id);
      return reply.code(204).send(null);
    },
  );
}
