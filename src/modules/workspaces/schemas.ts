import { z } from 'zod';
import { emailField as email } from '../../http/fields.js';
import { paginated } from '../../http/pagination.js';

export const memberRole = z.enum(['admin', 'agent', 'viewer']);

export const workspaceRecord = z
  .object({
    id: z.uuid(),
    name: z.string(),
    organizationId: z.uuid(),
    role: z.enum(['owner', 'admin', 'agent', 'viewer']),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'CurrentWorkspace' });
export const updateWorkspaceBody = z.strictObject({ name: z.string().trim().min(1).max(100) });

export const member = z
  .object({
    userId: z.uuid(),
    email: z.string(),
    name: z.string(),
    role: z.enum(['owner', 'admin', 'agent', 'viewer']),
  })
  .meta({ id: 'Member' });
export const memberPage = paginated(member);
export const addMemberBody = z.strictObject({ email, role: memberRole });
export const memberParams = z.object({ userId: z.uuid() });
export const updateMemberBody = z.strictObject({ role: memberRole });

export const invitation = z
  .object({
    id: z.uuid(),
    email: z.string(),
    role: memberRole,
    expiresAt: z.string(),
    createdAt: z.string(),
    invitedByUserId: z.uuid().nullable(),
  })
  .meta({ id: 'Invitation' });
export const invitationPage = paginated(invitation);
export const createInvitationBody = z.strictObject({ email, role: memberRole });
export const invitationParams = z.object({ id: z.uuid() });
