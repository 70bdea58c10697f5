// Jobs of conversations: a snoozed conversation becomes active again when its snooze ends.
import { and, eq, lte, sql } from 'drizzle-orm';
import { z } from 'zod';
import { channels, contacts, conversations } from '../../db/schema/index.js';
import { type AnyJob, defineJob } from '../../jobs/queue.js';
import { publishEvent } from '../events/publish.js';
import { toConversationRecord } from './records.js';

export interface ConversationRef {
  workspaceId: string;
  conversationId: string;
}

/**
 * Sent with `startAfter = snoozedUntil` whenever a conversation is snoozed. It acts only if the conversation is
 * still snoozed and its snooze has ended, so a job left over from an earlier or changed snooze does nothing.
 */
export const wakeConversation = defineJob<ConversationRef>({
  name: 'conversation-wake',
  payload: z.object({ workspaceId: z.uuid(), conversationId: z.uuid() }),
  retry: { limit: 5, delaySeconds: 5 },
  timeoutSeconds: 30,
  handle: async ({ workspaceId, conversationId }, { db }) => {
    await db.transaction(async (tx) => {
      const [woken] = await tx
        .update(conversations)
        .set({ status: 'active', snoozedUntil: null, updatedAt: new Date() })
        .where(
          and(
            eq(conversations.workspaceId, workspaceId),
            eq(conversations.id, conversationId),
            eq(conversations.status, 'snoozed'),
            lte(conversations.snoozedUntil, sql`now()`),
          ),
        )
        .returning();
      if (!woken) return;
      const [joined] = await tx
        .select({ channelType: channels.type, contact: { id: contacts.id, name: contacts.name, phone: contacts.phone } })
        .from(channels)
        .innerJoin(contacts, and(eq(contacts.workspaceId, workspaceId), eq(contacts.id, woken.contactId)))
        .where(and(eq(channels.workspaceId, workspaceId), eq(channels.id, woken.channelId)));
      if (!joined) return;
      await publishEvent(tx, {
        type: 'conversation.updated',
        workspaceId,
        conversationId,
        data: toConversationRecord({ conversation: woken, channelType: joined.channelType, contact: joined.contact }),
      });
    });
  },
});

export const conversationJobs: AnyJob[] = [wakeConversation];
