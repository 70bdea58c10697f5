// Content sources of the current workspace (websites, uploaded files, typed questions and answers) and their items.
// Every write that changes what may be found sends its index job in its own transaction; anything that narrows
// what may be found (a deleted item, a source made internal) also changes the index at once.
import { and, asc, count, desc, eq, inArray, isNull, sql } from 'drizzle-orm';
import type { Tx } from '../../../db/client.js';
import { type SourceType, sourceItems, sources } from '../../../db/schema/index.js';
import { iso } from '../../../http/api.js';
import { AppError, errors } from '../../../http/errors.js';
import type { WorkspaceContext } from '../../../http/guard.js';
import type { Page, PageQuery } from '../../../http/pagination.js';
import { newId } from '../../../ids.js';
import { extractFile, UnreadableFileError, UnsupportedFileError } from '../extract/files.js';
import { removeChunks, setChunkVisibility } from '../index/indexer.js';
import { indexDocument, unindexDocument } from '../jobs.js';
import { syncSourceJob } from './jobs.js';
import {
  CONTENT_PREVIEW_LENGTH,
  type ContentSourceItemRecord,
  type ContentSourceRecord,
  type CreateSourceBody,
  configSchemas,
  fileItemBody,
  issueDetails,
  manualItemBody,
  type UpdateManualItemBody,
  type UpdateSourceBody,
} from './schemas.js';
import { contentHash, itemDocument } from './sync.js';

/** A sync still `queued` or `syncing` after this long is taken as lost (a crashed worker) and may be queued again. */
const STALE_SYNC_MINUTES = 30;
const MAX_TITLE_LENGTH = 500;

// ---------------------------------------------------------------------------------------------------------------
// Sources

// Spelled out: in a one-table select Drizzle leaves column names unqualified, which would bind them to the subquery.
const itemCount = sql<number>`(select count(*) from content_source_items i where i.workspace_id = content_sources.workspace_id and i.source_id = content_sources.id and i.deleted_at is null)`.mapWith(Number);

type SourceRow = typeof sources.$inferSelect & { itemCount: number };

function sourceRecord(row: SourceRow): ContentSourceRecord {
  return {
    id: row.id,
    workspaceId: row.workspaceId,
    type: row.type,
    name: row.name,
    visibility: row.visibility,
    config: row.config,
    syncStatus: row.syncStatus,
    lastSyncedAt: row.lastSyncedAt ? iso(row.lastSyncedAt) : null,
    lastError: row.lastError,
    itemCount: row.itemCount,
    createdAt: iso(row.createdAt),
    updatedAt: iso(row.updatedAt),
  };
}

const ownSource = (workspaceId: string, id: string) => and(eq(sources.workspaceId, workspaceId), eq(sources.id, id));

/** The source with its live item count, in one query; 404 when it is not in the workspace. */
async function loadSource(db: Tx, workspaceId: string, id: string): Promise<ContentSourceRecord> {
  const [row] = await db.select({ ...sourceColumns(), itemCount }).from(sources).where(ownSource(workspaceId, id));
  if (!row) throw errors.notFound();
  return sourceRecord(row);
}

function sourceColumns() {
  const { id, workspaceId, type, name, config, visibility, syncStatus, lastSyncedAt, lastError, createdAt, updatedAt } = sources;
  return { id, workspaceId, type, name, config, visibility, syncStatus, lastSyncedAt, lastError, createdAt, updatedAt };
}

/** Locks the source row for a write; 404 when it is not in the workspace. */
async function lockSource(tx: Tx, workspaceId: string, id: string) {
  const [row] = await tx.select().from(sources).where(ownSource(workspaceId, id)).for('update');
  if (!row) throw errors.notFound();
  return row;
}

export async function listSources(ctx: WorkspaceContext, query: PageQuery & { type?: SourceType | undefined }): Promise<Page<ContentSourceRecord>> {
  const where = and(eq(sources.workspaceId, ctx.workspaceId), query.type ? eq(sources.type, query.type) : undefined);
  const [rows, [counted]] = await Promise.all([
    ctx.db
      .select({ ...sourceColumns(), itemCount })
      .from(sources)
      .where(where)
      .orderBy(desc(sources.createdAt), desc(sources.id))
      .limit(query.limit)
      .offset(query.offset),
    ctx.db.select({ total: count() }).from(sources).where(where),
  ]);
  return { items: rows.map(sourceRecord), total: counted?.total ?? 0 };
}

export const getSource = (ctx: WorkspaceContext, id: string) => loadSource(ctx.db, ctx.workspaceId, id);

export async function createSource(ctx: WorkspaceContext, body: CreateSourceBody): Promise<ContentSourceRecord> {
  const [row] = await ctx.db
    .insert(sources)
    .values({
      id: newId(),
      workspaceId: ctx.workspaceId,
      type: body.type,
      name: body.name,
      visibility: body.visibility ?? 'public',
      config: body.config,
    })
    .returning();
  return sourceRecord({ ...row!, itemCount: 0 });
}

/** The current config with the patch merged in (`null` removes a setting), validated for the source's type. */
function mergedConfig(type: SourceType, current: Record<string, unknown>, patch: Record<string, unknown>) {
  const merged: Record<string, unknown> = { ...current, ...patch };
  for (const [key, value] of Object.entries(patch)) if (value === null) delete merged[key];
  const parsed = configSchemas[type].safeParse(merged);
  if (!parsed.success) throw errors.validation(issueDetails(parsed.error, ['config']));
  return parsed.data as Record<string, unknown>;
}

export async function updateSource(ctx: WorkspaceContext, id: string, body: UpdateSourceBody): Promise<ContentSourceRecord> {
  return ctx.db.transaction(async (tx) => {
    const current = await lockSource(tx, ctx.workspaceId, id);
    const changes: Partial<typeof sources.$inferInsert> = {};
    if (body.name !== undefined) changes.name = body.name;
    if (body.visibility !== undefined) changes.visibility = body.visibility;
    if (body.config !== undefined) changes.config = mergedConfig(current.type, current.config, body.config);
    if (Object.keys(changes).length > 0) {
      await tx.update(sources).set({ ...changes, updatedAt: new Date() }).where(ownSource(ctx.workspaceId, id));
    }
    if (body.visibility !== undefined && body.visibility !== current.visibility) {
      await setChunkVisibility(tx, ctx.workspaceId, 'source_item', 'all-of-source', body.visibility, id);
    }
    return loadSource(tx, ctx.workspaceId, id);
  });
}

/** Deletes the source; its items go with it (cascade) and their chunks are removed in the same transaction. */
export async function deleteSource(ctx: WorkspaceContext, id: string): Promise<void> {
  await ctx.db.transaction(async (tx) => {
    await lockSource(tx, ctx.workspaceId, id);
    // Locking the items first waits out an index job that is writing their chunks right now.
    const items = await tx
      .select({ id: sourceItems.id })
      .from(sourceItems)
      .where(and(eq(sourceItems.workspaceId, ctx.workspaceId), eq(sourceItems.sourceId, id)))
      .for('update');
    const ids = items.map((item) => item.id);
    for (let i = 0; i < ids.length; i += 1000) await removeChunks(tx, ctx.workspaceId, 'source_item', ids.slice(i, i + 1000));
    await tx.delete(sources).where(ownSource(ctx.workspaceId, id));
  });
}

/**
 * Queues a sync unless one is queued or running already: one conditional UPDATE decides, and the job is sent
 * in its transaction. Either way the answer is the source as it now is.
 */
export async function requestSync(ctx: WorkspaceContext, id: string): Promise<ContentSourceRecord> {
  return ctx.db.transaction(async (tx) => {
    const queued = await tx
      .update(sources)
      .set({ syncStatus: 'queued', updatedAt: new Date() })
      .where(
        and(
          ownSource(ctx.workspaceId, id),
          sql`(${sources.syncStatus} not in ('queued', 'syncing') or ${sources.updatedAt} < now() - make_interval(mins => ${STALE_SYNC_MINUTES}))`,
        ),
      )
      .returning({ id: sources.id });
    if (queued.length > 0) await ctx.jobs.send(tx, syncSourceJob, { workspaceId: ctx.workspaceId, sourceId: id });
    return loadSource(tx, ctx.workspaceId, id);
  });
}

// ---------------------------------------------------------------------------------------------------------------
// Items

const itemColumns = {
  id: sourceItems.id,
  sourceId: sourceItems.sourceId,
  title: sourceItems.title,
  url: sourceItems.url,
  fileName: sourceItems.fileName,
  contentPreview: sql<string>`left(${sourceItems.content}, ${sql.raw(String(CONTENT_PREVIEW_LENGTH))})`,
  contentLength: sql<number>`char_length(${sourceItems.content})`.mapWith(Number),
  indexStatus: sourceItems.indexStatus,
  indexedAt: sourceItems.indexedAt,
  indexError: sourceItems.indexError,
  deletedAt: sourceItems.deletedAt,
  createdAt: sourceItems.createdAt,
  updatedAt: sourceItems.updatedAt,
};

type ItemRow = Pick<
  typeof sourceItems.$inferSelect,
  'id' | 'sourceId' | 'title' | 'url' | 'fileName' | 'indexStatus' | 'indexedAt' | 'indexError' | 'deletedAt' | 'createdAt' | 'updatedAt'
> & { contentPreview: string; contentLength: number };

function itemRecord(row: ItemRow): ContentSourceItemRecord {
  return {
    id: row.id,
    sourceId: row.sourceId,
    title: row.title,
    url: row.url,
    fileName: row.fileName,
    contentPreview: row.contentPreview,
    contentLength: row.contentLength,
    indexStatus: row.indexStatus,
    indexedAt: row.indexedAt ? iso(row.indexedAt) : null,
    indexError: row.indexError,
    deletedAt: row.deletedAt ? iso(row.deletedAt) : null,
    createdAt: iso(row.createdAt),
    updatedAt: iso(row.updatedAt),
  };
}

const sourceItemsOf = (workspaceId: string, sourceId: string) =>
  and(eq(sourceItems.workspaceId, workspaceId), eq(sourceItems.sourceId, sourceId));

async function loadItems(db: Tx, workspaceId: string, sourceId: string, ids: string[]): Promise<ContentSourceItemRecord[]> {
  if (ids.length === 0) return [];
  const rows = await db.select(itemColumns).from(sourceItems).where(and(sourceItemsOf(workspaceId, sourceId), inArray(sourceItems.id, ids)));
  const byId = new Map(rows.map((row) => [row.id, itemRecord(row)]));
  return ids.map((id) => byId.get(id)).filter((item): item is ContentSourceItemRecord => item !== undefined);
}

async function loadItem(db: Tx, workspaceId: string, sourceId: string, id: string): Promise<ContentSourceItemRecord> {
  const [item] = await loadItems(db, workspaceId, sourceId, [id]);
  if (!item) throw errors.notFound();
  return item;
}

export async function listItems(
  ctx: WorkspaceContext,
  sourceId: string,
  query: PageQuery & { includeDeleted: boolean },
): Promise<Page<ContentSourceItemRecord>> {
  const where = and(sourceItemsOf(ctx.workspaceId, sourceId), query.includeDeleted ? undefined : isNull(sourceItems.deletedAt));
  const [[source], rows, [counted]] = await Promise.all([
    ctx.db.select({ id: sources.id }).from(sources).where(ownSource(ctx.workspaceId, sourceId)),
    ctx.db
      .select(itemColumns)
      .from(sourceItems)
      .where(where)
      .orderBy(asc(sourceItems.createdAt), asc(sourceItems.id))
      .limit(query.limit)
      .offset(query.offset),
    ctx.db.select({ total: count() }).from(sourceItems).where(where),
  ]);
  if (!source) throw errors.notFound();
  return { items: rows.map(itemRecord), total: counted?.total ?? 0 };
}

export const getItem = (ctx: WorkspaceContext, sourceId: string, id: string) => getItemIn(ctx.db, ctx.workspaceId, sourceId, id);

/** One file of an upload, before it is read. */
export interface UploadedFile {
  fileName: string;
  content: Buffer | string;
  contentType?: string;
}

/** What adding items was asked with: a JSON body (validated here, by the source's type) or multipart files. */
export type AddItemsInput = { kind: 'json'; body: unknown } | { kind: 'multipart'; files: UploadedFile[] };

const websiteItemsRefused = () => errors.unprocessable('Items of a website source come from its syncs; they cannot be added');

/**
 * Adds items to a files or manual source. A JSON body gives one item, a multipart upload one per file; files are
 * all read before anything is written, and written in one transaction.
 */
export async function addItems(ctx: WorkspaceContext, sourceId: string, input: AddItemsInput): Promise<ContentSourceItemRecord[]> {
  const [source] = await ctx.db.select({ type: sources.type }).from(sources).where(ownSource(ctx.workspaceId, sourceId));
  if (!source) throw errors.notFound();
  if (source.type === 'website') throw websiteItemsRefused();
  if (source.type === 'manual') {
    if (input.kind === 'multipart') {
      throw new AppError('unsupported_media_type', 'Items of a manual source are sent as JSON {question, answer}');
    }
    const body = manualItemBody.safeParse(input.body);
    if (!body.success) throw errors.validation(issueDetails(body.error));
    return [await addManualItem(ctx, sourceId, body.data.question, body.data.answer)];
  }
  const files = input.kind === 'multipart' ? input.files : [jsonFile(input.body)];
  const extracted: { fileName: string; title: string; content: string }[] = [];
  for (const [index, file] of files.entries()) extracted.push(await readFile(file, input.kind === 'multipart' ? `file.${index}` : 'fileName'));
  return ctx.db.transaction(async (tx) => {
    await lockSourceShared(tx, ctx.workspaceId, sourceId);
    const ids: string[] = [];
    for (const file of extracted) ids.push(await upsertFileItem(tx, ctx, sourceId, file));
    return loadItems(tx, ctx.workspaceId, sourceId, ids);
  });
}

function jsonFile(raw: unknown): UploadedFile {
  const parsed = fileItemBody.safeParse(raw);
  if (!parsed.success) throw errors.validation(issueDetails(parsed.error));
  const { fileName, rawContent, encoding, contentType } = parsed.data;
  if (encoding === 'base64' && !/^[A-Za-z0-9+/\s]*={0,2}\s*$/.test(rawContent)) {
    throw errors.validation([{ path: 'rawContent', message: 'Not valid base64' }]);
  }
  return {
    fileName,
    // A text file's characters as they are; a PDF sent as text must hold one byte per character (files.ts).
    content: encoding === 'base64' ? Buffer.from(rawContent, 'base64') : rawContent,
    ...(contentType ? { contentType } : {}),
  };
}

async function readFile(file: UploadedFile, path: string) {
  try {
    const { title, content } = await extractFile(file);
    return { fileName: file.fileName, title: (title.trim() || file.fileName).slice(0, MAX_TITLE_LENGTH), content };
  } catch (error) {
    if (error instanceof UnsupportedFileError) throw errors.validation([{ path, message: error.message }], 'Unsupported file type');
    if (error instanceof UnreadableFileError) throw errors.unprocessable(error.message);
    throw error;
  }
}

/** Holds off a concurrent delete of the source while its items are written. */
async function lockSourceShared(tx: Tx, workspaceId: string, id: string): Promise<void> {
  const [row] = await tx.select({ id: sources.id }).from(sources).where(ownSource(workspaceId, id)).for('share');
  if (!row) throw errors.notFound();
}

/**
 * A file is identified in its source by its name: uploading it again replaces the item's text, and re-indexes it
 * only if title or text changed (or the item had been deleted). Returns the item's id.
 */
async function upsertFileItem(
  tx: Tx,
  ctx: WorkspaceContext,
  sourceId: string,
  file: { fileName: string; title: string; content: string },
): Promise<string> {
  const hash = contentHash(file.title, file.content);
  const now = new Date();
  const [written] = await tx
    .insert(sourceItems)
    .values({
      id: newId(),
      workspaceId: ctx.workspaceId,
      sourceId,
      externalKey: file.fileName,
      title: file.title,
      fileName: file.fileName,
      content: file.content,
      contentHash: hash,
    })
    .onConflictDoUpdate({
      target: [sourceItems.workspaceId, sourceItems.sourceId, sourceItems.externalKey],
      set: {
        title: sql`excluded.title`,
        content: sql`excluded.content`,
        contentHash: sql`excluded.content_hash`,
        deletedAt: null,
        indexStatus: 'pending',
        indexError: null,
        updatedAt: now,
      },
      setWhere: sql`${sourceItems.contentHash} <> excluded.content_hash or ${sourceItems.deletedAt} is not null`,
    })
    .returning({ id: sourceItems.id });
  if (written) {
    await ctx.jobs.send(tx, indexDocument, itemDocument(ctx.workspaceId, written.id));
    return written.id;
  }
  // The same text is already there: nothing to write, nothing to index.
  const [unchanged] = await tx
    .select({ id: sourceItems.id })
    .from(sourceItems)
    .where(and(sourceItemsOf(ctx.workspaceId, sourceId), eq(sourceItems.externalKey, file.fileName)));
  return unchanged!.id;
}

async function addManualItem(ctx: WorkspaceContext, sourceId: string, question: string, answer: string) {
  return ctx.db.transaction(async (tx) => {
    await lockSourceShared(tx, ctx.workspaceId, sourceId);
    const id = newId();
    await tx.insert(sourceItems).values({
      id,
      workspaceId: ctx.workspaceId,
      sourceId,
      // A typed answer has no identity outside the service: its own id is its key.
      externalKey: id,
      title: question,
      content: answer,
      contentHash: contentHash(question, answer),
    });
    await ctx.jobs.send(tx, indexDocument, itemDocument(ctx.workspaceId, id));
    return loadItem(tx, ctx.workspaceId, sourceId, id);
  });
}

/** Edits a question and answer of a manual source; a change re-indexes it. Deleted items are not edited (404). */
export async function updateManualItem(ctx: WorkspaceContext, sourceId: string, id: string, body: UpdateManualItemBody) {
  return ctx.db.transaction(async (tx) => {
    const [row] = await tx
      .select({ item: sourceItems, type: sources.type })
      .from(sourceItems)
      .innerJoin(sources, and(eq(sources.workspaceId, sourceItems.workspaceId), eq(sources.id, sourceItems.sourceId)))
      .where(and(sourceItemsOf(ctx.workspaceId, sourceId), eq(sourceItems.id, id), isNull(sourceItems.deletedAt)))
      .for('update', { of: sourceItems });
    if (!row) throw errors.notFound();
    if (row.type === 'website') throw errors.unprocessable('Items of a website source come from its syncs; they cannot be edited');
    if (row.type === 'files') throw errors.unprocessable('Items of a files source are changed by uploading the file again');
    const title = body.question ?? row.item.title;
    const content = body.answer ?? row.item.content;
    const hash = contentHash(title, content);
    if (hash !== row.item.contentHash) {
      await tx
        .update(sourceItems)
        .set({ title, content, contentHash: hash, indexStatus: 'pending', indexError: null, updatedAt: new Date() })
        .where(and(sourceItemsOf(ctx.workspaceId, sourceId), eq(sourceItems.id, id)));
      await ctx.jobs.send(tx, indexDocument, itemDocument(ctx.workspaceId, id));
    }
    return getItemIn(tx, ctx.workspaceId, sourceId, id);
  });
}

async function getItemIn(db: Tx, workspaceId: string, sourceId: string, id: string) {
  const [row] = await db
    .select({ ...itemColumns, content: sourceItems.content })
    .from(sourceItems)
    .where(and(sourceItemsOf(workspaceId, sourceId), eq(sourceItems.id, id)));
  if (!row) throw errors.notFound();
  return { ...itemRecord(row), content: row.content };
}

/**
 * Soft-deletes an item: it stays listable with `includeDeleted`, its chunks are removed at once and the removal
 * job is sent. An item already deleted is 404. A website item comes back if its page is still there at the next sync.
 */
export async function deleteItem(ctx: WorkspaceContext, sourceId: string, id: string): Promise<void> {
  await ctx.db.transaction(async (tx) => {
    const now = new Date();
    const deleted = await tx
      .update(sourceItems)
      .set({ deletedAt: now, updatedAt: now })
      .where(and(sourceItemsOf(ctx.workspaceId, sourceId), eq(sourceItems.id, id), isNull(sourceItems.deletedAt)))
      .returning({ id: sourceItems.id });
    if (deleted.length === 0) throw errors.notFound();
    await removeChunks(tx, ctx.workspaceId, 'source_item', [id]);
    await ctx.jobs.send(tx, unindexDocument, itemDocument(ctx.workspaceId, id));
  });
}
