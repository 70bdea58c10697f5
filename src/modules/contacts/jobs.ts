// Jobs of the contacts area.
import { z } from 'zod';
import { type AnyJob, defineJob } from '../../jobs/queue.js';
import { type ImportPayload, markImportFailed, runImport } from './imports.js';

/** `POST /api/contacts/import`: processes the stored CSV in batches; a rerun resumes, a finished import is left alone. */
export const importContactsJob = defineJob<ImportPayload>({
  name: 'contacts-import',
  payload: z.object({ workspaceId: z.uuid(), importId: z.uuid() }),
  retry: { limit: 3, delaySeconds: 10 },
  timeoutSeconds: 1800,
  singletonKey: ({ importId }) => importId,
  handle: async (payload, { db, log, finalAttempt }) => {
    try {
      await runImport(db, payload);
      log.debug(payload, 'contact import processed');
    } catch (error) {
      if (finalAttempt) await markImportFailed(db, payload, 'The import could not be processed');
      throw error;
    }
  },
});

export const contactJobs: AnyJob[] = [importContactsJob];
