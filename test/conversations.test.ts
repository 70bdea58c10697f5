// Conversations and messages end to end: listing with exact totals and filters, reading, triage (status, snooze,
// assignee, the reopen conflict), message history with before/limit, agents' replies within each channel's
// messaging window (WhatsApp, Messenger, Instagram, live chat) with their send job, roles, and isolation between
// workspaces. Conversations come from inbound messages, so the tests seed them in the database.
import { randomUUID } from 'node:crypto';
import { and, eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryRows } from '../src/db/client.js';
import { listen } from '../src/db/listen.js';
import { type ChannelType, channels, conversations, messages } from '../src/db/schema/index.js';
import { newId } from '../src/ids.js';
import { insertContacts } from '../src/modules/contacts/store.js';
import { JobQueue } from '../src/jobs/queue.js';
import { wakeConversation } from '../src/modules/conversations/jobs.js';
import { openConversation } from '../src/modules/conversations/store.js';
import { EVENTS_CHANNEL } from '../src/modules/events/publish.js';
import {
  type Client,
  createTestApp,
  eventually,
  expectForbidden,
  expectNotFound,
  expectValidation,
  ISO_TIMESTAMP,
  signUp,
  type TestApp,
  workspaceWithRoles,
} from './helpers.js';

let t: TestApp;
let cast: Awaited<ReturnType<typeof workspaceWithRoles>>;
beforeAll(async () => {
  // No job workers: the send jobs stay in the queue to be looked at, and no provider is called.
  t = await createTestApp({ RATE_LIMIT_FACTOR: '10', WORKERS: '0' });
  cast = await workspaceWithRoles(t.app);
});
afterAll(async () => t.close());

const CONVERSATIONS = '/api/conversations';
const HOUR = 60 * 60 * 1000;
const db = () => t.app.services.database.db;
const ago = (ms: number) => new Date(Date.now() - ms);

let phoneCounter = 0;
const uniquePhone = () => `+4420794${String(60000 + ++phoneCounter).padStart(5, '0')}`;

async function seedChannel(workspaceId: string, type: ChannelType): Promise<string> {
  const id = newId();
  await db().insert(channels).values({ id, workspaceId, type, name: `${type} ${id.slice(-6)}`, config: {} });
  return id;
}

async function seedContact(workspaceId: string, name = `Contact ${randomUUID().slice(0, 6)}`) {
  const [contact] = await insertContacts(db(), workspaceId, [{ id: newId(), workspaceId, name, phone: uniquePhone() }]);
  return contact!;
}

interface Seeded {
  id: string;
  channelId: string;
  contactId: string;
  contactName: string;
  contactPhone: string | null;
}

/** A conversation on a new channel of `type` (or the given channel) with a new contact (or the given one). */
async function seedConversation(
  workspaceId: string,
  options: { type?: ChannelType; channelId?: string; contactId?: string; lastInboundAt?: Date | null; lastMessageAt?: Date | null } = {},
): Promise<Seeded> {
  const channelId = options.channelId ?? (await seedChannel(workspaceId, options.type ?? 'whatsapp'));
  const contact = options.contactId
    ? { id: options.contactId, name: '', phone: null }
    : await seedContact(workspaceId);
  const { conversation } = await db().transaction((tx) => openConversation(tx, workspaceId, channelId, contact.id));
  const lastInboundAt = options.lastInboundAt ?? null;
  const lastMessageAt = options.lastMessageAt === undefined ? lastInboundAt : options.lastMessageAt;
  if (lastInboundAt) await seedInbound(workspaceId, conversation.id, channelId, lastInboundAt);
  await db().update(conversations).set({ lastInboundAt, lastMessageAt }).where(eq(conversations.id, conversation.id));
  return { id: conversation.id, channelId, contactId: contact.id, contactName: contact.name, contactPhone: contact.phone };
}

/** An inbound message stored as the webhook would (the conversation's timestamps are set by the caller). */
async function seedInbound(workspaceId: string, conversationId: string, channelId: string, at: Date, body = 'Hello') {
  const id = newId();
  await db().insert(messages).values({
    id,
    workspaceId,
    conversationId,
    channelId,
    direction: 'inbound',
    type: 'text',
    body,
    status: 'delivered',
    providerMessageId: `wamid.${id}`,
    createdAt: at,
    updatedAt: at,
  });
  return id;
}

async function messageCount(conversationId: string): Promise<number> {
  const rows = await db().select({ id: messages.id }).from(messages).where(eq(messages.conversationId, conversationId));
  return rows.length;
}

async function sendJobs(messageId?: string) {
  return queryRows<{ name: string; data: { workspaceId: string; messageId: string } }>(
    db(),
    messageId
      ? sql`select name, data from pgboss.job where name = 'inbox-send-message' and data->>'messageId' = ${messageId}`
      : sql`select name, data from pgboss.job where name = 'inbox-send-message'`,
  );
}

async function send(client: Client, conversationId: string, body: Record<string, unknown>) {
  return client.post(`${CONVERSATIONS}/${conversationId}/messages`, body);
}

describe('GET /api/conversations', () => {
  it('lists the most recent first, never-messaged last, with exact totals on every page', async () => {
    const { client, workspaceId } = await signUp(t.app);
    const channelId = await seedChannel(workspaceId, 'whatsapp');
    const never = await seedConversation(workspaceId, { channelId, lastInboundAt: null });
    const hours = [5, 1, 3, 2, 4];
    const seeded: Seeded[] = [];
    for (const h of hours) seeded.push(await seedConversation(workspaceId, { channelId, lastInboundAt: ago(h * HOUR) }));
    const tie = ago(10 * HOUR);
    const tieA = await seedConversation(workspaceId, { channelId, lastInboundAt: tie });
    const tieB = await seedConversation(workspaceId, { channelId, lastInboundAt: tie });
    const expected = [
      ...[...seeded].sort((a, b) => hours[seeded.indexOf(a)]! - hours[seeded.indexOf(b)]!).map((c) => c.id),
      ...[tieA.id, tieB.id].sort().reverse(),
      never.id,
    ];

    const all = await client.get(CONVERSATIONS);
    expect(all.status).toBe(200);
    expect(all.body.total).toBe(8);
    expect(all.body.items.map((c: { id: string }) => c.id)).toEqual(expected);

    const pages: string[] = [];
    for (let offset = 0; offset < 8; offset += 3) {
      const page = await client.get(`${CONVERSATIONS}?limit=3&offset=${offset}`);
      expect(page.body.total).toBe(8);
      pages.push(...page.body.items.map((c: { id: string }) => c.id));
    }
    expect(pages).toEqual(expected);
    const last = await client.get(`${CONVERSATIONS}?limit=2&offset=6`);
    expect(last.body.items.map((c: { id: string }) => c.id)).toEqual(expected.slice(6));
    const beyond = await client.get(`${CONVERSATIONS}?offset=50`);
    expect(beyond.body).toEqual({ items: [], total: 8 });
  });

  it('returns the full record with the channel type, the window and the contact', async () => {
    const { client, workspaceId } = await signUp(t.app);
    const inbound = ago(HOUR);
    const c = await seedConversation(workspaceId, { type: 'messenger', lastInboundAt: inbound });
    const res = await client.get(CONVERSATIONS);
    expect(res.body.items).toEqual([
      {
        id: c.id,
        contactId: c.contactId,
        channelId: c.channelId,
        channelType: 'messenger',
        status: 'active',
        snoozedUntil: null,
        assigneeId: null,
        lastMessageAt: inbound.toISOString(),
        lastInboundAt: inbound.toISOString(),
        window: {
          open: true,
          closesAt: new Date(inbound.getTime() + 24 * HOUR).toISOString(),
          humanAgentClosesAt: new Date(inbound.getTime() + 7 * 24 * HOUR).toISOString(),
        },
        contact: { id: c.contactId, name: c.contactName, phone: c.contactPhone },
        createdAt: expect.stringMatching(ISO_TIMESTAMP),
        updatedAt: expect.stringMatching(ISO_TIMESTAMP),
      },
    ]);
    expect(res.body.total).toBe(1);
  });

  it('filters by status, channelId, assigneeId and contactId, with totals of the filtered set', async () => {
    const { client, workspaceId, user } = await signUp(t.app);
    const whatsapp = await seedChannel(workspaceId, 'whatsapp');
    const livechat = await seedChannel(workspaceId, 'livechat');
    const contact = await seedContact(workspaceId);
    const a = await seedConversation(workspaceId, { channelId: whatsapp, contactId: contact.id, lastInboundAt: ago(HOUR) });
    const b = await seedConversation(workspaceId, { channelId: livechat, contactId: contact.id, lastInboundAt: ago(2 * HOUR) });
    const c = await seedConversation(workspaceId, { channelId: whatsapp, lastInboundAt: ago(3 * HOUR) });
    const d = await seedConversation(workspaceId, { channelId: livechat, lastInboundAt: ago(4 * HOUR) });
    expect((await client.patch(`${CONVERSATIONS}/${b.id}`, { status: 'pending' })).status).toBe(200);
    expect((await client.patch(`${CONVERSATIONS}/${d.id}`, { status: 'pending', assigneeId: user.id })).status).toBe(200);
    expect((await client.patch(`${CONVERSATIONS}/${c.id}`, { assigneeId: user.id })).status).toBe(200);

    const ids = async (query: string) => {
      const res = await client.get(`${CONVERSATIONS}?${query}`);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body.total).toBe(res.body.items.length);
      return res.body.items.map((item: { id: string }) => item.id);
    };
    expect(await ids('status=pending')).toEqual([b.id, d.id]);
    expect(await ids('status=active')).toEqual([a.id, c.id]);
    expect(await ids('status=resolved')).toEqual([]);
    expect(await ids(`channelId=${livechat}`)).toEqual([b.id, d.id]);
    expect(await ids(`contactId=${contact.id}`)).toEqual([a.id, b.id]);
    expect(await ids(`assigneeId=${user.id}`)).toEqual([c.id, d.id]);
    expect(await ids(`assigneeId=${user.id}&status=pending&channelId=${livechat}`)).toEqual([d.id]);
    const page = await client.get(`${CONVERSATIONS}?channelId=${whatsapp}&limit=1&offset=1`);
    expect(page.body).toMatchObject({ items: [{ id: c.id }], total: 2 });
    expect((await client.get(`${CONVERSATIONS}?limit=1`)).body.total).toBe(4);
  });

  it("yields an empty page for another workspace's channel, contact and assignee, and never shows its conversations", async () => {
    const theirs = await seedConversation(cast.workspaceId, { lastInboundAt: ago(HOUR) });
    const outsider = cast.outsider;
    for (const query of [`channelId=${theirs.channelId}`, `contactId=${theirs.contactId}`, `assigneeId=${cast.owner.user!.id}`]) {
      const res = await outsider.get(`${CONVERSATIONS}?${query}`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ items: [], total: 0 });
    }
    const all = await outsider.get(`${CONVERSATIONS}?limit=100`);
    expect(all.body.items.map((c: { id: string }) => c.id)).not.toContain(theirs.id);
  });

  it('is open to every role and rejects bad queries with details', async () => {
    expect((await cast.viewer.get(CONVERSATIONS)).status).toBe(200);
    expectValidation(await cast.viewer.get(`${CONVERSATIONS}?limit=101`), 'limit');
    expectValidation(await cast.viewer.get(`${CONVERSATIONS}?limit=0`), 'limit');
    expectValidation(await cast.viewer.get(`${CONVERSATIONS}?offset=-1`), 'offset');
    expectValidation(await cast.viewer.get(`${CONVERSATIONS}?status=open`), 'status');
    expectValidation(await cast.viewer.get(`${CONVERSATIONS}?channelId=nope`), 'channelId');
    expectValidation(await cast.viewer.get(`${CONVERSATIONS}?assigneeId=nope`), 'assigneeId');
    expectValidation(await cast.viewer.get(`${CONVERSATIONS}?contactId=nope`), 'contactId');
  });

  it('needs a session', async () => {
    const res = await cast.viewer.get(CONVERSATIONS, { anonymous: true });
    expect(res.status).toBe(401);
  });
});

describe('GET /api/conversations/{id}', () => {
  it('returns the conversation, the same as in the list', async () => {
    const { client, workspaceId } = await signUp(t.app);
    const c = await seedConversation(workspaceId, { lastInboundAt: ago(HOUR) });
    const one = await client.get(`${CONVERSATIONS}/${c.id}`);
    expect(one.status).toBe(200);
    expect(one.body).toEqual((await client.get(CONVERSATIONS)).body.items[0]);
  });

  it('shows the messaging window of each channel type', async () => {
    const inbound = ago(HOUR);
    const window = async (options: Parameters<typeof seedConversation>[1]) => {
      const c = await seedConversation(cast.workspaceId, options);
      const res = await cast.viewer.get(`${CONVERSATIONS}/${c.id}`);
      expect(res.status).toBe(200);
      return res.body.window;
    };
    const closes = new Date(inbound.getTime() + 24 * HOUR).toISOString();
    const humanCloses = new Date(inbound.getTime() + 7 * 24 * HOUR).toISOString();
    expect(await window({ type: 'whatsapp', lastInboundAt: inbound })).toEqual({ open: true, closesAt: closes, humanAgentClosesAt: null });
    expect(await window({ type: 'messenger', lastInboundAt: inbound })).toEqual({
      open: true,
      closesAt: closes,
      humanAgentClosesAt: humanCloses,
    });
    expect(await window({ type: 'instagram', lastInboundAt: inbound })).toEqual({
      open: true,
      closesAt: closes,
      humanAgentClosesAt: humanCloses,
    });
    expect(await window({ type: 'livechat', lastInboundAt: inbound })).toEqual({ open: true, closesAt: null, humanAgentClosesAt: null });
    expect(await window({ type: 'livechat', lastInboundAt: null })).toEqual({ open: true, closesAt: null, humanAgentClosesAt: null });
    expect(await window({ type: 'whatsapp', lastInboundAt: null })).toEqual({ open: false, closesAt: null, humanAgentClosesAt: null });
    const old = ago(25 * HOUR);
    expect(await window({ type: 'whatsapp', lastInboundAt: old })).toEqual({
      open: false,
      closesAt: new Date(old.getTime() + 24 * HOUR).toISOString(),
      humanAgentClosesAt: null,
    });
  });

  it("is a 404 for unknown ids and another workspace's conversations, a 400 for a malformed id", async () => {
    const c = await seedConversation(cast.workspaceId, { lastInboundAt: ago(HOUR) });
    expectNotFound(await cast.outsider.get(`${CONVERSATIONS}/${c.id}`));
    expectNotFound(await cast.viewer.get(`${CONVERSATIONS}/${randomUUID()}`));
    expectValidation(await cast.viewer.get(`${CONVERSATIONS}/nope`), 'id');
    expect((await cast.viewer.get(`${CONVERSATIONS}/${c.id}`, { anonymous: true })).status).toBe(401);
  });
});

describe('the end of a snooze', () => {
  it('wakes the conversation up when snoozedUntil passes (a job sent with the snooze), and not after a newer snooze', async () => {
    const seeded = await seedConversation(cast.workspaceId, { lastInboundAt: ago(60_000) });
    const other = await seedConversation(cast.workspaceId, { lastInboundAt: ago(60_000) });
    const soon = () => new Date(Date.now() + 1500).toISOString();
    expect((await cast.agent.patch(`/api/conversations/${seeded.id}`, { status: 'snoozed', snoozedUntil: soon() })).status).toBe(200);
    expect((await cast.agent.patch(`/api/conversations/${other.id}`, { status: 'snoozed', snoozedUntil: soon() })).status).toBe(200);
    // Snoozed again for an hour: the first job finds the new snooze still running and leaves it.
    const later = new Date(Date.now() + 3_600_000).toISOString();
    expect((await cast.agent.patch(`/api/conversations/${other.id}`, { status: 'snoozed', snoozedUntil: later })).status).toBe(200);
    // This file's app runs no workers; a worker on the same database runs the wake-up jobs.
    const worker = new JobQueue({
      database: t.app.services.database,
      catalog: [wakeConversation],
      services: { secret: 'x'.repeat(32), graphApiUrl: 'http://127.0.0.1:9' },
      log: t.app.log,
      workers: 1,
    });
    await worker.start();
    try {
      const woken = await eventually(async () => {
        const res = await cast.viewer.get(`/api/conversations/${seeded.id}`);
        return res.body.status === 'active' && res.body;
      }, 15_000, 'conversation woken');
      expect(woken.snoozedUntil).toBeNull();
      const jobsOfOther = () =>
        queryRows<{ state: string }>(
          db(),
          sql`select state::text from pgboss.job where name = ${wakeConversation.name} and data->>'conversationId' = ${other.id} order by start_after`,
        );
      await eventually(async () => (await jobsOfOther())[0]?.state === 'completed', 10_000, 'the first snooze\'s job ran');
      expect((await jobsOfOther()).map((job) => job.state)).toEqual(['completed', 'created']);
      expect((await cast.viewer.get(`/api/conversations/${other.id}`)).body).toMatchObject({ status: 'snoozed', snoozedUntil: later });
    } finally {
      await worker.stop();
    }
  });
});

describe('PATCH /api/conversations/{id}', () => {
  it('changes the status (Agent), touching updatedAt', async () => {
    const c = await seedConversation(cast.workspaceId, { lastInboundAt: ago(HOUR) });
    const before = (await cast.agent.get(`${CONVERSATIONS}/${c.id}`)).body;
    for (const status of ['pending', 'resolved', 'active'] as const) {
      const res = await cast.agent.patch(`${CONVERSATIONS}/${c.id}`, { status });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body).toMatchObject({ id: c.id, status, snoozedUntil: null });
      expect(res.body.updatedAt > before.updatedAt).toBe(true);
      expect((await cast.viewer.get(`${CONVERSATIONS}/${c.id}`)).body).toEqual(res.body);
    }
  });

  it('snoozes only until a future time, and other statuses clear it', async () => {
    const c = await seedConversation(cast.workspaceId, { lastInboundAt: ago(HOUR) });
    const url = `${CONVERSATIONS}/${c.id}`;
    const until = new Date(Date.now() + 2 * HOUR);
    expectValidation(await cast.agent.patch(url, { status: 'snoozed' }), 'snoozedUntil');
    expectValidation(await cast.agent.patch(url, { status: 'snoozed', snoozedUntil: null }), 'snoozedUntil');
    expectValidation(await cast.agent.patch(url, { status: 'snoozed', snoozedUntil: ago(HOUR).toISOString() }), 'snoozedUntil');
    expectValidation(await cast.agent.patch(url, { status: 'snoozed', snoozedUntil: 'tomorrow' }), 'snoozedUntil');
    expectValidation(await cast.agent.patch(url, { status: 'active', snoozedUntil: until.toISOString() }), 'snoozedUntil');
    expectValidation(await cast.agent.patch(url, { snoozedUntil: until.toISOString() }), 'snoozedUntil');
    expect((await cast.agent.get(url)).body).toMatchObject({ status: 'active', snoozedUntil: null });

    const snoozed = await cast.agent.patch(url, { status: 'snoozed', snoozedUntil: until.toISOString() });
    expect(snoozed.status).toBe(200);
    expect(snoozed.body).toMatchObject({ status: 'snoozed', snoozedUntil: until.toISOString() });
    const later = new Date(Date.now() + 5 * HOUR);
    const moved = await cast.agent.patch(url, { snoozedUntil: later.toISOString() });
    expect(moved.body).toMatchObject({ status: 'snoozed', snoozedUntil: later.toISOString() });
    const assigned = await cast.agent.patch(url, { assigneeId: cast.agent.user!.id });
    expect(assigned.body).toMatchObject({ status: 'snoozed', snoozedUntil: later.toISOString(), assigneeId: cast.agent.user!.id });
    const woken = await cast.agent.patch(url, { status: 'pending' });
    expect(woken.body).toMatchObject({ status: 'pending', snoozedUntil: null });
  });

  it('assigns to members and Org Owners of the workspace only; null unassigns', async () => {
    const c = await seedConversation(cast.workspaceId, { lastInboundAt: ago(HOUR) });
    const url = `${CONVERSATIONS}/${c.id}`;
    for (const person of [cast.viewer, cast.admin, cast.owner, cast.agent]) {
      const res = await cast.agent.patch(url, { assigneeId: person.user!.id });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body.assigneeId).toBe(person.user!.id);
    }
    expectValidation(await cast.agent.patch(url, { assigneeId: cast.outsider.user!.id }), 'assigneeId');
    expectValidation(await cast.agent.patch(url, { assigneeId: randomUUID() }), 'assigneeId');
    expectValidation(await cast.agent.patch(url, { assigneeId: 'nope' }), 'assigneeId');
    expect((await cast.agent.get(url)).body.assigneeId).toBe(cast.agent.user!.id);
    const cleared = await cast.agent.patch(url, { assigneeId: null });
    expect(cleared.body).toMatchObject({ assigneeId: null, status: 'active' });
  });

  it('is a 409 to reopen a resolved conversation while the contact has another open one on the channel', async () => {
    const first = await seedConversation(cast.workspaceId, { lastInboundAt: ago(3 * HOUR) });
    expect((await cast.agent.patch(`${CONVERSATIONS}/${first.id}`, { status: 'resolved' })).status).toBe(200);
    const second = await seedConversation(cast.workspaceId, {
      channelId: first.channelId,
      contactId: first.contactId,
      lastInboundAt: ago(HOUR),
    });
    expect(second.id).not.toBe(first.id);
    for (const status of ['active', 'pending'] as const) {
      const res = await cast.agent.patch(`${CONVERSATIONS}/${first.id}`, { status });
      expect(res.status).toBe(409);
      expect(res.body).toEqual({ error: expect.stringContaining('open conversation') });
    }
    expect((await cast.agent.get(`${CONVERSATIONS}/${first.id}`)).body.status).toBe('resolved');
    expect((await cast.agent.patch(`${CONVERSATIONS}/${second.id}`, { status: 'resolved' })).status).toBe(200);
    const reopened = await cast.agent.patch(`${CONVERSATIONS}/${first.id}`, { status: 'active' });
    expect(reopened.status).toBe(200);
    expect(reopened.body.status).toBe('active');
  });

  it('rejects bad bodies with details', async () => {
    const c = await seedConversation(cast.workspaceId, { lastInboundAt: ago(HOUR) });
    const url = `${CONVERSATIONS}/${c.id}`;
    expectValidation(await cast.agent.patch(url, {}), '');
    expectValidation(await cast.agent.patch(url, { status: 'closed' }), 'status');
    expectValidation(await cast.agent.patch(url, { status: 'active', colour: 'red' }), 'colour');
    expectValidation(await cast.agent.patch(url, { status: 'active', contactId: randomUUID() }), 'contactId');
  });

  it('is a 403 for Viewers, 401 without a session, 404 across workspaces', async () => {
    const c = await seedConversation(cast.workspaceId, { lastInboundAt: ago(HOUR) });
    const url = `${CONVERSATIONS}/${c.id}`;
    expectForbidden(await cast.viewer.patch(url, { status: 'pending' }));
    expect((await cast.agent.patch(url, { status: 'pending' }, { anonymous: true })).status).toBe(401);
    expectNotFound(await cast.outsider.patch(url, { status: 'pending' }));
    expectNotFound(await cast.agent.patch(`${CONVERSATIONS}/${randomUUID()}`, { status: 'pending' }));
    expect((await cast.agent.get(url)).body.status).toBe('active');
  });
});

describe('GET /api/conversations/{id}/messages', () => {
  async function withHistory(count: number) {
    const c = await seedConversation(cast.workspaceId, { type: 'livechat', lastInboundAt: null });
    const start = Date.now() - count * 60_000;
    const ids: string[] = [];
    for (let i = 0; i < count; i++) {
      ids.push(await seedInbound(cast.workspaceId, c.id, c.channelId, new Date(start + i * 60_000), `message ${i}`));
    }
    return { c, ids };
  }
  const idsOf = (res: { body: { messages: { id: string }[] } }) => res.body.messages.map((m) => m.id);

  it('lists the messages oldest first, in the message shape', async () => {
    const { c, ids } = await withHistory(3);
    const res = await cast.viewer.get(`${CONVERSATIONS}/${c.id}/messages`);
    expect(res.status).toBe(200);
    expect(idsOf(res)).toEqual(ids);
    expect(res.body.messages[0]).toEqual({
      id: ids[0],
      conversationId: c.id,
      direction: 'inbound',
      type: 'text',
      body: 'message 0',
      status: 'delivered',
      error: null,
      senderUserId: null,
      createdAt: expect.stringMatching(ISO_TIMESTAMP),
    });
  });

  it('pages backwards with before and limit, each page oldest first', async () => {
    const { c, ids } = await withHistory(7);
    const url = `${CONVERSATIONS}/${c.id}/messages`;
    expect(idsOf(await cast.viewer.get(`${url}?limit=3`))).toEqual(ids.slice(4));
    expect(idsOf(await cast.viewer.get(`${url}?limit=3&before=${ids[4]}`))).toEqual(ids.slice(1, 4));
    expect(idsOf(await cast.viewer.get(`${url}?limit=3&before=${ids[1]}`))).toEqual([ids[0]]);
    expect(idsOf(await cast.viewer.get(`${url}?before=${ids[0]}`))).toEqual([]);
    expect(idsOf(await cast.viewer.get(`${url}?before=${ids[6]}`))).toEqual(ids.slice(0, 6));
  });

  it('breaks ties of one timestamp by id, so pages never overlap or skip', async () => {
    const c = await seedConversation(cast.workspaceId, { type: 'livechat' });
    const at = ago(HOUR);
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) ids.push(await seedInbound(cast.workspaceId, c.id, c.channelId, at));
    ids.sort();
    const url = `${CONVERSATIONS}/${c.id}/messages`;
    expect(idsOf(await cast.viewer.get(url))).toEqual(ids);
    expect(idsOf(await cast.viewer.get(`${url}?limit=2&before=${ids[2]}`))).toEqual(ids.slice(0, 2));
  });

  it('rejects a bad limit and a before that is not a message of the conversation', async () => {
    const { c } = await withHistory(1);
    const other = await withHistory(1);
    const url = `${CONVERSATIONS}/${c.id}/messages`;
    expectValidation(await cast.viewer.get(`${url}?limit=0`), 'limit');
    expectValidation(await cast.viewer.get(`${url}?limit=201`), 'limit');
    expect((await cast.viewer.get(`${url}?limit=200`)).status).toBe(200);
    expectValidation(await cast.viewer.get(`${url}?before=nope`), 'before');
    expectValidation(await cast.viewer.get(`${url}?before=${randomUUID()}`), 'before');
    expectValidation(await cast.viewer.get(`${url}?before=${other.ids[0]}`), 'before');
  });

  it("is a 404 for another workspace's conversation, 401 without a session", async () => {
    const { c } = await withHistory(1);
    expectNotFound(await cast.outsider.get(`${CONVERSATIONS}/${c.id}/messages`));
    expectNotFound(await cast.viewer.get(`${CONVERSATIONS}/${randomUUID()}/messages`));
    expect((await cast.viewer.get(`${CONVERSATIONS}/${c.id}/messages`, { anonymous: true })).status).toBe(401);
  });
});

describe('POST /api/conversations/{id}/messages', () => {
  async function expectSent(client: Client, c: Seeded, body: Record<string, unknown>) {
    const res = await send(client, c.id, body);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body).toEqual({
      id: expect.any(String),
      conversationId: c.id,
      direction: 'outbound',
      type: 'text',
      body: body.body,
      status: 'queued',
      error: null,
      senderUserId: client.user!.id,
      createdAt: expect.stringMatching(ISO_TIMESTAMP),
    });
    const jobs = await sendJobs(res.body.id);
    expect(jobs).toEqual([{ name: 'inbox-send-message', data: { workspaceId: cast.workspaceId, messageId: res.body.id } }]);
    return res.body;
  }

  async function expectWindowClosed(c: Seeded, body: Record<string, unknown>, pattern: RegExp) {
    const storedBefore = await messageCount(c.id);
    const jobsBefore = (await sendJobs()).length;
    const res = await send(cast.agent, c.id, body);
    expect(res.status, JSON.stringify(res.body)).toBe(422);
    expect(res.body).toEqual({ error: expect.stringMatching(pattern) });
    expect(res.body.error).toMatch(/24-hour messaging window has closed/);
    expect(res.body.error).toMatch(/approved message template through a broadcast/);
    expect(await messageCount(c.id)).toBe(storedBefore);
    expect((await sendJobs()).length).toBe(jobsBefore);
    expect((await cast.agent.get(`${CONVERSATIONS}/${c.id}`)).body.lastMessageAt).toBe(
      (await db().select().from(conversations).where(eq(conversations.id, c.id)))[0]!.lastMessageAt?.toISOString() ?? null,
    );
  }

  it('stores a WhatsApp reply within 24 hours as queued, moves lastMessageAt and sends the job (Agent)', async () => {
    const c = await seedConversation(cast.workspaceId, { type: 'whatsapp', lastInboundAt: ago(23 * HOUR) });
    const sent = await expectSent(cast.agent, c, { body: 'Hi, how can we help?' });
    const conversation = (await cast.viewer.get(`${CONVERSATIONS}/${c.id}`)).body;
    expect(conversation.lastMessageAt).toBe(sent.createdAt);
    const history = await cast.viewer.get(`${CONVERSATIONS}/${c.id}/messages`);
    expect(history.body.messages.map((m: { id: string }) => m.id).at(-1)).toBe(sent.id);
    expect(history.body.messages.at(-1)).toEqual(sent);
    const [row] = await db().select().from(messages).where(and(eq(messages.id, sent.id), eq(messages.workspaceId, cast.workspaceId)));
    expect(row).toMatchObject({ channelId: c.channelId, providerMessageId: null });
    // The newest conversation leads the list.
    expect((await cast.viewer.get(`${CONVERSATIONS}?limit=1`)).body.items[0].id).toBe(c.id);
  });

  it('accepts 4096 characters, from Admins and Org Owners too', async () => {
    const c = await seedConversation(cast.workspaceId, { type: 'whatsapp', lastInboundAt: ago(HOUR) });
    await expectSent(cast.admin, c, { body: 'x'.repeat(4096) });
    await expectSent(cast.owner, c, { body: 'From the owner' });
  });

  it('refuses WhatsApp outside 24 hours, humanAgent or not, and before any inbound message: 422, nothing stored', async () => {
    const stale = await seedConversation(cast.workspaceId, { type: 'whatsapp', lastInboundAt: ago(25 * HOUR) });
    await expectWindowClosed(stale, { body: 'Hello again' }, /WhatsApp/);
    await expectWindowClosed(stale, { body: 'Hello again', humanAgent: true }, /WhatsApp/);
    const never = await seedConversation(cast.workspaceId, { type: 'whatsapp', lastInboundAt: null });
    await expectWindowClosed(never, { body: 'Hello' }, /template/);
  });

  it('allows Messenger 24 hours, or 7 days with humanAgent; refuses beyond', async () => {
    const fresh = await seedConversation(cast.workspaceId, { type: 'messenger', lastInboundAt: ago(2 * HOUR) });
    await expectSent(cast.agent, fresh, { body: 'Within the day' });
    const stale = await seedConversation(cast.workspaceId, { type: 'messenger', lastInboundAt: ago(25 * HOUR) });
    await expectWindowClosed(stale, { body: 'Late' }, /humanAgent: true.*7 days|7 days.*humanAgent: true/);
    await expectSent(cast.agent, stale, { body: 'A human agent replies', humanAgent: true });
    const week = await seedConversation(cast.workspaceId, { type: 'messenger', lastInboundAt: ago(8 * 24 * HOUR) });
    await expectWindowClosed(week, { body: 'Too late', humanAgent: true }, /7-day human-agent window/);
    await expectWindowClosed(week, { body: 'Too late' }, /7 days/);
    const never = await seedConversation(cast.workspaceId, { type: 'messenger', lastInboundAt: null });
    await expectWindowClosed(never, { body: 'Hello', humanAgent: true }, /template/);
  });

  it('applies the same policy on Instagram', async () => {
    const fresh = await seedConversation(cast.workspaceId, { type: 'instagram', lastInboundAt: ago(HOUR) });
    await expectSent(cast.agent, fresh, { body: 'Hi' });
    const stale = await seedConversation(cast.workspaceId, { type: 'instagram', lastInboundAt: ago(25 * HOUR) });
    await expectWindowClosed(stale, { body: 'Late' }, /7 days/);
    await expectSent(cast.agent, stale, { body: 'Human agent', humanAgent: true });
    const old = await seedConversation(cast.workspaceId, { type: 'instagram', lastInboundAt: ago(8 * 24 * HOUR) });
    await expectWindowClosed(old, { body: 'Too late', humanAgent: true }, /7-day/);
  });

  it('always allows live chat', async () => {
    const never = await seedConversation(cast.workspaceId, { type: 'livechat', lastInboundAt: null });
    await expectSent(cast.agent, never, { body: 'Welcome!' });
    const old = await seedConversation(cast.workspaceId, { type: 'livechat', lastInboundAt: ago(30 * 24 * HOUR) });
    await expectSent(cast.agent, old, { body: 'Still here?' });
  });

  it('rejects bad bodies with details, storing nothing', async () => {
    const c = await seedConversation(cast.workspaceId, { type: 'whatsapp', lastInboundAt: ago(HOUR) });
    expectValidation(await send(cast.agent, c.id, {}), 'body');
    expectValidation(await send(cast.agent, c.id, { body: '' }), 'body');
    expectValidation(await send(cast.agent, c.id, { body: 'x'.repeat(4097) }), 'body');
    expectValidation(await send(cast.agent, c.id, { body: 42 }), 'body');
    expectValidation(await send(cast.agent, c.id, { body: 'Hi', template: 'x' }), 'template');
    expectValidation(await send(cast.agent, c.id, { body: 'Hi', humanAgent: 'yes' }), 'humanAgent');
    expect(await messageCount(c.id)).toBe(1);
  });

  it('is a 403 for Viewers, 401 without a session, 404 across workspaces; nothing stored', async () => {
    const c = await seedConversation(cast.workspaceId, { type: 'livechat', lastInboundAt: ago(HOUR) });
    expectForbidden(await send(cast.viewer, c.id, { body: 'Hi' }));
    expect((await cast.agent.post(`${CONVERSATIONS}/${c.id}/messages`, { body: 'Hi' }, { anonymous: true })).status).toBe(401);
    expectNotFound(await send(cast.outsider, c.id, { body: 'Hi' }));
    expectNotFound(await send(cast.agent, randomUUID(), { body: 'Hi' }));
    expect(await messageCount(c.id)).toBe(1);
  });
});

describe('real-time events', () => {
  it('publishes conversation.updated on a change, message.created and conversation.updated on a reply, nothing on a 422', async () => {
    const seen: { type: string; workspaceId: string; conversationId: string; data: { id: string } & Record<string, unknown> }[] = [];
    const unlisten = await listen(t.app.services.database, EVENTS_CHANNEL, (payload) => seen.push(JSON.parse(payload)));
    try {
      const c = await seedConversation(cast.workspaceId, { type: 'whatsapp', lastInboundAt: ago(HOUR) });
      const stale = await seedConversation(cast.workspaceId, { type: 'whatsapp', lastInboundAt: ago(25 * HOUR) });
      const of = (id: string) => seen.filter((event) => event.conversationId === id);

      const patched = await cast.agent.patch(`${CONVERSATIONS}/${c.id}`, { status: 'pending' });
      const updated = await eventually(async () => of(c.id).find((event) => event.type === 'conversation.updated'));
      expect(updated).toEqual({ type: 'conversation.updated', workspaceId: cast.workspaceId, conversationId: c.id, data: patched.body });

      const sent = await send(cast.agent, c.id, { body: 'Event me' });
      expect(sent.status).toBe(201);
      const created = await eventually(async () => of(c.id).find((event) => event.type === 'message.created'));
      expect(created).toEqual({ type: 'message.created', workspaceId: cast.workspaceId, conversationId: c.id, data: sent.body });
      await eventually(async () => of(c.id).filter((event) => event.type === 'conversation.updated').length === 2);
      expect(of(c.id).at(-1)?.data).toMatchObject({ id: c.id, lastMessageAt: sent.body.createdAt });

      expect((await send(cast.agent, stale.id, { body: 'Too late' })).status).toBe(422);
      expect((await cast.viewer.patch(`${CONVERSATIONS}/${stale.id}`, { status: 'pending' })).status).toBe(403);
      expectValidation(await cast.agent.patch(`${CONVERSATIONS}/${stale.id}`, { status: 'snoozed' }), 'snoozedUntil');
      // A later event of the first conversation arrives after anything the failed calls could have published.
      await cast.agent.patch(`${CONVERSATIONS}/${c.id}`, { status: 'active' });
      await eventually(async () => of(c.id).filter((event) => event.type === 'conversation.updated').length === 3);
      expect(of(stale.id)).toEqual([]);
    } finally {
      await unlisten();
    }
  });
});
