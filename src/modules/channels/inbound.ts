// Processing of Meta webhook deliveries (the `inbox-webhook` job): WhatsApp Cloud API changes and Messenger /
// Instagram messaging events. Idempotent: Meta redelivers, and a job may run twice. Inbound messages are matched
// on the provider's message id; status callbacks only ever move a message forward.
import { and, eq, inArray, lte, sql } from 'drizzle-orm';
import type { AnyPgColumn } from 'drizzle-orm/pg-core';
import type { Db, Tx } from '../../db/client.js';
import { channels, contactIdentities, contacts, conversations, type MessageStatus, messages } from '../../db/schema/index.js';
import { newId } from '../../ids.js';
import type { JobContext } from '../../jobs/queue.js';
import { insertContacts } from '../contacts/store.js';
import { toConversationRecord } from '../conversations/records.js';
import { openConversation } from '../conversations/store.js';
import { publishEvent } from '../events/publish.js';
import { toMessageRecord } from './message-record.js';
import { publishMessageUpdated } from './outbound.js';
import { type ChannelRow, findChannel } from './service.js';

export interface WebhookDelivery {
  channelId: string;
  workspaceId: string;
  payload: Record<string, unknown>;
}

/** A message the contact sent. */
export interface InboundMessage {
  kind: 'message';
  channel: ChannelRow;
  /** wa_id, PSID or IGSID. */
  externalId: string;
  profileName?: string;
  providerMessageId: string;
  type: string;
  body: string | null;
  sentAt: Date;
}

/** What the provider says became of a message we sent. */
export interface StatusUpdate {
  kind: 'status';
  channel: ChannelRow;
  providerMessageId: string;
  status: 'sent' | 'delivered' | 'read' | 'failed';
  error?: { code: string; message: string };
}

/** Messenger's "everything up to this time was delivered/read" for one contact. */
export interface WatermarkUpdate {
  kind: 'watermark';
  channel: ChannelRow;
  externalId: string;
  status: 'delivered' | 'read';
  upTo: Date;
}

export type InboundEvent = InboundMessage | StatusUpdate | WatermarkUpdate;

const RANK: Record<MessageStatus, number> = { queued: 0, sent: 1, delivered: 2, read: 3, failed: -1 };

/** The states a callback may move a message out of: strictly lower ones; `failed` from anything but `read`. */
export function statusesBefore(target: StatusUpdate['status']): MessageStatus[] {
  if (target === 'failed') return ['queued', 'sent', 'delivered'];
  return (['queued', 'sent', 'delivered', 'read'] as const).filter((status) => RANK[status] < RANK[target]);
}

export async function processWebhook(delivery: WebhookDelivery, context: JobContext): Promise<void> {
  const { db, log } = context;
  const channel = await findChannel(db, delivery.channelId);
  if (!channel || channel.workspaceId !== delivery.workspaceId) return; // deleted since
  const events = await parseDelivery(db, channel, delivery.payload, log);
  let unmatched = 0;
  for (const event of events) {
    if (event.kind === 'message') await storeInboundMessage(db, event);
    else if (event.kind === 'status') unmatched += (await applyStatus(db, event)) ? 0 : 1;
    else await applyWatermark(db, event);
  }
  // Meta's first callback can overtake the send job's commit of the provider id. While a send is in flight on the
  // channel, a callback for an unknown id is retried (the whole delivery: it is idempotent) rather than dropped.
  if (unmatched > 0 && !context.finalAttempt && (await sendInFlight(db, channel))) {
    throw new Error(`${unmatched} status callback(s) for messages not stored yet; retrying`);
  }
}

async function sendInFlight(db: Db, channel: ChannelRow): Promise<boolean> {
  const [row] = await db
    .select({ id: messages.id })
    .from(messages)
    .where(
      and(
        eq(messages.workspaceId, channel.workspaceId),
        eq(messages.channelId, channel.id),
        eq(messages.direction, 'outbound'),
        eq(messages.status, 'queued'),
      ),
    )
    .limit(1);
  return row !== undefined;
}

// ---- Parsing ------------------------------------------------------------------------------------------------

type Json = Record<string, unknown>;
const obj = (value: unknown): Json | undefined =>
  value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Json) : undefined;
const arr = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);
const str = (value: unknown): string | undefined =>
  typeof value === 'string' && value !== '' ? value : typeof value === 'number' ? String(value) : undefined;

/** A provider timestamp (seconds or milliseconds since the epoch); now when absent, unreadable or in the future. */
export function providerTime(value: unknown, unit: 's' | 'ms'): Date {
  const n = typeof value === 'string' ? Number(value) : typeof value === 'number' ? value : Number.NaN;
  const now = Date.now();
  if (!Number.isFinite(n) || n <= 0) return new Date(now);
  const ms = unit === 's' ? n * 1000 : n;
  return new Date(Math.min(ms, now));
}

async function parseDelivery(db: Db, channel: ChannelRow, payload: Json, log: JobContext['log']): Promise<InboundEvent[]> {
  const object = payload.object;
  if (object === 'whatsapp_business_account') {
    if (channel.type !== 'whatsapp') return [];
    return parseWhatsapp(db, channel, payload, log);
  }
  if (object === 'page' || object === 'instagram') {
    if (channel.type !== (object === 'page' ? 'messenger' : 'instagram')) return [];
    return parseMessaging(channel, payload);
  }
  log.info({ object }, 'webhook of an unknown object ignored');
  return [];
}

/**
 * Meta sends one app's numbers to one callback URL: a change for another number of the workspace is processed for
 * that number's channel; one for a number the workspace has not connected is ignored.
 */
async function whatsappChannelFor(db: Db, channel: ChannelRow, phoneNumberId: string | undefined): Promise<ChannelRow | undefined> {
  if (!phoneNumberId || channel.config.phoneNumberId === phoneNumberId) return channel;
  const [other] = await db
    .select()
    .from(channels)
    .where(
      and(
        eq(channels.workspaceId, channel.workspaceId),
        eq(channels.type, 'whatsapp'),
        sql`${channels.config}->>'phoneNumberId' = ${phoneNumberId}`,
      ),
    )
    .limit(1);
  return other;
}

function whatsappBody(message: Json, type: string): string | null {
  if (type === 'text') return str(obj(message.text)?.body) ?? null;
  const content = obj(message[type]);
  if (type === 'button') return str(content?.text) ?? null;
  if (type === 'interactive') {
    return str(obj(content?.button_reply)?.title) ?? str(obj(content?.list_reply)?.title) ?? null;
  }
  if (type === 'reaction') return str(content?.emoji) ?? null;
  return str(content?.caption) ?? null;
}

async function parseWhatsapp(db: Db, channel: ChannelRow, payload: Json, log: JobContext['log']): Promise<InboundEvent[]> {
  const events: InboundEvent[] = [];
  for (const entry of arr(payload.entry)) {
    for (const change of arr(obj(entry)?.changes)) {
      const value = obj(obj(change)?.value);
      if (!value) continue;
      const phoneNumberId = str(obj(value.metadata)?.phone_number_id);
      const target = await whatsappChannelFor(db, channel, phoneNumberId);
      if (!target) {
        log.info({ phoneNumberId }, 'WhatsApp change for a number the workspace has not connected ignored');
        continue;
      }
      const names = new Map<string, string>();
      for (const contact of arr(value.contacts)) {
        const waId = str(obj(contact)?.wa_id);
        const name = str(obj(obj(contact)?.profile)?.name);
        if (waId && name) names.set(waId, name);
      }
      for (const item of arr(value.messages)) {
        const message = obj(item);
        const id = str(message?.id);
        const from = str(message?.from);
        if (!message || !id || !from) continue;
        const type = str(message.type) ?? 'unknown';
        events.push({
          kind: 'message',
          channel: target,
          externalId: from,
          profileName: names.get(from),
          providerMessageId: id,
          type,
          body: whatsappBody(message, type),
          sentAt: providerTime(message.timestamp, 's'),
        });
      }
      for (const item of arr(value.statuses)) {
        const status = obj(item);
        const id = str(status?.id);
        const state = status?.status;
        if (!status || !id || (state !== 'sent' && state !== 'delivered' && state !== 'read' && state !== 'failed')) continue;
        const error = obj(arr(status.errors)[0]);
        const details = str(obj(error?.error_data)?.details);
        const text = str(error?.message) ?? str(error?.title) ?? 'The message could not be delivered';
        events.push({
          kind: 'status',
          channel: target,
          providerMessageId: id,
          status: state,
          ...(state === 'failed'
            ? {
                error: {
                  code: str(error?.code) ?? 'unknown',
                  message: details && !text.includes(details) ? `${text}: ${details}` : text,
                },
              }
            : {}),
        });
      }
    }
  }
  return events;
}

function parseMessaging(channel: ChannelRow, payload: Json): InboundEvent[] {
  const events: InboundEvent[] = [];
  for (const entry of arr(payload.entry)) {
    for (const item of arr(obj(entry)?.messaging)) {
      const event = obj(item);
      const senderId = str(obj(event?.sender)?.id);
      if (!event || !senderId) continue;
      const message = obj(event.message);
      if (message) {
        const mid = str(message.mid);
        if (!mid || message.is_echo === true || message.is_deleted === true) continue;
        const attachment = obj(arr(message.attachments)[0]);
        const text = str(message.text);
        events.push({
          kind: 'message',
          channel,
          externalId: senderId,
          providerMessageId: mid,
          type: text !== undefined ? 'text' : (str(attachment?.type) ?? 'unknown'),
          body: text ?? null,
          sentAt: providerTime(event.timestamp, 'ms'),
        });
        continue;
      }
      const delivery = obj(event.delivery);
      if (delivery) {
        for (const mid of arr(delivery.mids)) {
          const id = str(mid);
          if (id) events.push({ kind: 'status', channel, providerMessageId: id, status: 'delivered' });
        }
        if (delivery.watermark !== undefined) {
          events.push({ kind: 'watermark', channel, externalId: senderId, status: 'delivered', upTo: providerTime(delivery.watermark, 'ms') });
        }
        continue;
      }
      const read = obj(event.read);
      if (read) {
        const mid = str(read.mid);
        if (mid) events.push({ kind: 'status', channel, providerMessageId: mid, status: 'read' });
        if (read.watermark !== undefined) {
          events.push({ kind: 'watermark', channel, externalId: senderId, status: 'read', upTo: providerTime(read.watermark, 'ms') });
        }
      }
    }
  }
  return events;
}

// ---- Inbound messages ---------------------------------------------------------------------------------------

const laterOf = (column: AnyPgColumn, at: Date) =>
  sql`greatest(coalesce(${column}, ${at.toISOString()}::timestamptz), ${at.toISOString()}::timestamptz)`;

/** Finds or creates the contact and its open conversation, stores the message (once), moves the window. */
export async function storeInboundMessage(db: Db, event: InboundMessage): Promise<void> {
  const { channel } = event;
  const workspaceId = channel.workspaceId;
  await db.transaction(async (tx) => {
    // One sender of one channel at a time: concurrent deliveries for a new sender create one contact.
    await tx.execute(sql`select pg_advisory_xact_lock(hashtext(${`inbound:${channel.id}:${event.externalId}`}))`);
    const [seen] = await tx
      .select({ id: messages.id })
      .from(messages)
      .where(
        and(
          eq(messages.workspaceId, workspaceId),
          eq(messages.channelId, channel.id),
          eq(messages.providerMessageId, event.providerMessageId),
        ),
      );
    if (seen) return; // a redelivery

    const contactId = await findOrCreateContact(tx, event);
    const { conversation } = await openConversation(tx, workspaceId, channel.id, contactId);
    const [message] = await tx
      .insert(messages)
      .values({
        id: newId(),
        workspaceId,
        conversationId: conversation.id,
        channelId: channel.id,
        direction: 'inbound',
        type: event.type,
        body: event.body,
        status: 'delivered',
        providerMessageId: event.providerMessageId,
        createdAt: event.sentAt,
        updatedAt: new Date(),
      })
      .onConflictDoNothing()
      .returning();
    if (!message) return;

    const [contact] = await tx
      .update(contacts)
      .set({ lastInboundAt: laterOf(contacts.lastInboundAt, event.sentAt) })
      .where(and(eq(contacts.workspaceId, workspaceId), eq(contacts.id, contactId)))
      .returning({ id: contacts.id, name: contacts.name, phone: contacts.phone });
    const [updated] = await tx
      .update(conversations)
      .set({
        lastInboundAt: laterOf(conversations.lastInboundAt, event.sentAt),
        lastMessageAt: laterOf(conversations.lastMessageAt, event.sentAt),
        // A snoozed conversation wakes up when the contact writes.
        status: sql`case when ${conversations.status} = 'snoozed' then 'active' else ${conversations.status} end`,
        snoozedUntil: sql`case when ${conversations.status} = 'snoozed' then null else ${conversations.snoozedUntil} end`,
        updatedAt: new Date(),
      })
      .where(and(eq(conversations.workspaceId, workspaceId), eq(conversations.id, conversation.id)))
      .returning();

    await publishEvent(tx, {
      type: 'message.created',
      workspaceId,
      conversationId: conversation.id,
      data: toMessageRecord(message),
    });
    if (updated && contact) {
      await publishEvent(tx, {
        type: 'conversation.updated',
        workspaceId,
        conversationId: conversation.id,
        data: toConversationRecord({ conversation: updated, channelType: channel.type, contact }),
      });
    }
  });
}

/** By identity on the channel; on WhatsApp then by phone (`+<wa_id>`); else a new contact. The identity is recorded. */
async function findOrCreateContact(tx: Tx, event: InboundMessage): Promise<string> {
  const { channel, externalId } = event;
  const workspaceId = channel.workspaceId;
  const [identity] = await tx
    .select({ contactId: contactIdentities.contactId })
    .from(contactIdentities)
    .where(
      and(
        eq(contactIdentities.workspaceId, workspaceId),
        eq(contactIdentities.channelId, channel.id),
        eq(contactIdentities.externalId, externalId),
      ),
    );
  if (identity) return identity.contactId;

  const phone = channel.type === 'whatsapp' && /^\d{6,15}$/.test(externalId) ? `+${externalId}` : null;
  let contactId: string | undefined;
  if (phone) {
    const [byPhone] = await tx
      .select({ id: contacts.id })
      .from(contacts)
      .where(and(eq(contacts.workspaceId, workspaceId), eq(contacts.phone, phone)));
    contactId = byPhone?.id;
  }
  if (!contactId) {
    const name = event.profileName?.trim().slice(0, 200) || phone || externalId;
    // A savepoint: the phone may be taken by a contact created meanwhile through the API.
    contactId = await tx
      .transaction(async (savepoint) => {
        const now = new Date();
        const [created] = await insertContacts(savepoint, workspaceId, [
          { id: newId(), workspaceId, name, phone, createdAt: now, updatedAt: now },
        ]);
        return created!.id;
      })
      .catch(async (error) => {
        if (!phone || !isUniqueViolation(error)) throw error;
        const [byPhone] = await tx
          .select({ id: contacts.id })
          .from(contacts)
          .where(and(eq(contacts.workspaceId, workspaceId), eq(contacts.phone, phone)));
        if (!byPhone) throw error;
        return byPhone.id;
      });
  }
  await tx
    .insert(contactIdentities)
    .values({ workspaceId, channelId: channel.id, externalId, contactId })
    .onConflictDoNothing();
  return contactId;
}

function isUniqueViolation(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    if ((e as { code?: unknown }).code === '23505') return true;
  }
  return false;
}

// ---- Status callbacks ---------------------------------------------------------------------------------------

/** Applies a callback; false when no message of the channel has the provider id (yet). */
export async function applyStatus(db: Db, event: StatusUpdate): Promise<boolean> {
  const { channel } = event;
  return db.transaction(async (tx) => {
    const updated = await tx
      .update(messages)
      .set({
        status: event.status,
        ...(event.status === 'failed' ? { errorCode: event.error?.code ?? 'unknown', errorMessage: event.error?.message ?? null } : {}),
        updatedAt: new Date(),
      })
      .where(
        and(
          eq(messages.workspaceId, channel.workspaceId),
          eq(messages.channelId, channel.id),
          eq(messages.providerMessageId, event.providerMessageId),
          eq(messages.direction, 'outbound'),
          inArray(messages.status, statusesBefore(event.status)),
        ),
      )
      .returning();
    for (const row of updated) await publishMessageUpdated(tx, row);
    if (updated.length > 0) return true;
    const [known] = await tx
      .select({ id: messages.id })
      .from(messages)
      .where(
        and(
          eq(messages.workspaceId, channel.workspaceId),
          eq(messages.channelId, channel.id),
          eq(messages.providerMessageId, event.providerMessageId),
        ),
      )
      .limit(1);
    return known !== undefined;
  });
}

/** Every outbound message to the contact on the channel sent up to the watermark moves forward. */
async function applyWatermark(db: Db, event: WatermarkUpdate): Promise<void> {
  const { channel } = event;
  await db.transaction(async (tx) => {
    const [identity] = await tx
      .select({ contactId: contactIdentities.contactId })
      .from(contactIdentities)
      .where(
        and(
          eq(contactIdentities.workspaceId, channel.workspaceId),
          eq(contactIdentities.channelId, channel.id),
          eq(contactIdentities.externalId, event.externalId),
        ),
      );
    if (!identity) return;
    const ofContact = tx
      .select({ id: conversations.id })
      .from(conversations)
      .where(
        and(
          eq(conversations.workspaceId, channel.workspaceId),
          eq(conversations.channelId, channel.id),
          eq(conversations.contactId, identity.contactId),
        ),
      );
    const updated = await tx
      .update(messages)
      .set({ status: event.status, updatedAt: new Date() })
      .where(
        and(
          eq(messages.workspaceId, channel.workspaceId),
          inArray(messages.conversationId, ofContact),
          eq(messages.direction, 'outbound'),
          // Only messages the provider has accepted: a queued one is not on its way yet.
          inArray(messages.status, statusesBefore(event.status).filter((status) => status !== 'queued')),
          lte(messages.createdAt, event.upTo),
        ),
      )
      .returning();
    for (const row of updated) await publishMessageUpdated(tx, row);
  });
}
