import { z } from 'zod';
import type { AppServices } from '../../../app.js';
import { adminOnly, anyRole, type Api } from '../../../http/api.js';
import { errorBody, validationErrorBody } from '../../../http/errors.js';
import { workspaceContext } from '../../../http/guard.js';
import {
  article,
  articleListQuery,
  articlePage,
  articleParams,
  articleSlugParams,
  articleStatusBody,
  createArticleBody,
  updateArticleBody,
} from './schemas.js';
import * as articles from './service.js';

const read = anyRole;
const manage = adminOnly;
const failures = { 400: validationErrorBody, 401: errorBody, 403: errorBody, 404: errorBody, 500: errorBody };
const tags = ['Articles'];

/** Knowledge-base articles of the workspace: everyone reads, Admins and Org Owners write. */
export function registerArticleRoutes(app: Api, _services: AppServices): void {
  app.get(
    '/api/content/articles',
    {
      config: read,
      schema: {
        tags,
        summary: 'Articles, newest first; filter by status, visibility, collectionId and a title substring q',
        querystring: articleListQuery,
        response: { 200: articlePage, ...failures },
      },
    },
    async (request) => articles.listArticles(workspaceContext(request), request.query),
  );

  app.post(
    '/api/content/articles',
    {
      config: manage,
      schema: {
        tags,
        summary: 'Create a draft article (Admin); its slug is made from the title and made unique in the workspace',
        body: createArticleBody,
        response: { 201: article, ...failures },
      },
    },
    async (request, reply) => {
      const created = await articles.createArticle(workspaceContext(request), request.body);
      return reply.code(201).send(created);
    },
  );

  app.get(
    '/api/content/articles/by-slug/:slug',
    {
      config: read,
      schema: {
        tags,
        summary: 'The article with this slug in the workspace',
        params: articleSlugParams,
        response: { 200: article, ...failures },
      },
    },
    async (request) => articles.getArticleBySlug(workspaceContext(request), request.params.slug),
  );

  app.get(
    '/api/content/articles/:id',
    {
      config: read,
      schema: { tags, summary: 'One article', params: articleParams, response: { 200: article, ...failures } },
    },
    async (request) => articles.getArticle(workspaceContext(request), request.params.id),
  );

  app.patch(
    '/api/content/articles/:id',
    {
      config: manage,
      schema: {
        tags,
        summary:
          'Edit an article (Admin); at least one field. Editing a published article re-indexes it; 409 if the new slug is taken',
        params: articleParams,
        body: updateArticleBody,
        response: { 200: article, ...failures, 409: errorBody },
      },
    },
    async (request) => articles.updateArticle(workspaceContext(request), request.params.id, request.body),
  );

  app.patch(
    '/api/content/articles/:id/status',
    {
      config: manage,
      schema: {
        tags,
        summary:
          'Publish (indexing is enqueued) or return to draft (removal from the index is enqueued) (Admin); the same status again changes nothing',
        params: articleParams,
        body: articleStatusBody,
        response: { 200: article, ...failures },
      },
    },
    async (request) => articles.changeArticleStatus(workspaceContext(request), request.params.id, request.body.status),
  );

  app.delete(
    '/api/content/articles/:id',
    {
      config: manage,
      schema: {
        tags,
        summary: 'Delete an article (Admin); it leaves the search index at once',
        params: articleParams,
        response: { 204: z.null().describe('Deleted'), ...failures },
      },
    },
    async (request, reply) => {
      await articles.deleteArticle(workspaceContext(request), request.params.id);
      return reply.code(204).send(null);
    },
  );
}
