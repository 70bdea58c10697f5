// Recognising database errors the services turn into answers (409 on a duplicate, a retry on a race).

/** A PostgreSQL unique violation (23505), on `constraint` when given; Drizzle wraps driver errors in `cause`. */
export function isUniqueViolation(error: unknown, constraint?: string): boolean {
  for (let e: unknown = error, depth = 0; e && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    const { code, constraint: name } = e as { code?: unknown; constraint?: unknown };
    if (code === '23505') return constraint === undefined || name === undefined || name === constraint;
  }
  return false;
}
