// The knowledge-base part of `npm run bench`: publish-to-searchable latency through the real queue, and search
// latency over a workspace of many published articles (BENCH_ARTICLES, default 10,000).
import autocannon from 'autocannon';

const ARTICLES = Number(process.env.BENCH_ARTICLES ?? 10_000);
const SEED_CONCURRENCY = 16;
const LATENCY_SAMPLES = 30;
const SEARCH_SECONDS = Number(process.env.BENCH_SEARCH_SECONDS ?? 5);

export interface ContentFigures {
  articles: number;
  seedSeconds: number;
  indexSeconds: number;
  publishToSearchable: { p50: number; p95: number; max: number; samples: number };
  search: { query: string; matches: number; connections: number; reqPerSec: number; p50: number; p99: number }[];
}

/**
 * What people type into a help-centre search: mostly one or two specific words, sometimes an article's title.
 * Words are drawn uniformly from the vocabulary (so, like real queries, most are specific and a few common).
 */
function queryMix(count: number): string[] {
  return Array.from({ length: count }, (_, i) => {
    const word = () => VOCABULARY[Math.floor(random() * VOCABULARY.length)]!;
    if (i % 4 === 0) return `${word()} ${word()}`;
    if (i % 4 === 1) return `article ${Math.floor(random() * ARTICLES)}`;
    return word();
  });
}

type Headers = Record<string, string>;

// A fixed vocabulary drawn with a Zipf-like skew: a few words occur in most articles, most words in few.
const SYLLABLES = ['ka', 'lo', 'mi', 'ren', 'to', 'sa', 'vu', 'pe', 'dor', 'qui', 'ma', 'zel', 'fo', 'ni', 'bra', 'tu'];
const VOCABULARY = Array.from({ length: 4000 }, (_, i) => {
  let word = '';
  for (let n = i + 7; n > 0; n = Math.floor(n / SYLLABLES.length)) word += SYLLABLES[n % SYLLABLES.length];
  return word;
});
let seed = 42;
const random = () => {
  seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
  return seed / 2 ** 31;
};
const zipfWord = () => VOCABULARY[Math.min(VOCABULARY.length - 1, Math.floor(VOCABULARY.length * random() ** 3))]!;

function articleBody(bytes: number, token: string): string {
  const sections: string[] = [];
  let length = 0;
  for (let s = 0; length < bytes; s++) {
    const paragraph = Array.from({ length: 40 }, zipfWord).join(' ');
    const text = `## Section ${s} ${zipfWord()}\n\nAccount help ${token}. ${paragraph}.`;
    sections.push(text);
    length += text.length;
  }
  return sections.join('\n\n');
}

async function api(base: string, method: string, path: string, headers: Headers, body?: unknown) {
  const res = await fetch(base + path, {
    method,
    headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : undefined;
}

async function publish(base: string, headers: Headers, title: string, body: string): Promise<{ id: string; publishedAt: number }> {
  const article = await api(base, 'POST', '/api/content/articles', headers, { title, body });
  const publishedAt = performance.now();
  await api(base, 'PATCH', `/api/content/articles/${article.id}/status`, headers, { status: 'published' });
  return { id: article.id, publishedAt };
}

const searchTotal = async (base: string, headers: Headers, q: string): Promise<number> =>
  (await api(base, 'GET', `/api/content/search?q=${encodeURIComponent(q)}&limit=1`, headers)).total;

async function waitForTotal(base: string, headers: Headers, q: string, total: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while ((await searchTotal(base, headers, q)) < total) {
    if (Date.now() > deadline) throw new Error(`search for ${q} did not reach ${total} within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;

export async function benchContent(base: string, headers: Headers): Promise<ContentFigures> {
  // 1. Publish-to-searchable, on an empty index first: create (untimed), publish, poll search every 5 ms.
  const latencies: number[] = [];
  for (let i = 0; i < LATENCY_SAMPLES; i++) {
    const token = `latency${i}x${Math.floor(random() * 1e9)}`;
    const { publishedAt } = await publish(base, headers, `Latency probe ${i}`, articleBody(5 * 1024, token));
    while ((await searchTotal(base, headers, token)) === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    latencies.push(performance.now() - publishedAt);
  }
  latencies.sort((a, b) => a - b);

  // 2. Seed ARTICLES published articles of 1–5 KB through the API, SEED_CONCURRENCY at a time.
  const seedStarted = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: SEED_CONCURRENCY }, async () => {
      while (next < ARTICLES) {
        const i = next++;
        await publish(base, headers, `Article ${i} about ${zipfWord()}`, articleBody(1024 + Math.floor(random() * 4096), `seedtoken${i}`));
      }
    }),
  );
  const seeded = performance.now();
  await waitForTotal(base, headers, 'account', ARTICLES + LATENCY_SAMPLES, 30 * 60_000);
  const indexed = performance.now();

  // 3. Search latency: one connection (latency as a user sees it) and 20 (throughput under load).
  const queries = [
    { query: `seedtoken${Math.floor(ARTICLES / 2)}`, label: 'one match' },
    { query: VOCABULARY[600]!, label: 'rare word' },
    { query: VOCABULARY[40]!, label: 'frequent word' },
    { query: 'account help', label: 'in every article' },
  ];
  const search: ContentFigures['search'] = [];
  for (const { query } of queries) {
    const matches = await searchTotal(base, headers, query);
    for (const connections of [1, 20]) {
      const url = `${base}/api/content/search?q=${encodeURIComponent(query)}&limit=10`;
      await autocannon({ url, headers, connections, duration: 1 });
      const r = await autocannon({ url, headers, connections, duration: SEARCH_SECONDS });
      if (r.non2xx > 0 || r.errors > 0) throw new Error(`search ${query}: ${r.non2xx} non-2xx, ${r.errors} errors`);
      search.push({ query, matches, connections, reqPerSec: r.requests.average, p50: r.latency.p50, p99: r.latency.p99 });
    }
  }
  for (const connections of [1, 20]) {
    const requests = queryMix(500).map((q) => ({ method: 'GET' as const, path: `/api/content/search?q=${encodeURIComponent(q)}&limit=10` }));
    const options = { url: base, headers, connections, requests };
    await autocannon({ ...options, duration: 1 });
    const r = await autocannon({ ...options, duration: SEARCH_SECONDS * 2 });
    if (r.non2xx > 0 || r.errors > 0) throw new Error(`search mix: ${r.non2xx} non-2xx, ${r.errors} errors`);
    search.push({ query: 'mix of 500 queries', matches: -1, connections, reqPerSec: r.requests.average, p50: r.latency.p50, p99: r.latency.p99 });
  }
  return {
    articles: ARTICLES,
    seedSeconds: (seeded - seedStarted) / 1000,
    indexSeconds: (indexed - seedStarted) / 1000,
    publishToSearchable: {
      p50: percentile(latencies, 50),
      p95: percentile(latencies, 95),
      max: latencies.at(-1)!,
      samples: latencies.length,
    },
    search,
  };
}

export function printContentFigures(f: ContentFigures): void {
  const ms = (n: number) => `${n.toFixed(1)} ms`;
  console.log('\nknowledge base');
  console.log(
    `publish → searchable (5 KB article, ${f.publishToSearchable.samples} samples): p50 ${ms(f.publishToSearchable.p50)}, p95 ${ms(f.publishToSearchable.p95)}, max ${ms(f.publishToSearchable.max)}`,
  );
  console.log(
    `seeded ${f.articles} published articles (1–5 KB) through the API in ${f.seedSeconds.toFixed(1)} s; all searchable after ${f.indexSeconds.toFixed(1)} s`,
  );
  console.log('search (limit 10)                      matches  conns    req/s  p50 ms  p99 ms');
  for (const s of f.search) {
    console.log(
      `${s.query.padEnd(38)} ${(s.matches < 0 ? 'varied' : String(s.matches)).padStart(7)}  ${String(s.connections).padStart(5)}  ${s.reqPerSec.toFixed(0).padStart(7)}  ${String(s.p50).padStart(6)}  ${String(s.p99).padStart(6)}`,
    );
  }
}
