import { z } from 'zod';

/** `limit` 1–100 (default 20) and `offset` ≥ 0 (default 0) for every paginated list; anything else is a 400. */
export const pageQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(20),
  offset: z.coerce.number().int().min(0).default(0),
});
export type PageQuery = z.infer<typeof pageQuery>;

/** The `{items, total}` envelope: `total` counts every match across all pages. */
export function paginated<T extends z.ZodType>(item: T) {
  return z.object({ items: z.array(item), total: z.number().int().min(0) });
}

export type Page<T> = { items: T[]; total: number };
