// Search through the real queue: publish → findable, draft → gone at once, visibility, ranking, snippets,
// the workspace's language, and no reach into another workspace's index.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chunkText, MAX_CHUNK_CHARS } from '../src/modules/content/index/chunker.js';
import { type Client, createTestApp, eventually, type TestApp, workspaceWithRoles } from './helpers.js';

let api: TestApp;
let cast: Awaited<ReturnType<typeof workspaceWithRoles>>;

beforeAll(async () => {
  api = await createTestApp({ RATE_LIMIT_FACTOR: '10' });
  cast = await workspaceWithRoles(api.app);
});
afterAll(async () => api?.close());

async function publishedArticle(client: Client, fields: Record<string, unknown>): Promise<string> {
  const created = await client.post('/api/content/articles', fields);
  expect(created.status).toBe(201);
  const published = await client.patch(`/api/content/articles/${created.body.id}/status`, { status: 'published' });
  expect(published.status).toBe(200);
  await eventually(
    async () => (await client.get(`/api/content/articles/${created.body.id}`)).body.indexStatus === 'indexed',
    10_000,
    'article indexed',
  );
  return created.body.id;
}

const search = (client: Client, query: string) => client.get(`/api/content/search?${query}`);

describe('GET /api/content/search', () => {
  it('finds a published article within seconds, with a marked snippet, for every role', async () => {
    const id = await publishedArticle(cast.admin, {
      title: 'Refund policy',
      body: '# Refunds\n\nCustomers can ask for a refund within 30 days of purchase.\n\n## Shipping\n\nParcels ship daily.',
    });
    for (const client of [cast.owner, cast.admin, cast.agent, cast.viewer]) {
      const res = await search(client, 'q=refunds');
      expect(res.status).toBe(200);
      expect(res.body.total).toBe(1);
      expect(res.body.items[0]).toMatchObject({ documentType: 'article', documentId: id, title: 'Refund policy', visibility: 'public' });
      expect(res.body.items[0].snippet).toContain('<mark>refund</mark>');
      expect(res.body.items[0].score).toBeGreaterThan(0);
    }
  });

  it('stems words and understands web-search syntax: phrases, or, exclusion', async () => {
    await publishedArticle(cast.admin, { title: 'Courier pickups', body: 'The courier picked up twelve parcels from the depot.' });
    await publishedArticle(cast.admin, { title: 'Depot hours', body: 'The depot opens at nine; no parcels after six.' });
    expect((await search(cast.agent, 'q=picking')).body.items.map((h: { title: string }) => h.title)).toEqual(['Courier pickups']);
    expect((await search(cast.agent, `q=${encodeURIComponent('"twelve parcels"')}`)).body.total).toBe(1);
    expect((await search(cast.agent, 'q=depot')).body.total).toBe(2);
    expect((await search(cast.agent, `q=${encodeURIComponent('depot -courier')}`)).body.items.map((h: { title: string }) => h.title)).toEqual([
      'Depot hours',
    ]);
    expect((await search(cast.agent, `q=${encodeURIComponent('twelve or nine')}`)).body.total).toBe(2);
  });

  it('ranks a title match above a passing mention', async () => {
    await publishedArticle(cast.admin, { title: 'Gift cards', body: 'How to buy and redeem.' });
    await publishedArticle(cast.admin, { title: 'Payments', body: 'We accept cards, cash and gift vouchers.' });
    const res = await search(cast.agent, 'q=gift');
    expect(res.body.items[0].title).toBe('Gift cards');
  });

  it('drops an article the moment it returns to draft, and finds it again when republished', async () => {
    const id = await publishedArticle(cast.admin, { title: 'Seasonal zeppelin tours', body: 'Zeppelin tours leave at dawn.' });
    expect((await search(cast.viewer, 'q=zeppelin')).body.total).toBe(1);
    const draft = await cast.admin.patch(`/api/content/articles/${id}/status`, { status: 'draft' });
    expect(draft.status).toBe(200);
    expect((await search(cast.viewer, 'q=zeppelin')).body).toEqual({ items: [], total: 0 });
    await eventually(async () => (await cast.admin.get(`/api/content/articles/${id}`)).body.indexStatus === 'removed', 10_000, 'removed');
    await cast.admin.patch(`/api/content/articles/${id}/status`, { status: 'published' });
    await eventually(async () => (await search(cast.viewer, 'q=zeppelin')).body.total === 1, 10_000, 'findable again');
  });

  it('never shows drafts, and forgets deleted articles at once', async () => {
    const draft = await cast.admin.post('/api/content/articles', { title: 'Unreleased quokka feature', body: 'Quokka mode.' });
    expect(draft.status).toBe(201);
    const id = await publishedArticle(cast.admin, { title: 'Wombat care', body: 'Wombats like carrots.' });
    expect((await search(cast.agent, 'q=quokka')).body.total).toBe(0);
    expect((await cast.admin.delete(`/api/content/articles/${id}`)).status).toBe(204);
    expect((await search(cast.agent, 'q=wombat')).body.total).toBe(0);
  });

  it('re-indexes a published article when it is edited', async () => {
    const id = await publishedArticle(cast.admin, { title: 'Opening hours', body: 'We open on Mondays.' });
    await cast.admin.patch(`/api/content/articles/${id}`, { body: 'We open on Saturdays only.' });
    await eventually(async () => (await search(cast.agent, 'q=saturdays')).body.total === 1, 10_000, 'edit indexed');
    expect((await search(cast.agent, 'q=mondays')).body.total).toBe(0);
  });

  it('filters by visibility: internal articles are hidden when public ones are asked for', async () => {
    await publishedArticle(cast.admin, { title: 'Escalation runbook', body: 'Page the on-call platypus.', visibility: 'internal' });
    await publishedArticle(cast.admin, { title: 'Contact us', body: 'Write to the platypus desk.' });
    const publicOnly = await search(cast.agent, 'q=platypus&visibility=public');
    expect(publicOnly.body.items.map((h: { title: string }) => h.title)).toEqual(['Contact us']);
    expect((await search(cast.agent, 'q=platypus&visibility=internal')).body.items.map((h: { title: string }) => h.title)).toEqual([
      'Escalation runbook',
    ]);
    expect((await search(cast.agent, 'q=platypus')).body.total).toBe(2);
  });

  it('hides an article from public search at once when it becomes internal', async () => {
    const id = await publishedArticle(cast.admin, { title: 'Narwhal pricing', body: 'Narwhal plan costs more.' });
    await cast.admin.patch(`/api/content/articles/${id}`, { visibility: 'internal' });
    expect((await search(cast.agent, 'q=narwhal&visibility=public')).body.total).toBe(0);
  });

  it('pages through hits with limit and offset, total counting documents not passages', async () => {
    const long = Array.from({ length: 8 }, (_, i) => `## Part ${i}\n\n${'Axolotl facts and more axolotl facts. '.repeat(60)}`).join('\n\n');
    await publishedArticle(cast.admin, { title: 'Axolotl encyclopedia', body: long });
    await publishedArticle(cast.admin, { title: 'Axolotl tanks', body: 'Keep the axolotl cool.' });
    await publishedArticle(cast.admin, { title: 'Axolotl food', body: 'Axolotl eat worms.' });
    const first = await search(cast.agent, 'q=axolotl&limit=2');
    expect(first.body.total).toBe(3);
    expect(first.body.items).toHaveLength(2);
    const second = await search(cast.agent, 'q=axolotl&limit=2&offset=2');
    expect(second.body.items).toHaveLength(1);
    const all = [...first.body.items, ...second.body.items].map((h: { documentId: string }) => h.documentId);
    expect(new Set(all).size).toBe(3);
    const past = await search(cast.agent, 'q=axolotl&limit=2&offset=10');
    expect(past.body).toEqual({ items: [], total: 3 });
  });

  it('escapes HTML in snippets, keeping only its own <mark> tags', async () => {
    await publishedArticle(cast.admin, { title: 'Embedding widgets', body: 'Paste <script>alert("kiwi")</script> into your kiwi page & save.' });
    const hit = (await search(cast.agent, 'q=kiwi')).body.items[0];
    // ts_headline drops markup from the passage; what remains is escaped, so only <mark> is HTML.
    expect(hit.snippet).not.toContain('<script>');
    expect(hit.snippet).toContain('&#34;kiwi&#34;');
    expect(hit.snippet).toContain('&#38;');
    expect(hit.snippet).toContain('<mark>kiwi</mark>');
  });

  it('answers an empty result, not an error, for a query of stop words only', async () => {
    const res = await search(cast.agent, 'q=the');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ items: [], total: 0 });
  });

  it('rejects bad parameters with 400 and details', async () => {
    for (const query of ['', 'q=', `q=${'a'.repeat(501)}`, 'q=x&limit=0', 'q=x&limit=51', 'q=x&offset=-1', 'q=x&visibility=secret', 'q=x&documentType=page']) {
      const res = await search(cast.agent, query);
      expect(res.status, query).toBe(400);
      expect(res.body.details.length, query).toBeGreaterThan(0);
    }
  });

  it('needs a session (401) and a workspace membership (403)', async () => {
    expect((await cast.agent.get('/api/content/search?q=x', { anonymous: true })).status).toBe(401);
    expect((await cast.outsider.get('/api/content/search?q=x', { workspace: cast.workspaceId })).status).toBe(403);
  });

  it('never returns another workspace\'s documents', async () => {
    await publishedArticle(cast.admin, { title: 'Secret capybara roadmap', body: 'Capybara launch.' });
    const res = await search(cast.outsider, 'q=capybara');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ items: [], total: 0 });
    await publishedArticle(cast.outsider, { title: 'Capybara for outsiders', body: 'Their own capybara.' });
    const own = await search(cast.outsider, 'q=capybara');
    expect(own.body.items.map((h: { title: string }) => h.title)).toEqual(['Capybara for outsiders']);
  });
});

describe('search language', () => {
  it('defaults to English and re-stems the index when an admin changes it', async () => {
    const { owner, agent } = await workspaceWithRoles(api.app);
    expect((await owner.get('/api/content/settings')).body).toEqual({ searchLanguage: 'english', updatedAt: null });
    await publishedArticle(owner, { title: 'Los gatos', body: 'Los gatos corren rápidamente por las casas.' });
    expect((await search(agent, 'q=corriendo')).body.total).toBe(0);
    expect((await agent.patch('/api/content/settings', { searchLanguage: 'spanish' })).status).toBe(403);
    const changed = await owner.patch('/api/content/settings', { searchLanguage: 'spanish' });
    expect(changed.status).toBe(200);
    expect(changed.body.searchLanguage).toBe('spanish');
    // Spanish stemming maps "corren" and "correr" to one stem; English does not.
    await eventually(async () => (await search(agent, 'q=correr')).body.total === 1, 15_000, 'spanish stems');
    expect((await owner.patch('/api/content/settings', { searchLanguage: 'klingon' })).status).toBe(400);
    expect((await owner.patch('/api/content/settings', { searchLanguage: 'spanish', extra: 1 })).status).toBe(400);
  });
});

describe('chunking', () => {
  it('splits by headings, keeps the heading path, and bounds every chunk', () => {
    const text = `Intro line.\n\n# Billing\n\nPay monthly.\n\n## Refunds\n\n${'Long sentence here. '.repeat(200)}\n\n# Other\n\nDone.`;
    const chunks = chunkText(text);
    expect(chunks[0]).toEqual({ heading: null, content: 'Intro line.' });
    expect(chunks[1]).toEqual({ heading: 'Billing', content: 'Pay monthly.' });
    const refunds = chunks.filter((c) => c.heading === 'Billing › Refunds');
    expect(refunds.length).toBeGreaterThan(1);
    expect(chunks.at(-1)).toEqual({ heading: 'Other', content: 'Done.' });
    for (const chunk of chunks) expect(chunk.content.length).toBeLessThanOrEqual(MAX_CHUNK_CHARS);
  });

  it('does not take # lines inside code fences for headings, and cuts unbroken text', () => {
    const chunks = chunkText(`# Setup\n\n\`\`\`sh\n# not a heading\nnpm start\n\`\`\`\n\n${'x'.repeat(4000)}`);
    expect(chunks.every((c) => c.heading === 'Setup')).toBe(true);
    expect(chunks[0]!.content).toContain('# not a heading');
    for (const chunk of chunks) expect(chunk.content.length).toBeLessThanOrEqual(MAX_CHUNK_CHARS);
    expect(chunks.map((c) => c.content).join('').replace(/[^x]/g, '')).toHaveLength(4000);
  });
});
