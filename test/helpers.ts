// Test harness: a real app on a real database (PGlite in memory, or a fresh PostgreSQL database per test file
// when DATABASE_URL is set), and clients that sign up, keep their cookie and speak from their own IP.
import { randomBytes, randomUUID } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import pg from 'pg';
import { expect } from 'vitest';
import { type App, buildApp } from '../src/app.js';
import { type Config, loadConfig } from '../src/config.js';
import { openDatabase } from '../src/db/client.js';
import { SESSION_COOKIE } from '../src/auth/auth.js';

export const BASE_URL = 'http://localhost:3000';
export const APP_URL = 'http://app.test';

export interface TestApp {
  app: App;
  config: Config;
  close(): Promise<void>;
}

/** A fresh PostgreSQL database on the server of DATABASE_URL; dropped again by the returned function. */
export async function createScratchDatabase(serverUrl: string): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `t_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    url: url.href,
    drop: async () => {
      const client = new pg.Client({ connectionString: serverUrl });
      await client.connect();
      await client.query(`drop database if exists ${name} with (force)`);
      await client.end();
    },
  };
}

export async function createTestApp(env: Record<string, string> = {}): Promise<TestApp> {
  const serverUrl = process.env.DATABASE_URL;
  const scratch = serverUrl ? await createScratchDatabase(serverUrl) : undefined;
  const config = loadConfig({
    BASE_URL,
    APP_URL,
    AUTH_SECRET: randomBytes(32).toString('hex'),
    LOG_LEVEL: 'silent',
    ...(scratch ? { DATABASE_URL: scratch.url } : {}),
    ...env,
  });
  const database = await openDatabase(scratch ? { url: scratch.url, poolSize: 5 } : { memory: true });
  const app = await buildApp({ config, database, secret: config.authSecret!, logger: false });
  await app.ready();
  return {
    app,
    config,
    close: async () => {
      await app.close();
      await database.close();
      await scratch?.drop();
    },
  };
}

export function randomIp(): string {
  const b = randomBytes(3);
  return `10.${b[0]}.${b[1]}.${b[2]! % 254 + 1}`;
}

export const uniqueEmail = (label = 'user') => `${label}-${randomUUID().slice(0, 12)}@example.test`;
export const PASSWORD = 'correct horse battery';

export interface Reply {
  status: number;
  body: any;
  headers: LightMyRequestResponse['headers'];
  raw: LightMyRequestResponse;
}

export interface RequestOptions {
  body?: unknown;
  headers?: Record<string, string>;
  /** `null` sends no x-workspace-id; a string sends that value; by default the client's own workspace. */
  workspace?: string | null;
  /** Send no cookie even if the client has one. */
  anonymous?: boolean;
}

/** One user agent: its IP, its cookie, and the workspace it works in by default. */
export class Client {
  cookie: string | undefined;
  workspaceId: string | undefined;
  user: { id: string; email: string; name: string } | undefined;

  constructor(
    readonly app: App,
    readonly ip: string = randomIp(),
  ) {}

  async request(method: string, url: string, options: RequestOptions = {}): Promise<Reply> {
    const headers: Record<string, string> = { ...options.headers };
    if (this.cookie && !options.anonymous) headers.cookie = `${SESSION_COOKIE}=${this.cookie}`;
    const workspace = options.workspace === undefined ? this.workspaceId : options.workspace;
    if (workspace !== null && workspace !== undefined) headers['x-workspace-id'] = workspace;
    const raw = await this.app.inject({
      method: method as 'GET',
      url,
      headers,
      remoteAddress: this.ip,
      ...(options.body === undefined ? {} : typeof options.body === 'string' ? { payload: options.body } : { payload: options.body as object }),
    });
    const setCookie = raw.cookies.find((c) => c.name === SESSION_COOKIE);
    if (setCookie) this.cookie = setCookie.value === '' || setCookie.maxAge === 0 ? undefined : setCookie.value;
    let body: unknown;
    try {
      body = raw.body === '' ? undefined : JSON.parse(raw.body);
    } catch {
      body = raw.body;
    }
    return { status: raw.statusCode, body, headers: raw.headers, raw };
  }

  get = (url: string, options?: RequestOptions) => this.request('GET', url, options);
  post = (url: string, body?: unknown, options?: RequestOptions) => this.request('POST', url, { ...options, body });
  patch = (url: string, body?: unknown, options?: RequestOptions) => this.request('PATCH', url, { ...options, body });
  put = (url: string, body?: unknown, options?: RequestOptions) => this.request('PUT', url, { ...options, body });
  delete = (url: string, options?: RequestOptions) => this.request('DELETE', url, options);
}

/** Signs a new user up (from a fresh IP) and returns a client in their own "Default" workspace as Org Owner. */
export async function signUp(app: App, options: { email?: string; password?: string; name?: string } = {}) {
  const client = new Client(app);
  const email = options.email ?? uniqueEmail();
  const res = await client.post('/api/auth/sign-up/email', {
    email,
    password: options.password ?? PASSWORD,
    name: options.name ?? 'Test User',
  });
  if (res.status !== 200) throw new Error(`sign-up failed: ${res.status} ${JSON.stringify(res.body)}`);
  const me = await client.get('/api/me', { workspace: null });
  const organization = me.body.organizations[0];
  client.user = res.body.user;
  client.workspaceId = organization.workspaces[0].id;
  return { client, user: res.body.user, organizationId: organization.id as string, workspaceId: client.workspaceId! };
}

/**
 * A workspace with one person in each role, plus an outsider who owns another workspace:
 * the cast of most security tests.
 */
export async function workspaceWithRoles(app: App) {
  const owner = await signUp(app, { name: 'Olivia Owner' });
  const members: Record<'admin' | 'agent' | 'viewer', Client> = {} as never;
  for (const role of ['admin', 'agent', 'viewer'] as const) {
    const person = await signUp(app, { name: `${role[0]!.toUpperCase()}${role.slice(1)} Person` });
    const added = await owner.client.post('/api/members', { email: person.user.email, role });
    if (added.status !== 201) throw new Error(`adding ${role} failed: ${added.status} ${JSON.stringify(added.body)}`);
    person.client.workspaceId = owner.workspaceId;
    members[role] = person.client;
  }
  const outsider = await signUp(app, { name: 'Oscar Outsider' });
  return {
    workspaceId: owner.workspaceId,
    organizationId: owner.organizationId,
    owner: owner.client,
    admin: members.admin,
    agent: members.agent,
    viewer: members.viewer,
    outsider: outsider.client,
  };
}

/**
 * Polls `check` until it returns something other than undefined/false (jobs run in the background), or fails
 * with the last value seen after `timeoutMs`.
 */
export async function eventually<T>(check: () => Promise<T | undefined | false>, timeoutMs = 10_000, label = 'condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined && value !== false) return value;
      last = value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) throw new Error(`${label} not reached within ${timeoutMs} ms (last: ${String(last)})`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** An ISO 8601 UTC timestamp with milliseconds, as every record carries. */
export const ISO_TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** A 400 validation error with a detail for `path`. */
export function expectValidation(res: Reply, path: string): void {
  expect(res.status, JSON.stringify(res.body)).toBe(400);
  expect(res.body).toEqual({ error: expect.any(String), details: expect.any(Array) });
  expect(res.body.details).toContainEqual({ path, message: expect.any(String) });
}

/** A 404: by default exactly as for an id that never existed. */
export function expectNotFound(res: Reply, error: unknown = 'Not found'): void {
  expect(res.status, JSON.stringify(res.body)).toBe(404);
  expect(res.body).toEqual({ error });
}

export function expectForbidden(res: Reply): void {
  expect(res.status, JSON.stringify(res.body)).toBe(403);
  expect(res.body).toEqual({ error: 'Forbidden' });
}
