import { z } from 'zod';
import { ARTICLE_STATUSES, INDEX_STATUSES, VISIBILITIES } from '../../../db/schema/index.js';
import { paginated, pageQuery } from '../../../http/pagination.js';
import { SLUG_MAX_LENGTH, slugField } from '../slug.js';

export const ARTICLE_BODY_MAX_LENGTH = 200_000;
export const ARTICLE_MAX_COLLECTIONS = 50;

const visibility = z
  .enum(VISIBILITIES)
  .describe('Who the article is for in search: `public` or `internal`; a change to `internal` narrows its indexed chunks at once');
const status = z.enum(ARTICLE_STATUSES);

// The length is checked as sent (1–200), then the title is trimmed and must not be blank.
const title = z.string().max(200).trim().min(1).describe('1 to 200 characters, not blank; stored trimmed');
const body = z
  .string()
  .max(ARTICLE_BODY_MAX_LENGTH)
  .describe(`Free text (Markdown), at most ${ARTICLE_BODY_MAX_LENGTH.toLocaleString('en')} characters`);
const description = z.string().max(500).describe('At most 500 characters');
const collectionIds = z
  .array(z.uuid())
  .max(ARTICLE_MAX_COLLECTIONS)
  .describe(
    `Collections of this workspace (at most ${ARTICLE_MAX_COLLECTIONS}), in order; duplicates are dropped. ` +
      'An id that is not a collection of the workspace is a 400 naming its index (`collectionIds.1`).',
  );

export const createArticleBody = z.strictObject({
  title,
  body: body.optional(),
  description: description.optional(),
  visibility: visibility.default('public'),
  collectionIds: collectionIds.optional(),
});
export type CreateArticleInput = z.infer<typeof createArticleBody>;

export const updateArticleBody = z
  .strictObject({
    title: title.optional(),
    slug: slugField.optional().describe('A new slug; the title alone never changes it. 409 if another article has it'),
    body: body.nullable().optional().describe('`null` clears it'),
    description: description.nullable().optional().describe('`null` clears it'),
    visibility: visibility.optional(),
    collectionIds: collectionIds.optional().describe('Replaces the article\'s collections (same rules as on create)'),
  })
  .refine((value) => Object.values(value).some((field) => field !== undefined), {
    message: 'At least one field is required',
  });
export type UpdateArticleInput = z.infer<typeof updateArticleBody>;

export const articleStatusBody = z.strictObject({ status });

export const article = z
  .object({
    id: z.uuid(),
    type: z.literal('article'),
    title: z.string(),
    slug: z.string(),
    body: z.string().nullable(),
    description: z.string().nullable(),
    visibility,
    status,
    workspaceId: z.uuid(),
    publishedAt: z.string().nullable().describe('When it was last published; null while a draft'),
    createdAt: z.string(),
    updatedAt: z.string(),
    collectionIds: z.array(z.uuid()).describe('Its collections, in the order given'),
    indexStatus: z
      .enum(INDEX_STATUSES)
      .describe(
        'Where the article stands in the search index. `pending`: a change waits for the indexer (after publish, ' +
          'unpublish or an edit of a published article); `indexed`: searchable as of `indexedAt`; `removed`: not in ' +
          'the index — a new draft starts as `removed`, and an unpublished article becomes `removed` once its ' +
          'chunks are gone; `failed`: indexing gave up after its retries.',
      ),
    indexedAt: z.string().nullable().describe('When the indexer last added or removed it; null if never'),
  })
  .meta({ id: 'Article' });
export type ArticleRecord = z.infer<typeof article>;

export const articlePage = paginated(article);

export const articleListQuery = pageQuery.extend({
  status: status.optional(),
  visibility: z.enum(VISIBILITIES).optional(),
  collectionId: z.uuid().optional().describe('Only articles in this collection'),
  q: z.string().max(200).optional().describe('Case-insensitive substring of the title'),
});
export type ArticleListQuery = z.infer<typeof articleListQuery>;

export const articleParams = z.object({ id: z.uuid() });
export const articleSlugParams = z.object({ slug: z.string().min(1).max(SLUG_MAX_LENGTH) });
