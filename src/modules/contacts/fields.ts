// Normalising the fields a contact is matched on: phone numbers (libphonenumber-js, E.164) and e-mail addresses.
import { parsePhoneNumberFromString } from 'libphonenumber-js';
import { z } from 'zod';

/**
 * The E.164 form of an international number ("+44 20 7946 0958" → "+442079460958"), or undefined when it is not a
 * valid number. A leading + and country code are required: no default country is assumed, so a number means the
 * same whoever types it.
 */
export function normalizePhone(input: string): string | undefined {
  const trimmed = input.trim();
  if (!trimmed.startsWith('+')) return undefined;
  const parsed = parsePhoneNumberFromString(trimmed);
  if (!parsed?.isValid()) return undefined;
  return parsed.number;
}

export const INVALID_PHONE = 'Not a valid phone number in international format (a leading + and the country code)';
export const INVALID_EMAIL = 'Not a valid e-mail address';

const emailSchema = z.email().max(254);
export function normalizeEmail(input: string): string | undefined {
  const trimmed = input.trim();
  return emailSchema.safeParse(trimmed).success ? trimmed.toLowerCase() : undefined;
}
