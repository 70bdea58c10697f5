import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mailOutbox, sessions } from '../src/db/schema/index.js';
import { Client, createTestApp, PASSWORD, signUp, type TestApp, uniqueEmail } from './helpers.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => t.close());

describe('sign-up', () => {
  it('returns the user and session, sets the session cookie with its flags, and never the token', async () => {
    const client = new Client(t.app);
    const email = uniqueEmail('Ann');
    const res = await client.post('/api/auth/sign-up/email', { email, password: PASSWORD, name: 'Ann' });
    expect(res.status).toBe(200);
    expect(res.body.user).toEqual({ id: expect.any(String), email: email.toLowerCase(), name: 'Ann', emailVerified: false });
    expect(res.body.session).toEqual({ id: expect.any(String), userId: res.body.user.id, expiresAt: expect.any(String) });
    expect(res.body.session.expiresAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const days = (Date.parse(res.body.session.expiresAt) - Date.now()) / 86_400_000;
    expect(days).toBeGreaterThan(6.99);
    expect(days).toBeLessThanOrEqual(7);
    expect(JSON.stringify(res.body)).not.toContain(client.cookie!.split('.')[0]);
    const setCookie = String(res.headers['set-cookie']);
    expect(setCookie).toMatch(/^service-auth\.session_token=/);
    expect(setCookie).toContain('HttpOnly');
    expect(setCookie).toContain('Secure');
    expect(setCookie).toContain('SameSite=Lax');
    expect(setCookie).toContain('Path=/');
  });

  it('creates an organization with a Default workspace owned by the new user', async () => {
    const { client, user } = await signUp(t.app, { name: 'Bea' });
    const me = await client.get('/api/me', { workspace: null });
    expect(me.status).toBe(200);
    expect(me.body.user.id).toBe(user.id);
    expect(me.body.organizations).toEqual([
      { id: expect.any(String), name: "Bea's organization", role: 'owner', workspaces: [{ id: expect.any(String), name: 'Default', role: 'owner' }] },
    ]);
  });

  it('rejects a taken e-mail with 409, whatever its case', async () => {
    const email = uniqueEmail();
    await signUp(t.app, { email });
    const res = await new Client(t.app).post('/api/auth/sign-up/email', { email: email.toUpperCase(), password: PASSWORD, name: 'X' });
    expect(res.status).toBe(409);
    expect(res.body).toEqual({ error: expect.any(String) });
  });

  it.each([
    [{ email: 'not-an-email', password: PASSWORD, name: 'X' }, 'email'],
    [{ email: uniqueEmail(), password: 'short', name: 'X' }, 'password'],
    [{ email: uniqueEmail(), password: 'x'.repeat(129), name: 'X' }, 'password'],
    [{ email: uniqueEmail(), password: PASSWORD }, 'name'],
    [{ email: uniqueEmail(), password: PASSWORD, name: 'X', role: 'admin' }, 'role'],
  ])('answers 400 with details for %j', async (body, path) => {
    const res = await new Client(t.app).post('/api/auth/sign-up/email', body);
    expect(res.status).toBe(400);
    expect(res.body.error).toEqual(expect.any(String));
    expect(res.body.details).toContainEqual({ path, message: expect.any(String) });
  });

  it('accepts passwords of exactly 8 and 128 characters', async () => {
    for (const password of ['x'.repeat(8), 'y'.repeat(128)]) {
      const res = await new Client(t.app).post('/api/auth/sign-up/email', { email: uniqueEmail(), password, name: 'Edge' });
      expect(res.status).toBe(200);
    }
  });
});

describe('sign-in', () => {
  it('returns the user and sets a working cookie', async () => {
    const { user } = await signUp(t.app);
    const client = new Client(t.app);
    const res = await client.post('/api/auth/sign-in/email', { email: user.email, password: PASSWORD });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ user: { id: user.id, email: user.email, name: user.name, emailVerified: false } });
    expect(String(res.headers['set-cookie'])).toMatch(/^service-auth\.session_token=.*HttpOnly.*/);
    expect((await client.get('/api/me', { workspace: null })).status).toBe(200);
  });

  it('answers 401 without telling which part was wrong', async () => {
    const { user } = await signUp(t.app);
    const wrongPassword = await new Client(t.app).post('/api/auth/sign-in/email', { email: user.email, password: 'wrong password' });
    const unknownEmail = await new Client(t.app).post('/api/auth/sign-in/email', { email: uniqueEmail(), password: PASSWORD });
    expect(wrongPassword.status).toBe(401);
    expect(unknownEmail.status).toBe(401);
    expect(wrongPassword.body).toEqual(unknownEmail.body);
    expect(Object.keys(wrongPassword.body)).toEqual(['error']);
  });

  it('answers 400 with details for a malformed body', async () => {
    const res = await new Client(t.app).post('/api/auth/sign-in/email', { email: 'nope' });
    expect(res.status).toBe(400);
    expect(res.body.details.map((d: { path: string }) => d.path).sort()).toEqual(['email', 'password']);
  });
});

describe('sessions', () => {
  it('get-session reports the session; sign-out ends it', async () => {
    const { client, user } = await signUp(t.app);
    const session = await client.get('/api/auth/get-session');
    expect(session.status).toBe(200);
    expect(session.body.user.id).toBe(user.id);
    const cookie = client.cookie;
    const out = await client.post('/api/auth/sign-out');
    expect(out.status).toBe(200);
    expect(client.cookie).toBeUndefined();
    client.cookie = cookie;
    expect((await client.get('/api/me', { workspace: null })).status).toBe(401);
    expect((await client.get('/api/auth/get-session')).body).toBeNull();
  });

  it('an expired session is refused with 401', async () => {
    const { client, user } = await signUp(t.app);
    await t.app.services.database.db
      .update(sessions)
      .set({ expiresAt: new Date(Date.now() - 1000) })
      .where(eq(sessions.userId, user.id));
    t.app.services.cache.forgetUser(user.id);
    const res = await client.get('/api/members');
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ error: 'Unauthorized' });
  });

  it('is refreshed after 24 hours of activity', async () => {
    const { client, user } = await signUp(t.app);
    const twoDaysUsed = new Date(Date.now() + 5 * 86_400_000);
    await t.app.services.database.db.update(sessions).set({ expiresAt: twoDaysUsed }).where(eq(sessions.userId, user.id));
    t.app.services.cache.forgetUser(user.id);
    const res = await client.get('/api/members');
    expect(res.status).toBe(200);
    expect(String(res.headers['set-cookie'])).toContain('service-auth.session_token=');
    const [row] = await t.app.services.database.db.select().from(sessions).where(eq(sessions.userId, user.id));
    expect(row!.expiresAt.getTime()).toBeGreaterThan(Date.now() + 6.9 * 86_400_000);
  });
});

describe('password reset', () => {
  async function lastMailTo(email: string) {
    const rows = await t.app.services.database.db.select().from(mailOutbox).where(eq(mailOutbox.to, email));
    return rows.at(-1);
  }

  it('mails a one-time link to the app, which sets a new password and ends every session', async () => {
    const { client, user } = await signUp(t.app);
    const res = await new Client(t.app).post('/api/auth/forget-password', { email: user.email });
    expect(res.status).toBe(200);
    const mail = await lastMailTo(user.email);
    const link = mail!.text.match(/http\S+/)![0];
    expect(link.startsWith('http://app.test/reset-password?token=')).toBe(true);
    const token = new URL(link).searchParams.get('token')!;

    const reset = await new Client(t.app).post('/api/auth/reset-password', { token, newPassword: 'a brand new secret' });
    expect(reset.status).toBe(200);
    expect((await client.get('/api/me', { workspace: null })).status).toBe(401);
    const again = await new Client(t.app).post('/api/auth/reset-password', { token, newPassword: 'another new secret' });
    expect(again.status).toBe(400);
    expect(again.body.details).toEqual([{ path: 'token', message: expect.any(String) }]);
    const oldPassword = await new Client(t.app).post('/api/auth/sign-in/email', { email: user.email, password: PASSWORD });
    expect(oldPassword.status).toBe(401);
    const newPassword = await new Client(t.app).post('/api/auth/sign-in/email', { email: user.email, password: 'a brand new secret' });
    expect(newPassword.status).toBe(200);
  });

  it('answers the same for an unknown e-mail and sends nothing', async () => {
    const { user } = await signUp(t.app);
    const known = await new Client(t.app).post('/api/auth/forget-password', { email: user.email });
    const email = uniqueEmail();
    const unknown = await new Client(t.app).post('/api/auth/forget-password', { email });
    expect(unknown.status).toBe(known.status);
    expect(unknown.body).toEqual(known.body);
    expect(await lastMailTo(email)).toBeUndefined();
  });

  it('refuses an expired token and a redirect to a foreign site', async () => {
    const { user } = await signUp(t.app);
    const foreign = await new Client(t.app).post('/api/auth/forget-password', { email: user.email, redirectTo: 'https://evil.example/steal' });
    expect(foreign.status).toBe(400);
    expect(foreign.body.details[0].path).toBe('redirectTo');

    await new Client(t.app).post('/api/auth/forget-password', { email: user.email });
    const token = new URL((await lastMailTo(user.email))!.text.match(/http\S+/)![0]).searchParams.get('token')!;
    const { verifications } = await import('../src/db/schema/index.js');
    await t.app.services.database.db
      .update(verifications)
      .set({ expiresAt: new Date(Date.now() - 1000) })
      .where(eq(verifications.identifier, `reset-password:${token}`));
    const res = await new Client(t.app).post('/api/auth/reset-password', { token, newPassword: 'a brand new secret' });
    expect(res.status).toBe(400);
  });

  it('validates the new password', async () => {
    const res = await new Client(t.app).post('/api/auth/reset-password', { token: 'whatever', newPassword: 'short' });
    expect(res.status).toBe(400);
    expect(res.body.details).toContainEqual({ path: 'newPassword', message: expect.any(String) });
  });
});
