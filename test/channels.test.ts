// Channels end to end: create each type (credentials encrypted, never returned), list, read, edit, delete;
// validation details; roles; isolation between workspaces; the credential encryption itself.
import { randomUUID } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { channels, conversations } from '../src/db/schema/index.js';
import { newId } from '../src/ids.js';
import { insertContacts } from '../src/modules/contacts/store.js';
import { conversationTotal, openConversation } from '../src/modules/conversations/store.js';
import { decryptJson, encryptJson } from '../src/modules/channels/crypto.js';
import {
  BASE_URL,
  type Client,
  createTestApp,
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
  t = await createTestApp();
  cast = await workspaceWithRoles(t.app);
});
afterAll(async () => t.close());

const CHANNELS = '/api/channels';
const secrets = () => ({
  accessToken: `EAAG-${randomUUID()}`,
  appSecret: `app-secret-${randomUUID()}`,
  verifyToken: `verify-${randomUUID()}`,
});
const whatsappBody = (overrides: Record<string, unknown> = {}) => ({
  type: 'whatsapp',
  name: 'Support line',
  config: { phoneNumberId: '106540352242922', businessAccountId: '102290129340398' },
  secrets: secrets(),
  ...overrides,
});

async function create(client: Client, body: Record<string, unknown>) {
  const res = await client.post(CHANNELS, body);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

const CONFIGURED = { accessToken: { configured: true }, appSecret: { configured: true }, verifyToken: { configured: true } };

describe('POST /api/channels', () => {
  it('creates a WhatsApp channel: 201 with config, configured markers and the webhook URL; no secret is returned', async () => {
    const body = whatsappBody({ name: '  Support line ' });
    const res = await cast.admin.post(CHANNELS, body);
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.any(String),
      workspaceId: cast.workspaceId,
      type: 'whatsapp',
      name: 'Support line',
      config: body.config,
      secrets: CONFIGURED,
      webhookUrl: `${BASE_URL}/api/webhooks/meta/${res.body.id}`,
      createdAt: expect.stringMatching(ISO_TIMESTAMP),
      updatedAt: expect.stringMatching(ISO_TIMESTAMP),
    });
    for (const value of Object.values(body.secrets)) expect(res.raw.body).not.toContain(value);

    const read = await cast.viewer.get(`${CHANNELS}/${res.body.id}`);
    expect(read.status).toBe(200);
    expect(read.body).toEqual(res.body);
    for (const value of Object.values(body.secrets)) expect(read.raw.body).not.toContain(value);

    // Stored encrypted: no plaintext in the row, and it decrypts with the service's secret.
    const [row] = await t.app.services.database.db.select().from(channels).where(eq(channels.id, res.body.id));
    for (const value of Object.values(body.secrets)) expect(row!.secrets).not.toContain(value);
    expect(decryptJson(t.app.services.secret, row!.secrets!)).toEqual(body.secrets);
  });

  it('creates Messenger, Instagram and live-chat channels (live chat: normalised origins, no secrets, no webhook URL)', async () => {
    const messenger = await create(cast.owner, { type: 'messenger', name: 'Page', config: { pageId: '1234567890' }, secrets: secrets() });
    expect(messenger).toMatchObject({ type: 'messenger', config: { pageId: '1234567890' }, secrets: CONFIGURED });
    expect(messenger.webhookUrl).toBe(`${BASE_URL}/api/webhooks/meta/${messenger.id}`);
    const instagram = await create(cast.admin, { type: 'instagram', name: 'IG', config: { accountId: '17841400000000' }, secrets: secrets() });
    expect(instagram).toMatchObject({ type: 'instagram', config: { accountId: '17841400000000' }, secrets: CONFIGURED });

    const livechat = await create(cast.admin, {
      type: 'livechat',
      name: 'Website chat',
      config: { allowedOrigins: ['https://shop.example.com/', 'http://localhost:8080'], greeting: 'Hi! How can we help?' },
    });
    expect(livechat).toEqual({
      id: expect.any(String),
      workspaceId: cast.workspaceId,
      type: 'livechat',
      name: 'Website chat',
      config: { allowedOrigins: ['https://shop.example.com', 'http://localhost:8080'], greeting: 'Hi! How can we help?' },
      secrets: {},
      createdAt: expect.stringMatching(ISO_TIMESTAMP),
      updatedAt: expect.stringMatching(ISO_TIMESTAMP),
    });
  });

  it('answers 400 with details for invalid bodies', async () => {
    expectValidation(await cast.admin.post(CHANNELS, { ...whatsappBody(), type: 'telegram' }), 'type');
    const noToken = whatsappBody();
    delete (noToken.secrets as Record<string, unknown>).accessToken;
    expectValidation(await cast.admin.post(CHANNELS, noToken), 'secrets.accessToken');
    expectValidation(await cast.admin.post(CHANNELS, whatsappBody({ config: { phoneNumberId: '1' } })), 'config.businessAccountId');
    expectValidation(await cast.admin.post(CHANNELS, whatsappBody({ name: '   ' })), 'name');
    expectValidation(await cast.admin.post(CHANNELS, whatsappBody({ extra: true })), 'extra');
    expectValidation(
      await cast.admin.post(CHANNELS, { type: 'livechat', name: 'Chat', config: { allowedOrigins: ['https://a.example/path'] } }),
      'config.allowedOrigins.0',
    );
    expectValidation(
      await cast.admin.post(CHANNELS, { type: 'livechat', name: 'Chat', config: { allowedOrigins: ['ftp://a.example'] } }),
      'config.allowedOrigins.0',
    );
    expectValidation(
      await cast.admin.post(CHANNELS, { type: 'livechat', name: 'Chat', config: { allowedOrigins: ['https://a.example'] }, secrets: secrets() }),
      'secrets',
    );
    expectValidation(await cast.admin.post(CHANNELS, { type: 'messenger', name: 'Page', config: { accountId: '1' }, secrets: secrets() }), 'config.pageId');
  });

  it('is for Admins and Org Owners only: 403 for Agents and Viewers, 401 without a session', async () => {
    expectForbidden(await cast.agent.post(CHANNELS, whatsappBody()));
    expectForbidden(await cast.viewer.post(CHANNELS, whatsappBody()));
    expect((await cast.viewer.post(CHANNELS, whatsappBody(), { anonymous: true })).status).toBe(401);
  });
});

describe('GET /api/channels', () => {
  it('lists the workspace channels newest first, paginated, to every role', async () => {
    const { client } = await signUp(t.app);
    const first = await create(client, whatsappBody({ name: 'First' }));
    const second = await create(client, { type: 'livechat', name: 'Second', config: { allowedOrigins: ['https://x.example'] } });
    const res = await client.get(CHANNELS);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ items: [second, first], total: 2 });
    const page = await client.get(`${CHANNELS}?limit=1&offset=1`);
    expect(page.body).toEqual({ items: [first], total: 2 });
    expect((await client.get(`${CHANNELS}?offset=5`)).body).toEqual({ items: [], total: 2 });
    expectValidation(await client.get(`${CHANNELS}?limit=101`), 'limit');
    for (const member of [cast.agent, cast.viewer]) expect((await member.get(CHANNELS)).status).toBe(200);
  });
});

describe('PATCH /api/channels/{id}', () => {
  it('renames, merges config fields and replaces given credentials only', async () => {
    const original = whatsappBody();
    const created = await create(cast.admin, original);
    const res = await cast.admin.patch(`${CHANNELS}/${created.id}`, {
      name: 'Renamed',
      config: { phoneNumberId: '999000111' },
      secrets: { accessToken: 'new-token' },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({
      name: 'Renamed',
      type: 'whatsapp',
      config: { phoneNumberId: '999000111', businessAccountId: original.config.businessAccountId },
      secrets: CONFIGURED,
    });
    expect(res.raw.body).not.toContain('new-token');
    const [row] = await t.app.services.database.db.select().from(channels).where(eq(channels.id, created.id));
    expect(decryptJson(t.app.services.secret, row!.secrets!)).toEqual({ ...original.secrets, accessToken: 'new-token' });
    expect((await cast.viewer.get(`${CHANNELS}/${created.id}`)).body).toEqual(res.body);
  });

  it('answers 400 for config that does not fit the type, credentials on live chat, unknown fields and empty bodies', async () => {
    const wa = await create(cast.admin, whatsappBody());
    expectValidation(await cast.admin.patch(`${CHANNELS}/${wa.id}`, { config: { phoneNumberId: '' } }), 'config.phoneNumberId');
    expectValidation(await cast.admin.patch(`${CHANNELS}/${wa.id}`, { config: { allowedOrigins: [] } }), 'config.allowedOrigins');
    expectValidation(await cast.admin.patch(`${CHANNELS}/${wa.id}`, { type: 'livechat' }), 'type');
    expect((await cast.admin.patch(`${CHANNELS}/${wa.id}`, {})).status).toBe(400);
    const chat = await create(cast.admin, { type: 'livechat', name: 'Chat', config: { allowedOrigins: ['https://x.example'] } });
    expectValidation(await cast.admin.patch(`${CHANNELS}/${chat.id}`, { secrets: { accessToken: 'x' } }), 'secrets');
    const ok = await cast.admin.patch(`${CHANNELS}/${chat.id}`, { config: { greeting: 'Hello' } });
    expect(ok.body.config).toEqual({ allowedOrigins: ['https://x.example'], greeting: 'Hello' });
  });

  it('is 403 for Agents and Viewers', async () => {
    const created = await create(cast.admin, whatsappBody());
    expectForbidden(await cast.agent.patch(`${CHANNELS}/${created.id}`, { name: 'x' }));
    expectForbidden(await cast.viewer.patch(`${CHANNELS}/${created.id}`, { name: 'x' }));
  });
});

describe('DELETE /api/channels/{id}', () => {
  it('deletes (204) for Admins; 403 for Agents and Viewers; 404 afterwards', async () => {
    const created = await create(cast.admin, whatsappBody());
    expectForbidden(await cast.agent.delete(`${CHANNELS}/${created.id}`));
    expectForbidden(await cast.viewer.delete(`${CHANNELS}/${created.id}`));
    const res = await cast.owner.delete(`${CHANNELS}/${created.id}`);
    expect(res.status).toBe(204);
    expectNotFound(await cast.viewer.get(`${CHANNELS}/${created.id}`));
    expectNotFound(await cast.admin.delete(`${CHANNELS}/${created.id}`));
  });
});

describe('deleting a channel with conversations', () => {
  it("removes its conversations and keeps the workspace's exact conversation total", async () => {
    const { client, workspaceId } = await signUp(t.app);
    const created = await create(client, whatsappBody());
    const db = t.app.services.database.db;
    await db.transaction(async (tx) => {
      const rows = await insertContacts(tx, workspaceId, [
        { id: newId(), workspaceId, name: 'A', phone: '+447700900001' },
        { id: newId(), workspaceId, name: 'B', phone: '+447700900002' },
      ]);
      for (const row of rows) await openConversation(tx, workspaceId, created.id, row.id);
    });
    expect(await conversationTotal(db, workspaceId)).toBe(2);
    expect((await client.delete(`${CHANNELS}/${created.id}`)).status).toBe(204);
    expect(await conversationTotal(db, workspaceId)).toBe(0);
    expect(await db.select().from(conversations).where(eq(conversations.workspaceId, workspaceId))).toEqual([]);
  });
});

describe('isolation', () => {
  it("another workspace's channel is 404 for every operation, as an id that never existed", async () => {
    const created = await create(cast.admin, whatsappBody());
    const url = `${CHANNELS}/${created.id}`;
    expectNotFound(await cast.outsider.get(url));
    expectNotFound(await cast.outsider.patch(url, { name: 'Stolen' }));
    expectNotFound(await cast.outsider.delete(url));
    expect((await cast.outsider.get(CHANNELS)).body.items.map((c: { id: string }) => c.id)).not.toContain(created.id);
    expectNotFound(await cast.admin.get(`${CHANNELS}/${randomUUID()}`));
    expectValidation(await cast.admin.get(`${CHANNELS}/not-a-uuid`), 'id');
    expect((await cast.admin.get(url)).body.name).toBe('Support line');
  });
});

describe('credential encryption', () => {
  it('AES-256-GCM with a fresh salt and IV: equal values differ, the service secret is needed, tampering is detected', () => {
    const secret = 'a'.repeat(64);
    const value = { accessToken: 'token', appSecret: 'app', verifyToken: 'verify' };
    const a = encryptJson(secret, value);
    const b = encryptJson(secret, value);
    expect(a).not.toBe(b);
    expect(decryptJson(secret, a)).toEqual(value);
    expect(() => decryptJson('b'.repeat(64), a)).toThrow();
    const parts = a.split('.');
    parts[4] = Buffer.from('{"accessToken":"evil"}').toString('base64url');
    expect(() => decryptJson(secret, parts.join('.'))).toThrow();
  });
});
