import { z } from 'zod';

export const workspaceRole = z.enum(['owner', 'admin', 'agent', 'viewer']);
export const name = z.string().trim().min(1).max(100);

export const workspaceSummary = z
  .object({ id: z.uuid(), name: z.string(), role: workspaceRole })
  .meta({ id: 'WorkspaceSummary' });

export const organizationWithWorkspaces = z
  .object({
    id: z.uuid(),
    name: z.string(),
    role: z.enum(['owner', 'member']),
    workspaces: z.array(workspaceSummary),
  })
  .meta({ id: 'OrganizationAccess' });

export const meResponse = z.object({
  user: z.object({ id: z.uuid(), email: z.string(), name: z.string(), emailVerified: z.boolean() }),
  organizations: z.array(organizationWithWorkspaces),
});

export const createOrganizationBody = z.strictObject({ name });
export const createdOrganization = z.object({ id: z.uuid(), name: z.string(), workspaces: z.array(workspaceSummary) });

export const orgParams = z.object({ orgId: z.uuid() });
export const createWorkspaceBody = z.strictObject({ name });
export const createdWorkspace = z
  .object({ id: z.uuid(), name: z.string(), organizationId: z.uuid() })
  .meta({ id: 'Workspace' });

export const invitationTokenParams = z.object({ token: z.string().min(1).max(256) });
export const acceptedInvitation = z.object({
  workspace: createdWorkspace,
  role: z.enum(['admin', 'agent', 'viewer']),
});
