// The live-chat visitor: a contact with an identity on the channel whose external id is the sha256 of the
// visitor's token (the token itself is never stored; a lost token is a new visitor). Messages go into the
// contact's open conversation on the channel, as inbound messages.
import { createHash, randomBytes } from 'node:crypto';
import { and, desc, eq, lt, or, sql } from 'drizzle-orm';
import type { Db } from '../../db/client.js';
import { channels, contactIdentities, contacts, conversations, messages } from '../../db/schema/index.js';
import { errors } from '../../http/errors.js';
import { newId } from '../../ids.js';
import { insertContacts } from '../contacts/store.js';
import { toConversationRecord } from '../conversations/records.js';
import { openConversation } from '../conversations/store.js';
import { publishEvent } from '../events/publish.js';
import { type MessageRecord, toMessageRecord } from '../channels/message-record.js';

export interface LivechatChannel {
  id: string;
  workspaceId: string;
  allowedOrigins: string[];
  greeting: string | null;
}

export interface Visitor {
  channel: LivechatChannel;
  contactId: string;
}

export const hashToken = (token: string): string => createHash('sha256').update(token).digest('hex');

/** The live-chat channel, or undefined when there is none with this id (or it is another type). */
export async function findLivechatChannel(db: Db, channelId: string): Promise<LivechatChannel | undefined> {
  const [row] = await db
    .select({ id: channels.id, workspaceId: channels.workspaceId, type: channels.type, config: channels.config })
    .from(channels)
    .where(eq(channels.id, channelId))
    .limit(1);
  if (row?.type !== 'livechat') return undefined;
  const config = row.config ?? {};
  const origins = Array.isArray(config.allowedOrigins) ? config.allowedOrigins.filter((o): o is string => typeof o === 'string') : [];
  return {
    id: row.id,
    workspaceId: row.workspaceId,
    allowedOrigins: origins,
    greeting: typeof config.greeting === 'string' && config.greeting !== '' ? config.greeting : null,
  };
}

/** Origins compare as the browser sends them (`scheme://host[:port]`), ignoring case and a trailing slash in the config. */
export function originAllowed(channel: LivechatChannel, origin: string | undefined): boolean {
  if (!origin) return false;
  const normalized = origin.toLowerCase();
  return channel.allowedOrigins.some((allowed) => allowed.trim().replace(/\/+$/, '').toLowerCase() === normalized);
}

export async function createSession(db: Db, channel: LivechatChannel, input: { name?: string; email?: string }) {
  const token = randomBytes(32).toString('base64url');
  const contactId = newId();
  await db.transaction(async (tx) => {
    await insertContacts(tx, channel.workspaceId, [
      { id: contactId, workspaceId: channel.workspaceId, name: input.name ?? `Visitor ${contactId.slice(-6)}`, email: input.email ?? null },
    ]);
    await tx.insert(contactIdentities).values({
      workspaceId: channel.workspaceId,
      channelId: channel.id,
      externalId: hashToken(token),
      contactId,
    });
  });
  return { visitorToken: token, contactId, conversationId: null, greeting: channel.greeting };
}

/** The visitor whose token this is, on this channel: a token of another channel (or none) is a 401. */
export async function authenticateVisitor(db: Db, channel: LivechatChannel, token: string | undefined): Promise<Visitor> {
  if (!token) throw errors.unauthorized();
  const [identity] = await db
    .select({ contactId: contactIdentities.contactId })
    .from(contactIdentities)
    .where(
      and(
        eq(contactIdentities.workspaceId, channel.workspaceId),
        eq(contactIdentities.channelId, channel.id),
        eq(contactIdentities.externalId, hashToken(token)),
      ),
    )
    .limit(1);
  if (!identity) throw errors.unauthorized();
  return { channel, contactId: identity.contactId };
}

/** What the visitor sees of a message: the agents' user ids are internal. */
export function visitorMessage(record: Record<string, unknown>): MessageRecord {
  const r = record as MessageRecord;
  return {
    id: r.id,
    conversationId: r.conversationId,
    direction: r.direction,
    type: r.type,
    body: r.body ?? null,
    status: r.status,
    error: r.error ?? null,
    senderUserId: null,
    createdAt: r.createdAt,
  };
}

export async function sendVisitorMessage(db: Db, visitor: Visitor, body: string): Promise<MessageRecord> {
  const { channel, contactId } = visitor;
  const workspaceId = channel.workspaceId;
  return db.transaction(async (tx) => {
    const { conversation } = await openConversation(tx, workspaceId, channel.id, contactId);
    const now = new Date();
    const [row] = await tx
      .insert(messages)
      .values({
        id: newId(),
        workspaceId,
        conversationId: conversation.id,
        channelId: channel.id,
        direction: 'inbound',
        type: 'text',
        body,
        status: 'delivered',
        createdAt: now,
        updatedAt: now,
      })
      .returning();
    const [contact] = await tx
      .update(contacts)
      .set({ lastInboundAt: now })
      .where(and(eq(contacts.workspaceId, workspaceId), eq(contacts.id, contactId)))
      .returning({ id: contacts.id, name: contacts.name, phone: contacts.phone });
    const [updated] = await tx
      .update(conversations)
      .set({
        lastInboundAt: now,
        lastMessageAt: now,
        // As for every inbound message: a snoozed conversation wakes up when the contact writes.
        status: sql`case when ${conversations.status} = 'snoozed' then 'active' else ${conversations.status} end`,
        snoozedUntil: sql`case when ${conversations.status} = 'snoozed' then null else ${conversations.snoozedUntil} end`,
        updatedAt: now,
      })
      .where(and(eq(conversations.workspaceId, workspaceId), eq(conversations.id, conversation.id)))
      .returning();
    const record = toMessageRecord(row!);
    await publishEvent(tx, { type: 'message.created', workspaceId, conversationId: conversation.id, data: record });
    if (updated && contact) {
      await publishEvent(tx, {
        type: 'conversation.updated',
        workspaceId,
        conversationId: conversation.id,
        data: toConversationRecord({ conversation: updated, channelType: 'livechat', contact }),
      });
    }
    return visitorMessage(record);
  });
}

/** The visitor's messages on the channel (every conversation of theirs), oldest first; `before` a message id. */
export async function listVisitorMessages(
  db: Db,
  visitor: Visitor,
  query: { before?: string; limit: number },
): Promise<{ messages: MessageRecord[] }> {
  const { channel, contactId } = visitor;
  const workspaceId = channel.workspaceId;
  const mine = and(
    eq(messages.workspaceId, workspaceId),
    eq(conversations.workspaceId, workspaceId),
    eq(conversations.channelId, channel.id),
    eq(conversations.contactId, contactId),
  );
  let cursor: ReturnType<typeof and> | undefined;
  if (query.before) {
    const [anchor] = await db
      .select({ createdAt: messages.createdAt, id: messages.id })
      .from(messages)
      .innerJoin(conversations, eq(conversations.id, messages.conversationId))
      .where(and(mine, eq(messages.id, query.before)))
      .limit(1);
    if (!anchor) throw errors.validation([{ path: 'before', message: 'No such message in this conversation' }]);
    cursor = or(lt(messages.createdAt, anchor.createdAt), and(eq(messages.createdAt, anchor.createdAt), lt(messages.id, anchor.id)));
  }
  const rows = await db
    .select({ message: messages })
    .from(messages)
    .innerJoin(conversations, eq(conversations.id, messages.conversationId))
    .where(cursor ? and(mine, cursor) : mine)
    .orderBy(desc(messages.createdAt), desc(messages.id))
    .limit(query.limit);
  return { messages: rows.reverse().map((r) => visitorMessage(toMessageRecord(r.message))) };
}

