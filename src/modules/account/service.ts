// A user's own account: which organizations and workspaces they reach, creating organizations and workspaces,
// and accepting an invitation. These act on the signed-in user, not inside one workspace.
import { createHash } from 'node:crypto';
import { and, asc, eq, isNull } from 'drizzle-orm';
import type { Db, Tx } from '../../db/client.js';
import {
  invitations,
  organizationMembers,
  organizations,
  workspaceMembers,
  workspaces,
  type WorkspaceMemberRole,
  type WorkspaceRole,
} from '../../db/schema/index.js';
import { AppError, errors } from '../../http/errors.js';
import type { AccessCache, SessionUser } from '../../http/guard.js';
import { newId } from '../../ids.js';

export const hashToken = (token: string): string => createHash('sha256').update(token).digest('hex');

export async function createOrganization(
  tx: Tx,
  input: { userId: string; name: string; workspaceName: string },
): Promise<{ id: string; name: string; workspaces: { id: string; name: string; role: 'owner' }[] }> {
  const organizationId = newId();
  const workspaceId = newId();
  await tx.insert(organizations).values({ id: organizationId, name: input.name });
  await tx.insert(organizationMembers).values({ organizationId, userId: input.userId, role: 'owner' });
  await tx.insert(workspaces).values({ id: workspaceId, organizationId, name: input.workspaceName });
  return { id: organizationId, name: input.name, workspaces: [{ id: workspaceId, name: input.workspaceName, role: 'owner' }] };
}

type OrgAccess = {
  id: string;
  name: string;
  role: 'owner' | 'member';
  workspaces: { id: string; name: string; role: WorkspaceRole }[];
};

/** Every organization the user reaches: as owner (all its workspaces) or through workspace memberships. */
export async function listAccess(db: Db, userId: string): Promise<OrgAccess[]> {
  const [owned, memberships] = await Promise.all([
    db
      .select({ orgId: organizations.id, orgName: organizations.name, workspaceId: workspaces.id, workspaceName: workspaces.name })
      .from(organizationMembers)
      .innerJoin(organizations, eq(organizations.id, organizationMembers.organizationId))
      .leftJoin(workspaces, eq(workspaces.organizationId, organizations.id))
      .where(and(eq(organizationMembers.userId, userId), eq(organizationMembers.role, 'owner')))
      .orderBy(asc(organizations.id), asc(workspaces.id)),
    db
      .select({
        orgId: organizations.id,
        orgName: organizations.name,
        workspaceId: workspaces.id,
        workspaceName: workspaces.name,
        role: workspaceMembers.role,
      })
      .from(workspaceMembers)
      .innerJoin(workspaces, eq(workspaces.id, workspaceMembers.workspaceId))
      .innerJoin(organizations, eq(organizations.id, workspaces.organizationId))
      .where(eq(workspaceMembers.userId, userId))
      .orderBy(asc(organizations.id), asc(workspaces.id)),
  ]);
  const byOrg = new Map<string, OrgAccess>();
  for (const row of owned) {
    const org = byOrg.get(row.orgId) ?? { id: row.orgId, name: row.orgName, role: 'owner' as const, workspaces: [] };
    if (row.workspaceId && row.workspaceName !== null) {
      org.workspaces.push({ id: row.workspaceId, name: row.workspaceName, role: 'owner' });
    }
    byOrg.set(row.orgId, org);
  }
  for (const row of memberships) {
    if (byOrg.get(row.orgId)?.role === 'owner') continue;
    const org = byOrg.get(row.orgId) ?? { id: row.orgId, name: row.orgName, role: 'member' as const, workspaces: [] };
    org.workspaces.push({ id: row.workspaceId, name: row.workspaceName, role: row.role });
    byOrg.set(row.orgId, org);
  }
  return [...byOrg.values()].sort((a, b) => a.id.localeCompare(b.id));
}

/** Org Owners only; a member of the organization gets 403, anyone else 404 (it does not exist for them). */
export async function createWorkspace(db: Db, userId: string, organizationId: string, name: string) {
  const [ownership] = await db
    .select({ role: organizationMembers.role })
    .from(organizationMembers)
    .where(and(eq(organizationMembers.organizationId, organizationId), eq(organizationMembers.userId, userId)));
  if (ownership?.role !== 'owner') {
    const [membership] = await db
      .select({ workspaceId: workspaceMembers.workspaceId })
      .from(workspaceMembers)
      .innerJoin(workspaces, eq(workspaces.id, workspaceMembers.workspaceId))
      .where(and(eq(workspaceMembers.userId, userId), eq(workspaces.organizationId, organizationId)))
      .limit(1);
    throw membership ? errors.forbidden() : errors.notFound();
  }
  const id = newId();
  await db.insert(workspaces).values({ id, organizationId, name });
  return { id, name, organizationId };
}

export async function acceptInvitation(db: Db, cache: AccessCache, user: SessionUser, token: string) {
  const [invitation] = await db
    .select()
    .from(invitations)
    .where(eq(invitations.tokenHash, hashToken(token)));
  if (!invitation) throw errors.notFound();
  if (invitation.email !== user.email.toLowerCase()) {
    throw new AppError('forbidden', 'This invitation was sent to another email address');
  }
  if (invitation.acceptedAt) throw errors.conflict('This invitation has already been accepted');
  if (invitation.expiresAt.getTime() <= Date.now()) throw new AppError('gone', 'This invitation has expired');
  const [workspace] = await db
    .select({ id: workspaces.id, name: workspaces.name, organizationId: workspaces.organizationId })
    .from(workspaces)
    .where(eq(workspaces.id, invitation.workspaceId));
  if (!workspace) throw errors.notFound();
  const role: WorkspaceMemberRole = await db.transaction(async (tx) => {
    const claimed = await tx
      .update(invitations)
      .set({ acceptedAt: new Date(), acceptedByUserId: user.id })
      .where(and(eq(invitations.id, invitation.id), isNull(invitations.acceptedAt)))
      .returning({ id: invitations.id });
    if (claimed.length === 0) throw errors.conflict('This invitation has already been accepted');
    const inserted = await tx
      .insert(workspaceMembers)
      .values({ workspaceId: workspace.id, userId: user.id, role: invitation.role })
      .onConflictDoNothing()
      .returning({ role: workspaceMembers.role });
    if (inserted[0]) return inserted[0].role;
    // Already a member (added directly after the invitation was sent): the membership is kept as it is,
    // so report the role they actually have, not the invited one.
    const [existing] = await tx
      .select({ role: workspaceMembers.role })
      .from(workspaceMembers)
      .where(and(eq(workspaceMembers.workspaceId, workspace.id), eq(workspaceMembers.userId, user.id)));
    return existing?.role ?? invitation.role;
  });
  cache.forgetMembership(user.id, workspace.id);
  return { workspace, role };
}
