// CSV imports of contacts: the upload is stored with status `queued` and a job (sent in the same transaction)
// processes it in batches, each in its own transaction that also records how far the import has got, so a rerun
// resumes where the last one stopped and a completed import is never applied twice.
import { parse } from 'csv-parse/sync';
import { and, asc, eq, inArray, sql } from 'drizzle-orm';
import type { Db, Tx } from '../../db/client.js';
import { contactImports, contacts } from '../../db/schema/index.js';
import { iso } from '../../http/api.js';
import { errors } from '../../http/errors.js';
import type { WorkspaceContext } from '../../http/guard.js';
import type { JobDefinition } from '../../jobs/queue.js';
import { newId } from '../../ids.js';
import { INVALID_EMAIL, INVALID_PHONE, normalizeEmail, normalizePhone } from './fields.js';
import { type ContactImportRecord, type ImportInput, type ImportResult, MAX_ATTRIBUTE_STRING, MAX_ATTRIBUTES } from './schemas.js';
import { insertContacts, type NewContact } from './store.js';

export const IMPORT_BATCH_SIZE = 500;

export type ImportPayload = { workspaceId: string; importId: string };

type ImportRow = typeof contactImports.$inferSelect;
type Progress = ImportResult & { processed: number };

function toRecord(row: ImportRow): ContactImportRecord {
  const stored = row.result as Partial<Progress> | null;
  return {
    id: row.id,
    status: row.status,
    fileName: row.fileName,
    result:
      row.status === 'completed' && stored
        ? { created: stored.created ?? 0, updated: stored.updated ?? 0, rejected: stored.rejected ?? [] }
        : null,
    error: row.error,
    createdAt: iso(row.createdAt),
    completedAt: row.completedAt ? iso(row.completedAt) : null,
  };
}

export async function startImport(
  ctx: WorkspaceContext,
  input: ImportInput,
  job: JobDefinition<ImportPayload>,
): Promise<ContactImportRecord> {
  return ctx.db.transaction(async (tx) => {
    const now = new Date();
    const [row] = await tx
      .insert(contactImports)
      .values({
        id: newId(),
        workspaceId: ctx.workspaceId,
        status: 'queued',
        fileName: input.fileName ?? null,
        csv: input.csv,
        createdByUserId: ctx.userId,
        createdAt: now,
        updatedAt: now,
      })
      .returning();
    await ctx.jobs.send(tx, job, { workspaceId: ctx.workspaceId, importId: row!.id });
    return toRecord(row!);
  });
}

export async function getImport(ctx: WorkspaceContext, id: string): Promise<ContactImportRecord> {
  const [row] = await ctx.db
    .select()
    .from(contactImports)
    .where(and(eq(contactImports.workspaceId, ctx.workspaceId), eq(contactImports.id, id)));
  if (!row) throw errors.notFound();
  return toRecord(row);
}

type Column = { kind: 'name' | 'phone' | 'email' } | { kind: 'attribute'; key: string } | { kind: 'ignored' };

class ImportFailure extends Error {}

/** The header row's columns: name, phone, email (any case) and one attribute per other non-empty header. */
function readHeader(header: string[]): Column[] {
  const seen = new Set<string>();
  let attributes = 0;
  const columns = header.map((cell): Column => {
    const title = cell.trim();
    if (title === '') return { kind: 'ignored' };
    const lower = title.toLowerCase();
    const column: Column = lower === 'name' || lower === 'phone' || lower === 'email' ? { kind: lower } : { kind: 'attribute', key: title };
    const id = column.kind === 'attribute' ? `attribute:${title}` : lower;
    if (seen.has(id)) throw new ImportFailure(`The header has the column "${title}" twice`);
    seen.add(id);
    if (column.kind === 'attribute') {
      if (title.length > 64) throw new ImportFailure(`The column name "${title.slice(0, 64)}…" is longer than 64 characters`);
      attributes++;
    }
    return column;
  });
  if (!seen.has('name')) throw new ImportFailure('The header row has no "name" column');
  if (attributes > MAX_ATTRIBUTES) throw new ImportFailure(`More than ${MAX_ATTRIBUTES} attribute columns`);
  return columns;
}

type Parsed = { name: string; phone?: string; email?: string; attributes: Record<string, string> };

function readRow(columns: Column[], cells: string[]): Parsed | string {
  let name = '';
  let phoneCell = '';
  let emailCell = '';
  const attributes: Record<string, string> = {};
  columns.forEach((column, index) => {
    const value = (cells[index] ?? '').trim();
    if (value === '') return;
    if (column.kind === 'name') name = value;
    else if (column.kind === 'phone') phoneCell = value;
    else if (column.kind === 'email') emailCell = value;
    else if (column.kind === 'attribute') attributes[column.key] = value;
  });
  if (name === '') return 'Missing name';
  if (name.length > 200) return 'Name longer than 200 characters';
  const row: Parsed = { name, attributes };
  if (phoneCell !== '') {
    const phone = normalizePhone(phoneCell);
    if (!phone) return `${INVALID_PHONE}: "${phoneCell}"`;
    row.phone = phone;
  }
  if (emailCell !== '') {
    const email = normalizeEmail(emailCell);
    if (!email) return `${INVALID_EMAIL}: "${emailCell}"`;
    row.email = email;
  }
  for (const [key, value] of Object.entries(attributes)) {
    if (value.length > MAX_ATTRIBUTE_STRING) return `The value of "${key}" is longer than ${MAX_ATTRIBUTE_STRING} characters`;
  }
  return row;
}

/** A contact as the batch sees it: one already stored (`stored`), or one this batch creates. */
type Target = {
  id: string;
  stored: boolean;
  dirty: boolean;
  name: string;
  phone: string | null;
  email: string | null;
  attributes: Record<string, unknown>;
};

async function applyBatch(tx: Tx, workspaceId: string, rows: { row: number; data: Parsed | string }[], progress: Progress) {
  const valid = rows.flatMap((r) => (typeof r.data === 'string' ? [] : [r.data]));
  const phones = [...new Set(valid.flatMap((r) => (r.phone ? [r.phone] : [])))];
  const emails = [...new Set(valid.flatMap((r) => (r.email ? [r.email] : [])))];
  const byPhone = new Map<string, Target>();
  const byEmail = new Map<string, Target>();
  const remember = (target: Target) => {
    if (target.phone && !byPhone.has(target.phone)) byPhone.set(target.phone, target);
    if (target.email && !byEmail.has(target.email)) byEmail.set(target.email, target);
  };
  const columns = { id: contacts.id, name: contacts.name, phone: contacts.phone, email: contacts.email, attributes: contacts.attributes };
  const stored = [
    ...(phones.length === 0
      ? []
      : await tx
          .select(columns)
          .from(contacts)
          .where(and(eq(contacts.workspaceId, workspaceId), inArray(contacts.phone, phones)))
          .for('update')),
    ...(emails.length === 0
      ? []
      : await tx
          .select(columns)
          .from(contacts)
          .where(and(eq(contacts.workspaceId, workspaceId), inArray(sql`lower(${contacts.email})`, emails)))
          .orderBy(asc(contacts.createdAt), asc(contacts.id))
          .for('update')),
  ];
  const targets = new Map<string, Target>();
  for (const row of stored) {
    if (targets.has(row.id)) continue;
    const target: Target = { ...row, email: row.email?.toLowerCase() ?? null, attributes: row.attributes ?? {}, stored: true, dirty: false };
    targets.set(row.id, target);
    if (target.phone) byPhone.set(target.phone, target);
  }
  // E-mail matches: the oldest contact with the address (the query is ordered by age).
  for (const target of targets.values()) if (target.email && !byEmail.has(target.email)) byEmail.set(target.email, target);

  const created: Target[] = [];
  for (const { row, data } of rows) {
    if (typeof data === 'string') {
      progress.rejected.push({ row, reason: data });
      continue;
    }
    const target = (data.phone && byPhone.get(data.phone)) || (data.email && byEmail.get(data.email)) || undefined;
    if (!target) {
      const fresh: Target = {
        id: newId(),
        stored: false,
        dirty: true,
        name: data.name,
        phone: data.phone ?? null,
        email: data.email ?? null,
        attributes: { ...data.attributes },
      };
      created.push(fresh);
      remember(fresh);
      progress.created++;
      continue;
    }
    const attributes = { ...target.attributes, ...data.attributes };
    if (Object.keys(attributes).length > MAX_ATTRIBUTES) {
      progress.rejected.push({ row, reason: `The contact would have more than ${MAX_ATTRIBUTES} attributes` });
      continue;
    }
    target.name = data.name;
    target.attributes = attributes;
    if (data.email) target.email = data.email;
    // Matched by e-mail: a phone the file gives (which no contact has, or it would have matched) fills an empty one.
    if (data.phone && !target.phone) target.phone = data.phone;
    target.dirty = true;
    remember(target);
    progress.updated++;
  }
  const now = new Date();
  const inserts: NewContact[] = created.map((target) => ({
    id: target.id,
    workspaceId,
    name: target.name,
    phone: target.phone,
    email: target.email,
    attributes: target.attributes,
    createdAt: now,
    updatedAt: now,
  }));
  await insertContacts(tx, workspaceId, inserts);
  for (const target of targets.values()) {
    if (!target.dirty) continue;
    await tx
      .update(contacts)
      .set({ name: target.name, phone: target.phone, email: target.email, attributes: target.attributes, updatedAt: now })
      .where(and(eq(contacts.workspaceId, workspaceId), eq(contacts.id, target.id)));
  }
}

async function finish(db: Tx, row: { workspaceId: string; id: string }, changes: Partial<typeof contactImports.$inferInsert>) {
  const now = new Date();
  await db
    .update(contactImports)
    .set({ ...changes, updatedAt: now, completedAt: now })
    .where(and(eq(contactImports.workspaceId, row.workspaceId), eq(contactImports.id, row.id)));
}

/** The job's work; safe to run again at any point (a finished import is left alone, a partial one resumes). */
export async function runImport(db: Db, { workspaceId, importId }: ImportPayload): Promise<void> {
  const where = and(eq(contactImports.workspaceId, workspaceId), eq(contactImports.id, importId));
  const [row] = await db.select().from(contactImports).where(where);
  if (!row || row.status === 'completed' || row.status === 'failed') return;
  await db.update(contactImports).set({ status: 'running', updatedAt: new Date() }).where(where);

  let records: string[][];
  let columns: Column[];
  try {
    try {
      records = parse(row.csv, { bom: true, relax_column_count: true, skip_empty_lines: true });
    } catch (error) {
      throw new ImportFailure(`The file is not valid CSV: ${error instanceof Error ? error.message : String(error)}`);
    }
    if (records.length === 0) throw new ImportFailure('The file is empty: a header row is required');
    columns = readHeader(records[0]!);
  } catch (error) {
    if (!(error instanceof ImportFailure)) throw error;
    await finish(db, row, { status: 'failed', error: error.message });
    return;
  }
  const dataRows = records.length - 1;

  for (;;) {
    const done = await db.transaction(async (tx) => {
      const [locked] = await tx.select().from(contactImports).where(where).for('update');
      if (locked?.status !== 'running') return true;
      const stored = locked.result as Partial<Progress> | null;
      const progress: Progress = {
        processed: stored?.processed ?? 0,
        created: stored?.created ?? 0,
        updated: stored?.updated ?? 0,
        rejected: stored?.rejected ?? [],
      };
      const end = Math.min(progress.processed + IMPORT_BATCH_SIZE, dataRows);
      const batch: { row: number; data: Parsed | string }[] = [];
      for (let index = progress.processed; index < end; index++) {
        batch.push({ row: index + 1, data: readRow(columns, records[index + 1]!) });
      }
      await applyBatch(tx, workspaceId, batch, progress);
      progress.processed = end;
      if (end >= dataRows) {
        await finish(tx, locked, { status: 'completed', result: progress, error: null });
        return true;
      }
      await tx.update(contactImports).set({ result: progress, updatedAt: new Date() }).where(where);
      return false;
    });
    if (done) return;
  }
}

/** After the last attempt failed: the import is marked failed with the reason. */
export async function markImportFailed(db: Db, { workspaceId, importId }: ImportPayload, message: string): Promise<void> {
  await finish(db, { workspaceId, id: importId }, { status: 'failed', error: message });
}
