// The knowledge base's jobs: keeping the search index in step with articles and source items.
import { z } from 'zod';
import { DOCUMENT_TYPES } from '../../db/schema/index.js';
import { defineJob, type JobContext } from '../../jobs/queue.js';
import { type DocumentRef, indexableDocuments, markIndexFailed, reconcileDocument } from './index/indexer.js';
import { syncSourceJob } from './sources/jobs.js';

const documentRef = z.object({
  workspaceId: z.uuid(),
  documentType: z.enum(DOCUMENT_TYPES),
  documentId: z.uuid(),
});

async function reconcile(ref: DocumentRef, { db, log, finalAttempt }: JobContext): Promise<void> {
  try {
    const outcome = await reconcileDocument(db, ref);
    log.debug({ ...ref, outcome }, 'index reconciled');
  } catch (error) {
    if (finalAttempt) await markIndexFailed(db, ref, error instanceof Error ? error.message : String(error));
    throw error;
  }
}

const indexPolicy = {
  payload: documentRef,
  retry: { limit: 5, delaySeconds: 2 },
  timeoutSeconds: 120,
  // One waiting job per document is enough: the handler indexes the document as it is when the job runs.
  singletonKey: (ref: DocumentRef) => `${ref.documentType}:${ref.documentId}`,
  handle: reconcile,
};

/** Publish, edit of a published article, or a new or changed source item: (re)build its chunks. */
export const indexDocument = defineJob<DocumentRef>({ name: 'content-index', ...indexPolicy });

/** Unpublish or delete: take the document out of the index (already hidden by the write itself). */
export const unindexDocument = defineJob<DocumentRef>({ name: 'content-unindex', ...indexPolicy });

/** After a language change: rebuild every document that may be found, one at a time, with the new stemming. */
export const reindexWorkspace = defineJob<{ workspaceId: string }>({
  name: 'content-reindex-workspace',
  payload: z.object({ workspaceId: z.uuid() }),
  retry: { limit: 3, delaySeconds: 30 },
  timeoutSeconds: 3600,
  singletonKey: ({ workspaceId }) => workspaceId,
  handle: async ({ workspaceId }, { db, log }) => {
    let count = 0;
    for await (const ref of indexableDocuments(db, workspaceId)) {
      await reconcileDocument(db, ref);
      count++;
    }
    log.info({ workspaceId, count }, 'workspace reindexed');
  },
});

export const contentJobs = [indexDocument, unindexDocument, reindexWorkspace, syncSourceJob];
