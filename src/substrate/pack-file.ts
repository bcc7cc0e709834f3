/**
 * Git's pack format (version 2) and pack index format (version 2), as pure functions over
 * buffers: encoding the pack of one commit, parsing an index, decoding one packed object
 * (including the delta objects `git gc` writes), and copying whole entries from packs into a
 * new one without recompressing them. The bytes match what git expects, so `git fsck --strict`,
 * `git verify-pack` and isomorphic-git read these packs; see git's
 * Documentation/gitformat-pack.txt for the layout.
 *
 * Pack:  "PACK" | version 2 | object count | entries… | SHA-1 of everything before.
 * Entry: type+size header (7 bits a byte, low bits first after the first 4) | for an ofs-delta
 *        the distance back to its base | for a ref-delta the base oid | zlib stream.
 * Index: \377tOc | version 2 | fan-out (256 cumulative counts by first oid byte) | sorted oids |
 *        CRC-32 of each entry's bytes | 31-bit offsets (high bit: index into 64-bit offsets) |
 *        64-bit offsets | pack checksum | SHA-1 of everything before.
 */
import { createHash, type Hash } from "node:crypto";
import * as zlib from "node:zlib";
import { constants as zlibConstants, deflateSync } from "node:zlib";
import { adler32Of } from "./adler32.js";
import type { GitObject, ObjectType } from "./git-object.js";
import { corrupt, OFS_DELTA, REF_DELTA } from "./pack-entry.js";
import { IDX_MAGIC, LARGE_OFFSET_FLAG } from "./pack-index.js";
import { knownTreeEntryCrc, rememberTreeEntryCrc } from "./entry-crc.js";
import type { PackedObjects } from "./packed-objects.js";
import { copyBytes } from "./byte-copy.js";
import type { Oid } from "./types.js";

// Reading single entries lives in pack-entry.ts; its functions are part of this module's API.
export { parsePackIndex, type PackIndex } from "./pack-index.js";
export { applyDelta, inflateEntry, isDelta, packHasRefDeltas, packSourceOf, parseEntryHead, typeOfCode, type EntryHead, type PackSource } from "./pack-entry.js";

export const TYPE_CODES: Readonly<Record<ObjectType, number>> = { commit: 1, tree: 2, blob: 3, tag: 4 };


// CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320), as the pack index stores per entry.
const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

/** node's own CRC-32 (node ≥ 20.15): ~10× the table loop below on a 400 KB folder. */
const nativeCrc32 = (zlib as { crc32?: (data: Uint8Array, value?: number) => number }).crc32;

/** CRC-32 of `bytes`, continuing from `crc` (0 to start). */
export function crc32(bytes: Uint8Array, crc = 0): number {
  if (nativeCrc32 !== undefined) return nativeCrc32(bytes, crc);
  return crc32Table(bytes, crc);
}

/**
 * CRC-32 of `bytes[from, to)`, continuing from `crc`, by the table: for a few bytes around a
 * range that {@link crc32} reads, without a view of them.
 */
export function crc32Range(bytes: Uint8Array, from: number, to: number, crc: number): number {
  let c = ~crc >>> 0;
  for (let i = from; i < to; i++) c = (CRC_TABLE[(c ^ (bytes[i] as number)) & 0xff] as number) ^ (c >>> 8);
  return ~c >>> 0;
}

function crc32Table(bytes: Uint8Array, crc: number): number {
  let c = ~crc >>> 0;
  for (let i = 0; i < bytes.length; i++) c = (CRC_TABLE[(c ^ (bytes[i] as number)) & 0xff] as number) ^ (c >>> 8);
  return ~c >>> 0;
}

export { adler32 } from "./adler32.js";

/**
 * `content` as a zlib stream of stored (uncompressed) blocks, built without zlib. Starting a
 * zlib deflate costs ~20–30 µs per call (it allocates its window), more than the whole rest of
 * packing a 200-byte event, which level 1 would shrink by only ~15%; and a stored stream is read
 * back by {@link inflateEntry} without zlib either.
 */
export function storedZlib(content: Uint8Array): Buffer {
  if (content.length > 65_535) return Buffer.concat(storedZlibParts(content));
  // One block, one allocation (most objects: events, small folders).
  const out = Buffer.allocUnsafe(2 + 5 + content.length + 4);
  out[0] = 0x78;
  out[1] = 0x01;
  out[2] = 1;
  out.writeUInt16LE(content.length, 3);
  out.writeUInt16LE(~content.length & 0xffff, 5);
  out.set(content, 7);
  out.writeUInt32BE(adler32Of(content), 7 + content.length);
  return out;
}

/**
 * {@link storedZlib} as pieces: block headers and views of `content` itself (not copied), so a
 * 4 MB folder is copied once, into the pack. The Adler-32 is taken from {@link adler32Of}.
 */
export function storedZlibParts(content: Uint8Array): Uint8Array[] {
  const blocks = Math.max(1, Math.ceil(content.length / 65_535));
  const parts: Uint8Array[] = [];
  let head = Buffer.allocUnsafe(7);
  head[0] = 0x78;
  head[1] = 0x01;
  let at = 2;
  for (let k = 0; k < blocks; k++) {
    const start = k * 65_535;
    const len = Math.min(65_535, content.length - start);
    head[at] = k === blocks - 1 ? 1 : 0;
    head.writeUInt16LE(len, at + 1);
    head.writeUInt16LE(~len & 0xffff, at + 3);
    parts.push(head);
    if (len > 0) parts.push(content.subarray(start, start + len));
    head = Buffer.allocUnsafe(5);
    at = 0;
  }
  const trailer = Buffer.allocUnsafe(4);
  trailer.writeUInt32BE(adler32Of(content), 0);
  parts.push(trailer);
  return parts;
}


/**
 * The zlib stream of one pack entry: stored for trees and for small and big objects, level 1
 * for the blobs in between. A tree is mostly 20-byte hashes, which do not compress (a
 * 1,000-entry folder shrinks by about a third at ~0.7 ms of deflate, rewritten on every commit
 * that touches it); merged packs hold big folders as deltas anyway.
 */
export function entryPayload(type: GitObject["type"], content: Uint8Array): Uint8Array[] {
  const size = content.byteLength;
  if (size > 65_535) return size > STORE_LARGE_BYTES || type === "tree" ? storedZlibParts(content) : [deflateSync(content, { level: zlibConstants.Z_BEST_SPEED })];
  if (type === "tree" || size <= STORE_SMALL_BYTES) return [storedZlib(content)];
  return [deflateSync(content, { level: zlibConstants.Z_BEST_SPEED })];
}

/** Objects up to this size are stored: see {@link storedZlib}. */
const STORE_SMALL_BYTES = 1_024;
/**
 * Blobs over this size are stored too: deflating them would cost more than the rest of the
 * commit. `git gc` recompresses and delta-compresses either way.
 */
const STORE_LARGE_BYTES = 64 * 1_024;

/** The entry header: type in bits 4–6 of the first byte, the size 4 bits then 7 bits at a time. */
export function entryHeader(typeCode: number, size: number): Buffer {
  const bytes: number[] = [];
  let rest = Math.floor(size / 16);
  let byte = (typeCode << 4) | (size & 0x0f);
  while (rest > 0) {
    bytes.push(byte | 0x80);
    byte = rest & 0x7f;
    rest = Math.floor(rest / 128);
  }
  bytes.push(byte);
  return Buffer.from(bytes);
}

/** One entry of a pack being built: where it starts, its oid and its CRC-32. */
export interface EntryRecord {
  readonly oid: Oid;
  readonly offset: number;
  readonly crc: number;
}

/**
 * A pack's entries as its index needs them, in flat typed arrays: one row per entry (binary oid,
 * offset, CRC-32), no object per entry. A fire commit of 8,000 timers packs ~24,000 objects;
 * as {@link EntryRecord}s those were 24,000 objects kept to the end of the commit, each with a
 * CRC that does not fit a small integer (a field V8 then re-represents, undoing the optimised
 * code that read it).
 */
export class EntryTable {
  /** Oids, 20 bytes each, in the order pushed. */
  readonly oids: Buffer;
  readonly offsets: Float64Array;
  readonly crcs: Uint32Array;
  count = 0;

  /** @param capacity the most entries that will be pushed */
  constructor(capacity: number) {
    this.oids = Buffer.allocUnsafe(Math.max(1, capacity) * 20);
    this.offsets = new Float64Array(Math.max(1, capacity));
    this.crcs = new Uint32Array(Math.max(1, capacity));
  }

  /** Adds an entry (the oid as 40 hex digits). */
  push(oid: Oid, offset: number, crc: number): void {
    const i = this.count++;
    this.oids.write(oid, i * 20, 20, "hex");
    this.offsets[i] = offset;
    this.crcs[i] = crc;
  }

  /** Adds every row of `packed`, its offsets moved by `shift` (where its first entry lies in the pack). */
  addPacked(packed: PackedObjects, shift: number): void {
    const n = packed.count;
    packed.oids.copy(this.oids, this.count * 20, 0, n * 20);
    for (let row = 0; row < n; row++) {
      this.offsets[this.count + row] = packed.offsetAt(row) + shift;
      this.crcs[this.count + row] = packed.crcAt(row);
    }
    this.count += n;
  }

  /** The table of `entries` (see {@link sealPack}). */
  static of(entries: readonly EntryRecord[]): EntryTable {
    const table = new EntryTable(entries.length);
    for (const e of entries) table.push(e.oid, e.offset, e.crc);
    return table;
  }
}

/** A finished pack: its bytes, its index's bytes and its name (the pack checksum, hex). */
export interface EncodedPack {
  /** The pack's bytes (concatenated from {@link parts} on first use when there are parts). */
  readonly pack: Buffer;
  readonly idx: Buffer;
  readonly checksum: string;
  readonly count: number;
  /**
   * The pack's bytes as pieces to write one after another, when it holds big objects: their
   * payloads are views of the objects' own bytes (a 4 MB `runs/` folder at 100,000 runs), not
   * copied into one buffer. Absent: {@link pack} is the one piece. See {@link packParts}.
   */
  readonly parts?: readonly Uint8Array[];
  /**
   * Which of {@link parts} (their indexes, ascending) are views of an object's own bytes, which
   * their owner may write over later (a big folder's reused buffers, tree-buffers.ts): only the
   * other pieces are the encoder's own, never written again.
   */
  readonly lent?: readonly number[];
}

/** The pieces whose concatenation is the pack's bytes (see EncodedPack.parts). */
export function packParts(encoded: EncodedPack): readonly Uint8Array[] {
  return encoded.parts ?? [encoded.pack];
}

/** Bytes of the pack. */
export function packLength(encoded: EncodedPack): number {
  if (encoded.parts === undefined) return encoded.pack.length;
  let n = 0;
  for (const part of encoded.parts) n += part.byteLength;
  return n;
}

/** An {@link EncodedPack} held as pieces; `pack` is built only if asked for. */
class PiecedPack implements EncodedPack {
  #pack: Buffer | undefined;
  constructor(
    readonly parts: readonly Uint8Array[],
    readonly lent: readonly number[],
    readonly idx: Buffer,
    readonly checksum: string,
    readonly count: number,
  ) {}

  get pack(): Buffer {
    this.#pack ??= Buffer.concat(this.parts);
    return this.#pack;
  }
}

/**
 * Lays out a pack's header and entries in one allocation (the parts copied once), leaving room
 * for the trailer; `size` is where the trailer goes.
 * @param parts entry bytes in pack order, after a placeholder for the header
 */
export function layoutPack(parts: readonly Uint8Array[], count: number): { pack: Buffer; size: number } {
  let size = 12;
  for (let i = 1; i < parts.length; i++) size += (parts[i] as Uint8Array).length;
  const pack = Buffer.allocUnsafe(size + 20);
  pack.write("PACK", 0, "latin1");
  pack.writeUInt32BE(2, 4);
  pack.writeUInt32BE(count, 8);
  let at = 12;
  for (let i = 1; i < parts.length; i++) {
    const part = parts[i] as Uint8Array;
    pack.set(part, at);
    at += part.length;
  }
  return { pack, size };
}

/** Writes the trailer (the SHA-1 of everything before it) and builds the index. */
export function sealPack(pack: Buffer, size: number, trailer: Buffer, entries: readonly EntryRecord[]): EncodedPack {
  trailer.copy(pack, size);
  return { pack, idx: encodeIndex(EntryTable.of(entries), trailer), checksum: trailer.toString("hex"), count: entries.length };
}

/** {@link sealPack}, giving the event loop back between steps of building the index. */
export async function sealPackGently(pack: Buffer, size: number, trailer: Buffer, entries: readonly EntryRecord[]): Promise<EncodedPack> {
  trailer.copy(pack, size);
  const steps = buildIndex(EntryTable.of(entries), trailer);
  for (;;) {
    const step = steps.next();
    if (step.done === true) return { pack, idx: step.value, checksum: trailer.toString("hex"), count: entries.length };
    await new Promise((resolve) => setImmediate(resolve));
  }
}

const sha1Now = (body: Buffer): Buffer => createHash("sha1").update(body).digest();

/**
 * Builds one pack holding `objects` whole (no deltas); see {@link entryPayload} for how each is
 * compressed. Duplicate oids are stored once. Nothing is written here. Small objects are laid
 * out in one buffer; a big one's payload (see {@link EncodedPack.parts}) is referenced, not
 * copied, and checksummed where it lies. `packed`: entries built beforehand (packed-objects.ts),
 * placed first as they are (referenced as pieces, or copied in when the pack is small) with their
 * index rows; an object of `objects` they hold is not laid out again.
 */
export function encodePack(objects: readonly GitObject[], packed?: PackedObjects): EncodedPack {
  const layout = planEntries(objects, packed);
  const out = startPieces(layout);
  const entries = new EntryTable(layout.count);
  writeEntries(out, layout, entries, 0, layout.items.length);
  return sealPieces(out, layout, entries, sha1Of(out, layout));
}

/** Where {@link writeEntries} writes: the buffer of small entries and the pieces so far. */
interface Pieces {
  /** Small entries and every entry's header, in pack order (plus room for the trailer when {@link external} is 0). */
  readonly flat: Buffer;
  /** Where the next byte goes in {@link flat}. */
  at: number;
  /** Start of the run of {@link flat} not yet pushed to {@link parts}. */
  runStart: number;
  readonly parts: Uint8Array[];
  /** Indexes of {@link parts} that are objects' payloads (see EncodedPack.lent). */
  readonly lent: number[];
  /** Entries whose payload is referenced (see planEntries), plus one for entries built beforehand. */
  readonly external: number;
}

function startPieces(layout: Layout): Pieces {
  // Without big objects the pack is the one buffer, trailer included, as it always was.
  const flat = Buffer.allocUnsafe(layout.external === 0 ? layout.size + 20 : layout.flatSize);
  return { flat, at: 0, runStart: 0, parts: [], lent: [], external: layout.external };
}

/** The SHA-1 of everything before the trailer. */
function sha1Of(out: Pieces, layout: Layout): Buffer {
  if (out.external === 0) return sha1Now(out.flat.subarray(0, layout.size));
  if (out.at > out.runStart) out.parts.push(out.flat.subarray(out.runStart, out.at));
  out.runStart = out.at;
  const ahead = prefixFor(layout);
  if (ahead !== undefined) {
    // The pieces the prefix covers end where its bytes end: the hash goes on from the next one.
    let left = ahead.bytes;
    let i = 0;
    while (left > 0 && i < out.parts.length) left -= (out.parts[i++] as Uint8Array).byteLength;
    if (left === 0) {
      prefixesUsed++;
      for (; i < out.parts.length; i++) ahead.hash.update(out.parts[i] as Uint8Array);
      return ahead.hash.digest();
    }
  }
  const hash = createHash("sha1");
  for (const part of out.parts) hash.update(part);
  return hash.digest();
}

/**
 * The start of a pack's trailer hash, taken before the pack is encoded (design notes §81): the
 * SHA-1 state after the pack's header (`count` objects), the entries of `packed` and the entry
 * of the tree with `tree` as content, in that order. A fire commit takes it while the tree's
 * oid is hashed on another thread (tree-hasher.ts): nothing in these bytes depends on that oid.
 * The encoder goes on from it when the pack it lays out starts with exactly these bytes (same
 * count, the same `packed` referenced as pieces, this tree's entry first after them); otherwise
 * it hashes the whole pack as always. Used once.
 */
export class PackPrefix {
  /** Bytes hashed into {@link hash}. */
  readonly bytes: number;
  readonly hash: Hash;
  used = false;

  constructor(
    readonly packed: PackedObjects,
    readonly count: number,
    readonly tree: Uint8Array,
  ) {
    const hash = createHash("sha1");
    const head = Buffer.allocUnsafe(12);
    head.write("PACK", 0, "latin1");
    head.writeUInt32BE(2, 4);
    head.writeUInt32BE(count, 8);
    hash.update(head);
    let bytes = 12;
    for (const part of packed.parts()) {
      hash.update(part);
      bytes += part.byteLength;
    }
    const entryHead = entryHeader(TYPE_CODES.tree, tree.byteLength);
    hash.update(entryHead);
    bytes += entryHead.byteLength;
    for (const part of entryPayload("tree", tree)) {
      hash.update(part);
      bytes += part.byteLength;
    }
    this.bytes = bytes;
    this.hash = hash;
  }
}

/** Packs whose trailer hash went on from a {@link PackPrefix}, in this process (for tests). */
let prefixesUsed = 0;

/** How many packs this process sealed from a {@link PackPrefix} (see design notes §81). */
export function packPrefixesUsed(): number {
  return prefixesUsed;
}

/** `layout`'s packed entries' {@link PackPrefix} when the pack starts with its bytes (then marked used). */
function prefixFor(layout: Layout): PackPrefix | undefined {
  const prefix = layout.packed?.prefix;
  if (prefix === undefined || prefix.used || prefix.packed !== layout.packed || layout.inline || prefix.count !== layout.count) return undefined;
  const first = layout.items[0];
  if (first === undefined || first.payload === null || first.object.type !== "tree" || first.object.content !== prefix.tree) return undefined;
  prefix.used = true;
  return prefix;
}

function sealPieces(out: Pieces, layout: { size: number }, entries: EntryTable, trailer: Buffer): EncodedPack {
  const idx = encodeIndex(entries, trailer);
  if (out.external === 0) {
    trailer.copy(out.flat, layout.size);
    return { pack: out.flat, idx, checksum: trailer.toString("hex"), count: entries.count };
  }
  return new PiecedPack([...out.parts, trailer], out.lent, idx, trailer.toString("hex"), entries.count);
}

/** Objects encoded between two pauses of {@link encodePackGently}. */
const ENCODE_STEP = 256;

/**
 * {@link encodePack} for a big commit (a fire commit of thousands of timers): awaits `pause`
 * every {@link ENCODE_STEP} objects and between steps of building the index, so the caller's
 * time slicer gives the event loop its turns. Same bytes as encodePack.
 */
export async function encodePackGently(objects: readonly GitObject[], pause: () => Promise<void>, packed?: PackedObjects): Promise<EncodedPack> {
  const layout = planEntries(objects, packed);
  await pause();
  const out = startPieces(layout);
  const entries = new EntryTable(layout.count);
  // Once at least: the first step writes the pack's header, also for a pack of no objects.
  for (let from = 0; from === 0 || from < layout.items.length; from += ENCODE_STEP) {
    writeEntries(out, layout, entries, from, Math.min(layout.items.length, from + ENCODE_STEP));
    await pause();
  }
  const trailer = sha1Of(out, layout);
  await pause();
  const steps = buildIndex(entries, trailer);
  for (;;) {
    const step = steps.next();
    if (step.done === true) {
      if (out.external > 0) return new PiecedPack([...out.parts, trailer], out.lent, step.value, trailer.toString("hex"), entries.count);
      trailer.copy(out.flat, layout.size);
      return { pack: out.flat, idx: step.value, checksum: trailer.toString("hex"), count: entries.count };
    }
    await pause();
  }
}

/**
 * One entry to lay out: its object, where it starts in the pack, and its payload when that is
 * not a single stored block (deflated bytes, or a big object's stored blocks as views).
 */
interface PlannedEntry {
  readonly object: GitObject;
  readonly offset: number;
  readonly payload: readonly Uint8Array[] | null;
}

/** Where a pack's entries go (see planEntries). */
interface Layout {
  readonly items: PlannedEntry[];
  /** Bytes before the trailer. */
  readonly size: number;
  readonly flatSize: number;
  readonly external: number;
  /** Entries in the pack: items and the ones built beforehand. */
  readonly count: number;
  readonly packed: PackedObjects | undefined;
  /** The entries built beforehand are copied into the flat buffer (a small pack: one piece), not referenced. */
  readonly inline: boolean;
}

/**
 * A pack up to this size holding entries built beforehand is laid out in one buffer (their
 * bytes copied): a small commit's pack is then written in one call, as before.
 */
const INLINE_PACKED_BYTES = 64 * 1_024;

/**
 * Where each distinct object goes in a pack (after the 12-byte header and the entries of
 * `packed`, built beforehand), and the size before the
 * trailer. Small objects (most of a commit: events, run folders) are written in place as one
 * stored block: no buffer of their own, no copy. The others' payloads (stored blocks of a big
 * object's own bytes, or a deflated blob) are referenced as pieces ("external"); `flatSize` is
 * what the rest takes: the header, the small entries and every entry's header. `packed`'s
 * entries are pieces of their own (they count as one external); an object it holds already is
 * not laid out again.
 */
function planEntries(objects: readonly GitObject[], packed?: PackedObjects): Layout {
  const items: PlannedEntry[] = [];
  const seen = new Set<Oid>();
  const before = packed === undefined || packed.count === 0 ? undefined : packed;
  let at = 12 + (before?.length ?? 0);
  let flatSize = 12;
  let external = 0;
  for (const object of objects) {
    if (seen.has(object.oid) || before?.has(object.oid) === true) continue;
    seen.add(object.oid);
    const size = object.content.byteLength;
    const single = size <= 65_535 && (object.type === "tree" || size <= STORE_SMALL_BYTES);
    const payload = single ? null : entryPayload(object.type, object.content);
    let length = 0;
    if (payload === null) length = 2 + 5 + size + 4;
    else for (const part of payload) length += part.length;
    items.push({ object, offset: at, payload });
    at += entryHeaderLength(size) + length;
    flatSize += entryHeaderLength(size) + (payload === null ? length : 0);
    if (payload !== null) external++;
  }
  const inline = before !== undefined && external === 0 && at <= INLINE_PACKED_BYTES;
  if (inline) flatSize += before.length;
  else if (before !== undefined) external++;
  return { items, size: at, flatSize, external, count: items.length + (before?.count ?? 0), packed: before, inline };
}

/**
 * Writes the pack header (when `from` is 0) and entries `from` … `to` - 1 of `layout`: small
 * ones into `out.flat`, a big one's header there and its payload as pieces of its own.
 */
function writeEntries(out: Pieces, layout: Layout, entries: EntryTable, from: number, to: number): void {
  const pack = out.flat;
  if (from === 0) {
    pack.write("PACK", 0, "latin1");
    pack.writeUInt32BE(2, 4);
    pack.writeUInt32BE(layout.count, 8);
    out.at = 12;
    const packed = layout.packed;
    if (packed !== undefined) {
      // The entries built beforehand come first, as they lie (copied in when the pack is small);
      // their rows as they are.
      if (layout.inline) {
        for (const part of packed.parts()) {
          pack.set(part, out.at);
          out.at += part.length;
        }
      } else {
        out.parts.push(pack.subarray(0, 12));
        for (const part of packed.parts()) out.parts.push(part);
        out.runStart = 12;
      }
      entries.addPacked(packed, 12);
    }
  }
  for (let i = from; i < to; i++) {
    const { object, offset, payload } = layout.items[i] as PlannedEntry;
    const content = object.content;
    const size = content.byteLength;
    const start = out.at;
    let at = writeEntryHeader(pack, start, TYPE_CODES[object.type], size);
    if (payload !== null && out.external > 0) {
      // The header stays in the flat buffer; the payload goes out as it is.
      out.parts.push(pack.subarray(out.runStart, at));
      out.runStart = at;
      out.at = at;
      // A big folder spliced from one this store packed before: its CRC-32 was patched (entry-crc.ts).
      const tree = object.type === "tree";
      const known = tree ? knownTreeEntryCrc(content) : undefined;
      let crc = known ?? crc32(pack.subarray(start, at));
      for (const part of payload) {
        out.lent.push(out.parts.length);
        out.parts.push(part);
        if (known === undefined) crc = crc32(part, crc);
      }
      if (tree && known === undefined) rememberTreeEntryCrc(content, crc);
      entries.push(object.oid, offset, crc);
      continue;
    }
    if (payload === null) {
      // One stored block: see storedZlib.
      pack[at] = 0x78;
      pack[at + 1] = 0x01;
      pack[at + 2] = 1;
      pack.writeUInt16LE(size, at + 3);
      pack.writeUInt16LE(~size & 0xffff, at + 5);
      pack.set(content, at + 7);
      at = pack.writeUInt32BE(adler32Of(content), at + 7 + size);
    } else {
      for (const part of payload) {
        pack.set(part, at);
        at += part.length;
      }
    }
    entries.push(object.oid, offset, crc32(pack.subarray(start, at)));
    out.at = at;
  }
}

/** Bytes of the entry header for an object of `size` bytes (see {@link entryHeader}). */
function entryHeaderLength(size: number): number {
  let n = 1;
  for (let rest = Math.floor(size / 16); rest > 0; rest = Math.floor(rest / 128)) n++;
  return n;
}

/** Writes {@link entryHeader}'s bytes at `at`; returns where the payload goes. */
function writeEntryHeader(out: Buffer, at: number, typeCode: number, size: number): number {
  let rest = Math.floor(size / 16);
  let byte = (typeCode << 4) | (size & 0x0f);
  while (rest > 0) {
    out[at++] = byte | 0x80;
    byte = rest & 0x7f;
    rest = Math.floor(rest / 128);
  }
  out[at++] = byte;
  return at;
}

/**
 * Builds an index in steps: the generator pauses every few thousand entries, so an async caller
 * (a merge beside live commits) can give the event loop back; a sync caller runs it through.
 */
function* buildIndex(entries: EntryTable, packChecksum: Buffer): Generator<void, Buffer, void> {
  const n = entries.count;
  const oids = entries.oids;
  // Sorted as numbers, with no comparator: each entry's key is its oid's first bits with its row
  // number below them (exact in a double: at most 53 bits), so one native sort orders the rows;
  // rows whose keys' oid bits tie are then put in full oid order among themselves.
  const rowBits = Math.max(1, Math.ceil(Math.log2(n + 1)));
  const prefixBits = Math.min(32, 53 - rowBits);
  const rowScale = 2 ** rowBits;
  const prefixShift = 2 ** (32 - prefixBits);
  const keys = sortKeys(oids, n, prefixShift, rowScale);
  yield;
  const order = rowOrder(keys, oids, rowScale);
  const large = countLarge(entries.offsets, n);
  const out = Buffer.alloc(8 + 256 * 4 + n * 28 + large * 8 + 40);
  out.writeUInt32BE(IDX_MAGIC, 0);
  out.writeUInt32BE(2, 4);
  writeFanout(out, oids, n);
  const at: IndexPlaces = { oids: 8 + 1024, crcs: 8 + 1024 + n * 20, offsets: 8 + 1024 + n * 24, large: 8 + 1024 + n * 28 };
  let nextLarge = 0;
  // A pause before rows INDEX_STEP - 1, 2 × INDEX_STEP - 1, …
  for (let from = 0; from < n; ) {
    const to = Math.min(n, (Math.floor((from + 1) / INDEX_STEP) + 1) * INDEX_STEP - 1);
    nextLarge = writeRows(out, at, entries, order, from, to, nextLarge);
    from = to;
    if (from < n) yield;
  }
  const checksumAt = at.large + large * 8;
  packChecksum.copy(out, checksumAt);
  createHash("sha1").update(out.subarray(0, checksumAt + 20)).digest().copy(out, checksumAt + 20);
  return out;
}

// buildIndex's loops are functions of their own: buildIndex runs once per pack written, its loops
// once per entry, and only they are compiled by the optimiser (see design notes §58).

/** The sort keys of rows 0 … n - 1 (see buildIndex), sorted. */
function sortKeys(oids: Buffer, n: number, prefixShift: number, rowScale: number): Float64Array {
  const keys = new Float64Array(n);
  for (let i = 0; i < n; i++) keys[i] = Math.floor(oids.readUInt32BE(i * 20) / prefixShift) * rowScale + i;
  return keys.sort();
}

/** The rows in oid order, from their sorted keys: ties in the keys' oid bits put in full oid order. */
function rowOrder(keys: Float64Array, oids: Buffer, rowScale: number): Uint32Array {
  const n = keys.length;
  const order = new Uint32Array(n);
  for (let i = 0; i < n; i++) order[i] = (keys[i] as number) % rowScale;
  for (let i = 0; i < n; ) {
    const prefix = Math.floor((keys[i] as number) / rowScale);
    let j = i + 1;
    while (j < n && Math.floor((keys[j] as number) / rowScale) === prefix) j++;
    if (j - i > 1) {
      const tied = Array.from(order.subarray(i, j)).sort((x, y) => oids.compare(oids, y * 20, y * 20 + 20, x * 20, x * 20 + 20));
      order.set(tied, i);
    }
    i = j;
  }
  return order;
}

/** How many of the first `n` offsets need the index's 8-byte table. */
function countLarge(offsets: Float64Array, n: number): number {
  let large = 0;
  for (let i = 0; i < n; i++) if ((offsets[i] as number) >= LARGE_OFFSET_FLAG) large++;
  return large;
}

/** The index's fan-out table (256 running counts by first oid byte) at byte 8 of `out`. */
function writeFanout(out: Buffer, oids: Buffer, n: number): void {
  const fanout = new Uint32Array(256);
  for (let i = 0; i < n; i++) (fanout[oids[i * 20] as number] as number)++;
  let running = 0;
  for (let i = 0; i < 256; i++) {
    running += fanout[i] as number;
    out.writeUInt32BE(running, 8 + i * 4);
  }
}

/** Where an index's tables start. */
interface IndexPlaces {
  readonly oids: number;
  readonly crcs: number;
  readonly offsets: number;
  readonly large: number;
}

/**
 * Writes the index rows `from` … `to` - 1 (in oid order) into `out`'s tables.
 * @returns the next free row of the 8-byte offset table
 */
function writeRows(out: Buffer, at: IndexPlaces, entries: EntryTable, order: Uint32Array, from: number, to: number, nextLarge: number): number {
  const oids = entries.oids;
  for (let i = from; i < to; i++) {
    const row = order[i] as number;
    copyBytes(oids, row * 20, row * 20 + 20, out, at.oids + i * 20);
    out.writeUInt32BE(entries.crcs[row] as number, at.crcs + i * 4);
    const offset = entries.offsets[row] as number;
    if (offset < LARGE_OFFSET_FLAG) {
      out.writeUInt32BE(offset, at.offsets + i * 4);
    } else {
      out.writeUInt32BE((LARGE_OFFSET_FLAG | nextLarge) >>> 0, at.offsets + i * 4);
      out.writeBigUInt64BE(BigInt(offset), at.large + nextLarge * 8);
      nextLarge++;
    }
  }
  return nextLarge;
}

/** Entries written between two pauses of {@link buildIndex}. */
const INDEX_STEP = 4_096;

/**
 * The version-2 index of a pack whose entries are `entries` (any order) and whose trailer is
 * `packChecksum` (20 bytes), built as for a pack written here, awaiting `pause` every
 * {@link INDEX_STEP} entries: for an index rebuilt from a pack on disk (pack-reindex.ts).
 */
export async function encodeIndexGently(entries: EntryTable, packChecksum: Buffer, pause: () => Promise<void>): Promise<Buffer> {
  const steps = buildIndex(entries, packChecksum);
  for (;;) {
    const step = steps.next();
    if (step.done === true) return step.value;
    await pause();
  }
}

function encodeIndex(entries: EntryTable, packChecksum: Buffer): Buffer {
  const steps = buildIndex(entries, packChecksum);
  for (;;) {
    const step = steps.next();
    if (step.done === true) return step.value;
  }
}
