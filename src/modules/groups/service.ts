// Groups: static lists of contacts (for broadcasts and filtering). Deleting a group keeps its contacts.
import { and, asc, count, desc, eq, inArray, sql } from 'drizzle-orm';
import type { Tx } from '../../db/client.js';
import { contacts, groupContacts, groups } from '../../db/schema/index.js';
import { iso } from '../../http/api.js';
import { errors } from '../../http/errors.js';
import type { WorkspaceContext } from '../../http/guard.js';
import type { Page, PageQuery } from '../../http/pagination.js';
import { newId } from '../../ids.js';
import { isUniqueViolation } from '../../db/errors.js';
import type { ContactRecord } from '../contacts/schemas.js';
import { checkContacts, contactRecords } from '../contacts/service.js';
import type { CreateGroupInput, GroupRecord, UpdateGroupInput } from './schemas.js';

const NAME_INDEX = 'contact_groups_workspace_name_idx';
const nameTaken = () => errors.conflict('Another group of the workspace has this name');

type GroupRow = typeof groups.$inferSelect;

const contactCount = sql<number>`(select count(*) from ${groupContacts}
   where ${groupContacts.workspaceId} = ${groups.workspaceId} and ${groupContacts.groupId} = ${groups.id})`.mapWith(Number);

function toRecord(row: GroupRow, contactCount: number): GroupRecord {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    contactCount,
    createdAt: iso(row.createdAt),
    updatedAt: iso(row.updatedAt),
  };
}

const inWorkspace = (ctx: WorkspaceContext, id: string) => and(eq(groups.workspaceId, ctx.workspaceId), eq(groups.id, id));

async function readGroup(db: Tx, ctx: WorkspaceContext, id: string): Promise<GroupRecord> {
  const [row] = await db.select({ group: groups, contactCount }).from(groups).where(inWorkspace(ctx, id));
  if (!row) throw errors.notFound();
  return toRecord(row.group, row.contactCount);
}

/** 404 unless the group is the workspace's; key-share locked so it cannot be deleted under the caller. */
async function lockGroup(tx: Tx, ctx: WorkspaceContext, id: string): Promise<void> {
  const [row] = await tx.select({ id: groups.id }).from(groups).where(inWorkspace(ctx, id)).for('key share');
  if (!row) throw errors.notFound();
}

async function memberCount(db: Tx, ctx: WorkspaceContext, id: string): Promise<number> {
  const [row] = await db
    .select({ total: count() })
    .from(groupContacts)
    .where(and(eq(groupContacts.workspaceId, ctx.workspaceId), eq(groupContacts.groupId, id)));
  return row?.total ?? 0;
}

async function nameInUse(db: Tx, ctx: WorkspaceContext, name: string, exceptId?: string): Promise<boolean> {
  const rows = await db
    .select({ id: groups.id })
    .from(groups)
    .where(and(eq(groups.workspaceId, ctx.workspaceId), sql`lower(${groups.name}) = lower(${name})`));
  return rows.some((row) => row.id !== exceptId);
}

/** By name (case-insensitively, then id), each with its number of contacts. */
export async function listGroups(ctx: WorkspaceContext, page: PageQuery): Promise<Page<GroupRecord>> {
  const where = eq(groups.workspaceId, ctx.workspaceId);
  const rows = await ctx.db
    .select({ group: groups, contactCount, total: sql<number>`count(*) over ()`.mapWith(Number) })
    .from(groups)
    .where(where)
    .orderBy(sql`lower(${groups.name})`, asc(groups.id))
    .limit(page.limit)
    .offset(page.offset);
  let total = rows[0]?.total ?? 0;
  if (rows.length === 0 && page.offset > 0) {
    const [counted] = await ctx.db.select({ total: count() }).from(groups).where(where);
    total = counted?.total ?? 0;
  }
  return { items: rows.map((row) => toRecord(row.group, row.contactCount)), total };
}

export async function getGroup(ctx: WorkspaceContext, id: string): Promise<GroupRecord> {
  return readGroup(ctx.db, ctx, id);
}

export async function createGroup(ctx: WorkspaceContext, input: CreateGroupInput): Promise<GroupRecord> {
  if (await nameInUse(ctx.db, ctx, input.name)) throw nameTaken();
  const now = new Date();
  try {
    const [row] = await ctx.db
      .insert(groups)
      .values({
        id: newId(),
        workspaceId: ctx.workspaceId,
        name: input.name,
        description: input.description ?? null,
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

export async function updateGroup(ctx: WorkspaceContext, id: string, input: UpdateGroupInput): Promise<GroupRecord> {
  const changes: Partial<typeof groups.$inferInsert> = { updatedAt: new Date() };
  if (input.name !== undefined) changes.name = input.name;
  if (input.description !== undefined) changes.description = input.description;
  try {
    return await ctx.db.transaction(async (tx) => {
      if (input.name !== undefined && (await nameInUse(tx, ctx, input.name, id))) {
        await readGroup(tx, ctx, id);
        throw nameTaken();
      }
      const updated = await tx.update(groups).set(changes).where(inWorkspace(ctx, id)).returning({ id: groups.id });
      if (updated.length === 0) throw errors.notFound();
      return readGroup(tx, ctx, id);
    });
  } catch (error) {
    if (isUniqueViolation(error, NAME_INDEX)) throw nameTaken();
    throw error;
  }
}

/** Deletes the group; its contacts stay, only their memberships go (the foreign key cascades). */
export async function deleteGroup(ctx: WorkspaceContext, id: string): Promise<void> {
  const deleted = await ctx.db.delete(groups).where(inWorkspace(ctx, id)).returning({ id: groups.id });
  if (deleted.length === 0) throw errors.notFound();
}

/** Members, newest contact first (as GET /api/contacts orders), as full contact records. */
export async function listGroupContacts(ctx: WorkspaceContext, id: string, page: PageQuery): Promise<Page<ContactRecord>> {
  await readGroup(ctx.db, ctx, id);
  const member = and(
    eq(groupContacts.workspaceId, ctx.workspaceId),
    eq(groupContacts.groupId, id),
    eq(groupContacts.contactId, contacts.id),
  );
  const rows = await ctx.db
    .select({ contact: contacts })
    .from(contacts)
    .innerJoin(groupContacts, member)
    .where(eq(contacts.workspaceId, ctx.workspaceId))
    .orderBy(desc(contacts.createdAt), desc(contacts.id))
    .limit(page.limit)
    .offset(page.offset);
  const total =
    page.offset === 0 && rows.length < page.limit ? rows.length : await memberCount(ctx.db, ctx, id);
  return { items: await contactRecords(ctx.db, ctx.workspaceId, rows.map((row) => row.contact)), total };
}

export async function addGroupContacts(ctx: WorkspaceContext, id: string, contactIds: string[]) {
  return ctx.db.transaction(async (tx) => {
    await lockGroup(tx, ctx, id);
    const unique = await checkContacts(tx, ctx.workspaceId, contactIds);
    const added = await tx
      .insert(groupContacts)
      .values(unique.map((contactId) => ({ workspaceId: ctx.workspaceId, groupId: id, contactId })))
      .onConflictDoNothing()
      .returning({ contactId: groupContacts.contactId });
    await tx.update(groups).set({ updatedAt: new Date() }).where(inWorkspace(ctx, id));
    return { added: added.length, total: await memberCount(tx, ctx, id) };
  });
}

export async function removeGroupContacts(ctx: WorkspaceContext, id: string, contactIds: string[]) {
  return ctx.db.transaction(async (tx) => {
    await lockGroup(tx, ctx, id);
    const unique = await checkContacts(tx, ctx.workspaceId, contactIds);
    const removed = await tx
      .delete(groupContacts)
      .where(
        and(
          eq(groupContacts.workspaceId, ctx.workspaceId),
          eq(groupContacts.groupId, id),
          inArray(groupContacts.contactId, unique),
        ),
      )
      .returning({ contactId: groupContacts.contactId });
    await tx.update(groups).set({ updatedAt: new Date() }).where(inWorkspace(ctx, id));
    return { removed: removed.length, total: await memberCount(tx, ctx, id) };
  });
}
