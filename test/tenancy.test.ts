// Account and tenancy end to end: /api/me, organizations and workspaces, the current workspace, its members and
// invitations, and the isolation between workspaces (nobody sees or touches another workspace's people).
import { randomUUID } from 'node:crypto';
import { desc, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { invitations, mailOutbox } from '../src/db/schema/index.js';
import { APP_URL, type Client, signUp, type TestApp, createTestApp, uniqueEmail, workspaceWithRoles, expectValidation, expectNotFound, expectForbidden } from './helpers.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => t.close());

type Role = 'admin' | 'agent' | 'viewer';

const UNAUTHORIZED = { error: 'Unauthorized' };

/** Signs a new user up and has `by` add them to `by`'s workspace with `role`; the client then works there. */
async function addMember(by: Client, role: Role, name = `${role} member`) {
  const person = await signUp(t.app, { name });
  const res = await by.post('/api/members', { email: person.user.email, role });
  expect(res.status).toBe(201);
  person.client.workspaceId = by.workspaceId;
  return person;
}

/** The token of the last invitation link mailed to `email`. */
async function invitationToken(email: string): Promise<string> {
  const rows = await t.app.services.database.db
    .select()
    .from(mailOutbox)
    .where(eq(mailOutbox.to, email.toLowerCase()))
    .orderBy(desc(mailOutbox.createdAt));
  const mail = rows[0];
  expect(mail).toBeDefined();
  const match = mail!.text.match(/(http:\/\/app\.test\/invite\?token=([\w-]+))/);
  expect(match).not.toBeNull();
  return match![2]!;
}

async function memberList(client: Client, workspace?: string) {
  const res = await client.get('/api/members?limit=100', workspace ? { workspace } : {});
  expect(res.status).toBe(200);
  return res.body as { items: { userId: string; email: string; name: string; role: string }[]; total: number };
}

describe('GET /api/me', () => {
  it('answers with the cookie alone: the user and their organization as owner with its workspaces', async () => {
    const { client, user, organizationId, workspaceId } = await signUp(t.app, { name: 'Mia' });
    const res = await client.get('/api/me', { workspace: null });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      user: { id: user.id, email: user.email, name: 'Mia', emailVerified: false },
      organizations: [
        { id: organizationId, name: "Mia's organization", role: 'owner', workspaces: [{ id: workspaceId, name: 'Default', role: 'owner' }] },
      ],
    });
  });

  it('answers 401 without a cookie', async () => {
    const { client } = await signUp(t.app);
    const res = await client.get('/api/me', { workspace: null, anonymous: true });
    expect(res.status).toBe(401);
    expect(res.body).toEqual(UNAUTHORIZED);
  });

  it('shows a member the organization with role "member" and only the workspaces they belong to, with their role', async () => {
    const owner = await signUp(t.app, { name: 'Owen' });
    const second = await owner.client.post(`/api/organizations/${owner.organizationId}/workspaces`, { name: 'Second' });
    expect(second.status).toBe(201);
    const member = await addMember(owner.client, 'agent');

    const me = await member.client.get('/api/me', { workspace: null });
    expect(me.status).toBe(200);
    expect(me.body.organizations).toHaveLength(2);
    expect(me.body.organizations).toContainEqual({
      id: owner.organizationId,
      name: "Owen's organization",
      role: 'member',
      workspaces: [{ id: owner.workspaceId, name: 'Default', role: 'agent' }],
    });
    expect(me.body.organizations).toContainEqual({
      id: member.organizationId,
      name: expect.any(String),
      role: 'owner',
      workspaces: [{ id: member.workspaceId, name: 'Default', role: 'owner' }],
    });

    const ownerMe = await owner.client.get('/api/me', { workspace: null });
    expect(ownerMe.body.organizations).toHaveLength(1);
    expect(ownerMe.body.organizations[0].role).toBe('owner');
    expect(ownerMe.body.organizations[0].workspaces).toHaveLength(2);
    expect(ownerMe.body.organizations[0].workspaces).toEqual(
      expect.arrayContaining([
        { id: owner.workspaceId, name: 'Default', role: 'owner' },
        { id: second.body.id, name: 'Second', role: 'owner' },
      ]),
    );
  });
});

describe('POST /api/organizations', () => {
  it('creates an organization owned by the caller with a first workspace "Default"', async () => {
    const { client, user } = await signUp(t.app);
    const res = await client.post('/api/organizations', { name: 'Acme' }, { workspace: null });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({ id: expect.any(String), name: 'Acme', workspaces: [{ id: expect.any(String), name: 'Default', role: 'owner' }] });
    const workspaceId = res.body.workspaces[0].id as string;
    expect(workspaceId).not.toBe(client.workspaceId);

    const me = await client.get('/api/me', { workspace: null });
    expect(me.body.organizations).toHaveLength(2);
    expect(me.body.organizations).toContainEqual({ id: res.body.id, name: 'Acme', role: 'owner', workspaces: res.body.workspaces });

    const workspace = await client.get('/api/workspace', { workspace: workspaceId });
    expect(workspace.status).toBe(200);
    expect(workspace.body).toMatchObject({ id: workspaceId, name: 'Default', organizationId: res.body.id, role: 'owner' });
    const members = await memberList(client, workspaceId);
    expect(members).toEqual({ items: [{ userId: user.id, email: user.email, name: user.name, role: 'owner' }], total: 1 });
  });

  it.each([
    [{ name: 'Acme', extra: true }, 'extra'],
    [{}, 'name'],
    [{ name: '   ' }, 'name'],
    [{ name: 'x'.repeat(101) }, 'name'],
    [{ name: 42 }, 'name'],
  ])('answers 400 with details for %j', async (body, path) => {
    const { client } = await signUp(t.app);
    expectValidation(await client.post('/api/organizations', body, { workspace: null }), path);
  });

  it('answers 401 without a cookie', async () => {
    const { client } = await signUp(t.app);
    const res = await client.post('/api/organizations', { name: 'Acme' }, { workspace: null, anonymous: true });
    expect(res.status).toBe(401);
    expect(res.body).toEqual(UNAUTHORIZED);
  });
});

describe('POST /api/organizations/{orgId}/workspaces', () => {
  it('lets the Org Owner add a workspace they can use at once; members of other workspaces do not reach it', async () => {
    const owner = await signUp(t.app);
    const member = await addMember(owner.client, 'admin');
    const res = await owner.client.post(`/api/organizations/${owner.organizationId}/workspaces`, { name: '  Support  ' }, { workspace: null });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({ id: expect.any(String), name: 'Support', organizationId: owner.organizationId });

    const workspace = await owner.client.get('/api/workspace', { workspace: res.body.id });
    expect(workspace.status).toBe(200);
    expect(workspace.body).toMatchObject({ id: res.body.id, name: 'Support', role: 'owner' });
    expectForbidden(await member.client.get('/api/members', { workspace: res.body.id }));
  });

  it('answers 403 to a member of the organization who is not its owner', async () => {
    const owner = await signUp(t.app);
    const admin = await addMember(owner.client, 'admin');
    const res = await admin.client.post(`/api/organizations/${owner.organizationId}/workspaces`, { name: 'Mine' }, { workspace: null });
    expectForbidden(res);
    const me = await owner.client.get('/api/me', { workspace: null });
    expect(me.body.organizations[0].workspaces).toHaveLength(1);
  });

  it('answers 404 to a stranger, exactly as for an unknown organization', async () => {
    const owner = await signUp(t.app);
    const stranger = await signUp(t.app);
    const foreign = await stranger.client.post(`/api/organizations/${owner.organizationId}/workspaces`, { name: 'Mine' });
    const unknown = await stranger.client.post(`/api/organizations/${randomUUID()}/workspaces`, { name: 'Mine' });
    expectNotFound(foreign);
    expectNotFound(unknown);
    expect(foreign.body).toEqual(unknown.body);
  });

  it('answers 400 for a malformed organization id or body, 401 without a cookie', async () => {
    const owner = await signUp(t.app);
    expectValidation(await owner.client.post('/api/organizations/not-a-uuid/workspaces', { name: 'X' }), 'orgId');
    const url = `/api/organizations/${owner.organizationId}/workspaces`;
    expectValidation(await owner.client.post(url, { name: 'X', role: 'owner' }), 'role');
    expectValidation(await owner.client.post(url, { name: '' }), 'name');
    const anonymous = await owner.client.post(url, { name: 'X' }, { anonymous: true });
    expect(anonymous.status).toBe(401);
    expect(anonymous.body).toEqual(UNAUTHORIZED);
  });
});

describe('credentials on workspace routes', () => {
  it('answers 401 without cookie or workspace, 403 for a malformed workspace id or a workspace of someone else', async () => {
    const a = await signUp(t.app);
    const b = await signUp(t.app);
    for (const url of ['/api/workspace', '/api/members', '/api/invitations']) {
      const noCookie = await a.client.get(url, { anonymous: true });
      expect(noCookie.status).toBe(401);
      expect(noCookie.body).toEqual(UNAUTHORIZED);
      const noWorkspace = await a.client.get(url, { workspace: null });
      expect(noWorkspace.status).toBe(401);
      expect(noWorkspace.body).toEqual(UNAUTHORIZED);
      expectForbidden(await a.client.get(url, { workspace: 'not-a-uuid' }));
      expectForbidden(await a.client.get(url, { workspace: b.workspaceId }));
      expectForbidden(await a.client.get(url, { workspace: randomUUID() }));
    }
  });
});

describe('the current workspace', () => {
  it('GET /api/workspace answers every role with the workspace and the caller\'s role', async () => {
    const cast = await workspaceWithRoles(t.app);
    for (const role of ['owner', 'admin', 'agent', 'viewer'] as const) {
      const res = await cast[role].get('/api/workspace');
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        id: cast.workspaceId,
        name: 'Default',
        organizationId: cast.organizationId,
        role,
        createdAt: expect.any(String),
        updatedAt: expect.any(String),
      });
    }
  });

  it('PATCH /api/workspace renames it for admins and owners, 403 for agents and viewers', async () => {
    const cast = await workspaceWithRoles(t.app);
    expectForbidden(await cast.agent.patch('/api/workspace', { name: 'Agents' }));
    expectForbidden(await cast.viewer.patch('/api/workspace', { name: 'Viewers' }));
    expect((await cast.owner.get('/api/workspace')).body.name).toBe('Default');

    const byAdmin = await cast.admin.patch('/api/workspace', { name: '  Sales  ' });
    expect(byAdmin.status).toBe(200);
    expect(byAdmin.body).toMatchObject({ id: cast.workspaceId, name: 'Sales', role: 'admin' });
    const byOwner = await cast.owner.patch('/api/workspace', { name: 'Support' });
    expect(byOwner.status).toBe(200);
    expect(byOwner.body).toMatchObject({ name: 'Support', role: 'owner' });
    expect((await cast.viewer.get('/api/workspace')).body.name).toBe('Support');
    const me = await cast.agent.get('/api/me', { workspace: null });
    const org = me.body.organizations.find((o: { id: string }) => o.id === cast.organizationId);
    expect(org.workspaces).toEqual([{ id: cast.workspaceId, name: 'Support', role: 'agent' }]);
  });

  it('PATCH /api/workspace answers 400 with details for a bad body', async () => {
    const { client } = await signUp(t.app);
    expectValidation(await client.patch('/api/workspace', { name: '' }), 'name');
    expectValidation(await client.patch('/api/workspace', { name: 'x'.repeat(101) }), 'name');
    expectValidation(await client.patch('/api/workspace', { name: 'Ok', organizationId: randomUUID() }), 'organizationId');
    expectValidation(await client.patch('/api/workspace', {}), 'name');
  });
});

describe('GET /api/members', () => {
  it('lists members and the organization\'s owners (role "owner") to every role', async () => {
    const cast = await workspaceWithRoles(t.app);
    const owner = await cast.owner.get('/api/me', { workspace: null });
    const expected = { userId: owner.body.user.id, email: owner.body.user.email, name: 'Olivia Owner', role: 'owner' };
    for (const role of ['owner', 'admin', 'agent', 'viewer'] as const) {
      const res = await cast[role].get('/api/members');
      expect(res.status).toBe(200);
      expect(res.body.total).toBe(4);
      expect(res.body.items).toHaveLength(4);
      expect(res.body.items).toContainEqual(expected);
      for (const other of ['admin', 'agent', 'viewer'] as const) {
        const user = cast[other].user!;
        expect(res.body.items).toContainEqual({ userId: user.id, email: user.email, name: user.name, role: other });
      }
      expect(res.body.items.map((m: { userId: string }) => m.userId)).not.toContain(cast.outsider.user!.id);
    }
  });

  it('pages with limit and offset and reports the total across pages', async () => {
    const owner = await signUp(t.app);
    const roles: Role[] = ['admin', 'agent', 'viewer', 'admin', 'agent', 'viewer'];
    for (const [i, role] of roles.entries()) await addMember(owner.client, role, `Member ${i}`);
    const all = await memberList(owner.client);
    expect(all.total).toBe(7);
    expect(all.items).toHaveLength(7);
    expect(new Set(all.items.map((m) => m.userId)).size).toBe(7);
    expect(all.items[0]!.role).toBe('owner');

    const byDefault = await owner.client.get('/api/members');
    expect(byDefault.body).toEqual(all);

    const pages = [];
    for (const offset of [0, 3, 6]) {
      const res = await owner.client.get(`/api/members?limit=3&offset=${offset}`);
      expect(res.status).toBe(200);
      expect(res.body.total).toBe(7);
      pages.push(...res.body.items);
      expect(res.body.items).toHaveLength(offset === 6 ? 1 : 3);
    }
    expect(pages).toEqual(all.items);

    for (const offset of [7, 100]) {
      const past = await owner.client.get(`/api/members?limit=3&offset=${offset}`);
      expect(past.status).toBe(200);
      expect(past.body).toEqual({ items: [], total: 7 });
    }
    const one = await owner.client.get('/api/members?limit=1&offset=1');
    expect(one.body).toEqual({ items: [all.items[1]], total: 7 });
    const max = await owner.client.get('/api/members?limit=100');
    expect(max.body).toEqual(all);
  });

  it.each([
    ['limit=0', 'limit'],
    ['limit=101', 'limit'],
    ['limit=abc', 'limit'],
    ['limit=1.5', 'limit'],
    ['limit=-5', 'limit'],
    ['offset=-1', 'offset'],
    ['offset=abc', 'offset'],
    ['offset=0.5', 'offset'],
  ])('answers 400 with details for ?%s', async (query, path) => {
    const { client } = await signUp(t.app);
    expectValidation(await client.get(`/api/members?${query}`), path);
  });
});

describe('POST /api/members', () => {
  it('adds an existing account with its role; the new member can work in the workspace at once', async () => {
    const owner = await signUp(t.app);
    const person = await signUp(t.app, { name: 'Nina' });
    // The person tries first, so a refusal is what the process last saw of them.
    expectForbidden(await person.client.get('/api/members', { workspace: owner.workspaceId }));
    const res = await owner.client.post('/api/members', { email: person.user.email.toUpperCase(), role: 'viewer' });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({ userId: person.user.id, email: person.user.email, name: 'Nina', role: 'viewer' });
    const list = await person.client.get('/api/members', { workspace: owner.workspaceId });
    expect(list.status).toBe(200);
    expect(list.body.items).toContainEqual(res.body);
  });

  it('lets an admin add members; agents and viewers get 403 and nobody is added', async () => {
    const cast = await workspaceWithRoles(t.app);
    const a = await signUp(t.app);
    const b = await signUp(t.app);
    expectForbidden(await cast.agent.post('/api/members', { email: a.user.email, role: 'viewer' }));
    expectForbidden(await cast.viewer.post('/api/members', { email: a.user.email, role: 'viewer' }));
    expect((await memberList(cast.owner)).total).toBe(4);
    const res = await cast.admin.post('/api/members', { email: b.user.email, role: 'admin' });
    expect(res.status).toBe(201);
    expect(res.body.role).toBe('admin');
    expect((await memberList(cast.owner)).total).toBe(5);
  });

  it('answers 404 when no account uses the e-mail', async () => {
    const { client } = await signUp(t.app);
    expectNotFound(await client.post('/api/members', { email: uniqueEmail('nobody'), role: 'agent' }), expect.any(String));
  });

  it('answers 409 for an existing member and for an owner of the organization', async () => {
    const cast = await workspaceWithRoles(t.app);
    const again = await cast.admin.post('/api/members', { email: cast.agent.user!.email, role: 'admin' });
    expect(again.status).toBe(409);
    expect(again.body).toEqual({ error: expect.any(String) });
    const owner = await cast.admin.post('/api/members', { email: (await cast.owner.get('/api/me', { workspace: null })).body.user.email, role: 'viewer' });
    expect(owner.status).toBe(409);
    const list = await memberList(cast.owner);
    expect(list.total).toBe(4);
    expect(list.items.find((m) => m.userId === cast.agent.user!.id)?.role).toBe('agent');
  });

  it.each([
    [{ role: 'owner' }, 'role'],
    [{ role: 'superuser' }, 'role'],
    [{ role: undefined }, 'role'],
    [{ email: 'not-an-email' }, 'email'],
    [{ email: undefined }, 'email'],
    [{ extra: 1 }, 'extra'],
  ])('answers 400 with details for %j', async (change, path) => {
    const owner = await signUp(t.app);
    const person = await signUp(t.app);
    const body = { email: person.user.email, role: 'agent', ...change };
    expectValidation(await owner.client.post('/api/members', body), path);
    expect((await memberList(owner.client)).total).toBe(1);
  });
});

describe('PATCH and DELETE /api/members/{userId}', () => {
  it('changes a role; the change applies to the member\'s very next request', async () => {
    const cast = await workspaceWithRoles(t.app);
    const stranger = await signUp(t.app);
    // The viewer is refused once, then promoted: the next write goes through.
    expectForbidden(await cast.viewer.post('/api/members', { email: stranger.user.email, role: 'agent' }));
    const promoted = await cast.admin.patch(`/api/members/${cast.viewer.user!.id}`, { role: 'admin' });
    expect(promoted.status).toBe(200);
    expect(promoted.body).toEqual({ userId: cast.viewer.user!.id, email: cast.viewer.user!.email, name: cast.viewer.user!.name, role: 'admin' });
    const added = await cast.viewer.post('/api/members', { email: stranger.user.email, role: 'agent' });
    expect(added.status).toBe(201);
    expect((await cast.viewer.get('/api/workspace')).body.role).toBe('admin');

    // The admin, who just wrote, is demoted and can no longer write.
    expect((await cast.admin.patch('/api/workspace', { name: 'Renamed' })).status).toBe(200);
    const demoted = await cast.owner.patch(`/api/members/${cast.admin.user!.id}`, { role: 'viewer' });
    expect(demoted.status).toBe(200);
    expect(demoted.body.role).toBe('viewer');
    expectForbidden(await cast.admin.patch('/api/workspace', { name: 'Again' }));
    expect((await cast.admin.get('/api/members')).status).toBe(200);

    const list = await memberList(cast.owner);
    expect(list.items.find((m) => m.userId === cast.viewer.user!.id)?.role).toBe('admin');
    expect(list.items.find((m) => m.userId === cast.admin.user!.id)?.role).toBe('viewer');
  });

  it('removes a member with 204; they are refused on their next request and no longer see the organization', async () => {
    const cast = await workspaceWithRoles(t.app);
    expect((await cast.agent.get('/api/members')).status).toBe(200);
    const res = await cast.admin.delete(`/api/members/${cast.agent.user!.id}`);
    expect(res.status).toBe(204);
    expect(res.raw.body).toBe('');
    expectForbidden(await cast.agent.get('/api/members'));
    expectForbidden(await cast.agent.get('/api/workspace'));
    const me = await cast.agent.get('/api/me', { workspace: null });
    expect(me.body.organizations.map((o: { id: string }) => o.id)).not.toContain(cast.organizationId);
    const list = await memberList(cast.owner);
    expect(list.total).toBe(3);
    expect(list.items.map((m) => m.userId)).not.toContain(cast.agent.user!.id);
    expectNotFound(await cast.admin.delete(`/api/members/${cast.agent.user!.id}`));
  });

  it('a removed member added back works again at once', async () => {
    const cast = await workspaceWithRoles(t.app);
    expect((await cast.owner.delete(`/api/members/${cast.viewer.user!.id}`)).status).toBe(204);
    expectForbidden(await cast.viewer.get('/api/members'));
    expect((await cast.owner.post('/api/members', { email: cast.viewer.user!.email, role: 'agent' })).status).toBe(201);
    const back = await cast.viewer.get('/api/workspace');
    expect(back.status).toBe(200);
    expect(back.body.role).toBe('agent');
  });

  it('answers 422 for an owner of the organization, whose access is not set per workspace', async () => {
    const cast = await workspaceWithRoles(t.app);
    const ownerId = (await cast.owner.get('/api/me', { workspace: null })).body.user.id as string;
    for (const client of [cast.admin, cast.owner]) {
      const patch = await client.patch(`/api/members/${ownerId}`, { role: 'viewer' });
      expect(patch.status).toBe(422);
      expect(patch.body).toEqual({ error: expect.any(String) });
      const del = await client.delete(`/api/members/${ownerId}`);
      expect(del.status).toBe(422);
      expect(del.body).toEqual({ error: expect.any(String) });
    }
    expect((await cast.owner.get('/api/workspace')).body.role).toBe('owner');
    expect((await memberList(cast.admin)).items).toContainEqual(expect.objectContaining({ userId: ownerId, role: 'owner' }));
  });

  it('answers 403 to agents and viewers and changes nothing', async () => {
    const cast = await workspaceWithRoles(t.app);
    for (const client of [cast.agent, cast.viewer]) {
      expectForbidden(await client.patch(`/api/members/${cast.admin.user!.id}`, { role: 'viewer' }));
      expectForbidden(await client.delete(`/api/members/${cast.admin.user!.id}`));
      expectForbidden(await client.patch(`/api/members/${client.user!.id}`, { role: 'admin' }));
    }
    const list = await memberList(cast.owner);
    expect(list.total).toBe(4);
    expect(list.items.find((m) => m.userId === cast.admin.user!.id)?.role).toBe('admin');
    expect(list.items.find((m) => m.userId === cast.agent.user!.id)?.role).toBe('agent');
    expect(list.items.find((m) => m.userId === cast.viewer.user!.id)?.role).toBe('viewer');
  });

  it('answers 404 for an unknown user, 400 for a malformed id or body', async () => {
    const cast = await workspaceWithRoles(t.app);
    expectNotFound(await cast.admin.patch(`/api/members/${randomUUID()}`, { role: 'agent' }));
    expectNotFound(await cast.admin.delete(`/api/members/${randomUUID()}`));
    // An account that exists but is not in the workspace is just as unknown.
    expectNotFound(await cast.admin.patch(`/api/members/${cast.outsider.user!.id}`, { role: 'agent' }));
    expectValidation(await cast.admin.patch('/api/members/not-a-uuid', { role: 'agent' }), 'userId');
    expectValidation(await cast.admin.delete('/api/members/not-a-uuid'), 'userId');
    const url = `/api/members/${cast.agent.user!.id}`;
    expectValidation(await cast.admin.patch(url, { role: 'owner' }), 'role');
    expectValidation(await cast.admin.patch(url, {}), 'role');
    expectValidation(await cast.admin.patch(url, { role: 'viewer', email: 'x@example.test' }), 'email');
    expect((await memberList(cast.owner)).items.find((m) => m.userId === cast.agent.user!.id)?.role).toBe('agent');
  });
});

describe('invitations', () => {
  it('mails a link to the app; the invitee signs up, accepts without a workspace header and joins with the role', async () => {
    const cast = await workspaceWithRoles(t.app);
    const email = uniqueEmail('Invitee');
    const res = await cast.admin.post('/api/invitations', { email, role: 'agent' });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.any(String),
      email: email.toLowerCase(),
      role: 'agent',
      expiresAt: expect.any(String),
      createdAt: expect.any(String),
      invitedByUserId: cast.admin.user!.id,
    });
    const days = (Date.parse(res.body.expiresAt) - Date.now()) / 86_400_000;
    expect(days).toBeGreaterThan(6.99);
    expect(days).toBeLessThanOrEqual(7);

    const [mail] = await t.app.services.database.db.select().from(mailOutbox).where(eq(mailOutbox.to, email.toLowerCase()));
    expect(mail!.text).toContain(`${APP_URL}/invite?token=`);
    const token = await invitationToken(email);
    const [stored] = await t.app.services.database.db.select().from(invitations).where(eq(invitations.id, res.body.id));
    expect(stored!.tokenHash).not.toContain(token);

    const pending = await cast.owner.get('/api/invitations');
    expect(pending.status).toBe(200);
    expect(pending.body).toEqual({ items: [res.body], total: 1 });

    const invitee = await signUp(t.app, { email, name: 'Ivy Invitee' });
    const accepted = await invitee.client.post(`/api/invitations/${token}/accept`, undefined, { workspace: null });
    expect(accepted.status).toBe(200);
    expect(accepted.body).toEqual({
      workspace: { id: cast.workspaceId, name: 'Default', organizationId: cast.organizationId },
      role: 'agent',
    });

    invitee.client.workspaceId = cast.workspaceId;
    const members = await invitee.client.get('/api/members');
    expect(members.status).toBe(200);
    expect(members.body.total).toBe(5);
    expect(members.body.items).toContainEqual({ userId: invitee.user.id, email: email.toLowerCase(), name: 'Ivy Invitee', role: 'agent' });
    const me = await invitee.client.get('/api/me', { workspace: null });
    expect(me.body.organizations).toContainEqual({
      id: cast.organizationId,
      name: expect.any(String),
      role: 'member',
      workspaces: [{ id: cast.workspaceId, name: 'Default', role: 'agent' }],
    });
    expect((await cast.owner.get('/api/invitations')).body).toEqual({ items: [], total: 0 });

    const reuse = await invitee.client.post(`/api/invitations/${token}/accept`, undefined, { workspace: null });
    expect(reuse.status).toBe(409);
    expect(reuse.body).toEqual({ error: expect.any(String) });
  });

  it('can be accepted by an account that existed before the invitation, whatever the e-mail\'s case', async () => {
    const owner = await signUp(t.app);
    const person = await signUp(t.app);
    const res = await owner.client.post('/api/invitations', { email: person.user.email.toUpperCase(), role: 'viewer' });
    expect(res.status).toBe(201);
    expect(res.body.email).toBe(person.user.email);
    const token = await invitationToken(person.user.email);
    // The person's refusal is fresh in memory when they accept.
    expectForbidden(await person.client.get('/api/workspace', { workspace: owner.workspaceId }));
    const accepted = await person.client.post(`/api/invitations/${token}/accept`, undefined, { workspace: null });
    expect(accepted.status).toBe(200);
    expect(accepted.body.role).toBe('viewer');
    const workspace = await person.client.get('/api/workspace', { workspace: owner.workspaceId });
    expect(workspace.status).toBe(200);
    expect(workspace.body.role).toBe('viewer');
  });

  it('answers 403 to another account, which leaves the invitation usable by the invitee', async () => {
    const owner = await signUp(t.app);
    const email = uniqueEmail('invited');
    expect((await owner.client.post('/api/invitations', { email, role: 'admin' })).status).toBe(201);
    const token = await invitationToken(email);
    const other = await signUp(t.app);
    const wrong = await other.client.post(`/api/invitations/${token}/accept`, undefined, { workspace: null });
    expect(wrong.status).toBe(403);
    expect(wrong.body).toEqual({ error: expect.any(String) });
    expectForbidden(await other.client.get('/api/members', { workspace: owner.workspaceId }));

    const invitee = await signUp(t.app, { email });
    const accepted = await invitee.client.post(`/api/invitations/${token}/accept`, undefined, { workspace: null });
    expect(accepted.status).toBe(200);
    expect(accepted.body.role).toBe('admin');
  });

  it('accepted by someone added directly in the meantime, keeps their membership and reports its real role', async () => {
    const owner = await signUp(t.app);
    const email = uniqueEmail();
    expect((await owner.client.post('/api/invitations', { email, role: 'admin' })).status).toBe(201);
    const token = await invitationToken(email);
    const person = await signUp(t.app, { email });
    expect((await owner.client.post('/api/members', { email, role: 'viewer' })).status).toBe(201);
    const accepted = await person.client.post(`/api/invitations/${token}/accept`, undefined, { workspace: null });
    expect(accepted.status).toBe(200);
    const workspace = await person.client.get('/api/workspace', { workspace: owner.workspaceId });
    expect(workspace.body.role).toBe('viewer');
    expect(accepted.body.role).toBe(workspace.body.role);
    expect((await owner.client.get('/api/invitations')).body.total).toBe(0);
  });

  it('answers 410 once expired, and an expired invitation is no longer listed', async () => {
    const owner = await signUp(t.app);
    const email = uniqueEmail('late');
    const res = await owner.client.post('/api/invitations', { email, role: 'agent' });
    const token = await invitationToken(email);
    await t.app.services.database.db
      .update(invitations)
      .set({ expiresAt: new Date(Date.now() - 1000) })
      .where(eq(invitations.id, res.body.id));
    expect((await owner.client.get('/api/invitations')).body).toEqual({ items: [], total: 0 });
    const invitee = await signUp(t.app, { email });
    const late = await invitee.client.post(`/api/invitations/${token}/accept`, undefined, { workspace: null });
    expect(late.status).toBe(410);
    expect(late.body).toEqual({ error: expect.any(String) });
    expectForbidden(await invitee.client.get('/api/members', { workspace: owner.workspaceId }));
  });

  it('answers 404 for an unknown token and 401 without a cookie', async () => {
    const owner = await signUp(t.app);
    const email = uniqueEmail();
    await owner.client.post('/api/invitations', { email, role: 'agent' });
    const token = await invitationToken(email);
    const invitee = await signUp(t.app, { email });
    expectNotFound(await invitee.client.post('/api/invitations/unknown-token/accept', undefined, { workspace: null }));
    expectNotFound(await invitee.client.post(`/api/invitations/${token}x/accept`, undefined, { workspace: null }));
    const anonymous = await invitee.client.post(`/api/invitations/${token}/accept`, undefined, { workspace: null, anonymous: true });
    expect(anonymous.status).toBe(401);
    expect(anonymous.body).toEqual(UNAUTHORIZED);
    expect((await owner.client.get('/api/invitations')).body.total).toBe(1);
  });

  it('revokes with 204: the link then answers 404 and the invitation is gone', async () => {
    const owner = await signUp(t.app);
    const email = uniqueEmail();
    const res = await owner.client.post('/api/invitations', { email, role: 'viewer' });
    const token = await invitationToken(email);
    const revoked = await owner.client.delete(`/api/invitations/${res.body.id}`);
    expect(revoked.status).toBe(204);
    expect(revoked.raw.body).toBe('');
    expect((await owner.client.get('/api/invitations')).body).toEqual({ items: [], total: 0 });
    expectNotFound(await owner.client.delete(`/api/invitations/${res.body.id}`));
    const invitee = await signUp(t.app, { email });
    expectNotFound(await invitee.client.post(`/api/invitations/${token}/accept`, undefined, { workspace: null }));
    expectForbidden(await invitee.client.get('/api/members', { workspace: owner.workspaceId }));
  });

  it('an accepted invitation cannot be revoked (404)', async () => {
    const owner = await signUp(t.app);
    const email = uniqueEmail();
    const res = await owner.client.post('/api/invitations', { email, role: 'viewer' });
    const invitee = await signUp(t.app, { email });
    expect((await invitee.client.post(`/api/invitations/${await invitationToken(email)}/accept`, undefined, { workspace: null })).status).toBe(200);
    expectNotFound(await owner.client.delete(`/api/invitations/${res.body.id}`));
    expect((await memberList(owner.client)).total).toBe(2);
  });

  it('re-inviting replaces the pending invitation: the old link answers 404, the new one grants the new role', async () => {
    const owner = await signUp(t.app);
    const email = uniqueEmail();
    const first = await owner.client.post('/api/invitations', { email, role: 'viewer' });
    const oldToken = await invitationToken(email);
    const second = await owner.client.post('/api/invitations', { email, role: 'admin' });
    expect(second.status).toBe(201);
    expect(second.body.id).not.toBe(first.body.id);
    const newToken = await invitationToken(email);
    expect(newToken).not.toBe(oldToken);
    expect((await owner.client.get('/api/invitations')).body).toEqual({ items: [second.body], total: 1 });
    expectNotFound(await owner.client.delete(`/api/invitations/${first.body.id}`));

    const invitee = await signUp(t.app, { email });
    expectNotFound(await invitee.client.post(`/api/invitations/${oldToken}/accept`, undefined, { workspace: null }));
    const accepted = await invitee.client.post(`/api/invitations/${newToken}/accept`, undefined, { workspace: null });
    expect(accepted.status).toBe(200);
    expect(accepted.body.role).toBe('admin');
  });

  it('answers 409 when inviting an existing member or an owner of the organization', async () => {
    const cast = await workspaceWithRoles(t.app);
    const member = await cast.admin.post('/api/invitations', { email: cast.viewer.user!.email, role: 'admin' });
    expect(member.status).toBe(409);
    expect(member.body).toEqual({ error: expect.any(String) });
    const ownerEmail = (await cast.owner.get('/api/me', { workspace: null })).body.user.email as string;
    expect((await cast.admin.post('/api/invitations', { email: ownerEmail, role: 'viewer' })).status).toBe(409);
    expect((await cast.admin.get('/api/invitations')).body.total).toBe(0);
  });

  it('is for admins and owners: agents and viewers get 403 on every invitation route', async () => {
    const cast = await workspaceWithRoles(t.app);
    const existing = await cast.owner.post('/api/invitations', { email: uniqueEmail(), role: 'viewer' });
    for (const client of [cast.agent, cast.viewer]) {
      expectForbidden(await client.post('/api/invitations', { email: uniqueEmail(), role: 'viewer' }));
      expectForbidden(await client.get('/api/invitations'));
      expectForbidden(await client.delete(`/api/invitations/${existing.body.id}`));
    }
    const list = await cast.admin.get('/api/invitations');
    expect(list.status).toBe(200);
    expect(list.body).toEqual({ items: [existing.body], total: 1 });
  });

  it('answers 400 with details for a bad body or id', async () => {
    const owner = await signUp(t.app);
    expectValidation(await owner.client.post('/api/invitations', { email: 'nope', role: 'agent' }), 'email');
    expectValidation(await owner.client.post('/api/invitations', { email: uniqueEmail(), role: 'owner' }), 'role');
    expectValidation(await owner.client.post('/api/invitations', { email: uniqueEmail() }), 'role');
    expectValidation(await owner.client.post('/api/invitations', { email: uniqueEmail(), role: 'agent', workspaceId: randomUUID() }), 'workspaceId');
    expectValidation(await owner.client.delete('/api/invitations/not-a-uuid'), 'id');
    expectValidation(await owner.client.get('/api/invitations?limit=0'), 'limit');
    expect((await owner.client.get('/api/invitations')).body.total).toBe(0);
  });
});

describe('isolation between workspaces', () => {
  /** Workspace A with a member of each role and a pending invitation; the outsider owns workspace B. */
  async function twoWorkspaces() {
    const cast = await workspaceWithRoles(t.app);
    const invitation = await cast.owner.post('/api/invitations', { email: uniqueEmail('pending'), role: 'agent' });
    expect(invitation.status).toBe(201);
    const before = await memberList(cast.owner);
    return { ...cast, invitationId: invitation.body.id as string, before };
  }

  async function expectUnchanged(cast: Awaited<ReturnType<typeof twoWorkspaces>>) {
    expect(await memberList(cast.owner)).toEqual(cast.before);
    const pending = await cast.owner.get('/api/invitations');
    expect(pending.body.items.map((i: { id: string }) => i.id)).toEqual([cast.invitationId]);
    expect((await cast.owner.get('/api/workspace')).body.name).toBe('Default');
  }

  it('from their own workspace, an outsider gets 404 for A\'s people and invitations, exactly as for unknown ids', async () => {
    const cast = await twoWorkspaces();
    const outsider = cast.outsider;
    const unknownPatch = await outsider.patch(`/api/members/${randomUUID()}`, { role: 'viewer' });
    const unknownDelete = await outsider.delete(`/api/members/${randomUUID()}`);
    const unknownRevoke = await outsider.delete(`/api/invitations/${randomUUID()}`);
    expectNotFound(unknownPatch);
    expectNotFound(unknownDelete);
    expectNotFound(unknownRevoke);
    const ownerId = (await cast.owner.get('/api/me', { workspace: null })).body.user.id as string;
    for (const id of [cast.admin.user!.id, cast.agent.user!.id, cast.viewer.user!.id, ownerId]) {
      const patch = await outsider.patch(`/api/members/${id}`, { role: 'viewer' });
      expect(patch.status).toBe(404);
      expect(patch.body).toEqual(unknownPatch.body);
      const del = await outsider.delete(`/api/members/${id}`);
      expect(del.status).toBe(404);
      expect(del.body).toEqual(unknownDelete.body);
    }
    const revoke = await outsider.delete(`/api/invitations/${cast.invitationId}`);
    expect(revoke.status).toBe(404);
    expect(revoke.body).toEqual(unknownRevoke.body);

    const members = await memberList(outsider);
    expect(members).toEqual({ items: [{ userId: outsider.user!.id, email: outsider.user!.email, name: 'Oscar Outsider', role: 'owner' }], total: 1 });
    expect((await outsider.get('/api/invitations')).body).toEqual({ items: [], total: 0 });
    await expectUnchanged(cast);
    for (const role of ['admin', 'agent', 'viewer'] as const) expect((await cast[role].get('/api/members')).status).toBe(200);
  });

  it('with workspace A\'s id in x-workspace-id, an outsider gets 403 Forbidden on every route', async () => {
    const cast = await twoWorkspaces();
    const a = { workspace: cast.workspaceId };
    const outsider = cast.outsider;
    const victim = cast.agent.user!.id;
    const replies = [
      await outsider.get('/api/workspace', a),
      await outsider.patch('/api/workspace', { name: 'Taken' }, a),
      await outsider.get('/api/members', a),
      await outsider.get('/api/members?limit=1', a),
      await outsider.post('/api/members', { email: outsider.user!.email, role: 'admin' }, a),
      await outsider.patch(`/api/members/${victim}`, { role: 'viewer' }, a),
      await outsider.delete(`/api/members/${victim}`, a),
      await outsider.patch(`/api/members/${outsider.user!.id}`, { role: 'admin' }, a),
      await outsider.get('/api/invitations', a),
      await outsider.post('/api/invitations', { email: outsider.user!.email, role: 'admin' }, a),
      await outsider.delete(`/api/invitations/${cast.invitationId}`, a),
    ];
    for (const res of replies) expectForbidden(res);
    // Even a malformed body or id is refused before anything about the workspace is told.
    expectForbidden(await outsider.patch('/api/members/not-a-uuid', { role: 'nope' }, a));
    expectForbidden(await outsider.post('/api/members', { bogus: true }, a));
    await expectUnchanged(cast);
    expect((await outsider.get('/api/me', { workspace: null })).body.organizations.map((o: { id: string }) => o.id)).not.toContain(
      cast.organizationId,
    );
  });

  it('members of A have no reach into the outsider\'s workspace B, whatever their role in A', async () => {
    const cast = await twoWorkspaces();
    const b = { workspace: cast.outsider.workspaceId! };
    for (const client of [cast.owner, cast.admin]) {
      expectForbidden(await client.get('/api/members', b));
      expectForbidden(await client.post('/api/members', { email: client.user?.email ?? uniqueEmail(), role: 'admin' }, b));
      expectForbidden(await client.delete(`/api/members/${cast.outsider.user!.id}`, b));
      expectForbidden(await client.get('/api/invitations', b));
    }
    expect((await memberList(cast.outsider)).total).toBe(1);
  });

  it('separates workspaces of one organization: a member of one is a stranger to the other', async () => {
    const owner = await signUp(t.app);
    const created = await owner.client.post(`/api/organizations/${owner.organizationId}/workspaces`, { name: 'Second' });
    const second = created.body.id as string;
    const firstAdmin = await addMember(owner.client, 'admin');
    const secondOwnerView = { workspace: second };
    const person = await signUp(t.app);
    const added = await owner.client.post('/api/members', { email: person.user.email, role: 'agent' }, secondOwnerView);
    expect(added.status).toBe(201);

    // The owner sees themselves in both; each workspace lists only its own members.
    const firstList = await memberList(owner.client);
    const secondList = await memberList(owner.client, second);
    expect(firstList.items.map((m) => m.userId)).toEqual(expect.arrayContaining([firstAdmin.user.id]));
    expect(firstList.items.map((m) => m.userId)).not.toContain(person.user.id);
    expect(secondList.items.map((m) => m.userId)).not.toContain(firstAdmin.user.id);
    expect(secondList.items).toContainEqual(expect.objectContaining({ userId: owner.user.id, role: 'owner' }));

    expectNotFound(await firstAdmin.client.patch(`/api/members/${person.user.id}`, { role: 'viewer' }));
    expectNotFound(await firstAdmin.client.delete(`/api/members/${person.user.id}`));
    expectForbidden(await firstAdmin.client.get('/api/members', secondOwnerView));
    expect((await memberList(owner.client, second)).items).toContainEqual(expect.objectContaining({ userId: person.user.id, role: 'agent' }));
  });

  it('an accepted invitation grants only its own workspace', async () => {
    const owner = await signUp(t.app);
    const created = await owner.client.post(`/api/organizations/${owner.organizationId}/workspaces`, { name: 'Second' });
    const email = uniqueEmail();
    await owner.client.post('/api/invitations', { email, role: 'admin' }, { workspace: created.body.id });
    const invitee = await signUp(t.app, { email });
    const accepted = await invitee.client.post(`/api/invitations/${await invitationToken(email)}/accept`, undefined, {
      workspace: owner.workspaceId,
    });
    expect(accepted.status).toBe(200);
    expect(accepted.body.workspace.id).toBe(created.body.id);
    expect((await invitee.client.get('/api/workspace', { workspace: created.body.id })).body.role).toBe('admin');
    expectForbidden(await invitee.client.get('/api/workspace', { workspace: owner.workspaceId }));
  });
});
