/**
 * The CRC-32 of a big folder's pack entry, patched instead of read again.
 *
 * A pack index stores each entry's CRC-32 (over its type and size header and its zlib stream).
 * A big folder (`runs/`, 4 MB at 100,000 runs) is stored as stored zlib blocks, so its entry is
 * its bytes with a 5-byte header every 65,535 bytes and its Adler-32 at the end. A fire commit
 * gives a few hundred of its entries new oids: same length, so the new entry differs from the
 * old one only in those 20-byte oids and in the Adler-32. CRC-32 is linear: for two messages of
 * one length, crc(A) xor crc(B) is the plain polynomial remainder of (A xor B) (no initial or final
 * inversion), and a difference followed by k unchanged bytes counts as its own remainder times
 * x^(8k) (zlib's `crc32_combine` arithmetic). So the new entry's CRC is the old one's, xor each
 * changed range's remainder moved past the bytes after it: O(bytes changed × log length),
 * instead of a pass over 4 MB.
 */

/** The reflected CRC-32 polynomial (IEEE 802.3), as zlib and git use it. */
const POLY = 0xedb88320;

const TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? POLY ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

/** a(x) × b(x) modulo the polynomial (reflected), as zlib's `multmodp`. */
function multmodp(a: number, b: number): number {
  if (a === 0) return 0;
  let m = 0x80000000;
  let p = 0;
  for (;;) {
    if ((a & m) !== 0) {
      p ^= b;
      if ((a & (m - 1)) === 0) break;
    }
    m >>>= 1;
    b = (b & 1) !== 0 ? (b >>> 1) ^ POLY : b >>> 1;
  }
  return p >>> 0;
}

/** x^(2^k) modulo the polynomial, k = 0 … 31. */
const X2N = (() => {
  const table = new Uint32Array(32);
  let p = 0x40000000; // x^1
  table[0] = p;
  for (let k = 1; k < 32; k++) table[k] = p = multmodp(p, p);
  return table;
})();

/** x^(8 × bytes) modulo the polynomial: appending `bytes` zero bytes to a remainder. */
function shiftFactor(bytes: number): number {
  let p = 0x80000000; // x^0
  let k = 3;
  for (let n = bytes; n > 0; n = Math.floor(n / 2), k++) if (n % 2 === 1) p = multmodp(X2N[k & 31] as number, p);
  return p;
}

/** The plain remainder of `before xor after` (same lengths), followed by `trailing` unchanged bytes. */
function differenceRemainder(before: Uint8Array, after: Uint8Array, from: number, to: number, trailing: number): number {
  let c = 0;
  for (let i = from; i < to; i++) c = (TABLE[(c ^ (before[i] as number) ^ (after[i] as number)) & 0xff] as number) ^ (c >>> 8);
  if (c === 0) return 0;
  return trailing === 0 ? c >>> 0 : multmodp(shiftFactor(trailing), c >>> 0);
}

/** Bytes of content per stored zlib block (see storedZlibParts in pack-file.ts). */
const STORED_BLOCK = 65_535;

/**
 * A running patch of the entry CRC of a big tree stored as stored zlib blocks (see module
 * comment). Feed it each replaced range of the content ({@link replaced}), then the old and new
 * Adler-32 ({@link finish}).
 */
export class StoredEntryCrcPatch {
  #delta = 0;
  readonly #length: number;
  readonly #blocks: number;

  /** @param length bytes of the content (the same before and after) */
  constructor(readonly baseCrc: number, length: number) {
    this.#length = length;
    this.#blocks = Math.max(1, Math.ceil(length / STORED_BLOCK));
  }

  /**
   * Content bytes `at` … `at + count` went from `before` to `after` (same length).
   * @param count bytes replaced (default `before.length`)
   * @param offset where in `before` and `after` they start (default 0; `at` when the whole old
   *   and new contents are given, with no view of the range)
   */
  replaced(at: number, before: Uint8Array, after: Uint8Array, count = before.length, offset = 0): void {
    let from = 0;
    while (from < count) {
      const start = at + from;
      const block = Math.floor(start / STORED_BLOCK);
      const to = Math.min(count, (block + 1) * STORED_BLOCK - at);
      const end = at + to;
      // After the range: the rest of the content, the headers of the blocks after this one, the Adler-32.
      const trailing = this.#length - end + 5 * (this.#blocks - 1 - block) + 4;
      this.#delta ^= differenceRemainder(before, after, offset + from, offset + to, trailing);
      from = to;
    }
  }

  /** The new entry's CRC-32, given the content's Adler-32 before and after. */
  finish(adlerBefore: number, adlerAfter: number): number {
    const old = Buffer.allocUnsafe(4);
    old.writeUInt32BE(adlerBefore >>> 0, 0);
    const now = Buffer.allocUnsafe(4);
    now.writeUInt32BE(adlerAfter >>> 0, 0);
    return (this.baseCrc ^ this.#delta ^ differenceRemainder(old, now, 0, 4, 0)) >>> 0;
  }
}

/** Entry CRC-32s known for tree contents (see {@link rememberTreeEntryCrc}). */
const known = new WeakMap<Uint8Array, number>();

/**
 * Records the CRC-32 of the pack entry of the tree with this `content` (type and size header,
 * then its stored zlib blocks), so a pack writer need not read `content` for it.
 */
export function rememberTreeEntryCrc(content: Uint8Array, crc: number): void {
  known.set(content, crc);
}

/** The remembered entry CRC-32 of the tree with this content, or undefined. */
export function knownTreeEntryCrc(content: Uint8Array): number | undefined {
  return known.get(content);
}
