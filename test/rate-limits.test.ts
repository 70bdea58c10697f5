// The spec's per-IP rate limits (six tiers, database-backed) and the sign-in lockout (per e-mail and IP).
import { and, eq, like } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../src/app.js';
import { openDatabase } from '../src/db/client.js';
import { rateLimitCounters } from '../src/db/schema/index.js';
import { Client, createTestApp, PASSWORD, type Reply, randomIp, signUp, type TestApp, uniqueEmail } from './helpers.js';

const TOO_MANY = { error: 'Too many requests, please try again later' };

let t: TestApp;
/** Rate limits multiplied by 100, so that the sign-in tier (5/60 s per IP) does not mask the lockout. */
let relaxed: TestApp;

beforeAll(async () => {
  [t, relaxed] = await Promise.all([createTestApp(), createTestApp({ RATE_LIMIT_FACTOR: '100' })]);
});
afterAll(async () => {
  await Promise.all([t?.close(), relaxed?.close()]);
});

function limits(res: Reply) {
  return {
    limit: Number(res.headers['ratelimit-limit']),
    remaining: Number(res.headers['ratelimit-remaining']),
    reset: Number(res.headers['ratelimit-reset']),
  };
}

function expectRateHeaders(res: Reply) {
  for (const name of ['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset']) {
    expect(String(res.headers[name]), `${name} on a ${res.status}`).toMatch(/^\d+$/);
  }
}

/** A 429 exactly as the spec words it: the fixed body and a Retry-After in whole seconds within the window. */
function expectTooMany(res: Reply, windowSeconds: number) {
  expect(res.status, res.raw.body).toBe(429);
  expect(res.body).toEqual(TOO_MANY);
  const retryAfter = String(res.headers['retry-after']);
  expect(retryAfter).toMatch(/^[1-9]\d*$/);
  expect(Number(retryAfter)).toBeLessThanOrEqual(windowSeconds);
  return Number(retryAfter);
}

async function counterRows(db: TestApp, pattern: string) {
  return db.app.services.database.db.select().from(rateLimitCounters).where(like(rateLimitCounters.key, pattern));
}

describe('RateLimit-* headers', () => {
  it('are on every /api response, errors included', async () => {
    const { client } = await signUp(t.app);
    const anonymous = new Client(t.app);
    const json = { 'content-type': 'application/json' };
    const responses = [
      await anonymous.get('/api/me'),
      await anonymous.get('/api/members'),
      await anonymous.get('/api/nowhere'),
      await anonymous.post('/api/auth/sign-in/email', { email: uniqueEmail(), password: 'wrong password' }),
      await anonymous.post('/api/auth/sign-in/email', { email: 'x' }),
      await anonymous.get('/api/auth/get-session'),
      await anonymous.get('/api/openapi.json'),
      await anonymous.get('/api/docs'),
      await client.get('/api/members'),
      await client.get('/api/members', { workspace: 'nope' }),
      await client.get('/api/nowhere'),
      await client.patch('/api/workspace', '{', { headers: json }),
      await client.patch('/api/workspace', 'x', { headers: { 'content-type': 'text/plain' } }),
      await client.patch('/api/workspace', JSON.stringify({ name: 'x'.repeat(1_100_000) }), { headers: json }),
      await client.post('/api/organizations', { name: 'X' }, { headers: { origin: 'http://evil.example' } }),
    ];
    expect(new Set(responses.map((r) => r.status))).toEqual(new Set([200, 400, 401, 403, 404, 413, 415]));
    for (const res of responses) {
      expectRateHeaders(res);
      const { limit, remaining, reset } = limits(res);
      expect([5, 10, 100]).toContain(limit);
      expect(remaining).toBeLessThan(limit);
      expect(reset).toBeGreaterThan(0);
      expect(reset).toBeLessThanOrEqual(60);
    }
  });

  it('on sign-in they describe the sign-in tier (5), the one closest to exhaustion', async () => {
    const client = new Client(t.app);
    for (let i = 1; i <= 3; i++) {
      const res = await client.post('/api/auth/sign-in/email', { email: uniqueEmail(), password: PASSWORD });
      expect(res.status).toBe(401);
      expect(limits(res)).toEqual({ limit: 5, remaining: 5 - i, reset: expect.any(Number) });
      expect(limits(res).reset).toBeLessThanOrEqual(60);
    }
  });

  it('on a workspace route they describe the general tier (100)', async () => {
    // signUp spent two general points (sign-up, /api/me) from this client's IP.
    const { client } = await signUp(t.app);
    const res = await client.get('/api/members');
    expect(res.status).toBe(200);
    expect(limits(res)).toEqual({ limit: 100, remaining: 97, reset: expect.any(Number) });
    expect(limits(res).reset).toBeLessThanOrEqual(60);
  });

  it('are not sent, and nothing is counted, on /api/health or outside /api', async () => {
    const client = new Client(t.app);
    for (let i = 0; i < 3; i++) {
      const health = await client.get('/api/health');
      expect(health.status).toBe(200);
      expect(health.headers['ratelimit-limit']).toBeUndefined();
      expect(health.headers['retry-after']).toBeUndefined();
      expect((await client.get('/elsewhere')).headers['ratelimit-limit']).toBeUndefined();
    }
    expect(limits(await client.get('/api/me')).remaining).toBe(99);
  });
});

describe('the six tiers', () => {
  const tiers = [
    {
      name: 'POST /api/auth/forget-password',
      limit: 3,
      window: 3600,
      send: (c: Client) => c.post('/api/auth/forget-password', { email: uniqueEmail() }),
      status: 200,
    },
    {
      name: 'POST /api/auth/reset-password',
      limit: 3,
      window: 3600,
      send: (c: Client) => c.post('/api/auth/reset-password', { token: 'no-such-token', newPassword: 'a new password' }),
      status: 400,
    },
    {
      name: 'POST /api/auth/sign-in/email',
      limit: 5,
      window: 60,
      send: (c: Client) => c.post('/api/auth/sign-in/email', { email: uniqueEmail(), password: PASSWORD }),
      status: 401,
    },
    {
      name: 'POST /api/auth/sign-up/email',
      limit: 3,
      window: 300,
      send: (c: Client) => c.post('/api/auth/sign-up/email', { email: uniqueEmail(), password: PASSWORD, name: 'Rate' }),
      status: 200,
    },
    {
      name: 'other /api/auth/* (GET /api/auth/get-session)',
      limit: 10,
      window: 60,
      send: (c: Client) => c.get('/api/auth/get-session', { anonymous: true }),
      status: 200,
    },
    {
      name: 'all /api/* (GET /api/me)',
      limit: 100,
      window: 60,
      send: (c: Client) => c.get('/api/me', { anonymous: true }),
      status: 401,
    },
  ];

  it.each(tiers)('$name: $limit per $window s, then 429 with Retry-After', async ({ limit, window, send, status }) => {
    const client = new Client(t.app);
    for (let i = 1; i <= limit; i++) {
      const res = await send(client);
      expect(res.status, `request ${i}`).toBe(status);
      expect(limits(res).limit).toBe(limit);
      expect(limits(res).remaining).toBe(limit - i);
      expect(limits(res).reset).toBeLessThanOrEqual(window);
    }
    const over = await send(client);
    expectTooMany(over, window);
    expect(limits(over)).toEqual({ limit, remaining: 0, reset: expect.any(Number) });
    expect(limits(over).reset).toBeLessThanOrEqual(window);
    // Still refused on the next try.
    expectTooMany(await send(client), window);
  });

  it('other /api/auth/* routes share one counter', async () => {
    const client = new Client(t.app);
    for (let i = 0; i < 5; i++) expect((await client.get('/api/auth/get-session')).status).toBe(200);
    for (let i = 0; i < 5; i++) expect((await client.post('/api/auth/sign-out')).status).toBe(200);
    expectTooMany(await client.get('/api/auth/get-session'), 60);
    expectTooMany(await client.post('/api/auth/sign-out'), 60);
  });

  it('an exhausted auth tier leaves the other tiers of the same IP alone', async () => {
    const client = new Client(t.app);
    for (let i = 0; i < 3; i++) await client.post('/api/auth/forget-password', { email: uniqueEmail() });
    expectTooMany(await client.post('/api/auth/forget-password', { email: uniqueEmail() }), 3600);
    expect((await client.post('/api/auth/reset-password', { token: 'x', newPassword: 'a new password' })).status).toBe(400);
    expect((await client.get('/api/auth/get-session')).status).toBe(200);
    const signIn = await client.post('/api/auth/sign-in/email', { email: uniqueEmail(), password: PASSWORD });
    expect(signIn.status).toBe(401);
    expect(limits(signIn)).toMatchObject({ limit: 5, remaining: 4 });
    expect((await client.get('/api/me')).status).toBe(401);
  });
});

describe('the tier follows the route, however the URL spells it', () => {
  it('a trailing slash or percent-encoding does not move forget-password out of its 3/hour tier', async () => {
    const client = new Client(t.app);
    const spellings = ['/api/auth/forget-password/', '/api/auth/forget%2Dpassword', '/%61pi/auth/forget-password'];
    for (const [i, url] of spellings.entries()) {
      const res = await client.post(url, { email: uniqueEmail() });
      expect(res.status, url).toBe(200);
      expect(limits(res)).toMatchObject({ limit: 3, remaining: 2 - i });
    }
    expectTooMany(await client.post('/api/auth/forget-password', { email: uniqueEmail() }), 3600);
    expectTooMany(await client.post('/api/auth/forget-password/', { email: uniqueEmail() }), 3600);
  });

  it('sign-in with a trailing slash counts against the sign-in tier', async () => {
    const client = new Client(t.app);
    for (let i = 0; i < 5; i++) {
      const url = i % 2 ? '/api/auth/sign-in/email/' : '/api/auth/sign-in/email';
      expect((await client.post(url, { email: uniqueEmail(), password: PASSWORD })).status).toBe(401);
    }
    expectTooMany(await client.post('/api/auth/sign-in/email/', { email: uniqueEmail(), password: PASSWORD }), 60);
  });

  it('/api/health/ is exempt like /api/health', async () => {
    const res = await new Client(t.app).get('/api/health/');
    expect(res.status).toBe(200);
    expect(res.headers['ratelimit-limit']).toBeUndefined();
  });
});

describe('the auth tiers come before the general one', () => {
  it('sign-in requests also count against the general 100', async () => {
    const client = new Client(t.app);
    for (let i = 0; i < 5; i++) {
      expect((await client.post('/api/auth/sign-in/email', { email: uniqueEmail(), password: PASSWORD })).status).toBe(401);
    }
    const me = await client.get('/api/me');
    expect(limits(me)).toMatchObject({ limit: 100, remaining: 94 });
  });

  it('an exhausted general tier refuses the auth routes too; /api/health stays up', async () => {
    const client = new Client(t.app);
    for (let i = 0; i < 100; i++) expect((await client.get('/api/nowhere')).status).toBe(401);
    const signIn = await client.post('/api/auth/sign-in/email', { email: uniqueEmail(), password: PASSWORD });
    expectTooMany(signIn, 60);
    expect(limits(signIn)).toMatchObject({ limit: 100, remaining: 0 });
    expectTooMany(await client.get('/api/auth/get-session'), 60);
    expectTooMany(await client.post('/api/auth/sign-up/email', { email: uniqueEmail(), password: PASSWORD, name: 'N' }), 60);
    expect((await client.get('/api/health')).status).toBe(200);
  });
});

describe('limits are per client IP', () => {
  it('another IP is unaffected', async () => {
    const first = new Client(t.app);
    for (let i = 0; i < 10; i++) await first.get('/api/auth/get-session');
    expectTooMany(await first.get('/api/auth/get-session'), 60);
    const second = new Client(t.app);
    const res = await second.get('/api/auth/get-session');
    expect(res.status).toBe(200);
    expect(limits(res)).toMatchObject({ limit: 10, remaining: 9 });
    // The same user moving to another IP is a new client too.
    const { client } = await signUp(t.app);
    const moved = new Client(t.app, first.ip);
    moved.cookie = client.cookie;
    expectTooMany(await moved.get('/api/auth/get-session'), 60);
    expect((await client.get('/api/auth/get-session')).status).toBe(200);
  });

  it('without TRUST_PROXY, X-Forwarded-For is ignored: spoofing it does not escape a limit', async () => {
    const client = new Client(t.app);
    for (let i = 0; i < 10; i++) {
      expect((await client.get('/api/auth/get-session', { headers: { 'x-forwarded-for': randomIp() } })).status).toBe(200);
    }
    expectTooMany(await client.get('/api/auth/get-session', { headers: { 'x-forwarded-for': randomIp() } }), 60);
    expectTooMany(await client.get('/api/auth/get-session'), 60);
  });

  describe('with TRUST_PROXY=1', () => {
    let proxied: TestApp;
    beforeAll(async () => {
      proxied = await createTestApp({ TRUST_PROXY: '1' });
    });
    afterAll(async () => proxied?.close());

    it('X-Forwarded-For decides the client IP', async () => {
      const proxy = new Client(proxied.app);
      const alice = randomIp();
      const bob = randomIp();
      const as = (ip: string) => ({ headers: { 'x-forwarded-for': ip } });
      for (let i = 0; i < 10; i++) expect((await proxy.get('/api/auth/get-session', as(alice))).status).toBe(200);
      expectTooMany(await proxy.get('/api/auth/get-session', as(alice)), 60);
      // Another client behind the same proxy has its own counter.
      const other = await proxy.get('/api/auth/get-session', as(bob));
      expect(other.status).toBe(200);
      expect(limits(other)).toMatchObject({ limit: 10, remaining: 9 });
      // The same client through another proxy address is still limited.
      expectTooMany(await new Client(proxied.app).get('/api/auth/get-session', as(alice)), 60);
      // With one trusted hop only the last entry counts: a forged first entry changes nothing.
      expectTooMany(await proxy.get('/api/auth/get-session', as(`${randomIp()}, ${alice}`)), 60);
    });

    it('the lockout keys on the forwarded IP as well', async () => {
      const { user } = await signUp(proxied.app);
      const proxy = new Client(proxied.app);
      const attacker = randomIp();
      for (let i = 0; i < 5; i++) {
        const res = await proxy.post('/api/auth/sign-in/email', { email: user.email, password: 'wrong password' }, {
          headers: { 'x-forwarded-for': attacker },
        });
        expect(res.status).toBe(401);
      }
      // The sign-in tier (5/60 s) of the attacker's IP is spent as well: clear it so that only the lockout speaks.
      const cleared = await proxied.app.services.database.db
        .delete(rateLimitCounters)
        .where(like(rateLimitCounters.key, `rl:%:${attacker}`))
        .returning();
      expect(cleared.map((row) => row.key)).toContain(`rl:sign-in:${attacker}`);
      const locked = await proxy.post('/api/auth/sign-in/email', { email: user.email, password: PASSWORD }, {
        headers: { 'x-forwarded-for': attacker },
      });
      expect(expectTooMany(locked, 900)).toBeGreaterThan(60);
      // The victim's own IP, behind the same proxy, is not locked.
      const victim = await proxy.post('/api/auth/sign-in/email', { email: user.email, password: PASSWORD }, {
        headers: { 'x-forwarded-for': randomIp() },
      });
      expect(victim.status).toBe(200);
    });
  });
});

describe('sign-in lockout (5 failures per e-mail and IP, 15 minutes)', () => {
  const signIn = (client: Client, email: string, password: string) => client.post('/api/auth/sign-in/email', { email, password });

  async function fail(client: Client, email: string, times: number) {
    for (let i = 0; i < times; i++) {
      const res = await signIn(client, email, 'wrong password');
      expect(res.status, `failure ${i + 1}`).toBe(401);
    }
  }

  it('the 6th attempt after 5 failures is 429 even with the right password, for about 900 s', async () => {
    const { user } = await signUp(relaxed.app);
    const attacker = new Client(relaxed.app);
    await fail(attacker, user.email, 5);
    const locked = await signIn(attacker, user.email, PASSWORD);
    const retryAfter = expectTooMany(locked, 900);
    expect(retryAfter).toBeGreaterThanOrEqual(890);
    expect(locked.headers['set-cookie']).toBeUndefined();
    expect(attacker.cookie).toBeUndefined();
    expectTooMany(await signIn(attacker, user.email, 'wrong password'), 900);
    // The e-mail is matched whatever its case.
    expectTooMany(await signIn(attacker, user.email.toUpperCase(), PASSWORD), 900);
    // The lockout is its own thing: the rate-limit headers still show plenty of room.
    expect(limits(locked).remaining).toBeGreaterThan(400);
  });

  it('unknown e-mails are locked out the same way', async () => {
    const client = new Client(relaxed.app);
    const email = uniqueEmail();
    await fail(client, email, 5);
    expectTooMany(await signIn(client, email, PASSWORD), 900);
  });

  it('four failures do not lock', async () => {
    const { user } = await signUp(relaxed.app);
    const client = new Client(relaxed.app);
    await fail(client, user.email, 4);
    expect((await signIn(client, user.email, PASSWORD)).status).toBe(200);
  });

  it('another e-mail from the same IP is not locked', async () => {
    const [victim, other] = [await signUp(relaxed.app), await signUp(relaxed.app)];
    const client = new Client(relaxed.app);
    await fail(client, victim.user.email, 5);
    expectTooMany(await signIn(client, victim.user.email, PASSWORD), 900);
    expect((await signIn(client, other.user.email, 'wrong password')).status).toBe(401);
    expect((await signIn(client, other.user.email, PASSWORD)).status).toBe(200);
  });

  it('the same e-mail from another IP is not locked', async () => {
    const { user } = await signUp(relaxed.app);
    const attacker = new Client(relaxed.app);
    await fail(attacker, user.email, 5);
    expectTooMany(await signIn(attacker, user.email, PASSWORD), 900);
    const owner = new Client(relaxed.app);
    expect((await signIn(owner, user.email, PASSWORD)).status).toBe(200);
    expect((await owner.get('/api/me', { workspace: null })).status).toBe(200);
    // The owner's success does not lift the attacker's lockout.
    expectTooMany(await signIn(attacker, user.email, PASSWORD), 900);
  });

  it('the counter resets on a successful sign-in', async () => {
    const { user } = await signUp(relaxed.app);
    const client = new Client(relaxed.app);
    await fail(client, user.email, 4);
    expect((await signIn(client, user.email, PASSWORD)).status).toBe(200);
    await fail(client, user.email, 4);
    expect((await signIn(client, user.email, PASSWORD)).status).toBe(200);
    // And counts again from zero: five fresh failures lock.
    await fail(client, user.email, 5);
    expectTooMany(await signIn(client, user.email, PASSWORD), 900);
  });

  it('malformed sign-ins (400) are not failures', async () => {
    const { user } = await signUp(relaxed.app);
    const client = new Client(relaxed.app);
    for (let i = 0; i < 6; i++) expect((await client.post('/api/auth/sign-in/email', { email: user.email })).status).toBe(400);
    expect((await signIn(client, user.email, PASSWORD)).status).toBe(200);
  });

  it('is independent of the rate-limit counters, both ways', async () => {
    const db = relaxed.app.services.database.db;
    const { user } = await signUp(relaxed.app);
    const client = new Client(relaxed.app);
    await fail(client, user.email, 5);
    expectTooMany(await signIn(client, user.email, PASSWORD), 900);
    expect(await counterRows(relaxed, `lockout:%${user.email}%`)).toHaveLength(1);

    // Clearing this IP's rate-limit counters does not lift the lockout...
    const cleared = await db.delete(rateLimitCounters).where(like(rateLimitCounters.key, `rl:%:${client.ip}`)).returning();
    expect(cleared.length).toBeGreaterThan(0);
    expect(cleared.every((row) => row.key.startsWith('rl:'))).toBe(true);
    const stillLocked = await signIn(client, user.email, PASSWORD);
    expectTooMany(stillLocked, 900);
    expect(limits(stillLocked).remaining).toBe(499);

    // ...clearing the lockout counter does.
    await db.delete(rateLimitCounters).where(like(rateLimitCounters.key, `lockout:%${user.email}%`));
    expect((await signIn(client, user.email, PASSWORD)).status).toBe(200);
  });

  it('an exhausted sign-in rate limit is not a lockout', async () => {
    const db = t.app.services.database.db;
    const { user } = await signUp(t.app);
    const client = new Client(t.app);
    for (let i = 0; i < 5; i++) expect((await signIn(client, user.email, PASSWORD)).status).toBe(200);
    expectTooMany(await signIn(client, user.email, PASSWORD), 60);
    expect(await counterRows(t, `lockout:%${user.email}%`)).toHaveLength(0);
    await db.delete(rateLimitCounters).where(like(rateLimitCounters.key, `rl:%:${client.ip}`));
    expect((await signIn(client, user.email, PASSWORD)).status).toBe(200);
  });
});

describe('counters live in the database', () => {
  it('are one row per tier and IP', async () => {
    const client = new Client(t.app);
    await client.post('/api/auth/sign-in/email', { email: uniqueEmail(), password: PASSWORD });
    const rows = await counterRows(t, `rl:%:${client.ip}`);
    expect(rows.map((r) => r.key).sort()).toEqual([`rl:api:${client.ip}`, `rl:sign-in:${client.ip}`]);
    const [row] = await t.app.services.database.db
      .select()
      .from(rateLimitCounters)
      .where(and(eq(rateLimitCounters.key, `rl:sign-in:${client.ip}`)));
    expect(row!.points).toBe(1);
    expect(row!.expire!.getTime()).toBeGreaterThan(Date.now());
  });

  it('a second app instance on the same database (a restart) sees the counts', async () => {
    const second = await buildApp({ config: t.config, database: t.app.services.database, secret: t.config.authSecret!, logger: false });
    try {
      await second.ready();
      const ip = randomIp();
      for (let i = 0; i < 4; i++) expect((await new Client(t.app, ip).get('/api/auth/get-session')).status).toBe(200);
      const res = await new Client(second, ip).get('/api/auth/get-session');
      expect(limits(res)).toMatchObject({ limit: 10, remaining: 5 });
      for (let i = 0; i < 5; i++) await new Client(second, ip).get('/api/auth/get-session');
      expectTooMany(await new Client(t.app, ip).get('/api/auth/get-session'), 60);
    } finally {
      await second.close();
    }
  });

  it.skipIf(!process.env.DATABASE_URL)('an app with its own connection pool (another process) sees the counts', async () => {
    const database = await openDatabase({ url: t.config.databaseUrl!, poolSize: 2 });
    const other = await buildApp({ config: t.config, database, secret: t.config.authSecret!, logger: false });
    try {
      await other.ready();
      const ip = randomIp();
      for (let i = 0; i < 10; i++) expect((await new Client(t.app, ip).get('/api/auth/get-session')).status).toBe(200);
      expectTooMany(await new Client(other, ip).get('/api/auth/get-session'), 60);
      const { user } = await signUp(t.app);
      const attacker = randomIp();
      for (let i = 0; i < 5; i++) {
        await new Client(t.app, attacker).post('/api/auth/sign-in/email', {
          email: user.email,
          password: 'wrong password',
        });
      }
      // The sign-in tier of that IP is spent too; clear it so only the lockout speaks on the other app.
      await t.app.services.database.db.delete(rateLimitCounters).where(like(rateLimitCounters.key, `rl:%:${attacker}`));
      expectTooMany(await new Client(other, attacker).post('/api/auth/sign-in/email', { email: user.email, password: PASSWORD }), 900);
    } finally {
      await other.close();
      await database.close();
    }
  });
});
