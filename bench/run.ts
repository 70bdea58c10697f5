// `npm run bench`: how fast is an authenticated workspace read compared with the bare HTTP ceiling?
//
// 1. Starts the real server (`node --import tsx src/main.ts`) as a child process on a free port, on PGlite in a
//    fresh temporary DATA_DIR, or, when DATABASE_URL is set, on a scratch PostgreSQL database made (and dropped
//    again) by test/helpers.ts. LOG_LEVEL=warn, TRUST_PROXY=1, RATE_LIMIT_FACTOR=1000000: the limiter still
//    writes its counter on every request, but a load test from one IP is never refused.
// 2. Seeds a workspace: an owner plus 20 members (each signed up from its own x-forwarded-for), so that
//    `GET /api/members` returns a realistic page of 20 rows.
// 3. Starts the ceiling (bench/ceiling-server.ts): a plain Fastify server in its own process answering with the
//    very bytes of that page. A separate process rather than a route in src/app.ts keeps bench-only code and
//    settings out of the product, and gives both servers the same conditions: their own process, same Fastify,
//    pino at warn, loaded over real TCP from this process.
// 4. Loads each in turn with autocannon (20 connections, a 2 s warm-up, then BENCH_SECONDS, default 10) and prints
//    req/s, p50 and p99 latency, non-2xx counts and the ratio API/ceiling (the target is at least 15%). The figures
//    also go to bench/results/latest-<pglite|postgres>.json.
// 5. The knowledge base (bench/content.ts; BENCH_CONTENT=0 skips it): publish-to-searchable latency, then
//    BENCH_ARTICLES (10,000) published articles seeded through the API and searched.
// 6. Inbound webhooks (bench/webhooks.ts; BENCH_WEBHOOKS=0 skips it): signed WhatsApp deliveries per second
//    accepted, and messages stored per second once the queue has caught up.
// 7. The inbox (bench/inbox.ts, PostgreSQL only; BENCH_INBOX=0 skips it): first pages and totals of contacts and
//    conversations over 1,000,000 contacts and 100,000 conversations seeded with generate_series.
// BENCH_CPU_PROF=1 runs the API server with --cpu-prof; the profile lands in bench/results/profiles/.
// Every child process is stopped at the end, on error too.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { availableParallelism, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { benchContent, printContentFigures } from './content.js';
import { benchInbox, printInboxFigures } from './inbox.js';
import { benchWebhooks, printWebhookFigures } from './webhooks.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const WARMUP_SECONDS = 2;
const CONNECTIONS = 20;
const MEMBERS = 20;
const TARGET = 0.15;
const RATE_LIMIT_FACTOR = '1000000';
const SESSION_COOKIE = 'service-auth.session_token';
const PASSWORD = 'correct horse battery';

const benchDir = dirname(fileURLToPath(import.meta.url));
const rootDir = dirname(benchDir);
const resultsDir = join(benchDir, 'results');

type Cleanup = () => Promise<void> | void;

interface DatabaseSetup {
  kind: 'pglite' | 'postgres';
  env: Record<string, string>;
}

interface Server {
  url: string;
  stop(): Promise<void>;
}

interface Figures {
  route: string;
  reqPerSec: number;
  p50: number;
  p99: number;
  ok: number;
  non2xx: number;
  errors: number;
}

// ---------- processes ----------

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}

function waitForExit(child: ChildProcess, ms: number): Promise<boolean> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  if (!(await waitForExit(child, 10_000))) {
    child.kill('SIGKILL');
    await waitForExit(child, 5_000);
  }
}

/** Polls `readyUrl` until it answers 200; fails if the child exits first or after a minute. */
async function waitUntilReady(name: string, child: ChildProcess, readyUrl: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${name} exited with code ${child.exitCode} before it was ready`);
    try {
      const res = await fetch(readyUrl);
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${name} was not ready within 60 s`);
}

/** Runs `node --import tsx <script>` from the project root with `env` added, and waits until `readyPath` answers. */
async function startServer(
  name: string,
  script: string,
  env: Record<string, string>,
  readyPath: string,
  cleanups: Cleanup[],
  nodeFlags: string[] = [],
): Promise<Server> {
  const port = await freePort();
  const child = spawn(process.execPath, [...nodeFlags, '--import', 'tsx', script], {
    cwd: rootDir,
    env: { ...process.env, ...env, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const stop = () => stopChild(child);
  cleanups.push(stop);
  const url = `http://127.0.0.1:${port}`;
  await waitUntilReady(name, child, url + readyPath);
  return { url, stop };
}

// ---------- database ----------

async function prepareDatabase(cleanups: Cleanup[]): Promise<DatabaseSetup> {
  const serverUrl = process.env.DATABASE_URL;
  if (serverUrl) {
    const { createScratchDatabase } = await import('../test/helpers.js');
    const scratch = await createScratchDatabase(serverUrl);
    cleanups.push(scratch.drop);
    return { kind: 'postgres', env: { DATABASE_URL: scratch.url, AUTH_SECRET: randomBytes(32).toString('hex') } };
  }
  const dataDir = mkdtempSync(join(tmpdir(), 'commops-bench-'));
  cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
  return { kind: 'pglite', env: { DATA_DIR: dataDir } };
}

// ---------- seed ----------

let ipCounter = 0;
/** A distinct client address for each sign-up (the server trusts one proxy hop). */
const nextIp = () => `10.77.${Math.floor(++ipCounter / 250)}.${(ipCounter % 250) + 1}`;

async function call(url: string, init: RequestInit & { headers?: Record<string, string> }) {
  const res = await fetch(url, init);
  const text = await res.text();
  return { res, text };
}

async function signUp(baseUrl: string, name: string): Promise<{ email: string; cookie: string }> {
  const email = `${name.toLowerCase().replace(/\W+/g, '.')}-${randomBytes(4).toString('hex')}@example.test`;
  const { res, text } = await call(`${baseUrl}/api/auth/sign-up/email`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-forwarded-for': nextIp() },
    body: JSON.stringify({ email, password: PASSWORD, name }),
  });
  if (res.status !== 200) throw new Error(`sign-up of ${name} failed: ${res.status} ${text}`);
  const token = res.headers
    .getSetCookie()
    .find((c) => c.startsWith(`${SESSION_COOKIE}=`))
    ?.split(';', 1)[0];
  if (!token) throw new Error(`sign-up of ${name} set no session cookie`);
  return { email, cookie: token };
}

const FIRST = ['Ada', 'Grace', 'Alan', 'Edsger', 'Barbara', 'Donald', 'Margaret', 'Ken', 'Frances', 'Dennis'];
const LAST = ['Lovelace', 'Hopper', 'Turing', 'Dijkstra', 'Liskov', 'Knuth', 'Hamilton', 'Thompson', 'Allen', 'Ritchie'];
const ROLES = ['admin', 'agent', 'viewer'] as const;

/** An owner and MEMBERS members in the owner's "Default" workspace; returns the owner's request headers and the page. */
async function seedWorkspace(baseUrl: string): Promise<{ headers: Record<string, string>; body: string }> {
  const owner = await signUp(baseUrl, 'Olivia Owner');
  const me = await call(`${baseUrl}/api/me`, { headers: { cookie: owner.cookie } });
  if (me.res.status !== 200) throw new Error(`GET /api/me failed: ${me.res.status} ${me.text}`);
  const workspaceId: string = JSON.parse(me.text).organizations[0].workspaces[0].id;
  const headers = { cookie: owner.cookie, 'x-workspace-id': workspaceId };

  for (let i = 0; i < MEMBERS; i++) {
    const member = await signUp(baseUrl, `${FIRST[i % FIRST.length]} ${LAST[(i * 3) % LAST.length]} ${i + 1}`);
    const added = await call(`${baseUrl}/api/members`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({ email: member.email, role: ROLES[i % ROLES.length] }),
    });
    if (added.res.status !== 201) throw new Error(`adding member ${i + 1} failed: ${added.res.status} ${added.text}`);
  }

  const page = await call(`${baseUrl}/api/members`, { headers });
  if (page.res.status !== 200) throw new Error(`GET /api/members failed: ${page.res.status} ${page.text}`);
  const rows = JSON.parse(page.text).items.length;
  if (rows !== MEMBERS) throw new Error(`expected a page of ${MEMBERS} members, got ${rows}`);
  return { headers, body: page.text };
}

// ---------- load ----------

async function load(route: string, url: string, headers: Record<string, string>): Promise<Figures> {
  await autocannon({ url, headers, connections: CONNECTIONS, duration: WARMUP_SECONDS });
  const r = await autocannon({ url, headers, connections: CONNECTIONS, duration: SECONDS });
  return {
    route,
    reqPerSec: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    ok: r['2xx'],
    non2xx: r.non2xx,
    errors: r.errors,
  };
}

/**
 * autocannon drops its sockets when it stops; the server may still be running the handlers of those last
 * requests, and a SIGTERM now would close the database under them. Give them a moment first.
 */
const settle = () => new Promise((resolve) => setTimeout(resolve, 1000));

function mostlyFailed(f: Figures): boolean {
  return f.ok < (f.ok + f.non2xx + f.errors) / 2;
}

// ---------- report ----------

function printTable(rows: Figures[]): void {
  const header = ['route', 'req/s', 'p50 ms', 'p99 ms', '2xx', 'non-2xx', 'errors'];
  const lines = rows.map((f) => [
    f.route,
    f.reqPerSec.toFixed(0),
    String(f.p50),
    String(f.p99),
    String(f.ok),
    String(f.non2xx),
    String(f.errors),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const format = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  console.log(format(header));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const line of lines) console.log(format(line));
}

// ---------- main ----------

async function runBench(cleanups: Cleanup[]): Promise<boolean> {
  const database = await prepareDatabase(cleanups);
  const profile = process.env.BENCH_CPU_PROF === '1';
  const profileDir = join(resultsDir, 'profiles');
  if (profile) mkdirSync(profileDir, { recursive: true });
  const api = await startServer(
    'API server',
    'src/main.ts',
    { ...database.env, TRUST_PROXY: '1', RATE_LIMIT_FACTOR },
    '/api/health',
    cleanups,
    profile ? ['--cpu-prof', '--cpu-prof-dir', profileDir] : [],
  );
  const seed = await seedWorkspace(api.url);

  const scratchDir = mkdtempSync(join(tmpdir(), 'commops-bench-ceiling-'));
  cleanups.push(() => rmSync(scratchDir, { recursive: true, force: true }));
  const bodyFile = join(scratchDir, 'body.json');
  writeFileSync(bodyFile, seed.body);
  const ceiling = await startServer('ceiling server', 'bench/ceiling-server.ts', { CEILING_BODY_FILE: bodyFile }, '/bench/ceiling', cleanups);
  const ceilingBody = await (await fetch(`${ceiling.url}/bench/ceiling`)).text();
  if (ceilingBody !== seed.body) throw new Error('the ceiling does not answer the bytes of the members page');

  const bytes = Buffer.byteLength(seed.body);
  console.log(`database: ${database.kind} | node ${process.version} | ${availableParallelism()} CPUs`);
  console.log(`server: LOG_LEVEL=warn, TRUST_PROXY=1, AUTH_CACHE_SECONDS=${process.env.AUTH_CACHE_SECONDS ?? '5 (default)'}`);
  console.log(
    `rate limits: RATE_LIMIT_FACTOR=${RATE_LIMIT_FACTOR} (the limiter still writes its counter on every request, but never refuses)`,
  );
  console.log(
    `load: autocannon, ${CONNECTIONS} connections, ${WARMUP_SECONDS} s warm-up then ${SECONDS} s per route, one after the other`,
  );
  console.log(`response body: ${bytes} bytes (${MEMBERS} members) on both routes\n`);

  const ceilingFigures = await load('GET /bench/ceiling (ceiling)', `${ceiling.url}/bench/ceiling`, {});
  await ceiling.stop();
  const apiFigures = await load('GET /api/members', `${api.url}/api/members`, seed.headers);
  await settle();
  // Each later part prints as soon as it is measured, so a failure further on does not lose it.
  const content = process.env.BENCH_CONTENT === '0' ? undefined : await benchContent(api.url, seed.headers);
  if (content) printContentFigures(content);
  await settle();
  const webhooks = process.env.BENCH_WEBHOOKS === '0' ? undefined : await benchWebhooks(api.url, seed.headers, database.env.DATABASE_URL);
  if (webhooks) printWebhookFigures(webhooks);
  await settle();
  const inbox =
    database.kind === 'postgres' && process.env.BENCH_INBOX !== '0'
      ? await benchInbox(api.url, seed.headers, database.env.DATABASE_URL!)
      : undefined;
  if (inbox) printInboxFigures(inbox);
  await settle();
  await api.stop();

  printTable([ceilingFigures, apiFigures]);
  const ratio = apiFigures.reqPerSec / ceilingFigures.reqPerSec;
  const verdict = ratio >= TARGET ? 'meets' : 'BELOW';
  console.log(`\nratio: ${(ratio * 100).toFixed(1)}% (${verdict} the ${TARGET * 100}% target)`);

  const file = join(resultsDir, `latest-${database.kind}.json`);
  mkdirSync(resultsDir, { recursive: true });
  const report = {
    date: new Date().toISOString(),
    database: database.kind,
    node: process.version,
    cpus: availableParallelism(),
    connections: CONNECTIONS,
    warmupSeconds: WARMUP_SECONDS,
    seconds: SECONDS,
    bodyBytes: bytes,
    rateLimitFactor: Number(RATE_LIMIT_FACTOR),
    ceiling: ceilingFigures,
    api: apiFigures,
    ratio,
    target: TARGET,
    content,
    webhooks,
    inbox,
  };
  writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
  console.log(`figures written to ${file}`);

  const failed = [ceilingFigures, apiFigures].filter(mostlyFailed);
  for (const f of failed) console.error(`FAILED: most responses of ${f.route} were not 2xx (${f.non2xx} non-2xx, ${f.errors} errors)`);
  return failed.length === 0;
}

async function runCleanups(cleanups: Cleanup[]): Promise<void> {
  for (const cleanup of cleanups.reverse()) {
    try {
      await cleanup();
    } catch (error) {
      console.error('cleanup failed:', error);
    }
  }
  cleanups.length = 0;
}

async function main(): Promise<void> {
  const cleanups: Cleanup[] = [];
  const interrupt = (signal: NodeJS.Signals) => {
    console.error(`\n${signal}: stopping servers`);
    void runCleanups(cleanups).finally(() => process.exit(130));
  };
  process.once('SIGINT', interrupt);
  process.once('SIGTERM', interrupt);
  let ok = false;
  try {
    ok = await runBench(cleanups);
  } catch (error) {
    console.error('bench failed:', error);
  } finally {
    await runCleanups(cleanups);
  }
  process.exitCode = ok ? 0 : 1;
}

await main();
