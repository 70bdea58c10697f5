// The source sync job. Its handler lives in sync.ts and is loaded when a sync runs: sync.ts sends the index jobs
// of ../jobs.ts, whose catalog lists this job, and a static import would make the two modules a cycle.
import { z } from 'zod';
import { defineJob } from '../../../jobs/queue.js';

export interface SyncPayload {
  workspaceId: string;
  sourceId: string;
}

/** A sync runs at most this long per attempt before pg-boss counts it failed (and retries it). */
export const SYNC_TIMEOUT_SECONDS = 15 * 60;

/** Reads a source again: crawls a website, or re-indexes the items of a files or manual source that are not indexed. */
export const syncSourceJob = defineJob<SyncPayload>({
  name: 'content-source-sync',
  payload: z.object({ workspaceId: z.uuid(), sourceId: z.uuid() }),
  retry: { limit: 3, delaySeconds: 30 },
  timeoutSeconds: SYNC_TIMEOUT_SECONDS,
  // One waiting sync per source is enough: it reads the source as it is when it runs.
  singletonKey: (payload) => payload.sourceId,
  handle: async (payload, context) => (await import('./sync.js')).syncSource(payload, context),
});
