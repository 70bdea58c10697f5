import { z } from 'zod';
import { INDEX_STATUSES, SOURCE_TYPES, SYNC_STATUSES, VISIBILITIES } from '../../../db/schema/index.js';
import type { ErrorDetail } from '../../../http/errors.js';
import { pageQuery, paginated } from '../../../http/pagination.js';

/** The most text one JSON upload may carry in `rawContent` (characters; base64 included). */
export const MAX_RAW_CONTENT = 5 * 1024 * 1024;
/** Per file of a multipart upload, and how many files one upload may hold. */
export const MAX_UPLOAD_FILE_BYTES = 10 * 1024 * 1024;
export const MAX_UPLOAD_FILES = 10;
export const CONTENT_PREVIEW_LENGTH = 300;

const httpUrl = z.url({ protocol: /^https?$/, error: 'Must be an absolute http or https URL' }).max(2048);
const name = z.string().trim().min(1).max(100);
const visibility = z.enum(VISIBILITIES).describe('Who may find the source\'s items in search; `public` by default');

export const websiteConfig = z
  .strictObject({
    startUrl: httpUrl.describe('The page the crawl starts from; only pages of its site (origin) are followed'),
    sitemapUrl: httpUrl.optional().describe('A sitemap to take the page list from instead of following links'),
    maxPages: z.int().min(1).max(500).default(50).describe('Most pages one sync reads'),
  })
  .meta({ id: 'WebsiteSourceConfig' });
export type WebsiteConfig = z.infer<typeof websiteConfig>;
const emptyConfig = z.strictObject({}).default({}).describe('No settings');

/** The config schema of each type: what POST validates and what a PATCH's merged config must satisfy. */
export const configSchemas = { website: websiteConfig, files: emptyConfig, manual: emptyConfig } as const;

export const createSourceBody = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('website'), name, visibility: visibility.optional(), config: websiteConfig }),
  z.strictObject({ type: z.literal('files'), name, visibility: visibility.optional(), config: emptyConfig }),
  z.strictObject({ type: z.literal('manual'), name, visibility: visibility.optional(), config: emptyConfig }),
]);
export type CreateSourceBody = z.infer<typeof createSourceBody>;

export const updateSourceBody = z.strictObject({
  name: name.optional(),
  visibility: visibility.optional(),
  config: z
    .record(z.string(), z.unknown())
    .optional()
    .describe('Merged into the current config and validated for the source\'s type; `null` removes an optional setting'),
});
export type UpdateSourceBody = z.infer<typeof updateSourceBody>;

export const contentSource = z
  .object({
    id: z.uuid(),
    workspaceId: z.uuid(),
    type: z.enum(SOURCE_TYPES),
    name: z.string(),
    visibility: z.enum(VISIBILITIES),
    config: z
      .record(z.string(), z.unknown())
      .describe('website: {startUrl, sitemapUrl?, maxPages}; files and manual: {}'),
    syncStatus: z.enum(SYNC_STATUSES),
    lastSyncedAt: z.string().nullable(),
    lastError: z.string().nullable().describe('Why the last sync failed, or which pages it could not read'),
    itemCount: z.int().min(0).describe('Live (not deleted) items, counted when the record is read'),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'ContentSource' });
export type ContentSourceRecord = z.infer<typeof contentSource>;
export const contentSourcePage = paginated(contentSource);

export const sourceListQuery = pageQuery.extend({ type: z.enum(SOURCE_TYPES).optional() });
export const sourceParams = z.object({ id: z.uuid() });
export const itemParams = z.object({ id: z.uuid(), itemId: z.uuid() });
export const itemListQuery = pageQuery.extend({
  includeDeleted: z.stringbool().default(false).describe('Also list deleted items'),
});

export const contentSourceItem = z
  .object({
    id: z.uuid(),
    sourceId: z.uuid(),
    title: z.string(),
    url: z.string().nullable().describe('The page, for items of a website source'),
    fileName: z.string().nullable().describe('The uploaded file, for items of a files source'),
    contentPreview: z.string().describe(`The first ${CONTENT_PREVIEW_LENGTH} characters of the extracted text`),
    contentLength: z.int().min(0).describe('Characters of extracted text'),
    indexStatus: z.enum(INDEX_STATUSES),
    indexedAt: z.string().nullable(),
    indexError: z.string().nullable(),
    deletedAt: z.string().nullable(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'ContentSourceItem' });
export type ContentSourceItemRecord = z.infer<typeof contentSourceItem>;
export const contentSourceItemDetail = contentSourceItem
  .extend({ content: z.string().describe('The extracted text that is indexed') })
  .meta({ id: 'ContentSourceItemDetail' });
export const contentSourceItemPage = paginated(contentSourceItem);
export const uploadedItems = z
  .object({ items: z.array(contentSourceItem) })
  .meta({ id: 'ContentSourceItemUpload', description: 'The items of a multipart upload, one per file part' });

export const fileItemBody = z
  .strictObject({
    fileName: z.string().trim().min(1).max(255).describe('Its extension (.md, .txt, .html, .pdf) decides how it is read'),
    rawContent: z.string().max(MAX_RAW_CONTENT).describe('The file\'s text, or its bytes in base64 when `encoding` is `base64`'),
    encoding: z.enum(['utf8', 'base64']).default('utf8'),
    contentType: z.string().max(200).optional().describe('Used when the file name has no known extension'),
  })
  .meta({ id: 'FileItemBody' });
export type FileItemBody = z.infer<typeof fileItemBody>;

export const manualItemBody = z
  .strictObject({ question: z.string().trim().min(1).max(500), answer: z.string().trim().min(1).max(20_000) })
  .meta({ id: 'ManualItemBody' });
export type ManualItemBody = z.infer<typeof manualItemBody>;
export const addItemBody = z.union([fileItemBody, manualItemBody]);
export const updateManualItemBody = z.strictObject({
  question: z.string().trim().min(1).max(500).optional(),
  answer: z.string().trim().min(1).max(20_000).optional(),
});
export type UpdateManualItemBody = z.infer<typeof updateManualItemBody>;

/** zod issues as the API's 400 details, the way request validation reports them (src/http/errors.ts). */
export function issueDetails(error: z.ZodError, prefix: string[] = []): ErrorDetail[] {
  return error.issues.flatMap((issue) => {
    const base = [...prefix, ...issue.path.map(String)];
    if (issue.code === 'unrecognized_keys') {
      return issue.keys.map((key) => ({ path: [...base, key].join('.'), message: 'Unknown property' }));
    }
    return [{ path: base.join('.'), message: issue.message }];
  });
}
