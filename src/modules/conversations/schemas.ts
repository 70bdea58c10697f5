import { z } from 'zod';
import { CHANNEL_TYPES, CONVERSATION_STATUSES } from '../../db/schema/index.js';
import { pageQuery, paginated } from '../../http/pagination.js';
import { type MessageRecord, messageRecord } from '../channels/message-record.js';

export const MESSAGE_BODY_MAX_LENGTH = 4096;
export const MESSAGES_DEFAULT_LIMIT = 50;
export const MESSAGES_MAX_LIMIT = 200;

const status = z
  .enum(CONVERSATION_STATUSES)
  .describe('`active`, `pending`, `resolved` or `snoozed` (until `snoozedUntil`)');
const channelType = z.enum(CHANNEL_TYPES);

export const messagingWindow = z
  .object({
    open: z
      .boolean()
      .describe(
        'Whether a free-form message may be sent now. WhatsApp, Messenger, Instagram: within 24 hours of the ' +
          "contact's last inbound message on this conversation (never open before one); live chat: always",
      ),
    closesAt: z
      .string()
      .nullable()
      .describe('When the 24-hour window closes (or closed): lastInboundAt + 24 h; null on live chat and before any inbound message'),
    humanAgentClosesAt: z
      .string()
      .nullable()
      .describe(
        'Messenger and Instagram only: lastInboundAt + 7 days, the end of the window for a message sent with ' +
          '`humanAgent: true` (the HUMAN_AGENT tag); null on other channels and before any inbound message',
      ),
  })
  .describe('The messaging window of the channel policy, as of the response');

export const conversation = z
  .object({
    id: z.uuid(),
    contactId: z.uuid(),
    channelId: z.uuid(),
    channelType,
    status,
    snoozedUntil: z.string().nullable().describe('Set while `snoozed`; null otherwise'),
    assigneeId: z.uuid().nullable().describe('The workspace member it is assigned to; null if unassigned'),
    lastMessageAt: z.string().nullable().describe('Its latest message in either direction; null before any'),
    lastInboundAt: z.string().nullable().describe("The contact's latest inbound message on it; null before any"),
    window: messagingWindow,
    contact: z
      .object({ id: z.uuid(), name: z.string(), phone: z.string().nullable() })
      .describe('The contact, abridged (see /api/contacts/{contactId} for the full record)'),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'Conversation' });
export type ConversationRecord = z.infer<typeof conversation>;

export const conversationPage = paginated(conversation);

export const conversationListQuery = pageQuery.extend({
  status: status.optional(),
  channelId: z.uuid().optional().describe('Only conversations on this channel'),
  assigneeId: z.uuid().optional().describe('Only conversations assigned to this user'),
  contactId: z.uuid().optional().describe('Only conversations with this contact'),
});
export type ConversationListQuery = z.infer<typeof conversationListQuery>;

export const conversationParams = z.object({ id: z.uuid() });

export const updateConversationBody = z
  .strictObject({
    status: status.optional(),
    snoozedUntil: z.iso
      .datetime({ offset: true })
      .nullable()
      .optional()
      .describe('Required (in the future) when the status is or becomes `snoozed`; any other status clears it'),
    assigneeId: z
      .uuid()
      .nullable()
      .optional()
      .describe('A member of the workspace (or an Org Owner of its organization); `null` unassigns'),
  })
  .refine((value) => Object.values(value).some((field) => field !== undefined), {
    message: 'At least one field is required',
  });
export type UpdateConversationInput = z.infer<typeof updateConversationBody>;

/** The message record is shared with the channels and live chat (channels/message-record.ts). */
export const message = messageRecord;
export type { MessageRecord };

export const messageList = z.object({ messages: z.array(message).describe('Oldest first') });

export const messageListQuery = z.object({
  before: z
    .uuid()
    .optional()
    .describe('A message id of this conversation: only messages strictly older than it (for loading a long history backwards)'),
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .max(MESSAGES_MAX_LIMIT)
    .default(MESSAGES_DEFAULT_LIMIT)
    .describe(`The newest this many messages (before \`before\`), 1–${MESSAGES_MAX_LIMIT}, default ${MESSAGES_DEFAULT_LIMIT}`),
});
export type MessageListQuery = z.infer<typeof messageListQuery>;

export const sendMessageBody = z.strictObject({
  body: z.string().min(1).max(MESSAGE_BODY_MAX_LENGTH).describe(`The text, 1 to ${MESSAGE_BODY_MAX_LENGTH} characters`),
  humanAgent: z
    .boolean()
    .optional()
    .describe(
      'Messenger and Instagram: a human agent\'s reply (HUMAN_AGENT tag), allowed up to 7 days after the contact\'s last ' +
        'inbound message instead of 24 hours. Ignored on WhatsApp and live chat',
    ),
});
export type SendMessageInput = z.infer<typeof sendMessageBody>;
