import { createHash } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../src/app.js';
import { SESSION_COOKIE } from '../src/auth/auth.js';
import { channels, contactIdentities, contacts, conversations, messages } from '../src/db/schema/index.js';
import { newId } from '../src/ids.js';
import { eventHub } from '../src/modules/events/hub.js';
import { publishEvent } from '../src/modules/events/publish.js';
import { toMessageRecord } from '../src/modules/channels/message-record.js';
import { listenOn, SseReader } from './sse-reader.js';
import {
  APP_URL,
  Client,
  createTestApp,
  expectForbidden,
  expectNotFound,
  expectValidation,
  ISO_TIMESTAMP,
  type Reply,
  type TestApp,
  workspaceWithRoles,
} from './helpers.js';

const SHOP = 'https://shop.example';
const OTHER_SITE = 'https://evil.example';

let t: TestApp;
let base: string;
let cast: Awaited<ReturnType<typeof workspaceWithRoles>>;
let channelId: string;
let otherChannelId: string;
let whatsappId: string;
const readers: SseReader[] = [];

async function createChannel(app: App, workspaceId: string, type: 'livechat' | 'whatsapp', config: Record<string, unknown>) {
  const id = newId();
  await app.services.database.db.insert(channels).values({ id, workspaceId, type, name: `${type} ${id.slice(-4)}`, config });
  return id;
}

/** A browser on the customer's site: no cookie, its own IP, Origin on every request. */
function visitor(origin = SHOP) {
  const client = new Client(t.app);
  const headers = (token?: string, extra: Record<string, string> = {}) => ({
    ...(origin ? { origin } : {}),
    ...(token ? { authorization: `Bearer ${token}` } : {}),
    ...extra,
  });
  return {
    client,
    session: (body: unknown = {}, channel = channelId) =>
      client.post(`/api/livechat/${channel}/sessions`, body, { headers: headers() }),
    send: (token: string | undefined, body: unknown, channel = channelId) =>
      client.post(`/api/livechat/${channel}/messages`, body, { headers: headers(token) }),
    list: (token: string | undefined, query = '', channel = channelId) =>
      client.get(`/api/livechat/${channel}/messages${query}`, { headers: headers(token) }),
  };
}

async function startSession(name?: string) {
  const v = visitor();
  const res = await v.session(name ? { name } : {});
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return { ...v, token: res.body.visitorToken as string, contactId: res.body.contactId as string };
}

function expectUnauthorized(res: Reply): void {
  expect(res.status, JSON.stringify(res.body)).toBe(401);
  expect(res.body).toEqual({ error: 'Unauthorized' });
}

beforeAll(async () => {
  t = await createTestApp();
  cast = await workspaceWithRoles(t.app);
  channelId = await createChannel(t.app, cast.workspaceId, 'livechat', { allowedOrigins: [SHOP, 'http://localhost:8080'], greeting: 'Hi! How can we help?' });
  otherChannelId = await createChannel(t.app, cast.workspaceId, 'livechat', { allowedOrigins: [SHOP] });
  whatsappId = await createChannel(t.app, cast.workspaceId, 'whatsapp', { phoneNumberId: '123' });
  base = await listenOn(t.app);
});

afterAll(async () => {
  for (const reader of readers) reader.close();
  await t.close();
});

describe('POST /api/livechat/{channelId}/sessions', () => {
  it('creates a contact and an identity holding only the token hash, from an allowed origin, with CORS', async () => {
    const res = await visitor().session({});
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body).toEqual({
      visitorToken: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      contactId: expect.any(String),
      conversationId: null,
      greeting: 'Hi! How can we help?',
    });
    expect(res.headers['access-control-allow-origin']).toBe(SHOP);
    expect(String(res.headers.vary)).toMatch(/origin/i);

    const { db } = t.app.services.database;
    const [contact] = await db.select().from(contacts).where(eq(contacts.id, res.body.contactId));
    expect(contact).toMatchObject({ workspaceId: cast.workspaceId, name: expect.stringMatching(/^Visitor \w{6}$/), email: null });
    const identities = await db.select().from(contactIdentities).where(eq(contactIdentities.contactId, res.body.contactId));
    expect(identities).toEqual([
      expect.objectContaining({
        channelId,
        externalId: createHash('sha256').update(res.body.visitorToken).digest('hex'),
      }),
    ]);

    const named = await visitor('http://localhost:8080').session({ name: 'Ada', email: 'ada@example.test' });
    expect(named.status).toBe(201);
    expect(named.headers['access-control-allow-origin']).toBe('http://localhost:8080');
    const [ada] = await db.select().from(contacts).where(eq(contacts.id, named.body.contactId));
    expect(ada).toMatchObject({ name: 'Ada', email: 'ada@example.test' });

    const other = await visitor().session({}, otherChannelId);
    expect(other.status).toBe(201);
    expect(other.body.greeting).toBeNull();
  });

  it('accepts a request without a body', async () => {
    const res = await new Client(t.app).request('POST', `/api/livechat/${channelId}/sessions`, { headers: { origin: SHOP } });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
  });

  it('403 from an origin the channel does not allow, or without Origin', async () => {
    const res = await visitor(OTHER_SITE).session({});
    expectForbidden(res);
    expect(res.headers['access-control-allow-origin']).toBeUndefined();
    expectForbidden(await visitor(APP_URL).session({}));
    expectForbidden(await visitor('').session({}));
  });

  it('404 for an unknown channel, a malformed id, a channel of another type', async () => {
    expectNotFound(await visitor().session({}, newId()));
    expectNotFound(await visitor().session({}, 'not-a-uuid'));
    expectNotFound(await visitor().session({}, whatsappId));
  });

  it('400 with details for a bad body', async () => {
    expectValidation(await visitor().session({ extra: 1 }), 'extra');
    expectValidation(await visitor().session({ email: 'not an email' }), 'email');
    expectValidation(await visitor().session({ name: '' }), 'name');
  });
});

describe('CORS and CSRF', () => {
  it('answers the preflight of an allowed origin on every visitor route', async () => {
    for (const path of ['sessions', 'messages', 'events']) {
      const res = await new Client(t.app).request('OPTIONS', `/api/livechat/${channelId}/${path}`, {
        headers: { origin: SHOP, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' },
      });
      expect(res.status, `${path}: ${res.raw.body}`).toBe(204);
      expect(res.headers['access-control-allow-origin']).toBe(SHOP);
      expect(String(res.headers['access-control-allow-methods'])).toMatch(/POST/);
      expect(String(res.headers['access-control-allow-headers'])).toMatch(/authorization/);
      expect(String(res.headers['access-control-allow-headers'])).toMatch(/content-type/);
    }
  });

  it('refuses the preflight of another origin, and of an unknown channel', async () => {
    const preflight = (origin: string, channel = channelId) =>
      new Client(t.app).request('OPTIONS', `/api/livechat/${channel}/sessions`, {
        headers: { origin, 'access-control-request-method': 'POST' },
      });
    const res = await preflight(OTHER_SITE);
    expect(res.status).toBe(403);
    expect(res.headers['access-control-allow-origin']).toBeUndefined();
    expect((await preflight(SHOP, newId())).status).toBe(404);
  });

  it('keeps the dashboard policy everywhere else: a foreign-origin write is refused, APP_URL gets CORS', async () => {
    const res = await cast.owner.post('/api/members', { email: 'x@example.test', role: 'agent' }, { headers: { origin: SHOP } });
    expectForbidden(res);
    const preflight = await new Client(t.app).request('OPTIONS', '/api/members', {
      headers: { origin: APP_URL, 'access-control-request-method': 'POST' },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers['access-control-allow-origin']).toBe(APP_URL);
    const foreign = await new Client(t.app).request('OPTIONS', '/api/members', {
      headers: { origin: SHOP, 'access-control-request-method': 'POST' },
    });
    expect(foreign.headers['access-control-allow-origin']).toBeUndefined();
  });
});

describe('visitor messages', () => {
  it('sends inbound messages into one open conversation and reads them back, agents\' replies included', async () => {
    const v = await startSession('Grace');
    const first = await v.send(v.token, { body: 'Hello, is anyone there?' });
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    expect(first.headers['access-control-allow-origin']).toBe(SHOP);
    expect(first.body).toEqual({
      id: expect.any(String),
      conversationId: expect.any(String),
      direction: 'inbound',
      type: 'text',
      body: 'Hello, is anyone there?',
      status: 'delivered',
      error: null,
      senderUserId: null,
      createdAt: expect.stringMatching(ISO_TIMESTAMP),
    });
    const second = await v.send(v.token, { body: 'About my order' });
    expect(second.status).toBe(201);
    expect(second.body.conversationId).toBe(first.body.conversationId);

    const { db } = t.app.services.database;
    const [conversation] = await db.select().from(conversations).where(eq(conversations.id, first.body.conversationId));
    expect(conversation).toMatchObject({ workspaceId: cast.workspaceId, channelId, contactId: v.contactId, status: 'active' });
    expect(conversation!.lastInboundAt?.toISOString()).toBe(second.body.createdAt);
    expect(conversation!.lastMessageAt?.toISOString()).toBe(second.body.createdAt);
    const [contact] = await db.select().from(contacts).where(eq(contacts.id, v.contactId));
    expect(contact!.lastInboundAt?.toISOString()).toBe(second.body.createdAt);

    // An agent's reply, as the conversations API stores it.
    const replyId = newId();
    await db.insert(messages).values({
      id: replyId,
      workspaceId: cast.workspaceId,
      conversationId: first.body.conversationId,
      channelId,
      direction: 'outbound',
      type: 'text',
      body: 'Hi Grace, yes!',
      status: 'sent',
      senderUserId: cast.agent.user!.id,
    });

    const list = await v.list(v.token);
    expect(list.status, JSON.stringify(list.body)).toBe(200);
    expect(list.body.messages.map((m: { body: string }) => m.body)).toEqual(['Hello, is anyone there?', 'About my order', 'Hi Grace, yes!']);
    const reply = list.body.messages[2];
    expect(reply).toMatchObject({ id: replyId, direction: 'outbound', status: 'sent', senderUserId: null });

    const latest = await v.list(v.token, '?limit=2');
    expect(latest.body.messages.map((m: { id: string }) => m.id)).toEqual([second.body.id, replyId]);
    const older = await v.list(v.token, `?limit=2&before=${second.body.id}`);
    expect(older.body.messages.map((m: { id: string }) => m.id)).toEqual([first.body.id]);

    // Another visitor sees none of it.
    const other = await startSession();
    expect((await other.list(other.token)).body).toEqual({ messages: [] });
    expectValidation(await other.list(other.token, `?before=${first.body.id}`), 'before');
  });

  it('400 with details for bad message bodies and queries', async () => {
    const v = await startSession();
    expectValidation(await v.send(v.token, {}), 'body');
    expectValidation(await v.send(v.token, { body: '' }), 'body');
    expectValidation(await v.send(v.token, { body: 'x'.repeat(4097) }), 'body');
    expectValidation(await v.send(v.token, { body: 'hi', extra: true }), 'extra');
    expect((await v.send(v.token, { body: 'x'.repeat(4096) })).status).toBe(201);
    expectValidation(await v.list(v.token, '?limit=0'), 'limit');
    expectValidation(await v.list(v.token, '?before=nope'), 'before');
  });

  it('401 without a token, with a wrong one, with another channel\'s; 403 from another origin; 404 for another channel type', async () => {
    const v = await startSession();
    expectUnauthorized(await v.send(undefined, { body: 'hi' }));
    expectUnauthorized(await v.send('wrong-token', { body: 'hi' }));
    expectUnauthorized(await v.list(undefined));
    expectUnauthorized(await v.list('wrong-token'));
    // The token is checked before the body.
    expectUnauthorized(await v.send(undefined, { nope: 1 }));

    expectUnauthorized(await v.send(v.token, { body: 'hi' }, otherChannelId));
    expectUnauthorized(await v.list(v.token, '', otherChannelId));

    const foreign = visitor(OTHER_SITE);
    expectForbidden(await foreign.send(v.token, { body: 'hi' }));
    expectForbidden(await foreign.list(v.token));
    expectNotFound(await v.send(v.token, { body: 'hi' }, whatsappId));
    expectNotFound(await v.list(v.token, '', newId()));

    // Nothing was stored by the refused sends.
    expect((await v.list(v.token)).body.messages).toEqual([]);
  });
});

describe('GET /api/livechat/{channelId}/events', () => {
  async function openVisitorStream(query: string, headers: Record<string, string> = {}) {
    const reader = await SseReader.open(`${base}/api/livechat/${channelId}/events${query}`, { origin: SHOP, ...headers });
    readers.push(reader);
    return reader;
  }

  it('streams the visitor\'s own messages, agents\' replies included, and not another visitor\'s', async () => {
    const ada = await startSession('Ada');
    const bob = await startSession('Bob');
    const adaStream = await openVisitorStream(`?token=${encodeURIComponent(ada.token)}`);
    const bobStream = await openVisitorStream('', { authorization: `Bearer ${bob.token}` });
    expect(adaStream.response.status).toBe(200);
    expect(adaStream.response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(adaStream.response.headers.get('access-control-allow-origin')).toBe(SHOP);
    const agents = await SseReader.open(`${base}/api/events`, {
      cookie: `${SESSION_COOKIE}=${cast.agent.cookie}`,
      'x-workspace-id': cast.workspaceId,
    });
    readers.push(agents);

    const sent = await ada.send(ada.token, { body: 'Question from Ada' });
    expect(sent.status).toBe(201);
    const received = await adaStream.next((e) => e.data.id === sent.body.id);
    expect(received).toMatchObject({ event: 'message.created', data: sent.body });
    // The workspace's stream gets the same message.
    const seenByAgents = await agents.next((e) => e.data.id === sent.body.id);
    expect(seenByAgents.data).toMatchObject({ conversationId: sent.body.conversationId, body: 'Question from Ada' });
    // And the conversation it opened, as the conversations API shows it.
    const opened = await agents.next((e) => e.event === 'conversation.updated' && e.data.id === sent.body.conversationId);
    expect(opened.data).toMatchObject({ channelType: 'livechat', status: 'active', window: { open: true, closesAt: null } });

    // An agent's reply on Ada's conversation, published as the conversations API does.
    const { db } = t.app.services.database;
    const replyId = newId();
    await db.transaction(async (tx) => {
      const [row] = await tx
        .insert(messages)
        .values({
          id: replyId,
          workspaceId: cast.workspaceId,
          conversationId: sent.body.conversationId,
          channelId,
          direction: 'outbound',
          type: 'text',
          body: 'Answer for Ada',
          status: 'queued',
          senderUserId: cast.agent.user!.id,
        })
        .returning();
      const data = toMessageRecord(row!);
      await publishEvent(tx, { type: 'message.created', workspaceId: cast.workspaceId, conversationId: sent.body.conversationId, data });
      await publishEvent(tx, {
        type: 'conversation.updated',
        workspaceId: cast.workspaceId,
        conversationId: sent.body.conversationId,
        data: { id: sent.body.conversationId, status: 'pending' },
      });
    });
    const reply = await adaStream.next((e) => e.data.id === replyId);
    expect(reply.data).toMatchObject({ direction: 'outbound', body: 'Answer for Ada', senderUserId: null });

    const bobSent = await bob.send(bob.token, { body: 'Bob here' });
    await bobStream.next((e) => e.data.id === bobSent.body.id);
    // Ada's stream has had its chance at Bob's message by the time her next one arrives.
    const marker = await ada.send(ada.token, { body: 'Still there?' });
    await adaStream.next((e) => e.data.id === marker.body.id);
    expect(adaStream.events.map((e) => e.data.body)).toEqual(['Question from Ada', 'Answer for Ada', 'Still there?']);
    expect(adaStream.events.map((e) => e.event)).toEqual(['message.created', 'message.created', 'message.created']);
    expect(bobStream.events.map((e) => e.data.body)).toEqual(['Bob here']);
  });

  it('reads back a message too large for a notification', async () => {
    const v = await startSession();
    const stream = await openVisitorStream(`?token=${encodeURIComponent(v.token)}`);
    const body = 'é'.repeat(4096);
    const sent = await v.send(v.token, { body });
    expect(sent.status).toBe(201);
    const received = await stream.next((e) => e.data.id === sent.body.id);
    expect(received.data).toEqual(sent.body);
  });

  it('ends the stream of a visitor whose contact is deleted', async () => {
    const hub = eventHub(t.app, t.app.services.database);
    hub.pingIntervalMs = 100;
    try {
      const v = await startSession();
      const stream = await openVisitorStream('', { authorization: `Bearer ${v.token}` });
      await stream.until(() => stream.comments.includes('ping'), 5000, 'a ping');
      await t.app.services.database.db.delete(contacts).where(eq(contacts.id, v.contactId));
      await stream.done;
      expect(stream.ended).toBe(true);
    } finally {
      hub.pingIntervalMs = 25_000;
    }
  });

  it('401 without or with a bad token, 403 from another origin', async () => {
    const v = await startSession();
    const url = `${base}/api/livechat/${channelId}/events`;
    expect((await fetch(url, { headers: { origin: SHOP } })).status).toBe(401);
    expect((await fetch(`${url}?token=nope`, { headers: { origin: SHOP } })).status).toBe(401);
    const other = `${base}/api/livechat/${otherChannelId}/events?token=${encodeURIComponent(v.token)}`;
    expect((await fetch(other, { headers: { origin: SHOP } })).status).toBe(401);
    const foreign = await fetch(`${url}?token=${encodeURIComponent(v.token)}`, { headers: { origin: OTHER_SITE } });
    expect(foreign.status).toBe(403);
  });
});

