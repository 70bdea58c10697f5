// The HTTP contract shared by every route: credential checks in the spec's order, error shapes, roles,
// CSRF/CORS, request ids, health, and the OpenAPI document.
import { randomUUID } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../src/app.js';
import { sessions } from '../src/db/schema/index.js';
import {
  APP_URL,
  BASE_URL,
  Client,
  createTestApp,
  PASSWORD,
  type Reply,
  signUp,
  type TestApp,
  uniqueEmail,
  workspaceWithRoles,
} from './helpers.js';

let t: TestApp;
let cast: Awaited<ReturnType<typeof workspaceWithRoles>>;

beforeAll(async () => {
  t = await createTestApp();
  cast = await workspaceWithRoles(t.app);
});
afterAll(async () => t?.close());

/** Nothing a client should ever see: stack frames, source paths, SQL, driver names. */
const LEAK = /(\n\s+at\s|\bstack\b|node_modules|\.ts:\d+|\bselect\b[\s\S]*\bfrom\b|\binsert into\b|\bdelete from\b|\bupdate\b[\s\S]*\bset\b|pglite|drizzle|postgres|syntaxerror)/i;

/** One of the spec's two error shapes, and nothing else. */
function expectError(res: Reply, status: number, message?: string) {
  expect(res.status, res.raw.body).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  expect(Object.keys(res.body).sort()).toEqual(status === 400 ? ['details', 'error'] : ['error']);
  expect(res.body.error).toEqual(expect.any(String));
  if (message !== undefined) expect(res.body.error).toBe(message);
  if (status === 400) {
    expect(Array.isArray(res.body.details)).toBe(true);
    for (const detail of res.body.details) expect(detail).toEqual({ path: expect.any(String), message: expect.any(String) });
  }
  expect(res.raw.body).not.toMatch(LEAK);
}

describe('credential failures, in the spec table order', () => {
  const targets = [
    ['/api/members', 200],
    ['/api/no-such-thing', 404],
  ] as const;

  describe.each(targets)('GET %s', (url, memberStatus) => {
    it('no session cookie -> 401 Unauthorized', async () => {
      const res = await cast.viewer.get(url, { anonymous: true });
      expectError(res, 401, 'Unauthorized');
    });

    it('no cookie and no x-workspace-id -> 401 (the cookie is checked first)', async () => {
      expectError(await new Client(t.app).get(url), 401, 'Unauthorized');
      expectError(await cast.viewer.get(url, { anonymous: true, workspace: null }), 401, 'Unauthorized');
    });

    it('no cookie with a malformed or foreign workspace -> still 401', async () => {
      expectError(await cast.viewer.get(url, { anonymous: true, workspace: 'not-a-uuid' }), 401, 'Unauthorized');
      expectError(await cast.viewer.get(url, { anonymous: true, workspace: randomUUID() }), 401, 'Unauthorized');
    });

    it('garbage cookie -> 401', async () => {
      const client = new Client(t.app);
      client.workspaceId = cast.workspaceId;
      for (const cookie of ['garbage', 'abc.def', `${randomUUID()}.${'A'.repeat(43)}`, '%%%;;==']) {
        client.cookie = cookie;
        expectError(await client.get(url), 401, 'Unauthorized');
      }
    });

    it('expired session -> 401', async () => {
      const { client, user } = await signUp(t.app);
      expect((await client.get(url)).status).toBe(memberStatus);
      await t.app.services.database.db
        .update(sessions)
        .set({ expiresAt: new Date(Date.now() - 1000) })
        .where(eq(sessions.userId, user.id));
      t.app.services.cache.forgetUser(user.id);
      expectError(await client.get(url), 401, 'Unauthorized');
      // Expired beats a bad workspace header: the session is checked first.
      expectError(await client.get(url, { workspace: 'not-a-uuid' }), 401, 'Unauthorized');
    });

    it('missing x-workspace-id -> 401', async () => {
      expectError(await cast.viewer.get(url, { workspace: null }), 401, 'Unauthorized');
      expectError(await cast.viewer.get(url, { workspace: '' }), 401, 'Unauthorized');
    });

    it('malformed workspace uuid -> 403 Forbidden', async () => {
      for (const bad of ['not-a-uuid', '1234', `${cast.workspaceId}x`, "' or 1=1 --"]) {
        expectError(await cast.viewer.get(url, { workspace: bad }), 403, 'Forbidden');
      }
    });

    it('well-formed uuid of a workspace the user is not in -> 403', async () => {
      expectError(await cast.outsider.get(url, { workspace: cast.workspaceId }), 403, 'Forbidden');
      expectError(await cast.viewer.get(url, { workspace: cast.outsider.workspaceId! }), 403, 'Forbidden');
      expectError(await cast.viewer.get(url, { workspace: randomUUID() }), 403, 'Forbidden');
    });

    it(`member -> ${memberStatus}`, async () => {
      for (const client of [cast.owner, cast.admin, cast.agent, cast.viewer]) {
        const res = await client.get(url);
        expect(res.status).toBe(memberStatus);
      }
      // The header is case-insensitive as a uuid.
      expect((await cast.viewer.get(url, { workspace: cast.workspaceId.toUpperCase() })).status).toBe(memberStatus);
    });
  });

  it('the same checks guard writes', async () => {
    const body = { name: 'Renamed' };
    expectError(await cast.admin.patch('/api/workspace', body, { anonymous: true }), 401, 'Unauthorized');
    expectError(await cast.admin.patch('/api/workspace', body, { workspace: null }), 401, 'Unauthorized');
    expectError(await cast.admin.patch('/api/workspace', body, { workspace: 'nope' }), 403, 'Forbidden');
    expectError(await cast.outsider.patch('/api/workspace', body, { workspace: cast.workspaceId }), 403, 'Forbidden');
  });
});

describe('the guard follows the route, however the URL spells it', () => {
  it('a percent-encoded /api path is still guarded (401), not an internal error', async () => {
    for (const url of ['/%61pi/members', '/%61pi/me', '/api/%6Dembers', '/api/members/']) {
      expectError(await cast.viewer.get(url, { anonymous: true }), 401, 'Unauthorized');
    }
    expect((await cast.viewer.get('/%61pi/members')).status).toBe(200);
    expect((await cast.viewer.get('/%61pi/me', { workspace: null })).status).toBe(200);
    expectError(await cast.viewer.get('/%61pi/members', { workspace: null }), 401, 'Unauthorized');
  });

  it('only the reference page itself is public, not every path that starts with /api/docs', async () => {
    expectError(await new Client(t.app).get('/api/docsecrets'), 401, 'Unauthorized');
    expectError(await new Client(t.app).get('/api/docs-x/members'), 401, 'Unauthorized');
  });
});

describe('routes that need no x-workspace-id', () => {
  it('/api/me and /api/organizations need only the cookie', async () => {
    const { client } = await signUp(t.app);
    expect((await client.get('/api/me', { workspace: null })).status).toBe(200);
    const created = await client.post('/api/organizations', { name: 'Second org' }, { workspace: null });
    expect(created.status).toBe(201);
    expect(created.body.name).toBe('Second org');
    expectError(await client.get('/api/me', { workspace: null, anonymous: true }), 401, 'Unauthorized');
    expectError(await client.post('/api/organizations', { name: 'X' }, { workspace: null, anonymous: true }), 401, 'Unauthorized');
  });

  it('/api/health, /api/openapi.json and /api/docs need nothing', async () => {
    const client = new Client(t.app);
    expect((await client.get('/api/health')).status).toBe(200);
    expect((await client.get('/api/openapi.json')).status).toBe(200);
    expect([200, 301, 302]).toContain((await client.get('/api/docs')).status);
  });

  it('/api/auth/* work without a workspace, and without a cookie where they make sense', async () => {
    const email = uniqueEmail();
    const client = new Client(t.app);
    expect((await client.post('/api/auth/sign-up/email', { email, password: PASSWORD, name: 'N' })).status).toBe(200);
    expect((await client.get('/api/auth/get-session')).status).toBe(200);
    expect((await client.post('/api/auth/sign-out')).status).toBe(200);
    expect((await client.post('/api/auth/sign-in/email', { email, password: PASSWORD })).status).toBe(200);
    expect((await client.post('/api/auth/forget-password', { email })).status).toBe(200);
    const anonymous = await new Client(t.app).get('/api/auth/get-session');
    expect(anonymous.status).toBe(200);
    expect(anonymous.body).toBeNull();
  });
});

describe('error shapes', () => {
  const json = { 'content-type': 'application/json' };

  it('malformed JSON -> 400 {error, details}', async () => {
    for (const payload of ['{"name":', '{name: 1}', 'not json', '[1,']) {
      const res = await cast.admin.patch('/api/workspace', payload, { headers: json });
      expectError(res, 400);
      expect(res.body.details.length).toBeGreaterThan(0);
    }
    const res = await new Client(t.app).post('/api/auth/sign-in/email', '{"email":', { headers: json });
    expectError(res, 400);
  });

  it('empty JSON body on a write -> 400', async () => {
    expectError(await cast.admin.patch('/api/workspace', '', { headers: json }), 400);
  });

  it('invalid fields -> 400 with a detail per field', async () => {
    const res = await cast.admin.post('/api/members', { email: 'nope', role: 'god', extra: 1 });
    expectError(res, 400);
    const paths = res.body.details.map((d: { path: string }) => d.path).sort();
    expect(paths).toEqual(expect.arrayContaining(['email', 'role']));
  });

  it.each([
    ['text/plain', 'name=x'],
    ['application/x-www-form-urlencoded', 'name=x'],
    ['multipart/form-data; boundary=xyz', '--xyz\r\nContent-Disposition: form-data; name="name"\r\n\r\nx\r\n--xyz--'],
    ['application/xml', '<name>x</name>'],
  ])('a %s body on a write -> 415 {error}', async (type, payload) => {
    const res = await cast.admin.patch('/api/workspace', payload, { headers: { 'content-type': type } });
    expectError(res, 415);
    const signIn = await new Client(t.app).post('/api/auth/sign-in/email', payload, { headers: { 'content-type': type } });
    expectError(signIn, 415);
  });

  it('a body over 1 MiB -> 413 {error}', async () => {
    const payload = JSON.stringify({ name: 'x'.repeat(1024 * 1024) });
    expectError(await cast.admin.patch('/api/workspace', payload, { headers: json }), 413);
    expectError(await new Client(t.app).post('/api/auth/sign-up/email', payload, { headers: json }), 413);
  });

  it('a body just under 1 MiB is read (and then validated)', async () => {
    const payload = JSON.stringify({ name: 'x'.repeat(1024 * 1024 - 20) });
    expect(Buffer.byteLength(payload)).toBeLessThanOrEqual(1024 * 1024);
    const res = await cast.admin.patch('/api/workspace', payload, { headers: json });
    expectError(res, 400);
    expect(res.body.details[0].path).toBe('name');
  });

  it('a malformed uuid in the path -> 400 with details path "userId"', async () => {
    const res = await cast.admin.patch('/api/members/not-a-uuid', { role: 'viewer' });
    expectError(res, 400);
    expect(res.body.details).toContainEqual({ path: 'userId', message: expect.any(String) });
    const del = await cast.admin.delete('/api/members/123');
    expectError(del, 400);
    expect(del.body.details).toContainEqual({ path: 'userId', message: expect.any(String) });
  });

  it('an unknown well-formed uuid -> 404 Not found', async () => {
    expectError(await cast.admin.patch(`/api/members/${randomUUID()}`, { role: 'viewer' }), 404, 'Not found');
    expectError(await cast.admin.delete(`/api/members/${randomUUID()}`), 404, 'Not found');
    expectError(await cast.admin.delete(`/api/invitations/${randomUUID()}`), 404, 'Not found');
  });

  it('another workspace\'s member is not found here', async () => {
    const res = await cast.admin.patch(`/api/members/${cast.outsider.user!.id}`, { role: 'viewer' });
    expectError(res, 404, 'Not found');
  });

  it('an unknown route, signed in with a workspace -> 404 Not found', async () => {
    expectError(await cast.viewer.get('/api/nothing/here'), 404, 'Not found');
    expectError(await cast.admin.post('/api/nothing', { a: 1 }), 404, 'Not found');
    expectError(await cast.admin.request('PUT', '/api/workspace', { body: { name: 'x' } }), 404, 'Not found');
  });

  it('a path outside /api is a 404 too', async () => {
    expectError(await new Client(t.app).get('/nothing'), 404, 'Not found');
  });
});

describe('roles', () => {
  it('Admin-only writes: 403 for agent and viewer, 2xx for admin and owner', async () => {
    for (const role of ['agent', 'viewer'] as const) {
      expectError(await cast[role].patch('/api/workspace', { name: `By ${role}` }), 403, 'Forbidden');
      const person = await signUp(t.app);
      expectError(await cast[role].post('/api/members', { email: person.user.email, role: 'viewer' }), 403, 'Forbidden');
      expectError(await cast[role].get('/api/invitations'), 403, 'Forbidden');
    }
    for (const role of ['admin', 'owner'] as const) {
      const renamed = await cast[role].patch('/api/workspace', { name: `By ${role}` });
      expect(renamed.status).toBe(200);
      expect(renamed.body.name).toBe(`By ${role}`);
      const person = await signUp(t.app);
      const added = await cast[role].post('/api/members', { email: person.user.email, role: 'viewer' });
      expect(added.status).toBe(201);
      expect((await cast[role].get('/api/invitations')).status).toBe(200);
    }
  });

  it('the role is checked before the body: an agent with a bad body gets 403, not 400', async () => {
    expectError(await cast.agent.patch('/api/workspace', { nonsense: true }), 403, 'Forbidden');
    expectError(await cast.viewer.patch('/api/workspace', 'not json', { headers: { 'content-type': 'application/json' } }), 403, 'Forbidden');
  });

  it('reads: 200 for all four roles', async () => {
    for (const role of ['owner', 'admin', 'agent', 'viewer'] as const) {
      const workspace = await cast[role].get('/api/workspace');
      expect(workspace.status).toBe(200);
      expect(workspace.body.role).toBe(role);
      expect((await cast[role].get('/api/members')).status).toBe(200);
    }
  });
});

describe('CSRF and CORS', () => {
  it('a write with a foreign Origin -> 403, whatever the route', async () => {
    for (const origin of ['http://evil.example', 'http://app.test.evil.example', 'https://app.test', 'http://localhost:3001', 'null']) {
      const headers = { origin };
      expectError(await cast.admin.patch('/api/workspace', { name: 'CSRF' }, { headers }), 403, 'Forbidden');
      expectError(await cast.admin.post('/api/organizations', { name: 'CSRF' }, { headers, workspace: null }), 403, 'Forbidden');
      expectError(await cast.admin.delete(`/api/invitations/${randomUUID()}`, { headers }), 403, 'Forbidden');
      expectError(await new Client(t.app).post('/api/auth/sign-in/email', { email: uniqueEmail(), password: PASSWORD }, { headers }), 403, 'Forbidden');
    }
    expect((await cast.admin.get('/api/workspace')).body.name).not.toBe('CSRF');
  });

  it('a read with a foreign Origin is answered (CORS keeps the browser from reading it)', async () => {
    const res = await cast.viewer.get('/api/workspace', { headers: { origin: 'http://evil.example' } });
    expect(res.status).toBe(200);
    expect(res.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('writes from the dashboard, the API origin, or without Origin are allowed', async () => {
    for (const headers of [{ origin: APP_URL }, { origin: BASE_URL }, {}] as Record<string, string>[]) {
      expect((await cast.admin.patch('/api/workspace', { name: 'Allowed' }, { headers })).status).toBe(200);
      expect((await cast.admin.post('/api/organizations', { name: 'Allowed' }, { headers, workspace: null })).status).toBe(201);
      expectError(await cast.admin.delete(`/api/members/${randomUUID()}`, { headers }), 404, 'Not found');
    }
  });

  it('a preflight from the dashboard is allowed with credentials', async () => {
    const res = await new Client(t.app).request('OPTIONS', '/api/members', {
      headers: { origin: APP_URL, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type,x-workspace-id' },
    });
    expect(res.status).toBeLessThan(300);
    expect(res.headers['access-control-allow-origin']).toBe(APP_URL);
    expect(res.headers['access-control-allow-credentials']).toBe('true');
    expect(String(res.headers['access-control-allow-methods'])).toContain('POST');
    expect(String(res.headers['access-control-allow-headers']).toLowerCase()).toContain('x-workspace-id');
  });

  it('a preflight from another origin gets no allow-origin', async () => {
    for (const origin of ['http://evil.example', 'https://app.test', BASE_URL]) {
      const res = await new Client(t.app).request('OPTIONS', '/api/members', {
        headers: { origin, 'access-control-request-method': 'POST' },
      });
      expect(res.headers['access-control-allow-origin']).toBeUndefined();
    }
  });

  it('a simple request from the dashboard exposes the rate-limit and request-id headers', async () => {
    const res = await cast.viewer.get('/api/workspace', { headers: { origin: APP_URL } });
    expect(res.headers['access-control-allow-origin']).toBe(APP_URL);
    expect(res.headers['access-control-allow-credentials']).toBe('true');
    const exposed = String(res.headers['access-control-expose-headers']).toLowerCase();
    for (const name of ['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset', 'retry-after', 'x-request-id']) {
      expect(exposed).toContain(name);
    }
  });
});

describe('x-request-id', () => {
  it('every response carries one, errors included', async () => {
    const client = new Client(t.app);
    const seen = new Set<string>();
    for (const res of [await client.get('/api/health'), await client.get('/api/members'), await client.get('/nope')]) {
      const id = res.headers['x-request-id'];
      expect(id).toMatch(/^[\w.:-]{1,128}$/);
      seen.add(String(id));
    }
    expect(seen.size).toBe(3);
  });

  it('a sane incoming id is echoed; an unsafe one is replaced', async () => {
    const client = new Client(t.app);
    const sane = 'req-42.abc:def_9';
    expect((await client.get('/api/health', { headers: { 'x-request-id': sane } })).headers['x-request-id']).toBe(sane);
    expect((await client.get('/api/members', { headers: { 'x-request-id': sane } })).headers['x-request-id']).toBe(sane);
    for (const unsafe of ['has space', 'x'.repeat(129), 'evil\u00e9', '<script>']) {
      const id = (await client.get('/api/health', { headers: { 'x-request-id': unsafe } })).headers['x-request-id'];
      expect(id).not.toBe(unsafe);
      expect(id).toMatch(/^[0-9a-f-]{36}$/);
    }
  });
});

describe('health', () => {
  it('GET /api/health -> 200 {status: ok, database: ok}, without rate-limit headers', async () => {
    const res = await new Client(t.app).get('/api/health');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'ok', database: 'ok' });
    expect(res.headers['ratelimit-limit']).toBeUndefined();
    expect(res.headers['ratelimit-remaining']).toBeUndefined();
    expect(res.headers['ratelimit-reset']).toBeUndefined();
  });

  it('answers 503 once the database is gone, and other routes fail with an opaque 500', async () => {
    const broken = await createTestApp();
    const { database } = broken.app.services;
    try {
      const { client } = await signUp(broken.app);
      await database.close();
      const res = await client.get('/api/health');
      expect(res.status).toBe(503);
      expect(res.body).toEqual({ status: 'error', database: 'unavailable' });
      const other = await client.get('/api/members');
      expectError(other, 500, 'Internal server error');
    } finally {
      // Already closed: make the harness's second close a no-op so it still drops the scratch database.
      database.close = async () => {};
      await broken.close();
    }
  });
});

/** (METHOD, OpenAPI path) of every route the app registered, read from Fastify's route tree per method. */
function registeredRoutes(app: App): Array<[string, string]> {
  const routes: Array<[string, string]> = [];
  for (const method of ['GET', 'POST', 'PUT', 'PATCH', 'DELETE']) {
    const tree = app.printRoutes({ method: method as 'GET', commonPrefix: false });
    const stack: string[] = [];
    for (const line of tree.split('\n')) {
      const match = line.match(/^((?:[│ ] {3})*)[├└]── (.+?)(?: \(([^)]*)\))?$/);
      if (!match) continue;
      stack.length = match[1]!.length / 4;
      stack.push(match[2]!);
      const methods = match[3]?.split(',').map((m) => m.trim()) ?? [];
      if (methods.includes(method)) routes.push([method, stack.join('').replace(/:(\w+)/g, '{$1}')]);
    }
  }
  return routes;
}

describe('OpenAPI', () => {
  it('GET /api/openapi.json is OpenAPI 3.1 and lists every registered route', async () => {
    const res = await new Client(t.app).get('/api/openapi.json');
    expect(res.status).toBe(200);
    expect(res.body.openapi).toMatch(/^3\.1\./);
    expect(res.body.info.title).toEqual(expect.any(String));
    const paths = res.body.paths as Record<string, Record<string, unknown>>;

    const all = registeredRoutes(t.app);
    // The parser understood the tree: known routes of each shape are found.
    expect(all).toEqual(
      expect.arrayContaining([
        ['GET', '/api/me'],
        ['GET', '/api/members'],
        ['POST', '/api/members'],
        ['PATCH', '/api/members/{userId}'],
        ['DELETE', '/api/invitations/{id}'],
        ['POST', '/api/invitations/{token}/accept'],
        ['POST', '/api/auth/sign-in/email'],
        ['GET', '/api/health'],
      ]),
    );
    // The reference page's own assets and the document itself are not API operations.
    const api = all.filter(([, url]) => !url.startsWith('/api/docs') && url !== '/api/openapi.json');
    expect(api.length).toBeGreaterThanOrEqual(20);
    const missing = api.filter(([method, url]) => paths[url]?.[method.toLowerCase()] === undefined);
    expect(missing).toEqual([]);

    const documented = Object.entries(paths).flatMap(([url, item]) =>
      Object.keys(item)
        .filter((key) => ['get', 'post', 'put', 'patch', 'delete'].includes(key))
        .map((key) => [key.toUpperCase(), url]),
    );
    expect(documented.sort()).toEqual(api.map((r) => [...r]).sort());
  });

  it('documents the error shapes and the credentials', async () => {
    const doc = (await new Client(t.app).get('/api/openapi.json')).body;
    expect(Object.keys(doc.components.securitySchemes).sort()).toEqual(['session', 'workspace']);
    expect(doc.components.securitySchemes.session).toMatchObject({ in: 'cookie', name: 'service-auth.session_token' });
    expect(doc.components.securitySchemes.workspace).toMatchObject({ in: 'header', name: 'x-workspace-id' });
    const members = doc.paths['/api/members'].get;
    expect(Object.keys(members.responses)).toEqual(expect.arrayContaining(['200', '400', '401', '403']));
  });

  it('GET /api/docs returns an HTML page', async () => {
    const client = new Client(t.app);
    let res = await client.get('/api/docs');
    for (let hops = 0; hops < 3 && res.status >= 300 && res.status < 400; hops++) {
      res = await client.get(new URL(String(res.headers.location), 'http://localhost/api/docs').pathname);
    }
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(String(res.body)).toMatch(/<html/i);
  });
});
