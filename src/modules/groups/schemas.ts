import { z } from 'zod';
import { paginated, pageQuery } from '../../http/pagination.js';

const name = z.string().max(100).trim().min(1).describe('1 to 100 characters, not blank; unique in the workspace ignoring case (409)');
const description = z.string().max(500).describe('At most 500 characters');

export const createGroupBody = z.strictObject({ name, description: description.nullable().optional() });
export type CreateGroupInput = z.infer<typeof createGroupBody>;

export const updateGroupBody = z
  .strictObject({ name: name.optional(), description: description.nullable().optional().describe('`null` clears it') })
  .refine((value) => Object.values(value).some((field) => field !== undefined), {
    message: 'At least one field is required',
  });
export type UpdateGroupInput = z.infer<typeof updateGroupBody>;

export const group = z
  .object({
    id: z.uuid(),
    name: z.string(),
    description: z.string().nullable(),
    contactCount: z.number().int().min(0).describe('Contacts in the group'),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'Group' });
export type GroupRecord = z.infer<typeof group>;

export const groupPage = paginated(group);
export const groupListQuery = pageQuery;
export const groupParams = z.object({ id: z.uuid() });
export const groupContactsQuery = pageQuery;

export const membersBody = z.strictObject({
  contactIds: z
    .array(z.uuid())
    .min(1)
    .max(1000)
    .describe('1 to 1000 contacts of the workspace (400 naming contactIds.N otherwise); repeats are ignored'),
});
export const membersAdded = z
  .object({
    added: z.number().int().min(0).describe('Contacts that were not members before'),
    total: z.number().int().min(0).describe('Members of the group now'),
  })
  .meta({ id: 'GroupMembersAdded' });
export const membersRemoved = z
  .object({
    removed: z.number().int().min(0).describe('Contacts that were members and are not any more'),
    total: z.number().int().min(0).describe('Members of the group now'),
  })
  .meta({ id: 'GroupMembersRemoved' });
