// Cross-cutting state shared by every process: rate-limit and lockout counters, outgoing mail.
import { index, integer, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core';

/** Fixed-window counters of rate-limiter-flexible (RateLimiterDrizzle): one row per tier and client key. */
export const rateLimitCounters = pgTable(
  'rate_limit_counters',
  {
    key: text('key').primaryKey(),
    points: integer('points').notNull().default(0),
    expire: timestamp('expire', { withTimezone: true }),
  },
  (t) => [index('rate_limit_counters_expire_idx').on(t.expire)],
);

export const MAIL_STATUSES = ['pending', 'sent', 'failed', 'logged'] as const;

/** Every e-mail the service sends, with its delivery state (`logged` when no SMTP server is configured). */
export const mailOutbox = pgTable(
  'mail_outbox',
  {
    id: uuid('id').primaryKey(),
    to: text('to').notNull(),
    subject: text('subject').notNull(),
    text: text('text').notNull(),
    status: text('status', { enum: MAIL_STATUSES }).notNull(),
    attempts: integer('attempts').notNull().default(0),
    lastError: text('last_error'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    sentAt: timestamp('sent_at', { withTimezone: true }),
  },
  (t) => [index('mail_outbox_status_idx').on(t.status, t.createdAt)],
);
