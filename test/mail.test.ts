import { eq } from 'drizzle-orm';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mailOutbox } from '../src/db/schema/index.js';
import { Client, createTestApp, eventually, signUp, type TestApp } from './helpers.js';

type Received = { from: string; to: string[]; data: string };

/** A real SMTP server on loopback that keeps what it receives. */
async function startSmtp(): Promise<{ url: string; received: Received[]; close: () => Promise<void> }> {
  const received: Received[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        received.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((r) => r.address),
          data: Buffer.concat(chunks).toString('utf8'),
        });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.server.address() as { port: number };
  return { url: `smtp://127.0.0.1:${port}`, received, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

describe('mail over SMTP', () => {
  let smtp: Awaited<ReturnType<typeof startSmtp>>;
  let t: TestApp;
  beforeAll(async () => {
    smtp = await startSmtp();
    t = await createTestApp({ SMTP_URL: smtp.url, MAIL_FROM: 'CommOps <no-reply@example.test>' });
  });
  afterAll(async () => {
    await t.close();
    await smtp.close();
  });

  it('delivers the reset link to the SMTP server and records it as sent', async () => {
    const { user } = await signUp(t.app);
    const res = await new Client(t.app).post('/api/auth/forget-password', { email: user.email });
    expect(res.status).toBe(200);
    const mail = await eventually(async () => smtp.received.find((m) => m.to.includes(user.email)), 10_000, 'mail received');
    expect(mail!.from).toBe('no-reply@example.test');
    expect(mail!.data.replace(/=\r?\n/g, '')).toMatch(/http:\/\/app\.test\/reset-password\?token=/);
    const row = await eventually(async () => {
      const [found] = await t.app.services.database.db.select().from(mailOutbox).where(eq(mailOutbox.to, user.email));
      return found?.status === 'sent' && found;
    });
    expect(row).toMatchObject({ status: 'sent', attempts: 1, lastError: null });
  });

  it('delivers invitations the same way', async () => {
    const { client } = await signUp(t.app);
    const email = `invitee-${Date.now()}@example.test`;
    expect((await client.post('/api/invitations', { email, role: 'agent' })).status).toBe(201);
    const mail = await eventually(async () => smtp.received.find((m) => m.to.includes(email)), 10_000, 'mail received');
    expect(mail!.data.replace(/=\r?\n/g, '')).toMatch(/http:\/\/app\.test\/invite\?token=/);
  });
});
