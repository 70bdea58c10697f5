// The inbox: contacts (with tags and static groups), channels, conversations and their messages.
import { sql } from 'drizzle-orm';
import {
  bigint,
  index,
  jsonb,
  pgTable,
  primaryKey,
  text,
  timestamp,
  uniqueIndex,
  uuid,
} from 'drizzle-orm/pg-core';
import { timestamps } from './columns.js';
import { users } from './auth.js';
import { workspaceId } from './tenancy.js';

export const CHANNEL_TYPES = ['whatsapp', 'messenger', 'instagram', 'livechat'] as const;
export const CONVERSATION_STATUSES = ['active', 'pending', 'resolved', 'snoozed'] as const;
export const MESSAGE_DIRECTIONS = ['inbound', 'outbound'] as const;
export const MESSAGE_STATUSES = ['queued', 'sent', 'delivered', 'read', 'failed'] as const;
export const IMPORT_STATUSES = ['queued', 'running', 'completed', 'failed'] as const;

export type ChannelType = (typeof CHANNEL_TYPES)[number];
export type ConversationStatus = (typeof CONVERSATION_STATUSES)[number];
export type MessageStatus = (typeof MESSAGE_STATUSES)[number];


export const contacts = pgTable(
  'contacts',
  {
    id: uuid('id').primaryKey(),
    workspaceId: workspaceId(),
    name: text('name').notNull(),
    /** E.164 (`+442079460958`), normalised with libphonenumber-js; unique per workspace. */
    phone: text('phone'),
    email: text('email'),
    /** Custom fields: a flat object of strings, numbers, booleans and nulls. */
    attributes: jsonb('attributes').$type<Record<string, unknown>>().notNull().default({}),
    lastInboundAt: timestamp('last_inbound_at', { withTimezone: true }),
    ...timestamps,
  },
  (t) => [
    uniqueIndex('contacts_workspace_phone_idx').on(t.workspaceId, t.phone).where(sql`${t.phone} is not null`),
    index('contacts_workspace_email_idx').on(t.workspaceId, sql`lower(${t.email})`),
    index('contacts_workspace_created_idx').on(t.workspaceId, t.createdAt, t.id),
  ],
);

/** Exact per-workspace totals kept in step with contacts, so an unfiltered list never counts a million rows. */
export const contactCounts = pgTable('contact_counts', {
  workspaceId: workspaceId().primaryKey(),
  total: bigint('total', { mode: 'number' }).notNull().default(0),
});

export const tags = pgTable(
  'tags',
  {
    id: uuid('id').primaryKey(),
    workspaceId: workspaceId(),
    name: text('name').notNull(),
    color: text('color'),
    ...timestamps,
  },
  (t) => [uniqueIndex('tags_workspace_name_idx').on(t.workspaceId, sql`lower(${t.name})`)],
);

export const contactTags = pgTable(
  'contact_tags',
  {
    workspaceId: workspaceId(),
    contactId: uuid('contact_id')
      .notNull()
      .references(() => contacts.id, { onDelete: 'cascade' }),
    tagId: uuid('tag_id')
      .notNull()
      .references(() => tags.id, { onDelete: 'cascade' }),
    createdAt: timestamps.createdAt,
  },
  (t) => [
    primaryKey({ columns: [t.workspaceId, t.contactId, t.tagId] }),
    index('contact_tags_tag_idx').on(t.workspaceId, t.tagId, t.contactId),
  ],
);

/** Static lists of contacts (for broadcasts and filtering). */
export const groups = pgTable(
  'contact_groups',
  {
    id: uuid('id').primaryKey(),
    workspaceId: workspaceId(),
    name: text('name').notNull(),
    description: text('description'),
    ...timestamps,
  },
  (t) => [
    uniqueIndex('contact_groups_workspace_name_idx').on(t.workspaceId, sql`lower(${t.name})`),
    index('contact_groups_workspace_created_idx').on(t.workspaceId, t.createdAt, t.id),
  ],
);

export const groupContacts = pgTable(
  'contact_group_members',
  {
    workspaceId: workspaceId(),
    groupId: uuid('group_id')
      .notNull()
      .references(() => groups.id, { onDelete: 'cascade' }),
    contactId: uuid('contact_id')
      .notNull()
      .references(() => contacts.id, { onDelete: 'cascade' }),
    createdAt: timestamps.createdAt,
  },
  (t) => [
    primaryKey({ columns: [t.workspaceId, t.groupId, t.contactId] }),
    index('contact_group_members_contact_idx').on(t.workspaceId, t.contactId),
  ],
);

/** A CSV import of contacts, processed by a job; `result` holds the counts and every rejected row's reason. */
export const contactImports = pgTable(
  'contact_imports',
  {
    id: uuid('id').primaryKey(),
    workspaceId: workspaceId(),
    status: text('status', { enum: IMPORT_STATUSES }).notNull().default('queued'),
    fileName: text('file_name'),
    csv: text('csv').notNull(),
    result: jsonb('result').$type<Record<string, unknown>>(),
    error: text('error'),
    createdByUserId: uuid('created_by_user_id').references(() => users.id, { onDelete: 'set null' }),
    ...timestamps,
    completedAt: timestamp('completed_at', { withTimezone: true }),
  },
  (t) => [index('contact_imports_workspace_created_idx').on(t.workspaceId, t.createdAt)],
);

export const channels = pgTable(
  'channels',
  {
    id: uuid('id').primaryKey(),
    workspaceId: workspaceId(),
    type: text('type', { enum: CHANNEL_TYPES }).notNull(),
    name: text('name').notNull(),
    /** Settings that may be shown (phone number id, page id, allowed origins, greeting...). */
    config: jsonb('config').$type<Record<string, unknown>>().notNull().default({}),
    /** Access token, app secret, verify token: AES-256-GCM with a key derived from AUTH_SECRET; never returned. */
    secrets: text('secrets'),
    ...timestamps,
  },
  (t) => [index('channels_workspace_created_idx').on(t.workspaceId, t.createdAt, t.id)],
);

/** How a contact is known on a channel: WhatsApp wa_id, Messenger PSID, Instagram IGSID, live-chat visitor id. */
export const contactIdentities = pgTable(
  'contact_identities',
  {
    workspaceId: workspaceId(),
    channelId: uuid('channel_id')
      .notNull()
      .references(() => channels.id, { onDelete: 'cascade' }),
    externalId: text('external_id').notNull(),
    contactId: uuid('contact_id')
      .notNull()
      .references(() => contacts.id, { onDelete: 'cascade' }),
    createdAt: timestamps.createdAt,
  },
  (t) => [
    primaryKey({ columns: [t.workspaceId, t.channelId, t.externalId] }),
    index('contact_identities_contact_idx').on(t.workspaceId, t.contactId),
  ],
);

export const conversations = pgTable(
  'conversations',
  {
    id: uuid('id').primaryKey(),
    workspaceId: workspaceId(),
    channelId: uuid('channel_id')
      .notNull()
      .references(() => channels.id, { onDelete: 'cascade' }),
    contactId: uuid('contact_id')
      .notNull()
      .references(() => contacts.id, { onDelete: 'cascade' }),
    status: text('status', { enum: CONVERSATION_STATUSES }).notNull().default('active'),
    snoozedUntil: timestamp('snoozed_until', { withTimezone: true }),
    assigneeId: uuid('assignee_id').references(() => users.id, { onDelete: 'set null' }),
    /** The contact's last inbound message on this conversation: the start of the messaging window. */
    lastInboundAt: timestamp('last_inbound_at', { withTimezone: true }),
    lastMessageAt: timestamp('last_message_at', { withTimezone: true }),
    ...timestamps,
  },
  (t) => [
    // One open conversation per contact and channel; a resolved one stays as history.
    uniqueIndex('conversations_open_idx')
      .on(t.workspaceId, t.channelId, t.contactId)
      .where(sql`${t.status} <> 'resolved'`),
    index('conversations_workspace_recent_idx').on(t.workspaceId, t.lastMessageAt, t.id),
    // The inbox's usual filters, each in list order.
    index('conversations_workspace_status_idx').on(t.workspaceId, t.status, t.lastMessageAt, t.id),
    index('conversations_workspace_assignee_idx').on(t.workspaceId, t.assigneeId, t.lastMessageAt, t.id),
    index('conversations_workspace_channel_idx').on(t.workspaceId, t.channelId, t.lastMessageAt, t.id),
    index('conversations_workspace_contact_idx').on(t.workspaceId, t.contactId),
  ],
);

/** Exact per-workspace conversation totals, as for contacts. */
export const conversationCounts = pgTable('conversation_counts', {
  workspaceId: workspaceId().primaryKey(),
  total: bigint('total', { mode: 'number' }).notNull().default(0),
});

export const messages = pgTable(
  'messages',
  {
    id: uuid('id').primaryKey(),
    workspaceId: workspaceId(),
    conversationId: uuid('conversation_id')
      .notNull()
      .references(() => conversations.id, { onDelete: 'cascade' }),
    channelId: uuid('channel_id')
      .notNull()
      .references(() => channels.id, { onDelete: 'cascade' }),
    direction: text('direction', { enum: MESSAGE_DIRECTIONS }).notNull(),
    /** `text`, or the provider's type for what it sent (image, audio, sticker...), kept as received. */
    type: text('type').notNull().default('text'),
    body: text('body'),
    status: text('status', { enum: MESSAGE_STATUSES }).notNull(),
    errorCode: text('error_code'),
    errorMessage: text('error_message'),
    senderUserId: uuid('sender_user_id').references(() => users.id, { onDelete: 'set null' }),
    /** The provider's message id (wamid, mid): inbound redeliveries and status callbacks are matched on it. */
    providerMessageId: text('provider_message_id'),
    ...timestamps,
  },
  (t) => [
    index('messages_conversation_idx').on(t.workspaceId, t.conversationId, t.createdAt, t.id),
    uniqueIndex('messages_provider_id_idx')
      .on(t.workspaceId, t.channelId, t.providerMessageId)
      .where(sql`${t.providerMessageId} is not null`),
  ],
);
