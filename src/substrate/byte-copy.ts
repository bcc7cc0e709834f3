/**
 * Copies `source[from, to)` into `target` at `at`, without the view node's `Buffer.copy` makes
 * of a source range that is not the whole buffer (`new Uint8Array(...)` per call: ~100 bytes of
 * garbage per copied oid, tens of thousands per fire commit). Short ranges (oids, small trees)
 * are copied byte by byte; longer ones through one view and `set`, which is faster there.
 * @returns the bytes copied (`to - from`); the caller keeps the ranges within both buffers
 */
export function copyBytes(source: Uint8Array, from: number, to: number, target: Uint8Array, at: number): number {
  const n = to - from;
  if (n > SHORT_COPY_BYTES) {
    target.set(source.subarray(from, to), at);
    return n;
  }
  for (let i = from; i < to; i++) target[at++] = source[i] as number;
  return n;
}

/**
 * Writes `text`, a string of ASCII chars (each < 0x80, which the caller has checked), as one byte
 * a char at `at`: for a short name or id a loop beats `Buffer.write(text, at, "latin1")`, a call
 * into C++ per string.
 * @returns the number of bytes written (`text.length`)
 */
export function writeAsciiChars(text: string, target: Uint8Array, at: number): number {
  const n = text.length;
  for (let i = 0; i < n; i++) target[at + i] = text.charCodeAt(i);
  return n;
}

/** Longest range {@link copyBytes} copies byte by byte (a few hundred bytes: a run's small events folder; a loop costs ~0.25 µs there, a view ~0.06 µs and ~100 bytes of garbage). */
const SHORT_COPY_BYTES = 512;
