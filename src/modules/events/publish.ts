// Real-time events for inbox clients. A write publishes inside its transaction (pg_notify is delivered on commit
// and never for a rollback) to every process, which passes it to the SSE streams of that workspace (and of the
// live-chat visitor the conversation belongs to).
import { sql } from 'drizzle-orm';
import type { Tx } from '../../db/client.js';

export const EVENTS_CHANNEL = 'commops_events';

export type InboxEventType = 'message.created' | 'message.updated' | 'conversation.updated';

export interface InboxEvent {
  type: InboxEventType;
  workspaceId: string;
  /** The conversation the event concerns: live-chat visitor streams only get events of their own conversation. */
  conversationId: string;
  /** The record as the REST API returns it (message or conversation). */
  data: Record<string, unknown>;
}

/**
 * PostgreSQL caps a notification payload at 8000 bytes: a larger record is sent as a reference
 * (`{type, workspaceId, conversationId, ref: {id}}`) that the stream resolves by reading the record.
 */
export async function publishEvent(tx: Tx, event: InboxEvent): Promise<void> {
  let payload = JSON.stringify(event);
  if (Buffer.byteLength(payload) > 7900) {
    payload = JSON.stringify({ ...event, data: undefined, ref: { id: event.data.id } });
  }
  await tx.execute(sql`select pg_notify(${EVENTS_CHANNEL}, ${payload})`);
}
