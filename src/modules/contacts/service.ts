// Contacts of a workspace: create, list (search, tag and group filters), read, edit, delete. Every insert and
// delete goes through store.ts so the exact total in contact_counts moves with it.
import { and, asc, count, desc, eq, exists, inArray, ne, type SQL, sql } from 'drizzle-orm';
import type { Tx } from '../../db/client.js';
import { contactTags, contacts, groupContacts, groups, tags } from '../../db/schema/index.js';
import { iso } from '../../http/api.js';
import { type ErrorDetail, errors } from '../../http/errors.js';
import type { WorkspaceContext } from '../../http/guard.js';
import type { Page } from '../../http/pagination.js';
import { newId } from '../../ids.js';
import { isUniqueViolation } from '../../db/errors.js';
import { INVALID_PHONE, normalizePhone } from './fields.js';
import type { ContactListQuery, ContactRecord, CreateContactInput, UpdateContactInput } from './schemas.js';
import { MAX_ATTRIBUTES } from './schemas.js';
import { type ContactRow, contactTotal, deleteContacts, insertContacts } from './store.js';

export const PHONE_INDEX = 'contacts_workspace_phone_idx';

type Attributes = Record<string, string | number | boolean | null>;

function toRecord(row: ContactRow, tagIds: string[], groupIds: string[]): ContactRecord {
  return {
    id: row.id,
    name: row.name,
    phone: row.phone,
    email: row.email,
    attributes: (row.attributes ?? {}) as Attributes,
    tagIds,
    groupIds,
    lastInboundAt: row.lastInboundAt ? iso(row.lastInboundAt) : null,
    createdAt: iso(row.createdAt),
    updatedAt: iso(row.updatedAt),
  };
}

/** Records for a page of rows: their tags and groups in one query each. */
export async function contactRecords(db: Tx, workspaceId: string, rows: ContactRow[]): Promise<ContactRecord[]> {
  if (rows.length === 0) return [];
  const ids = rows.map((row) => row.id);
  // Two independent reads: in parallel on a pool (a transaction or PGlite runs them one after the other).
  const [tagRows, groupRows] = await Promise.all([
    db
      .select({ contactId: contactTags.contactId, id: contactTags.tagId })
      .from(contactTags)
      .where(and(eq(contactTags.workspaceId, workspaceId), inArray(contactTags.contactId, ids)))
      .orderBy(asc(contactTags.createdAt), asc(contactTags.tagId)),
    db
      .select({ contactId: groupContacts.contactId, id: groupContacts.groupId })
      .from(groupContacts)
      .where(and(eq(groupContacts.workspaceId, workspaceId), inArray(groupContacts.contactId, ids)))
      .orderBy(asc(groupContacts.createdAt), asc(groupContacts.groupId)),
  ]);
  const byContact = (links: { contactId: string; id: string }[]) => {
    const map = new Map<string, string[]>();
    for (const link of links) {
      const list = map.get(link.contactId);
      if (list) list.push(link.id);
      else map.set(link.contactId, [link.id]);
    }
    return map;
  };
  const tagMap = byContact(tagRows);
  const groupMap = byContact(groupRows);
  return rows.map((row) => toRecord(row, tagMap.get(row.id) ?? [], groupMap.get(row.id) ?? []));
}

const inWorkspace = (workspaceId: string, id: string) => and(eq(contacts.workspaceId, workspaceId), eq(contacts.id, id));

export async function readContact(db: Tx, workspaceId: string, id: string): Promise<ContactRecord> {
  const [row] = await db.select().from(contacts).where(inWorkspace(workspaceId, id));
  if (!row) throw errors.notFound();
  const [record] = await contactRecords(db, workspaceId, [row]);
  return record!;
}

/** The expression of the trigram index contacts_search_trgm_idx: a `like` on it is answered from the index. */
const searchText = sql`lower(${contacts.name} || ' ' || coalesce(${contacts.phone}, '') || ' ' || coalesce(${contacts.email}, ''))`;

export function likePattern(q: string): string {
  return `%${q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/** The contacts of a page, newest first; each filter narrows, and the total counts what they match. */
export async function listContacts(ctx: WorkspaceContext, query: ContactListQuery): Promise<Page<ContactRecord>> {
  const conditions: SQL[] = [eq(contacts.workspaceId, ctx.workspaceId)];
  if (query.q !== undefined) conditions.push(sql`${searchText} like lower(${likePattern(query.q)})`);
  if (query.tagId !== undefined) {
    conditions.push(
      exists(
        ctx.db
          .select({ one: sql`1` })
          .from(contactTags)
          .where(
            and(
              eq(contactTags.workspaceId, ctx.workspaceId),
              eq(contactTags.tagId, query.tagId),
              eq(contactTags.contactId, contacts.id),
            ),
          ),
      ),
    );
  }
  if (query.groupId !== undefined) {
    conditions.push(
      exists(
        ctx.db
          .select({ one: sql`1` })
          .from(groupContacts)
          .where(
            and(
              eq(groupContacts.workspaceId, ctx.workspaceId),
              eq(groupContacts.groupId, query.groupId),
              eq(groupContacts.contactId, contacts.id),
            ),
          ),
      ),
    );
  }
  const where = and(...conditions);
  const filtered = conditions.length > 1;
  const [rows, storedTotal] = await Promise.all([
    ctx.db
      .select()
      .from(contacts)
      .where(where)
      .orderBy(desc(contacts.createdAt), desc(contacts.id))
      .limit(query.limit)
      .offset(query.offset),
    // Unfiltered: the exact total kept by store.ts, one primary-key read instead of counting a million rows.
    filtered ? undefined : contactTotal(ctx.db, ctx.workspaceId),
  ]);
  let total: number;
  if (storedTotal !== undefined) {
    total = storedTotal;
  } else if (query.offset === 0 && rows.length < query.limit) {
    total = rows.length;
  } else {
    const [counted] = await ctx.db.select({ total: count() }).from(contacts).where(where);
    total = counted?.total ?? 0;
  }
  return { items: await contactRecords(ctx.db, ctx.workspaceId, rows), total };
}

export async function getContact(ctx: WorkspaceContext, id: string): Promise<ContactRecord> {
  return readContact(ctx.db, ctx.workspaceId, id);
}

/** Ids of a workspace's rows among `given`; a 400 names every index (as sent) that is not one. */
async function checkIds(
  field: string,
  given: string[],
  lookup: (unique: string[]) => Promise<{ id: string }[]>,
  what: string,
): Promise<string[]> {
  const ids = given.map((id) => id.toLowerCase());
  const unique = [...new Set(ids)];
  if (unique.length === 0) return [];
  const known = new Set((await lookup(unique)).map((row) => row.id));
  const details: ErrorDetail[] = [];
  ids.forEach((id, index) => {
    if (!known.has(id)) details.push({ path: `${field}.${index}`, message: `No ${what} with this id in the workspace` });
  });
  if (details.length > 0) throw errors.validation(details);
  return unique;
}

/** Tags of the workspace (key-share locked so none is deleted before the links are written). */
export function checkTags(tx: Tx, workspaceId: string, given: string[], field = 'tagIds'): Promise<string[]> {
  return checkIds(
    field,
    given,
    (unique) =>
      tx
        .select({ id: tags.id })
        .from(tags)
        .where(and(eq(tags.workspaceId, workspaceId), inArray(tags.id, unique)))
        .for('key share'),
    'tag',
  );
}

export function checkGroups(tx: Tx, workspaceId: string, given: string[], field = 'groupIds'): Promise<string[]> {
  return checkIds(
    field,
    given,
    (unique) =>
      tx
        .select({ id: groups.id })
        .from(groups)
        .where(and(eq(groups.workspaceId, workspaceId), inArray(groups.id, unique)))
        .for('key share'),
    'group',
  );
}

export function checkContacts(tx: Tx, workspaceId: string, given: string[], field = 'contactIds'): Promise<string[]> {
  return checkIds(
    field,
    given,
    (unique) =>
      tx
        .select({ id: contacts.id })
        .from(contacts)
        .where(and(eq(contacts.workspaceId, workspaceId), inArray(contacts.id, unique)))
        .for('key share'),
    'contact',
  );
}

async function setTags(tx: Tx, workspaceId: string, contactId: string, tagIds: string[]): Promise<void> {
  await tx.delete(contactTags).where(and(eq(contactTags.workspaceId, workspaceId), eq(contactTags.contactId, contactId)));
  if (tagIds.length > 0) await tx.insert(contactTags).values(tagIds.map((tagId) => ({ workspaceId, contactId, tagId })));
}

async function setGroups(tx: Tx, workspaceId: string, contactId: string, groupIds: string[]): Promise<void> {
  await tx
    .delete(groupContacts)
    .where(and(eq(groupContacts.workspaceId, workspaceId), eq(groupContacts.contactId, contactId)));
  if (groupIds.length > 0) {
    await tx.insert(groupContacts).values(groupIds.map((groupId) => ({ workspaceId, groupId, contactId })));
  }
}

function phoneOrThrow(input: string | null | undefined): string | null | undefined {
  if (input === undefined || input === null) return input;
  const phone = normalizePhone(input);
  if (phone === undefined) throw errors.validation([{ path: 'phone', message: INVALID_PHONE }]);
  return phone;
}

/** The id of the workspace's contact with this phone (other than `exceptId`), if any. */
export async function contactIdByPhone(db: Tx, workspaceId: string, phone: string, exceptId?: string) {
  const [row] = await db
    .select({ id: contacts.id })
    .from(contacts)
    .where(
      and(eq(contacts.workspaceId, workspaceId), eq(contacts.phone, phone), exceptId ? ne(contacts.id, exceptId) : undefined),
    );
  return row?.id;
}

const duplicatePhone = (existingId: string) =>
  errors.conflict('Another contact of the workspace has this phone number', { existingId });

/** Turns a unique violation on the phone (a concurrent write won the race) into the documented 409. */
async function onPhoneRace<T>(ctx: WorkspaceContext, phone: string | null | undefined, exceptId: string | undefined, write: () => Promise<T>) {
  try {
    return await write();
  } catch (error) {
    if (phone && isUniqueViolation(error, PHONE_INDEX)) {
      const existingId = await contactIdByPhone(ctx.db, ctx.workspaceId, phone, exceptId);
      if (existingId) throw duplicatePhone(existingId);
    }
    throw error;
  }
}

export async function createContact(ctx: WorkspaceContext, input: CreateContactInput): Promise<ContactRecord> {
  const phone = phoneOrThrow(input.phone) ?? null;
  const email = input.email ? input.email.toLowerCase() : null;
  return onPhoneRace(ctx, phone, undefined, () =>
    ctx.db.transaction(async (tx) => {
      const tagIds = await checkTags(tx, ctx.workspaceId, input.tagIds ?? []);
      const groupIds = await checkGroups(tx, ctx.workspaceId, input.groupIds ?? []);
      if (phone) {
        const existingId = await contactIdByPhone(tx, ctx.workspaceId, phone);
        if (existingId) throw duplicatePhone(existingId);
      }
      const now = new Date();
      const [row] = await insertContacts(tx, ctx.workspaceId, [
        { id: newId(), workspaceId: ctx.workspaceId, name: input.name, phone, email, attributes: input.attributes ?? {}, createdAt: now, updatedAt: now },
      ]);
      await setTags(tx, ctx.workspaceId, row!.id, tagIds);
      await setGroups(tx, ctx.workspaceId, row!.id, groupIds);
      return toRecord(row!, tagIds, groupIds);
    }),
  );
}

/** `null` deletes a key, any other value sets it; keys not given stay. */
export function mergeAttributes(stored: Record<string, unknown>, changes: Record<string, unknown>): Record<string, unknown> {
  const merged: Record<string, unknown> = { ...stored };
  for (const [key, value] of Object.entries(changes)) {
    if (value === null) delete merged[key];
    else merged[key] = value;
  }
  return merged;
}

export async function updateContact(ctx: WorkspaceContext, id: string, input: UpdateContactInput): Promise<ContactRecord> {
  const phone = phoneOrThrow(input.phone);
  return onPhoneRace(ctx, phone, id, () =>
    ctx.db.transaction(async (tx) => {
      const [row] = await tx.select().from(contacts).where(inWorkspace(ctx.workspaceId, id)).for('update');
      if (!row) throw errors.notFound();
      const tagIds = input.tagIds === undefined ? undefined : await checkTags(tx, ctx.workspaceId, input.tagIds);
      const groupIds = input.groupIds === undefined ? undefined : await checkGroups(tx, ctx.workspaceId, input.groupIds);
      const changes: Partial<typeof contacts.$inferInsert> = { updatedAt: new Date() };
      if (input.name !== undefined) changes.name = input.name;
      if (phone !== undefined) {
        if (phone !== null) {
          const existingId = await contactIdByPhone(tx, ctx.workspaceId, phone, id);
          if (existingId) throw duplicatePhone(existingId);
        }
        changes.phone = phone;
      }
      if (input.email !== undefined) changes.email = input.email === null ? null : input.email.toLowerCase();
      if (input.attributes !== undefined) {
        const merged = mergeAttributes(row.attributes ?? {}, input.attributes);
        if (Object.keys(merged).length > MAX_ATTRIBUTES) {
          throw errors.validation([{ path: 'attributes', message: `At most ${MAX_ATTRIBUTES} attributes after the merge` }]);
        }
        changes.attributes = merged;
      }
      await tx.update(contacts).set(changes).where(inWorkspace(ctx.workspaceId, id));
      if (tagIds !== undefined) await setTags(tx, ctx.workspaceId, id, tagIds);
      if (groupIds !== undefined) await setGroups(tx, ctx.workspaceId, id, groupIds);
      return readContact(tx, ctx.workspaceId, id);
    }),
  );
}

export async function deleteContact(ctx: WorkspaceContext, id: string): Promise<void> {
  const deleted = await ctx.db.transaction((tx) => deleteContacts(tx, ctx.workspaceId, [id]));
  if (deleted === 0) throw errors.notFound();
}

async function lockContact(tx: Tx, workspaceId: string, id: string): Promise<void> {
  const [row] = await tx.select({ id: contacts.id }).from(contacts).where(inWorkspace(workspaceId, id)).for('key share');
  if (!row) throw errors.notFound();
}

/** Adds tags to a contact; ones it has are ignored. */
export async function addContactTags(ctx: WorkspaceContext, id: string, tagIds: string[]): Promise<ContactRecord> {
  return ctx.db.transaction(async (tx) => {
    await lockContact(tx, ctx.workspaceId, id);
    const unique = await checkTags(tx, ctx.workspaceId, tagIds);
    await tx
      .insert(contactTags)
      .values(unique.map((tagId) => ({ workspaceId: ctx.workspaceId, contactId: id, tagId })))
      .onConflictDoNothing();
    return readContact(tx, ctx.workspaceId, id);
  });
}

/** Removes a tag from a contact: 404 if either is not the workspace's; a tag the contact does not have is fine. */
export async function removeContactTag(ctx: WorkspaceContext, id: string, tagId: string): Promise<void> {
  await ctx.db.transaction(async (tx) => {
    await lockContact(tx, ctx.workspaceId, id);
    const [tag] = await tx.select({ id: tags.id }).from(tags).where(and(eq(tags.workspaceId, ctx.workspaceId), eq(tags.id, tagId)));
    if (!tag) throw errors.notFound();
    await tx
      .delete(contactTags)
      .where(and(eq(contactTags.workspaceId, ctx.workspaceId), eq(contactTags.contactId, id), eq(contactTags.tagId, tagId)));
  });
}
