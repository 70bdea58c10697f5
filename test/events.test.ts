import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SESSION_COOKIE } from '../src/auth/auth.js';
import { publishEvent, type InboxEvent } from '../src/modules/events/publish.js';
import { eventHub } from '../src/modules/events/hub.js';
import { type App, buildApp } from '../src/app.js';
import { openDatabase } from '../src/db/client.js';
import { listenOn, SseReader } from './sse-reader.js';
import { type Client, createTestApp, signUp, type TestApp, workspaceWithRoles } from './helpers.js';

function memberHeaders(client: Client, workspaceId = client.workspaceId!): Record<string, string> {
  return { cookie: `${SESSION_COOKIE}=${client.cookie}`, 'x-workspace-id': workspaceId };
}

async function publish(app: App, event: InboxEvent, rollback = false): Promise<void> {
  await app.services.database.db
    .transaction(async (tx) => {
      await publishEvent(tx, event);
      if (rollback) throw new Error('rollback');
    })
    .catch((error: Error) => {
      if (!rollback || error.message !== 'rollback') throw error;
    });
}

const event = (workspaceId: string, data: Record<string, unknown> = {}, type: InboxEvent['type'] = 'message.created'): InboxEvent => {
  const id = randomUUID();
  return { type, workspaceId, conversationId: randomUUID(), data: { id, ...data } };
};

let t: TestApp;
let base: string;
let cast: Awaited<ReturnType<typeof workspaceWithRoles>>;
const open: SseReader[] = [];

async function openStream(headers: Record<string, string>): Promise<SseReader> {
  const reader = await SseReader.open(`${base}/api/events`, headers);
  open.push(reader);
  return reader;
}

beforeAll(async () => {
  t = await createTestApp();
  cast = await workspaceWithRoles(t.app);
  base = await listenOn(t.app);
});

afterAll(async () => {
  for (const reader of open) reader.close();
  await t.close();
});

describe('GET /api/events', () => {
  it('streams the workspace events to every role, as SSE blocks with the stream headers', async () => {
    const readers = await Promise.all(
      [cast.owner, cast.admin, cast.agent, cast.viewer].map((client) => openStream(memberHeaders(client, cast.workspaceId))),
    );
    const first = readers[0]!;
    expect(first.response.status).toBe(200);
    expect(first.response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(first.response.headers.get('cache-control')).toBe('no-cache');
    expect(first.response.headers.get('x-accel-buffering')).toBe('no');
    expect(first.response.headers.get('x-request-id')).toBeTruthy();
    expect(first.response.headers.get('ratelimit-limit')).toBeTruthy();
    expect(first.retry).toBe(3000);

    const created = event(cast.workspaceId, { body: 'hello' });
    await publish(t.app, created);
    const updated = event(cast.workspaceId, { status: 'resolved' }, 'conversation.updated');
    await publish(t.app, updated);
    for (const reader of readers) {
      await reader.until(() => reader.events.length >= 2, 5000, 'two events');
      expect(reader.events).toEqual([
        { event: 'message.created', id: '1', data: created.data },
        { event: 'conversation.updated', id: '2', data: updated.data },
      ]);
      reader.close();
    }
  });

  it('does not send another workspace its events, nor events of a rolled-back transaction', async () => {
    const mine = await openStream(memberHeaders(cast.agent, cast.workspaceId));
    const theirs = await openStream(memberHeaders(cast.outsider));

    const rolledBack = event(cast.workspaceId, { body: 'never' });
    await publish(t.app, rolledBack, true);
    const forMine = event(cast.workspaceId, { body: 'mine' });
    await publish(t.app, forMine);
    const forTheirs = event(cast.outsider.workspaceId!, { body: 'theirs' });
    await publish(t.app, forTheirs);

    await mine.next((e) => e.data.id === forMine.data.id);
    await theirs.next((e) => e.data.id === forTheirs.data.id);
    // Notifications arrive in commit order: by the time the later marker is here, an earlier event would be too.
    await publish(t.app, event(cast.workspaceId, { marker: true }));
    await mine.next((e) => e.data.marker === true);
    expect(mine.events.map((e) => e.data.id)).not.toContain(rolledBack.data.id);
    expect(mine.events.map((e) => e.data.id)).not.toContain(forTheirs.data.id);
    expect(theirs.events.map((e) => e.data.id)).toEqual([forTheirs.data.id]);
    mine.close();
    theirs.close();
  });

  it('forgets a stream when its client disconnects', async () => {
    const hub = eventHub(t.app, t.app.services.database);
    // The streams the earlier tests closed go as their sockets close.
    await expect.poll(() => hub.size, { timeout: 5000 }).toBe(0);
    const reader = await openStream(memberHeaders(cast.viewer, cast.workspaceId));
    expect(hub.size).toBe(1);
    reader.close();
    await expect.poll(() => hub.size, { timeout: 5000 }).toBe(0);
  });

  it('pings, and ends the stream of a member who is removed or signs out', async () => {
    const hub = eventHub(t.app, t.app.services.database);
    hub.pingIntervalMs = 100;
    try {
      const removed = await signUp(t.app);
      const signedOut = await signUp(t.app);
      for (const person of [removed, signedOut]) {
        const added = await cast.owner.post('/api/members', { email: person.user.email, role: 'agent' });
        expect(added.status, JSON.stringify(added.body)).toBe(201);
      }
      const first = await openStream(memberHeaders(removed.client, cast.workspaceId));
      const second = await openStream(memberHeaders(signedOut.client, cast.workspaceId));
      const kept = await openStream(memberHeaders(cast.viewer, cast.workspaceId));
      await first.until(() => first.comments.includes('ping'), 5000, 'a ping');

      expect((await cast.owner.delete(`/api/members/${removed.user.id}`)).status).toBe(204);
      await first.done;
      expect(first.ended).toBe(true);
      expect((await signedOut.client.post('/api/auth/sign-out', {})).status).toBe(200);
      await second.done;
      expect(second.ended).toBe(true);

      expect(kept.ended).toBe(false);
      const still = event(cast.workspaceId, { body: 'still here' });
      await publish(t.app, still);
      await kept.next((e) => e.data.id === still.data.id);
      kept.close();
    } finally {
      hub.pingIntervalMs = 25_000;
    }
  });

  it('401 without a session, 401 without the workspace header, 403 for a non-member', async () => {
    const anonymous = await fetch(`${base}/api/events`, { headers: { 'x-workspace-id': cast.workspaceId } });
    expect(anonymous.status).toBe(401);
    expect(await anonymous.json()).toEqual({ error: 'Unauthorized' });
    const noHeader = await fetch(`${base}/api/events`, { headers: { cookie: `${SESSION_COOKIE}=${cast.agent.cookie}` } });
    expect(noHeader.status).toBe(401);
    const outsider = await fetch(`${base}/api/events`, { headers: memberHeaders(cast.outsider, cast.workspaceId) });
    expect(outsider.status).toBe(403);
    expect(await outsider.json()).toEqual({ error: 'Forbidden' });
  });

  it('is documented in the OpenAPI document', async () => {
    const doc = await (await fetch(`${base}/api/openapi.json`)).json();
    expect(doc.paths['/api/events'].get).toBeDefined();
  });
});

describe('several processes on one PostgreSQL', () => {
  it.runIf(process.env.DATABASE_URL)('delivers an event committed by another process to this process\'s streams', async () => {
    // A second app on the same database stands for a second server (or worker) process.
    const database = await openDatabase({ url: t.config.databaseUrl!, poolSize: 2 });
    const second = await buildApp({ config: t.config, database, secret: t.config.authSecret!, logger: false });
    try {
      await second.ready();
      const reader = await openStream(memberHeaders(cast.agent, cast.workspaceId));
      const fromElsewhere = event(cast.workspaceId, { body: 'from the other process' });
      await publish(second, fromElsewhere);
      const received = await reader.next((e) => e.data.id === fromElsewhere.data.id);
      expect(received.data).toEqual(fromElsewhere.data);
      reader.close();
    } finally {
      await second.close();
      await database.close();
    }
  });
});

describe('closing the server', () => {
  it('ends open streams at once, so a graceful shutdown does not wait for them', async () => {
    const other = await createTestApp();
    let closed = false;
    try {
      const { client } = await signUp(other.app);
      const url = await listenOn(other.app);
      const reader = await SseReader.open(`${url}/api/events`, memberHeaders(client));
      expect(reader.response.status).toBe(200);
      const started = Date.now();
      const closing = other.close();
      closed = true;
      // The stream ends as the server begins closing, not after the 10 s grace (the rest of close() stops the
      // job queue and drops the scratch database, which is not what is measured).
      await reader.done;
      expect(reader.ended).toBe(true);
      expect(Date.now() - started).toBeLessThan(2000);
      await closing;
    } finally {
      if (!closed) await other.close();
    }
  });
});
