// The knowledge base: articles in collections, content sources and their items, and the search index built from both.
import { sql } from 'drizzle-orm';
import {
  customType,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  text,
  timestamp,
  uniqueIndex,
  uuid,
} from 'drizzle-orm/pg-core';
import { timestamps } from './columns.js';
import { users } from './auth.js';
import { workspaceId } from './tenancy.js';

export const VISIBILITIES = ['public', 'internal'] as const;
export const ARTICLE_STATUSES = ['draft', 'published'] as const;
/** Where a document stands in the search index; `removed` once it has been taken out. */
export const INDEX_STATUSES = ['pending', 'indexed', 'failed', 'removed'] as const;
export const SOURCE_TYPES = ['website', 'files', 'manual'] as const;
export const SYNC_STATUSES = ['idle', 'queued', 'syncing', 'synced', 'failed'] as const;
export const DOCUMENT_TYPES = ['article', 'source_item'] as const;

export type Visibility = (typeof VISIBILITIES)[number];
export type IndexStatus = (typeof INDEX_STATUSES)[number];
export type SourceType = (typeof SOURCE_TYPES)[number];
export type SyncStatus = (typeof SYNC_STATUSES)[number];
export type DocumentType = (typeof DOCUMENT_TYPES)[number];

const tsvector = customType<{ data: string }>({ dataType: () => 'tsvector' });
const regconfig = customType<{ data: string }>({ dataType: () => 'regconfig' });

const indexState = {
  indexStatus: text('index_status', { enum: INDEX_STATUSES }).notNull().default('pending'),
  indexedAt: timestamp('indexed_at', { withTimezone: true }),
  indexError: text('index_error'),
};

/** Per-workspace knowledge-base settings; a workspace without a row uses the defaults. */
export const contentSettings = pgTable('content_settings', {
  workspaceId: workspaceId().primaryKey(),
  /** A PostgreSQL text-search configuration name: how words are stemmed for the index and for queries. */
  searchLanguage: text('search_language').notNull().default('english'),
  updatedAt: timestamps.updatedAt,
});

export const collections = pgTable(
  'content_collections',
  {
    id: uuid('id').primaryKey(),
    workspaceId: workspaceId(),
    name: text('name').notNull(),
    slug: text('slug').notNull(),
    description: text('description'),
    ...timestamps,
  },
  (t) => [uniqueIndex('content_collections_workspace_slug_idx').on(t.workspaceId, t.slug)],
);

export const articles = pgTable(
  'content_articles',
  {
    id: uuid('id').primaryKey(),
    workspaceId: workspaceId(),
    title: text('title').notNull(),
    slug: text('slug').notNull(),
    body: text('body'),
    description: text('description'),
    visibility: text('visibility', { enum: VISIBILITIES }).notNull().default('public'),
    status: text('status', { enum: ARTICLE_STATUSES }).notNull().default('draft'),
    publishedAt: timestamp('published_at', { withTimezone: true }),
    createdByUserId: uuid('created_by_user_id').references(() => users.id, { onDelete: 'set null' }),
    ...indexState,
    ...timestamps,
  },
  (t) => [
    uniqueIndex('content_articles_workspace_slug_idx').on(t.workspaceId, t.slug),
    index('content_articles_workspace_created_idx').on(t.workspaceId, t.createdAt, t.id),
    index('content_articles_workspace_status_idx').on(t.workspaceId, t.status, t.createdAt),
  ],
);

export const articleCollections = pgTable(
  'content_article_collections',
  {
    workspaceId: workspaceId(),
    articleId: uuid('article_id')
      .notNull()
      .references(() => articles.id, { onDelete: 'cascade' }),
    collectionId: uuid('collection_id')
      .notNull()
      .references(() => collections.id, { onDelete: 'cascade' }),
    /** Order of the collection in the article's `collectionIds`. */
    position: integer('position').notNull().default(0),
  },
  (t) => [
    primaryKey({ columns: [t.workspaceId, t.articleId, t.collectionId] }),
    index('content_article_collections_collection_idx').on(t.workspaceId, t.collectionId),
  ],
);

export const sources = pgTable(
  'content_sources',
  {
    id: uuid('id').primaryKey(),
    workspaceId: workspaceId(),
    type: text('type', { enum: SOURCE_TYPES }).notNull(),
    name: text('name').notNull(),
    /** Type-specific settings, validated by the source schemas (start URL, page cap, ...). */
    config: jsonb('config').$type<Record<string, unknown>>().notNull().default({}),
    visibility: text('visibility', { enum: VISIBILITIES }).notNull().default('public'),
    syncStatus: text('sync_status', { enum: SYNC_STATUSES }).notNull().default('idle'),
    lastSyncedAt: timestamp('last_synced_at', { withTimezone: true }),
    lastError: text('last_error'),
    ...timestamps,
  },
  (t) => [index('content_sources_workspace_created_idx').on(t.workspaceId, t.createdAt, t.id)],
);

/** One document of a source: a crawled page, an uploaded file, or a typed question and answer. */
export const sourceItems = pgTable(
  'content_source_items',
  {
    id: uuid('id').primaryKey(),
    workspaceId: workspaceId(),
    sourceId: uuid('source_id')
      .notNull()
      .references(() => sources.id, { onDelete: 'cascade' }),
    /** Identity inside the source that a sync matches on: the page URL, or the item id for files and snippets. */
    externalKey: text('external_key').notNull(),
    title: text('title').notNull(),
    url: text('url'),
    fileName: text('file_name'),
    /** The extracted text (Markdown-ish), what gets chunked and indexed. */
    content: text('content').notNull(),
    contentHash: text('content_hash').notNull(),
    deletedAt: timestamp('deleted_at', { withTimezone: true }),
    ...indexState,
    ...timestamps,
  },
  (t) => [
    uniqueIndex('content_source_items_source_key_idx').on(t.workspaceId, t.sourceId, t.externalKey),
    index('content_source_items_source_created_idx').on(t.workspaceId, t.sourceId, t.createdAt, t.id),
  ],
);

/**
 * The search index: chunks of published articles and live source items. `search_vector` is generated from the
 * chunk's own language, so the query side only needs the workspace's current language. It weighs the document
 * title (A), the chunk's own heading, the last part of its heading path (B), and the passage (C).
 */
export const searchChunks = pgTable(
  'content_search_chunks',
  {
    workspaceId: workspaceId(),
    documentType: text('document_type', { enum: DOCUMENT_TYPES }).notNull(),
    documentId: uuid('document_id').notNull(),
    position: integer('position').notNull(),
    title: text('title').notNull(),
    heading: text('heading'),
    content: text('content').notNull(),
    visibility: text('visibility', { enum: VISIBILITIES }).notNull(),
    url: text('url'),
    language: regconfig('language').notNull(),
    searchVector: tsvector('search_vector')
      .notNull()
      .generatedAlwaysAs(
        sql`setweight(to_tsvector(language, title), 'A') || setweight(to_tsvector(language, regexp_replace(coalesce(heading, ''), '^.*› ', '')), 'B') || setweight(to_tsvector(language, content), 'C')`,
      ),
    createdAt: timestamps.createdAt,
  },
  (t) => [
    primaryKey({ columns: [t.workspaceId, t.documentType, t.documentId, t.position] }),
    // workspace_id inside the GIN index (btree_gin): one index scan answers "this workspace and these words",
    // whatever the planner's statistics say; with a plain GIN index and fresh rows it AND-ed a scan of the whole
    // workspace's primary key (17 ms for a one-hit query over 100,000 chunks). fastupdate off: with GIN's pending
    // list, every search scanned up to 4 MB of unmerged entries after a burst of indexing (15 ms, measured).
    index('content_search_chunks_vector_idx')
      .using('gin', t.workspaceId, t.searchVector)
      .with({ fastupdate: false }),
  ],
);
