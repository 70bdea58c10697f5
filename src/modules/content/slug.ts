// Slugs of articles and collections: made from a title or name, unique per workspace, found without a race.
import { randomBytes } from 'node:crypto';
import slugifyText from '@sindresorhus/slugify';
import { z } from 'zod';
import type { Tx } from '../../db/client.js';
import { isUniqueViolation } from '../../db/errors.js';

export const SLUG_MAX_LENGTH = 200;
/** Lower-case letters and digits in groups joined by single hyphens: `getting-started-2`. */
export const SLUG_PATTERN = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;

/** An explicitly given slug (PATCH, collection create). */
export const slugField = z
  .string()
  .max(SLUG_MAX_LENGTH)
  .regex(SLUG_PATTERN, 'Must be lower-case letters and digits in groups joined by single hyphens')
  .describe('Lower-case letters and digits joined by single hyphens (`^[a-z0-9]+(?:-[a-z0-9]+)*$`), at most 200 characters');

/** Room left after a generated base for a `-` and a random suffix, within SLUG_MAX_LENGTH. */
const BASE_MAX_LENGTH = 180;
/** `base`, then `base-2` … `base-N`; after that (or after repeated races) a random suffix. */
const NUMBERED_SUFFIXES = 9;
const NUMBERED_ATTEMPTS = 4;
const MAX_ATTEMPTS = 10;

/**
 * A slug from free text: transliterated (`Crème brûlée` → `creme-brulee`), lower-case, hyphen-separated and
 * capped at 180 characters; `fallback` when nothing usable is left (`!!!`, or a script without transliteration).
 */
export function slugify(text: string, fallback: string): string {
  const slug = slugifyText(text, { decamelize: false }).slice(0, BASE_MAX_LENGTH).replace(/-+$/, '');
  return slug === '' ? fallback : slug;
}

const randomSuffix = () =>
  Array.from(randomBytes(6), (byte) => 'abcdefghijklmnopqrstuvwxyz0123456789'[byte % 36]).join('');

export interface UniqueSlugInsert<T> {
  /** The transaction the insert belongs to; each attempt runs in a savepoint of it. */
  tx: Tx;
  /** The generated slug to start from (`slugify`). */
  base: string;
  /** The unique index on (workspace_id, slug) whose violation means "taken, try the next one". */
  constraint: string;
  /** Which of `candidates` are already used in the workspace. */
  taken(candidates: string[]): Promise<Set<string>>;
  insert(tx: Tx, slug: string): Promise<T>;
}

/**
 * Inserts under the first free slug among `base`, `base-2` … `base-10`, then `base-<random>`. The free one is
 * looked up first; a concurrent insert that takes it in the meantime makes our insert fail on the unique index,
 * which only rolls back its savepoint, and the next attempt looks again. Never fails because of a collision.
 */
export async function insertWithUniqueSlug<T>(options: UniqueSlugInsert<T>): Promise<T> {
  const { tx, base, constraint } = options;
  const numbered = [base, ...Array.from({ length: NUMBERED_SUFFIXES }, (_, i) => `${base}-${i + 2}`)];
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    let slug: string | undefined;
    if (attempt < NUMBERED_ATTEMPTS) {
      const used = await options.taken(numbered);
      slug = numbered.find((candidate) => !used.has(candidate));
    }
    slug ??= `${base}-${randomSuffix()}`;
    const chosen = slug;
    try {
      // A nested transaction is a savepoint: a violation leaves the outer transaction usable.
      return await tx.transaction((savepoint) => options.insert(savepoint, chosen));
    } catch (error) {
      if (!isUniqueViolation(error, constraint)) throw error;
    }
  }
  throw new Error(`no free slug found for "${base}" after ${MAX_ATTEMPTS} attempts`);
}
