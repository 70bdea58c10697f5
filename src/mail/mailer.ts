import { eq, sql } from 'drizzle-orm';
import nodemailer from 'nodemailer';
import type { FastifyBaseLogger } from 'fastify';
import type { Db } from '../db/client.js';
import { mailOutbox } from '../db/schema/index.js';
import { newId } from '../ids.js';

export interface MailMessage {
  to: string;
  subject: string;
  text: string;
}

export interface Mailer {
  /** Records the message in the outbox and, with SMTP configured, delivers it in the background. */
  send(message: MailMessage): Promise<void>;
  /** Resolves when every delivery started so far has finished (shutdown, tests). */
  idle(): Promise<void>;
  close(): Promise<void>;
}

const DELIVERY_ATTEMPTS = 3;

export function createMailer(options: {
  db: Db;
  smtpUrl: string | undefined;
  from: string;
  log: FastifyBaseLogger;
}): Mailer {
  const { db, log } = options;
  const transport = options.smtpUrl ? nodemailer.createTransport(options.smtpUrl) : undefined;
  const inFlight = new Set<Promise<void>>();

  async function deliver(id: string, message: MailMessage): Promise<void> {
    for (let attempt = 1; attempt <= DELIVERY_ATTEMPTS; attempt++) {
      try {
        await transport!.sendMail({ from: options.from, ...message });
        await db
          .update(mailOutbox)
          .set({ status: 'sent', attempts: attempt, sentAt: new Date(), lastError: null })
          .where(eq(mailOutbox.id, id));
        log.info({ mailId: id, to: message.to }, 'mail sent');
        return;
      } catch (error) {
        const lastError = error instanceof Error ? error.message : String(error);
        log.warn({ mailId: id, attempt, err: lastError }, 'mail delivery failed');
        const failed = attempt === DELIVERY_ATTEMPTS;
        await db
          .update(mailOutbox)
          .set({ status: failed ? 'failed' : 'pending', attempts: sql`${mailOutbox.attempts} + 1`, lastError })
          .where(eq(mailOutbox.id, id))
          .catch(() => {});
        if (!failed) await new Promise((resolve) => setTimeout(resolve, 500 * 2 ** attempt));
      }
    }
  }

  return {
    async send(message) {
      const id = newId();
      await db.insert(mailOutbox).values({ id, ...message, status: transport ? 'pending' : 'logged' });
      if (!transport) {
        log.info({ mailId: id, to: message.to, subject: message.subject, text: message.text }, 'mail logged (no SMTP_URL)');
        return;
      }
      const delivery = deliver(id, message).finally(() => inFlight.delete(delivery));
      inFlight.add(delivery);
    },
    async idle() {
      await Promise.allSettled([...inFlight]);
    },
    async close() {
      await Promise.allSettled([...inFlight]);
      transport?.close();
    },
  };
}
