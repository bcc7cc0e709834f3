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
