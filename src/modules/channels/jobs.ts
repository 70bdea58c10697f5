// Jobs of the channels: outbound sends to the providers, inbound webhook processing.
import { z } from 'zod';
import { type AnyJob, defineJob } from '../../jobs/queue.js';
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

export const channelJobs: AnyJob[] = [sendOutboundMessage];
