// Collections group articles; an article may be in several. Deleting a collection keeps its articles.
import { and, asc, count, eq, inArray, sql } from 'drizzle-orm';
import type { Tx } from '../../../db/client.js';
import { articleCollections, collections } from '../../../db/schema/index.js';
import { iso } from '../../../http/api.js';
import { errors } from '../../../http/errors.js';
import type { WorkspaceContext } from '../../../http/guard.js';
import type { Page, PageQuery } from '../../../http/pagination.js';
import { newId } from '../../../ids.js';
import { isUniqueViolation } from '../../../db/errors.js';
import { insertWithUniqueSlug, slugify } from '../slug.js';
import type { CollectionRecord, CreateCollectionInput, UpdateCollectionInput } from './schemas.js';

const SLUG_INDEX = 'content_collections_workspace_slug_idx';
const FALLBACK_SLUG = 'collection';
const slugTaken = () => errors.conflict('Another collection of the workspace has this slug');

type CollectionRow = typeof collections.$inferSelect;

/** The number of linked articles, computed in the query that reads the collection (one query per page). */
const articleCount = sql<number>`(select count(*) from ${articleCollections}
   where ${articleCollections.workspaceId} = ${collections.workspaceId}
     and ${articleCollections.collectionId} = ${collections.id})`.mapWith(Number);

function toRecord(row: CollectionRow, articleCount: number): CollectionRecord {
  return {
    id: row.id,
    workspaceId: row.workspaceId,
    name: row.name,
    slug: row.slug,
    description: row.description,
    articleCount,
    createdAt: iso(row.createdAt),
    updatedAt: iso(row.updatedAt),
  };
}

const inWorkspace = (ctx: WorkspaceContext, id: string) =>
  and(eq(collections.workspaceId, ctx.workspaceId), eq(collections.id, id));

async function readCollection(db: Tx, ctx: WorkspaceContext, id: string): Promise<CollectionRecord> {
  const [row] = await db.select({ collection: collections, articleCount }).from(collections).where(inWorkspace(ctx, id));
  if (!row) throw errors.notFound();
  return toRecord(row.collection, row.articleCount);
}

/** By name (then id), each with its article count. */
export async function listCollections(ctx: WorkspaceContext, page: PageQuery): Promise<Page<CollectionRecord>> {
  const where = eq(collections.workspaceId, ctx.workspaceId);
  const rows = await ctx.db
    .select({ collection: collections, articleCount, total: sql<number>`count(*) over ()`.mapWith(Number) })
    .from(collections)
    .where(where)
    .orderBy(asc(collections.name), asc(collections.id))
    .limit(page.limit)
    .offset(page.offset);
  let total = rows[0]?.total ?? 0;
  if (rows.length === 0 && page.offset > 0) {
    const [counted] = await ctx.db.select({ total: count() }).from(collections).where(where);
    total = counted?.total ?? 0;
  }
  return { items: rows.map((row) => toRecord(row.collection, row.articleCount)), total };
}

export async function getCollection(ctx: WorkspaceContext, id: string): Promise<CollectionRecord> {
  return readCollection(ctx.db, ctx, id);
}

/** A given slug must be free (409); without one it is made from the name, with a suffix if taken. */
export async function createCollection(ctx: WorkspaceContext, input: CreateCollectionInput): Promise<CollectionRecord> {
  const now = new Date();
  const insert = async (tx: Tx, slug: string) => {
    const [row] = await tx
      .insert(collections)
      .values({
        id: newId(),
        workspaceId: ctx.workspaceId,
        name: input.name,
        slug,
        description: input.description ?? null,
        createdAt: now,
        updatedAt: now,
      })
      .returning();
    return toRecord(row!, 0);
  };
  if (input.slug !== undefined) {
    try {
      return await insert(ctx.db, input.slug);
    } catch (error) {
      if (isUniqueViolation(error, SLUG_INDEX)) throw slugTaken();
      throw error;
    }
  }
  const base = slugify(input.name, FALLBACK_SLUG);
  return ctx.db.transaction((tx) =>
    insertWithUniqueSlug({
      tx,
      base,
      constraint: SLUG_INDEX,
      taken: async (candidates) => {
        const rows = await tx
          .select({ slug: collections.slug })
          .from(collections)
          .where(and(eq(collections.workspaceId, ctx.workspaceId), inArray(collections.slug, candidates)));
        return new Set(rows.map((row) => row.slug));
      },
      insert,
    }),
  );
}

export async function updateCollection(
  ctx: WorkspaceContext,
  id: string,
  input: UpdateCollectionInput,
): Promise<CollectionRecord> {
  const changes: Partial<typeof collections.$inferInsert> = { updatedAt: new Date() };
  if (input.name !== undefined) changes.name = input.name;
  if (input.description !== undefined) changes.description = input.description;
  if (input.slug !== undefined) changes.slug = input.slug;
  return ctx.db.transaction(async (tx) => {
    let updated: { id: string }[];
    try {
      updated = await tx.update(collections).set(changes).where(inWorkspace(ctx, id)).returning({ id: collections.id });
    } catch (error) {
      if (isUniqueViolation(error, SLUG_INDEX)) throw slugTaken();
      throw error;
    }
    if (updated.length === 0) throw errors.notFound();
    return readCollection(tx, ctx, id);
  });
}

/** Deletes the collection; its articles stay, only their links to it go (the foreign key cascades). */
export async function deleteCollection(ctx: WorkspaceContext, id: string): Promise<void> {
  const deleted = await ctx.db.delete(collections).where(inWorkspace(ctx, id)).returning({ id: collections.id });
  if (deleted.length === 0) throw errors.notFound();
}
