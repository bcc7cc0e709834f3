/**
 * The check that a value is an object id as the store writes it: 40 lowercase hex digits.
 * A recovery checks a million of them (every event blob's oid): a loop over the char codes,
 * where the regular expression `^[0-9a-f]{40}$` cost ~0.25 µs a call. And the same digits
 * written as the oid's 20 bytes ({@link writeHexOid}).
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

/** Each char code's hex digit value (`0-9`, `a-f`), -1 for any other; indexed by the code's low byte. */
const DIGIT_VALUES = (() => {
  const values = new Int8Array(256).fill(-1);
  for (let i = 0; i < 10; i++) values[0x30 + i] = i;
  for (let i = 0; i < 6; i++) values[0x61 + i] = 10 + i;
  return values;
})();

/**
 * Writes the 20 bytes of the object id `hex` into `out` at `at`: what
 * `Buffer.write(hex, at, 20, "hex")` writes for 40 lowercase hex digits, in a loop over the char
 * codes with no call into node (a fire commit of 20,000 fires turns ~100,000 oids into bytes;
 * through `Buffer.write` they took ~23 ms of a fresh process's main thread: design notes §90).
 * @returns false, with `out[at, at + 20)` in an undefined state, when `hex` is not 40 lowercase
 *   hex digits ({@link isHexOid}); the caller then writes it the way it did before, or declines
 */
export function writeHexOid(hex: string, out: Uint8Array, at: number): boolean {
  if (hex.length !== HEX_OID_LENGTH) return false;
  let bad = 0;
  for (let i = 0; i < 20; i++) {
    const a = hex.charCodeAt(2 * i);
    const b = hex.charCodeAt(2 * i + 1);
    const high = DIGIT_VALUES[a & 0xff] as number;
    const low = DIGIT_VALUES[b & 0xff] as number;
    // A digit's value is 0-15: -1 (not a digit) or a code past 0xff sets a bit above the low four.
    bad |= high | low | ((a | b) & 0xff00);
    out[at + i] = (high << 4) | low;
  }
  return (bad & ~0x0f) === 0;
}
