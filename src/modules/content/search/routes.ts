import type { AppServices } from '../../../app.js';
import type { Api } from '../../../http/api.js';
import { errorBody, validationErrorBody } from '../../../http/errors.js';
import { workspaceContext } from '../../../http/guard.js';
import { contentSettings, searchQuery, searchResults, updateContentSettingsBody } from './schemas.js';
import * as searchService from './service.js';

const failures = { 400: validationErrorBody, 401: errorBody, 403: errorBody, 500: errorBody };

export function registerSearchRoutes(app: Api, _services: AppServices): void {
  app.get(
    '/api/content/search',
    {
      config: { access: 'workspace' },
      schema: {
        tags: ['Search'],
        summary: 'Ranked full-text search over published articles and synced source items (all roles)',
        description:
          'Web-search query syntax ("phrase", or, -word), stemmed in the workspace\'s search language. One hit per document, ' +
          'ranked by its best-matching passage; drafts, deleted items and documents not yet indexed never appear. ' +
          'Unpublishing, deleting and making a document internal take effect at once; publishing and edits within seconds.',
        querystring: searchQuery,
        response: { 200: searchResults, ...failures },
      },
    },
    async (request) => searchService.search(workspaceContext(request), request.query),
  );

  app.get(
    '/api/content/settings',
    {
      config: { access: 'workspace' },
      schema: {
        tags: ['Search'],
        summary: 'Knowledge-base settings: the language used to stem the index and queries',
        response: { 200: contentSettings, ...failures },
      },
    },
    async (request) => searchService.getSettings(workspaceContext(request)),
  );

  app.patch(
    '/api/content/settings',
    {
      config: { access: 'workspace', minRole: 'admin' },
      schema: {
        tags: ['Search'],
        summary: 'Change the search language (Admin); the whole index is rebuilt in the background',
        body: updateContentSettingsBody,
        response: { 200: contentSettings, ...failures },
      },
    },
    async (request) => searchService.updateSettings(workspaceContext(request), request.body.searchLanguage),
  );
}
