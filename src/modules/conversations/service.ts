// The inbox's conversations and their messages: listing (exact totals without counting the workspace), reading,
// triage (status, snooze, assignee), and agents' replies within each channel's messaging policy.
import { and, count, desc, eq, inArray, lt, or, type SQL, sql } from 'drizzle-orm';
import type { Tx } from '../../db/client.js';
import {
  type ChannelType,
  channels,
  contacts,
  conversations,
  messages,
  organizationMembers,
  workspaceMembers,
} from '../../db/schema/index.js';
import { errors } from '../../http/errors.js';
import type { WorkspaceContext } from '../../http/guard.js';
import type { Page } from '../../http/pagination.js';
import { newId } from '../../ids.js';
import { sendOutboundMessage } from '../channels/jobs.js';
import { toMessageRecord } from '../channels/message-record.js';
import { isUniqueViolation } from '../../db/errors.js';
import { publishEvent } from '../events/publish.js';
import { type ConversationJoinRow, maySend, toConversationRecord } from './records.js';
import type {
  ConversationListQuery,
  ConversationRecord,
  MessageListQuery,
  MessageRecord,
  SendMessageInput,
  UpdateConversationInput,
} from './schemas.js';
import { conversationTotal } from './store.js';
import { wakeConversation } from './jobs.js';

const OPEN_INDEX = 'conversations_open_idx';

export const WINDOW_CLOSED_WHATSAPP =
  "The 24-hour messaging window has closed: WhatsApp allows free-form messages only within 24 hours of the contact's " +
  'last inbound message. Send an approved message template through a broadcast instead.';
export const WINDOW_CLOSED_SOCIAL =
  "The 24-hour messaging window has closed: free-form messages are allowed only within 24 hours of the contact's last " +
  'inbound message. A human agent may still reply within 7 days of it by sending with `humanAgent: true`; after that, ' +
  'send an approved message template through a broadcast.';
export const WINDOW_CLOSED_HUMAN_AGENT =
  "The 24-hour messaging window has closed, and so has the 7-day human-agent window after the contact's last inbound " +
  'message. Send an approved message template through a broadcast instead.';

const joinedColumns = {
  conversation: conversations,
  channelType: channels.type,
  contact: { id: contacts.id, name: contacts.name, phone: contacts.phone },
};

/** Conversations with their channel type and contact, in one query (the joins are by primary key). */
function selectJoined(db: Tx) {
  return db
    .select(joinedColumns)
    .from(conversations)
    .innerJoin(channels, eq(channels.id, conversations.channelId))
    .innerJoin(contacts, eq(contacts.id, conversations.contactId));
}

const inWorkspace = (ctx: WorkspaceContext, id: string) =>
  and(eq(conversations.workspaceId, ctx.workspaceId), eq(conversations.id, id));

async function findJoined(db: Tx, ctx: WorkspaceContext, id: string): Promise<ConversationJoinRow> {
  const [row] = await selectJoined(db).where(inWorkspace(ctx, id));
  if (!row) throw errors.notFound();
  return row;
}

function listFilter(ctx: WorkspaceContext, query: ConversationListQuery): { where: SQL; filtered: boolean } {
  const conditions: SQL[] = [eq(conversations.workspaceId, ctx.workspaceId)];
  if (query.status) conditions.push(eq(conversations.status, query.status));
  if (query.channelId) conditions.push(eq(conversations.channelId, query.channelId));
  if (query.assigneeId) conditions.push(eq(conversations.assigneeId, query.assigneeId));
  if (query.contactId) conditions.push(eq(conversations.contactId, query.contactId));
  return { where: and(...conditions)!, filtered: conditions.length > 1 };
}

/**
 * Most recent activity first: lastMessageAt descending with conversations that have no message yet last, ties by
 * id descending. The order is read from `conversations_workspace_recent_idx` (workspace_id, last_message_at, id)
 * scanned backwards, in two parts (with a message, then without) because a backward scan of that ascending
 * index puts nulls first; each part reads at most offset + limit index entries (index-only), and only the page's
 * rows are joined to their channel and contact and sorted. `total`: the exact per-workspace counter when unfiltered (no count over the workspace); with a filter,
 * a count of the matching rows.
 */
export async function listConversations(ctx: WorkspaceContext, query: ConversationListQuery): Promise<Page<ConversationRecord>> {
  const { where, filtered } = listFilter(ctx, query);
  const reach = query.offset + query.limit;
  const pageIds = sql`(
    select id from (
      (select 0 as part, ${conversations.id} as id, ${conversations.lastMessageAt} as last_message_at
         from ${conversations}
        where ${where} and ${conversations.lastMessageAt} is not null
        order by ${conversations.lastMessageAt} desc, ${conversations.id} desc
        limit ${reach})
      union all
      (select 1 as part, ${conversations.id} as id, ${conversations.lastMessageAt} as last_message_at
         from ${conversations}
        where ${where} and ${conversations.lastMessageAt} is null
        order by ${conversations.lastMessageAt} desc nulls first, ${conversations.id} desc
        limit ${reach})
    ) recent
    order by part, last_message_at desc, id desc
    limit ${query.limit} offset ${query.offset})`;
  const [rows, total] = await Promise.all([
    // The page's ids are picked from the index; the outer query joins and orders only those rows.
    selectJoined(ctx.db)
      .where(and(eq(conversations.workspaceId, ctx.workspaceId), inArray(conversations.id, pageIds)))
      .orderBy(sql`${conversations.lastMessageAt} desc nulls last`, desc(conversations.id)),
    filtered
      ? ctx.db
          .select({ total: count() })
          .from(conversations)
          .where(where)
          .then(([row]) => row?.total ?? 0)
      : conversationTotal(ctx.db, ctx.workspaceId),
  ]);
  const now = new Date();
  const items = rows.map((row) => toConversationRecord(row, now));
  return { items, total };
}

export async function getConversation(ctx: WorkspaceContext, id: string): Promise<ConversationRecord> {
  return toConversationRecord(await findJoined(ctx.db, ctx, id));
}

/** The conversation, locked until the transaction ends (writes to one conversation take turns), or a 404. */
async function lockConversation(tx: Tx, ctx: WorkspaceContext, id: string) {
  const [row] = await tx.select().from(conversations).where(inWorkspace(ctx, id)).for('update');
  if (!row) throw errors.notFound();
  return row;
}

/** A member of the workspace, or an Org Owner of its organization (who acts as owner in every workspace). */
async function isAssignable(tx: Tx, ctx: WorkspaceContext, userId: string): Promise<boolean> {
  const [member] = await tx
    .select({ userId: workspaceMembers.userId })
    .from(workspaceMembers)
    .where(and(eq(workspaceMembers.workspaceId, ctx.workspaceId), eq(workspaceMembers.userId, userId)));
  if (member) return true;
  const [owner] = await tx
    .select({ userId: organizationMembers.userId })
    .from(organizationMembers)
    .where(
      and(
        eq(organizationMembers.organizationId, ctx.organizationId),
        eq(organizationMembers.userId, userId),
        eq(organizationMembers.role, 'owner'),
      ),
    );
  return owner !== undefined;
}

/**
 * Triage. `snoozed` needs a `snoozedUntil` in the future (given now, or kept from before when only the assignee
 * changes); every other status clears it. Moving a resolved conversation back to an open status is a 409 when
 * the contact already has another open conversation on the channel. Publishes `conversation.updated`.
 */
export async function updateConversation(
  ctx: WorkspaceContext,
  id: string,
  input: UpdateConversationInput,
): Promise<ConversationRecord> {
  return ctx.db.transaction(async (tx) => {
    const current = await lockConversation(tx, ctx, id);
    const now = new Date();
    const status = input.status ?? current.status;
    let snoozedUntil: Date | null = null;
    if (status === 'snoozed' && input.status === undefined && input.snoozedUntil === undefined) {
      // Only the assignee changes: the snooze stays as it is.
      snoozedUntil = current.snoozedUntil;
    } else if (status === 'snoozed') {
      if (!input.snoozedUntil) {
        throw errors.validation([{ path: 'snoozedUntil', message: 'Required (a future date-time) when the status is snoozed' }]);
      }
      snoozedUntil = new Date(input.snoozedUntil);
      if (snoozedUntil.getTime() <= now.getTime()) {
        throw errors.validation([{ path: 'snoozedUntil', message: 'Must be in the future' }]);
      }
    } else if (input.snoozedUntil) {
      throw errors.validation([{ path: 'snoozedUntil', message: 'Only allowed with the status snoozed' }]);
    }
    const changes: Partial<typeof conversations.$inferInsert> = { status, snoozedUntil, updatedAt: now };
    if (input.assigneeId !== undefined) {
      if (input.assigneeId !== null && !(await isAssignable(tx, ctx, input.assigneeId.toLowerCase()))) {
        throw errors.validation([{ path: 'assigneeId', message: 'Not a member of the workspace' }]);
      }
      changes.assigneeId = input.assigneeId?.toLowerCase() ?? null;
    }
    try {
      await tx.update(conversations).set(changes).where(inWorkspace(ctx, id));
    } catch (error) {
      if (isUniqueViolation(error, OPEN_INDEX)) {
        throw errors.conflict('The contact already has an open conversation on this channel; resolve it before reopening this one');
      }
      throw error;
    }
    if (snoozedUntil && snoozedUntil.getTime() !== current.snoozedUntil?.getTime()) {
      await ctx.jobs.send(tx, wakeConversation, { workspaceId: ctx.workspaceId, conversationId: id }, { startAfter: snoozedUntil });
    }
    const record = toConversationRecord(await findJoined(tx, ctx, id), now);
    await publishEvent(tx, { type: 'conversation.updated', workspaceId: ctx.workspaceId, conversationId: id, data: record });
    return record;
  });
}

/** Oldest first: the newest `limit` messages (strictly older than `before` when given). */
export async function listMessages(ctx: WorkspaceContext, conversationId: string, query: MessageListQuery): Promise<MessageRecord[]> {
  const [found] = await ctx.db
    .select({ id: conversations.id })
    .from(conversations)
    .where(inWorkspace(ctx, conversationId));
  if (!found) throw errors.notFound();
  const conditions: (SQL | undefined)[] = [
    eq(messages.workspaceId, ctx.workspaceId),
    eq(messages.conversationId, conversationId),
  ];
  if (query.before) {
    const [anchor] = await ctx.db
      .select({ id: messages.id, createdAt: messages.createdAt })
      .from(messages)
      .where(
        and(
          eq(messages.workspaceId, ctx.workspaceId),
          eq(messages.conversationId, conversationId),
          eq(messages.id, query.before.toLowerCase()),
        ),
      );
    if (!anchor) throw errors.validation([{ path: 'before', message: 'No message with this id in the conversation' }]);
    conditions.push(
      or(lt(messages.createdAt, anchor.createdAt), and(eq(messages.createdAt, anchor.createdAt), lt(messages.id, anchor.id))),
    );
  }
  const rows = await ctx.db
    .select()
    .from(messages)
    .where(and(...conditions))
    .orderBy(desc(messages.createdAt), desc(messages.id))
    .limit(query.limit);
  return rows.reverse().map(toMessageRecord);
}

function windowClosedMessage(channelType: ChannelType, humanAgent: boolean): string {
  if (channelType === 'whatsapp') return WINDOW_CLOSED_WHATSAPP;
  return humanAgent ? WINDOW_CLOSED_HUMAN_AGENT : WINDOW_CLOSED_SOCIAL;
}

/**
 * An agent's reply. The channel's policy is checked first (422, nothing stored); then the message is stored as
 * `queued`, the conversation's lastMessageAt moves, and the send job and the events are written in the same
 * transaction: the job exists if and only if the message does.
 */
export async function sendMessage(ctx: WorkspaceContext, conversationId: string, input: SendMessageInput): Promise<MessageRecord> {
  return ctx.db.transaction(async (tx) => {
    const current = await lockConversation(tx, ctx, conversationId);
    const [channel] = await tx
      .select({ type: channels.type })
      .from(channels)
      .where(and(eq(channels.workspaceId, ctx.workspaceId), eq(channels.id, current.channelId)));
    if (!channel) throw errors.notFound();
    const now = new Date();
    const humanAgent = input.humanAgent === true;
    if (!maySend(channel.type, current.lastInboundAt, humanAgent, now)) {
      throw errors.unprocessable(windowClosedMessage(channel.type, humanAgent));
    }
    const [row] = await tx
      .insert(messages)
      .values({
        id: newId(),
        workspaceId: ctx.workspaceId,
        conversationId,
        channelId: current.channelId,
        direction: 'outbound',
        type: 'text',
        body: input.body,
        status: 'queued',
        senderUserId: ctx.userId,
        createdAt: now,
        updatedAt: now,
      })
      .returning();
    const record = toMessageRecord(row!);
    await tx
      .update(conversations)
      .set({ lastMessageAt: now, updatedAt: now })
      .where(inWorkspace(ctx, conversationId));
    await ctx.jobs.send(tx, sendOutboundMessage, { workspaceId: ctx.workspaceId, messageId: record.id });
    await publishEvent(tx, { type: 'message.created', workspaceId: ctx.workspaceId, conversationId, data: record });
    const conversation = toConversationRecord(await findJoined(tx, ctx, conversationId), now);
    await publishEvent(tx, {
      type: 'conversation.updated',
      workspaceId: ctx.workspaceId,
      conversationId,
      data: conversation,
    });
    return record;
  });
}
