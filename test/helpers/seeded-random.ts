/**
 * A small deterministic generator (xorshift32) for randomised tests, so a failure names its seed.
 * @returns numbers in [0, 1), the same sequence for the same seed (0 counts as 1)
 */
export function seededRandom(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
}

/** `n` bytes from {@link seededRandom}: zlib cannot shrink them, so a pack holding them is about `n` bytes. */
export function seededBytes(n: number, seed: number): Uint8Array {
  const next = seededRandom(seed);
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) out[i] = Math.floor(next() * 256);
  return out;
}
