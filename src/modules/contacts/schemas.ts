import { z } from 'zod';
import { IMPORT_STATUSES } from '../../db/schema/index.js';
import { paginated, pageQuery } from '../../http/pagination.js';

export const MAX_ATTRIBUTES = 50;
export const MAX_ATTRIBUTE_STRING = 1000;
export const MAX_IMPORT_CSV_CHARS = 5 * 1024 * 1024;

const name = z.string().max(200).trim().min(1).describe('1 to 200 characters, not blank; stored trimmed');
const phone = z
  .string()
  .max(64)
  .describe(
    'International format with a leading + and country code ("+44 20 7946 0958"); spaces, dots, dashes and ' +
      'brackets are ignored. Must be a valid number (libphonenumber-js); stored and returned as E.164. Unique in the ' +
      'workspace: a duplicate is 409 {error, existingId}. No default country is assumed.',
  );
const email = z.email().max(254).describe('A valid e-mail address; stored lower-cased');
const attributeValue = z.union([z.string().max(MAX_ATTRIBUTE_STRING), z.number(), z.boolean(), z.null()]);
const attributeKey = z.string().min(1).max(64);
const attributes = z
  .record(attributeKey, attributeValue)
  .refine((value) => Object.keys(value).length <= MAX_ATTRIBUTES, { message: `At most ${MAX_ATTRIBUTES} attributes` })
  .describe(
    `Custom fields: a flat object of at most ${MAX_ATTRIBUTES} keys (1 to 64 characters) whose values are strings ` +
      `(at most ${MAX_ATTRIBUTE_STRING} characters), numbers, booleans or null`,
  );
const tagIds = z.array(z.uuid()).max(100).describe('Tags of the workspace (400 naming tagIds.N otherwise)');
const groupIds = z.array(z.uuid()).max(100).describe('Groups of the workspace (400 naming groupIds.N otherwise)');

export const createContactBody = z.strictObject({
  name,
  phone: phone.nullable().optional(),
  email: email.nullable().optional(),
  attributes: attributes.optional(),
  tagIds: tagIds.optional(),
  groupIds: groupIds.optional(),
});
export type CreateContactInput = z.infer<typeof createContactBody>;

export const updateContactBody = z
  .strictObject({
    name: name.optional(),
    phone: phone.nullable().optional().describe('A new phone number (see create); `null` clears it'),
    email: email.nullable().optional().describe('`null` clears it'),
    attributes: attributes
      .optional()
      .describe(
        'Merged key by key into the stored attributes: a given key is set, a key given as `null` is deleted, keys ' +
          `not given stay. At most ${MAX_ATTRIBUTES} keys after the merge.`,
      ),
    tagIds: tagIds.optional().describe('Replaces the set of tags'),
    groupIds: groupIds.optional().describe('Replaces the set of groups'),
  })
  .refine((value) => Object.values(value).some((field) => field !== undefined), {
    message: 'At least one field is required',
  });
export type UpdateContactInput = z.infer<typeof updateContactBody>;

export const contact = z
  .object({
    id: z.uuid(),
    name: z.string(),
    phone: z.string().nullable().describe('E.164, e.g. +442079460958'),
    email: z.string().nullable(),
    attributes: z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()])),
    tagIds: z.array(z.uuid()),
    groupIds: z.array(z.uuid()),
    lastInboundAt: z.string().nullable(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'Contact' });
export type ContactRecord = z.infer<typeof contact>;

export const contactPage = paginated(contact);
export const contactListQuery = pageQuery.extend({
  q: z
    .string()
    .trim()
    .min(1)
    .max(200)
    .optional()
    .describe('Case-insensitive substring of the name, phone (E.164) or e-mail'),
  tagId: z.uuid().optional().describe('Only contacts with this tag'),
  groupId: z.uuid().optional().describe('Only members of this group'),
});
export type ContactListQuery = z.infer<typeof contactListQuery>;
export const contactParams = z.object({ contactId: z.uuid() });
export const contactTagParams = z.object({ contactId: z.uuid(), tagId: z.uuid() });
export const addContactTagsBody = z.strictObject({
  tagIds: z.array(z.uuid()).min(1).max(100).describe('Tags to add; ones the contact already has are ignored'),
});

export const importBody = z.strictObject({
  csv: z
    .string()
    .min(1)
    .max(MAX_IMPORT_CSV_CHARS)
    .describe(
      'The CSV file, UTF-8, with a header row. Columns `name`, `phone`, `email` (case-insensitive) are the contact ' +
        'fields; every other column is an attribute of that name. Empty cells are ignored.',
    ),
  fileName: z.string().min(1).max(255).optional(),
});
export type ImportInput = z.infer<typeof importBody>;

export const importResult = z.object({
  created: z.number().int().min(0),
  updated: z.number().int().min(0),
  rejected: z.array(z.object({ row: z.number().int().min(1).describe('1-based, header excluded'), reason: z.string() })),
});
export type ImportResult = z.infer<typeof importResult>;

export const contactImport = z
  .object({
    id: z.uuid(),
    status: z.enum(IMPORT_STATUSES),
    fileName: z.string().nullable(),
    result: importResult.nullable().describe('Set once the import has completed'),
    error: z.string().nullable().describe('Why the import failed (e.g. the file is not valid CSV)'),
    createdAt: z.string(),
    completedAt: z.string().nullable(),
  })
  .meta({ id: 'ContactImport' });
export type ContactImportRecord = z.infer<typeof contactImport>;
export const importParams = z.object({ id: z.uuid() });
