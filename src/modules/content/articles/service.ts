// Knowledge-base articles: drafts and published articles, their collections, and keeping the search index in step
// (publishing or editing a published article enqueues indexing; unpublishing and deleting hide it at once).
import { and, asc, count, desc, eq, ilike, inArray, type SQL, sql } from 'drizzle-orm';
import type { Tx } from '../../../db/client.js';
import { articleCollections, articles, collections } from '../../../db/schema/index.js';
import { iso } from '../../../http/api.js';
import { type ErrorDetail, errors } from '../../../http/errors.js';
import type { WorkspaceContext } from '../../../http/guard.js';
import type { Page } from '../../../http/pagination.js';
import { newId } from '../../../ids.js';
import { removeChunks, setChunkVisibility } from '../index/indexer.js';
import { indexDocument, unindexDocument } from '../jobs.js';
import { isUniqueViolation } from '../../../db/errors.js';
import { insertWithUniqueSlug, slugify } from '../slug.js';
import type { ArticleListQuery, ArticleRecord, CreateArticleInput, UpdateArticleInput } from './schemas.js';

const SLUG_INDEX = 'content_articles_workspace_slug_idx';
const FALLBACK_SLUG = 'article';

type ArticleRow = typeof articles.$inferSelect;

function toRecord(row: ArticleRow, collectionIds: string[]): ArticleRecord {
  return {
    id: row.id,
    type: 'article',
    title: row.title,
    slug: row.slug,
    body: row.body,
    description: row.description,
    visibility: row.visibility,
    status: row.status,
    workspaceId: row.workspaceId,
    publishedAt: row.publishedAt ? iso(row.publishedAt) : null,
    createdAt: iso(row.createdAt),
    updatedAt: iso(row.updatedAt),
    collectionIds,
    indexStatus: row.indexStatus,
    indexedAt: row.indexedAt ? iso(row.indexedAt) : null,
  };
}

/** The collections of several articles in one query, each list in its `position` order. */
async function collectionIdsOf(db: Tx, workspaceId: string, articleIds: string[]): Promise<Map<string, string[]>> {
  const byArticle = new Map<string, string[]>(articleIds.map((id) => [id, []]));
  if (articleIds.length === 0) return byArticle;
  const links = await db
    .select({ articleId: articleCollections.articleId, collectionId: articleCollections.collectionId })
    .from(articleCollections)
    .where(and(eq(articleCollections.workspaceId, workspaceId), inArray(articleCollections.articleId, articleIds)))
    .orderBy(asc(articleCollections.articleId), asc(articleCollections.position));
  for (const link of links) byArticle.get(link.articleId)?.push(link.collectionId);
  return byArticle;
}

async function recordOf(db: Tx, row: ArticleRow): Promise<ArticleRecord> {
  const ids = await collectionIdsOf(db, row.workspaceId, [row.id]);
  return toRecord(row, ids.get(row.id) ?? []);
}

const inWorkspace = (ctx: WorkspaceContext, id: string) => and(eq(articles.workspaceId, ctx.workspaceId), eq(articles.id, id));

/** The article, locked until the transaction ends (concurrent writes to one article take turns), or a 404. */
async function lockArticle(tx: Tx, ctx: WorkspaceContext, id: string): Promise<ArticleRow> {
  const [row] = await tx.select().from(articles).where(inWorkspace(ctx, id)).for('update');
  if (!row) throw errors.notFound();
  return row;
}

/**
 * The given collection ids without duplicates (first occurrence wins), after checking that each is a collection
 * of the workspace; a 400 names every offending index as sent. The collections are key-share locked, so none can
 * be deleted before the links are written.
 */
async function checkCollections(tx: Tx, ctx: WorkspaceContext, given: string[]): Promise<string[]> {
  const ids = given.map((id) => id.toLowerCase());
  const unique = [...new Set(ids)];
  if (unique.length === 0) return [];
  const found = await tx
    .select({ id: collections.id })
    .from(collections)
    .where(and(eq(collections.workspaceId, ctx.workspaceId), inArray(collections.id, unique)))
    .for('key share');
  const known = new Set(found.map((row) => row.id));
  const details: ErrorDetail[] = [];
  ids.forEach((id, index) => {
    if (!known.has(id)) details.push({ path: `collectionIds.${index}`, message: 'No collection with this id in the workspace' });
  });
  if (details.length > 0) throw errors.validation(details);
  return unique;
}

async function setCollections(tx: Tx, ctx: WorkspaceContext, articleId: string, collectionIds: string[]): Promise<void> {
  await tx
    .delete(articleCollections)
    .where(and(eq(articleCollections.workspaceId, ctx.workspaceId), eq(articleCollections.articleId, articleId)));
  if (collectionIds.length === 0) return;
  await tx.insert(articleCollections).values(
    collectionIds.map((collectionId, position) => ({ workspaceId: ctx.workspaceId, articleId, collectionId, position })),
  );
}

const documentRef = (ctx: WorkspaceContext, id: string) => ({
  workspaceId: ctx.workspaceId,
  documentType: 'article' as const,
  documentId: id,
});

async function takenSlugs(tx: Tx, ctx: WorkspaceContext, candidates: string[]): Promise<Set<string>> {
  const rows = await tx
    .select({ slug: articles.slug })
    .from(articles)
    .where(and(eq(articles.workspaceId, ctx.workspaceId), inArray(articles.slug, candidates)));
  return new Set(rows.map((row) => row.slug));
}

/** A new draft. It is not in the search index, so its indexStatus starts as `removed`. */
export async function createArticle(ctx: WorkspaceContext, input: CreateArticleInput): Promise<ArticleRecord> {
  return ctx.db.transaction(async (tx) => {
    const collectionIds = await checkCollections(tx, ctx, input.collectionIds ?? []);
    const now = new Date();
    const row = await insertWithUniqueSlug({
      tx,
      base: slugify(input.title, FALLBACK_SLUG),
      constraint: SLUG_INDEX,
      taken: (candidates) => takenSlugs(tx, ctx, candidates),
      insert: async (savepoint, slug) => {
        const [inserted] = await savepoint
          .insert(articles)
          .values({
            id: newId(),
            workspaceId: ctx.workspaceId,
            title: input.title,
            slug,
            body: input.body ?? null,
            description: input.description ?? null,
            visibility: input.visibility,
            status: 'draft',
            createdByUserId: ctx.userId,
            indexStatus: 'removed',
            createdAt: now,
            updatedAt: now,
          })
          .returning();
        return inserted!;
      },
    });
    await setCollections(tx, ctx, row.id, collectionIds);
    return toRecord(row, collectionIds);
  });
}

function listFilter(ctx: WorkspaceContext, query: ArticleListQuery): SQL | undefined {
  const conditions: (SQL | undefined)[] = [eq(articles.workspaceId, ctx.workspaceId)];
  if (query.status) conditions.push(eq(articles.status, query.status));
  if (query.visibility) conditions.push(eq(articles.visibility, query.visibility));
  if (query.collectionId) {
    conditions.push(
      sql`exists (select 1 from ${articleCollections}
                   where ${articleCollections.workspaceId} = ${ctx.workspaceId}
                     and ${articleCollections.articleId} = ${articles.id}
                     and ${articleCollections.collectionId} = ${query.collectionId})`,
    );
  }
  const q = query.q?.trim();
  if (q) conditions.push(ilike(articles.title, `%${q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`));
  return and(...conditions);
}

/** Newest first; ties (one transaction's `now`) broken by id, so pages never overlap. */
export async function listArticles(ctx: WorkspaceContext, query: ArticleListQuery): Promise<Page<ArticleRecord>> {
  const where = listFilter(ctx, query);
  const rows = await ctx.db
    .select({ article: articles, total: sql<number>`count(*) over ()`.mapWith(Number) })
    .from(articles)
    .where(where)
    .orderBy(desc(articles.createdAt), desc(articles.id))
    .limit(query.limit)
    .offset(query.offset);
  let total = rows[0]?.total ?? 0;
  if (rows.length === 0 && query.offset > 0) {
    const [counted] = await ctx.db.select({ total: count() }).from(articles).where(where);
    total = counted?.total ?? 0;
  }
  const ids = await collectionIdsOf(
    ctx.db,
    ctx.workspaceId,
    rows.map((row) => row.article.id),
  );
  return { items: rows.map(({ article }) => toRecord(article, ids.get(article.id) ?? [])), total };
}

export async function getArticle(ctx: WorkspaceContext, id: string): Promise<ArticleRecord> {
  const [row] = await ctx.db.select().from(articles).where(inWorkspace(ctx, id));
  if (!row) throw errors.notFound();
  return recordOf(ctx.db, row);
}

export async function getArticleBySlug(ctx: WorkspaceContext, slug: string): Promise<ArticleRecord> {
  const [row] = await ctx.db
    .select()
    .from(articles)
    .where(and(eq(articles.workspaceId, ctx.workspaceId), eq(articles.slug, slug)));
  if (!row) throw errors.notFound();
  return recordOf(ctx.db, row);
}

/**
 * Edits an article. The slug changes only when given. On a published article, a change to what the index holds
 * (title, body, description, visibility) sets indexStatus `pending` and enqueues re-indexing; a change to
 * `internal` also narrows its chunks at once.
 */
export async function updateArticle(ctx: WorkspaceContext, id: string, input: UpdateArticleInput): Promise<ArticleRecord> {
  return ctx.db.transaction(async (tx) => {
    const current = await lockArticle(tx, ctx, id);
    const collectionIds = input.collectionIds ? await checkCollections(tx, ctx, input.collectionIds) : undefined;
    const changes: Partial<typeof articles.$inferInsert> = { updatedAt: new Date() };
    if (input.title !== undefined) changes.title = input.title;
    if (input.slug !== undefined) changes.slug = input.slug;
    if (input.body !== undefined) changes.body = input.body;
    if (input.description !== undefined) changes.description = input.description;
    if (input.visibility !== undefined) changes.visibility = input.visibility;
    const indexedFieldChanged =
      (changes.title !== undefined && changes.title !== current.title) ||
      (changes.body !== undefined && changes.body !== current.body) ||
      (changes.description !== undefined && changes.description !== current.description) ||
      (changes.visibility !== undefined && changes.visibility !== current.visibility);
    const reindex = current.status === 'published' && indexedFieldChanged;
    if (reindex) changes.indexStatus = 'pending';

    let row: ArticleRow;
    try {
      const [updated] = await tx.update(articles).set(changes).where(inWorkspace(ctx, id)).returning();
      row = updated!;
    } catch (error) {
      if (isUniqueViolation(error, SLUG_INDEX)) throw errors.conflict('Another article of the workspace has this slug');
      throw error;
    }
    if (collectionIds) await setCollections(tx, ctx, id, collectionIds);
    if (changes.visibility === 'internal' && current.visibility !== 'internal') {
      await setChunkVisibility(tx, ctx.workspaceId, 'article', [id], 'internal');
    }
    if (reindex) await ctx.jobs.send(tx, indexDocument, documentRef(ctx, id));
    return recordOf(tx, row);
  });
}

/**
 * draft → published: publishedAt now, indexing enqueued. published → draft: publishedAt cleared, its chunks
 * removed at once and their removal enqueued (the job then records `removed`). The same status again changes
 * nothing and enqueues nothing.
 */
export async function changeArticleStatus(
  ctx: WorkspaceContext,
  id: string,
  status: ArticleRow['status'],
): Promise<ArticleRecord> {
  return ctx.db.transaction(async (tx) => {
    const current = await lockArticle(tx, ctx, id);
    if (current.status === status) return recordOf(tx, current);
    const now = new Date();
    const [row] = await tx
      .update(articles)
      .set({
        status,
        publishedAt: status === 'published' ? now : null,
        indexStatus: 'pending',
        indexError: null,
        updatedAt: now,
      })
      .where(inWorkspace(ctx, id))
      .returning();
    if (status === 'published') {
      await ctx.jobs.send(tx, indexDocument, documentRef(ctx, id));
    } else {
      await removeChunks(tx, ctx.workspaceId, 'article', [id]);
      await ctx.jobs.send(tx, unindexDocument, documentRef(ctx, id));
    }
    return recordOf(tx, row!);
  });
}

/** Deletes the article and its collection links; its chunks go at once, and the index job confirms it. */
export async function deleteArticle(ctx: WorkspaceContext, id: string): Promise<void> {
  await ctx.db.transaction(async (tx) => {
    const deleted = await tx.delete(articles).where(inWorkspace(ctx, id)).returning({ id: articles.id });
    if (deleted.length === 0) throw errors.notFound();
    await removeChunks(tx, ctx.workspaceId, 'article', [id]);
    await ctx.jobs.send(tx, unindexDocument, documentRef(ctx, id));
  });
}
