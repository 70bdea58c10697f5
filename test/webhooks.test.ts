// Meta webhooks and outbound delivery end to end, against a fake Graph API: the subscription challenge, signature
// checks on the raw body, WhatsApp and Messenger inbound messages (contact, identity, conversation, message; once),
// status callbacks that only move forward, and the send job with Meta's success, permanent and transient answers.
import { createHmac, randomUUID } from 'node:crypto';
import { and, eq } from 'drizzle-orm';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Tx } from '../src/db/client.js';
import { contactIdentities, contacts, conversations, messages } from '../src/db/schema/index.js';
import { insertContacts } from '../src/modules/contacts/store.js';
import { openConversation } from '../src/modules/conversations/store.js';
import { classifyGraphFailure } from '../src/modules/channels/graph.js';
import { sendOutboundMessage } from '../src/modules/channels/jobs.js';
import { deliverOutboundMessage } from '../src/modules/channels/outbound.js';
import { newId } from '../src/ids.js';
import { EVENTS_CHANNEL } from '../src/modules/events/publish.js';
import { type FakeGraph, metaErrorBody, startFakeGraph } from './fake-graph.js';
import { createTestApp, eventually, ISO_TIMESTAMP, randomIp, type TestApp, workspaceWithRoles } from './helpers.js';

let t: TestApp;
let graph: FakeGraph;
let cast: Awaited<ReturnType<typeof workspaceWithRoles>>;
const PHONE_NUMBER_ID = '106540352242922';
const PAGE_ID = '1122334455';
const wa = { accessToken: `EAAG-wa-${randomUUID()}`, appSecret: `wa-app-${randomUUID()}`, verifyToken: `wa-verify-${randomUUID()}` };
const fb = { accessToken: `EAAG-fb-${randomUUID()}`, appSecret: `fb-app-${randomUUID()}`, verifyToken: `fb-verify-${randomUUID()}` };
let whatsapp: { id: string };
let messenger: { id: string };
let livechat: { id: string };

beforeAll(async () => {
  graph = await startFakeGraph({ tokens: [wa.accessToken, fb.accessToken] });
  t = await createTestApp({ GRAPH_API_URL: graph.url });
  cast = await workspaceWithRoles(t.app);
  const make = async (body: Record<string, unknown>) => {
    const res = await cast.admin.post('/api/channels', body);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body;
  };
  whatsapp = await make({
    type: 'whatsapp',
    name: 'WhatsApp',
    config: { phoneNumberId: PHONE_NUMBER_ID, businessAccountId: '102290129340398' },
    secrets: wa,
  });
  messenger = await make({ type: 'messenger', name: 'Messenger', config: { pageId: PAGE_ID }, secrets: fb });
  livechat = await make({ type: 'livechat', name: 'Chat', config: { allowedOrigins: ['https://shop.example'] } });
});
afterAll(async () => {
  await t.close();
  await graph.close();
});

const db = () => t.app.services.database.db;
const sign = (raw: string, secret: string) => `sha256=${createHmac('sha256', secret).update(raw).digest('hex')}`;

async function post(channelId: string, payload: unknown, signature?: string | null, secret = wa.appSecret) {
  const raw = typeof payload === 'string' ? payload : JSON.stringify(payload);
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  const sig = signature === undefined ? sign(raw, secret) : signature;
  if (sig !== null) headers['x-hub-signature-256'] = sig;
  return t.app.inject({ method: 'POST', url: `/api/webhooks/meta/${channelId}`, headers, payload: raw, remoteAddress: randomIp() });
}

const pending = () => t.app.services.jobs.countJobs('inbox-webhook', ['created', 'retry', 'active']);
/** Posts a signed delivery and waits until the queue has processed it. */
async function deliver(channelId: string, payload: unknown, secret = wa.appSecret) {
  const res = await post(channelId, payload, undefined, secret);
  expect(res.statusCode, res.body).toBe(200);
  expect(res.json()).toEqual({ received: true });
  await eventually(async () => (await pending()) === 0, 15_000, 'webhook processed');
}

const waEnvelope = (value: Record<string, unknown>) => ({
  object: 'whatsapp_business_account',
  entry: [
    {
      id: '102290129340398',
      changes: [
        {
          field: 'messages',
          value: { messaging_product: 'whatsapp', metadata: { display_phone_number: '15550001111', phone_number_id: PHONE_NUMBER_ID }, ...value },
        },
      ],
    },
  ],
});
const nowSeconds = () => String(Math.floor(Date.now() / 1000));
const waText = (waId: string, id: string, body: string, name = 'Maria Lopez', timestamp = nowSeconds()) =>
  waEnvelope({
    contacts: [{ profile: { name }, wa_id: waId }],
    messages: [{ from: waId, id, timestamp, type: 'text', text: { body } }],
  });
const waStatus = (id: string, status: string, extra: Record<string, unknown> = {}) =>
  waEnvelope({ statuses: [{ id, status, timestamp: nowSeconds(), recipient_id: '447700900123', ...extra }] });

const messagesOf = (conversationId: string) =>
  db().select().from(messages).where(eq(messages.conversationId, conversationId)).orderBy(messages.createdAt);

async function contactByPhone(phone: string) {
  const [row] = await db().select().from(contacts).where(and(eq(contacts.workspaceId, cast.workspaceId), eq(contacts.phone, phone)));
  return row;
}

async function outbound(channelId: string, contactId: string, fields: Partial<typeof messages.$inferInsert> = {}, sendJob = true) {
  return db().transaction(async (tx) => {
    const { conversation } = await openConversation(tx, cast.workspaceId, channelId, contactId);
    const [row] = await tx
      .insert(messages)
      .values({
        id: newId(),
        workspaceId: cast.workspaceId,
        conversationId: conversation.id,
        channelId,
        direction: 'outbound',
        body: 'Thanks, we are on it',
        status: 'queued',
        ...fields,
      })
      .returning();
    if (sendJob && row!.status === 'queued') await t.app.services.jobs.send(tx as Tx, sendOutboundMessage, { workspaceId: cast.workspaceId, messageId: row!.id });
    return row!;
  });
}

async function messageById(id: string) {
  const [row] = await db().select().from(messages).where(eq(messages.id, id));
  return row!;
}

describe('GET /api/webhooks/meta/{channelId} (subscription check)', () => {
  const verify = (channelId: string, query: string) =>
    t.app.inject({ method: 'GET', url: `/api/webhooks/meta/${channelId}?${query}`, remoteAddress: randomIp() });

  it('answers hub.challenge as text/plain for the right verify token, without cookie or workspace header', async () => {
    const res = await verify(whatsapp.id, `hub.mode=subscribe&hub.verify_token=${encodeURIComponent(wa.verifyToken)}&hub.challenge=1158201444`);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain/);
    expect(res.body).toBe('1158201444');
  });

  it('is 403 for a wrong token or mode, 404 for an unknown or live-chat channel', async () => {
    expect((await verify(whatsapp.id, 'hub.mode=subscribe&hub.verify_token=wrong&hub.challenge=1')).statusCode).toBe(403);
    expect((await verify(whatsapp.id, `hub.mode=subscribe&hub.verify_token=${fb.verifyToken}&hub.challenge=1`)).statusCode).toBe(403);
    expect((await verify(whatsapp.id, `hub.mode=unsubscribe&hub.verify_token=${wa.verifyToken}&hub.challenge=1`)).statusCode).toBe(403);
    expect((await verify(whatsapp.id, 'hub.challenge=1')).statusCode).toBe(403);
    const unknown = await verify(randomUUID(), `hub.mode=subscribe&hub.verify_token=${wa.verifyToken}&hub.challenge=1`);
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json()).toEqual({ error: 'Not found' });
    expect((await verify(livechat.id, 'hub.mode=subscribe&hub.verify_token=x&hub.challenge=1')).statusCode).toBe(404);
  });
});

describe('POST /api/webhooks/meta/{channelId} (signature)', () => {
  it('is 401 with nothing stored for a missing, malformed or wrong signature, or one made with another secret', async () => {
    const payload = waText('447700900999', `wamid.${randomUUID()}`, 'should not be stored');
    const raw = JSON.stringify(payload);
    const before = await t.app.services.jobs.countJobs('inbox-webhook', ['created', 'retry', 'active', 'completed', 'failed']);
    for (const signature of [null, 'sha256=', 'md5=abc', sign(raw, fb.appSecret), sign(`${raw} `, wa.appSecret), sign(raw, wa.appSecret).toUpperCase().replace('SHA256', 'sha1')]) {
      const res = await post(whatsapp.id, raw, signature);
      expect(res.statusCode, String(signature)).toBe(401);
      expect(res.json()).toEqual({ error: expect.any(String) });
    }
    // The body re-serialised (other whitespace) no longer matches: the raw bytes are what is signed.
    const reformatted = JSON.stringify(payload, null, 2);
    expect((await post(whatsapp.id, reformatted, sign(raw, wa.appSecret))).statusCode).toBe(401);
    expect(await t.app.services.jobs.countJobs('inbox-webhook', ['created', 'retry', 'active', 'completed', 'failed'])).toBe(before);
    expect(await contactByPhone('+447700900999')).toBeUndefined();
  });

  it('accepts application/json with a charset (as Meta sends it) and answers 200 at once', async () => {
    const raw = JSON.stringify({ object: 'whatsapp_business_account', entry: [] });
    const res = await t.app.inject({
      method: 'POST',
      url: `/api/webhooks/meta/${whatsapp.id}`,
      headers: { 'content-type': 'application/json; charset=utf-8', 'x-hub-signature-256': sign(raw, wa.appSecret), 'user-agent': 'facebookexternalua' },
      payload: raw,
      remoteAddress: randomIp(),
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ received: true });
    await eventually(async () => (await pending()) === 0, 15_000, 'webhook processed');
  });

  it('is 404 for an unknown channel and 400 for a signed body that is not a JSON object', async () => {
    expect((await post(randomUUID(), waText('1', 'x', 'y'))).statusCode).toBe(404);
    expect((await post(livechat.id, waText('1', 'x', 'y'))).statusCode).toBe(404);
    expect((await post(whatsapp.id, '[1,2]')).statusCode).toBe(400);
    expect((await post(whatsapp.id, '{not json')).statusCode).toBe(400);
  });
});

describe('WhatsApp inbound', () => {
  it('creates the contact, its identity, an active conversation and the message; a replay stores nothing new', async () => {
    const wamid = `wamid.${randomUUID()}`;
    const sentAt = Math.floor(Date.now() / 1000) - 60;
    const payload = waText('447700900123', wamid, 'Hello, where is my order?', 'Maria Lopez', String(sentAt));
    await deliver(whatsapp.id, payload);

    const contact = await contactByPhone('+447700900123');
    expect(contact).toMatchObject({ name: 'Maria Lopez', phone: '+447700900123' });
    expect(contact!.lastInboundAt?.getTime()).toBe(sentAt * 1000);
    const identities = await db().select().from(contactIdentities).where(eq(contactIdentities.contactId, contact!.id));
    expect(identities).toEqual([expect.objectContaining({ channelId: whatsapp.id, externalId: '447700900123' })]);
    const convs = await db().select().from(conversations).where(eq(conversations.contactId, contact!.id));
    expect(convs).toHaveLength(1);
    expect(convs[0]).toMatchObject({ channelId: whatsapp.id, status: 'active', workspaceId: cast.workspaceId });
    expect(convs[0]!.lastInboundAt?.getTime()).toBe(sentAt * 1000);
    expect(convs[0]!.lastMessageAt?.getTime()).toBe(sentAt * 1000);
    const stored = await messagesOf(convs[0]!.id);
    expect(stored).toEqual([
      expect.objectContaining({
        direction: 'inbound',
        type: 'text',
        body: 'Hello, where is my order?',
        status: 'delivered',
        providerMessageId: wamid,
        channelId: whatsapp.id,
        senderUserId: null,
      }),
    ]);

    // Meta redelivers: same payload, twice more.
    await deliver(whatsapp.id, payload);
    await deliver(whatsapp.id, payload);
    expect(await messagesOf(convs[0]!.id)).toHaveLength(1);
    expect(await db().select().from(contacts).where(eq(contacts.phone, '+447700900123'))).toHaveLength(1);

    // A next message (an image with a caption) joins the same conversation; an older timestamp never moves the window back.
    await deliver(
      whatsapp.id,
      waEnvelope({
        contacts: [{ profile: { name: 'Maria Lopez' }, wa_id: '447700900123' }],
        messages: [{ from: '447700900123', id: `wamid.${randomUUID()}`, timestamp: String(sentAt - 3600), type: 'image', image: { caption: 'The box', id: 'media-1' } }],
      }),
    );
    const both = await messagesOf(convs[0]!.id);
    expect(both.map((m) => [m.type, m.body])).toEqual([
      ['image', 'The box'],
      ['text', 'Hello, where is my order?'],
    ]);
    const [conv] = await db().select().from(conversations).where(eq(conversations.id, convs[0]!.id));
    expect(conv!.lastInboundAt?.getTime()).toBe(sentAt * 1000);
  });

  it('matches an existing contact by phone (+wa_id) and records the identity', async () => {
    const existing = await db().transaction(async (tx) => {
      const [row] = await insertContacts(tx, cast.workspaceId, [{ id: newId(), workspaceId: cast.workspaceId, name: 'Known Person', phone: '+14155550100' }]);
      return row!;
    });
    await deliver(whatsapp.id, waText('14155550100', `wamid.${randomUUID()}`, 'Hi again', 'Profile Name'));
    const contact = await contactByPhone('+14155550100');
    expect(contact!.id).toBe(existing.id);
    expect(contact!.name).toBe('Known Person');
    expect(contact!.lastInboundAt).not.toBeNull();
    const [identity] = await db().select().from(contactIdentities).where(eq(contactIdentities.externalId, '14155550100'));
    expect(identity!.contactId).toBe(existing.id);
  });
});

/** Collects the events published on the database's notification channel (PGlite or PostgreSQL). */
async function listenEvents() {
  const events: Array<{ type: string; workspaceId: string; conversationId: string; data: any }> = [];
  const onPayload = (payload: string) => events.push(JSON.parse(payload));
  const { pglite } = t.app.services.database;
  if (pglite) {
    const stop = await pglite.listen(EVENTS_CHANNEL, onPayload);
    return { events, stop };
  }
  const client = new pg.Client({ connectionString: t.config.databaseUrl });
  await client.connect();
  client.on('notification', (message) => message.payload && onPayload(message.payload));
  await client.query(`listen ${EVENTS_CHANNEL}`);
  return { events, stop: () => client.end() };
}

describe('events', () => {
  it('publishes message.created and conversation.updated for an inbound message, message.updated for a status', async () => {
    const listener = await listenEvents();
    try {
      const wamid = `wamid.${randomUUID()}`;
      await deliver(whatsapp.id, waText('447700900555', wamid, 'Event me'));
      const created = await eventually(async () => listener.events.find((e) => e.type === 'message.created' && e.data.body === 'Event me'));
      expect(created).toEqual({
        type: 'message.created',
        workspaceId: cast.workspaceId,
        conversationId: expect.any(String),
        data: {
          id: expect.any(String),
          conversationId: created.conversationId,
          direction: 'inbound',
          type: 'text',
          body: 'Event me',
          status: 'delivered',
          error: null,
          senderUserId: null,
          createdAt: expect.stringMatching(ISO_TIMESTAMP),
        },
      });
      const conversation = await eventually(async () =>
        listener.events.find((e) => e.type === 'conversation.updated' && e.conversationId === created.conversationId),
      );
      expect(conversation.data).toMatchObject({
        id: created.conversationId,
        status: 'active',
        channelType: 'whatsapp',
        window: { open: true },
        contact: { name: 'Maria Lopez', phone: '+447700900555' },
      });

      const contact = (await contactByPhone('+447700900555'))!;
      const sentId = `wamid.${randomUUID()}`;
      const message = await outbound(whatsapp.id, contact.id, { status: 'sent', providerMessageId: sentId });
      await deliver(whatsapp.id, waStatus(sentId, 'failed', { errors: [{ code: 131026, title: 'Message undeliverable' }] }));
      const updated = await eventually(async () => listener.events.find((e) => e.type === 'message.updated' && e.data.id === message.id));
      expect(updated.data).toMatchObject({ status: 'failed', direction: 'outbound', error: { code: '131026', message: 'Message undeliverable' } });
    } finally {
      await listener.stop();
    }
  });
});

describe('WhatsApp numbers of one Meta app', () => {
  it("processes a change for another connected number under that number's channel, and ignores unknown numbers", async () => {
    const res = await cast.admin.post('/api/channels', {
      type: 'whatsapp',
      name: 'Second number',
      config: { phoneNumberId: '200200200200', businessAccountId: '102290129340398' },
      secrets: { ...wa, accessToken: `${wa.accessToken}-2` },
    });
    expect(res.status).toBe(201);
    const second = res.body;
    const forSecond = waText('4915112345678', `wamid.${randomUUID()}`, 'to the second number');
    forSecond.entry[0]!.changes[0]!.value.metadata.phone_number_id = '200200200200';
    await deliver(whatsapp.id, forSecond); // Meta calls the app's one callback URL
    const contact = (await contactByPhone('+4915112345678'))!;
    const [conv] = await db().select().from(conversations).where(eq(conversations.contactId, contact.id));
    expect(conv!.channelId).toBe(second.id);

    const unknown = waText('4915199999999', `wamid.${randomUUID()}`, 'to nobody');
    unknown.entry[0]!.changes[0]!.value.metadata.phone_number_id = '999999999';
    await deliver(whatsapp.id, unknown);
    expect(await contactByPhone('+4915199999999')).toBeUndefined();
  });
});

describe('status callbacks', () => {
  it('move outbound messages forward only: a late "sent" after "delivered" is ignored; "failed" after "read" too', async () => {
    const contact = (await contactByPhone('+447700900123'))!;
    const wamid = `wamid.${randomUUID()}`;
    const message = await outbound(whatsapp.id, contact.id, { status: 'sent', providerMessageId: wamid });
    await deliver(whatsapp.id, waStatus(wamid, 'delivered'));
    expect((await messageById(message.id)).status).toBe('delivered');
    await deliver(whatsapp.id, waStatus(wamid, 'sent'));
    expect((await messageById(message.id)).status).toBe('delivered');
    await deliver(whatsapp.id, waStatus(wamid, 'read'));
    expect((await messageById(message.id)).status).toBe('read');
    await deliver(whatsapp.id, waStatus(wamid, 'delivered'));
    await deliver(whatsapp.id, waStatus(wamid, 'failed', { errors: [{ code: 131026, title: 'Message undeliverable' }] }));
    expect(await messageById(message.id)).toMatchObject({ status: 'read', errorCode: null });
  });

  it('a callback that overtakes the send job (id not stored yet, a send in flight) is retried and then applied', async () => {
    const contact = (await contactByPhone('+447700900123'))!;
    const wamid = `wamid.${randomUUID()}`;
    const message = await outbound(whatsapp.id, contact.id, {}, false); // queued, its send "in flight"
    const res = await post(whatsapp.id, waStatus(wamid, 'delivered'));
    expect(res.statusCode).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 700));
    // The send job commits the provider id only now.
    await db().update(messages).set({ status: 'sent', providerMessageId: wamid }).where(eq(messages.id, message.id));
    await eventually(async () => (await messageById(message.id)).status === 'delivered', 20_000, 'late-matched callback');
    await eventually(async () => (await pending()) === 0, 15_000, 'webhook processed');
  }, 40_000);

  it('"failed" records the provider error code and text', async () => {
    const contact = (await contactByPhone('+447700900123'))!;
    const wamid = `wamid.${randomUUID()}`;
    const message = await outbound(whatsapp.id, contact.id, { status: 'sent', providerMessageId: wamid });
    await deliver(
      whatsapp.id,
      waStatus(wamid, 'failed', {
        errors: [
          {
            code: 131047,
            title: 'Re-engagement message',
            message: 'Re-engagement message',
            error_data: { details: 'Message failed to send because more than 24 hours have passed since the customer last replied.' },
          },
        ],
      }),
    );
    expect(await messageById(message.id)).toMatchObject({
      status: 'failed',
      errorCode: '131047',
      errorMessage: expect.stringContaining('more than 24 hours'),
    });
    // A later "delivered" does not revive it.
    await deliver(whatsapp.id, waStatus(wamid, 'delivered'));
    expect((await messageById(message.id)).status).toBe('failed');
  });
});

describe('Messenger inbound', () => {
  const page = (messaging: unknown[]) => ({ object: 'page', entry: [{ id: PAGE_ID, time: Date.now(), messaging }] });

  it('stores a message from a PSID with a new contact; echoes are ignored; delivery callbacks move sends forward', async () => {
    const psid = `${Date.now()}`;
    const mid = `m_${randomUUID()}`;
    await deliver(
      messenger.id,
      page([
        { sender: { id: psid }, recipient: { id: PAGE_ID }, timestamp: Date.now(), message: { mid, text: 'Hi from Messenger' } },
        { sender: { id: PAGE_ID }, recipient: { id: psid }, timestamp: Date.now(), message: { mid: `m_${randomUUID()}`, text: 'echo', is_echo: true } },
      ]),
      fb.appSecret,
    );
    const [identity] = await db().select().from(contactIdentities).where(and(eq(contactIdentities.channelId, messenger.id), eq(contactIdentities.externalId, psid)));
    expect(identity).toBeDefined();
    const [contact] = await db().select().from(contacts).where(eq(contacts.id, identity!.contactId));
    expect(contact).toMatchObject({ name: psid, phone: null });
    const [conv] = await db().select().from(conversations).where(eq(conversations.contactId, contact!.id));
    expect(conv).toMatchObject({ channelId: messenger.id, status: 'active' });
    expect((await messagesOf(conv!.id)).map((m) => [m.direction, m.body, m.providerMessageId])).toEqual([['inbound', 'Hi from Messenger', mid]]);

    // Replayed: nothing new.
    await deliver(messenger.id, page([{ sender: { id: psid }, recipient: { id: PAGE_ID }, timestamp: Date.now(), message: { mid, text: 'Hi from Messenger' } }]), fb.appSecret);
    expect(await messagesOf(conv!.id)).toHaveLength(1);

    // The page's signature is checked with the page channel's app secret.
    expect((await post(messenger.id, page([]), undefined, wa.appSecret)).statusCode).toBe(401);

    const sentMid = `m_${randomUUID()}`;
    const sent = await outbound(messenger.id, contact!.id, { status: 'sent', providerMessageId: sentMid });
    await deliver(messenger.id, page([{ sender: { id: psid }, recipient: { id: PAGE_ID }, timestamp: Date.now(), delivery: { mids: [sentMid], watermark: Date.now() } }]), fb.appSecret);
    expect((await messageById(sent.id)).status).toBe('delivered');
    await deliver(messenger.id, page([{ sender: { id: psid }, recipient: { id: PAGE_ID }, timestamp: Date.now(), read: { watermark: Date.now() } }]), fb.appSecret);
    expect((await messageById(sent.id)).status).toBe('read');
  });
});

describe('outbound delivery (inbox-send-message job)', () => {
  it('sends a WhatsApp text as Meta documents it and marks the message sent with the wamid', async () => {
    graph.respondWith(null);
    const contact = (await contactByPhone('+447700900123'))!;
    const before = graph.requests.length;
    const message = await outbound(whatsapp.id, contact.id, { body: 'Your order ships today' });
    const sent = await eventually(async () => {
      const row = await messageById(message.id);
      return row.status !== 'queued' && row;
    });
    expect(sent).toMatchObject({ status: 'sent', errorCode: null });
    const request = graph.requests[before]!;
    expect(request).toMatchObject({
      method: 'POST',
      version: '/v21.0',
      path: `/${PHONE_NUMBER_ID}/messages`,
      token: wa.accessToken,
      problems: [],
      body: { messaging_product: 'whatsapp', recipient_type: 'individual', to: '447700900123', type: 'text', text: { body: 'Your order ships today' } },
    });
    expect(sent.providerMessageId).toBe(graph.sentIds.at(-1));
    expect(sent.providerMessageId).toMatch(/^wamid\./);

    // Its status callbacks now find it.
    await deliver(whatsapp.id, waStatus(sent.providerMessageId!, 'delivered'));
    expect((await messageById(message.id)).status).toBe('delivered');
  });

  it('sends a Messenger reply (RESPONSE within 24 hours) to the PSID through the page', async () => {
    const [identity] = await db().select().from(contactIdentities).where(eq(contactIdentities.channelId, messenger.id));
    const before = graph.requests.length;
    const message = await outbound(messenger.id, identity!.contactId, { body: 'Hello from the page' });
    const sent = await eventually(async () => {
      const row = await messageById(message.id);
      return row.status !== 'queued' && row;
    });
    expect(sent.status).toBe('sent');
    expect(graph.requests[before]).toMatchObject({
      path: `/${PAGE_ID}/messages`,
      token: fb.accessToken,
      problems: [],
      body: { recipient: { id: identity!.externalId }, messaging_type: 'RESPONSE', message: { text: 'Hello from the page' } },
    });
    expect(sent.providerMessageId).toMatch(/^m_/);
  });

  it('after 24 hours a Messenger send carries the HUMAN_AGENT tag', async () => {
    const [identity] = await db().select().from(contactIdentities).where(eq(contactIdentities.channelId, messenger.id));
    await db()
      .update(conversations)
      .set({ lastInboundAt: new Date(Date.now() - 2 * 24 * 3600 * 1000) })
      .where(and(eq(conversations.channelId, messenger.id), eq(conversations.contactId, identity!.contactId)));
    const before = graph.requests.length;
    const message = await outbound(messenger.id, identity!.contactId, { body: 'Following up' });
    await eventually(async () => (await messageById(message.id)).status === 'sent');
    expect(graph.requests[before]).toMatchObject({
      problems: [],
      body: { recipient: { id: identity!.externalId }, messaging_type: 'MESSAGE_TAG', tag: 'HUMAN_AGENT', message: { text: 'Following up' } },
    });
  });

  it('a rejection (400 with a Meta error) ends the message failed with the code and text, without retrying', async () => {
    const contact = (await contactByPhone('+447700900123'))!;
    let calls = 0;
    graph.respondWith(() => {
      calls++;
      return { status: 400, body: metaErrorBody(131047, 'Re-engagement message', { details: 'More than 24 hours have passed' }) };
    });
    try {
      const message = await outbound(whatsapp.id, contact.id);
      const failed = await eventually(async () => {
        const row = await messageById(message.id);
        return row.status !== 'queued' && row;
      });
      expect(failed).toMatchObject({ status: 'failed', errorCode: '131047', errorMessage: expect.stringContaining('Re-engagement message') });
      expect(failed.errorMessage).toContain('More than 24 hours');
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(calls).toBe(1);
    } finally {
      graph.respondWith(null);
    }
  });

  it('a transient error (500) is retried and the message ends sent', async () => {
    const contact = (await contactByPhone('+447700900123'))!;
    let calls = 0;
    graph.respondWith(() => (++calls === 1 ? { status: 500, body: metaErrorBody(2, 'Service temporarily unavailable') } : undefined));
    try {
      const message = await outbound(whatsapp.id, contact.id, { body: 'retried' });
      await new Promise((resolve) => setTimeout(resolve, 1000));
      expect((await messageById(message.id)).status).toBe('queued');
      const sent = await eventually(
        async () => {
          const row = await messageById(message.id);
          return row.status !== 'queued' && row;
        },
        28_000,
        'retried send',
      );
      expect(sent.status).toBe('sent');
      expect(calls).toBe(2);
    } finally {
      graph.respondWith(null);
    }
  }, 40_000);

  it('a contact without a Messenger identity cannot be messaged there: failed with no_recipient', async () => {
    const contact = (await contactByPhone('+14155550100'))!;
    const message = await outbound(messenger.id, contact.id);
    const failed = await eventually(async () => {
      const row = await messageById(message.id);
      return row.status !== 'queued' && row;
    });
    expect(failed).toMatchObject({ status: 'failed', errorCode: 'no_recipient' });
  });

  it('live-chat messages are marked sent without any Graph call', async () => {
    const contact = (await contactByPhone('+14155550100'))!;
    const before = graph.requests.length;
    const message = await outbound(livechat.id, contact.id, { body: 'Hi visitor' });
    const sent = await eventually(async () => {
      const row = await messageById(message.id);
      return row.status !== 'queued' && row;
    });
    expect(sent).toMatchObject({ status: 'sent', providerMessageId: null });
    expect(graph.requests.length).toBe(before);
  });
});

describe('deliverOutboundMessage on its last attempt', () => {
  const context = (finalAttempt: boolean) => ({
    db: db(),
    services: { secret: t.app.services.secret, graphApiUrl: graph.url },
    log: t.app.log,
    jobs: t.app.services.jobs,
    jobId: randomUUID(),
    finalAttempt,
  });

  it('throws on a transient error while retries remain, and records failed (429 code) on the final attempt', async () => {
    const contact = (await contactByPhone('+447700900123'))!;
    graph.respondWith(() => ({ status: 429, body: metaErrorBody(130429, 'Rate limit hit') }));
    try {
      const message = await outbound(whatsapp.id, contact.id, {}, false);
      await expect(deliverOutboundMessage({ workspaceId: cast.workspaceId, messageId: message.id }, context(false))).rejects.toThrow('Rate limit hit');
      expect((await messageById(message.id)).status).toBe('queued');
      await expect(deliverOutboundMessage({ workspaceId: cast.workspaceId, messageId: message.id }, context(true))).rejects.toThrow();
      expect(await messageById(message.id)).toMatchObject({ status: 'failed', errorCode: '130429', errorMessage: 'Rate limit hit' });
      // Idempotent: a message that is no longer queued is left alone.
      const calls = graph.requests.length;
      await deliverOutboundMessage({ workspaceId: cast.workspaceId, messageId: message.id }, context(true));
      expect(graph.requests.length).toBe(calls);
    } finally {
      graph.respondWith(null);
    }
  });
});

describe('Instagram', () => {
  it('stores an inbound Instagram message and replies through /me/messages with the page token', async () => {
    const ig = { accessToken: `EAAG-ig-${randomUUID()}`, appSecret: `ig-app-${randomUUID()}`, verifyToken: 'v' };
    const res = await cast.admin.post('/api/channels', { type: 'instagram', name: 'IG', config: { accountId: '17841400000001' }, secrets: ig });
    expect(res.status).toBe(201);
    const igsid = `ig${Date.now()}`;
    const mid = `aWdfZAG1f${randomUUID()}`;
    await deliver(
      res.body.id,
      { object: 'instagram', entry: [{ id: '17841400000001', time: Date.now(), messaging: [{ sender: { id: igsid }, recipient: { id: '17841400000001' }, timestamp: Date.now(), message: { mid, text: 'Hi on IG' } }] }] },
      ig.appSecret,
    );
    const [identity] = await db().select().from(contactIdentities).where(and(eq(contactIdentities.channelId, res.body.id), eq(contactIdentities.externalId, igsid)));
    expect(identity).toBeDefined();
    const before = graph.requests.length;
    const message = await outbound(res.body.id, identity!.contactId, { body: 'Hello on IG' });
    const sent = await eventually(async () => {
      const row = await messageById(message.id);
      return row.status !== 'queued' && row;
    });
    // The fake only knows the tokens it was started with: this one is rejected as Meta rejects a bad token.
    expect(sent).toMatchObject({ status: 'failed', errorCode: '190' });
    expect(graph.requests[before]).toMatchObject({
      path: '/me/messages',
      token: ig.accessToken,
      body: { recipient: { id: igsid }, messaging_type: 'RESPONSE', message: { text: 'Hello on IG' } },
    });
  });
});

describe('Graph failure classification', () => {
  it.each([
    [429, {}, true],
    [500, {}, true],
    [503, undefined, true],
    [400, metaErrorBody(4, 'Application request limit reached'), true],
    [400, metaErrorBody(80007, 'Rate limit'), true],
    [400, metaErrorBody(130429, 'Rate limit hit'), true],
    [400, metaErrorBody(613, 'Calls to this api have exceeded the rate limit'), true],
    [400, metaErrorBody(131047, 'Re-engagement message'), false],
    [401, metaErrorBody(190, 'Invalid OAuth access token'), false],
    [400, metaErrorBody(100, 'Invalid parameter'), false],
    [404, undefined, false],
  ])('HTTP %i %j → transient %s', (status, body, transient) => {
    const error = classifyGraphFailure(status, body);
    expect(error.transient).toBe(transient);
    const code = (body as { error?: { code?: number } } | undefined)?.error?.code;
    expect(error.code).toBe(code !== undefined ? String(code) : `http_${status}`);
  });
});
