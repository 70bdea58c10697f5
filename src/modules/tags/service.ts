// Tags label contacts; a contact may have several. Deleting a tag removes it from its contacts.
import { and, asc, eq, sql } from 'drizzle-orm';
import type { Tx } from '../../db/client.js';
import { contactTags, tags } from '../../db/schema/index.js';
import { iso } from '../../http/api.js';
import { errors } from '../../http/errors.js';
import type { WorkspaceContext } from '../../http/guard.js';
import { newId } from '../../ids.js';
import { isUniqueViolation } from '../../db/errors.js';
import type { CreateTagInput, TagRecord, UpdateTagInput } from './schemas.js';

const NAME_INDEX = 'tags_workspace_name_idx';
const nameTaken = () => errors.conflict('Another tag of the workspace has this name');

type TagRow = typeof tags.$inferSelect;

const contactCount = sql<number>`(select count(*) from ${contactTags}
   where ${contactTags.workspaceId} = ${tags.workspaceId} and ${contactTags.tagId} = ${tags.id})`.mapWith(Number);

function toRecord(row: TagRow, contactCount: number): TagRecord {
  return {
    id: row.id,
    name: row.name,
    color: row.color,
    contactCount,
    createdAt: iso(row.createdAt),
    updatedAt: iso(row.updatedAt),
  };
}

const inWorkspace = (ctx: WorkspaceContext, id: string) => and(eq(tags.workspaceId, ctx.workspaceId), eq(tags.id, id));

async function readTag(db: Tx, ctx: WorkspaceContext, id: string): Promise<TagRecord> {
  const [row] = await db.select({ tag: tags, contactCount }).from(tags).where(inWorkspace(ctx, id));
  if (!row) throw errors.notFound();
  return toRecord(row.tag, row.contactCount);
}

async function nameInUse(db: Tx, ctx: WorkspaceContext, name: string, exceptId?: string): Promise<boolean> {
  const rows = await db
    .select({ id: tags.id })
    .from(tags)
    .where(and(eq(tags.workspaceId, ctx.workspaceId), sql`lower(${tags.name}) = lower(${name})`));
  return rows.some((row) => row.id !== exceptId);
}

/** Every tag, by name (case-insensitively), each with its number of contacts. */
export async function listTags(ctx: WorkspaceContext): Promise<{ items: TagRecord[]; total: number }> {
  const rows = await ctx.db
    .select({ tag: tags, contactCount })
    .from(tags)
    .where(eq(tags.workspaceId, ctx.workspaceId))
    .orderBy(sql`lower(${tags.name})`, asc(tags.id));
  return { items: rows.map((row) => toRecord(row.tag, row.contactCount)), total: rows.length };
}

export async function getTag(ctx: WorkspaceContext, id: string): Promise<TagRecord> {
  return readTag(ctx.db, ctx, id);
}

export async function createTag(ctx: WorkspaceContext, input: CreateTagInput): Promise<TagRecord> {
  if (await nameInUse(ctx.db, ctx, input.name)) throw nameTaken();
  const now = new Date();
  try {
    const [row] = await ctx.db
      .insert(tags)
      .values({
        id: newId(),
        workspaceId: ctx.workspaceId,
        name: input.name,
        color: input.color?.toLowerCase() ?? null,
        createdAt: now,
        updatedAt: now,
      })
      .returning();
    return toRecord(row!, 0);
  } catch (error) {
    if (isUniqueViolation(error, NAME_INDEX)) throw nameTaken();
    throw error;
  }
}

export async function updateTag(ctx: WorkspaceContext, id: string, input: UpdateTagInput): Promise<TagRecord> {
  const changes: Partial<typeof tags.$inferInsert> = { updatedAt: new Date() };
  if (input.name !== undefined) changes.name = input.name;
  if (input.color !== undefined) changes.color = input.color === null ? null : input.color.toLowerCase();
  try {
    return await ctx.db.transaction(async (tx) => {
      if (input.name !== undefined && (await nameInUse(tx, ctx, input.name, id))) {
        // Still a 404 for an id that is not the workspace's.
        await readTag(tx, ctx, id);
        throw nameTaken();
      }
      const updated = await tx.update(tags).set(changes).where(inWorkspace(ctx, id)).returning({ id: tags.id });
      if (updated.length === 0) throw errors.notFound();
      return readTag(tx, ctx, id);
    });
  } catch (error) {
    if (isUniqueViolation(error, NAME_INDEX)) throw nameTaken();
    throw error;
  }
}

/** Deletes the tag; its links to contacts go with it (the foreign key cascades). */
export async function deleteTag(ctx: WorkspaceContext, id: string): Promise<void> {
  const deleted = await ctx.db.delete(tags).where(inWorkspace(ctx, id)).returning({ id: tags.id });
  if (deleted.length === 0) throw errors.notFound();
}
