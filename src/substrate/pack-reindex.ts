/**
 * A pack's own checks, read from its file in chunks: its trailer (the SHA-1 of everything before
 * it), and its index rebuilt from its entries, as `git index-pack` does, for a pack whose `.idx`
 * is damaged or lost (see pack-reader.ts); or, when the pack itself is damaged too, an index in
 * memory of the entries that still read (design notes §79).
 *
 * All read the pack through {@link CHUNK_BYTES} ranges (the window is grown, doubling, for an
 * entry longer than that), never the whole file at once, and await `pause` between chunks and
 * every few entries, so a pack of hundreds of MB never holds the event loop for long (one big
 * object is still inflated in one call, as reads do).
 */
import { createHash } from "node:crypto";
import { inflateRawSync, inflateSync } from "node:zlib";
import { WorkflowHostError } from "../errors.js";
import type { FsAdapter } from "./fs-adapter.js";
import { hashObject, type ObjectType } from "./git-object.js";
import { corrupt, OFS_DELTA, REF_DELTA } from "./pack-entry.js";
import { applyDelta, crc32, encodeIndexGently, EntryTable, type PackIndex, parseEntryHead, parsePackIndex, TYPE_CODES, typeOfCode } from "./pack-file.js";

/** Bytes read per call, hashed or walked between two pauses. */
export const CHUNK_BYTES = 1024 * 1024;
/** Entries decoded between two pauses (small entries: a few µs each). */
const ENTRIES_PER_STEP = 256;
/** Decoded contents kept as delta bases while walking (bytes). */
const BASE_CACHE_BYTES = 32 * 1024 * 1024;
/** Delta chains deeper than git's default depth (50) by a margin are refused as corrupt. */
const MAX_DELTA_DEPTH = 64;
/** Most bytes a damaged entry's stream is inflated to while looking for its end (see salvagePackIndex). */
const MAX_DAMAGED_BYTES = 256 * 1024 * 1024;

/** Reads the bytes [position, position + length) of the file (fewer at its end). */
type ReadRange = (position: number, length: number) => Promise<Uint8Array>;

function rangeReader(fs: FsAdapter, path: string): ReadRange {
  return (position, length) => fs.readRange(path, position, length);
}

/**
 * The SHA-1 of the first `size - 20` bytes of the pack at `path` and its last 20 bytes (its
 * trailer), read in chunks with `pause` between them; null when `stop()` turned true meanwhile.
 * @throws the file system's error (ENOENT when the pack vanished); `object_corrupt` when the
 *   file is shorter than `size`
 */
export async function packTrailer(
  fs: FsAdapter,
  path: string,
  size: number,
  pause: () => Promise<void>,
  stop: () => boolean = () => false,
): Promise<{ computed: Buffer; trailer: Buffer } | null> {
  const name = path.replace(/^.*\//, "");
  if (size < 32) throw corrupt(name, "shorter than a pack header and trailer");
  const read = rangeReader(fs, path);
  const hash = createHash("sha1");
  const body = size - 20;
  for (let at = 0; at < body; at += CHUNK_BYTES) {
    if (stop()) return null;
    const chunk = await read(at, Math.min(CHUNK_BYTES, body - at));
    if (chunk.byteLength !== Math.min(CHUNK_BYTES, body - at)) throw corrupt(name, "shorter than its size");
    hash.update(chunk);
    await pause();
  }
  const trailer = await read(body, 20);
  if (trailer.byteLength !== 20) throw corrupt(name, "shorter than its size");
  return { computed: hash.digest(), trailer: Buffer.from(trailer.buffer, trailer.byteOffset, 20) };
}

/** A pack's bytes seen through one window read from its file, moved and grown on demand. */
class PackWindow {
  private bytes: Buffer = Buffer.alloc(0);
  private start = 0;

  constructor(
    private readonly read: ReadRange,
    /** Where the entries end (the trailer's start). */
    private readonly end: number,
    private readonly name: string,
  ) {}

  /** The bytes from `at` up to `at + want` (or the entries' end), as a view of the window. */
  async view(at: number, want: number): Promise<Buffer> {
    const stop = Math.min(this.end, at + want);
    if (at < this.start || stop > this.start + this.bytes.length) {
      const length = Math.min(this.end - at, Math.max(want, CHUNK_BYTES));
      const read = await this.read(at, length);
      if (read.byteLength !== length) throw corrupt(this.name, "shorter than its size");
      this.bytes = Buffer.from(read.buffer, read.byteOffset, read.byteLength);
      this.start = at;
    }
    return this.bytes.subarray(at - this.start, stop - this.start);
  }

  /** Whether a view from `at` of `length` bytes reaches the entries' end. */
  reachesEnd(at: number, length: number): boolean {
    return at + length >= this.end;
  }
}

/** The payload of the entry whose zlib stream starts `bytes`, and how many bytes the stream took; null when it ends past `bytes`. */
function inflateFrom(name: string, bytes: Buffer, size: number, complete: boolean): { content: Buffer; used: number } | null {
  let result: { buffer: Buffer; engine: { bytesWritten: number } };
  try {
    result = inflateSync(bytes, { info: true, maxOutputLength: Math.max(1, size) }) as unknown as typeof result;
  } catch (error) {
    if (!complete && (error as { code?: string }).code === "Z_BUF_ERROR") return null;
    throw corrupt(name, `an entry does not inflate (${(error as Error).message})`);
  }
  if (result.buffer.length !== size) throw corrupt(name, `entry inflates to ${result.buffer.length} bytes, header says ${size}`);
  return { content: result.buffer, used: result.engine.bytesWritten };
}

/**
 * The version-2 index of the pack at `path` (`size` bytes), rebuilt from its entries as
 * `git index-pack` builds it (the same bytes): only once its trailer checksum matches its bytes.
 * Every entry is inflated and checked against the size its header gives; deltas (by offset or
 * by oid, their base in the same pack) are resolved against their bases; each object is hashed
 * to its oid and each entry's bytes to their CRC-32.
 * @param pause awaited between chunks of work (see module comment)
 * @returns the index's bytes and the pack's checksum (hex)
 * @throws `object_corrupt` naming the pack (`data.reason`) when the trailer does not match, or
 *   an entry does not decode, or a delta's base is not in the pack; the file system's error
 *   (ENOENT when the pack vanished)
 */
export async function rebuildPackIndex(fs: FsAdapter, path: string, size: number, pause: () => Promise<void>): Promise<{ idx: Buffer; checksum: string }> {
  const name = path.replace(/^.*\//, "").replace(/\.pack$/, "");
  const sums = (await packTrailer(fs, path, size, pause)) as { computed: Buffer; trailer: Buffer };
  if (!sums.computed.equals(sums.trailer)) throw corrupt(name, "the pack fails its trailer checksum");
  const walk = await walkEntries(fs, path, size, pause, false);
  const table = new EntryTable(walk.count);
  for (let i = 0; i < walk.count; i++) table.push(walk.oids.toString("hex", i * 20, i * 20 + 20), walk.offsets[i] as number, walk.crcs[i] as number);
  return { idx: await encodeIndexGently(table, sums.trailer, pause), checksum: sums.trailer.toString("hex") };
}

/** What {@link salvagePackIndex} could index of a damaged pack. */
export interface SalvagedPack {
  /**
   * An index of the entries that were read whole, in memory only: never written (git would refuse
   * the pack all the same, and an index on disk would make the pack look sound). Its `endOf`
   * gives each indexed entry's own end, its `crcAt` that entry's CRC-32, its `packChecksum` the
   * pack's last 20 bytes (which the pack's bytes do not hash to).
   */
  readonly index: PackIndex;
  /** Objects indexed. */
  readonly indexed: number;
  /** Entries the pack's header counts that could not be read (damaged, past a cut, or deltas on them). */
  readonly unreadable: number;
  /** The first thing found wrong (an entry's damage, where the pack ends), for the report. */
  readonly reason: string;
}

/**
 * An index of what can still be read of the pack at `path` (`size` bytes) when it cannot be
 * rebuilt whole (see {@link rebuildPackIndex}: it fails its trailer checksum, or an entry does not
 * decode): every entry is walked as there, and one that does not inflate to the size its header
 * gives, or whose delta does not apply or has no readable base, is left out. Nothing is guessed:
 * an object is indexed under the hash of its content, so bytes damaged into another content can
 * only be indexed under an oid no tree names. After a damaged entry the walk goes on past its
 * zlib stream when that stream still ends (a byte flipped inside it, its Adler-32); when it does
 * not (its header is damaged, the file ends inside it: a pack truncated by a crash) the walk
 * ends there and every later entry is unreadable.
 * @param pause awaited between chunks of work (see module comment)
 * @throws `object_corrupt` naming the pack when it is not a version 2 pack (nothing can be read);
 *   the file system's error (ENOENT when the pack vanished)
 */
export async function salvagePackIndex(fs: FsAdapter, path: string, size: number, pause: () => Promise<void>): Promise<SalvagedPack> {
  const name = path.replace(/^.*\//, "").replace(/\.pack$/, "");
  const walk = await walkEntries(fs, path, size, pause, true);
  const table = new EntryTable(walk.count);
  const starts: number[] = [];
  const stops: number[] = [];
  for (let i = 0; i < walk.count; i++) {
    if (walk.types[i] === 0) continue;
    table.push(walk.oids.toString("hex", i * 20, i * 20 + 20), walk.offsets[i] as number, walk.crcs[i] as number);
    starts.push(walk.offsets[i] as number);
    stops.push(walk.ends[i] as number);
  }
  const last = size >= 32 ? await fs.readRange(path, size - 20, 20) : new Uint8Array(0);
  const trailer = last.byteLength === 20 ? Buffer.from(last.buffer, last.byteOffset, 20) : Buffer.alloc(20);
  const parsed = parsePackIndex(name, await encodeIndexGently(table, trailer, pause), size);
  const index: PackIndex = {
    ...parsed,
    // Each entry's own end: the next indexed entry may start after unreadable bytes.
    endOf(offset) {
      let lo = 0;
      let hi = starts.length;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if ((starts[mid] as number) < offset) lo = mid + 1;
        else hi = mid;
      }
      if (starts[lo] === offset) return stops[lo] as number;
      return lo < starts.length ? (starts[lo] as number) : size;
    },
    useReverseIndex() {},
  };
  return { index, indexed: table.count, unreadable: walk.declared - table.count, reason: walk.problem ?? "the pack fails its trailer checksum" };
}

/** A walk over a pack's entries (see walkEntries). */
interface Walk {
  /** Entries walked (their rows below are set). */
  readonly count: number;
  /** Entries the pack's header counts. */
  readonly declared: number;
  readonly offsets: Float64Array;
  readonly ends: Float64Array;
  readonly crcs: Uint32Array;
  readonly oids: Buffer;
  /** Object type code (1–4) of each entry resolved, 0 for one not (only when salvaging). */
  readonly types: Uint8Array;
  /** The first problem met when salvaging, else null. */
  readonly problem: string | null;
}

/**
 * Walks the entries of the pack at `path`, inflating, resolving and hashing each (see
 * {@link rebuildPackIndex}). Strict (`salvage` false): any entry that does not decode, or entries
 * that do not fill the pack up to its trailer, throw. Salvaging: such entries are left unresolved
 * (see {@link salvagePackIndex}).
 */
async function walkEntries(fs: FsAdapter, path: string, size: number, pause: () => Promise<void>, salvage: boolean): Promise<Walk> {
  const name = path.replace(/^.*\//, "").replace(/\.pack$/, "");
  const read = rangeReader(fs, path);
  // A damaged pack may be cut anywhere: its entries are looked for up to the file's end.
  const end = salvage ? size : size - 20;
  const window = new PackWindow(read, end, name);
  const header = await window.view(0, 12);
  if (header.length < 12 || header.toString("latin1", 0, 4) !== "PACK" || ![2, 3].includes(header.readUInt32BE(4))) throw corrupt(name, "not a version 2 pack");
  const declared = header.readUInt32BE(8);
  // Every entry takes at least a header byte and a zlib stream (8 bytes): a count beyond that is a lie.
  if (!salvage && declared * 9 > end - 12) throw corrupt(name, `claims ${declared} entries in ${size} bytes`);
  const n = Math.min(declared, Math.max(0, Math.floor((end - 12) / 9)));
  /** The first problem met (salvaging). */
  const found: { problem: string | null } = { problem: null };
  /** Salvaging: notes the first problem; strict: throws `error`. */
  const unreadable = (error: unknown): void => {
    if (!salvage || !(error instanceof WorkflowHostError)) throw error;
    found.problem ??= typeof error.data.reason === "string" ? error.data.reason : error.message;
  };
  const offsets = new Float64Array(n);
  const ends = new Float64Array(n);
  const crcs = new Uint32Array(n);
  const oids = Buffer.alloc(n * 20);
  /** Object type code (1–4) of each entry once resolved, 0 before. */
  const types = new Uint8Array(n);
  /**
   * Resolved entries by oid, for ref-delta bases: made at the first ref-delta met (git's packs
   * and the store's hold ofs-deltas only, and this map is most of the walk's memory).
   */
  let byOid: Map<string, number> | null = null;
  const oidMap = (): Map<string, number> => {
    if (byOid === null) {
      byOid = new Map();
      for (let k = 0; k < n; k++) if (types[k] !== 0) byOid.set(oids.toString("hex", k * 20, k * 20 + 20), k);
    }
    return byOid;
  };
  /** Entry number of the entry starting at `offset`, among the first `walked` (offsets ascend), or -1. */
  const entryAt = (offset: number, walked: number): number => {
    let lo = 0;
    let hi = walked;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((offsets[mid] as number) < offset) lo = mid + 1;
      else hi = mid;
    }
    return lo < walked && offsets[lo] === offset ? lo : -1;
  };
  /** Entries walked so far (all of them after the walk). */
  let walked = 0;
  /** Deltas whose base is not resolved yet (a ref-delta to a later entry, or to one such). */
  const waiting: number[] = [];
  /** Decoded contents by entry number, oldest first, up to BASE_CACHE_BYTES. */
  const contents = new Map<number, Buffer>();
  let cached = 0;
  const keep = (i: number, content: Buffer): void => {
    if (content.length > BASE_CACHE_BYTES / 4) return;
    contents.set(i, content);
    cached += content.length;
    for (const [k, v] of contents) {
      if (cached <= BASE_CACHE_BYTES) break;
      contents.delete(k);
      cached -= v.length;
    }
  };

  /** The base entry number of delta entry `i` (whose header is `head`), or -1 when not (yet) known. */
  const baseOf = (i: number, head: { typeCode: number; baseDistance?: number; baseOid?: string }): number => {
    if (head.typeCode === OFS_DELTA) {
      const base = entryAt((offsets[i] as number) - (head.baseDistance as number), walked);
      if (base < 0) throw corrupt(name, `a delta at ${offsets[i] as number} points at no entry`);
      return types[base] === 0 ? -1 : base;
    }
    return oidMap().get(head.baseOid as string) ?? -1;
  };

  const resolved = (i: number, type: ObjectType, content: Buffer): void => {
    const object = hashObject(type, content);
    oids.write(object.oid, i * 20, 20, "hex");
    types[i] = TYPE_CODES[type];
    byOid?.set(object.oid, i);
    keep(i, content);
  };

  /** The content of resolved entry `i`, decoded again (through its bases) when not cached. */
  const contentOf = async (i: number, depth: number): Promise<Buffer> => {
    const known = contents.get(i);
    if (known !== undefined) return known;
    if (depth > MAX_DELTA_DEPTH) throw corrupt(name, `delta chain deeper than ${MAX_DELTA_DEPTH}`);
    const start = offsets[i] as number;
    const raw = await read(start, (ends[i] as number) - start);
    const bytes = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
    const head = parseEntryHead(name, bytes);
    const payload = (inflateFrom(name, bytes.subarray(head.dataAt), head.size, true) as { content: Buffer }).content;
    const content = head.typeCode === OFS_DELTA || head.typeCode === REF_DELTA ? applyDelta(name, await contentOf(baseOf(i, head), depth + 1), payload) : payload;
    keep(i, content);
    return content;
  };

  /** The header and payload of the entry at `at`, the window grown until its zlib stream ends. */
  const decodeEntryAt = async (at: number): Promise<{ head: ReturnType<typeof parseEntryHead>; content: Buffer; used: number }> => {
    for (let want = 64 * 1024; ; want *= 2) {
      const bytes = await window.view(at, want);
      const head = parseEntryHead(name, bytes);
      const inflated = inflateFrom(name, bytes.subarray(head.dataAt), head.size, window.reachesEnd(at, want));
      if (inflated !== null) return { head, ...inflated };
    }
  };
  /**
   * The length of the damaged entry at `at` when its header parses and its deflate stream still
   * ends (read raw: its Adler-32 and its size unchecked), so the walk can go on after it; null
   * when it cannot be told where the entry ends.
   */
  const damagedLength = async (at: number): Promise<number | null> => {
    for (let want = 64 * 1024; ; want *= 2) {
      const bytes = await window.view(at, want);
      let head: ReturnType<typeof parseEntryHead>;
      try {
        head = parseEntryHead(name, bytes);
      } catch {
        return null;
      }
      const from = head.dataAt + 2;
      try {
        const result = inflateRawSync(bytes.subarray(from), { info: true, maxOutputLength: Math.min(Math.max(2 * head.size, 1 << 20), MAX_DAMAGED_BYTES) }) as unknown as { engine: { bytesWritten: number } };
        const length = from + result.engine.bytesWritten + 4;
        return at + length <= end ? length : null;
      } catch (error) {
        if (window.reachesEnd(at, want) || (error as { code?: string }).code !== "Z_BUF_ERROR") return null;
      }
    }
  };

  let at = 12;
  let count = 0;
  for (; count < n; count++) {
    const i = count;
    if (i % ENTRIES_PER_STEP === ENTRIES_PER_STEP - 1) await pause();
    if (salvage && at >= end) {
      unreadable(corrupt(name, `the pack ends after ${i} of its ${declared} entries`));
      break;
    }
    offsets[i] = at;
    walked = i + 1;
    let entry: { head: ReturnType<typeof parseEntryHead>; content: Buffer; used: number };
    try {
      entry = await decodeEntryAt(at);
    } catch (error) {
      unreadable(error);
      const length = await damagedLength(at);
      if (length === null) {
        // Where this entry ends cannot be told (a damaged header, a stream cut by the file's end):
        // the walk ends here and every later entry is unreadable.
        found.problem = `${found.problem ?? "a damaged entry"}; the pack cannot be read from offset ${at} (entry ${i + 1} of ${declared})`;
        break;
      }
      ends[i] = at + length;
      at += length;
      continue;
    }
    const length = entry.head.dataAt + entry.used;
    ends[i] = at + length;
    crcs[i] = crc32(await window.view(at, length));
    const { head, content } = entry;
    try {
      if (head.typeCode !== OFS_DELTA && head.typeCode !== REF_DELTA) {
        resolved(i, typeOfCode(head.typeCode), content);
      } else {
        const base = baseOf(i, head);
        if (base < 0) waiting.push(i);
        else resolved(i, typeOfCode(types[base] as number), applyDelta(name, await contentOf(base, 0), content));
      }
    } catch (error) {
      unreadable(error);
    }
    at += length;
  }
  if (!salvage && at !== end) throw corrupt(name, `entries end at ${at}, the trailer starts at ${end}`);
  // Ref-deltas whose base comes later in the pack (git never writes them, but may read them).
  for (let progress = true; progress && waiting.length > 0; ) {
    progress = false;
    for (let k = 0; k < waiting.length; k++) {
      const i = waiting[k] as number;
      try {
        const start = offsets[i] as number;
        const raw = await read(start, (ends[i] as number) - start);
        const bytes = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
        const head = parseEntryHead(name, bytes);
        const base = baseOf(i, head);
        if (base < 0) continue;
        const payload = (inflateFrom(name, bytes.subarray(head.dataAt), head.size, true) as { content: Buffer }).content;
        resolved(i, typeOfCode(types[base] as number), applyDelta(name, await contentOf(base, 0), payload));
      } catch (error) {
        unreadable(error);
      }
      waiting.splice(k--, 1);
      progress = true;
      await pause();
    }
  }
  if (waiting.length > 0) {
    if (!salvage) throw corrupt(name, `${waiting.length} deltas have no base in the pack`);
    found.problem ??= `${waiting.length} deltas have no readable base in the pack`;
  }
  contents.clear();
  return { count, declared, offsets, ends, crcs, oids, types, problem: found.problem };
}
