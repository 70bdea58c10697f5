import { z } from 'zod';
import { paginated, pageQuery } from '../../../http/pagination.js';
import { slugField } from '../slug.js';

// As for article titles: the length is checked as sent, then the name is trimmed and must not be blank.
const name = z.string().max(100).trim().min(1).describe('1 to 100 characters, not blank; stored trimmed');
const description = z.string().max(500).describe('At most 500 characters');

export const createCollectionBody = z.strictObject({
  name,
  description: description.optional(),
  slug: slugField
    .optional()
    .describe('Made from the name (and made unique) when absent; 409 if given and another collection has it'),
});
export type CreateCollectionInput = z.infer<typeof createCollectionBody>;

export const updateCollectionBody = z
  .strictObject({
    name: name.optional(),
    description: description.nullable().optional().describe('`null` clears it'),
    slug: slugField.optional().describe('A new slug; renaming alone never changes it. 409 if another collection has it'),
  })
  .refine((value) => Object.values(value).some((field) => field !== undefined), {
    message: 'At least one field is required',
  });
export type UpdateCollectionInput = z.infer<typeof updateCollectionBody>;

export const collection = z
  .object({
    id: z.uuid(),
    workspaceId: z.uuid(),
    name: z.string(),
    slug: z.string(),
    description: z.string().nullable(),
    articleCount: z.number().int().min(0).describe('Articles in the collection, drafts included'),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'Collection' });
export type CollectionRecord = z.infer<typeof collection>;

export const collectionPage = paginated(collection);
export const collectionListQuery = pageQuery;
export const collectionParams = z.object({ id: z.uuid() });
