// The writes every path that creates or deletes contacts shares (the API, CSV imports, inbound messages): the
// per-workspace total in contact_counts moves in the same transaction, so an unfiltered list reads it instead of
// counting a million rows.
import { and, eq, inArray, sql } from 'drizzle-orm';
import type { Tx } from '../../db/client.js';
import { contactCounts, contacts } from '../../db/schema/index.js';

export type ContactRow = typeof contacts.$inferSelect;
export type NewContact = typeof contacts.$inferInsert;

/** Inserts contacts of one workspace (callers check phone uniqueness or catch the unique violation). */
export async function insertContacts(tx: Tx, workspaceId: string, rows: NewContact[]): Promise<ContactRow[]> {
  if (rows.length === 0) return [];
  const inserted = await tx.insert(contacts).values(rows.map((row) => ({ ...row, workspaceId }))).returning();
  await adjustContactCount(tx, workspaceId, inserted.length);
  return inserted;
}

export async function deleteContacts(tx: Tx, workspaceId: string, ids: string[]): Promise<number> {
  if (ids.length === 0) return 0;
  const deleted = await tx
    .delete(contacts)
    .where(and(eq(contacts.workspaceId, workspaceId), inArray(contacts.id, ids)))
    .returning({ id: contacts.id });
  await adjustContactCount(tx, workspaceId, -deleted.length);
  return deleted.length;
}

/** The exact number of contacts in the workspace. */
export async function contactTotal(tx: Tx, workspaceId: string): Promise<number> {
  const [row] = await tx.select({ total: contactCounts.total }).from(contactCounts).where(eq(contactCounts.workspaceId, workspaceId));
  return row?.total ?? 0;
}

async function adjustContactCount(tx: Tx, workspaceId: string, delta: number): Promise<void> {
  if (delta === 0) return;
  await tx
    .insert(contactCounts)
    .values({ workspaceId, total: delta })
    .onConflictDoUpdate({ target: contactCounts.workspaceId, set: { total: sql`${contactCounts.total} + ${delta}` } });
}
