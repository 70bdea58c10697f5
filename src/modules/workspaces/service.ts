// The current workspace (from x-workspace-id): its settings, its members and the invitations to join it.
import { randomBytes } from 'node:crypto';
import { and, count, desc, eq, gt, isNull, sql } from 'drizzle-orm';
import { queryRows } from '../../db/client.js';
import { invitations, users, workspaceMembers, workspaces, type WorkspaceMemberRole } from '../../db/schema/index.js';
import { iso } from '../../http/api.js';
import { AppError, errors } from '../../http/errors.js';
import type { AccessCache, WorkspaceContext } from '../../http/guard.js';
import type { Page, PageQuery } from '../../http/pagination.js';
import { newId } from '../../ids.js';
import type { Mailer } from '../../mail/mailer.js';
import { hashToken } from '../account/service.js';

export const INVITATION_DAYS = 7;

export async function getWorkspace(ctx: WorkspaceContext) {
  const [row] = await ctx.db.select().from(workspaces).where(eq(workspaces.id, ctx.workspaceId));
  if (!row) throw errors.notFound();
  return {
    id: row.id,
    name: row.name,
    organizationId: row.organizationId,
    role: ctx.role,
    createdAt: iso(row.createdAt),
    updatedAt: iso(row.updatedAt),
  };
}

export async function renameWorkspace(ctx: WorkspaceContext, name: string) {
  await ctx.db.update(workspaces).set({ name, updatedAt: new Date() }).where(eq(workspaces.id, ctx.workspaceId));
  return getWorkspace(ctx);
}

type MemberRow = { userId: string; email: string; name: string; role: 'owner' | WorkspaceMemberRole };

/** Members are the workspace's own members plus its organization's owners, who reach every workspace. */
function membersQuery(ctx: WorkspaceContext) {
  return sql`
    select u.id as "userId", u.email, u.name, 'owner' as role, 0 as rank
      from organization_members om join users u on u.id = om.user_id
     where om.organization_id = ${ctx.organizationId} and om.role = 'owner'
    union all
    select u.id, u.email, u.name, wm.role, 1
      from workspace_members wm join users u on u.id = wm.user_id
     where wm.workspace_id = ${ctx.workspaceId}
       and not exists (select 1 from organization_members o
                        where o.organization_id = ${ctx.organizationId} and o.user_id = wm.user_id and o.role = 'owner')`;
}

export async function listMembers(ctx: WorkspaceContext, page: PageQuery): Promise<Page<MemberRow>> {
  // One round trip: the page with the total beside each row; an empty page past the end needs a count of its own.
  const rows = await queryRows<MemberRow & { total: number }>(ctx.db, sql`
    select "userId", email, name, role, count(*) over () :: int as total
      from (${membersQuery(ctx)}) m
     order by rank, name, email
     limit ${page.limit} offset ${page.offset}`);
  let total = rows[0]?.total ?? 0;
  if (rows.length === 0 && page.offset > 0) {
    const [counted] = await queryRows<{ total: number }>(
      ctx.db,
      sql`select count(*) :: int as total from (${membersQuery(ctx)}) m`,
    );
    total = counted?.total ?? 0;
  }
  return {
    items: rows.map((row) => ({ userId: row.userId, email: row.email, name: row.name, role: row.role })),
    total: Number(total),
  };
}

async function findMember(ctx: WorkspaceContext, userId: string): Promise<MemberRow | undefined> {
  const [row] = await queryRows<MemberRow>(
    ctx.db,
    sql`select "userId", email, name, role from (${membersQuery(ctx)}) m where "userId" = ${userId}`,
  );
  return row;
}

const ownerIsManagedByOrganization = () =>
  new AppError('unprocessable', 'Organization owners reach every workspace; their access is not set per workspace');

export async function addMember(ctx: WorkspaceContext, cache: AccessCache, email: string, role: WorkspaceMemberRole) {
  const [user] = await ctx.db.select().from(users).where(eq(users.email, email));
  if (!user) throw new AppError('not_found', 'No account uses this email; send an invitation instead');
  if (await findMember(ctx, user.id)) throw errors.conflict('This user is already a member of the workspace');
  const inserted = await ctx.db
    .insert(workspaceMembers)
    .values({ workspaceId: ctx.workspaceId, userId: user.id, role })
    .onConflictDoNothing()
    .returning({ userId: workspaceMembers.userId });
  if (inserted.length === 0) throw errors.conflict('This user is already a member of the workspace');
  cache.forgetMembership(user.id, ctx.workspaceId);
  return { userId: user.id, email: user.email, name: user.name, role };
}

export async function changeMemberRole(
  ctx: WorkspaceContext,
  cache: AccessCache,
  userId: string,
  role: WorkspaceMemberRole,
) {
  const member = await findMember(ctx, userId);
  if (!member) throw errors.notFound();
  if (member.role === 'owner') throw ownerIsManagedByOrganization();
  await ctx.db
    .update(workspaceMembers)
    .set({ role, updatedAt: new Date() })
    .where(and(eq(workspaceMembers.workspaceId, ctx.workspaceId), eq(workspaceMembers.userId, userId)));
  cache.forgetMembership(userId, ctx.workspaceId);
  return { ...member, role };
}

export async function removeMember(ctx: WorkspaceContext, cache: AccessCache, userId: string): Promise<void> {
  const member = await findMember(ctx, userId);
  if (!member) throw errors.notFound();
  if (member.role === 'owner') throw ownerIsManagedByOrganization();
  await ctx.db
    .delete(workspaceMembers)
    .where(and(eq(workspaceMembers.workspaceId, ctx.workspaceId), eq(workspaceMembers.userId, userId)));
  cache.forgetMembership(userId, ctx.workspaceId);
}

function invitationRecord(row: typeof invitations.$inferSelect) {
  return {
    id: row.id,
    email: row.email,
    role: row.role,
    expiresAt: iso(row.expiresAt),
    createdAt: iso(row.createdAt),
    invitedByUserId: row.invitedByUserId,
  };
}

const pendingInvitations = (ctx: WorkspaceContext) =>
  and(eq(invitations.workspaceId, ctx.workspaceId), isNull(invitations.acceptedAt), gt(invitations.expiresAt, new Date()));

export async function listInvitations(ctx: WorkspaceContext, page: PageQuery) {
  const where = pendingInvitations(ctx);
  const [rows, [counted]] = await Promise.all([
    ctx.db.select().from(invitations).where(where).orderBy(desc(invitations.createdAt)).limit(page.limit).offset(page.offset),
    ctx.db.select({ total: count() }).from(invitations).where(where),
  ]);
  return { items: rows.map(invitationRecord), total: counted?.total ?? 0 };
}

/** Invites an e-mail address; a pending invitation to the same address is replaced (its link stops working). */
export async function createInvitation(
  ctx: WorkspaceContext,
  mailer: Mailer,
  appUrl: string,
  input: { email: string; role: WorkspaceMemberRole },
) {
  const [existingUser] = await ctx.db.select({ id: users.id }).from(users).where(eq(users.email, input.email));
  if (existingUser && (await findMember(ctx, existingUser.id))) {
    throw errors.conflict('This user is already a member of the workspace');
  }
  const token = randomBytes(32).toString('base64url');
  const expiresAt = new Date(Date.now() + INVITATION_DAYS * 24 * 60 * 60 * 1000);
  const [workspace] = await ctx.db.select({ name: workspaces.name }).from(workspaces).where(eq(workspaces.id, ctx.workspaceId));
  const link = new URL('/invite', appUrl);
  link.searchParams.set('token', token);
  // The invitation and its e-mail commit together: no link is mailed for an invitation that was not stored.
  const row = await ctx.db.transaction(async (tx) => {
    await tx
      .delete(invitations)
      .where(and(eq(invitations.workspaceId, ctx.workspaceId), eq(invitations.email, input.email), isNull(invitations.acceptedAt)));
    const [created] = await tx
      .insert(invitations)
      .values({
        id: newId(),
        workspaceId: ctx.workspaceId,
        email: input.email,
        role: input.role,
        tokenHash: hashToken(token),
        invitedByUserId: ctx.userId,
        expiresAt,
      })
      .returning();
    await mailer.send(
      {
        to: input.email,
        subject: `You are invited to the ${workspace?.name ?? ''} workspace`.replace('  ', ' '),
        text: [
          `You have been invited to join the workspace "${workspace?.name ?? ''}" as ${input.role}.`,
          '',
          `Open this link within ${INVITATION_DAYS} days to accept (create an account with this e-mail address first if you have none):`,
          link.href,
        ].join('\n'),
      },
      tx,
    );
    return created!;
  });
  return invitationRecord(row);
}

export async function revokeInvitation(ctx: WorkspaceContext, id: string): Promise<void> {
  const deleted = await ctx.db
    .delete(invitations)
    .where(and(eq(invitations.workspaceId, ctx.workspaceId), eq(invitations.id, id), isNull(invitations.acceptedAt)))
    .returning({ id: invitations.id });
  if (deleted.length === 0) throw errors.notFound();
}
