/**
 * The check that a value is an object id as the store writes it: 40 lowercase hex digits.
 * A recovery checks a million of them (every event blob's oid): a loop over the char codes,
 * where the regular expression `^[0-9a-f]{40}$` cost ~0.25 µs a call.
 */

/** Length of a hex object id. */
export const HEX_OID_LENGTH = 40;

/** Whether `value` is a string of exactly 40 lowercase hex digits (`[0-9a-f]{40}`). */
export function isHexOid(value: unknown): value is string {
  if (typeof value !== "string" || value.length !== HEX_OID_LENGTH) return false;
  for (let i = 0; i < HEX_OID_LENGTH; i++) {
    const c = value.charCodeAt(i);
    // 0-9 (0x30-0x39) or a-f (0x61-0x66).
    if (c < 0x30 || (c > 0x39 && (c < 0x61 || c > 0x66))) return false;
  }
  return true;
}
