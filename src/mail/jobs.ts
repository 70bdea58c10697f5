// Delivery of one outbox message over SMTP, retried with backoff; at least once (a crash between the SMTP
// server's acceptance and the status update sends it again).
import { eq, sql } from 'drizzle-orm';
import { z } from 'zod';
import { mailOutbox } from '../db/schema/index.js';
import { defineJob } from '../jobs/queue.js';

export const deliverMail = defineJob<{ mailId: string }>({
  name: 'mail-deliver',
  payload: z.object({ mailId: z.uuid() }),
  retry: { limit: 5, delaySeconds: 5 },
  timeoutSeconds: 60,
  singletonKey: ({ mailId }) => mailId,
  handle: async ({ mailId }, { db, log, services, finalAttempt }) => {
    const [mail] = await db.select().from(mailOutbox).where(eq(mailOutbox.id, mailId));
    if (mail?.status !== 'pending') return;
    try {
      if (!services.mail) throw new Error('this process has no SMTP_URL; the message waits for one that has');
      await services.mail.deliver({ to: mail.to, subject: mail.subject, text: mail.text });
    } catch (error) {
      const lastError = error instanceof Error ? error.message : String(error);
      await db
        .update(mailOutbox)
        .set({ status: finalAttempt ? 'failed' : 'pending', attempts: sql`${mailOutbox.attempts} + 1`, lastError })
        .where(eq(mailOutbox.id, mailId));
      throw error;
    }
    await db
      .update(mailOutbox)
      .set({ status: 'sent', attempts: sql`${mailOutbox.attempts} + 1`, sentAt: new Date(), lastError: null })
      .where(eq(mailOutbox.id, mailId));
    log.info({ mailId, to: mail.to }, 'mail sent');
  },
});
