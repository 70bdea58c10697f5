// Knowledge-base articles end to end: create, read, list, edit, publish and unpublish through the real job queue,
// delete; slugs (transliteration, collisions, a concurrent race); roles; and isolation between workspaces.
import { randomUUID } from 'node:crypto';
import { and, eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryRows } from '../src/db/client.js';
import { searchChunks } from '../src/db/schema/index.js';
import { type Client, createTestApp, eventually, signUp, type TestApp, workspaceWithRoles, expectValidation, expectNotFound, expectForbidden, ISO_TIMESTAMP } from './helpers.js';

let t: TestApp;
let cast: Awaited<ReturnType<typeof workspaceWithRoles>>;
beforeAll(async () => {
  // Several tests send more than the spec's 100 requests a minute from one client.
  t = await createTestApp({ RATE_LIMIT_FACTOR: '10' });
  cast = await workspaceWithRoles(t.app);
});
afterAll(async () => t.close());

const ARTICLES = '/api/content/articles';
let counter = 0;
/** A title no other test uses, so slugs and title searches do not meet. */
const uniqueTitle = (label = 'Article') => `${label} ${++counter} ${randomUUID().slice(0, 8)}`;

async function createArticle(client: Client, body: Record<string, unknown> = {}) {
  const res = await client.post(ARTICLES, { title: uniqueTitle(), ...body });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

async function createCollection(client: Client, name = uniqueTitle('Collection')) {
  const res = await client.post('/api/content/collections', { name });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.id as string;
}

async function setStatus(client: Client, id: string, status: 'draft' | 'published') {
  const res = await client.patch(`${ARTICLES}/${id}/status`, { status });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

/** The queue jobs sent for one document, oldest first. */
async function jobsFor(documentId: string): Promise<string[]> {
  const rows = await queryRows<{ name: string }>(
    t.app.services.database.db,
    sql`select name from pgboss.job where data->>'documentId' = ${documentId} order by created_on`,
  );
  return rows.map((row) => row.name);
}

async function chunksOf(documentId: string) {
  return t.app.services.database.db
    .select({ content: searchChunks.content, visibility: searchChunks.visibility, title: searchChunks.title })
    .from(searchChunks)
    .where(and(eq(searchChunks.documentType, 'article'), eq(searchChunks.documentId, documentId)));
}

async function eventuallyIndexStatus(client: Client, id: string, status: string) {
  return eventually(
    async () => {
      const res = await client.get(`${ARTICLES}/${id}`);
      return res.body.indexStatus === status ? res.body : undefined;
    },
    15_000,
    `indexStatus ${status}`,
  );
}

async function listTotal(client: Client) {
  const res = await client.get(`${ARTICLES}?limit=1`);
  expect(res.status).toBe(200);
  return res.body.total as number;
}

describe('POST /api/content/articles', () => {
  it('creates a draft and answers 201 with the full record, which reads back the same', async () => {
    const first = await createCollection(cast.owner);
    const second = await createCollection(cast.owner);
    const res = await cast.admin.post(ARTICLES, {
      title: 'Resetting your password',
      body: '# Steps\n\nOpen settings.',
      description: 'How to reset a password',
      visibility: 'internal',
      collectionIds: [second, first, second],
    });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.any(String),
      type: 'article',
      title: 'Resetting your password',
      slug: 'resetting-your-password',
      body: '# Steps\n\nOpen settings.',
      description: 'How to reset a password',
      visibility: 'internal',
      status: 'draft',
      workspaceId: cast.workspaceId,
      publishedAt: null,
      createdAt: expect.stringMatching(ISO_TIMESTAMP),
      updatedAt: expect.stringMatching(ISO_TIMESTAMP),
      collectionIds: [second, first],
      indexStatus: 'removed',
      indexedAt: null,
    });
    expect(res.body.updatedAt).toBe(res.body.createdAt);
    const read = await cast.viewer.get(`${ARTICLES}/${res.body.id}`);
    expect(read.status).toBe(200);
    expect(read.body).toEqual(res.body);
    expect(await jobsFor(res.body.id)).toEqual([]);
  });

  it('fills the defaults for a title alone, and stores the title trimmed (Org Owner)', async () => {
    const res = await cast.owner.post(ARTICLES, { title: '  Only a title  ' });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      title: 'Only a title',
      body: null,
      description: null,
      visibility: 'public',
      status: 'draft',
      collectionIds: [],
    });
  });

  it('accepts the limits: a 200-character title, a 500-character description, 50 collections', async () => {
    const collectionId = await createCollection(cast.owner);
    const res = await cast.admin.post(ARTICLES, {
      title: 'x'.repeat(200),
      description: 'd'.repeat(500),
      collectionIds: Array.from({ length: 50 }, () => collectionId),
    });
    expect(res.status).toBe(201);
    expect(res.body.title).toHaveLength(200);
    expect(res.body.slug.length).toBeLessThanOrEqual(200);
    expect(res.body.collectionIds).toEqual([collectionId]);
  });

  it.each([
    { body: { title: 'T', extra: 1 }, path: 'extra' },
    { body: {}, path: 'title' },
    { body: { title: '' }, path: 'title' },
    { body: { title: '   ' }, path: 'title' },
    { body: { title: 'x'.repeat(201) }, path: 'title' },
    { body: { title: 42 }, path: 'title' },
    { body: { title: 'T', description: 'd'.repeat(501) }, path: 'description' },
    { body: { title: 'T', body: 'b'.repeat(200_001) }, path: 'body' },
    { body: { title: 'T', visibility: 'secret' }, path: 'visibility' },
    { body: { title: 'T', collectionIds: [randomUUID(), 'not-a-uuid'] }, path: 'collectionIds.1' },
    { body: { title: 'T', collectionIds: 'nope' }, path: 'collectionIds' },
    { body: { title: 'T', collectionIds: Array.from({ length: 51 }, () => randomUUID()) }, path: 'collectionIds' },
    { body: { title: 'T', status: 'published' }, path: 'status' },
  ])('answers 400 with a detail on $path (case %#)', async ({ body, path }) => {
    const before = await listTotal(cast.admin);
    const res = await cast.admin.post(ARTICLES, body);
    expectValidation(res, path);
    if (path === 'extra' || path === 'status') expect(res.body.details).toContainEqual({ path, message: 'Unknown property' });
    expect(await listTotal(cast.admin)).toBe(before);
  });

  it('answers 400 naming each collectionIds index that is not a collection of this workspace, and stores nothing', async () => {
    const own = await createCollection(cast.owner);
    const foreign = await createCollection(cast.outsider);
    const before = await listTotal(cast.admin);
    const title = uniqueTitle('Never stored');
    const res = await cast.admin.post(ARTICLES, { title, collectionIds: [own, foreign, randomUUID(), own] });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      error: expect.any(String),
      details: [
        { path: 'collectionIds.1', message: expect.any(String) },
        { path: 'collectionIds.2', message: expect.any(String) },
      ],
    });
    expect(await listTotal(cast.admin)).toBe(before);
    const search = await cast.admin.get(`${ARTICLES}?q=${encodeURIComponent(title)}`);
    expect(search.body).toEqual({ items: [], total: 0 });
  });

  it('answers 401 without a cookie, 403 to an agent and a viewer', async () => {
    const anonymous = await cast.admin.post(ARTICLES, { title: 'T' }, { anonymous: true });
    expect(anonymous.status).toBe(401);
    expect(anonymous.body).toEqual({ error: 'Unauthorized' });
    expectForbidden(await cast.agent.post(ARTICLES, { title: 'T' }));
    expectForbidden(await cast.viewer.post(ARTICLES, { title: 'T' }));
  });
});

describe('slugs', () => {
  it('transliterates and lower-cases the title', async () => {
    const { client } = await signUp(t.app);
    expect((await createArticle(client, { title: 'Crème brûlée' })).slug).toBe('creme-brulee');
    expect((await createArticle(client, { title: 'Größe & Maß: iPhone FAQ' })).slug).toBe('groesse-and-mass-iphone-faq');
    expect((await createArticle(client, { title: '!!!' })).slug).toBe('article');
    expect((await createArticle(client, { title: '???' })).slug).toBe('article-2');
  });

  it('adds -2, -3 … on a collision within the workspace; another workspace has its own slugs', async () => {
    const { client } = await signUp(t.app);
    const other = await signUp(t.app);
    const slugs = [];
    for (let i = 0; i < 4; i++) slugs.push((await createArticle(client, { title: 'Getting started' })).slug);
    expect(slugs).toEqual(['getting-started', 'getting-started-2', 'getting-started-3', 'getting-started-4']);
    expect((await createArticle(other.client, { title: 'Getting started' })).slug).toBe('getting-started');
  });

  it('falls back to a random suffix once the numbered ones are taken', async () => {
    const { client } = await signUp(t.app);
    const slugs = new Set<string>();
    for (let i = 0; i < 12; i++) slugs.add((await createArticle(client, { title: 'Billing' })).slug);
    expect(slugs.size).toBe(12);
    for (const n of [2, 3, 10]) expect(slugs.has(`billing-${n}`)).toBe(true);
    const random = [...slugs].filter((slug) => !/^billing(-\d+)?$/.test(slug));
    expect(random).toHaveLength(2);
    for (const slug of random) expect(slug).toMatch(/^billing-[a-z0-9]{6}$/);
  });

  it('gives concurrent creates of one title distinct slugs, every one a 201', async () => {
    const { client, workspaceId } = await signUp(t.app);
    const results = await Promise.all(
      Array.from({ length: 10 }, () => client.post(ARTICLES, { title: 'Race condition' }, { workspace: workspaceId })),
    );
    expect(results.map((res) => res.status)).toEqual(Array(10).fill(201));
    const slugs = results.map((res) => res.body.slug as string);
    expect(new Set(slugs).size).toBe(10);
    expect(slugs).toContain('race-condition');
    for (const slug of slugs) expect(slug).toMatch(/^race-condition(-[a-z0-9]+)?$/);
    const list = await client.get(`${ARTICLES}?q=race&limit=100`);
    expect(list.body.total).toBe(10);
  });

  it('keeps the slug when the title changes; an explicit slug replaces it, 409 when taken, 400 when malformed', async () => {
    const { client } = await signUp(t.app);
    const article = await createArticle(client, { title: 'Original title' });
    const other = await createArticle(client, { title: 'Other article' });
    const renamed = await client.patch(`${ARTICLES}/${article.id}`, { title: 'A new title' });
    expect(renamed.status).toBe(200);
    expect(renamed.body).toMatchObject({ title: 'A new title', slug: 'original-title' });

    const reslugged = await client.patch(`${ARTICLES}/${article.id}`, { slug: 'a-new-title' });
    expect(reslugged.status).toBe(200);
    expect(reslugged.body.slug).toBe('a-new-title');
    expect((await client.get(`${ARTICLES}/by-slug/a-new-title`)).body.id).toBe(article.id);
    expectNotFound(await client.get(`${ARTICLES}/by-slug/original-title`));

    const taken = await client.patch(`${ARTICLES}/${article.id}`, { slug: other.slug, title: 'Not applied' });
    expect(taken.status).toBe(409);
    expect(taken.body).toEqual({ error: expect.any(String) });
    expect((await client.get(`${ARTICLES}/${article.id}`)).body).toMatchObject({ title: 'A new title', slug: 'a-new-title' });

    // Its own slug again is no conflict.
    expect((await client.patch(`${ARTICLES}/${article.id}`, { slug: 'a-new-title' })).status).toBe(200);
    for (const slug of ['Upper', 'two--hyphens', '-lead', 'trail-', 'sp ace', '', 'x'.repeat(201)]) {
      expectValidation(await client.patch(`${ARTICLES}/${article.id}`, { slug }), 'slug');
    }
  });
});

describe('GET /api/content/articles', () => {
  it('lists newest first with collectionIds, paginates, and counts every match', async () => {
    const { client } = await signUp(t.app);
    const collection = await createCollection(client);
    const a = await createArticle(client, { title: 'Alpha', collectionIds: [collection] });
    const b = await createArticle(client, { title: 'Beta' });
    const c = await createArticle(client, { title: 'Gamma', collectionIds: [collection] });

    const all = await client.get(ARTICLES);
    expect(all.status).toBe(200);
    expect(all.body.total).toBe(3);
    expect(all.body.items.map((item: { id: string }) => item.id)).toEqual([c.id, b.id, a.id]);
    expect(all.body.items[0]).toEqual(c);
    expect(all.body.items[2].collectionIds).toEqual([collection]);

    const first = await client.get(`${ARTICLES}?limit=2`);
    const second = await client.get(`${ARTICLES}?limit=2&offset=2`);
    expect(first.body.items.map((item: { id: string }) => item.id)).toEqual([c.id, b.id]);
    expect(second.body).toEqual({ items: [a], total: 3 });
    expect((await client.get(`${ARTICLES}?offset=10`)).body).toEqual({ items: [], total: 3 });
  });

  it('keeps a stable order across pages for articles created in one burst', async () => {
    const { client } = await signUp(t.app);
    await Promise.all(Array.from({ length: 6 }, (_, i) => client.post(ARTICLES, { title: `Burst ${i}` })));
    const whole = (await client.get(`${ARTICLES}?limit=100`)).body.items.map((item: { id: string }) => item.id);
    const paged: string[] = [];
    for (let offset = 0; offset < 6; offset += 2) {
      paged.push(...(await client.get(`${ARTICLES}?limit=2&offset=${offset}`)).body.items.map((item: { id: string }) => item.id));
    }
    expect(paged).toEqual(whole);
    expect(new Set(paged).size).toBe(6);
  });

  it('filters by status, visibility, collectionId and a case-insensitive title substring with % and _ taken literally', async () => {
    const { client } = await signUp(t.app);
    const collection = await createCollection(client);
    const done = await createArticle(client, { title: '100% Done', visibility: 'internal', collectionIds: [collection] });
    const plain = await createArticle(client, { title: '100 done' });
    const snake = await createArticle(client, { title: 'snake_case names' });
    await setStatus(client, plain.id, 'published');

    const ids = async (query: string) => {
      const res = await client.get(`${ARTICLES}?${query}`);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body.total).toBe(res.body.items.length);
      return res.body.items.map((item: { id: string }) => item.id);
    };
    expect(await ids('status=published')).toEqual([plain.id]);
    expect(await ids('status=draft')).toEqual([snake.id, done.id]);
    expect(await ids('visibility=internal')).toEqual([done.id]);
    expect(await ids('visibility=public')).toEqual([snake.id, plain.id]);
    expect(await ids(`collectionId=${collection}`)).toEqual([done.id]);
    expect(await ids(`collectionId=${randomUUID()}`)).toEqual([]);
    expect(await ids('q=DONE')).toEqual([plain.id, done.id]);
    expect(await ids(`q=${encodeURIComponent('%')}`)).toEqual([done.id]);
    expect(await ids('q=_')).toEqual([snake.id]);
    expect(await ids(`q=${encodeURIComponent('\\')}`)).toEqual([]);
    expect(await ids('q=done&status=draft&visibility=internal')).toEqual([done.id]);
  });

  it('gives an empty page for a collectionId of another workspace', async () => {
    const foreign = await createCollection(cast.outsider);
    await createArticle(cast.outsider, { collectionIds: [foreign] });
    expect((await cast.admin.get(`${ARTICLES}?collectionId=${foreign}`)).body).toEqual({ items: [], total: 0 });
  });

  it.each([
    ['status=archived', 'status'],
    ['visibility=secret', 'visibility'],
    ['collectionId=nope', 'collectionId'],
    ['limit=0', 'limit'],
    ['limit=101', 'limit'],
    ['offset=-1', 'offset'],
  ])('answers 400 for %s', async (query, path) => {
    expectValidation(await cast.viewer.get(`${ARTICLES}?${query}`), path);
  });

  it('shows only the workspace\'s own articles, to every role', async () => {
    const own = await createArticle(cast.admin);
    const foreign = await createArticle(cast.outsider);
    for (const client of [cast.owner, cast.admin, cast.agent, cast.viewer]) {
      const res = await client.get(`${ARTICLES}?limit=100`);
      expect(res.status).toBe(200);
      const ids = res.body.items.map((item: { id: string }) => item.id);
      expect(ids).toContain(own.id);
      expect(ids).not.toContain(foreign.id);
      for (const item of res.body.items) expect(item.workspaceId).toBe(cast.workspaceId);
    }
  });
});

describe('GET /api/content/articles/{id} and /by-slug/{slug}', () => {
  it('reads an article by id and by slug, for every role', async () => {
    const article = await createArticle(cast.admin, { body: 'Body', description: 'Desc' });
    for (const client of [cast.owner, cast.admin, cast.agent, cast.viewer]) {
      const byId = await client.get(`${ARTICLES}/${article.id}`);
      expect(byId.status).toBe(200);
      expect(byId.body).toEqual(article);
      const bySlug = await client.get(`${ARTICLES}/by-slug/${article.slug}`);
      expect(bySlug.status).toBe(200);
      expect(bySlug.body).toEqual(article);
    }
  });

  it('answers 404 for an unknown id or slug and for another workspace\'s, 400 for a malformed id', async () => {
    const foreign = await createArticle(cast.outsider, { title: uniqueTitle('Outsider only') });
    expectNotFound(await cast.admin.get(`${ARTICLES}/${randomUUID()}`));
    expectNotFound(await cast.admin.get(`${ARTICLES}/${foreign.id}`));
    expectNotFound(await cast.admin.get(`${ARTICLES}/by-slug/no-such-slug`));
    expectNotFound(await cast.admin.get(`${ARTICLES}/by-slug/${foreign.slug}`));
    expectValidation(await cast.admin.get(`${ARTICLES}/not-a-uuid`), 'id');
  });
});

describe('PATCH /api/content/articles/{id}', () => {
  it('edits a draft: fields, clearing with null, replacing collections; nothing is enqueued', async () => {
    const [one, two, three] = [await createCollection(cast.owner), await createCollection(cast.owner), await createCollection(cast.owner)];
    const article = await createArticle(cast.admin, { body: 'Old', description: 'Old desc', collectionIds: [one, two] });
    await new Promise((resolve) => setTimeout(resolve, 5));
    const res = await cast.admin.patch(`${ARTICLES}/${article.id}`, {
      title: 'Edited',
      body: null,
      description: 'New desc',
      visibility: 'internal',
      collectionIds: [three, one, three],
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      ...article,
      title: 'Edited',
      body: null,
      description: 'New desc',
      visibility: 'internal',
      collectionIds: [three, one],
      updatedAt: expect.stringMatching(ISO_TIMESTAMP),
    });
    expect(res.body.updatedAt > article.updatedAt).toBe(true);
    expect((await cast.viewer.get(`${ARTICLES}/${article.id}`)).body).toEqual(res.body);
    const cleared = await cast.admin.patch(`${ARTICLES}/${article.id}`, { collectionIds: [], description: null });
    expect(cleared.body).toMatchObject({ collectionIds: [], description: null, indexStatus: 'removed' });
    expect(await jobsFor(article.id)).toEqual([]);
  });

  it.each([
    { body: {}, path: '' },
    { body: { extra: true }, path: 'extra' },
    { body: { title: '' }, path: 'title' },
    { body: { title: 'x'.repeat(201) }, path: 'title' },
    { body: { description: 'd'.repeat(501) }, path: 'description' },
    { body: { visibility: 'secret' }, path: 'visibility' },
    { body: { collectionIds: ['nope'] }, path: 'collectionIds.0' },
    { body: { status: 'published' }, path: 'status' },
  ])('answers 400 with a detail on "$path" (case %#)', async ({ body, path }) => {
    const article = await createArticle(cast.admin);
    expectValidation(await cast.admin.patch(`${ARTICLES}/${article.id}`, body), path);
    expect((await cast.admin.get(`${ARTICLES}/${article.id}`)).body).toEqual(article);
  });

  it('changes nothing when one collection is foreign (the whole edit is refused)', async () => {
    const own = await createCollection(cast.owner);
    const foreign = await createCollection(cast.outsider);
    const article = await createArticle(cast.admin, { collectionIds: [own] });
    const res = await cast.admin.patch(`${ARTICLES}/${article.id}`, { title: 'Should not stick', collectionIds: [foreign] });
    expect(res.status).toBe(400);
    expect(res.body.details).toEqual([{ path: 'collectionIds.0', message: expect.any(String) }]);
    expect((await cast.admin.get(`${ARTICLES}/${article.id}`)).body).toEqual(article);
  });

  it('re-indexes a published article when its content changes, and narrows its chunks to internal at once', async () => {
    const article = await createArticle(cast.admin, { body: 'Original body about invoices' });
    await setStatus(cast.admin, article.id, 'published');
    await eventuallyIndexStatus(cast.admin, article.id, 'indexed');
    expect((await chunksOf(article.id)).map((chunk) => chunk.visibility)).toEqual(['public']);

    const hidden = await cast.admin.patch(`${ARTICLES}/${article.id}`, { visibility: 'internal' });
    expect(hidden.status).toBe(200);
    expect(hidden.body).toMatchObject({ visibility: 'internal', status: 'published', indexStatus: 'pending' });
    const chunks = await chunksOf(article.id);
    expect(chunks.length).toBeGreaterThan(0);
    for (const chunk of chunks) expect(chunk.visibility).toBe('internal');
    await eventuallyIndexStatus(cast.admin, article.id, 'indexed');

    const edited = await cast.admin.patch(`${ARTICLES}/${article.id}`, { body: 'Rewritten body about refunds' });
    expect(edited.body.indexStatus).toBe('pending');
    const indexed = await eventuallyIndexStatus(cast.admin, article.id, 'indexed');
    expect(indexed.indexedAt >= edited.body.updatedAt).toBe(true);
    const after = await chunksOf(article.id);
    expect(after.map((chunk) => chunk.content).join(' ')).toContain('refunds');
    expect(after.map((chunk) => chunk.content).join(' ')).not.toContain('invoices');
    expect((await jobsFor(article.id)).filter((name) => name === 'content-index')).toHaveLength(3);

    // Collections and slug are not in the index: no re-indexing for them.
    const collection = await createCollection(cast.owner);
    const relinked = await cast.admin.patch(`${ARTICLES}/${article.id}`, { collectionIds: [collection] });
    expect(relinked.body.indexStatus).toBe('indexed');
    expect((await jobsFor(article.id)).filter((name) => name === 'content-index')).toHaveLength(3);
  });
});

describe('PATCH /api/content/articles/{id}/status', () => {
  it('publishes (publishedAt set, indexing enqueued and done) and returns to draft (publishedAt cleared, removed)', async () => {
    const article = await createArticle(cast.admin, { body: 'How to export contacts to a spreadsheet' });
    const published = await cast.admin.patch(`${ARTICLES}/${article.id}/status`, { status: 'published' });
    expect(published.status).toBe(200);
    expect(published.body).toEqual({
      ...article,
      status: 'published',
      publishedAt: expect.stringMatching(ISO_TIMESTAMP),
      updatedAt: expect.stringMatching(ISO_TIMESTAMP),
      indexStatus: 'pending',
    });
    expect(published.body.publishedAt).toBe(published.body.updatedAt);
    expect(published.body.updatedAt >= article.updatedAt).toBe(true);
    expect(await jobsFor(article.id)).toEqual(['content-index']);

    const indexed = await eventuallyIndexStatus(cast.viewer, article.id, 'indexed');
    expect(indexed.indexedAt).toMatch(ISO_TIMESTAMP);
    expect(indexed.publishedAt).toBe(published.body.publishedAt);
    expect((await chunksOf(article.id)).length).toBeGreaterThan(0);

    const draft = await cast.admin.patch(`${ARTICLES}/${article.id}/status`, { status: 'draft' });
    expect(draft.status).toBe(200);
    expect(draft.body).toMatchObject({ status: 'draft', publishedAt: null, indexStatus: 'pending' });
    // Hidden at once, in the same transaction as the change; the job then confirms the removal.
    expect(await chunksOf(article.id)).toEqual([]);
    expect(await jobsFor(article.id)).toEqual(['content-index', 'content-unindex']);
    const removed = await eventuallyIndexStatus(cast.viewer, article.id, 'removed');
    expect(removed.indexedAt >= indexed.indexedAt).toBe(true);
    expect(await chunksOf(article.id)).toEqual([]);

    const again = await setStatus(cast.admin, article.id, 'published');
    expect(again.publishedAt > published.body.publishedAt).toBe(true);
    await eventuallyIndexStatus(cast.viewer, article.id, 'indexed');
  });

  it('answers the same status with the unchanged record and enqueues nothing', async () => {
    const article = await createArticle(cast.admin);
    const same = await cast.admin.patch(`${ARTICLES}/${article.id}/status`, { status: 'draft' });
    expect(same.status).toBe(200);
    expect(same.body).toEqual(article);
    expect(await jobsFor(article.id)).toEqual([]);

    const published = await setStatus(cast.admin, article.id, 'published');
    await eventuallyIndexStatus(cast.admin, article.id, 'indexed');
    const current = (await cast.admin.get(`${ARTICLES}/${article.id}`)).body;
    const again = await cast.admin.patch(`${ARTICLES}/${article.id}/status`, { status: 'published' });
    expect(again.status).toBe(200);
    expect(again.body).toEqual(current);
    expect(again.body.updatedAt).toBe(published.updatedAt);
    expect(again.body.publishedAt).toBe(published.publishedAt);
    expect(await jobsFor(article.id)).toEqual(['content-index']);
  });

  it('serializes concurrent transitions: every answer is a consistent record', async () => {
    const article = await createArticle(cast.admin);
    const statuses = ['published', 'draft', 'published', 'draft', 'published', 'published', 'draft', 'published'] as const;
    const results = await Promise.all(
      statuses.map((status) => cast.admin.patch(`${ARTICLES}/${article.id}/status`, { status })),
    );
    for (const [i, res] of results.entries()) {
      expect(res.status).toBe(200);
      expect(res.body.status).toBe(statuses[i]);
      expect(res.body.publishedAt === null).toBe(statuses[i] === 'draft');
    }
    const final = (await cast.admin.get(`${ARTICLES}/${article.id}`)).body;
    const settled = await eventuallyIndexStatus(cast.admin, article.id, final.status === 'published' ? 'indexed' : 'removed');
    expect((await chunksOf(article.id)).length > 0).toBe(settled.status === 'published');
  });

  it.each([
    [{ status: 'archived' }, 'status'],
    [{}, 'status'],
    [{ status: 'published', extra: 1 }, 'extra'],
  ])('answers 400 with details for %j', async (body, path) => {
    const article = await createArticle(cast.admin);
    expectValidation(await cast.admin.patch(`${ARTICLES}/${article.id}/status`, body), path);
    expect(await jobsFor(article.id)).toEqual([]);
  });

  it('answers 400 for a malformed id, 404 for an unknown one and for another workspace\'s article', async () => {
    const foreign = await createArticle(cast.outsider);
    expectValidation(await cast.admin.patch(`${ARTICLES}/nope/status`, { status: 'published' }), 'id');
    expectNotFound(await cast.admin.patch(`${ARTICLES}/${randomUUID()}/status`, { status: 'published' }));
    expectNotFound(await cast.admin.patch(`${ARTICLES}/${foreign.id}/status`, { status: 'published' }));
    expect((await cast.outsider.get(`${ARTICLES}/${foreign.id}`)).body.status).toBe('draft');
    expect(await jobsFor(foreign.id)).toEqual([]);
  });
});

describe('DELETE /api/content/articles/{id}', () => {
  it('deletes the article, its collection links and its chunks at once (204)', async () => {
    const collection = await createCollection(cast.owner);
    const article = await createArticle(cast.admin, { collectionIds: [collection], body: 'Soon gone' });
    await setStatus(cast.admin, article.id, 'published');
    await eventuallyIndexStatus(cast.admin, article.id, 'indexed');
    expect((await cast.admin.get(`/api/content/collections/${collection}`)).body.articleCount).toBe(1);

    const res = await cast.admin.delete(`${ARTICLES}/${article.id}`);
    expect(res.status).toBe(204);
    expect(res.body).toBeUndefined();
    expect(await chunksOf(article.id)).toEqual([]);
    expect(await jobsFor(article.id)).toContain('content-unindex');
    expectNotFound(await cast.admin.get(`${ARTICLES}/${article.id}`));
    expectNotFound(await cast.admin.get(`${ARTICLES}/by-slug/${article.slug}`));
    expect((await cast.admin.get(`/api/content/collections/${collection}`)).body.articleCount).toBe(0);
    expectNotFound(await cast.admin.delete(`${ARTICLES}/${article.id}`));
    // The slug is free again.
    expect((await cast.admin.post(ARTICLES, { title: article.title })).body.slug).toBe(article.slug);
  });

  it('answers 404 for an unknown id and another workspace\'s article (which stays), 400 for a malformed id', async () => {
    const foreign = await createArticle(cast.outsider);
    expectNotFound(await cast.admin.delete(`${ARTICLES}/${randomUUID()}`));
    expectNotFound(await cast.admin.delete(`${ARTICLES}/${foreign.id}`));
    expect((await cast.outsider.get(`${ARTICLES}/${foreign.id}`)).status).toBe(200);
    expectValidation(await cast.admin.delete(`${ARTICLES}/nope`), 'id');
  });
});

describe('access to every article route', () => {
  const routes = (id: string, slug: string) =>
    [
      ['GET', ARTICLES, undefined],
      ['GET', `${ARTICLES}/${id}`, undefined],
      ['GET', `${ARTICLES}/by-slug/${slug}`, undefined],
      ['POST', ARTICLES, { title: 'Not created' }],
      ['PATCH', `${ARTICLES}/${id}`, { title: 'Not changed' }],
      ['PATCH', `${ARTICLES}/${id}/status`, { status: 'published' }],
      ['DELETE', `${ARTICLES}/${id}`, undefined],
    ] as const;

  it('answers 401 without a cookie on every route', async () => {
    const article = await createArticle(cast.admin);
    for (const [method, url, body] of routes(article.id, article.slug)) {
      const res = await cast.admin.request(method, url, { body, anonymous: true });
      expect(res.status, `${method} ${url}`).toBe(401);
      expect(res.body).toEqual({ error: 'Unauthorized' });
    }
  });

  it('answers 403 to an agent and a viewer on every write; the reads work for them', async () => {
    const article = await createArticle(cast.admin);
    for (const client of [cast.agent, cast.viewer]) {
      for (const [method, url, body] of routes(article.id, article.slug)) {
        const res = await client.request(method, url, { body });
        if (method === 'GET') expect(res.status, `${method} ${url}`).toBe(200);
        else expectForbidden(res);
      }
    }
    expect((await cast.admin.get(`${ARTICLES}/${article.id}`)).body).toEqual(article);
  });

  it('answers 404 on every route but the list for another workspace\'s article, as for an unknown one', async () => {
    const foreign = await createArticle(cast.outsider);
    for (const id of [foreign.id, randomUUID()]) {
      for (const [method, url, body] of routes(id, foreign.slug)) {
        if (url === ARTICLES) continue;
        expectNotFound(await cast.owner.request(method, url, { body }));
      }
    }
    expect((await cast.outsider.get(`${ARTICLES}/${foreign.id}`)).body).toEqual(foreign);
  });
});
