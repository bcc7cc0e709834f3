/**
 * Writing git's delta format (the payload of a pack's ofs-delta and ref-delta entries; see git's
 * Documentation/gitformat-pack.txt, "Deltified representation", and patch-delta.c):
 *
 *   varint(base size) varint(target size) instruction*
 *   copy:   1xxxxxxx, then the offset's non-zero bytes (bits 0–3 say which of 4) and the size's
 *           non-zero bytes (bits 4–6, which of 3; size 0 means 0x10000), little-endian;
 *   insert: 0nnnnnnn (n = 1 … 127) followed by n literal bytes.
 *
 * Reading the format is `applyDelta` in pack-file.ts.
 */

/** Git's size varint: 7 bits a byte, least significant first, high bit = more. */
export function deltaVarint(value: number): number[] {
  const out: number[] = [];
  let v = value;
  do {
    let byte = v % 128;
    v = Math.floor(v / 128);
    if (v > 0) byte |= 0x80;
    out.push(byte);
  } while (v > 0);
  return out;
}

/** Largest size one copy instruction is written with (three size bytes). */
const MAX_COPY = 0xffffff;
/** Largest literal run of one insert instruction. */
const MAX_INSERT = 127;

/**
 * Builds a delta from `base` to `target` out of ranges: `copy` takes bytes of the base, `insert`
 * bytes of the target, in target order. Adjacent ranges of one kind are merged into one
 * instruction (a copy up to 16 MiB, an insert up to 127 bytes at a time).
 */
export class DeltaWriter {
  readonly #target: Uint8Array;
  readonly #ops: number[];
  /**
   * The delta's pieces so far; null before the first. Made as a literal of the first piece, not
   * `[]` then a push (V8 makes `[]` an array of small integers, and the optimised code that
   * first pushes an object into it is undone; design notes §58).
   */
  #chunks: Uint8Array[] | null = null;
  #copyFrom = -1;
  #copyEnd = -1;
  #insertFrom = -1;
  #insertEnd = -1;

  /**
   * @param baseSize the base's length (bytes)
   * @param target the whole target; inserts refer to ranges of it
   */
  constructor(baseSize: number, target: Uint8Array) {
    this.#target = target;
    this.#ops = [...deltaVarint(baseSize), ...deltaVarint(target.length)];
  }

  /** Appends base bytes [start, end). */
  copy(start: number, end: number): void {
    if (end <= start) return;
    if (this.#insertFrom >= 0) this.#flushInsert();
    if (this.#copyFrom >= 0 && this.#copyEnd === start) {
      this.#copyEnd = end;
      return;
    }
    if (this.#copyFrom >= 0) this.#flushCopy();
    this.#copyFrom = start;
    this.#copyEnd = end;
  }

  /** Appends target bytes [start, end) literally. */
  insert(start: number, end: number): void {
    if (end <= start) return;
    if (this.#copyFrom >= 0) this.#flushCopy();
    if (this.#insertFrom >= 0 && this.#insertEnd === start) {
      this.#insertEnd = end;
      return;
    }
    if (this.#insertFrom >= 0) this.#flushInsert();
    this.#insertFrom = start;
    this.#insertEnd = end;
  }

  /** The delta. The writer is spent afterwards. */
  finish(): Buffer {
    if (this.#copyFrom >= 0) this.#flushCopy();
    if (this.#insertFrom >= 0) this.#flushInsert();
    this.#flushOps();
    return Buffer.concat(this.#chunks ?? []);
  }

  #flushOps(): void {
    if (this.#ops.length > 0) this.#piece(Buffer.from(this.#ops.splice(0)));
  }

  #piece(bytes: Uint8Array): void {
    if (this.#chunks === null) this.#chunks = [bytes];
    else this.#chunks.push(bytes);
  }

  #flushCopy(): void {
    for (let from = this.#copyFrom; from < this.#copyEnd; ) {
      const size = Math.min(this.#copyEnd - from, MAX_COPY);
      let cmd = 0x80;
      const args: number[] = [];
      for (let k = 0; k < 4; k++) {
        const byte = Math.floor(from / 2 ** (8 * k)) & 0xff;
        if (byte !== 0) {
          cmd |= 1 << k;
          args.push(byte);
        }
      }
      for (let k = 0; k < 3; k++) {
        const byte = Math.floor(size / 2 ** (8 * k)) & 0xff;
        if (byte !== 0) {
          cmd |= 0x10 << k;
          args.push(byte);
        }
      }
      this.#ops.push(cmd);
      for (const byte of args) this.#ops.push(byte);
      from += size;
    }
    this.#copyFrom = -1;
  }

  #flushInsert(): void {
    for (let at = this.#insertFrom; at < this.#insertEnd; at += MAX_INSERT) {
      const n = Math.min(MAX_INSERT, this.#insertEnd - at);
      this.#ops.push(n);
      this.#flushOps();
      this.#piece(this.#target.subarray(at, at + n));
    }
    this.#insertFrom = -1;
  }
}

/** The base and target sizes a delta declares (its two leading varints). */
export function deltaSizes(delta: Uint8Array): { readonly baseSize: number; readonly targetSize: number } {
  let at = 0;
  const read = (): number => {
    let value = 0;
    let shift = 1;
    for (;;) {
      const byte = delta[at++];
      if (byte === undefined) return Number.NaN;
      value += (byte & 0x7f) * shift;
      shift *= 128;
      if ((byte & 0x80) === 0) return value;
    }
  };
  const baseSize = read();
  return { baseSize, targetSize: read() };
}

/** Shortest run of equal bytes {@link byteDelta} copies rather than inserts. */
const MATCH_BYTES = 8;

/**
 * A delta from `base` to `target` for small files (an event blob against a similar one): every
 * {@link MATCH_BYTES}-byte window of the base is indexed by its first position, the target is
 * walked left to right, and where a window matches, the match is extended as far as the bytes
 * agree and copied; the rest is inserted. Linear in both sizes; meant for files of a few KiB.
 */
export function byteDelta(base: Uint8Array, target: Uint8Array): Buffer {
  const writer = new DeltaWriter(base.length, target);
  const at = new Map<string, number>();
  const b = Buffer.from(base.buffer, base.byteOffset, base.byteLength);
  const t = Buffer.from(target.buffer, target.byteOffset, target.byteLength);
  for (let i = 0; i + MATCH_BYTES <= b.length; i++) {
    const key = b.toString("latin1", i, i + MATCH_BYTES);
    if (!at.has(key)) at.set(key, i);
  }
  let j = 0;
  while (j < t.length) {
    const from = j + MATCH_BYTES <= t.length ? at.get(t.toString("latin1", j, j + MATCH_BYTES)) : undefined;
    if (from === undefined) {
      writer.insert(j, j + 1);
      j++;
      continue;
    }
    let len = MATCH_BYTES;
    while (from + len < b.length && j + len < t.length && b[from + len] === t[j + len]) len++;
    writer.copy(from, from + len);
    j += len;
  }
  return writer.finish();
}
