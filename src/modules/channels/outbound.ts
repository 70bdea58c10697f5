// Delivery of one queued outbound message (the `inbox-send-message` job): through the Graph API for the Meta
// channels, directly to `sent` for live chat (the visitor reads it from the conversation). Idempotent: only a
// `queued` message is sent, and only a `queued` one is moved on.
import { and, desc, eq } from 'drizzle-orm';
import type { Tx } from '../../db/client.js';
import { contactIdentities, contacts, conversations, messages } from '../../db/schema/index.js';
import type { JobContext } from '../../jobs/queue.js';
import { publishEvent } from '../events/publish.js';
import { GraphError, type SendTarget, sendText } from './graph.js';
import type { OutboundMessageRef } from './jobs.js';
import { type MessageRow, toMessageRecord } from './message-record.js';
import { type ChannelRow, channelSecrets, findChannel } from './service.js';

const DAY_MS = 24 * 60 * 60 * 1000;

export async function deliverOutboundMessage({ workspaceId, messageId }: OutboundMessageRef, context: JobContext): Promise<void> {
  const { db, services, log, finalAttempt } = context;
  const [message] = await db
    .select()
    .from(messages)
    .where(and(eq(messages.workspaceId, workspaceId), eq(messages.id, messageId)));
  if (message?.direction !== 'outbound' || message.status !== 'queued') return;
  const [conversation] = await db
    .select()
    .from(conversations)
    .where(and(eq(conversations.workspaceId, workspaceId), eq(conversations.id, message.conversationId)));
  const channel = await findChannel(db, message.channelId);
  if (!conversation || !channel || channel.workspaceId !== workspaceId) return; // deleted since: nothing to send

  if (channel.type === 'livechat') {
    await markSent(db, message, null);
    return;
  }

  let target: SendTarget;
  let accessToken: string;
  try {
    target = await resolveTarget(db, channel, conversation.contactId, conversation.lastInboundAt);
    try {
      accessToken = channelSecrets(channel, services.secret).accessToken;
    } catch {
      throw new GraphError(false, 'channel_credentials', "The channel's stored credentials cannot be read; enter them again");
    }
  } catch (error) {
    if (!(error instanceof GraphError)) throw error;
    await markFailed(db, message, error);
    return;
  }

  let providerMessageId: string | null;
  try {
    ({ providerMessageId } = await sendText(services.graphApiUrl, accessToken, target, message.body ?? ''));
  } catch (error) {
    const failure =
      error instanceof GraphError ? error : new GraphError(true, 'internal', error instanceof Error ? error.message : String(error));
    if (failure.transient && !finalAttempt) throw failure;
    await markFailed(db, message, failure);
    log.warn({ messageId, code: failure.code, transient: failure.transient }, 'outbound message failed');
    // A transient failure that used up its retries also goes to the dead-letter queue, as a record.
    if (failure.transient) throw failure;
    return;
  }
  await markSent(db, message, providerMessageId);
}

/** Where the message goes on the channel: the contact's identity there (or, on WhatsApp, their phone). */
async function resolveTarget(db: Tx, channel: ChannelRow, contactId: string, lastInboundAt: Date | null): Promise<SendTarget> {
  const [identity] = await db
    .select({ externalId: contactIdentities.externalId })
    .from(contactIdentities)
    .where(
      and(
        eq(contactIdentities.workspaceId, channel.workspaceId),
        eq(contactIdentities.channelId, channel.id),
        eq(contactIdentities.contactId, contactId),
      ),
    )
    .orderBy(desc(contactIdentities.createdAt))
    .limit(1);
  const config = channel.config as Record<string, string | undefined>;
  if (channel.type === 'whatsapp') {
    let to = identity?.externalId;
    if (!to) {
      const [contact] = await db
        .select({ phone: contacts.phone })
        .from(contacts)
        .where(and(eq(contacts.workspaceId, channel.workspaceId), eq(contacts.id, contactId)));
      to = contact?.phone?.replace(/^\+/, '') ?? undefined;
    }
    if (!to) throw new GraphError(false, 'no_recipient', 'The contact has no phone number or WhatsApp id to send to');
    return { kind: 'whatsapp', phoneNumberId: config.phoneNumberId ?? '', to };
  }
  if (!identity) {
    throw new GraphError(false, 'no_recipient', `The contact has not written to this ${channel.type} channel, so it cannot be messaged`);
  }
  const outsideDay = !lastInboundAt || Date.now() - lastInboundAt.getTime() > DAY_MS;
  return {
    kind: 'page',
    node: channel.type === 'messenger' ? (config.pageId ?? 'me') : 'me',
    recipientId: identity.externalId,
    humanAgentTag: outsideDay,
  };
}

async function markSent(db: Tx, message: MessageRow, providerMessageId: string | null): Promise<void> {
  await db.transaction(async (tx) => {
    const [updated] = await tx
      .update(messages)
      .set({ status: 'sent', providerMessageId, errorCode: null, errorMessage: null, updatedAt: new Date() })
      .where(and(eq(messages.workspaceId, message.workspaceId), eq(messages.id, message.id), eq(messages.status, 'queued')))
      .returning();
    if (updated) await publishMessageUpdated(tx, updated);
  });
}

async function markFailed(db: Tx, message: MessageRow, failure: GraphError): Promise<void> {
  await db.transaction(async (tx) => {
    const [updated] = await tx
      .update(messages)
      .set({ status: 'failed', errorCode: failure.code, errorMessage: failure.message, updatedAt: new Date() })
      .where(and(eq(messages.workspaceId, message.workspaceId), eq(messages.id, message.id), eq(messages.status, 'queued')))
      .returning();
    if (updated) await publishMessageUpdated(tx, updated);
  });
}

export async function publishMessageUpdated(tx: Tx, row: MessageRow): Promise<void> {
  await publishEvent(tx, {
    type: 'message.updated',
    workspaceId: row.workspaceId,
    conversationId: row.conversationId,
    data: toMessageRecord(row),
  });
}
