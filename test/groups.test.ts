// Groups of contacts end to end: create (names unique ignoring case), list with contact counts, read, rename,
// delete (contacts stay), members paginated as contact records, bulk add and remove; roles; isolation.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
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
  t = await createTestApp({ RATE_LIMIT_FACTOR: '10' });
  cast = await workspaceWithRoles(t.app);
});
afterAll(async () => t.close());

const GROUPS = '/api/groups';
let counter = 0;
const uniqueName = () => `Group ${++counter} ${randomUUID().slice(0, 6)}`;

async function createGroup(client: Client, body: Record<string, unknown> = {}) {
  const res = await client.post(GROUPS, { name: uniqueName(), ...body });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

async function createContacts(client: Client, n: number): Promise<{ id: string; name: string }[]> {
  const made = [];
  for (let i = 0; i < n; i++) {
    const res = await client.post('/api/contacts', { name: `Member ${++counter}` });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    made.push(res.body);
  }
  return made;
}

describe('POST /api/groups', () => {
  it('creates a group: 201 with the record, which reads back the same', async () => {
    const res = await cast.agent.post(GROUPS, { name: '  Newsletter ', description: 'Monthly' });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body).toEqual({
      id: expect.any(String),
      name: 'Newsletter',
      description: 'Monthly',
      contactCount: 0,
      createdAt: expect.stringMatching(ISO_TIMESTAMP),
      updatedAt: expect.stringMatching(ISO_TIMESTAMP),
    });
    expect((await cast.viewer.get(`${GROUPS}/${res.body.id}`)).body).toEqual(res.body);
  });

  it('answers 409 for a name the workspace has, ignoring case', async () => {
    const { client } = await signUp(t.app);
    await createGroup(client, { name: 'Customers' });
    const dup = await client.post(GROUPS, { name: 'CUSTOMERS' });
    expect(dup.status).toBe(409);
    expect(dup.body).toEqual({ error: expect.any(String) });
    const other = await signUp(t.app);
    await createGroup(other.client, { name: 'Customers' });
  });

  it.each([
    [{ name: '' }, 'name'],
    [{ name: 'x'.repeat(101) }, 'name'],
    [{ name: 'Ok', description: 'x'.repeat(501) }, 'description'],
    [{ name: 'Ok', extra: true }, 'extra'],
  ])('answers 400 to %j naming %s', async (body, path) => {
    expectValidation(await cast.agent.post(GROUPS, body), path);
  });

  it('lets Agents and above create; Viewers 403; 401 without a session', async () => {
    for (const client of [cast.agent, cast.admin, cast.owner]) await createGroup(client);
    expectForbidden(await cast.viewer.post(GROUPS, { name: uniqueName() }));
    expect((await cast.agent.post(GROUPS, { name: uniqueName() }, { anonymous: true })).status).toBe(401);
  });
});

describe('GET /api/groups', () => {
  it('pages by name with contact counts and an exact total', async () => {
    const { client } = await signUp(t.app);
    expect((await client.get(GROUPS)).body).toEqual({ items: [], total: 0 });
    const b = await createGroup(client, { name: 'beta' });
    const a = await createGroup(client, { name: 'Alpha' });
    await createGroup(client, { name: 'gamma' });
    const [contact] = await createContacts(client, 1);
    expect((await client.post(`${GROUPS}/${b.id}/contacts`, { contactIds: [contact!.id] })).status).toBe(200);
    const res = await client.get(`${GROUPS}?limit=2`);
    expect(res.body.total).toBe(3);
    expect(res.body.items.map((g: { id: string }) => g.id)).toEqual([a.id, b.id]);
    expect(res.body.items[1].contactCount).toBe(1);
    expect((await client.get(`${GROUPS}?offset=5`)).body).toEqual({ items: [], total: 3 });
    expectValidation(await client.get(`${GROUPS}?limit=101`), 'limit');
  });
});

describe('PATCH and DELETE /api/groups/{id}', () => {
  it('renames (Agent); 409 for another group’s name', async () => {
    const a = await createGroup(cast.owner);
    const b = await createGroup(cast.owner);
    const res = await cast.agent.patch(`${GROUPS}/${a.id}`, { name: 'Renamed group', description: null });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({ id: a.id, name: 'Renamed group', description: null });
    expect((await cast.agent.patch(`${GROUPS}/${b.id}`, { name: 'renamed GROUP' })).status).toBe(409);
    expectValidation(await cast.agent.patch(`${GROUPS}/${a.id}`, {}), '');
    expectForbidden(await cast.viewer.patch(`${GROUPS}/${a.id}`, { name: uniqueName() }));
  });

  it('deletes (Admin): 204, its contacts stay; Agents and Viewers get 403', async () => {
    const group = await createGroup(cast.owner);
    const [contact] = await createContacts(cast.owner, 1);
    await cast.agent.post(`${GROUPS}/${group.id}/contacts`, { contactIds: [contact!.id] });
    expectForbidden(await cast.agent.delete(`${GROUPS}/${group.id}`));
    expectForbidden(await cast.viewer.delete(`${GROUPS}/${group.id}`));
    expect((await cast.admin.delete(`${GROUPS}/${group.id}`)).status).toBe(204);
    expectNotFound(await cast.admin.get(`${GROUPS}/${group.id}`));
    const still = await cast.agent.get(`/api/contacts/${contact!.id}`);
    expect(still.status).toBe(200);
    expect(still.body.groupIds).toEqual([]);
  });
});

describe('group members', () => {
  it('adds in bulk (ignoring members and repeats), lists members as contact records, removes in bulk', async () => {
    const { client } = await signUp(t.app);
    const group = await createGroup(client);
    const people = await createContacts(client, 5);
    const ids = people.map((p) => p.id);
    const first = await client.post(`${GROUPS}/${group.id}/contacts`, { contactIds: ids.slice(0, 3) });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.body).toEqual({ added: 3, total: 3 });
    const again = await client.post(`${GROUPS}/${group.id}/contacts`, { contactIds: [ids[2], ids[3], ids[3], ids[4]] });
    expect(again.body).toEqual({ added: 2, total: 5 });
    expect((await client.get(`${GROUPS}/${group.id}`)).body.contactCount).toBe(5);

    const page = await client.get(`${GROUPS}/${group.id}/contacts?limit=2`);
    expect(page.status).toBe(200);
    expect(page.body.total).toBe(5);
    expect(page.body.items.map((c: { id: string }) => c.id)).toEqual([ids[4], ids[3]]);
    expect(page.body.items[0]).toMatchObject({ name: people[4]!.name, groupIds: [group.id], tagIds: [] });
    const rest = await client.get(`${GROUPS}/${group.id}/contacts?limit=2&offset=4`);
    expect(rest.body.items.map((c: { id: string }) => c.id)).toEqual([ids[0]]);
    expect(rest.body.total).toBe(5);

    const removed = await client.post(`${GROUPS}/${group.id}/contacts/remove`, { contactIds: [ids[0], ids[1]] });
    expect(removed.body).toEqual({ removed: 2, total: 3 });
    const none = await client.post(`${GROUPS}/${group.id}/contacts/remove`, { contactIds: [ids[0]] });
    expect(none.body).toEqual({ removed: 0, total: 3 });
    expect((await client.get(`/api/contacts?groupId=${group.id}`)).body.total).toBe(3);
    // Deleting a contact takes it out of the group.
    expect((await client.delete(`/api/contacts/${ids[4]}`)).status).toBe(204);
    expect((await client.get(`${GROUPS}/${group.id}/contacts`)).body.total).toBe(2);
  });

  it('answers 400 naming contactIds.N for another workspace’s or unknown contacts, and for bad bodies', async () => {
    const group = await createGroup(cast.owner);
    const [own] = await createContacts(cast.owner, 1);
    const [foreign] = await createContacts(cast.outsider, 1);
    const res = await cast.agent.post(`${GROUPS}/${group.id}/contacts`, {
      contactIds: [own!.id, foreign!.id, randomUUID()],
    });
    expectValidation(res, 'contactIds.1');
    expectValidation(res, 'contactIds.2');
    expectValidation(await cast.agent.post(`${GROUPS}/${group.id}/contacts/remove`, { contactIds: [foreign!.id] }), 'contactIds.0');
    expectValidation(await cast.agent.post(`${GROUPS}/${group.id}/contacts`, { contactIds: [] }), 'contactIds');
    expectValidation(await cast.agent.post(`${GROUPS}/${group.id}/contacts`, { contactIds: ['x'] }), 'contactIds.0');
    const tooMany = Array.from({ length: 1001 }, () => randomUUID());
    expectValidation(await cast.agent.post(`${GROUPS}/${group.id}/contacts`, { contactIds: tooMany }), 'contactIds');
    expect((await cast.agent.get(`${GROUPS}/${group.id}`)).body.contactCount).toBe(0);
    expectValidation(await cast.viewer.get(`${GROUPS}/${group.id}/contacts?limit=101`), 'limit');
  });

  it('lets Agents manage members; Viewers read members but get 403 on changes', async () => {
    const group = await createGroup(cast.owner);
    const [contact] = await createContacts(cast.owner, 1);
    expectForbidden(await cast.viewer.post(`${GROUPS}/${group.id}/contacts`, { contactIds: [contact!.id] }));
    expectForbidden(await cast.viewer.post(`${GROUPS}/${group.id}/contacts/remove`, { contactIds: [contact!.id] }));
    expect((await cast.agent.post(`${GROUPS}/${group.id}/contacts`, { contactIds: [contact!.id] })).status).toBe(200);
    expect((await cast.viewer.get(`${GROUPS}/${group.id}/contacts`)).body.total).toBe(1);
    expect((await cast.agent.post(`${GROUPS}/${group.id}/contacts/remove`, { contactIds: [contact!.id] })).status).toBe(200);
  });

  it('answers 404 for another workspace’s group on every route, exactly as for an unknown id', async () => {
    const foreign = await createGroup(cast.outsider);
    const [own] = await createContacts(cast.owner, 1);
    for (const id of [foreign.id, randomUUID()]) {
      expectNotFound(await cast.owner.get(`${GROUPS}/${id}`));
      expectNotFound(await cast.owner.patch(`${GROUPS}/${id}`, { name: uniqueName() }));
      expectNotFound(await cast.owner.delete(`${GROUPS}/${id}`));
      expectNotFound(await cast.owner.get(`${GROUPS}/${id}/contacts`));
      expectNotFound(await cast.owner.post(`${GROUPS}/${id}/contacts`, { contactIds: [own!.id] }));
      expectNotFound(await cast.owner.post(`${GROUPS}/${id}/contacts/remove`, { contactIds: [own!.id] }));
    }
    expect((await cast.outsider.get(`${GROUPS}/${foreign.id}`)).body.name).toBe(foreign.name);
    expect((await cast.viewer.get(GROUPS)).body.items.map((g: { id: string }) => g.id)).not.toContain(foreign.id);
  });
});
