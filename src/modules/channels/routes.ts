import type { AppServices } from '../../app.js';
import type { Api } from '../../http/api.js';

export function registerChannelRoutes(_app: Api, _services: AppServices): void {}
