import { z } from 'zod';
import { DOCUMENT_TYPES, VISIBILITIES } from '../../../db/schema/index.js';

/** PostgreSQL's built-in text-search configurations (`\dF`): the languages the index can stem. */
export const SEARCH_LANGUAGES = [
  'simple', 'arabic', 'armenian', 'basque', 'catalan', 'danish', 'dutch', 'english', 'finnish', 'french', 'german',
  'greek', 'hindi', 'hungarian', 'indonesian', 'irish', 'italian', 'lithuanian', 'nepali', 'norwegian', 'portuguese',
  'romanian', 'russian', 'serbian', 'spanish', 'swedish', 'tamil', 'turkish', 'yiddish',
] as const;

export const searchQuery = z.object({
  q: z.string().trim().min(1).max(500).describe('Web-search syntax: "quoted phrase", or, -excluded'),
  limit: z.coerce.number().int().min(1).max(50).default(10),
  offset: z.coerce.number().int().min(0).max(1000).default(0),
  visibility: z.enum(VISIBILITIES).optional().describe('Only documents of this visibility; both when absent'),
  documentType: z.enum(DOCUMENT_TYPES).optional(),
});
export type SearchQuery = z.infer<typeof searchQuery>;

export const searchHit = z
  .object({
    documentType: z.enum(DOCUMENT_TYPES),
    documentId: z.uuid(),
    title: z.string(),
    heading: z.string().nullable().describe('Heading path of the best-matching passage'),
    snippet: z.string().describe('The best-matching passage, HTML-escaped, matched words wrapped in <mark></mark>'),
    score: z.number(),
    url: z.string().optional().describe('For items crawled from a website'),
    sourceId: z.uuid().optional().describe('For source items'),
    visibility: z.enum(VISIBILITIES),
  })
  .meta({ id: 'SearchHit' });

export const searchResults = z
  .object({ items: z.array(searchHit), total: z.number().int().describe('Matching documents across all pages') })
  .meta({ id: 'SearchResults' });
export type SearchResults = z.infer<typeof searchResults>;

export const contentSettings = z
  .object({ searchLanguage: z.enum(SEARCH_LANGUAGES), updatedAt: z.string().nullable() })
  .meta({ id: 'ContentSettings' });
export const updateContentSettingsBody = z.strictObject({ searchLanguage: z.enum(SEARCH_LANGUAGES) });
