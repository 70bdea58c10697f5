// Every job the service runs. A job type exists once here; areas define theirs next to their services.
import { deliverMail } from '../mail/jobs.js';
import { contentJobs } from '../modules/content/jobs.js';
import type { Config } from '../config.js';
import { createMailTransport } from '../mail/mailer.js';
import type { AnyJob, JobServices } from './queue.js';

export const jobCatalog: readonly AnyJob[] = [deliverMail, ...contentJobs];

/** The clients job handlers use, from this process's configuration. */
export function createJobServices(config: Config): JobServices {
  return { mail: config.smtpUrl ? createMailTransport(config.smtpUrl, config.mailFrom) : undefined };
}

export function closeJobServices(services: JobServices): void {
  services.mail?.close();
}
