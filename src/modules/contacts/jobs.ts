// Jobs of the contacts area.
import type { AnyJob } from '../../jobs/queue.js';

export const contactJobs: AnyJob[] = [];
