// The knowledge base's HTTP surface: /api/content/*.
import type { AppServices } from '../../app.js';
import type { Api } from '../../http/api.js';
import { registerArticleRoutes } from './articles/routes.js';
import { registerCollectionRoutes } from './collections/routes.js';
import { registerSearchRoutes } from './search/routes.js';
import { registerSourceRoutes } from './sources/routes.js';

export function registerContentRoutes(app: Api, services: AppServices): void {
  registerCollectionRoutes(app, services);
  registerArticleRoutes(app, services);
  registerSourceRoutes(app, services);
  registerSearchRoutes(app, services);
}
