// Content sources end to end: websites crawled from a small site served here, uploaded files (JSON and multipart),
// typed questions and answers, syncs through the real job queue, and the credential and tenancy rules.
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { searchChunks, sourceItems } from '../src/db/schema/index.js';
import { type Client, createTestApp, eventually, type Reply, signUp, type TestApp, workspaceWithRoles, expectValidation } from './helpers.js';

let t: TestApp;
let cast: Awaited<ReturnType<typeof workspaceWithRoles>>;

beforeAll(async () => {
  // Syncs and indexing are followed by polling the API; the relaxed rate limit keeps the polls from counting.
  t = await createTestApp({ RATE_LIMIT_FACTOR: '100' });
  cast = await workspaceWithRoles(t.app);
});
afterAll(async () => t.close());

const SOURCES = '/api/content/sources';

function expectError(res: Reply, status: number) {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(res.body).toEqual({ error: expect.any(String) });
}

async function createSource(client: Client, body: Record<string, unknown>) {
  const res = await client.post(SOURCES, body);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body as { id: string; [key: string]: any };
}

const filesSource = (client: Client = cast.admin) => createSource(client, { type: 'files', name: 'Handbook', config: {} });
const manualSource = (client: Client = cast.admin) => createSource(client, { type: 'manual', name: 'FAQ', config: {} });

async function waitForSync(client: Client, id: string) {
  return eventually(
    async () => {
      const res = await client.get(`${SOURCES}/${id}`);
      return ['synced', 'failed'].includes(res.body.syncStatus) ? res.body : false;
    },
    20_000,
    'sync finished',
  );
}

async function items(client: Client, sourceId: string, query = '') {
  const res = await client.get(`${SOURCES}/${sourceId}/items?limit=100${query}`);
  expect(res.status).toBe(200);
  return res.body.items as any[];
}

async function waitUntilIndexed(client: Client, sourceId: string) {
  return eventually(
    async () => {
      const list = await items(client, sourceId);
      return list.length > 0 && list.every((item) => item.indexStatus === 'indexed') ? list : false;
    },
    20_000,
    'items indexed',
  );
}

async function chunksOf(documentId: string) {
  return t.app.services.database.db
    .select({ visibility: searchChunks.visibility, content: searchChunks.content })
    .from(searchChunks)
    .where(and(eq(searchChunks.documentType, 'source_item'), eq(searchChunks.documentId, documentId)));
}

// ------------------------------------------------------------------------------------------------------------
// A small website, served from this process

interface Site {
  url: string;
  pages: Map<string, string>;
  /** Requests wait while the site is held. */
  hold(): void;
  release(): void;
  close(): Promise<void>;
}

function page(title: string, paragraphs: string[], links: string[] = []): string {
  const nav = links.map((href) => `<li><a href="${href}">${href}</a></li>`).join('');
  return `<!doctype html><html><head><title>${title}</title></head><body><main><article><h1>${title}</h1>${paragraphs
    .map((p) => `<p>${p}</p>`)
    .join('')}<ul>${nav}</ul></article></main></body></html>`;
}

const filler =
  'This paragraph is here so that the page reads like a real article with enough running text to extract. ' +
  'Tours run every day of the year except on public holidays, and bookings close two days ahead.';

async function startSite(): Promise<Site> {
  const pages = new Map<string, string>([
    ['/', page('Home of Wombat Tours', [`Welcome to the tour company. ${filler}`], ['/alpha', '/beta', '/gamma', '/private/secret'])],
    ['/alpha', page('Alpha platypus', [`The platypus tour leaves at dawn. ${filler}`, filler])],
    ['/beta', page('Beta echidna', [`Echidna spotting on the ridge. ${filler}`, filler])],
    ['/gamma', page('Gamma quokka', [`Quokka selfies on the island. ${filler}`, filler])],
    ['/private/secret', page('Secret', ['Nothing to crawl here.'])],
  ]);
  let held: Promise<void> | undefined;
  let releaseHold: () => void = () => {};
  const server: Server = createServer(async (request, response) => {
    if (held) await held;
    const path = new URL(request.url ?? '/', 'http://site.test').pathname;
    if (path === '/robots.txt') {
      response.writeHead(200, { 'content-type': 'text/plain' }).end('User-agent: *\nDisallow: /private\n');
      return;
    }
    const html = pages.get(path);
    if (html === undefined) {
      response.writeHead(404, { 'content-type': 'text/html' }).end('<h1>Not found</h1>');
      return;
    }
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(html);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const release = () => {
    held = undefined;
    releaseHold();
  };
  return {
    url: `http://127.0.0.1:${port}`,
    pages,
    hold() {
      held = new Promise((resolve) => {
        releaseHold = resolve;
      });
    },
    release,
    async close() {
      release();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

// ------------------------------------------------------------------------------------------------------------
// Files to upload

/** A one-page PDF whose text is `text`, with a correct cross-reference table. */
function tinyPdf(text: string, title: string): Buffer {
  const stream = `BT /F1 18 Tf 72 720 Td (${text}) Tj ET`;
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>',
    `<< /Length ${stream.length} >>\nstream\n${stream}\nendstream`,
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
    `<< /Title (${title}) >>`,
  ];
  let pdf = '%PDF-1.4\n';
  const offsets: number[] = [];
  objects.forEach((object, index) => {
    offsets.push(pdf.length);
    pdf += `${index + 1} 0 obj\n${object}\nendobj\n`;
  });
  const xref = pdf.length;
  pdf += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`;
  pdf += offsets.map((offset) => `${String(offset).padStart(10, '0')} 00000 n \n`).join('');
  pdf += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R /Info 6 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(pdf, 'latin1');
}

type Part = { name: string; fileName?: string; contentType?: string; content: string | Buffer };

function multipart(parts: Part[]): { body: Buffer; headers: Record<string, string> } {
  const boundary = `----test${randomUUID().replaceAll('-', '')}`;
  const chunks: Buffer[] = [];
  for (const part of parts) {
    const disposition = `form-data; name="${part.name}"${part.fileName === undefined ? '' : `; filename="${part.fileName}"`}`;
    const head = `--${boundary}\r\ncontent-disposition: ${disposition}\r\n${part.contentType ? `content-type: ${part.contentType}\r\n` : ''}\r\n`;
    chunks.push(Buffer.from(head), Buffer.from(part.content), Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(chunks), headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } };
}

const upload = (client: Client, sourceId: string, body: Record<string, unknown>) => client.post(`${SOURCES}/${sourceId}/items`, body);

// ------------------------------------------------------------------------------------------------------------

describe('sources', () => {
  it('creates, lists, reads, updates and deletes sources', async () => {
    const { client } = await signUp(t.app);
    const website = await createSource(client, {
      type: 'website',
      name: 'Docs site',
      config: { startUrl: 'https://docs.example.test/start', sitemapUrl: 'https://docs.example.test/sitemap.xml' },
    });
    expect(website).toEqual({
      id: expect.any(String),
      workspaceId: client.workspaceId,
      type: 'website',
      name: 'Docs site',
      visibility: 'public',
      config: { startUrl: 'https://docs.example.test/start', sitemapUrl: 'https://docs.example.test/sitemap.xml', maxPages: 50 },
      syncStatus: 'idle',
      lastSyncedAt: null,
      lastError: null,
      itemCount: 0,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    const files = await createSource(client, { type: 'files', name: 'Uploads', visibility: 'internal', config: {} });
    expect(files).toMatchObject({ type: 'files', visibility: 'internal', config: {} });
    const manual = await createSource(client, { type: 'manual', name: 'Answers' });
    expect(manual.config).toEqual({});

    const all = await client.get(SOURCES);
    expect(all.status).toBe(200);
    expect(all.body.total).toBe(3);
    expect(all.body.items.map((s: any) => s.id)).toEqual([manual.id, files.id, website.id]);
    const page = await client.get(`${SOURCES}?limit=1&offset=1`);
    expect(page.body).toEqual({ items: [expect.objectContaining({ id: files.id })], total: 3 });
    const onlyFiles = await client.get(`${SOURCES}?type=files`);
    expect(onlyFiles.body).toEqual({ items: [expect.objectContaining({ id: files.id })], total: 1 });
    expectValidation(await client.get(`${SOURCES}?type=ftp`), 'type');

    expect((await client.get(`${SOURCES}/${website.id}`)).body).toEqual(website);

    // The config patch is merged into the current one; null removes an optional setting.
    const patched = await client.patch(`${SOURCES}/${website.id}`, { name: 'Docs', config: { maxPages: 5, sitemapUrl: null } });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(patched.body).toMatchObject({ name: 'Docs', config: { startUrl: 'https://docs.example.test/start', maxPages: 5 } });
    expect(patched.body.config).not.toHaveProperty('sitemapUrl');
    expectValidation(await client.patch(`${SOURCES}/${website.id}`, { config: { startUrl: 'mailto:a@b.test' } }), 'config.startUrl');
    expectValidation(await client.patch(`${SOURCES}/${website.id}`, { config: { maxPages: 501 } }), 'config.maxPages');
    expectValidation(await client.patch(`${SOURCES}/${files.id}`, { config: { startUrl: 'https://x.test' } }), 'config.startUrl');
    expectValidation(await client.patch(`${SOURCES}/${files.id}`, { type: 'website' }), 'type');
    expectValidation(await client.patch(`${SOURCES}/${files.id}`, { name: '' }), 'name');

    const deleted = await client.delete(`${SOURCES}/${manual.id}`);
    expect(deleted.status).toBe(204);
    expect(deleted.raw.body).toBe('');
    expectError(await client.get(`${SOURCES}/${manual.id}`), 404);
    expectError(await client.delete(`${SOURCES}/${manual.id}`), 404);
    expect((await client.get(SOURCES)).body.total).toBe(2);
  });

  it('answers 400 with details for invalid create bodies', async () => {
    const website = (config: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
      cast.admin.post(SOURCES, { type: 'website', name: 'Site', config, ...extra });
    expectValidation(await cast.admin.post(SOURCES, { type: 'rss', name: 'Feed', config: {} }), 'type');
    expectValidation(await cast.admin.post(SOURCES, { name: 'No type', config: {} }), 'type');
    expectValidation(await website({ startUrl: 'not a url' }), 'config.startUrl');
    expectValidation(await website({ startUrl: 'ftp://files.example.test/' }), 'config.startUrl');
    expectValidation(await website({ startUrl: 'https://example.test', sitemapUrl: 'sitemap.xml' }), 'config.sitemapUrl');
    expectValidation(await website({ startUrl: 'https://example.test', maxPages: 0 }), 'config.maxPages');
    expectValidation(await website({ startUrl: 'https://example.test', maxPages: 501 }), 'config.maxPages');
    expectValidation(await website({ startUrl: 'https://example.test', maxPages: 2.5 }), 'config.maxPages');
    expectValidation(await website({ startUrl: 'https://example.test', depth: 3 }), 'config.depth');
    expectValidation(await website({ startUrl: 'https://example.test' }, { color: 'blue' }), 'color');
    expectValidation(await website({ startUrl: 'https://example.test' }, { visibility: 'secret' }), 'visibility');
    expectValidation(await website({ startUrl: 'https://example.test' }, { name: '' }), 'name');
    expectValidation(await website({ startUrl: 'https://example.test' }, { name: 'x'.repeat(101) }), 'name');
    expectValidation(await cast.admin.post(SOURCES, { type: 'website', name: 'No config' }), 'config');
    expectValidation(await cast.admin.post(SOURCES, { type: 'files', name: 'F', config: { startUrl: 'https://x.test' } }), 'config.startUrl');
    expectValidation(await cast.admin.get(`${SOURCES}/not-a-uuid`), 'id');
    expectError(await cast.admin.get(`${SOURCES}/${randomUUID()}`), 404);
  });
});

describe('website sources', () => {
  it('crawls the site, and on the next sync updates changed pages, deletes vanished ones and leaves the rest', async () => {
    const site = await startSite();
    try {
      const source = await createSource(cast.admin, { type: 'website', name: 'Wombat Tours', config: { startUrl: `${site.url}/`, maxPages: 10 } });
      const queued = await cast.admin.post(`${SOURCES}/${source.id}/sync`);
      expect(queued.status).toBe(202);
      expect(queued.body).toMatchObject({ id: source.id, syncStatus: 'queued' });

      const synced = await waitForSync(cast.admin, source.id);
      expect(synced).toMatchObject({ syncStatus: 'synced', lastError: null, itemCount: 4, lastSyncedAt: expect.any(String) });
      const first = await items(cast.admin, source.id);
      const byUrl = new Map(first.map((item) => [item.url, item]));
      // robots.txt keeps /private out.
      expect([...byUrl.keys()].sort()).toEqual([`${site.url}/`, `${site.url}/alpha`, `${site.url}/beta`, `${site.url}/gamma`]);
      expect(byUrl.get(`${site.url}/alpha`)).toMatchObject({
        sourceId: source.id,
        title: 'Alpha platypus',
        fileName: null,
        deletedAt: null,
        contentPreview: expect.stringContaining('platypus tour leaves at dawn'),
      });
      const alpha = byUrl.get(`${site.url}/alpha`)!;
      expect(alpha.contentPreview.length).toBeLessThanOrEqual(300);
      expect(alpha.contentLength).toBeGreaterThan(alpha.contentPreview.length);
      const full = await cast.viewer.get(`${SOURCES}/${source.id}/items/${alpha.id}`);
      expect(full.status).toBe(200);
      expect(full.body.content).toContain('platypus tour leaves at dawn');
      expect(full.body.content.length).toBe(alpha.contentLength);

      // The index jobs run on the real queue.
      const indexed = await waitUntilIndexed(cast.admin, source.id);
      expect(indexed.every((item) => item.indexedAt !== null)).toBe(true);
      const gamma = byUrl.get(`${site.url}/gamma`)!;
      expect((await chunksOf(gamma.id)).length).toBeGreaterThan(0);

      // The site changes: alpha is edited, gamma is gone (the home page still links to it: a 404).
      site.pages.set('/alpha', page('Alpha platypus', [`The platypus tour now leaves at noon with kayaks. ${filler}`, filler]));
      site.pages.delete('/gamma');
      expect((await cast.admin.post(`${SOURCES}/${source.id}/sync`)).status).toBe(202);
      const resynced = await waitForSync(cast.admin, source.id);
      expect(resynced).toMatchObject({ syncStatus: 'synced', itemCount: 3 });
      expect(resynced.lastError).toMatch(/^1 page could not be read/);
      expect(resynced.lastError).toContain('/gamma');
      expect(Date.parse(resynced.lastSyncedAt)).toBeGreaterThan(Date.parse(synced.lastSyncedAt));

      const second = new Map((await items(cast.admin, source.id)).map((item) => [item.url, item]));
      expect(second.size).toBe(3);
      const alphaAfter = second.get(`${site.url}/alpha`)!;
      expect(alphaAfter.id).toBe(alpha.id);
      expect(alphaAfter.contentPreview).toContain('leaves at noon with kayaks');
      expect(alphaAfter.updatedAt).not.toBe(alpha.updatedAt);
      for (const path of ['/', '/beta']) {
        const before = byUrl.get(`${site.url}${path}`)!;
        expect(second.get(`${site.url}${path}`)).toMatchObject({ id: before.id, updatedAt: before.updatedAt, contentPreview: before.contentPreview });
      }
      const withDeleted = await items(cast.admin, source.id, '&includeDeleted=true');
      expect(withDeleted).toHaveLength(4);
      expect(withDeleted.find((item) => item.id === gamma.id)).toMatchObject({ deletedAt: expect.any(String) });
      expect(await chunksOf(gamma.id)).toEqual([]);
      const gone = await cast.admin.get(`${SOURCES}/${source.id}/items/${gamma.id}`);
      expect(gone.body.deletedAt).toEqual(expect.any(String));

      // The edited page is indexed again, with its new text.
      await waitUntilIndexed(cast.admin, source.id);
      expect((await chunksOf(alpha.id)).map((chunk) => chunk.content).join(' ')).toContain('kayaks');

      // A page that comes back is the same item again.
      site.pages.set('/gamma', page('Gamma quokka', [`Quokka selfies on the island. ${filler}`, filler]));
      await cast.admin.post(`${SOURCES}/${source.id}/sync`);
      const third = await eventually(async () => {
        const res = await cast.admin.get(`${SOURCES}/${source.id}`);
        return res.body.syncStatus === 'synced' && res.body.itemCount === 4 ? res.body : false;
      }, 20_000);
      expect(third.lastError).toBeNull();
      expect((await items(cast.admin, source.id)).find((item) => item.id === gamma.id)).toMatchObject({ deletedAt: null });
    } finally {
      await site.close();
    }
  });

  it('queues one sync at a time: a request while one is queued or running answers 202 and queues nothing', async () => {
    const site = await startSite();
    try {
      const source = await createSource(cast.admin, { type: 'website', name: 'Held site', config: { startUrl: `${site.url}/` } });
      site.hold();
      const first = await cast.admin.post(`${SOURCES}/${source.id}/sync`);
      expect(first.status).toBe(202);
      expect(first.body.syncStatus).toBe('queued');
      const second = await cast.owner.post(`${SOURCES}/${source.id}/sync`);
      expect(second.status).toBe(202);
      expect(second.body).toMatchObject({ id: source.id, syncStatus: expect.stringMatching(/^(queued|syncing)$/) });
      expect(await t.app.services.jobs.countJobs('content-source-sync', ['created', 'retry', 'active'])).toBe(1);
      // It is picked up and runs (held on the site's robots.txt); asking again still queues nothing.
      await eventually(async () => (await cast.admin.get(`${SOURCES}/${source.id}`)).body.syncStatus === 'syncing');
      expect((await cast.admin.post(`${SOURCES}/${source.id}/sync`)).body.syncStatus).toBe('syncing');
      expect(await t.app.services.jobs.countJobs('content-source-sync', ['created', 'retry', 'active'])).toBe(1);
      site.release();
      expect(await waitForSync(cast.admin, source.id)).toMatchObject({ syncStatus: 'synced', itemCount: 4 });
      // Once it is done, a new request queues a new sync.
      expect((await cast.admin.post(`${SOURCES}/${source.id}/sync`)).body.syncStatus).toBe('queued');
      expect(await waitForSync(cast.admin, source.id)).toMatchObject({ syncStatus: 'synced', itemCount: 4 });
    } finally {
      await site.close();
    }
  });

  it('fails with lastError when the site cannot be reached, and keeps the items it had', async () => {
    const port = await closedPort();
    const unreachable = await createSource(cast.admin, { type: 'website', name: 'Down', config: { startUrl: `http://127.0.0.1:${port}/` } });
    await cast.admin.post(`${SOURCES}/${unreachable.id}/sync`);
    const failed = await waitForSync(cast.admin, unreachable.id);
    expect(failed).toMatchObject({ syncStatus: 'failed', itemCount: 0, lastSyncedAt: null });
    expect(failed.lastError).toMatch(/^No page could be read/);
    expect(failed.lastError).toContain(`127.0.0.1:${port}`);

    const site = await startSite();
    const source = await createSource(cast.admin, { type: 'website', name: 'Goes down', config: { startUrl: `${site.url}/` } });
    await cast.admin.post(`${SOURCES}/${source.id}/sync`);
    const synced = await waitForSync(cast.admin, source.id);
    expect(synced).toMatchObject({ syncStatus: 'synced', itemCount: 4 });
    await site.close();
    await cast.admin.post(`${SOURCES}/${source.id}/sync`);
    const down = await waitForSync(cast.admin, source.id);
    expect(down).toMatchObject({ syncStatus: 'failed', itemCount: 4, lastSyncedAt: synced.lastSyncedAt });
    expect(down.lastError).toMatch(/^No page could be read/);
    expect((await items(cast.admin, source.id)).every((item) => item.deletedAt === null)).toBe(true);
  });

  it('takes no items by hand (422)', async () => {
    const source = await createSource(cast.admin, { type: 'website', name: 'No uploads', config: { startUrl: 'https://example.test/' } });
    expectError(await upload(cast.admin, source.id, { fileName: 'a.md', rawContent: '# A' }), 422);
    expectError(await upload(cast.admin, source.id, { question: 'Q?', answer: 'A.' }), 422);
    const form = multipart([{ name: 'file', fileName: 'a.md', content: '# A' }]);
    expectError(await cast.admin.request('POST', `${SOURCES}/${source.id}/items`, form), 422);
  });
});

describe('files sources', () => {
  it('takes markdown, text, HTML and PDF files as JSON, and indexes them', async () => {
    const source = await filesSource();
    const markdown = await upload(cast.admin, source.id, {
      fileName: 'refunds.md',
      rawContent: '# Refund policy\n\nRefunds of **kangaroo** plushies within 30 days.\n',
    });
    expect(markdown.status, JSON.stringify(markdown.body)).toBe(201);
    expect(markdown.body).toEqual({
      id: expect.any(String),
      sourceId: source.id,
      title: 'Refund policy',
      url: null,
      fileName: 'refunds.md',
      contentPreview: expect.stringContaining('kangaroo'),
      contentLength: expect.any(Number),
      indexStatus: 'pending',
      indexedAt: null,
      indexError: null,
      deletedAt: null,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    const text = await upload(cast.admin, source.id, { fileName: 'hours.txt', rawContent: 'Opening hours: the koala desk opens at nine.' });
    expect(text.status).toBe(201);
    expect(text.body).toMatchObject({ title: 'hours', fileName: 'hours.txt', contentPreview: 'Opening hours: the koala desk opens at nine.', contentLength: 44 });
    const html = await upload(cast.admin, source.id, {
      fileName: 'shipping.html',
      rawContent: page('Shipping times', [`Parcels to Tasmania travel by wallaby express. ${filler}`]),
    });
    expect(html.status).toBe(201);
    expect(html.body.title).toBe('Shipping times');
    expect(html.body.contentPreview).toContain('wallaby express');
    expect(html.body.contentPreview).not.toContain('<p>');
    const pdf = await upload(cast.admin, source.id, {
      fileName: 'warranty.pdf',
      rawContent: tinyPdf('Warranty covers dingo damage', 'Warranty terms').toString('base64'),
      encoding: 'base64',
    });
    expect(pdf.status, JSON.stringify(pdf.body)).toBe(201);
    expect(pdf.body).toMatchObject({ title: 'Warranty terms', fileName: 'warranty.pdf' });
    const pdfItem = await cast.agent.get(`${SOURCES}/${source.id}/items/${pdf.body.id}`);
    expect(pdfItem.body.content).toContain('Warranty covers dingo damage');

    expect((await cast.viewer.get(`${SOURCES}/${source.id}`)).body.itemCount).toBe(4);
    const indexed = await waitUntilIndexed(cast.admin, source.id);
    expect(indexed.map((item) => item.fileName)).toEqual(['refunds.md', 'hours.txt', 'shipping.html', 'warranty.pdf']);
    expect((await chunksOf(markdown.body.id)).map((chunk) => chunk.content).join(' ')).toContain('kangaroo');
  });

  it('takes several files in one multipart upload', async () => {
    const source = await filesSource();
    const form = multipart([
      { name: 'file', fileName: 'notes.md', contentType: 'text/markdown', content: '# Team notes\n\nThe emu rota changes weekly.' },
      { name: 'file', fileName: 'faq.txt', contentType: 'text/plain', content: 'Is the cassowary friendly? No.' },
      { name: 'file', fileName: 'manual.pdf', contentType: 'application/pdf', content: tinyPdf('Bilby feeding guide', 'Bilby manual') },
    ]);
    const res = await cast.admin.request('POST', `${SOURCES}/${source.id}/items`, form);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.items.map((item: any) => [item.fileName, item.title])).toEqual([
      ['notes.md', 'Team notes'],
      ['faq.txt', 'faq'],
      ['manual.pdf', 'Bilby manual'],
    ]);
    expect(res.body.items.every((item: any) => item.indexStatus === 'pending' && item.sourceId === source.id)).toBe(true);
    expect((await cast.admin.get(`${SOURCES}/${source.id}`)).body.itemCount).toBe(3);
    await waitUntilIndexed(cast.admin, source.id);

    // An upload is all or nothing, and only `file` parts are read.
    const mixed = multipart([
      { name: 'file', fileName: 'ok.md', content: '# Fine' },
      { name: 'file', fileName: 'photo.png', contentType: 'image/png', content: Buffer.from([0x89, 0x50, 0x4e, 0x47]) },
    ]);
    expectValidation(await cast.admin.request('POST', `${SOURCES}/${source.id}/items`, mixed), 'file.1');
    const field = multipart([{ name: 'title', content: 'not a file' }, { name: 'file', fileName: 'x.md', content: '# X' }]);
    expectValidation(await cast.admin.request('POST', `${SOURCES}/${source.id}/items`, field), 'title');
    expectValidation(await cast.admin.request('POST', `${SOURCES}/${source.id}/items`, multipart([])), 'file');
    const broken = await cast.admin.request('POST', `${SOURCES}/${source.id}/items`, {
      body: '--nope\r\ncontent-disposition: form-data; name="file"; filename="a.md"\r\n\r\n# A',
      headers: { 'content-type': 'multipart/form-data; boundary=nope' },
    });
    expect(broken.status).toBe(400);
    expect((await items(cast.admin, source.id)).map((item) => item.fileName)).toEqual(['notes.md', 'faq.txt', 'manual.pdf']);
  });

  it('replaces a file uploaded again under the same name, re-indexing it only when it changed', async () => {
    const source = await filesSource();
    const first = await upload(cast.admin, source.id, { fileName: 'policy.md', rawContent: '# Policy\n\nPossums are welcome.' });
    expect(first.status).toBe(201);
    const [indexed] = await waitUntilIndexed(cast.admin, source.id);

    const same = await upload(cast.admin, source.id, { fileName: 'policy.md', rawContent: '# Policy\n\nPossums are welcome.' });
    expect(same.status).toBe(201);
    expect(same.body).toMatchObject({ id: first.body.id, indexStatus: 'indexed', updatedAt: indexed.updatedAt, indexedAt: indexed.indexedAt });

    const changed = await upload(cast.admin, source.id, { fileName: 'policy.md', rawContent: '# Policy\n\nPossums are welcome, wombats too.' });
    expect(changed.status).toBe(201);
    expect(changed.body).toMatchObject({ id: first.body.id, indexStatus: 'pending' });
    expect(changed.body.updatedAt).not.toBe(first.body.updatedAt);
    expect((await items(cast.admin, source.id))).toHaveLength(1);
    await waitUntilIndexed(cast.admin, source.id);
    expect((await chunksOf(first.body.id)).map((chunk) => chunk.content).join(' ')).toContain('wombats too');

    // A deleted file uploaded again comes back as the same item.
    expect((await cast.admin.delete(`${SOURCES}/${source.id}/items/${first.body.id}`)).status).toBe(204);
    const back = await upload(cast.admin, source.id, { fileName: 'policy.md', rawContent: '# Policy\n\nPossums are welcome, wombats too.' });
    expect(back.body).toMatchObject({ id: first.body.id, deletedAt: null, indexStatus: 'pending' });
    await waitUntilIndexed(cast.admin, source.id);
  });

  it('refuses unsupported and unreadable files and oversized or malformed bodies', async () => {
    const source = await filesSource();
    const unsupported = await upload(cast.admin, source.id, { fileName: 'photo.png', rawContent: 'PNG' });
    expectValidation(unsupported, 'fileName');
    expect(unsupported.body.details[0].message).toContain('photo.png');
    const unreadable = await upload(cast.admin, source.id, {
      fileName: 'broken.pdf',
      rawContent: Buffer.from('this is not a PDF at all').toString('base64'),
      encoding: 'base64',
    });
    expectError(unreadable, 422);
    expect(unreadable.body.error).toContain('broken.pdf');
    expectValidation(await upload(cast.admin, source.id, { fileName: 'big.txt', rawContent: 'x'.repeat(5 * 1024 * 1024 + 1) }), 'rawContent');
    expectValidation(await upload(cast.admin, source.id, { fileName: 'a.pdf', rawContent: '%%% not base64 %%%', encoding: 'base64' }), 'rawContent');
    expectValidation(await upload(cast.admin, source.id, { fileName: 'a.md', rawContent: '# A', encoding: 'hex' }), 'encoding');
    expectValidation(await upload(cast.admin, source.id, { fileName: '', rawContent: '# A' }), 'fileName');
    expectValidation(await upload(cast.admin, source.id, { rawContent: '# A' }), 'fileName');
    expectValidation(await upload(cast.admin, source.id, { fileName: 'a.md', rawContent: '# A', tags: ['x'] }), 'tags');
    expectValidation(await upload(cast.admin, source.id, { question: 'Q?', answer: 'A.' }), 'question');
    const notJson = await cast.admin.post(`${SOURCES}/${source.id}/items`, '# A', { headers: { 'content-type': 'text/markdown' } });
    expectError(notJson, 415);
    expect(await items(cast.admin, source.id)).toEqual([]);
  });

  it('answers 413 beyond the upload limits', async () => {
    const source = await filesSource();
    const url = `${SOURCES}/${source.id}/items`;
    const eleven = multipart(Array.from({ length: 11 }, (_, i) => ({ name: 'file', fileName: `f${i}.txt`, content: `file ${i}` })));
    const tooMany = await cast.admin.request('POST', url, eleven);
    expectError(tooMany, 413);
    expect(tooMany.body.error).toContain('10 files');
    const huge = multipart([{ name: 'file', fileName: 'huge.txt', content: Buffer.alloc(10 * 1024 * 1024 + 1, 'a') }]);
    const tooLarge = await cast.admin.request('POST', url, huge);
    expectError(tooLarge, 413);
    expect(tooLarge.body.error).toContain('10 MiB');
    const hugeJson = await upload(cast.admin, source.id, { fileName: 'huge.txt', rawContent: 'a'.repeat(9 * 1024 * 1024) });
    expectError(hugeJson, 413);
    expect(hugeJson.body.error).toContain('8 MiB');
    expect(await items(cast.admin, source.id)).toEqual([]);
  });

  it('a sync of a files source re-indexes the items that are not indexed', async () => {
    const source = await filesSource();
    const item = await upload(cast.admin, source.id, { fileName: 'a.txt', rawContent: 'Numbat facts.' });
    await waitUntilIndexed(cast.admin, source.id);
    await t.app.services.database.db
      .update(sourceItems)
      .set({ indexStatus: 'failed', indexError: 'simulated' })
      .where(eq(sourceItems.id, item.body.id));
    const res = await cast.admin.post(`${SOURCES}/${source.id}/sync`);
    expect(res.status).toBe(202);
    expect(await waitForSync(cast.admin, source.id)).toMatchObject({ syncStatus: 'synced', lastError: null, itemCount: 1 });
    const [again] = await waitUntilIndexed(cast.admin, source.id);
    expect(again).toMatchObject({ id: item.body.id, indexError: null });
  });
});

describe('manual sources', () => {
  it('creates, edits and deletes questions and answers', async () => {
    const source = await manualSource();
    const created = await upload(cast.admin, source.id, { question: 'Do you ship to Perth?', answer: 'Yes, by camel train within a week.' });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body).toMatchObject({
      sourceId: source.id,
      title: 'Do you ship to Perth?',
      contentPreview: 'Yes, by camel train within a week.',
      url: null,
      fileName: null,
      indexStatus: 'pending',
    });
    await waitUntilIndexed(cast.admin, source.id);

    const url = `${SOURCES}/${source.id}/items/${created.body.id}`;
    const edited = await cast.admin.patch(url, { answer: 'Yes, by road train within three days.' });
    expect(edited.status).toBe(200);
    expect(edited.body).toMatchObject({ title: 'Do you ship to Perth?', content: 'Yes, by road train within three days.', indexStatus: 'pending' });
    await waitUntilIndexed(cast.admin, source.id);
    expect((await chunksOf(created.body.id)).map((chunk) => chunk.content).join(' ')).toContain('road train');
    const unchanged = await cast.admin.patch(url, { question: 'Do you ship to Perth?' });
    expect(unchanged.body).toMatchObject({ indexStatus: 'indexed', updatedAt: edited.body.updatedAt });

    expectValidation(await cast.admin.patch(url, { answer: '' }), 'answer');
    expectValidation(await cast.admin.patch(url, { question: 'x'.repeat(501) }), 'question');
    expectValidation(await cast.admin.patch(url, { title: 'T' }), 'title');
    expectValidation(await upload(cast.admin, source.id, { question: 'Q?' }), 'answer');
    expectValidation(await upload(cast.admin, source.id, { question: 'Q?', answer: 'x'.repeat(20_001) }), 'answer');
    expectValidation(await upload(cast.admin, source.id, { fileName: 'a.md', rawContent: '# A' }), 'fileName');
    const form = multipart([{ name: 'file', fileName: 'a.md', content: '# A' }]);
    expectError(await cast.admin.request('POST', `${SOURCES}/${source.id}/items`, form), 415);

    expect((await cast.admin.delete(url)).status).toBe(204);
    expect(await chunksOf(created.body.id)).toEqual([]);
    expect(await items(cast.admin, source.id)).toEqual([]);
    expect(await items(cast.admin, source.id, '&includeDeleted=true')).toEqual([
      expect.objectContaining({ id: created.body.id, deletedAt: expect.any(String) }),
    ]);
    expect((await cast.admin.get(`${SOURCES}/${source.id}`)).body.itemCount).toBe(0);
    expectError(await cast.admin.delete(url), 404);
    expectError(await cast.admin.patch(url, { answer: 'Too late.' }), 404);
    // Its removal job ran: the item is marked removed from the index.
    await eventually(async () => (await cast.admin.get(url)).body.indexStatus === 'removed');
  });

  it('only manual items are edited (422 for files items)', async () => {
    const source = await filesSource();
    const file = await upload(cast.admin, source.id, { fileName: 'a.md', rawContent: '# A' });
    expectError(await cast.admin.patch(`${SOURCES}/${source.id}/items/${file.body.id}`, { answer: 'B' }), 422);
  });
});

describe('visibility and deletion reach the index at once', () => {
  it('a visibility change re-labels indexed chunks; deleting the source removes them', async () => {
    const source = await manualSource();
    const item = await upload(cast.admin, source.id, { question: 'Where is the office?', answer: 'Next to the billabong.' });
    await waitUntilIndexed(cast.admin, source.id);
    expect((await chunksOf(item.body.id)).map((chunk) => chunk.visibility)).toEqual(['public']);

    const internal = await cast.admin.patch(`${SOURCES}/${source.id}`, { visibility: 'internal' });
    expect(internal.status).toBe(200);
    expect(internal.body).toMatchObject({ visibility: 'internal', itemCount: 1 });
    expect((await chunksOf(item.body.id)).map((chunk) => chunk.visibility)).toEqual(['internal']);

    expect((await cast.admin.delete(`${SOURCES}/${source.id}`)).status).toBe(204);
    expect(await chunksOf(item.body.id)).toEqual([]);
    expectError(await cast.admin.get(`${SOURCES}/${source.id}/items/${item.body.id}`), 404);
  });
});

describe('credentials and tenancy', () => {
  it('401 without a session or workspace', async () => {
    const source = await filesSource();
    expectError(await cast.admin.get(SOURCES, { anonymous: true }), 401);
    expectError(await cast.admin.post(SOURCES, { type: 'files', name: 'X', config: {} }, { anonymous: true }), 401);
    expectError(await cast.admin.get(`${SOURCES}/${source.id}`, { workspace: null }), 401);
    expectError(await cast.admin.post(`${SOURCES}/${source.id}/sync`, undefined, { anonymous: true }), 401);
  });

  it('agents and viewers read; only admins and owners write (403)', async () => {
    const source = await manualSource();
    const item = await upload(cast.owner, source.id, { question: 'Q?', answer: 'A.' });
    expect(item.status).toBe(201);
    const itemUrl = `${SOURCES}/${source.id}/items/${item.body.id}`;
    const form = multipart([{ name: 'file', fileName: 'a.md', content: '# A' }]);
    for (const client of [cast.agent, cast.viewer]) {
      expect((await client.get(SOURCES)).status).toBe(200);
      expect((await client.get(`${SOURCES}/${source.id}`)).status).toBe(200);
      expect((await client.get(`${SOURCES}/${source.id}/items`)).status).toBe(200);
      expect((await client.get(itemUrl)).status).toBe(200);
      expectError(await client.post(SOURCES, { type: 'manual', name: 'Mine', config: {} }), 403);
      expectError(await client.patch(`${SOURCES}/${source.id}`, { name: 'Renamed' }), 403);
      expectError(await client.post(`${SOURCES}/${source.id}/sync`), 403);
      expectError(await upload(client, source.id, { question: 'Q2?', answer: 'A2.' }), 403);
      expectError(await client.request('POST', `${SOURCES}/${source.id}/items`, form), 403);
      expectError(await client.patch(itemUrl, { answer: 'B.' }), 403);
      expectError(await client.delete(itemUrl), 403);
      expectError(await client.delete(`${SOURCES}/${source.id}`), 403);
    }
    const after = await cast.admin.get(`${SOURCES}/${source.id}`);
    expect(after.body).toMatchObject({ name: 'FAQ', itemCount: 1, syncStatus: 'idle' });
    expect((await cast.owner.patch(`${SOURCES}/${source.id}`, { name: 'Owner FAQ' })).status).toBe(200);
  });

  it('another workspace\'s sources and items are 404 on every route', async () => {
    const source = await manualSource();
    const item = await upload(cast.admin, source.id, { question: 'Q?', answer: 'A.' });
    const src = `${SOURCES}/${source.id}`;
    const itm = `${src}/items/${item.body.id}`;
    const outsider = cast.outsider;
    const form = multipart([{ name: 'file', fileName: 'a.md', content: '# A' }]);
    expectError(await outsider.get(src), 404);
    expectError(await outsider.patch(src, { name: 'Mine now' }), 404);
    expectError(await outsider.post(`${src}/sync`), 404);
    expectError(await outsider.get(`${src}/items`), 404);
    expectError(await outsider.post(`${src}/items`, { question: 'Q?', answer: 'A.' }), 404);
    expectError(await outsider.request('POST', `${src}/items`, form), 404);
    expectError(await outsider.get(itm), 404);
    expectError(await outsider.patch(itm, { answer: 'B.' }), 404);
    expectError(await outsider.delete(itm), 404);
    expectError(await outsider.delete(src), 404);
    expect((await outsider.get(SOURCES)).body.items.map((s: any) => s.id)).not.toContain(source.id);
    // Its own source does not reach the other workspace's items either.
    const own = await manualSource(outsider);
    expectError(await outsider.get(`${SOURCES}/${own.id}/items/${item.body.id}`), 404);
    expectError(await outsider.delete(`${SOURCES}/${own.id}/items/${item.body.id}`), 404);
    // And with the other workspace's header it is not a member.
    expectError(await outsider.get(src, { workspace: cast.workspaceId }), 403);
    const untouched = await cast.admin.get(itm);
    expect(untouched.body).toMatchObject({ content: 'A.', deletedAt: null });
    expect((await cast.admin.get(src)).body).toMatchObject({ name: 'FAQ', syncStatus: 'idle', itemCount: 1 });
  });

  it('multipart is read by the item upload only: other writes still answer 415', async () => {
    const form = multipart([{ name: 'type', content: 'files' }, { name: 'name', content: 'X' }]);
    expectError(await cast.admin.request('POST', SOURCES, form), 415);
    expectError(await cast.admin.request('PATCH', '/api/workspace', form), 415);
  });

  it('documents the routes in the OpenAPI document', async () => {
    const doc = (await cast.admin.get('/api/openapi.json')).body;
    for (const [path, method] of [
      ['/api/content/sources', 'get'],
      ['/api/content/sources', 'post'],
      ['/api/content/sources/{id}', 'get'],
      ['/api/content/sources/{id}', 'patch'],
      ['/api/content/sources/{id}', 'delete'],
      ['/api/content/sources/{id}/sync', 'post'],
      ['/api/content/sources/{id}/items', 'get'],
      ['/api/content/sources/{id}/items', 'post'],
      ['/api/content/sources/{id}/items/{itemId}', 'get'],
      ['/api/content/sources/{id}/items/{itemId}', 'patch'],
      ['/api/content/sources/{id}/items/{itemId}', 'delete'],
    ] as const) {
      expect(doc.paths[path]?.[method]?.tags, `${method} ${path}`).toEqual(['Content sources']);
    }
    expect(doc.components.schemas).toHaveProperty('ContentSource');
    expect(doc.components.schemas).toHaveProperty('ContentSourceItem');
    expect(Object.keys(doc.paths['/api/content/sources/{id}/sync'].post.responses)).toEqual(expect.arrayContaining(['202', '400', '401', '403', '404']));
  });
});
