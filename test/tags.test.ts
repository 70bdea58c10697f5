// Contact tags end to end: list (all, in the {items, total} envelope, with contact counts), create (names unique
// ignoring case), read, rename and recolour, delete (removed from contacts); roles; isolation between workspaces.
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

const TAGS = '/api/tags';
let counter = 0;
const uniqueName = () => `Tag ${++counter} ${randomUUID().slice(0, 6)}`;

async function createTag(client: Client, body: Record<string, unknown> = {}) {
  const res = await client.post(TAGS, { name: uniqueName(), ...body });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

describe('POST /api/tags', () => {
  it('creates a tag: 201 with the record (colour lower-cased), which reads back the same', async () => {
    const res = await cast.agent.post(TAGS, { name: '  Hot lead ', color: '#FF8800' });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body).toEqual({
      id: expect.any(String),
      name: 'Hot lead',
      color: '#ff8800',
      contactCount: 0,
      createdAt: expect.stringMatching(ISO_TIMESTAMP),
      updatedAt: expect.stringMatching(ISO_TIMESTAMP),
    });
    expect((await cast.viewer.get(`${TAGS}/${res.body.id}`)).body).toEqual(res.body);
    expect((await createTag(cast.agent)).color).toBeNull();
  });

  it('answers 409 for a name the workspace has, ignoring case; another workspace may have it', async () => {
    const { client } = await signUp(t.app);
    await createTag(client, { name: 'VIP' });
    const dup = await client.post(TAGS, { name: 'vip' });
    expect(dup.status).toBe(409);
    expect(dup.body).toEqual({ error: expect.any(String) });
    const concurrent = await Promise.all(Array.from({ length: 5 }, () => client.post(TAGS, { name: 'Race' })));
    expect(concurrent.filter((res) => res.status === 201)).toHaveLength(1);
    expect(concurrent.filter((res) => res.status === 409)).toHaveLength(4);
    const other = await signUp(t.app);
    await createTag(other.client, { name: 'VIP' });
  });

  it.each([
    [{ name: '' }, 'name'],
    [{ name: '   ' }, 'name'],
    [{ name: 'x'.repeat(51) }, 'name'],
    [{ name: 'Ok', color: 'red' }, 'color'],
    [{ name: 'Ok', color: '#fff' }, 'color'],
    [{ name: 'Ok', extra: 1 }, 'extra'],
    [{}, 'name'],
  ])('answers 400 to %j naming %s', async (body, path) => {
    expectValidation(await cast.agent.post(TAGS, body), path);
  });

  it('lets Agents and above create; Viewers get 403; 401 without a session', async () => {
    for (const client of [cast.agent, cast.admin, cast.owner]) await createTag(client);
    expectForbidden(await cast.viewer.post(TAGS, { name: uniqueName() }));
    expect((await cast.agent.post(TAGS, { name: uniqueName() }, { anonymous: true })).status).toBe(401);
  });
});

describe('GET /api/tags', () => {
  it('lists every tag by name (not paginated) in {items, total}, with contact counts', async () => {
    const { client } = await signUp(t.app);
    expect((await client.get(TAGS)).body).toEqual({ items: [], total: 0 });
    const beta = await createTag(client, { name: 'beta' });
    const alpha = await createTag(client, { name: 'Alpha' });
    for (let i = 0; i < 25; i++) await createTag(client, { name: `z${String(i).padStart(2, '0')}` });
    const contact = await client.post('/api/contacts', { name: 'Tagged', tagIds: [beta.id] });
    expect(contact.status).toBe(201);
    const res = await client.get(TAGS);
    expect(res.status).toBe(200);
    expect(res.body.total).toBe(27);
    expect(res.body.items).toHaveLength(27);
    expect(res.body.items.slice(0, 2).map((tag: { id: string }) => tag.id)).toEqual([alpha.id, beta.id]);
    expect(res.body.items[1].contactCount).toBe(1);
    expect(res.body.items[0].contactCount).toBe(0);
  });

  it('is readable by Viewers and never shows another workspace’s tags', async () => {
    const foreign = await createTag(cast.outsider);
    const res = await cast.viewer.get(TAGS);
    expect(res.status).toBe(200);
    expect(res.body.items.map((tag: { id: string }) => tag.id)).not.toContain(foreign.id);
    expect((await cast.viewer.get(TAGS, { anonymous: true })).status).toBe(401);
  });
});

describe('PATCH and DELETE /api/tags/{id}', () => {
  it('renames and recolours (Admin); 409 for another tag’s name; its own name in another case is fine', async () => {
    const a = await createTag(cast.owner, { color: '#000000' });
    const b = await createTag(cast.owner);
    const res = await cast.admin.patch(`${TAGS}/${a.id}`, { name: 'Renamed tag', color: null });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({ id: a.id, name: 'Renamed tag', color: null, createdAt: a.createdAt });
    expect((await cast.admin.patch(`${TAGS}/${a.id}`, { name: 'RENAMED TAG' })).body.name).toBe('RENAMED TAG');
    const taken = await cast.admin.patch(`${TAGS}/${b.id}`, { name: 'renamed tag' });
    expect(taken.status).toBe(409);
    expectValidation(await cast.admin.patch(`${TAGS}/${a.id}`, {}), '');
    expectValidation(await cast.admin.patch(`${TAGS}/${a.id}`, { color: 'blue' }), 'color');
  });

  it('deletes (Admin): 204, gone from its contacts', async () => {
    const tag = await createTag(cast.owner);
    const contact = await cast.agent.post('/api/contacts', { name: 'Loses a tag', tagIds: [tag.id] });
    expect((await cast.admin.delete(`${TAGS}/${tag.id}`)).status).toBe(204);
    expectNotFound(await cast.admin.get(`${TAGS}/${tag.id}`));
    expectNotFound(await cast.admin.delete(`${TAGS}/${tag.id}`));
    expect((await cast.agent.get(`/api/contacts/${contact.body.id}`)).body.tagIds).toEqual([]);
  });

  it('leaves renaming and deleting to Admins and Org Owners: Agents and Viewers get 403', async () => {
    const tag = await createTag(cast.agent);
    for (const client of [cast.agent, cast.viewer]) {
      expectForbidden(await client.patch(`${TAGS}/${tag.id}`, { name: uniqueName() }));
      expectForbidden(await client.delete(`${TAGS}/${tag.id}`));
    }
    expect((await cast.owner.patch(`${TAGS}/${tag.id}`, { color: '#123456' })).status).toBe(200);
    expect((await cast.owner.delete(`${TAGS}/${tag.id}`)).status).toBe(204);
  });

  it('answers 404 for another workspace’s tag on every route, exactly as for an unknown id', async () => {
    const foreign = await createTag(cast.outsider);
    for (const id of [foreign.id, randomUUID()]) {
      expectNotFound(await cast.owner.get(`${TAGS}/${id}`));
      expectNotFound(await cast.owner.patch(`${TAGS}/${id}`, { name: uniqueName() }));
      expectNotFound(await cast.owner.delete(`${TAGS}/${id}`));
    }
    // Renaming to a name only another workspace has is fine; a 409 never reveals it.
    const own = await createTag(cast.owner);
    expect((await cast.owner.patch(`${TAGS}/${own.id}`, { name: foreign.name })).status).toBe(200);
    expect((await cast.outsider.get(`${TAGS}/${foreign.id}`)).body.name).toBe(foreign.name);
    expectValidation(await cast.owner.get(`${TAGS}/nope`), 'id');
  });
});
