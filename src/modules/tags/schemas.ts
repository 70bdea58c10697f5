import { z } from 'zod';

const name = z.string().max(50).trim().min(1).describe('1 to 50 characters, not blank; unique in the workspace ignoring case (409)');
const color = z
  .string()
  .regex(/^#[0-9a-fA-F]{6}$/, 'A colour as #rrggbb')
  .describe('#rrggbb; stored lower-cased');

export const createTagBody = z.strictObject({ name, color: color.nullable().optional() });
export type CreateTagInput = z.infer<typeof createTagBody>;

export const updateTagBody = z
  .strictObject({ name: name.optional(), color: color.nullable().optional().describe('`null` clears it') })
  .refine((value) => Object.values(value).some((field) => field !== undefined), {
    message: 'At least one field is required',
  });
export type UpdateTagInput = z.infer<typeof updateTagBody>;

export const tag = z
  .object({
    id: z.uuid(),
    name: z.string(),
    color: z.string().nullable(),
    contactCount: z.number().int().min(0).describe('Contacts with the tag'),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'Tag' });
export type TagRecord = z.infer<typeof tag>;

/** Not paginated (every tag of the workspace), but in the same envelope as every list. */
export const tagList = z
  .object({ items: z.array(tag), total: z.number().int().min(0).describe('The number of items: all of them') })
  .meta({ id: 'TagList' });
export const tagParams = z.object({ id: z.uuid() });
