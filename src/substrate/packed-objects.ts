/**
 * Objects written straight into pack entries as they are built: a fire commit's event blobs and
 * each run's two new folders. The caller lays an object's content out where its entry will hold
 * it (`begin`, then writes into `buffer`); `finish` hashes header and content where they lie,
 * closes the entry (type and size header, one stored zlib block, Adler-32) and records its index
 * row (binary oid, offset, CRC-32) in flat typed arrays. No `GitObject`, no buffer of its own and
 * no second copy per object: the pack encoder takes the chunks as pieces of the pack and the
 * rows as they are (pack-file.ts `encodePackGently`).
 *
 * Bytes: each entry is exactly what `encodePack` writes for the same object (an object of up to
 * 64 KiB − 1 as one stored block: trees always, blobs up to {@link PACKED_BLOB_MAX_BYTES}); a
 * test checks oids, entries and index against the encoder and git.
 *
 * Offsets are relative to the first entry; the encoder places the entries right after the
 * pack's 12-byte header. An object built twice (two runs whose events have the same bytes) is
 * kept once: its second entry is dropped and `finish` returns the first one's row.
 */
import * as nodeCrypto from "node:crypto";
import { createHash } from "node:crypto";
import { crc32, crc32Range, type PackPrefix } from "./pack-file.js";
import { writeHexOid } from "./hex-oid.js";
import type { GitObject } from "./git-object.js";
import type { Oid } from "./types.js";

/** Largest content an entry here holds: one stored zlib block. */
export const PACKED_MAX_BYTES = 65_535;
/** Blobs above this size are deflated by the pack encoder, not stored (see pack-file.ts STORE_SMALL_BYTES). */
export const PACKED_BLOB_MAX_BYTES = 1_024;

/** Pack type codes (pack-file.ts TYPE_CODES). */
const TREE_CODE = 2;
const BLOB_CODE = 3;
/** Bytes kept free before each chunk's first entry: where a git header may be laid out to hash it (see finish). */
const SLACK = 16;
const CHUNK_BYTES = 256 * 1024;
const EMPTY = Buffer.alloc(0);
const BLOB_WORD = [0x62, 0x6c, 0x6f, 0x62, 0x20];
const TREE_WORD = [0x74, 0x72, 0x65, 0x65, 0x20];

/** node's one-shot `crypto.hash` (node ≥ 20.12), or undefined on an older node. */
const oneShotHash = (nodeCrypto as { hash?: (algorithm: string, data: Uint8Array, encoding: "hex") => string }).hash;
/** Adler-32 of `b[from, to)` (at most one stored block: no overflow of the sums between reductions). */
function adlerOf(b: Uint8Array, from: number, to: number): number {
  let s1 = 1;
  let s2 = 0;
  let i = from;
  while (i < to) {
    const stop = Math.min(to, i + 5_552);
    for (; i < stop; i++) {
      s1 += b[i] as number;
      s2 += s1;
    }
    s1 %= 65_521;
    s2 %= 65_521;
  }
  return ((s2 << 16) | s1) >>> 0;
}

/** Bytes of a pack entry header for `size` bytes of content. */
function entryHeaderLength(size: number): number {
  let n = 1;
  for (let rest = Math.floor(size / 16); rest > 0; rest = Math.floor(rest / 128)) n++;
  return n;
}

/** Decimal digits of a non-negative integer. */
function digits(n: number): number {
  let d = 1;
  while (n >= 10) {
    n = Math.floor(n / 10);
    d++;
  }
  return d;
}

/** A commit's objects as pack entries (see the module comment). */
export class PackedObjects {
  /**
   * Finished chunks' used bytes, in pack order; null before the first. Made as a literal of the
   * first piece, not `[]` then a push (V8 makes `[]` an array of small integers, and the
   * optimised `begin` that first pushes an object into it is undone; design notes §58).
   */
  #parts: Buffer[] | null = null;
  #chunk: Buffer;
  /** Where the next entry starts in {@link #chunk}. */
  #at = SLACK;
  /**
   * Bytes of entries before {@link #chunk}'s first. Held in a one-element array, not a number
   * field: it changes only when a chunk fills (once per 256 KiB), and the field's first change,
   * after V8 had optimised {@link finish} (which reads it), undid that code: a field never
   * changed is taken for a constant until then (design notes §58).
   */
  readonly #base = new Float64Array(1);
  /** The entry being built: its start, its content's start and size. */
  #entryAt = 0;
  #contentAt = 0;
  #size = 0;
  /** Index rows, in pack order: oids (20 bytes each), offsets from the first entry, CRC-32s. */
  #oids: Buffer;
  #offsets: Float64Array;
  #crcs: Uint32Array;
  #count = 0;
  /** Open addressing on each row's leading 32 oid bits: row + 1, 0 for empty. */
  #slots: Int32Array;
  /** Bytes of the next chunk to allocate. */
  #chunkBytes: number;
  /** The oid of the object {@link finish} closed last, as 40 hex digits. */
  lastOid: Oid = "";
  /**
   * The pack's trailer hash over its header, these entries and a big tree's entry after them,
   * taken ahead (pack-file.ts PackPrefix); undefined when none was.
   */
  prefix: PackPrefix | undefined = undefined;

  /**
   * @param rows how many objects to make room for at first (it grows)
   * @param bytes how many bytes of entries to expect: the first chunk's size (at least 4 KiB, at
   *   most 256 KiB; later chunks are 256 KiB), so a commit of a few fires does not take 256 KiB
   */
  constructor(rows = 1_024, bytes = CHUNK_BYTES) {
    this.#chunkBytes = Math.min(CHUNK_BYTES, Math.max(4_096, bytes));
    const capacity = Math.max(16, rows);
    // No chunk until the first entry: most writes build none.
    this.#chunk = EMPTY;
    this.#oids = Buffer.allocUnsafe(capacity * 20);
    this.#offsets = new Float64Array(capacity);
    this.#crcs = new Uint32Array(capacity);
    this.#slots = new Int32Array(slotsFor(capacity));
  }

  /** Objects held. */
  get count(): number {
    return this.#count;
  }

  /** Bytes of all entries. */
  get length(): number {
    return (this.#base[0] as number) + this.#at - SLACK;
  }

  /** The chunk the entry begun last is written into (valid until the next {@link begin}). */
  get buffer(): Buffer {
    return this.#chunk;
  }

  /** Binary oids, 20 bytes per row. */
  get oids(): Buffer {
    return this.#oids;
  }

  /** Offset of row `row`'s entry from the first entry. */
  offsetAt(row: number): number {
    return this.#offsets[row] as number;
  }

  /** CRC-32 of row `row`'s entry bytes. */
  crcAt(row: number): number {
    return this.#crcs[row] as number;
  }

  /**
   * Starts an entry for `size` bytes of content (at most {@link PACKED_MAX_BYTES}): the caller
   * writes them into {@link buffer} from the returned position, then calls {@link finish}.
   */
  begin(size: number): number {
    if (!(size >= 0 && size <= PACKED_MAX_BYTES)) throw new RangeError(`a packed entry holds at most ${PACKED_MAX_BYTES} bytes, not ${size}`);
    const prefix = entryHeaderLength(size) + 7;
    const need = prefix + size + 4;
    if (this.#at + need > this.#chunk.length) {
      if (this.#at > SLACK) {
        const part = this.#chunk.subarray(SLACK, this.#at);
        if (this.#parts === null) this.#parts = [part];
        else this.#parts.push(part);
        this.#base[0] = (this.#base[0] as number) + this.#at - SLACK;
      }
      this.#chunk = Buffer.allocUnsafe(Math.max(this.#chunkBytes, SLACK + need));
      this.#chunkBytes = CHUNK_BYTES;
      this.#at = SLACK;
    }
    this.#entryAt = this.#at;
    this.#contentAt = this.#at + prefix;
    this.#size = size;
    return this.#contentAt;
  }

  /**
   * Closes the entry begun last as a blob or tree: hashes it, writes its header, zlib framing and
   * Adler-32, and records its row. {@link lastOid} is then its oid.
   * @returns its row; an earlier row when the same object was built before (this entry is dropped)
   */
  finish(tree: boolean): number {
    const c = this.#chunk;
    const entryAt = this.#entryAt;
    const contentAt = this.#contentAt;
    const size = this.#size;
    const end = contentAt + size;
    // The git header ("tree 123\0") laid out right before the content, over the entry's own
    // header (written below) and, when one byte longer (sizes 1,000–2,047 and 10,000–65,535),
    // the last byte of the entry before (saved and put back), so header and content hash as one
    // buffer in one call.
    const headAt = contentAt - 6 - digits(size);
    const saved = headAt < entryAt ? (c[headAt] as number) : -1;
    const word = tree ? TREE_WORD : BLOB_WORD;
    for (let i = 0; i < 5; i++) c[headAt + i] = word[i] as number;
    let n = size;
    for (let i = contentAt - 2; i >= headAt + 5; i--) {
      c[i] = 0x30 + (n % 10);
      n = Math.floor(n / 10);
    }
    c[contentAt - 1] = 0;
    const view = c.subarray(headAt, end);
    const oid = oneShotHash !== undefined ? oneShotHash("sha1", view, "hex") : createHash("sha1").update(view).digest("hex");
    if (saved >= 0) c[headAt] = saved;
    this.lastOid = oid;
    const row = this.#count;
    if (row === this.#offsets.length) this.#grow();
    // Always 40 lowercase hex digits here: the loop's write, never the fallback.
    if (!writeHexOid(oid, this.#oids, row * 20)) this.#oids.write(oid, row * 20, 20, "hex");
    const earlier = this.#findOrAdd(row);
    if (earlier >= 0) return earlier;
    // The entry: type and size header, zlib header, one final stored block, content, Adler-32.
    let at = entryAt;
    let rest = Math.floor(size / 16);
    let byte = ((tree ? TREE_CODE : BLOB_CODE) << 4) | (size & 0x0f);
    while (rest > 0) {
      c[at++] = byte | 0x80;
      byte = rest & 0x7f;
      rest = Math.floor(rest / 128);
    }
    c[at++] = byte;
    c[at++] = 0x78;
    c[at++] = 0x01;
    c[at++] = 1;
    c[at++] = size & 0xff;
    c[at++] = size >>> 8;
    c[at++] = ~size & 0xff;
    c[at++] = (~size >>> 8) & 0xff;
    const adler = adlerOf(c, contentAt, end);
    c[end] = adler >>> 24;
    c[end + 1] = (adler >>> 16) & 0xff;
    c[end + 2] = (adler >>> 8) & 0xff;
    c[end + 3] = adler & 0xff;
    this.#offsets[row] = (this.#base[0] as number) + entryAt - SLACK;
    // The view hashed above now holds the entry from `headAt` on (its bytes were rewritten in
    // place): the entry's CRC-32 is the few bytes before it, the view and the Adler-32 after it,
    // with no second view per object. A git header one byte longer than the entry's own (the
    // view then starts inside the entry before) takes a view of its own.
    this.#crcs[row] = saved >= 0 ? crc32(c.subarray(entryAt, end + 4)) : crc32Range(c, end, end + 4, crc32(view, crc32Range(c, entryAt, headAt, 0)));
    this.#count = row + 1;
    this.#at = end + 4;
    return row;
  }

  /** Whether an object here has the oid `oid` (40 hex digits). */
  has(oid: Oid): boolean {
    if (this.#count === 0) return false;
    const row = this.#count;
    if (row === this.#offsets.length) this.#grow();
    this.#oids.write(oid, row * 20, 20, "hex");
    return this.#find(row) >= 0;
  }

  /** The entries' bytes as pieces, in pack order (the last chunk's used part included). */
  parts(): Buffer[] {
    const parts = this.#parts ?? [];
    return this.#at > SLACK ? [...parts, this.#chunk.subarray(SLACK, this.#at)] : [...parts];
  }

  /**
   * The objects as {@link GitObject}s (for a store that writes loose objects): each entry's
   * content is a view of its bytes here.
   */
  objects(): GitObject[] {
    const out: GitObject[] = [];
    let row = 0;
    for (const part of this.parts()) {
      let at = 0;
      while (at < part.length) {
        let c = part[at++] as number;
        const code = (c >> 4) & 7;
        let size = c & 0x0f;
        let shift = 16;
        while (c & 0x80) {
          c = part[at++] as number;
          size += (c & 0x7f) * shift;
          shift *= 128;
        }
        at += 7;
        out.push({ oid: this.#oids.toString("hex", row * 20, row * 20 + 20), type: code === TREE_CODE ? "tree" : "blob", content: part.subarray(at, at + size) });
        at += size + 4;
        row++;
      }
    }
    return out;
  }

  /** Row of an earlier object with row `row`'s oid, else -1 (row `row` is then recorded). */
  #findOrAdd(row: number): number {
    if ((this.#count + 1) * 2 > this.#slots.length) this.#rehash(slotsFor(this.#count + 1));
    const oids = this.#oids;
    const mask = this.#slots.length - 1;
    const key = oids.readUInt32BE(row * 20);
    for (let slot = key & mask; ; slot = (slot + 1) & mask) {
      const held = (this.#slots[slot] as number) - 1;
      if (held < 0) {
        this.#slots[slot] = row + 1;
        return -1;
      }
      if (sameOid(oids, held, row)) return held;
    }
  }

  /** Row of an object with row `row`'s oid (not recorded), else -1. */
  #find(row: number): number {
    const oids = this.#oids;
    const mask = this.#slots.length - 1;
    const key = oids.readUInt32BE(row * 20);
    for (let slot = key & mask; ; slot = (slot + 1) & mask) {
      const held = (this.#slots[slot] as number) - 1;
      if (held < 0) return -1;
      if (sameOid(oids, held, row)) return held;
    }
  }

  #rehash(size: number): void {
    this.#slots = new Int32Array(size);
    const mask = size - 1;
    for (let row = 0; row < this.#count; row++) {
      let slot = this.#oids.readUInt32BE(row * 20) & mask;
      while (this.#slots[slot] !== 0) slot = (slot + 1) & mask;
      this.#slots[slot] = row + 1;
    }
  }

  #grow(): void {
    const capacity = this.#offsets.length * 2;
    const oids = Buffer.allocUnsafe(capacity * 20);
    this.#oids.copy(oids, 0, 0, this.#count * 20);
    this.#oids = oids;
    const offsets = new Float64Array(capacity);
    offsets.set(this.#offsets);
    this.#offsets = offsets;
    const crcs = new Uint32Array(capacity);
    crcs.set(this.#crcs);
    this.#crcs = crcs;
  }
}

/** A power of two at least four times `rows` (the table stays at most half full). */
function slotsFor(rows: number): number {
  let size = 64;
  while (size < rows * 4) size *= 2;
  return size;
}

function sameOid(oids: Buffer, a: number, b: number): boolean {
  const x = a * 20;
  const y = b * 20;
  for (let i = 0; i < 20; i++) if (oids[x + i] !== oids[y + i]) return false;
  return true;
}
