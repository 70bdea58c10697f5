// Outgoing mail: every message is a row of mail_outbox; with SMTP configured a delivery job is sent in the same
// transaction, so a message the caller committed is delivered even if this process dies right after.
import type { FastifyBaseLogger } from 'fastify';
import nodemailer from 'nodemailer';
import type { Db, Tx } from '../db/client.js';
import { mailOutbox } from '../db/schema/index.js';
import { newId } from '../ids.js';
import type { JobSender } from '../jobs/queue.js';
import { deliverMail } from './jobs.js';

export interface MailMessage {
  to: string;
  subject: string;
  text: string;
}

/** What delivery jobs send through: nodemailer over `SMTP_URL`, from `MAIL_FROM`. */
export interface MailTransport {
  deliver(message: MailMessage): Promise<void>;
  close(): void;
}

export function createMailTransport(smtpUrl: string, from: string): MailTransport {
  const transport = nodemailer.createTransport(smtpUrl);
  return {
    deliver: async (message) => {
      await transport.sendMail({ from, ...message });
    },
    close: () => transport.close(),
  };
}

export interface Mailer {
  /** Records the message (in `tx` when given, so it exists only if the caller's write commits) and queues delivery. */
  send(message: MailMessage, tx?: Tx): Promise<void>;
}

export function createMailer(options: { db: Db; jobs: JobSender; smtpConfigured: boolean; log: FastifyBaseLogger }): Mailer {
  const { db, jobs, smtpConfigured, log } = options;
  const record = async (tx: Tx, message: MailMessage) => {
    const id = newId();
    await tx.insert(mailOutbox).values({ id, ...message, status: smtpConfigured ? 'pending' : 'logged' });
    if (smtpConfigured) await jobs.send(tx, deliverMail, { mailId: id });
    else log.info({ mailId: id, to: message.to, subject: message.subject, text: message.text }, 'mail logged (no SMTP_URL)');
  };
  return {
    send: (message, tx) => (tx ? record(tx, message) : db.transaction((own) => record(own, message))),
  };
}
