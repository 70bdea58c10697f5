// Writes shared by every path that opens conversations (inbound messages, live chat): at most one open
// conversation per contact and channel (a unique partial index), and the per-workspace total in step.
import { and, eq, ne, sql } from 'drizzle-orm';
import type { Tx } from '../../db/client.js';
import { conversationCounts, conversations } from '../../db/schema/index.js';
import { newId } from '../../ids.js';

export type ConversationRow = typeof conversations.$inferSelect;

/**
 * The contact's open (not resolved) conversation on the channel, locked; or a new `active` one. Concurrent calls
 * for one contact and channel end with one conversation (the loser of the insert race reads the winner's).
 */
export async function openConversation(
  tx: Tx,
  workspaceId: string,
  channelId: string,
  contactId: string,
): Promise<{ conversation: ConversationRow; created: boolean }> {
  const existing = await findOpen(tx, workspaceId, channelId, contactId);
  if (existing) return { conversation: existing, created: false };
  const [inserted] = await tx
    .insert(conversations)
    .values({ id: newId(), workspaceId, channelId, contactId, status: 'active' })
    .onConflictDoNothing()
    .returning();
  if (inserted) {
    await tx
      .insert(conversationCounts)
      .values({ workspaceId, total: 1 })
      .onConflictDoUpdate({ target: conversationCounts.workspaceId, set: { total: sql`${conversationCounts.total} + 1` } });
    return { conversation: inserted, created: true };
  }
  const winner = await findOpen(tx, workspaceId, channelId, contactId);
  if (!winner) throw new Error('conversation insert conflicted but no open conversation was found');
  return { conversation: winner, created: false };
}

async function findOpen(tx: Tx, workspaceId: string, channelId: string, contactId: string) {
  const [row] = await tx
    .select()
    .from(conversations)
    .where(
      and(
        eq(conversations.workspaceId, workspaceId),
        eq(conversations.channelId, channelId),
        eq(conversations.contactId, contactId),
        ne(conversations.status, 'resolved'),
      ),
    )
    .for('update');
  return row;
}

/** The exact number of conversations in the workspace. */
export async function conversationTotal(tx: Tx, workspaceId: string): Promise<number> {
  const [row] = await tx
    .select({ total: conversationCounts.total })
    .from(conversationCounts)
    .where(eq(conversationCounts.workspaceId, workspaceId));
  return row?.total ?? 0;
}
