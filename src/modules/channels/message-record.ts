// A message as the REST API and the event stream show it (shared by channels, conversations and live chat).
import { z } from 'zod';
import type { messages } from '../../db/schema/index.js';
import { iso } from '../../http/api.js';

export type MessageRow = typeof messages.$inferSelect;

export const messageRecord = z
  .object({
    id: z.uuid(),
    conversationId: z.uuid(),
    direction: z.enum(['inbound', 'outbound']),
    type: z.string().describe('`text`, or the provider type of what the contact sent (image, audio, sticker...)'),
    body: z.string().nullable(),
    status: z.enum(['queued', 'sent', 'delivered', 'read', 'failed']),
    error: z
      .object({ code: z.string(), message: z.string() })
      .nullable()
      .describe("The provider's error code and text when the message failed"),
    senderUserId: z.uuid().nullable(),
    createdAt: z.string(),
  })
  .meta({ id: 'Message' });
export type MessageRecord = z.infer<typeof messageRecord>;

export function toMessageRecord(row: MessageRow): MessageRecord {
  return {
    id: row.id,
    conversationId: row.conversationId,
    direction: row.direction,
    type: row.type,
    body: row.body,
    status: row.status,
    error:
      row.status === 'failed' || row.errorCode !== null
        ? { code: row.errorCode ?? 'unknown', message: row.errorMessage ?? 'The message could not be delivered' }
        : null,
    senderUserId: row.senderUserId,
    createdAt: iso(row.createdAt),
  };
}
