// Real server processes, started as an operator would (`node --import tsx src/main.ts`): restarts on one PGlite
// DATA_DIR, its lock file, SIGTERM, configuration errors, and (when DATABASE_URL is set) several processes on one
// PostgreSQL database behaving as one service.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request as httpRequest } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SESSION_COOKIE } from '../src/auth/auth.js';
import { createScratchDatabase, PASSWORD, randomIp, uniqueEmail } from './helpers.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
/** Every variable src/config.ts reads: none leaks from the test runner's environment into a child. */
const CONFIG_VARIABLES = [
  'PORT',
  'HOST',
  'DATA_DIR',
  'DATABASE_URL',
  'BASE_URL',
  'APP_URL',
  'AUTH_SECRET',
  'SMTP_URL',
  'MAIL_FROM',
  'TRUST_PROXY',
  'LOG_LEVEL',
  'RATE_LIMIT_FACTOR',
  'AUTH_CACHE_SECONDS',
  'WORKERS',
  'JOB_POLL_SECONDS',
  'GRAPH_API_URL',
];
const START_TIMEOUT_MS = 30_000;
const STOP_TIMEOUT_MS = 10_000;
/** A line of a JavaScript stack trace. */
const STACK_LINE = /^\s+at \S/m;

const children = new Set<ChildProcess>();
const tempDirs: string[] = [];

afterAll(() => {
  for (const child of children) child.kill('SIGKILL');
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
});

/**
 * Starting is CPU-bound (tsx, PGlite's WebAssembly, a new folder's initdb): on a small machine, tests that run
 * concurrently take turns, two starts at a time, so that none waits past its timeout for a core.
 */
const STARTS_AT_ONCE = 2;
let starting = 0;
const startQueue: (() => void)[] = [];
async function startSlot(): Promise<() => void> {
  if (starting >= STARTS_AT_ONCE) await new Promise<void>((resolve) => startQueue.push(resolve));
  else starting++;
  let released = false;
  return () => {
    if (released) return;
    released = true;
    const next = startQueue.shift();
    if (next) next();
    else starting--;
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'commops-proc-'));
  tempDirs.push(dir);
  return dir;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (!address || typeof address === 'string') throw new Error('no port');
  return address.port;
}

interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

interface Proc {
  child: ChildProcess;
  /** stdout and stderr so far. */
  output(): string;
  exited: Promise<Exit>;
}

function launch(env: Record<string, string>, script = 'src/main.ts'): Proc {
  const inherited: NodeJS.ProcessEnv = { ...process.env };
  for (const name of CONFIG_VARIABLES) delete inherited[name];
  const child = spawn(process.execPath, ['--import', 'tsx', script], {
    cwd: ROOT,
    env: { ...inherited, HOST: '127.0.0.1', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let output = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    output += chunk;
  });
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
    output += chunk;
  });
  const exited = new Promise<Exit>((resolve) => {
    child.once('close', (code, signal) => {
      children.delete(child);
      resolve({ code, signal });
    });
  });
  return { child, output: () => output, exited };
}

interface Server extends Proc {
  url: string;
  port: number;
  /** Sends the signal and waits for the exit; fails when the process outlives STOP_TIMEOUT_MS. */
  stop(signal?: NodeJS.Signals): Promise<Exit>;
}

async function waitForExit(proc: Proc, ms: number): Promise<Exit> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      proc.child.kill('SIGKILL');
      reject(new Error(`process ${proc.child.pid} did not exit within ${ms} ms; output:\n${proc.output()}`));
    }, ms);
  });
  try {
    return await Promise.race([proc.exited, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Starts `src/main.ts` on a free port and resolves once GET /api/health answers 200. */
async function startServer(env: Record<string, string>): Promise<Server> {
  const release = await startSlot();
  try {
    return await startNow(env);
  } finally {
    release();
  }
}

async function startNow(env: Record<string, string>): Promise<Server> {
  const port = await freePort();
  const proc = launch({ PORT: String(port), ...env });
  const url = `http://127.0.0.1:${port}`;
  let exit: Exit | undefined;
  void proc.exited.then((value) => {
    exit = value;
  });
  const stop = async (signal: NodeJS.Signals = 'SIGTERM') => {
    if (exit) return exit;
    proc.child.kill(signal);
    return waitForExit(proc, STOP_TIMEOUT_MS);
  };
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (exit) throw new Error(`server exited (${JSON.stringify(exit)}) before it was ready; output:\n${proc.output()}`);
    try {
      const res = await fetch(`${url}/api/health`, { signal: AbortSignal.timeout(2000) });
      await res.body?.cancel();
      if (res.status === 200) return { ...proc, url, port, stop };
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
  proc.child.kill('SIGKILL');
  throw new Error(`server not ready within ${START_TIMEOUT_MS} ms; output:\n${proc.output()}`);
}

/** Runs `src/main.ts` expecting it to exit by itself. */
async function runToExit(env: Record<string, string>, ms = 20_000): Promise<Exit & { output: string; ms: number }> {
  const release = await startSlot();
  try {
    const started = Date.now();
    const proc = launch(env);
    const exit = await waitForExit(proc, ms);
    return { ...exit, output: proc.output(), ms: Date.now() - started };
  } finally {
    release();
  }
}

/** The pid of a process that has exited. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' });
  await new Promise((resolve) => child.once('exit', resolve));
  const pid = child.pid!;
  try {
    process.kill(pid, 0);
  } catch {
    return pid;
  }
  throw new Error(`pid ${pid} is still alive`);
}

/** Whether new connections to the server are refused within `ms`. */
async function refusesConnections(url: string, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    try {
      const res = await fetch(`${url}/api/health`, { signal: AbortSignal.timeout(2000) });
      await res.body?.cancel();
    } catch {
      return true;
    }
    await sleep(50);
  }
  return false;
}

interface Res {
  status: number;
  body: any;
  headers: Headers;
}

async function call(
  server: { url: string },
  method: string,
  path: string,
  options: { ip?: string; body?: unknown; cookie?: string; workspace?: string } = {},
): Promise<Res> {
  const headers: Record<string, string> = {};
  if (options.workspace) headers['x-workspace-id'] = options.workspace;
  if (options.ip) headers['x-forwarded-for'] = options.ip;
  if (options.cookie) headers.cookie = `${SESSION_COOKIE}=${options.cookie}`;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
    signal: AbortSignal.timeout(15_000),
  });
  const text = await res.text();
  return { status: res.status, body: text === '' ? undefined : JSON.parse(text), headers: res.headers };
}

/** The session cookie's value from a response's set-cookie headers. */
function sessionCookie(res: Res): string {
  const cookie = res.headers.getSetCookie().find((value) => value.startsWith(`${SESSION_COOKIE}=`));
  if (!cookie) throw new Error(`no session cookie in ${JSON.stringify(res.headers.getSetCookie())}`);
  return cookie.slice(SESSION_COOKIE.length + 1).split(';', 1)[0]!;
}

const signUpBody = (email = uniqueEmail()) => ({ email, password: PASSWORD, name: 'Process Tester' });

describe.concurrent('one process on a PGlite DATA_DIR', () => {
  it('a restart keeps the rate-limit counters and the generated AUTH_SECRET (sessions survive)', { timeout: 120_000 }, async ({ expect }) => {
    const dataDir = tempDir();
    const env = { DATA_DIR: dataDir, TRUST_PROXY: '1' };
    const ip = randomIp();

    const first = await startServer(env);
    const remaining: (string | null)[] = [];
    let cookie = '';
    let userId = '';
    for (let i = 0; i < 3; i++) {
      const res = await call(first, 'POST', '/api/auth/sign-up/email', { ip, body: signUpBody() });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.headers.get('ratelimit-limit')).toBe('3');
      remaining.push(res.headers.get('ratelimit-remaining'));
      cookie = sessionCookie(res);
      userId = res.body.user.id;
    }
    expect(remaining).toEqual(['2', '1', '0']);
    const meBefore = await call(first, 'GET', '/api/me', { ip, cookie });
    expect(meBefore.status).toBe(200);
    // The general tier: 3 sign-ups and this request.
    expect(meBefore.headers.get('ratelimit-limit')).toBe('100');
    expect(meBefore.headers.get('ratelimit-remaining')).toBe('96');
    expect(await first.stop()).toEqual({ code: 0, signal: null });
    // No AUTH_SECRET was given: the one generated is kept beside the database.
    expect(readFileSync(join(dataDir, 'auth-secret'), 'utf8').trim().length).toBeGreaterThanOrEqual(32);

    const second = await startServer(env);
    let secondExit: Exit | undefined;
    try {
      const blocked = await call(second, 'POST', '/api/auth/sign-up/email', { ip, body: signUpBody() });
      expect(blocked.status).toBe(429);
      expect(blocked.body).toEqual({ error: expect.any(String) });
      const retryAfter = Number(blocked.headers.get('retry-after'));
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(300);
      expect(blocked.headers.get('ratelimit-remaining')).toBe('0');

      // The session cookie signed before the restart still verifies, and the general tier continues from 96.
      const meAfter = await call(second, 'GET', '/api/me', { ip, cookie });
      expect(meAfter.status).toBe(200);
      expect(meAfter.body.user.id).toBe(userId);
      expect(meAfter.headers.get('ratelimit-remaining')).toBe('95');
      // The signature is checked: this is the same secret, not a check that was skipped.
      const forged = await call(second, 'GET', '/api/me', { ip: randomIp(), cookie: cookie.replace(/\.[^.]+$/, '.Zm9yZ2Vk') });
      expect(forged.status).toBe(401);

      // Another address still has its whole allowance.
      const other = await call(second, 'POST', '/api/auth/sign-up/email', { ip: randomIp(), body: signUpBody() });
      expect(other.status).toBe(200);
      expect(other.headers.get('ratelimit-remaining')).toBe('2');
    } finally {
      secondExit = await second.stop();
    }
    expect(secondExit).toEqual({ code: 0, signal: null });
  });

  it('the lock file refuses a second process on a DATA_DIR in use; a lock left by a dead process does not', { timeout: 120_000 }, async ({ expect }) => {
    const dataDir = tempDir();
    const lockFile = join(dataDir, 'pglite.lock');
    const first = await startServer({ DATA_DIR: dataDir });
    expect(readFileSync(lockFile, 'utf8')).toBe(String(first.child.pid));

    const second = await runToExit({ DATA_DIR: dataDir, PORT: String(await freePort()) });
    expect(second.code).toBe(1);
    expect(second.output).toContain(`The data directory is in use by another process (pid ${first.child.pid})`);
    expect(second.output).not.toMatch(STACK_LINE);
    expect(second.ms).toBeLessThan(15_000);
    // The refused process left the lock and the running server alone.
    expect(readFileSync(lockFile, 'utf8')).toBe(String(first.child.pid));
    expect((await call(first, 'GET', '/api/health')).status).toBe(200);

    expect(await first.stop()).toEqual({ code: 0, signal: null });
    expect(existsSync(lockFile)).toBe(false);

    // A process killed without its shutdown leaves its lock behind: the next start takes it over.
    const stalePid = await deadPid();
    writeFileSync(lockFile, String(stalePid));
    const third = await startServer({ DATA_DIR: dataDir });
    expect(readFileSync(lockFile, 'utf8')).toBe(String(third.child.pid));
    expect(await third.stop()).toEqual({ code: 0, signal: null });
    expect(existsSync(lockFile)).toBe(false);
  });

  it('SIGTERM finishes an in-flight request, refuses new connections, exits 0 and releases the lock', { timeout: 120_000 }, async ({ expect }) => {
    const dataDir = tempDir();
    const server = await startServer({ DATA_DIR: dataDir });
    const email = uniqueEmail('inflight');
    const body = JSON.stringify(signUpBody(email));
    // A keep-alive client, as a proxy in front of the service would be.
    const agent = new Agent({ keepAlive: true });
    const request = httpRequest({
      host: '127.0.0.1',
      port: server.port,
      method: 'POST',
      path: '/api/auth/sign-up/email',
      agent,
      headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) },
    });
    const response = new Promise<{ status: number; body: string; headers: Record<string, unknown> }>((resolve, reject) => {
      request.on('error', reject);
      request.on('response', (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (chunk: string) => {
          text += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode!, body: text, headers: res.headers }));
      });
    });
    try {
      // The server has the request (headers and half the body) when SIGTERM arrives.
      request.write(body.slice(0, 20));
      await sleep(500);
      server.child.kill('SIGTERM');
      // Once the signal is handled the port is closed to new connections, while the process waits for the request.
      expect(await refusesConnections(server.url, 10_000)).toBe(true);
      expect(server.child.exitCode).toBeNull();
      request.end(body.slice(20));

      const res = await response;
      expect(res.status, res.body).toBe(200);
      expect(JSON.parse(res.body).user.email).toBe(email);
      const answered = Date.now();
      // The connection is not kept alive to hold the process open for the keep-alive timeout.
      expect(res.headers.connection).toBe('close');
      expect(await waitForExit(server, STOP_TIMEOUT_MS)).toEqual({ code: 0, signal: null });
      expect(Date.now() - answered).toBeLessThan(5_000);
      expect(existsSync(join(dataDir, 'pglite.lock'))).toBe(false);
    } finally {
      agent.destroy();
    }

    // The sign-up was committed before the exit.
    const again = await startServer({ DATA_DIR: dataDir });
    let againExit: Exit | undefined;
    try {
      const signIn = await call(again, 'POST', '/api/auth/sign-in/email', { body: { email, password: PASSWORD } });
      expect(signIn.status).toBe(200);
    } finally {
      againExit = await again.stop();
    }
    expect(againExit).toEqual({ code: 0, signal: null });
  });

  it.for<[Record<string, string>, string]>([
    [{ PORT: 'abc' }, 'PORT'],
    [{ DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none' }, 'AUTH_SECRET'],
    [{ TRUST_PROXY: 'everyone' }, 'TRUST_PROXY'],
  ])('a bad configuration %j stops the process with a message naming %s, without a stack trace', { timeout: 60_000 }, async ([env, name], { expect }) => {
    const dataDir = join(tempDir(), 'data');
    const result = await runToExit({ DATA_DIR: dataDir, PORT: '0', ...env });
    expect(result.code).toBe(1);
    expect(result.output).toContain('Invalid configuration');
    expect(result.output).toMatch(new RegExp(`^\\s+${name}: `, 'm'));
    expect(result.output).not.toMatch(STACK_LINE);
    // Nothing was opened or created.
    expect(existsSync(dataDir)).toBe(false);
  });
});

// Concurrent with the PGlite suite above: their processes start while those tests run.
describe.skipIf(!process.env.DATABASE_URL)('several processes on one PostgreSQL database', { concurrent: true }, () => {
  let scratch: { url: string; drop: () => Promise<void> } | undefined;
  const servers: Server[] = [];
  // A and B run the spec's limits; C and D allow 100 times more, so the rate limit cannot mask the lockout.
  let a: Server;
  let b: Server;
  let c: Server;
  let d: Server;

  beforeAll(async () => {
    scratch = await createScratchDatabase(process.env.DATABASE_URL!);
    const env = {
      DATABASE_URL: scratch.url,
      AUTH_SECRET: randomBytes(32).toString('hex'),
      TRUST_PROXY: '1',
      // One public address for the service, as behind a load balancer.
      BASE_URL: 'http://localhost:3000',
    };
    const started = await Promise.allSettled([
      startServer(env),
      startServer(env),
      startServer({ ...env, RATE_LIMIT_FACTOR: '100' }),
      startServer({ ...env, RATE_LIMIT_FACTOR: '100' }),
    ]);
    for (const result of started) if (result.status === 'fulfilled') servers.push(result.value);
    const failed = started.find((result) => result.status === 'rejected');
    if (failed) throw failed.reason;
    [a, b, c, d] = servers as [Server, Server, Server, Server];
  }, 90_000);

  afterAll(async () => {
    const exits = await Promise.all(servers.map((server) => server.stop()));
    await scratch?.drop();
    expect(exits).toEqual(servers.map(() => ({ code: 0, signal: null })));
  });

  it('a session cookie from process A works on process B', async ({ expect }) => {
    const signUp = await call(a, 'POST', '/api/auth/sign-up/email', { ip: randomIp(), body: signUpBody() });
    expect(signUp.status).toBe(200);
    const cookie = sessionCookie(signUp);
    const me = await call(b, 'GET', '/api/me', { ip: randomIp(), cookie });
    expect(me.status).toBe(200);
    expect(me.body.user.id).toBe(signUp.body.user.id);
    expect(me.body.organizations).toHaveLength(1);

    // And the other way round, for a session made by signing in on B.
    const signIn = await call(b, 'POST', '/api/auth/sign-in/email', {
      ip: randomIp(),
      body: { email: signUp.body.user.email, password: PASSWORD },
    });
    expect(signIn.status).toBe(200);
    const onA = await call(a, 'GET', '/api/me', { ip: randomIp(), cookie: sessionCookie(signIn) });
    expect(onA.status).toBe(200);
    expect(onA.body.user.id).toBe(signUp.body.user.id);
  });

  it('the sign-in rate limit (5 per minute per IP) is shared: 3 attempts on A and 2 on B, then 429 on either', async ({ expect }) => {
    const ip = randomIp();
    const remaining: (string | null)[] = [];
    for (const server of [a, a, a, b, b]) {
      // A new e-mail each time: these are not failures for one account (no lockout involved).
      const res = await call(server, 'POST', '/api/auth/sign-in/email', { ip, body: { email: uniqueEmail(), password: PASSWORD } });
      expect(res.status).toBe(401);
      remaining.push(res.headers.get('ratelimit-remaining'));
    }
    expect(remaining).toEqual(['4', '3', '2', '1', '0']);
    for (const server of [a, b]) {
      const res = await call(server, 'POST', '/api/auth/sign-in/email', { ip, body: { email: uniqueEmail(), password: PASSWORD } });
      expect(res.status).toBe(429);
      expect(res.headers.get('ratelimit-limit')).toBe('5');
      const retryAfter = Number(res.headers.get('retry-after'));
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(60);
    }
    // Another address is not affected.
    const other = await call(b, 'POST', '/api/auth/sign-in/email', { ip: randomIp(), body: { email: uniqueEmail(), password: PASSWORD } });
    expect(other.status).toBe(401);
  });

  it('the sign-in lockout is shared: 5 failures spread over two processes lock the e-mail and IP on both', async ({ expect }) => {
    const email = uniqueEmail('locked');
    expect((await call(c, 'POST', '/api/auth/sign-up/email', { ip: randomIp(), body: signUpBody(email) })).status).toBe(200);
    const ip = randomIp();
    for (const server of [c, d, c, d, c]) {
      const res = await call(server, 'POST', '/api/auth/sign-in/email', { ip, body: { email, password: 'wrong password' } });
      expect(res.status).toBe(401);
    }
    for (const server of [d, c]) {
      const res = await call(server, 'POST', '/api/auth/sign-in/email', { ip, body: { email, password: PASSWORD } });
      expect(res.status).toBe(429);
      expect(res.body).toEqual({ error: expect.any(String) });
      // The 15-minute lockout, not a rate-limit window of at most a minute.
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(60);
      expect(Number(res.headers.get('retry-after'))).toBeLessThanOrEqual(15 * 60);
      expect(res.headers.getSetCookie()).toEqual([]);
    }
    // The lock is for this e-mail from this address: the owner elsewhere still signs in.
    const elsewhere = await call(d, 'POST', '/api/auth/sign-in/email', { ip: randomIp(), body: { email, password: PASSWORD } });
    expect(elsewhere.status).toBe(200);
  });
});

/** A user, signed up through the API, and a draft article in their workspace. */
async function authorWithDraft(server: Server, title: string) {
  const ip = randomIp();
  const signUp = await call(server, 'POST', '/api/auth/sign-up/email', { ip, body: signUpBody() });
  const cookie = sessionCookie(signUp);
  const me = await call(server, 'GET', '/api/me', { ip, cookie });
  const workspace = me.body.organizations[0].workspaces[0].id as string;
  const article = await call(server, 'POST', '/api/content/articles', { ip, cookie, workspace, body: { title, body: `All about ${title}.` } });
  if (article.status !== 201) throw new Error(`article: ${article.status} ${JSON.stringify(article.body)}`);
  return { ip, cookie, workspace, articleId: article.body.id as string };
}

async function waitForIndexed(server: Server, author: Awaited<ReturnType<typeof authorWithDraft>>, word: string) {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const hits = await call(server, 'GET', `/api/content/search?q=${word}`, author);
    if (hits.status === 200 && hits.body.total === 1) return hits.body.items[0];
    if (Date.now() > deadline) throw new Error(`not indexed: ${JSON.stringify(hits.body)}; output:\n${server.output()}`);
    await sleep(200);
  }
}

describe.concurrent('jobs across process boundaries', () => {
  it('a job committed just before the process is killed (SIGKILL) runs after the restart', { timeout: 120_000 }, async ({ expect }) => {
    const dataDir = tempDir();
    // No workers: the indexing job can only be in the database when the process dies.
    const first = await startServer({ DATA_DIR: dataDir, TRUST_PROXY: '1', WORKERS: '0' });
    const author = await authorWithDraft(first, 'Quetzal migration');
    const published = await call(first, 'PATCH', `/api/content/articles/${author.articleId}/status`, { ...author, body: { status: 'published' } });
    expect(published.status).toBe(200);
    expect(published.body.indexStatus).toBe('pending');
    expect(await first.stop('SIGKILL')).toEqual({ code: null, signal: 'SIGKILL' });

    const second = await startServer({ DATA_DIR: dataDir, TRUST_PROXY: '1' });
    try {
      const hit = await waitForIndexed(second, author, 'quetzal');
      expect(hit).toMatchObject({ documentType: 'article', documentId: author.articleId });
      const article = await call(second, 'GET', `/api/content/articles/${author.articleId}`, author);
      expect(article.body).toMatchObject({ status: 'published', indexStatus: 'indexed' });
    } finally {
      await second.stop();
    }
  });

  it.skipIf(!process.env.DATABASE_URL)(
    'an API-only process (WORKERS=0) and a worker process (npm run worker) on one PostgreSQL: the worker runs what the API sends, also after a SIGKILL of the API',
    { timeout: 120_000 },
    async ({ expect }) => {
      const scratch = await createScratchDatabase(process.env.DATABASE_URL!);
      const env = { DATABASE_URL: scratch.url, AUTH_SECRET: randomBytes(32).toString('hex'), TRUST_PROXY: '1', WORKERS: '0' };
      const api = await startServer(env);
      const worker = launch({ ...env, WORKERS: '1' }, 'src/worker.ts');
      try {
        const author = await authorWithDraft(api, 'Okapi sightings');
        const published = await call(api, 'PATCH', `/api/content/articles/${author.articleId}/status`, { ...author, body: { status: 'published' } });
        expect(published.status).toBe(200);
        expect(await api.stop('SIGKILL')).toEqual({ code: null, signal: 'SIGKILL' });
        // The worker indexes it with no API process alive; a new API process then finds it.
        const again = await startServer({ ...env });
        try {
          expect(await waitForIndexed(again, author, 'okapi')).toMatchObject({ documentId: author.articleId });
        } finally {
          await again.stop();
        }
      } finally {
        worker.child.kill('SIGTERM');
        expect(await waitForExit(worker, STOP_TIMEOUT_MS)).toEqual({ code: 0, signal: null });
        await scratch.drop();
      }
    },
  );
});
