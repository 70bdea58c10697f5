import { z } from 'zod';

/** An e-mail address as every route takes it: trimmed and lower-cased, so one address is one account. */
export const emailField = z.string().trim().toLowerCase().pipe(z.email('Invalid email address').max(254));
