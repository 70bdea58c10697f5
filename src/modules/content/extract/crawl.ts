import { XMLParser } from 'fast-xml-parser';
import robotsParserModule from 'robots-parser';
import { extractHtml } from './html.js';

// robots-parser is CommonJS but its typings declare an ES default export, so under NodeNext
// TypeScript types the default import as the module object; at runtime it is the function itself.
const robotsParser = robotsParserModule as unknown as typeof robotsParserModule.default;

export interface CrawlOptions {
  startUrl: string;
  sitemapUrl?: string;
  maxPages: number;
  userAgent?: string;
  fetchTimeoutMs?: number;
  maxPageBytes?: number;
  signal?: AbortSignal;
}

export interface CrawledPage {
  url: string;
  title: string;
  content: string;
}

export interface CrawlError {
  url: string;
  message: string;
}

export interface CrawlResult {
  pages: CrawledPage[];
  errors: CrawlError[];
}

export const DEFAULT_USER_AGENT = 'CommOpsBot';
const DEFAULT_FETCH_TIMEOUT_MS = 10_000;
const DEFAULT_MAX_PAGE_BYTES = 2 * 1024 * 1024;
// The sitemap protocol allows files of up to 50 MB.
const MAX_SITEMAP_BYTES = 50 * 1024 * 1024;
const CONCURRENCY = 4;
const MAX_REDIRECTS = 5;
const HTML_TYPES = new Set(['text/html', 'application/xhtml+xml']);

interface FetchedPage extends CrawledPage {
  links: string[];
}

/** A response that is not a page of the site; reported only for the start URL. */
class SkippedPage extends Error {}

export async function crawlWebsite(options: CrawlOptions): Promise<CrawlResult> {
  const sitemapUrl = options.sitemapUrl ?? (isXmlUrl(options.startUrl) ? options.startUrl : undefined);
  const entryUrl = normalizeUrl(sitemapUrl ?? options.startUrl);
  if (!entryUrl) return { pages: [], errors: [{ url: sitemapUrl ?? options.startUrl, message: 'Not an absolute http(s) URL' }] };
  const crawler = new SiteCrawler(options, new URL(entryUrl).origin);
  await (sitemapUrl ? crawler.crawlSitemap(entryUrl) : crawler.crawlFrom(entryUrl));
  return crawler.result();
}

/** Absolute http(s) URL without fragment (and, through URL, without default port); undefined otherwise. */
export function normalizeUrl(raw: string, base?: string): string | undefined {
  try {
    const url = new URL(raw.trim(), base);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
    url.hash = '';
    return url.href;
  } catch {
    return undefined;
  }
}

class SiteCrawler {
  private readonly pages: CrawledPage[] = [];
  private readonly errors: CrawlError[] = [];
  private readonly seen = new Set<string>();
  private readonly userAgent: string;
  private readonly timeoutMs: number;
  private readonly maxPageBytes: number;
  private isAllowed: (url: string) => boolean = () => true;
  private startUrl?: string;

  constructor(
    private readonly options: CrawlOptions,
    private readonly origin: string,
  ) {
    this.userAgent = options.userAgent ?? DEFAULT_USER_AGENT;
    this.timeoutMs = options.fetchTimeoutMs ?? DEFAULT_FETCH_TIMEOUT_MS;
    this.maxPageBytes = options.maxPageBytes ?? DEFAULT_MAX_PAGE_BYTES;
  }

  result(): CrawlResult {
    return { pages: this.pages, errors: this.errors };
  }

  async crawlFrom(startUrl: string): Promise<void> {
    this.startUrl = startUrl;
    if (!(await this.loadRobots())) return;
    if (!this.admit(startUrl)) {
      this.errors.push({ url: startUrl, message: 'Disallowed by robots.txt' });
      return;
    }
    let frontier = [startUrl];
    while (frontier.length > 0 && this.pages.length < this.options.maxPages) {
      const found = await this.crawlLevel(frontier);
      frontier = this.unseenLinks(found);
    }
  }

  async crawlSitemap(sitemapUrl: string): Promise<void> {
    if (!(await this.loadRobots())) return;
    const urls = await this.readSitemap(sitemapUrl, true).catch((error: unknown) => {
      this.recordError(sitemapUrl, error);
      return [];
    });
    await this.crawlLevel(urls.filter((url) => this.admit(url)));
  }

  /** Visits the URLs concurrently and keeps, in list order, as many pages as the cap still allows. */
  private async crawlLevel(urls: string[]): Promise<FetchedPage[]> {
    const remaining = this.options.maxPages - this.pages.length;
    const found: FetchedPage[] = [];
    let foundCount = 0;
    await forEachConcurrently(urls, CONCURRENCY, async (url, index) => {
      if (foundCount >= remaining || this.options.signal?.aborted) return;
      const page = await this.visit(url);
      if (page) {
        found[index] = page;
        foundCount++;
      }
    });
    this.options.signal?.throwIfAborted();
    const kept = found.filter(Boolean).slice(0, remaining);
    this.pages.push(...kept.map(({ url, title, content }) => ({ url, title, content })));
    return kept;
  }

  private unseenLinks(pages: FetchedPage[]): string[] {
    return pages.flatMap((page) => page.links).filter((url) => this.admit(url));
  }

  /** Marks the URL as seen; true when it was new, is on the site and robots.txt allows it. */
  private admit(url: string): boolean {
    if (this.seen.has(url) || !this.isOnSite(url)) return false;
    this.seen.add(url);
    return this.isAllowed(url);
  }

  private async visit(url: string): Promise<FetchedPage | undefined> {
    try {
      return await this.fetchPage(url);
    } catch (error) {
      if (!(error instanceof SkippedPage) || url === this.startUrl) this.recordError(url, error);
      return undefined;
    }
  }

  private async fetchPage(url: string): Promise<FetchedPage> {
    const { response, finalUrl } = await this.fetchOnSite(url, this.requestSignal());
    if (!response.ok) throw await failedResponse(response);
    const type = mediaType(response);
    if (!HTML_TYPES.has(type)) throw await skipped(response, `Not an HTML page (${type || 'no content type'})`);
    const html = decode(await readBody(response, this.maxPageBytes), response);
    const { title, content, links } = extractHtml(html, finalUrl);
    return { url: finalUrl, title, content, links };
  }

  /** Follows redirects by hand so that no request ever leaves the site or enters a disallowed path. */
  private async fetchOnSite(url: string, signal: AbortSignal): Promise<{ response: Response; finalUrl: string }> {
    let current = url;
    for (let redirects = 0; redirects <= MAX_REDIRECTS; redirects++) {
      const response = await fetch(current, { redirect: 'manual', signal, headers: this.headers() });
      const location = response.headers.get('location');
      if (response.status < 300 || response.status > 399 || !location) return { response, finalUrl: current };
      await response.body?.cancel();
      const next = normalizeUrl(location, current);
      if (!next || !this.isOnSite(next)) throw new SkippedPage(`Redirected off the site to ${location}`);
      if (!this.isAllowed(next)) throw new SkippedPage(`Redirected to ${next}, which robots.txt disallows`);
      if (!this.claim(next)) throw new SkippedPage(`Redirected to ${next}, which is crawled already`);
      current = next;
    }
    throw new Error(`More than ${MAX_REDIRECTS} redirects`);
  }

  private claim(url: string): boolean {
    if (this.seen.has(url)) return false;
    this.seen.add(url);
    return true;
  }

  /** RFC 9309: a missing robots.txt (4xx) allows everything, an unreachable one disallows everything (false). */
  private async loadRobots(): Promise<boolean> {
    const robotsUrl = `${this.origin}/robots.txt`;
    try {
      const response = await fetch(robotsUrl, { signal: this.requestSignal(), headers: this.headers() });
      if (response.status >= 400 && response.status < 500) {
        await response.body?.cancel();
        return true;
      }
      if (!response.ok) throw await failedResponse(response);
      const robots = robotsParser(robotsUrl, decode(await readBody(response, this.maxPageBytes), response));
      this.isAllowed = (url) => robots.isAllowed(url, this.userAgent) !== false;
      return true;
    } catch (error) {
      this.options.signal?.throwIfAborted();
      this.errors.push({ url: robotsUrl, message: `robots.txt could not be read, so nothing is crawled: ${describeError(error, this.timeoutMs)}` });
      return false;
    }
  }

  private async readSitemap(sitemapUrl: string, followIndex: boolean): Promise<string[]> {
    const { response } = await this.fetchOnSite(sitemapUrl, this.requestSignal());
    if (!response.ok) throw await failedResponse(response);
    const { urls, sitemaps } = parseSitemap(decode(await readBody(response, MAX_SITEMAP_BYTES), response));
    if (!followIndex) return urls;
    const nested: string[][] = [];
    await forEachConcurrently(sitemaps.filter((url) => this.isOnSite(url)), CONCURRENCY, async (url, index) => {
      nested[index] = await this.readSitemap(url, false).catch((error: unknown) => {
        this.recordError(url, error);
        return [];
      });
    });
    return [...urls, ...nested.flat()];
  }

  private isOnSite(url: string): boolean {
    return new URL(url).origin === this.origin;
  }

  private requestSignal(): AbortSignal {
    const timeout = AbortSignal.timeout(this.timeoutMs);
    return this.options.signal ? AbortSignal.any([this.options.signal, timeout]) : timeout;
  }

  private headers(): Record<string, string> {
    return { 'user-agent': this.userAgent, accept: 'text/html,application/xhtml+xml;q=0.9,*/*;q=0.8' };
  }

  private recordError(url: string, error: unknown): void {
    this.errors.push({ url, message: describeError(error, this.timeoutMs) });
  }
}

const sitemapParser = new XMLParser({
  ignoreAttributes: true,
  removeNSPrefix: true,
  parseTagValue: false,
  isArray: (name) => name === 'url' || name === 'sitemap',
});

/** Page URLs of a <urlset>, or nested sitemap URLs of a <sitemapindex>. */
export function parseSitemap(xml: string): { urls: string[]; sitemaps: string[] } {
  const parsed = sitemapParser.parse(xml) as { urlset?: { url?: unknown[] }; sitemapindex?: { sitemap?: unknown[] } };
  if (!parsed.urlset && !parsed.sitemapindex) throw new Error('Not a sitemap: no <urlset> or <sitemapindex>');
  return { urls: locations(parsed.urlset?.url), sitemaps: locations(parsed.sitemapindex?.sitemap) };
}

function locations(entries: unknown[] | undefined): string[] {
  const urls = (entries ?? []).map((entry) => normalizeUrl(String((entry as { loc?: unknown } | null)?.loc ?? '')));
  return urls.filter((url): url is string => url !== undefined);
}

async function readBody(response: Response, maxBytes: number): Promise<Uint8Array> {
  const tooLarge = () => new Error(`Response larger than ${maxBytes} bytes`);
  if (Number(response.headers.get('content-length')) > maxBytes) {
    await response.body?.cancel();
    throw tooLarge();
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of response.body ?? []) {
    size += chunk.byteLength;
    if (size > maxBytes) throw tooLarge();
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

function decode(body: Uint8Array, response: Response): string {
  const charset = /charset=["']?([^;"'\s]+)/i.exec(response.headers.get('content-type') ?? '')?.[1];
  try {
    return new TextDecoder(charset ?? 'utf-8').decode(body);
  } catch {
    return new TextDecoder().decode(body);
  }
}

function mediaType(response: Response): string {
  return (response.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
}

async function skipped(response: Response, reason: string): Promise<SkippedPage> {
  await response.body?.cancel();
  return new SkippedPage(reason);
}

async function failedResponse(response: Response): Promise<Error> {
  await response.body?.cancel();
  return new Error(`HTTP ${response.status}`);
}

function describeError(error: unknown, timeoutMs: number): string {
  if (!(error instanceof Error)) return String(error);
  if (error.name === 'TimeoutError') return `Timed out after ${timeoutMs} ms`;
  const cause = error.cause instanceof Error ? error.cause : undefined;
  const code = (cause as { code?: unknown } | undefined)?.code;
  return cause ? `${error.message}: ${typeof code === 'string' ? code : cause.message}` : error.message;
}

function isXmlUrl(url: string): boolean {
  try {
    return new URL(url).pathname.toLowerCase().endsWith('.xml');
  } catch {
    return false;
  }
}

async function forEachConcurrently<T>(items: T[], limit: number, task: (item: T, index: number) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      await task(items[index]!, index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}
