// Every job the service runs. A job type exists once here; areas define theirs next to their services.
import { contentJobs } from '../modules/content/jobs.js';
import type { AnyJob } from './queue.js';

export const jobCatalog: readonly AnyJob[] = [...contentJobs];
