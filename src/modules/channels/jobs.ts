// Jobs of the channels: outbound sends to the providers, inbound webhook processing.
import { z } from 'zod';
import { type AnyJob, defineJob } from '../../jobs/queue.js';
import { processWebhook, type WebhookDelivery } from './inbound.js';
import { deliverOutboundMessage } from './outbound.js';

export interface OutboundMessageRef {
  workspaceId: string;
  messageId: string;
}

/** Sends one queued outbound message through its channel; transient provider errors (429, 5xx) are retried. */
export const sendOutboundMessage = defineJob<OutboundMessageRef>({
  name: 'inbox-send-message',
  payload: z.object({ workspaceId: z.uuid(), messageId: z.uuid() }),
  retry: { limit: 5, delaySeconds: 5 },
  timeoutSeconds: 60,
  singletonKey: ({ messageId }) => messageId,
  handle: deliverOutboundMessage,
});

/**
 * Processes one verified Meta webhook delivery (messages, statuses); idempotent, so a retry after a partial run
 * or a redelivery by Meta stores nothing twice.
 */
export const processInboxWebhook = defineJob<WebhookDelivery>({
  name: 'inbox-webhook',
  payload: z.object({ channelId: z.uuid(), workspaceId: z.uuid(), payload: z.record(z.string(), z.unknown()) }),
  retry: { limit: 5, delaySeconds: 2 },
  timeoutSeconds: 60,
  handle: processWebhook,
});

export const channelJobs: AnyJob[] = [sendOutboundMessage, processInboxWebhook];
