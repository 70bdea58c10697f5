import type { JobContext } from '../../jobs/queue.js';
import type { OutboundMessageRef } from './jobs.js';

export async function deliverOutboundMessage(_ref: OutboundMessageRef, _context: JobContext): Promise<void> {
  throw new Error('outbound delivery is not built yet');
}
