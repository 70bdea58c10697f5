import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { crawlWebsite, normalizeUrl, parseSitemap } from '../src/modules/content/extract/crawl.js';
import { extractFile, UnreadableFileError, UnsupportedFileError } from '../src/modules/content/extract/files.js';
import { extractHtml } from '../src/modules/content/extract/html.js';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

interface Site {
  url: string;
  hits: string[];
  userAgents: string[];
  close: () => Promise<void>;
}

async function startSite(routes: (site: Site) => Record<string, Handler>): Promise<Site> {
  const site: Site = { url: '', hits: [], userAgents: [], close: async () => {} };
  let table: Record<string, Handler> = {};
  const server = createServer((req, res) => {
    site.hits.push(req.url ?? '');
    site.userAgents.push(req.headers['user-agent'] ?? '');
    const handler = table[new URL(req.url ?? '/', 'http://x').pathname];
    if (handler) handler(req, res);
    else res.writeHead(404, { 'content-type': 'text/html' }).end('<h1>Not found</h1>');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  site.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  site.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  table = routes(site);
  return site;
}

const html =
  (body: string, title = 'Page'): Handler =>
  (_req, res) =>
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(`<!doctype html><html><head><title>${title}</title></head><body>${body}</body></html>`);
const text =
  (body: string, contentType: string, status = 200): Handler =>
  (_req, res) =>
    res.writeHead(status, { 'content-type': contentType }).end(body);
const redirect =
  (location: string, status = 302): Handler =>
  (_req, res) =>
    res.writeHead(status, { location }).end();
const article = (heading: string) => `<article><h1>${heading}</h1><p>${heading} is described in this paragraph.</p></article>`;
const urlset = (urls: string[]) =>
  `<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${urls.map((u) => `<url><loc>${u}</loc></url>`).join('')}</urlset>`;
const sitemapIndex = (urls: string[]) =>
  `<?xml version="1.0" encoding="UTF-8"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${urls.map((u) => `<sitemap><loc>${u}</loc></sitemap>`).join('')}</sitemapindex>`;

let site: Site;
let other: Site;
let broken: Site;

beforeAll(async () => {
  other = await startSite(() => ({
    '/': html(`${article('Other home')}<a href="/one">one</a><a href="/two">two</a>`),
    '/one': html(article('Other one')),
    '/two': html(article('Other two')),
    '/landing': html(article('Landing')),
  }));
  site = await startSite((self) => ({
    '/robots.txt': text('User-agent: *\nDisallow: /private\n\nUser-agent: CommOpsBot\nDisallow: /private\nDisallow: /bots-keep-out\n', 'text/plain'),
    '/': html(
      `${article('Home')}<nav><a href="/a">A</a> <a href="/b">B</a> <a href="/private/secret">Secret</a></nav>
       <a href="${other.url}/landing">Elsewhere</a> <a href="/a#intro">A intro</a> <a href="/missing">Missing</a>
       <a href="/logo.png">Logo</a> <a href="/away">Away</a> <a href="/moved">Moved</a> <a href="mailto:x@example.com">Mail</a>
       <a href="http://127.0.0.1:${new URL(self.url).port}/bots-keep-out">Bots keep out</a>`,
      'Home',
    ),
    '/a': html(`${article('Page A')}<a href="#top">Top</a> <a href="/a#more">More</a> <a href="/c?lang=en">C</a>`),
    '/b': html(article('Page B')),
    '/c': html(article('Page C')),
    '/bots-keep-out': html(article('Humans only')),
    '/private/secret': html(article('Secret')),
    '/logo.png': text('\x89PNG', 'image/png'),
    '/away': redirect(`${other.url}/landing`),
    '/moved': redirect('/b', 301),
    '/loop': redirect('/loop'),
    '/chain': (req, res) => redirect(`/chain?n=${Number(new URL(req.url ?? '', self.url).searchParams.get('n')) + 1}`)(req, res),
    '/big': html(`<p>${'x'.repeat(50_000)}</p>`),
    '/big-chunked': (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      for (let i = 0; i < 10; i++) res.write(`<p>${'y'.repeat(5_000)}</p>`);
      res.end();
    },
    '/slow': (_req, res) => {
      setTimeout(() => html(article('Slow'))(_req, res), 2_000).unref();
    },
    '/slow-body': (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' }).write('<p>The start of a page that never ends');
    },
    '/sitemap.xml': text(
      urlset([`${self.url}/a`, `${self.url}/b`, `${self.url}/a#dup`, `${self.url}/private/secret`, `${other.url}/one`, `${self.url}/missing`]),
      'application/xml',
    ),
    '/sitemap-index.xml': text(
      sitemapIndex([`${self.url}/sitemap-1.xml`, `${self.url}/sitemap-nested.xml`, `${other.url}/sitemap.xml`, `${self.url}/sitemap-gone.xml`]),
      'application/xml',
    ),
    '/sitemap-1.xml': text(urlset([`${self.url}/a`, `${self.url}/c`]), 'text/xml'),
    '/sitemap-nested.xml': text(sitemapIndex([`${self.url}/sitemap-deep.xml`]), 'text/xml'),
    '/sitemap-deep.xml': text(urlset([`${self.url}/b`]), 'text/xml'),
    '/not-a-sitemap.xml': html('<p>hello</p>'),
  }));
  broken = await startSite(() => ({
    '/robots.txt': text('oops', 'text/plain', 503),
    '/': html(article('Broken home')),
  }));
});

afterAll(async () => {
  await Promise.all([site.close(), other.close(), broken.close()]);
});

beforeEach(() => {
  for (const s of [site, other, broken]) {
    s.hits.length = 0;
    s.userAgents.length = 0;
  }
});

const urlsOf = (result: { pages: { url: string }[] }) => result.pages.map((page) => page.url);

describe('crawlWebsite: following links', () => {
  it('crawls same-site HTML pages breadth first, each once, honouring robots.txt', async () => {
    const result = await crawlWebsite({ startUrl: `${site.url}/`, maxPages: 50 });
    expect(urlsOf(result)).toEqual([`${site.url}/`, `${site.url}/a`, `${site.url}/b`, `${site.url}/c?lang=en`]);
    expect(result.errors).toEqual([{ url: `${site.url}/missing`, message: 'HTTP 404' }]);
    expect(result.pages[1]).toEqual({ url: `${site.url}/a`, title: 'Page', content: expect.stringContaining('Page A is described') });
    expect(site.hits.filter((hit) => hit === '/a')).toHaveLength(1);
    expect(site.hits.filter((hit) => hit === '/b')).toHaveLength(1);
    expect(site.hits).toContain('/logo.png');
    expect(site.hits.some((hit) => hit.startsWith('/private'))).toBe(false);
    expect(site.hits).not.toContain('/bots-keep-out');
    expect(other.hits).toEqual([]);
    expect(new Set(site.userAgents)).toEqual(new Set(['CommOpsBot']));
  });

  it('uses the given user agent for robots.txt rules and requests', async () => {
    const result = await crawlWebsite({ startUrl: site.url, maxPages: 50, userAgent: 'SomeoneElse/1.0' });
    expect(urlsOf(result)).toContain(`${site.url}/bots-keep-out`);
    expect(site.hits.some((hit) => hit.startsWith('/private'))).toBe(false);
    expect(new Set(site.userAgents)).toEqual(new Set(['SomeoneElse/1.0']));
  });

  it('stops at maxPages, keeping pages in link order', async () => {
    const result = await crawlWebsite({ startUrl: `${site.url}/`, maxPages: 2 });
    expect(urlsOf(result)).toEqual([`${site.url}/`, `${site.url}/a`]);
    expect(site.hits).not.toContain('/c?lang=en');
  });

  it('allows everything when robots.txt is missing', async () => {
    const result = await crawlWebsite({ startUrl: other.url, maxPages: 10 });
    expect(urlsOf(result)).toEqual([`${other.url}/`, `${other.url}/one`, `${other.url}/two`]);
    expect(result.errors).toEqual([]);
  });

  it('crawls nothing when robots.txt cannot be read', async () => {
    const result = await crawlWebsite({ startUrl: broken.url, maxPages: 10 });
    expect(result.pages).toEqual([]);
    expect(result.errors).toEqual([{ url: `${broken.url}/robots.txt`, message: expect.stringContaining('HTTP 503') }]);
    expect(broken.hits).toEqual(['/robots.txt']);
  });

  it('returns the error when the start URL fails', async () => {
    expect(await crawlWebsite({ startUrl: `${site.url}/missing`, maxPages: 10 })).toEqual({
      pages: [],
      errors: [{ url: `${site.url}/missing`, message: 'HTTP 404' }],
    });
    const refused = await startSite(() => ({}));
    await refused.close();
    const result = await crawlWebsite({ startUrl: refused.url, maxPages: 10 });
    expect(result.pages).toEqual([]);
    expect(result.errors).toEqual([{ url: `${refused.url}/robots.txt`, message: expect.stringMatching(/ECONNREFUSED/) }]);
    expect(await crawlWebsite({ startUrl: 'ftp://example.com/', maxPages: 10 })).toEqual({
      pages: [],
      errors: [{ url: 'ftp://example.com/', message: 'Not an absolute http(s) URL' }],
    });
  });

  it('reports a start URL that robots.txt disallows, redirects off the site, or is not HTML', async () => {
    const disallowed = await crawlWebsite({ startUrl: `${site.url}/private/secret`, maxPages: 10 });
    expect(disallowed.errors).toEqual([{ url: `${site.url}/private/secret`, message: 'Disallowed by robots.txt' }]);
    const away = await crawlWebsite({ startUrl: `${site.url}/away`, maxPages: 10 });
    expect(away.pages).toEqual([]);
    expect(away.errors).toEqual([{ url: `${site.url}/away`, message: `Redirected off the site to ${other.url}/landing` }]);
    expect(other.hits).toEqual([]);
    const image = await crawlWebsite({ startUrl: `${site.url}/logo.png`, maxPages: 10 });
    expect(image.errors).toEqual([{ url: `${site.url}/logo.png`, message: 'Not an HTML page (image/png)' }]);
  });

  it('follows same-site redirects and reports the final URL', async () => {
    const result = await crawlWebsite({ startUrl: `${site.url}/moved`, maxPages: 1 });
    expect(urlsOf(result)).toEqual([`${site.url}/b`]);
    const loop = await crawlWebsite({ startUrl: `${site.url}/loop`, maxPages: 1 });
    expect(loop.errors).toEqual([{ url: `${site.url}/loop`, message: `Redirected to ${site.url}/loop, which is crawled already` }]);
    const chain = await crawlWebsite({ startUrl: `${site.url}/chain`, maxPages: 1 });
    expect(chain.errors).toEqual([{ url: `${site.url}/chain`, message: 'More than 5 redirects' }]);
    expect(site.hits.filter((hit) => hit.startsWith('/chain'))).toHaveLength(6);
  });

  it('records pages over the size cap and pages that time out', async () => {
    for (const path of ['/big', '/big-chunked']) {
      const result = await crawlWebsite({ startUrl: `${site.url}${path}`, maxPages: 1, maxPageBytes: 10_000 });
      expect(result).toEqual({ pages: [], errors: [{ url: `${site.url}${path}`, message: 'Response larger than 10000 bytes' }] });
    }
    for (const path of ['/slow', '/slow-body']) {
      const slow = await crawlWebsite({ startUrl: `${site.url}${path}`, maxPages: 1, fetchTimeoutMs: 200 });
      expect(slow).toEqual({ pages: [], errors: [{ url: `${site.url}${path}`, message: 'Timed out after 200 ms' }] });
    }
  });

  it('rejects when aborted', async () => {
    await expect(crawlWebsite({ startUrl: site.url, maxPages: 10, signal: AbortSignal.abort() })).rejects.toThrow();
  });
});

describe('crawlWebsite: sitemaps', () => {
  it('crawls the URLs of a urlset without following links', async () => {
    const result = await crawlWebsite({ startUrl: site.url, sitemapUrl: `${site.url}/sitemap.xml`, maxPages: 10 });
    expect(urlsOf(result)).toEqual([`${site.url}/a`, `${site.url}/b`]);
    expect(result.errors).toEqual([{ url: `${site.url}/missing`, message: 'HTTP 404' }]);
    expect(site.hits).not.toContain('/');
    expect(site.hits).not.toContain('/c?lang=en');
    expect(site.hits.some((hit) => hit.startsWith('/private'))).toBe(false);
    expect(other.hits).toEqual([]);
  });

  it('reads a sitemap index one level deep when the start URL is the sitemap', async () => {
    const result = await crawlWebsite({ startUrl: `${site.url}/sitemap-index.xml`, maxPages: 10 });
    expect(urlsOf(result)).toEqual([`${site.url}/a`, `${site.url}/c`]);
    expect(result.errors).toEqual([{ url: `${site.url}/sitemap-gone.xml`, message: 'HTTP 404' }]);
    expect(site.hits).toContain('/sitemap-nested.xml');
    expect(site.hits).not.toContain('/sitemap-deep.xml');
    expect(other.hits).toEqual([]);
  });

  it('caps sitemap crawls at maxPages', async () => {
    const result = await crawlWebsite({ startUrl: `${site.url}/sitemap.xml`, maxPages: 1 });
    expect(urlsOf(result)).toEqual([`${site.url}/a`]);
  });

  it('reports a sitemap that is missing or not a sitemap', async () => {
    expect(await crawlWebsite({ startUrl: `${site.url}/nope.xml`, maxPages: 10 })).toEqual({
      pages: [],
      errors: [{ url: `${site.url}/nope.xml`, message: 'HTTP 404' }],
    });
    const result = await crawlWebsite({ startUrl: site.url, sitemapUrl: `${site.url}/not-a-sitemap.xml`, maxPages: 10 });
    expect(result.errors).toEqual([{ url: `${site.url}/not-a-sitemap.xml`, message: expect.stringContaining('Not a sitemap') }]);
  });

  it('parses namespaced sitemaps and decodes entities', () => {
    const xml = `<?xml version="1.0"?><sm:urlset xmlns:sm="http://www.sitemaps.org/schemas/sitemap/0.9">
      <sm:url><sm:loc> https://example.com/a?x=1&amp;y=2 </sm:loc></sm:url><sm:url><sm:loc>not a url</sm:loc></sm:url></sm:urlset>`;
    expect(parseSitemap(xml)).toEqual({ urls: ['https://example.com/a?x=1&y=2'], sitemaps: [] });
  });
});

describe('normalizeUrl', () => {
  it('strips fragments and default ports and keeps queries', () => {
    expect(normalizeUrl('HTTPS://Example.com:443/a/../b?q=1#frag')).toBe('https://example.com/b?q=1');
    expect(normalizeUrl('http://example.com:80')).toBe('http://example.com/');
    expect(normalizeUrl('http://example.com:8080/x')).toBe('http://example.com:8080/x');
    expect(normalizeUrl('/rel', 'http://example.com/dir/')).toBe('http://example.com/rel');
    expect(normalizeUrl('javascript:alert(1)')).toBeUndefined();
    expect(normalizeUrl('not a url')).toBeUndefined();
  });
});

describe('extractHtml', () => {
  const page = `<!doctype html><html><head><title>Guide &amp; Tips</title><script>var tracking = 1;</script><style>p { color: red }</style></head>
    <body>
      <nav><a href="/docs">Docs</a> <a href="/pricing">Pricing</a></nav>
      <header>Site header</header>
      <main><article>
        <h1>Getting started</h1>
        <p>This guide explains how to install &amp; configure the tool, with &quot;quotes&quot; and caf&eacute; &mdash; enough text for Readability.</p>
        <h2>Installation</h2>
        <p>Run the installer and   follow
          the prompts; it takes a minute or two on most machines and needs no extra setup.</p>
        <pre><code>npm install tool
  --save</code></pre>
        <h3>Options</h3>
        <ul><li>First <b>option</b></li><li>Second option<ul><li>Nested option</li></ul></li></ul>
        <ol><li>Step one</li><li>Step two</li></ol>
        <p>See <a href="options.html#advanced">advanced options</a> or <a href="https://other.example/page#x">elsewhere</a>.</p>
        <script>alert('inline')</script>
      </article></main>
      <footer>Copyright &copy; Example</footer>
      <a href="mailto:team@example.com">Mail</a> <a href="#top">Top</a>
    </body></html>`;

  it('keeps headings, paragraphs, lists and code as Markdown-ish text', () => {
    const { title, content } = extractHtml(page, 'https://site.example/guide/start');
    expect(title).toBe('Guide & Tips');
    expect(content).toContain('# Getting started\n\nThis guide explains how to install & configure the tool, with "quotes" and café — enough text');
    expect(content).toContain('## Installation\n\nRun the installer and follow the prompts;');
    expect(content).toContain('```\nnpm install tool\n  --save\n```');
    expect(content).toContain('### Options\n\n- First option\n- Second option\n  - Nested option\n\n- Step one\n- Step two');
    expect(content).toContain('See advanced options or elsewhere.');
    for (const removed of ['tracking', 'color: red', 'alert', 'Pricing', 'Site header', 'Copyright', '<', '&amp;', '&quot;']) {
      expect(content).not.toContain(removed);
    }
  });

  it('collects absolute http(s) links without fragments, resolved against the URL', () => {
    expect(extractHtml(page, 'https://site.example/guide/start').links).toEqual([
      'https://site.example/docs',
      'https://site.example/pricing',
      'https://site.example/guide/options.html',
      'https://other.example/page',
      'https://site.example/guide/start',
    ]);
    expect(extractHtml(page).links).toEqual(['https://other.example/page']);
  });

  it('falls back to the body text of tiny pages and fragments', () => {
    const tiny = extractHtml('<html><head><title>Tiny</title></head><body><nav>Menu</nav><header>Head</header><p>Hello &amp; bye</p><footer>Foot</footer><script>x()</script></body></html>');
    expect(tiny).toEqual({ title: 'Tiny', content: 'Hello & bye', links: [] });
    expect(extractHtml('<h1>Only a heading</h1><p>and a line<br>and another</p>').content).toBe('# Only a heading\n\nand a line\nand another');
    expect(extractHtml('', 'https://site.example/empty')).toEqual({ title: 'https://site.example/empty', content: '', links: [] });
  });

  it('takes the title from <title>, else the first h1, else the URL', () => {
    expect(extractHtml('<body><h1>Heading title</h1><p>text</p></body>').title).toBe('Heading title');
    expect(extractHtml('<body><p>text</p></body>', 'https://site.example/x').title).toBe('https://site.example/x');
  });
});

function buildPdf(pages: string[][], title?: string): Buffer {
  const objects: string[] = [];
  objects[1] = '<< /Type /Catalog /Pages 2 0 R >>';
  objects[2] = `<< /Type /Pages /Kids [${pages.map((_, i) => `${4 + i * 2} 0 R`).join(' ')}] /Count ${pages.length} >>`;
  objects[3] = '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>';
  pages.forEach((lines, i) => {
    const stream = `BT /F1 12 Tf 72 720 Td 14 TL ${lines.map((line) => `(${line}) Tj T*`).join(' ')} ET`;
    objects[4 + i * 2] = `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents ${5 + i * 2} 0 R >>`;
    objects[5 + i * 2] = `<< /Length ${stream.length} >>\nstream\n${stream}\nendstream`;
  });
  const infoId = objects.length;
  if (title) objects[infoId] = `<< /Title (${title}) >>`;
  let pdf = '%PDF-1.4\n';
  const offsets: number[] = [];
  for (let id = 1; id < objects.length; id++) {
    offsets[id] = pdf.length;
    pdf += `${id} 0 obj\n${objects[id]}\nendobj\n`;
  }
  const xrefOffset = pdf.length;
  pdf += `xref\n0 ${objects.length}\n0000000000 65535 f \n`;
  for (let id = 1; id < objects.length; id++) pdf += `${String(offsets[id]).padStart(10, '0')} 00000 n \n`;
  pdf += `trailer\n<< /Size ${objects.length} /Root 1 0 R${title ? ` /Info ${infoId} 0 R` : ''} >>\nstartxref\n${xrefOffset}\n%%EOF\n`;
  return Buffer.from(pdf, 'latin1');
}

describe('extractFile', () => {
  it('keeps Markdown as is, normalising line ends and NUL bytes, titled by its first # heading', async () => {
    const markdown = '```sh\r\n# not a title\r\n```\r\nIntro\r\n\r\n# Release notes\r\n\r\n## Added\u0000\r\n- things\r\n';
    expect(await extractFile({ fileName: 'notes.md', content: Buffer.from(markdown) })).toEqual({
      format: 'markdown',
      title: 'Release notes',
      content: '```sh\n# not a title\n```\nIntro\n\n# Release notes\n\n## Added\n- things\n',
    });
    expect((await extractFile({ fileName: 'untitled.markdown', content: 'no heading' })).title).toBe('untitled');
  });

  it('keeps text as is, titled by the file name', async () => {
    expect(await extractFile({ fileName: 'dir/read me.v2.TXT', content: Buffer.from('\uFEFFline 1\rline 2\r\n# not a title') })).toEqual({
      format: 'text',
      title: 'read me.v2',
      content: 'line 1\nline 2\n# not a title',
    });
  });

  it('extracts HTML files', async () => {
    const file = await extractFile({ fileName: 'page.htm', content: '<html><head><title>Handbook</title></head><body><nav>menu</nav><h2>Part</h2><p>Body &amp; soul</p></body></html>' });
    expect(file).toEqual({ format: 'html', title: 'Handbook', content: '## Part\n\nBody & soul' });
    const untitled = await extractFile({ fileName: 'page.html', content: '<p>just text</p>' });
    expect(untitled.title).toBe('page');
  });

  it('extracts PDF text page by page, titled by its metadata', async () => {
    const pdf = buildPdf([['Hello PDF world', 'Second line'], ['Page two text']], 'Quarterly report');
    expect(await extractFile({ fileName: 'report.pdf', content: pdf })).toEqual({
      format: 'pdf',
      title: 'Quarterly report',
      content: 'Hello PDF world\nSecond line\n\nPage two text',
    });
    const untitled = await extractFile({ fileName: 'scan', contentType: 'application/pdf', content: buildPdf([['Only words']]) });
    expect(untitled).toEqual({ format: 'pdf', title: 'scan', content: 'Only words' });
  });

  it('decides the format by content type when the extension says nothing', async () => {
    expect((await extractFile({ fileName: 'README', contentType: 'text/markdown; charset=utf-8', content: '# Hi' })).format).toBe('markdown');
    expect((await extractFile({ fileName: 'notes', contentType: 'text/plain', content: 'x' })).format).toBe('text');
    expect((await extractFile({ fileName: 'index', contentType: 'text/html', content: '<p>x</p>' })).format).toBe('html');
  });

  it('rejects unsupported types, naming the accepted ones', async () => {
    const error = await extractFile({ fileName: 'slides.pptx', content: Buffer.from('PK') }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnsupportedFileError);
    expect((error as Error).message).toMatch(/\.md.*\.txt.*\.html.*\.pdf/);
    await expect(extractFile({ fileName: 'blob', contentType: 'application/octet-stream', content: 'x' })).rejects.toBeInstanceOf(UnsupportedFileError);
  });

  it('rejects PDFs that cannot be parsed or hold no text', async () => {
    await expect(extractFile({ fileName: 'garbage.pdf', content: Buffer.from('this is not a PDF at all') })).rejects.toBeInstanceOf(UnreadableFileError);
    await expect(extractFile({ fileName: 'broken.pdf', content: Buffer.from('%PDF-1.4\n1 0 obj <<') })).rejects.toBeInstanceOf(UnreadableFileError);
    await expect(extractFile({ fileName: 'blank.pdf', content: buildPdf([[]]) })).rejects.toThrow(/no text/);
  });
});
