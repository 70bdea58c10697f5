// Rows to API records: conversations (with their messaging window and abridged contact) and messages.
import type { ChannelType, contacts, conversations } from '../../db/schema/index.js';
import { iso } from '../../http/api.js';
import type { ConversationRecord } from './schemas.js';

export const HOUR_MS = 60 * 60 * 1000;
/** WhatsApp, Messenger and Instagram: free-form messages within 24 hours of the contact's last inbound message. */
export const STANDARD_WINDOW_MS = 24 * HOUR_MS;
/** Messenger and Instagram: a human agent's reply (HUMAN_AGENT tag) within 7 days of it. */
export const HUMAN_AGENT_WINDOW_MS = 7 * 24 * HOUR_MS;

type ConversationRow = typeof conversations.$inferSelect;
type ContactRow = typeof contacts.$inferSelect;

export interface MessagingWindow {
  open: boolean;
  closesAt: string | null;
  humanAgentClosesAt: string | null;
}

/**
 * The channel's messaging window as of `now`. A conversation without an inbound message has no window on the Meta
 * channels (closed, `closesAt: null`); live chat is always open.
 */
export function messagingWindow(channelType: ChannelType, lastInboundAt: Date | null, now = new Date()): MessagingWindow {
  if (channelType === 'livechat') return { open: true, closesAt: null, humanAgentClosesAt: null };
  const social = channelType === 'messenger' || channelType === 'instagram';
  if (!lastInboundAt) return { open: false, closesAt: null, humanAgentClosesAt: null };
  const closesAt = new Date(lastInboundAt.getTime() + STANDARD_WINDOW_MS);
  return {
    open: now.getTime() < closesAt.getTime(),
    closesAt: iso(closesAt),
    humanAgentClosesAt: social ? iso(new Date(lastInboundAt.getTime() + HUMAN_AGENT_WINDOW_MS)) : null,
  };
}

/** Whether an outbound free-form message may be sent now under the channel's policy. */
export function maySend(channelType: ChannelType, lastInboundAt: Date | null, humanAgent: boolean, now = new Date()): boolean {
  if (channelType === 'livechat') return true;
  if (!lastInboundAt) return false;
  const social = channelType === 'messenger' || channelType === 'instagram';
  const span = social && humanAgent ? HUMAN_AGENT_WINDOW_MS : STANDARD_WINDOW_MS;
  return now.getTime() < lastInboundAt.getTime() + span;
}

export interface ConversationJoinRow {
  conversation: ConversationRow;
  channelType: ChannelType;
  contact: Pick<ContactRow, 'id' | 'name' | 'phone'>;
}

export function toConversationRecord(row: ConversationJoinRow, now = new Date()): ConversationRecord {
  const c = row.conversation;
  return {
    id: c.id,
    contactId: c.contactId,
    channelId: c.channelId,
    channelType: row.channelType,
    status: c.status,
    snoozedUntil: c.snoozedUntil ? iso(c.snoozedUntil) : null,
    assigneeId: c.assigneeId,
    lastMessageAt: c.lastMessageAt ? iso(c.lastMessageAt) : null,
    lastInboundAt: c.lastInboundAt ? iso(c.lastInboundAt) : null,
    window: messagingWindow(row.channelType, c.lastInboundAt, now),
    contact: { id: row.contact.id, name: row.contact.name, phone: row.contact.phone },
    createdAt: iso(c.createdAt),
    updatedAt: iso(c.updatedAt),
  };
}
