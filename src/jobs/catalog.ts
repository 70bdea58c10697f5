// Every job the service runs. A job type exists once here; areas define theirs next to their services.
import { deliverMail } from '../mail/jobs.js';
import { channelJobs } from '../modules/channels/jobs.js';
import { contactJobs } from '../modules/contacts/jobs.js';
import { contentJobs } from '../modules/content/jobs.js';
import { conversationJobs } from '../modules/conversations/jobs.js';
import type { Config } from '../config.js';
import { createMailTransport } from '../mail/mailer.js';
import type { AnyJob, JobServices } from './queue.js';

export const jobCatalog: readonly AnyJob[] = [deliverMail, ...contentJobs, ...contactJobs, ...channelJobs, ...conversationJobs];

/** The clients job handlers use, from this process's configuration. */
export function createJobServices(config: Config, secret: string): JobServices {
  return {
    mail: config.smtpUrl ? createMailTransport(config.smtpUrl, config.mailFrom) : undefined,
    secret,
    graphApiUrl: config.graphApiUrl,
  };
}

export function closeJobServices(services: JobServices): void {
  services.mail?.close();
}
