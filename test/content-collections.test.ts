// Collections of knowledge-base articles end to end: create (slugs from the name, or given), list with article
// counts, read, edit, delete (articles stay, only their links go); roles; and isolation between workspaces.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Client, createTestApp, signUp, type TestApp, workspaceWithRoles, expectValidation, expectNotFound, expectForbidden, ISO_TIMESTAMP } from './helpers.js';

let t: TestApp;
let cast: Awaited<ReturnType<typeof workspaceWithRoles>>;
beforeAll(async () => {
  t = await createTestApp();
  cast = await workspaceWithRoles(t.app);
});
afterAll(async () => t.close());

const COLLECTIONS = '/api/content/collections';
const ARTICLES = '/api/content/articles';
let counter = 0;
const uniqueName = (label = 'Collection') => `${label} ${++counter} ${randomUUID().slice(0, 8)}`;

async function createCollection(client: Client, body: Record<string, unknown> = {}) {
  const res = await client.post(COLLECTIONS, { name: uniqueName(), ...body });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

async function createArticle(client: Client, collectionIds: string[]) {
  const res = await client.post(ARTICLES, { title: uniqueName('Article'), collectionIds });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

describe('POST /api/content/collections', () => {
  it('creates a collection and answers 201 with the record, which reads back the same', async () => {
    const res = await cast.admin.post(COLLECTIONS, { name: '  Billing & Payments ', description: 'Invoices, refunds' });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.any(String),
      workspaceId: cast.workspaceId,
      name: 'Billing & Payments',
      slug: 'billing-and-payments',
      description: 'Invoices, refunds',
      articleCount: 0,
      createdAt: expect.stringMatching(ISO_TIMESTAMP),
      updatedAt: expect.stringMatching(ISO_TIMESTAMP),
    });
    const read = await cast.viewer.get(`${COLLECTIONS}/${res.body.id}`);
    expect(read.status).toBe(200);
    expect(read.body).toEqual(res.body);
  });

  it('makes slugs from names: transliterated, suffixed on collision, a fallback when nothing is left', async () => {
    const { client } = await signUp(t.app);
    expect((await createCollection(client, { name: 'Crème brûlée' })).slug).toBe('creme-brulee');
    expect((await createCollection(client, { name: 'Crème Brûlée' })).slug).toBe('creme-brulee-2');
    expect((await createCollection(client, { name: '!!!' })).slug).toBe('collection');
    expect((await createCollection(client, { name: '***' })).slug).toBe('collection-2');
    const other = await signUp(t.app);
    expect((await createCollection(other.client, { name: 'Crème brûlée' })).slug).toBe('creme-brulee');
  });

  it('gives concurrent creates of one name distinct slugs', async () => {
    const { client } = await signUp(t.app);
    const results = await Promise.all(Array.from({ length: 8 }, () => client.post(COLLECTIONS, { name: 'Onboarding' })));
    expect(results.map((res) => res.status)).toEqual(Array(8).fill(201));
    expect(new Set(results.map((res) => res.body.slug)).size).toBe(8);
  });

  it('takes an explicit slug, and answers 409 when it is taken', async () => {
    const { client } = await signUp(t.app);
    const first = await createCollection(client, { name: 'Anything', slug: 'faq' });
    expect(first.slug).toBe('faq');
    const taken = await client.post(COLLECTIONS, { name: 'Other', slug: 'faq' });
    expect(taken.status).toBe(409);
    expect(taken.body).toEqual({ error: expect.any(String) });
    // A generated slug steps around it instead.
    expect((await createCollection(client, { name: 'FAQ' })).slug).toBe('faq-2');
    expect((await client.get(`${COLLECTIONS}?limit=100`)).body.total).toBe(2);
  });

  it.each([
    { body: { name: 'N', extra: 1 }, path: 'extra' },
    { body: {}, path: 'name' },
    { body: { name: '' }, path: 'name' },
    { body: { name: '   ' }, path: 'name' },
    { body: { name: 'x'.repeat(101) }, path: 'name' },
    { body: { name: 'N', description: 'd'.repeat(501) }, path: 'description' },
    { body: { name: 'N', slug: 'Not A Slug' }, path: 'slug' },
    { body: { name: 'N', slug: 'x'.repeat(201) }, path: 'slug' },
  ])('answers 400 with a detail on $path (case %#)', async ({ body, path }) => {
    const before = (await cast.admin.get(COLLECTIONS)).body.total;
    const res = await cast.admin.post(COLLECTIONS, body);
    expectValidation(res, path);
    if (path === 'extra') expect(res.body.details).toContainEqual({ path: 'extra', message: 'Unknown property' });
    expect((await cast.admin.get(COLLECTIONS)).body.total).toBe(before);
  });

  it('accepts a 100-character name and a 500-character description', async () => {
    const res = await cast.admin.post(COLLECTIONS, { name: 'n'.repeat(100), description: 'd'.repeat(500) });
    expect(res.status).toBe(201);
    expect(res.body.name).toHaveLength(100);
  });
});

describe('GET /api/content/collections', () => {
  it('lists by name with each collection\'s article count, paginated', async () => {
    const { client } = await signUp(t.app);
    const zebra = await createCollection(client, { name: 'Zebra' });
    const apple = await createCollection(client, { name: 'Apple' });
    const mango = await createCollection(client, { name: 'Mango' });
    await createArticle(client, [zebra.id, apple.id]);
    await createArticle(client, [zebra.id]);
    await createArticle(client, []);

    const res = await client.get(COLLECTIONS);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      items: [
        { ...apple, articleCount: 1 },
        { ...mango, articleCount: 0 },
        { ...zebra, articleCount: 2 },
      ],
      total: 3,
    });
    expect((await client.get(`${COLLECTIONS}?limit=2&offset=1`)).body).toEqual({
      items: [
        { ...mango, articleCount: 0 },
        { ...zebra, articleCount: 2 },
      ],
      total: 3,
    });
    expect((await client.get(`${COLLECTIONS}?offset=5`)).body).toEqual({ items: [], total: 3 });
    expect((await client.get(`${COLLECTIONS}/${zebra.id}`)).body.articleCount).toBe(2);
  });

  it('shows only the workspace\'s own collections, to every role', async () => {
    const own = await createCollection(cast.admin);
    const foreign = await createCollection(cast.outsider);
    for (const client of [cast.owner, cast.admin, cast.agent, cast.viewer]) {
      const res = await client.get(`${COLLECTIONS}?limit=100`);
      expect(res.status).toBe(200);
      const ids = res.body.items.map((item: { id: string }) => item.id);
      expect(ids).toContain(own.id);
      expect(ids).not.toContain(foreign.id);
    }
  });

  it.each([['limit=0', 'limit'], ['limit=101', 'limit'], ['offset=-1', 'offset']])('answers 400 for %s', async (query, path) => {
    expectValidation(await cast.viewer.get(`${COLLECTIONS}?${query}`), path);
  });
});

describe('PATCH /api/content/collections/{id}', () => {
  it('renames without touching the slug, sets a given slug, clears the description with null', async () => {
    const collection = await createCollection(cast.admin, { name: 'Shipping', description: 'Parcels' });
    await new Promise((resolve) => setTimeout(resolve, 5));
    const renamed = await cast.admin.patch(`${COLLECTIONS}/${collection.id}`, { name: 'Delivery', description: null });
    expect(renamed.status).toBe(200);
    expect(renamed.body).toEqual({
      ...collection,
      name: 'Delivery',
      description: null,
      updatedAt: expect.stringMatching(ISO_TIMESTAMP),
    });
    expect(renamed.body.updatedAt > collection.updatedAt).toBe(true);
    const reslugged = await cast.owner.patch(`${COLLECTIONS}/${collection.id}`, { slug: `delivery-${counter}` });
    expect(reslugged.body.slug).toBe(`delivery-${counter}`);
    expect((await cast.viewer.get(`${COLLECTIONS}/${collection.id}`)).body).toEqual(reslugged.body);
  });

  it('answers 409 for a slug another collection has, and changes nothing', async () => {
    const first = await createCollection(cast.admin);
    const second = await createCollection(cast.admin);
    const res = await cast.admin.patch(`${COLLECTIONS}/${second.id}`, { slug: first.slug, name: 'Not applied' });
    expect(res.status).toBe(409);
    expect(res.body).toEqual({ error: expect.any(String) });
    expect((await cast.admin.get(`${COLLECTIONS}/${second.id}`)).body).toEqual(second);
  });

  it('keeps the article count in its answer', async () => {
    const collection = await createCollection(cast.admin);
    await createArticle(cast.admin, [collection.id]);
    const res = await cast.admin.patch(`${COLLECTIONS}/${collection.id}`, { description: 'Now described' });
    expect(res.body.articleCount).toBe(1);
  });

  it.each([
    { body: {}, path: '' },
    { body: { extra: true }, path: 'extra' },
    { body: { name: '' }, path: 'name' },
    { body: { name: 'x'.repeat(101) }, path: 'name' },
    { body: { description: 'd'.repeat(501) }, path: 'description' },
    { body: { slug: 'UPPER' }, path: 'slug' },
  ])('answers 400 with a detail on "$path" (case %#)', async ({ body, path }) => {
    const collection = await createCollection(cast.admin);
    expectValidation(await cast.admin.patch(`${COLLECTIONS}/${collection.id}`, body), path);
    expect((await cast.admin.get(`${COLLECTIONS}/${collection.id}`)).body).toEqual(collection);
  });
});

describe('DELETE /api/content/collections/{id}', () => {
  it('deletes the collection and only the links: its articles stay, without it in their collectionIds', async () => {
    const doomed = await createCollection(cast.admin);
    const kept = await createCollection(cast.admin);
    const article = await createArticle(cast.admin, [doomed.id, kept.id]);
    const res = await cast.admin.delete(`${COLLECTIONS}/${doomed.id}`);
    expect(res.status).toBe(204);
    expect(res.body).toBeUndefined();
    expectNotFound(await cast.admin.get(`${COLLECTIONS}/${doomed.id}`));
    const after = await cast.admin.get(`${ARTICLES}/${article.id}`);
    expect(after.status).toBe(200);
    expect(after.body.collectionIds).toEqual([kept.id]);
    expect((await cast.admin.get(`${ARTICLES}?collectionId=${doomed.id}`)).body).toEqual({ items: [], total: 0 });
    expect((await cast.admin.get(`${COLLECTIONS}/${kept.id}`)).body.articleCount).toBe(1);
    expectNotFound(await cast.admin.delete(`${COLLECTIONS}/${doomed.id}`));
    // The slug is free again.
    expect((await cast.admin.post(COLLECTIONS, { name: 'Again', slug: doomed.slug })).status).toBe(201);
  });
});

describe('access to every collection route', () => {
  const routes = (id: string) =>
    [
      ['GET', COLLECTIONS, undefined],
      ['GET', `${COLLECTIONS}/${id}`, undefined],
      ['POST', COLLECTIONS, { name: 'Not created' }],
      ['PATCH', `${COLLECTIONS}/${id}`, { name: 'Not changed' }],
      ['DELETE', `${COLLECTIONS}/${id}`, undefined],
    ] as const;

  it('answers 401 without a cookie on every route', async () => {
    const collection = await createCollection(cast.admin);
    for (const [method, url, body] of routes(collection.id)) {
      const res = await cast.admin.request(method, url, { body, anonymous: true });
      expect(res.status, `${method} ${url}`).toBe(401);
      expect(res.body).toEqual({ error: 'Unauthorized' });
    }
  });

  it('answers 403 to an agent and a viewer on every write; the reads work for them', async () => {
    const collection = await createCollection(cast.admin);
    for (const client of [cast.agent, cast.viewer]) {
      for (const [method, url, body] of routes(collection.id)) {
        const res = await client.request(method, url, { body });
        if (method === 'GET') expect(res.status, `${method} ${url}`).toBe(200);
        else expectForbidden(res);
      }
    }
    expect((await cast.admin.get(`${COLLECTIONS}/${collection.id}`)).body).toEqual(collection);
  });

  it('answers 404 for another workspace\'s collection exactly as for an unknown id, and leaves it alone', async () => {
    const foreign = await createCollection(cast.outsider);
    for (const id of [foreign.id, randomUUID()]) {
      for (const [method, url, body] of routes(id)) {
        if (url === COLLECTIONS) continue;
        expectNotFound(await cast.owner.request(method, url, { body }));
      }
    }
    expect((await cast.outsider.get(`${COLLECTIONS}/${foreign.id}`)).body).toEqual(foreign);
  });

  it('answers 400 for a malformed id', async () => {
    expectValidation(await cast.viewer.get(`${COLLECTIONS}/nope`), 'id');
    expectValidation(await cast.admin.patch(`${COLLECTIONS}/nope`, { name: 'X' }), 'id');
    expectValidation(await cast.admin.delete(`${COLLECTIONS}/nope`), 'id');
  });
});
