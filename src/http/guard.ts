import { and, eq, sql } from 'drizzle-orm';
import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { LRUCache } from 'lru-cache';
import { z } from 'zod';
import { SESSION_COOKIE, type Auth } from '../auth/auth.js';
import type { Db } from '../db/client.js';
import { organizationMembers, workspaceMembers, workspaces, type WorkspaceRole } from '../db/schema/index.js';
import type { JobSender } from '../jobs/queue.js';
import { errors } from './errors.js';

/** Who may call a route: nobody in particular, any signed-in user, or a member of the `x-workspace-id` workspace. */
export type Access = 'public' | 'user' | 'workspace';

export interface SessionUser {
  id: string;
  email: string;
  name: string;
  emailVerified: boolean;
}

export interface SessionInfo {
  sessionId: string;
  expiresAt: Date;
  user: SessionUser;
}

/** What every workspace service receives. */
export interface WorkspaceContext {
  db: Db;
  workspaceId: string;
  organizationId: string;
  userId: string;
  role: WorkspaceRole;
  log: FastifyBaseLogger;
  /** Sends jobs inside the service's transaction. */
  jobs: JobSender;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    access?: Access;
    /** Lowest workspace role allowed; checked before the body is read. */
    minRole?: WorkspaceRole;
  }
  interface FastifyRequest {
    auth?: SessionInfo;
    ctx?: WorkspaceContext;
  }
}

const ROLE_RANK: Record<WorkspaceRole, number> = { viewer: 1, agent: 2, admin: 3, owner: 4 };

export function hasRole(role: WorkspaceRole, minimum: WorkspaceRole): boolean {
  return ROLE_RANK[role] >= ROLE_RANK[minimum];
}

export function readCookie(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) {
      const value = part.slice(eq + 1).trim();
      return value === '' ? undefined : value;
    }
  }
  return undefined;
}

type Membership = { organizationId: string; role: WorkspaceRole } | null;

/**
 * Short-lived, per-process memory of sessions and memberships, so the hot path does not read them on every
 * request. Changes made through this process are forgotten at once; other processes see them within `ttlMs`.
 */
export class AccessCache {
  private readonly sessions: LRUCache<string, SessionInfo>;
  private readonly memberships: LRUCache<string, { value: Membership }>;
  /** Pages of a workspace's member list, keyed `workspaceId:limit:offset`. */
  private readonly memberPages: LRUCache<string, object>;

  constructor(readonly ttlMs: number) {
    const ttl = Math.max(1, ttlMs);
    this.sessions = new LRUCache({ max: 50_000, ttl, ttlAutopurge: false });
    this.memberships = new LRUCache({ max: 100_000, ttl, ttlAutopurge: false });
    this.memberPages = new LRUCache({ max: 10_000, ttl, ttlAutopurge: false });
  }

  getSession(token: string): SessionInfo | undefined {
    if (this.ttlMs === 0) return undefined;
    const hit = this.sessions.get(token);
    return hit && hit.expiresAt.getTime() > Date.now() ? hit : undefined;
  }
  setSession(token: string, session: SessionInfo): void {
    if (this.ttlMs > 0) this.sessions.set(token, session);
  }
  forgetSession(token: string): void {
    this.sessions.delete(token);
  }
  forgetUser(userId: string): void {
    for (const [token, session] of this.sessions.entries()) if (session.user.id === userId) this.sessions.delete(token);
    for (const key of this.memberships.keys()) if (key.startsWith(`${userId}:`)) this.memberships.delete(key);
  }

  getMembership(userId: string, workspaceId: string): { value: Membership } | undefined {
    return this.ttlMs === 0 ? undefined : this.memberships.get(`${userId}:${workspaceId}`);
  }
  setMembership(userId: string, workspaceId: string, value: Membership): void {
    if (this.ttlMs > 0) this.memberships.set(`${userId}:${workspaceId}`, { value });
  }
  forgetMembership(userId: string, workspaceId: string): void {
    this.memberships.delete(`${userId}:${workspaceId}`);
    for (const key of this.memberPages.keys()) if (key.startsWith(`${workspaceId}:`)) this.memberPages.delete(key);
  }

  /** The member list is membership data: it is kept exactly as long, and forgotten with any membership change. */
  async memberPage<T extends object>(workspaceId: string, limit: number, offset: number, load: () => Promise<T>): Promise<T> {
    if (this.ttlMs === 0) return load();
    const key = `${workspaceId}:${limit}:${offset}`;
    const hit = this.memberPages.get(key);
    if (hit) return hit as T;
    const page = await load();
    this.memberPages.set(key, page);
    return page;
  }
}

const uuid = z.uuid();

export async function findMembership(db: Db, userId: string, workspaceId: string): Promise<Membership> {
  const [row] = await db
    .select({
      organizationId: workspaces.organizationId,
      memberRole: workspaceMembers.role,
      orgRole: organizationMembers.role,
    })
    .from(workspaces)
    .leftJoin(workspaceMembers, and(eq(workspaceMembers.workspaceId, workspaces.id), eq(workspaceMembers.userId, userId)))
    .leftJoin(
      organizationMembers,
      and(
        eq(organizationMembers.organizationId, workspaces.organizationId),
        eq(organizationMembers.userId, userId),
        eq(organizationMembers.role, sql`'owner'`),
      ),
    )
    .where(eq(workspaces.id, workspaceId))
    .limit(1);
  if (!row) return null;
  const role: WorkspaceRole | null = row.orgRole === 'owner' ? 'owner' : row.memberRole;
  return role ? { organizationId: row.organizationId, role } : null;
}

export interface GuardDeps {
  db: Db;
  jobs: JobSender;
  auth: Auth;
  cache: AccessCache;
}

/** The session behind the request's cookie, or a 401. Refreshed cookies from better-auth are passed on. */
export async function resolveSession(deps: GuardDeps, request: FastifyRequest, reply: FastifyReply): Promise<SessionInfo> {
  const token = readCookie(request.headers.cookie, SESSION_COOKIE);
  if (!token) throw errors.unauthorized();
  const cached = deps.cache.getSession(token);
  if (cached) return cached;
  const { headers, response } = await deps.auth.api.getSession({
    headers: new Headers({ cookie: `${SESSION_COOKIE}=${token}` }),
    returnHeaders: true,
  });
  if (!response) {
    deps.cache.forgetSession(token);
    throw errors.unauthorized();
  }
  const refreshed = headers.getSetCookie();
  if (refreshed.length > 0) reply.header('set-cookie', refreshed);
  const session: SessionInfo = {
    sessionId: response.session.id,
    expiresAt: new Date(response.session.expiresAt),
    user: {
      id: response.user.id,
      email: response.user.email,
      name: response.user.name,
      emailVerified: response.user.emailVerified,
    },
  };
  deps.cache.setSession(token, session);
  return session;
}

async function resolveWorkspace(deps: GuardDeps, request: FastifyRequest, userId: string): Promise<WorkspaceContext> {
  const header = request.headers['x-workspace-id'];
  if (header === undefined || header === '') throw errors.unauthorized();
  const workspaceId = Array.isArray(header) ? undefined : header.trim().toLowerCase();
  if (!workspaceId || !uuid.safeParse(workspaceId).success) throw errors.forbidden();
  let membership = deps.cache.getMembership(userId, workspaceId)?.value;
  if (membership === undefined) {
    membership = await findMembership(deps.db, userId, workspaceId);
    deps.cache.setMembership(userId, workspaceId, membership);
  }
  if (!membership) throw errors.forbidden();
  return {
    db: deps.db,
    workspaceId,
    organizationId: membership.organizationId,
    userId,
    role: membership.role,
    log: request.log,
    jobs: deps.jobs,
  };
}

/**
 * The spec's credential checks, in its order: cookie (401), live session (401), x-workspace-id present (401),
 * a uuid (403), membership (403); then the route's minimum role (403). Runs for every /api/* path, unknown
 * ones included, unless the route is declared `public` or `user`.
 */
export function registerGuard(app: FastifyInstance, deps: GuardDeps): void {
  app.addHook('onRequest', async (request, reply) => {
    // The matched route's path, not the raw URL, which may spell it percent-encoded ('/%61pi/members').
    const path = request.routeOptions.url ?? request.url;
    if (!path.startsWith('/api/') || request.method === 'OPTIONS') return;
    // The reference page's static assets are registered by @fastify/swagger-ui, which takes no route config.
    if (path === '/api/docs' || path.startsWith('/api/docs/')) return;
    const config = request.routeOptions.config;
    const access: Access = config?.access ?? 'workspace';
    if (access === 'public') return;
    request.auth = await resolveSession(deps, request, reply);
    if (access === 'user') return;
    request.ctx = await resolveWorkspace(deps, request, request.auth.user.id);
    if (config?.minRole && !hasRole(request.ctx.role, config.minRole)) throw errors.forbidden();
  });
}

/** The workspace context of a guarded route (the guard has already rejected requests without one). */
export function workspaceContext(request: FastifyRequest): WorkspaceContext {
  if (!request.ctx) throw new Error('route is not declared with workspace access');
  return request.ctx;
}

export function sessionOf(request: FastifyRequest): SessionInfo {
  if (!request.auth) throw new Error('route is not declared with user access');
  return request.auth;
}
