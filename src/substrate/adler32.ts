/**
 * Adler-32 (the checksum closing a zlib stream), with the combination rule that lets a big
 * folder's checksum be assembled from the checksums of its pieces.
 *
 * Every commit that touches one run writes a new version of the `runs/` folder (~40 bytes per
 * run: 4 MB at 100,000 runs), stored in the commit's pack as a zlib stream of stored blocks. Its
 * Adler-32 over the whole content cost more than the folder's SHA-1. A folder edited from
 * another shares its untouched entry chunks (see tree-object.ts), and a chunk's bytes are a
 * function of its entries, so each chunk's checksum is computed once and combined in O(1) per
 * chunk (zlib's `adler32_combine`): only the chunks an edit touched are read.
 */

const BASE = 65_521;

/** Adler-32 of `bytes`, continuing from `start` (default 1, an empty input's checksum). */
export function adler32(bytes: Uint8Array, start = 1): number {
  let a = start & 0xffff;
  let b = start >>> 16;
  let i = 0;
  const n = bytes.length;
  while (i < n) {
    // 5 552 is the most bytes before the sums can overflow 2^32 (zlib's NMAX).
    const stop = Math.min(n, i + 5_552);
    for (; i < stop; i++) {
      a += bytes[i] as number;
      b += a;
    }
    a %= BASE;
    b %= BASE;
  }
  return ((b << 16) | a) >>> 0;
}

/**
 * The Adler-32 of `x ++ y` from `adler32(x)`, `adler32(y)` and `y`'s length in bytes (zlib's
 * `adler32_combine`).
 */
export function adler32Combine(first: number, second: number, secondLength: number): number {
  const rem = secondLength % BASE;
  let sum1 = first & 0xffff;
  let sum2 = (rem * sum1) % BASE;
  sum1 += (second & 0xffff) + BASE - 1;
  sum2 += (first >>> 16) + (second >>> 16) + BASE - rem;
  if (sum1 >= BASE) sum1 -= BASE;
  if (sum1 >= BASE) sum1 -= BASE;
  if (sum2 >= BASE * 2) sum2 -= BASE * 2;
  if (sum2 >= BASE) sum2 -= BASE;
  return ((sum2 << 16) | sum1) >>> 0;
}

/**
 * The Adler-32 of `length` bytes after the bytes at `at` … `at + before.length` were replaced
 * by `after` (same length), from the checksum before. Each byte at 0-based position p counts
 * once in the first sum and `length - p` times in the second, so a replacement moves the sums
 * by its difference times those weights: O(bytes replaced), not O(length). A fire commit gives
 * a few hundred entries of a 4 MB `runs/` folder new oids, 20 bytes each.
 * @param count bytes replaced (default `before.length`)
 * @param from where in `before` and `after` the replaced bytes start (default 0): the whole old
 *   and new contents can be given with `from = at`, with no view of the range
 */
export function adler32Patch(value: number, length: number, at: number, before: Uint8Array, after: Uint8Array, count = before.length, from = 0): number {
  let a = value & 0xffff;
  let b = value >>> 16;
  for (let k = 0; k < count; k++) {
    const d = (after[from + k] as number) - (before[from + k] as number);
    if (d === 0) continue;
    const dm = d < 0 ? d + BASE : d;
    a = (a + dm) % BASE;
    // Both factors below 65 521: the product stays far inside a double's exact integers.
    b = (b + ((length - at - k) % BASE) * dm) % BASE;
  }
  return ((b << 16) | a) >>> 0;
}

/** Checksums known for whole object contents (set by whoever assembled them from pieces). */
const known = new WeakMap<Uint8Array, number>();

/** Records that `adler32(content) === value`, so a pack writer need not read `content` for it. */
export function rememberAdler32(content: Uint8Array, value: number): void {
  known.set(content, value);
}

/** Adler-32 of `content`: the remembered value when there is one, else computed. */
export function adler32Of(content: Uint8Array): number {
  return known.get(content) ?? adler32(content);
}

/** The remembered Adler-32 of `content` (see {@link rememberAdler32}), or undefined. */
export function knownAdler32(content: Uint8Array): number | undefined {
  return known.get(content);
}
