/**
 * Reading objects out of the pack files of one bare repository (see pack-store.ts).
 *
 * Every `pack-*.idx` is parsed once (lookups are binary searches in memory); pack bytes are
 * read whole and cached while small, by range otherwise. Whole entries and git's delta entries
 * (what `git gc` writes) are decoded here; every object is checked against its oid. A pack
 * that vanished (`git gc`, another process merging) triggers one rescan of the folder, as git
 * itself does.
 */
import { createHash } from "node:crypto";
import { describeNonRegular, readBoundedFileOrNull } from "./bounded-file.js";
import { WorkflowHostError } from "../errors.js";
import { errnoCode, type FileHandleLike, type FsAdapter } from "./fs-adapter.js";
import { damagedObject, type GitObject, hashObject } from "./git-object.js";
import type { ScopedLruCache } from "./lru-cache.js";
import { applyDelta, crc32, type EntryHead, inflateEntry, isDelta, type PackIndex, parseEntryHead, parsePackIndex, typeOfCode } from "./pack-file.js";
import { encodeReverseIndex, packOrder, parseReverseIndex, reverseIndexBytes } from "./pack-rev-index.js";
import { createWindowReads } from "./pack-windows.js";
import { writeHexOid } from "./hex-oid.js";
import { packTrailer, rebuildPackIndex, salvagePackIndex } from "./pack-reindex.js";
import { type Clock, createSystemTimers, systemClock, type Timers } from "../time/clock.js";
import type { Oid } from "./types.js";

/**
 * Packs up to this size (bytes), and their indexes, are written and read with the quick
 * (blocking) adapter: a commit's pack is tens of KB, and each round trip through the thread pool
 * costs more than the call itself (see fs-adapter.ts). Merged packs go through the pool.
 */
export const QUICK_PACK_BYTES = 64 * 1024;
/**
 * Packs up to this size are read whole (and cached, their checksum checked once); bigger ones
 * (a generated or imported history, a merged pack of a big deployment) through windows.
 */
const WHOLE_PACK_MAX_BYTES = 8 * 1024 * 1024;
/**
 * How long (ms) a big pack's background trailer check waits after the pack's first read before
 * it hashes anything: the reads that made it load (a start arming every pending timer) go
 * first. Hashing a big deployment's packs beside a warm start of 1,000,000 events took ~6% of
 * that start on its own thread (design notes §96). Close cuts the wait short.
 */
const TRAILER_CHECK_DELAY_MS = 1_000;
/**
 * Bigger packs are read in windows of this size (plus {@link WINDOW_SPILL}), cached with the
 * whole packs (same byte budget): a recovery walks a 40 MB pack of 200 000 events mostly in
 * order, so a few windows serve it, where reading it whole kept 40 MB per pack in memory and
 * hashed all of it before the first object could be used.
 */
const WINDOW_BYTES = 1024 * 1024;
/** How far past its window an entry may end and still be served from it (bigger: read alone). */
const WINDOW_SPILL = 64 * 1024;
/**
 * A point read (see {@link PackReader.read}) reads the aligned block of this size holding the
 * entry (or the entry alone when it crosses the block's end): a run's folder and its events
 * folder are usually neighbours, and the last few blocks are kept.
 */
const POINT_BLOCK = 4 * 1024;
/** Point-read blocks kept per reader. */
const POINT_BLOCKS_KEPT = 8;
/**
 * Big packs kept open per reader for point reads: one read call per block instead of an open,
 * a read and a close. A pack that disappears (merged, `git gc`) is closed at the next listing.
 */
const POINT_HANDLES_KEPT = 4;
/** Delta chains deeper than git's default depth (50) by a margin are refused as corrupt. */
const MAX_DELTA_DEPTH = 64;

/** A pack whose index is loaded. */
export interface LoadedPack {
  /** `pack-<checksum>` (no extension). */
  readonly name: string;
  readonly index: PackIndex;
  readonly size: number;
  /** False once it was found to hold ref-delta entries (git's), which are never merged here. */
  mergeable: boolean;
}

/** The `object_corrupt` error for `oid` (or `pack@offset`). */
export function corrupt(oid: string, reason: string, cause?: unknown): WorkflowHostError {
  return new WorkflowHostError("object_corrupt", `git object ${oid} cannot be read: ${reason}`, { oid, reason }, cause === undefined ? {} : { cause });
}

/**
 * Pack files already reported as failing their trailer checksum (by path), so each is told once
 * per process (a `process` warning, code {@link PACK_CHECKSUM_WARNING}), however many reads meet it.
 */
const reportedPacks = new Set<string>();

/** The code of the `process` warning for a pack that fails its trailer checksum. */
export const PACK_CHECKSUM_WARNING = "WORKFLOW_HOST_PACK_CHECKSUM";
/**
 * The code of the `process` warning for a pack whose index was damaged or missing and was
 * rebuilt from the pack (see {@link PackReaderOptions.clock} and pack-reindex.ts), or a pack
 * without an index that could not be indexed.
 */
export const PACK_INDEX_WARNING = "WORKFLOW_HOST_PACK_INDEX";
/**
 * A pack file without its index is indexed once it is older than this (ms): a writer places
 * the index microseconds after the pack (see pack-writer.ts); one still without it a minute
 * later lost it (removed by hand, a bad copy, a crash of the file system).
 */
export const ORPHAN_PACK_MS = 60_000;
/**
 * A pack file without its index younger than this (ms) is left for its writer, not even
 * indexed in memory (see youngOrphan): its index follows within milliseconds, and a scan
 * meeting a merge's big pack between its two renames would otherwise walk all of it.
 */
export const ORPHAN_GRACE_MS = 2_000;

/**
 * The walk of a pack under way for `name` in `pending`, or `start()`'s, kept there until it
 * settles: two scans meeting the same pack share one walk (an index rebuilt, salvaged or built
 * in memory).
 */
function sharedWalk<T>(pending: Map<string, Promise<T>>, name: string, start: () => Promise<T>): Promise<T> {
  let walk = pending.get(name);
  if (walk === undefined) {
    walk = start();
    pending.set(name, walk);
    const done = (): void => {
      pending.delete(name);
    };
    walk.then(done, done);
  }
  return walk;
}

/** Gives the event loop back (between chunks of a long check, see pack-reindex.ts). */
const yieldToLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Emits the process warning `message` with `code`, once per `key` per process. */
function warnOnce(key: string, message: string, code: string): void {
  if (reportedPacks.has(key)) return;
  reportedPacks.add(key);
  process.emitWarning(message, { code });
}

/** Thrown inside the pack modules when a pack vanished under a read; answered by a rescan. */
export class PackGone extends Error {}

/** The adapter for reading or writing a pack of `bytes` and its index (see QUICK_PACK_BYTES). */
export function adapterFor(bytes: number, fs: FsAdapter, quickFs: FsAdapter): FsAdapter {
  return bytes <= QUICK_PACK_BYTES ? quickFs : fs;
}

export interface PackReaderOptions {
  readonly fs: FsAdapter;
  /** For small files and the pack folder's listing (see QUICK_PACK_BYTES). */
  readonly quickFs: FsAdapter;
  /** `<gitdir>/objects/pack`. */
  readonly packDir: string;
  /** Distinguishes this repository's entries in the shared caches. */
  readonly repoKey: string;
  /** Whole pack files by pack name (scoped by `repoKey`), weighted by bytes. */
  readonly packBytes: ScopedLruCache<Buffer>;
  /** Windows of big packs (see WINDOW_BYTES). */
  readonly packWindows: ScopedLruCache<Buffer>;
  /** Called before every wait for the first scan (the store starts its temp-file sweep there). */
  readonly beforeScan?: () => void;
  /**
   * The time pack files' ages are measured at (see {@link ORPHAN_PACK_MS}): compared with the
   * mtimes the file system stamps, so the system clock in production (the default).
   */
  readonly clock?: Clock;
  /**
   * Timers for the wait before a big pack's trailer check ({@link TRAILER_CHECK_DELAY_MS}).
   * Default: the system's, unref'd (a process about to exit does not wait to check a pack).
   */
  readonly timers?: Timers;
}

/** The default {@link PackReaderOptions.timers}. */
const unrefTimers = createSystemTimers({ unref: true });

/** The known packs of one repository and the reads out of them. */
export interface PackReader {
  /** See PackStore.read. */
  read(oid: Oid, rescan: boolean, point?: boolean): Promise<GitObject | null>;
  /** See PackStore.readInMemory. */
  readInMemory(oid: Oid, view?: boolean): GitObject | undefined;
  /** Whether a known pack holds `oid` (an in-memory index lookup, no rescan). */
  contains(oid: Oid): boolean;
  /** Sets `found[i]` to 1 for each of the oids of `oids` (20 bytes each, end to end) a known pack holds (see PackIndex.markFound). */
  markPacked(oids: Uint8Array, found: Uint8Array): void;
  /** Resolves once the pack folder was listed and its indexes loaded (once per store). */
  ensureScanned(): Promise<void>;
  /** Known packs, most recently hit first (lookups move the pack that answered to the front). */
  readonly packs: readonly LoadedPack[];
  /**
   * How new a known pack's objects are: higher is newer. A pack found on disk counts from its
   * file's mtime (ms), a commit's pack adopted later as newer than every known pack (by 1), and a
   * merged pack as new as the newest pack it replaced (its objects are that old, however late
   * the merge finished). Merges take their sources oldest first by it (see pack-maintenance.ts).
   */
  ageOf(pack: LoadedPack): number;
  /**
   * Records `placed` as a known pack, forgetting the packs named in `replaced`: as a merge of
   * them when there are any (its age theirs), else as the newest pack. `written`: the pack's
   * bytes as this process just wrote them (pieces in order, trailer included; `lent`: the
   * pieces that are not the writer's to keep, EncodedPack.lent, which are not kept: an entry
   * in one is read from the file as before), kept (the newest
   * {@link WRITTEN_KEPT_BYTES} of them, a pack of at most {@link WHOLE_PACK_MAX_BYTES}; dropped
   * when the pack is merged away) and read in place of the file: a pack this process wrote is
   * not read back from disk and hashed again.
   */
  adopt(placed: LoadedPack, replaced?: ReadonlySet<string>, written?: { readonly parts: readonly Uint8Array[]; readonly lent: readonly number[] }): void;
  /**
   * After a merge of `names` failed other than on a damaged entry: the packs among them kept as
   * written (see {@link adopt}) are let go and their files checked now, as a first read of the
   * file would have. Such a pack is served from the kept bytes, so no read met a file truncated
   * or deleted since; the same merge then failed after every commit. A file failing its
   * checksum is told once ({@link PACK_CHECKSUM_WARNING}) and left out of merges; a missing one
   * is left out of merges (a read of one of its objects then rescans, as for any pack gone).
   * @returns whether any of them was left out of merges
   */
  recheckWritten(names: readonly string[]): Promise<boolean>;
  /** Closes the packs kept open for point reads (later point reads open them again). */
  close(): Promise<void>;
}

/**
 * Packs of at least this many objects have their reverse index (`.rev`, see pack-rev-index.ts)
 * read, and get one written when they have none and a reader sorted their offsets: below it the
 * sort costs less than the file's read.
 */
export const REVERSE_INDEX_MIN_OBJECTS = 4_096;

/**
 * Writes `bytes`, the reverse index of the pack `name` (checked by the caller with
 * parseReverseIndex), as `<packDir>/<name>.rev`: a temp file in `objects/` (git's `tmp_` prefix,
 * swept like a pack's), flushed, renamed into place while the pack's index is still there (a
 * pack merged away meanwhile gets none). Never throws: the file only spares a sort.
 */
export async function writeReverseIndex(fs: FsAdapter, packDir: string, name: string, bytes: Buffer): Promise<void> {
  const temp = `${packDir.replace(/\/pack$/, "")}/tmp_rev_${process.pid.toString(36)}_${Math.random().toString(36).slice(2, 10)}`;
  try {
    await fs.writeNewFile(temp, bytes, true);
    if ((await fs.statOrNull(`${packDir}/${name}.idx`)) === null) {
      await fs.unlinkQuiet(temp);
      return;
    }
    await fs.rename(temp, `${packDir}/${name}.rev`);
  } catch {
    await fs.unlinkQuiet(temp).catch(() => undefined);
  }
}

/** An entry's content inflated, for {@link createPackReader}'s readInMemory (see there why it is a function of its own). */
function inflatedEntry(at: { readonly pack: { readonly name: string } }, entry: { readonly bytes: Buffer }, head: EntryHead): Buffer {
  return inflateEntry(at.pack.name, entry.bytes, head);
}

/**
 * The content of an entry whose zlib stream (at `dataAt` of `bytes`) is one final stored block
 * of `size` bytes, as a view of `bytes` (not copied); null for any other stream (compressed,
 * several blocks, not what it claims), which is then inflated as usual. The stream's Adler-32
 * is not checked here, as {@link inflateEntry} does not check a stored stream's either: the
 * entry's bytes were checked whole against the CRC-32 its index records.
 */
export function storedView(bytes: Buffer, dataAt: number, size: number): Buffer | null {
  const at = dataAt + 2;
  if (at + 5 + size > bytes.length) return null;
  const cmf = bytes[dataAt] as number;
  const flg = bytes[dataAt + 1] as number;
  // zlib header: deflate (0x78), check bits, no preset dictionary; then BFINAL=1, BTYPE=00.
  if (cmf !== 0x78 || ((cmf << 8) | flg) % 31 !== 0 || (flg & 0x20) !== 0 || bytes[at] !== 1) return null;
  const len = (bytes[at + 1] as number) | ((bytes[at + 2] as number) << 8);
  const nlen = (bytes[at + 3] as number) | ((bytes[at + 4] as number) << 8);
  if (len !== size || (nlen ^ 0xffff) !== len) return null;
  return bytes.subarray(at + 5, at + 5 + size);
}

/**
 * Bytes of the packs this process wrote that a reader keeps, newest first (see
 * PackReader.adopt): a fire commit's next commit reads back the run folders the one before
 * wrote.
 */
export const WRITTEN_KEPT_BYTES = 32 * 1024 * 1024;

/**
 * The packs every reader of this process keeps as written, oldest first: one budget of
 * {@link WRITTEN_KEPT_BYTES} for the process, however many deployments (readers) it serves, so a
 * host of many busy deployments holds no more than one of them would.
 */
const keptWritten = new Set<{ readonly size: number; readonly forget: () => void }>();
let keptWrittenBytes = 0;

/** Drops the oldest kept packs of any reader until the process's kept bytes fit the budget. */
function trimKeptWritten(): void {
  for (const kept of keptWritten) {
    if (keptWrittenBytes <= WRITTEN_KEPT_BYTES) break;
    kept.forget();
  }
}

/**
 * Whether a whole pack's bytes end in git's trailer, the SHA-1 of everything before it, and that
 * trailer is `checksum` (its index's record of it); false for bytes too short to be a pack.
 */
function trailerMatches(read: Buffer, checksum: string): boolean {
  if (read.length < 32) return false;
  const sum = createHash("sha1").update(read.subarray(0, read.length - 20)).digest("hex");
  return sum === read.toString("hex", read.length - 20) && sum === checksum;
}

/** Largest pack index read (bytes): some 38 million objects. */
const MAX_PACK_INDEX_BYTES = 1024 * 1024 * 1024;

/** `object_corrupt` for a pack or index that is not a regular file (a FIFO, a device, a folder) or too big. */
function packNotAFile(name: string, path: string, found: string): WorkflowHostError {
  return new WorkflowHostError("object_corrupt", `pack ${name} cannot be read: ${path} is ${found}; remove it or restore the pack`, { pack: name, path, found, reason: "not_a_file" });
}

/** True for {@link rebuildPackIndex}'s refusal of a pack (its checksum, an entry that does not decode), not an I/O error. */
function isRefusal(error: unknown): error is WorkflowHostError {
  return error instanceof WorkflowHostError && error.code === "object_corrupt";
}

/** Creates the reader of the packs in `packDir`. */
export function createPackReader(opts: PackReaderOptions): PackReader {
  const { fs, quickFs, packDir, repoKey, packBytes, packWindows } = opts;
  /** Newest first: recently written objects are the ones read most. */
  let packs: LoadedPack[] = [];
  /** See {@link PackReader.ageOf}, by pack name. */
  const ages = new Map<string, number>();
  let newestAge = Number.NEGATIVE_INFINITY;
  const setAge = (name: string, age: number): void => {
    ages.set(name, age);
    if (age > newestAge) newestAge = age;
  };
  let scanned: Promise<void> | null = null;
  /** Reverse indexes being written (see writeReverseIndex); awaited by close. */
  const revWrites = new Set<Promise<void>>();
  const oidBytes = Buffer.alloc(20);
  const clock = opts.clock ?? systemClock;
  const timers = opts.timers ?? unrefTimers;
  const now = (): number => clock().getTime();
  /** Indexes being rebuilt, by pack name: two scans meeting the same damage share one. */
  const rebuilding = new Map<string, Promise<Uint8Array>>();
  /**
   * Packs whose index could not be rebuilt (the pack fails its checksum, an entry does not
   * decode), by name, with the pack file's size and mtime then: tried again only once the pack
   * changed (a scan follows every miss, and each try reads the whole pack).
   */
  const refused = new Map<string, string>();
  /**
   * Packs whose index is damaged or lost and that cannot be indexed again (they fail their
   * checksum, or an entry does not decode), indexed in memory from the entries that still read
   * (see {@link salvagedPack}), by name: the pack as loaded, what of it was read, and the pack's
   * and index file's size and mtime then (the pack is indexed again once either changes).
   */
  const salvaged = new Map<string, { key: string; pack: LoadedPack; indexed: number; unreadable: number }>();
  /** Salvages under way, by name: two scans meeting the same pack share one. */
  const salvaging = new Map<string, Promise<LoadedPack>>();
  /**
   * Packs without an index younger than {@link ORPHAN_PACK_MS} whose trailer checksum matches,
   * indexed in memory (see {@link youngOrphan}), by name, with the pack file's size and mtime
   * then; a pack that failed it maps to null (not tried again until the file changes).
   */
  const youngOrphans = new Map<string, { key: string; pack: LoadedPack | null }>();
  /** Young orphans being indexed, by name: two scans meeting one share the walk. */
  const indexingYoung = new Map<string, Promise<LoadedPack | null>>();
  /** Big packs whose trailer is being or was checked in the background (see checkTrailer). */
  const trailerChecked = new Set<string>();
  const trailerChecks = new Set<Promise<void>>();
  /** Trailer checks waiting out {@link TRAILER_CHECK_DELAY_MS}, each woken early by close. */
  const trailerWaits = new Set<() => void>();
  let closing = false;
  /**
   * Packs whose index cannot be parsed (truncated, wrong checksum), with why: their objects
   * cannot be found, so a miss is then reported as this damage (`object_corrupt` naming the
   * pack), never as a missing object (which would make a ref pointing into the pack read as
   * dangling). Looked at again at every scan: an index rewritten whole is taken up.
   */
  const broken = new Map<string, WorkflowHostError>();
  /**
   * Packs read whole whose trailer checksum did not match (a flipped byte, a bad copy): git
   * still reads such a pack, checking each object as it inflates it, and so does this reader —
   * an entry of such a pack is checked against the CRC-32 its index records and its content
   * hashed against its oid; one that fails is that object's damage (see damagedObject), the
   * others are served. Never merged (see pack-merge.ts). Cleared when the pack, read again,
   * matches (it is read again after each damaged object found in it: a pack restored in place
   * is then taken up).
   */
  const unverified = new Set<string>();
  /**
   * Packs this process wrote (see PackReader.adopt), by name, oldest first: their pieces, size
   * and where each piece ends. Bytes it wrote itself are the file's bytes by construction: the
   * checksum a read of the file would check is the one the writer computed over these bytes.
   */
  const written = new Map<string, { readonly parts: readonly (Uint8Array | null)[]; readonly size: number; readonly ends: Float64Array; readonly entry: { readonly size: number; readonly forget: () => void } }>();

  const fsFor = (bytes: number): FsAdapter => adapterFor(bytes, fs, quickFs);
  const { loadOnce, cachedWindow, loadWindow } = createWindowReads(fs, packWindows, repoKey, (name) => new PackGone(name));
  /** The last blocks point reads read, newest first (see POINT_BLOCK). */
  const pointBlocks: { name: string; start: number; bytes: Buffer }[] = [];
  /** Big packs open for point reads, most recently used first (see POINT_HANDLES_KEPT). */
  const pointHandles: { name: string; handle: Promise<FileHandleLike> }[] = [];

  function closeHandle(kept: { handle: Promise<FileHandleLike> }): void {
    kept.handle.then((h) => h.close()).catch(() => undefined);
  }

  /** Closes the kept handles of packs not in `known` (all of them when `known` is empty). */
  function dropHandles(known: ReadonlySet<string>): void {
    for (let i = pointHandles.length - 1; i >= 0; i--) {
      const kept = pointHandles[i] as (typeof pointHandles)[number];
      if (known.has(kept.name)) continue;
      pointHandles.splice(i, 1);
      closeHandle(kept);
    }
  }

  /** Reads [start, stop) of the big pack `name` through a kept handle. */
  async function readKept(name: string, path: string, start: number, stop: number): Promise<Uint8Array> {
    let at = pointHandles.findIndex((k) => k.name === name);
    if (at < 0) {
      const opening = quickFs.open(path, "r");
      opening.catch(() => undefined);
      pointHandles.unshift({ name, handle: opening });
      if (pointHandles.length > POINT_HANDLES_KEPT) closeHandle(pointHandles.pop() as (typeof pointHandles)[number]);
      at = 0;
    } else if (at > 0) {
      pointHandles.unshift(...pointHandles.splice(at, 1));
    }
    const kept = pointHandles[0] as (typeof pointHandles)[number];
    try {
      const handle = await kept.handle;
      const buffer = Buffer.allocUnsafe(stop - start);
      let filled = 0;
      while (filled < buffer.length) {
        const { bytesRead } = await handle.read(buffer, filled, buffer.length - filled, start + filled);
        if (bytesRead === 0) break;
        filled += bytesRead;
      }
      return buffer.subarray(0, filled);
    } catch (error) {
      // A handle that failed (the pack vanished before it was opened) is not kept.
      const i = pointHandles.indexOf(kept);
      if (i >= 0) pointHandles.splice(i, 1);
      closeHandle(kept);
      throw error;
    }
  }

  /**
   * The bytes [offset, end) of a big pack read by themselves: from a kept block, or read as the
   * aligned {@link POINT_BLOCK} holding them (through the quick adapter: a few KiB, a page-cache
   * read costs less than a round trip through the thread pool).
   */
  async function pointBytes(pack: LoadedPack, path: string, offset: number, end: number): Promise<Buffer> {
    for (const block of pointBlocks) {
      if (block.name === pack.name && block.start <= offset && end <= block.start + block.bytes.length) return block.bytes.subarray(offset - block.start, end - block.start);
    }
    const start = offset - (offset % POINT_BLOCK);
    const stop = Math.max(end, Math.min(start + POINT_BLOCK, pack.size));
    const read = await readKept(pack.name, path, start, stop);
    if (read.byteLength !== stop - start) throw new PackGone(pack.name);
    const bytes = Buffer.from(read.buffer, read.byteOffset, read.byteLength);
    pointBlocks.unshift({ name: pack.name, start, bytes });
    if (pointBlocks.length > POINT_BLOCKS_KEPT) pointBlocks.pop();
    return bytes.subarray(offset - start, end - start);
  }

  /**
   * Loads the pack `name`. `orphan`: it was listed without an index; it is indexed (see
   * {@link rebuiltIndex}) once older than {@link ORPHAN_PACK_MS}, else left for its writer.
   */
  async function loadPack(name: string, orphan = false): Promise<LoadedPack | null> {
    const packPath = `${packDir}/${name}.pack`;
    const stat = await quickFs.statOrNull(packPath);
    if (stat === null) return null;
    // A FIFO or device in the pack folder would hang (or exhaust) the reads below: damage.
    const notPack = describeNonRegular(stat, Number.MAX_SAFE_INTEGER);
    if (notPack !== null) throw packNotAFile(name, packPath, notPack);
    const size = Number(stat.size);
    const idxPath = `${packDir}/${name}.idx`;
    const known = salvaged.get(name);
    if (known !== undefined && known.key === (await salvageKey(stat, idxPath))) return known.pack;
    let idx = await readBoundedFileOrNull(fsFor(size), idxPath, MAX_PACK_INDEX_BYTES, (found) => packNotAFile(name, idxPath, found));
    /** Set when the index was rebuilt here: the pack's trailer was checked then. */
    let rebuilt = false;
    if (idx === null) {
      if (!orphan) return null;
      const age = now() - Number(stat.mtimeMs);
      if (age <= ORPHAN_GRACE_MS) return null;
      if (age <= ORPHAN_PACK_MS) return youngOrphan(name, packPath, stat);
      try {
        idx = await rebuiltIndex(name, packPath, stat, "is missing");
        rebuilt = true;
      } catch (error) {
        if (error instanceof PackGone) throw error;
        if (isRefusal(error)) {
          const kept = await salvagedPack(name, packPath, stat, "is missing", error).catch((why: unknown) => {
            if (why instanceof PackGone) throw why;
            return null;
          });
          if (kept !== null) return kept;
        }
        // Not a pack this store can index (or not now: an I/O error, tried again at the next
        // scan): left as it is, as git leaves it (told once).
        warnOnce(`${packPath}#orphan`, `pack ${name} (${packPath}) has no index and cannot be indexed (${error instanceof Error ? error.message : String(error)}); it is left as it is: restore its index or the pack`, PACK_INDEX_WARNING);
        return null;
      }
    }
    if (!ages.has(name)) setAge(name, Number(stat.mtimeMs));
    const rewrite = (order: Uint32Array): Buffer | null => {
      const bytes = encodeReverseIndex(index, order);
      if (parseReverseIndex(bytes, index) === null) return null;
      const writing = writeReverseIndex(fs, packDir, name, bytes).finally(() => revWrites.delete(writing));
      revWrites.add(writing);
      return bytes;
    };
    let index: PackIndex;
    try {
      index = parseIndex(name, idx, size, rewrite);
    } catch (error) {
      if (!(error instanceof WorkflowHostError) || rebuilt) throw error;
      // A damaged index (torn, truncated, another version, a bad checksum): the pack holds all
      // it says, so it is rebuilt from the pack when the pack's own checksum matches; else the
      // damage stays reported as it was (see `broken`), nothing rewritten.
      try {
        idx = await rebuiltIndex(name, packPath, stat, `is damaged (${error.message})`);
      } catch (why) {
        // Not rebuilt. The pack fails its checksum (or an entry does not decode): what of it
        // still reads is indexed in memory, the rest is its runs' problem. An I/O error (tried
        // again at the next scan), or a pack of which nothing can be read: the index's own
        // damage is what is reported.
        if (why instanceof PackGone) throw why;
        if (!isRefusal(why)) throw error;
        try {
          return await salvagedPack(name, packPath, stat, `is damaged (${error.message})`, why);
        } catch (failed) {
          if (failed instanceof PackGone) throw failed;
          throw error;
        }
      }
      rebuilt = true;
      index = parseIndex(name, idx, size, rewrite);
    }
    if (index.count >= REVERSE_INDEX_MIN_OBJECTS) await takeReverseIndex(name, index, size, rewrite);
    if (salvaged.delete(name)) {
      // Restored (its index, or the pack): read and checked afresh, nothing of the damaged copy kept.
      unverified.delete(name);
      packBytes.delete(repoKey, name);
    }
    const pack: LoadedPack = { name, index, size, mergeable: true };
    if (size > WHOLE_PACK_MAX_BYTES && !rebuilt) checkTrailer(pack);
    return pack;
  }

  function parseIndex(name: string, idx: Uint8Array, size: number, rewrite: (order: Uint32Array) => Buffer | null): PackIndex {
    const count = idx.byteLength >= 8 + 1024 ? Buffer.from(idx.buffer, idx.byteOffset, idx.byteLength).readUInt32BE(8 + 255 * 4) : 0;
    return parsePackIndex(name, idx, size, count >= REVERSE_INDEX_MIN_OBJECTS ? rewrite : undefined);
  }

  /** The pack file's and its index file's size and mtime, as {@link salvaged} keeps them. */
  async function salvageKey(stat: { size: number | bigint; mtimeMs: number }, idxPath: string): Promise<string> {
    const idx = await quickFs.statOrNull(idxPath).catch(() => null);
    return `${Number(stat.size)}:${stat.mtimeMs}|${idx === null ? "none" : `${Number(idx.size)}:${idx.mtimeMs}`}`;
  }

  /**
   * The pack `name`, whose index `why` (is missing, is damaged) and which {@link rebuiltIndex}
   * refused (`refusal`: it fails its trailer checksum, or an entry does not decode), loaded with
   * an index built in memory from the entries that still read (pack-reindex.ts
   * `salvagePackIndex`). Nothing is written: not its index (git refuses the pack all the same,
   * and an index on disk would make it look sound), not a reverse index. The pack is read as a
   * pack failing its checksum is (each object hashed against its oid), never merged, and told
   * once by a process warning ({@link PACK_INDEX_WARNING}) naming it, how many objects were
   * indexed and how many entries could not be read; an object it does not index is then that
   * object's damage (see `read`), so a run holding one is that run's problem. Kept until the
   * pack or index file changes (see {@link salvaged}); two scans share one walk.
   * @throws `object_corrupt` when nothing of it can be read (not a version 2 pack); PackGone
   */
  function salvagedPack(name: string, packPath: string, stat: { size: number | bigint; mtimeMs: number }, why: string, refusal: WorkflowHostError): Promise<LoadedPack> {
    return sharedWalk(salvaging, name, async () => {
      const key = await salvageKey(stat, `${packDir}/${name}.idx`);
      const size = Number(stat.size);
      let walk: Awaited<ReturnType<typeof salvagePackIndex>>;
      try {
        walk = await salvagePackIndex(fs, packPath, size, yieldToLoop);
      } catch (error) {
        if (errnoCode(error) === "ENOENT") throw new PackGone(name);
        throw error;
      }
      const pack: LoadedPack = { name, index: walk.index, size, mergeable: false };
      unverified.add(name);
      if (!ages.has(name)) setAge(name, Number(stat.mtimeMs));
      salvaged.set(name, { key, pack, indexed: walk.indexed, unreadable: walk.unreadable });
      // This is the pack's one warning: its failed checksum is not told again by a read.
      reportedPacks.add(packPath);
      const refused = typeof refusal.data.reason === "string" && refusal.data.reason !== "not_reindexed" ? refusal.data.reason : "it fails its checksum or an entry does not decode";
      warnOnce(
        `${packPath}#salvaged@${key}`,
        `pack ${name} (${packPath}) is damaged: its index ${why}, and it cannot be indexed again (${refused}); ${walk.indexed} object${walk.indexed === 1 ? "" : "s"} indexed in memory from the entries that read, ${walk.unreadable} entr${walk.unreadable === 1 ? "y" : "ies"} could not be read (${walk.reason}). The runs holding those are reported as unreadable, the others are served; nothing is written for this pack: restore it and its index from a remote or a backup (git fsck and git index-pack refuse it)`,
        PACK_INDEX_WARNING,
      );
      return pack;
    });
  }

  /**
   * A pack listed without an index, older than {@link ORPHAN_GRACE_MS} and younger than
   * {@link ORPHAN_PACK_MS}: its writer's index
   * may arrive any moment (git and pack-writer.ts place the pack first), or it may be a copy
   * made without one (a restore of `objects/pack`). Either way it is whole once its trailer
   * checksum matches (a writer renames a pack into place only once written), so it is indexed in
   * memory (pack-reindex.ts `rebuildPackIndex`) and served: before, its objects were missing for
   * a minute, and a deployment whose tip was in it failed. Nothing is written (the writer's own
   * index may be on its way; an old orphan gets one written, see loadPack); not merged (a merge
   * would remove the pack its writer is about to index). A pack that fails the check is left
   * for its writer, as before (null), and not walked again until its file changes.
   */
  async function youngOrphan(name: string, packPath: string, stat: { size: number | bigint; mtimeMs: number }): Promise<LoadedPack | null> {
    const key = `${Number(stat.size)}:${stat.mtimeMs}`;
    const known = youngOrphans.get(name);
    if (known !== undefined && known.key === key) return known.pack;
    return sharedWalk(indexingYoung, name, async () => {
      const size = Number(stat.size);
      let pack: LoadedPack | null = null;
      try {
        const { idx } = await rebuildPackIndex(fs, packPath, size, yieldToLoop);
        pack = { name, index: parsePackIndex(name, idx, size), size, mergeable: false };
      } catch (error) {
        if (errnoCode(error) === "ENOENT") throw new PackGone(name);
        if (!(error instanceof WorkflowHostError)) throw error;
      }
      youngOrphans.set(name, { key, pack });
      if (pack !== null && !ages.has(name)) setAge(name, Number(stat.mtimeMs));
      return pack;
    });
  }

  /**
   * The index of the pack `name`, rebuilt from the pack (pack-reindex.ts: only when its trailer
   * checksum matches) and put in place of the old one, if any: a temp file in `objects/`
   * (git's `tmp_` prefix, swept as a pack's), flushed, renamed over `<name>.idx` while the pack
   * is still there. Told once by a process warning ({@link PACK_INDEX_WARNING}) naming the pack
   * and `why` the old index was not used. A rebuild that failed is not tried again until the
   * pack file changes (see {@link refused}).
   * @throws `object_corrupt` naming the pack when it cannot be indexed
   */
  function rebuiltIndex(name: string, packPath: string, stat: { size: number | bigint; mtimeMs: number }, why: string): Promise<Uint8Array> {
    const key = `${Number(stat.size)}:${stat.mtimeMs}`;
    const failed = refused.get(name);
    if (failed === key) return Promise.reject(new WorkflowHostError("object_corrupt", `pack ${name} cannot be indexed (tried before)`, { pack: name, reason: "not_reindexed" }));
    return sharedWalk(rebuilding, name, async () => {
      const size = Number(stat.size);
      let rebuilt: { idx: Buffer; checksum: string };
      try {
        rebuilt = await rebuildPackIndex(fs, packPath, size, yieldToLoop);
      } catch (error) {
        if (errnoCode(error) === "ENOENT") throw new PackGone(name);
        if (error instanceof WorkflowHostError) refused.set(name, key);
        throw error;
      }
      const temp = `${packDir.replace(/\/pack$/, "")}/tmp_idx_rebuilt_${process.pid.toString(36)}_${Math.random().toString(36).slice(2, 10)}`;
      try {
        await fs.writeNewFile(temp, rebuilt.idx, true);
        if ((await fs.statOrNull(packPath)) === null) throw new PackGone(name);
        await fs.rename(temp, `${packDir}/${name}.idx`);
      } catch (error) {
        await fs.unlinkQuiet(temp).catch(() => undefined);
        throw error;
      }
      warnOnce(
        `${packPath}#index@${key}`,
        `pack ${name} (${packPath}): its index ${why}; it was rebuilt from the pack, whose checksum matches (as git index-pack does), and its objects are read as before`,
        PACK_INDEX_WARNING,
      );
      return rebuilt.idx;
    });
  }

  /**
   * Checks the trailer of a big pack (one read through windows, whose trailer no read checks) in
   * the background, once per reader, starting {@link TRAILER_CHECK_DELAY_MS} after its first read:
   * its bytes hashed in chunks with the event loop given back between them (pack-reindex.ts). A
   * mismatch is told as a small pack's is (the {@link PACK_CHECKSUM_WARNING}); the pack's
   * entries are then hashed against their oids as well as checked against their CRC-32s, and
   * the pack is not merged. Stopped by close (a wait cut short); a pack that vanished meanwhile
   * is let go.
   */
  function checkTrailer(pack: LoadedPack): void {
    if (trailerChecked.has(pack.name)) return;
    trailerChecked.add(pack.name);
    const path = `${packDir}/${pack.name}.pack`;
    const check = (async () => {
      await new Promise<void>((resolve) => {
        const wake = (): void => {
          timers.clearTimeout(timer);
          trailerWaits.delete(wake);
          resolve();
        };
        const timer = timers.setTimeout(wake, TRAILER_CHECK_DELAY_MS);
        trailerWaits.add(wake);
      });
      const sums = await packTrailer(fs, path, pack.size, yieldToLoop, () => closing);
      if (sums === null) {
        // Stopped by close: not counted as checked.
        trailerChecked.delete(pack.name);
        return;
      }
      if (sums.computed.equals(sums.trailer) && sums.trailer.toString("hex") === pack.index.packChecksum) return;
      failedChecksum(pack, path);
    })().catch(() => undefined);
    const settled = check.finally(() => trailerChecks.delete(settled));
    trailerChecks.add(settled);
  }

  /** Marks `pack` as failing its trailer checksum (see {@link unverified}) and tells it once. */
  function failedChecksum(pack: LoadedPack, path: string): void {
    unverified.add(pack.name);
    pack.mergeable = false;
    warnOnce(
      path,
      `pack ${pack.name} (${path}) fails its checksum: it is damaged; its objects are read one by one, each checked against its own oid, and a damaged one is reported where it is read (run git fsck to list them, restore the pack or the objects)`,
      PACK_CHECKSUM_WARNING,
    );
  }

  /**
   * Gives `index` its pack's reverse index when `<name>.rev` is a correct one; a file there that
   * is not (torn, from another pack, damaged) is ignored and replaced at once, as git would read
   * it too. A missing one is written once a read sorts the offsets (see parsePackIndex).
   */
  async function takeReverseIndex(name: string, index: PackIndex, size: number, rewrite: (order: Uint32Array) => Buffer | null): Promise<void> {
    let bytes: Uint8Array | null;
    try {
      bytes = await readBoundedFileOrNull(fsFor(size), `${packDir}/${name}.rev`, reverseIndexBytes(index.count), (found) => new Error(found));
    } catch {
      bytes = new Uint8Array(0);
    }
    if (bytes === null) return;
    const starts = parseReverseIndex(bytes, index);
    if (starts !== null) {
      index.useReverseIndex(starts);
      return;
    }
    const rebuilt = rewrite(packOrder(index));
    const rebuiltStarts = rebuilt === null ? null : parseReverseIndex(rebuilt, index);
    if (rebuiltStarts !== null) index.useReverseIndex(rebuiltStarts);
  }

  /**
   * Lists the pack folder and loads the indexes not loaded yet. Another process may be merging
   * packs meanwhile; it places the merged pack before deleting the ones it replaces, so when a
   * listed pack vanishes before it is loaded, listing again finds its objects in the merged one.
   */
  async function scan(): Promise<void> {
    for (let round = 0; round < 5; round++) {
      const names = new Set(await quickFs.readdirOrEmpty(packDir));
      const known = new Map(packs.map((p) => [p.name, p]));
      // A pack indexed in memory (see salvaged) is loaded again at each scan: a cheap check
      // of its files' stats, its index kept while they are unchanged.
      // So is a young pack indexed in memory (see youngOrphan), until its own index arrives.
      const kept = packs.filter((p) => !salvaged.has(p.name) && !youngOrphans.has(p.name) && names.has(`${p.name}.idx`) && names.has(`${p.name}.pack`));
      const fresh: string[] = [];
      /** Packs listed without an index (see loadPack). */
      const orphans = new Set<string>();
      for (const file of names) {
        if (file.endsWith(".pack") && /^pack-[0-9a-f]{40,64}\.pack$/.test(file) && !names.has(`${file.slice(0, -5)}.idx`)) {
          const name = file.slice(0, -5);
          fresh.push(name);
          orphans.add(name);
          continue;
        }
        if (!file.endsWith(".idx")) continue;
        const name = file.slice(0, -4);
        if ((!known.has(name) || salvaged.has(name) || youngOrphans.has(name)) && names.has(`${name}.pack`)) fresh.push(name);
      }
      // All at once: a reader behind a busy writer has one new pack per commit to load.
      let unreadable = 0;
      const loaded = await Promise.all(
        fresh.map((name) =>
          loadPack(name, orphans.has(name)).then(
            (pack) => {
              broken.delete(name);
              return pack;
            },
            (error: unknown) => {
              // A pack that vanished mid-load is found again by the next listing; an index
              // that is there but unreadable is damage, remembered and reported on a miss.
              if (!(error instanceof WorkflowHostError)) return null;
              broken.set(name, error);
              unreadable += 1;
              return null;
            },
          ),
        ),
      );
      for (const name of broken.keys()) if (!names.has(`${name}.idx`)) broken.delete(name);
      for (const name of salvaged.keys()) if (!names.has(`${name}.pack`)) salvaged.delete(name);
      for (const name of youngOrphans.keys()) if (!orphans.has(name)) youngOrphans.delete(name);
      const added = loaded.filter((pack): pack is LoadedPack => pack !== null);
      // An orphan left unindexed (too young, or not a pack) is not a pack that vanished.
      const vanished = added.length + unreadable < fresh.length - loaded.filter((pack, i) => pack === null && orphans.has(fresh[i] as string)).length;
      packs = [...added, ...kept];
      for (const name of ages.keys()) if (!names.has(`${name}.idx`)) ages.delete(name);
      dropHandles(new Set(packs.map((p) => p.name)));
      if (!vanished) return;
    }
  }

  /** True once a scan has finished (packs are then known). */
  let scanFinished = false;

  function ensureScanned(): Promise<void> {
    opts.beforeScan?.();
    scanned ??= scan().then(
      () => {
        scanFinished = true;
      },
      (error: unknown) => {
        scanned = null;
        throw error;
      },
    );
    return scanned;
  }

  async function rescan(): Promise<void> {
    scanned = scan();
    await scanned;
  }

  function locate(oid: Oid): { pack: LoadedPack; entry: number } | null {
    if (packs.length === 0 || (!writeHexOid(oid, oidBytes, 0) && oidBytes.write(oid, 0, "hex") !== 20)) return null;
    for (let i = 0; i < packs.length; i++) {
      const pack = packs[i] as LoadedPack;
      const entry = pack.index.find(oidBytes);
      if (entry < 0) continue;
      // Most-recently-hit first: reads come in runs from one pack (a recovery, a commit's trees).
      if (i > 0) packs = [pack, ...packs.slice(0, i), ...packs.slice(i + 1)];
      return { pack, entry };
    }
    return null;
  }

  /**
   * The bytes of the entry at `offset`: a view of the cached whole pack (`verified`: its
   * checksum was checked when it was read), or of a cached window of a big pack, or a range read
   * of an entry too big for a window. `crc`, when given (the entry's CRC-32 from the index, whose
   * own checksum was checked when it was parsed), is compared with the bytes read out of a big
   * pack, which then count as verified too: git's own check of packed bytes it reuses, at a
   * seventh of the cost of hashing each object (a recovery reads a million of them).
   */
  async function entryBytes(pack: LoadedPack, offset: number, crc: number | undefined, point: boolean): Promise<{ bytes: Buffer; verified: boolean }> {
    const end = pack.index.endOf(offset);
    const path = `${packDir}/${pack.name}.pack`;
    try {
      if (pack.size <= WHOLE_PACK_MAX_BYTES) {
        const kept = writtenEntry(pack, offset, end);
        if (kept !== undefined) return { bytes: kept, verified: true };
        const whole =
          packBytes.get(repoKey, pack.name) ??
          (await loadOnce(pack.name, async () => {
            const bytes = await fsFor(pack.size).readFile(path);
            const read = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
            // One SHA-1 over the whole pack (git's own trailer) instead of one per object read.
            if (!trailerMatches(read, pack.index.packChecksum)) {
              failedChecksum(pack, path);
            } else {
              unverified.delete(pack.name);
            }
            packBytes.set(repoKey, pack.name, read, read.byteLength);
            return read;
          }));
        return wholeEntry(pack, whole.subarray(offset, end), offset, crc);
      }
      let bytes: Buffer;
      const start = offset - (offset % WINDOW_BYTES);
      const windowEnd = Math.min(start + WINDOW_BYTES + WINDOW_SPILL, pack.size);
      const window = end <= windowEnd ? cachedWindow(pack.name, start) : undefined;
      if (window !== undefined) {
        bytes = window.subarray(offset - start, end - start);
      } else if (point && end - offset <= WINDOW_SPILL) {
        bytes = await pointBytes(pack, path, offset, end);
      } else if (end <= windowEnd) {
        bytes = (await loadWindow(pack.name, path, start, windowEnd)).subarray(offset - start, end - start);
      } else {
        const read = await fs.readRange(path, offset, end - offset);
        bytes = Buffer.from(read.buffer, read.byteOffset, read.byteLength);
      }
      if (crc === undefined) return { bytes, verified: false };
      if (crc32(bytes) !== crc) throw corrupt(`${pack.name}@${offset}`, "entry bytes do not match the CRC-32 its index records");
      return { bytes, verified: !unverified.has(pack.name) };
    } catch (error) {
      if (errnoCode(error) === "ENOENT") throw new PackGone(pack.name);
      throw error;
    }
  }

  /**
   * An entry of a pack read whole: verified by the pack's checksum, or, in a pack that failed it
   * (see {@link unverified}), checked against its CRC-32 when given and left to be hashed.
   */
  function wholeEntry(pack: LoadedPack, bytes: Buffer, offset: number, crc: number | undefined): { bytes: Buffer; verified: boolean } {
    if (!unverified.has(pack.name)) return { bytes, verified: true };
    if (crc !== undefined && crc32(bytes) !== crc) throw corrupt(`${pack.name}@${offset}`, "entry bytes do not match the CRC-32 its index records");
    return { bytes, verified: false };
  }

  /**
   * `error`, met reading `oid` out of `pack`, as that object's damage (see damagedObject);
   * the pack's bytes are dropped from the cache when it failed its checksum, so a later read
   * reads the file again (restored in place, it is whole again). Other errors as they are.
   */
  function asDamage(oid: Oid, pack: LoadedPack, error: unknown): unknown {
    if (!(error instanceof WorkflowHostError) || error.code !== "object_corrupt" || error.data.damaged === true) return error;
    if (unverified.has(pack.name)) packBytes.delete(repoKey, pack.name);
    const reason = typeof error.data.reason === "string" ? error.data.reason : error.message;
    return damagedObject(oid, `its entry in pack ${pack.name}${unverified.has(pack.name) ? " (which fails its checksum)" : ""}: ${reason}`, { pack: pack.name }, error);
  }

  /**
   * The bytes `[offset, end)` of `pack` when this process wrote it and keeps them (see
   * {@link written}): a view of the piece that holds them; undefined otherwise (an entry in or
   * across a piece lent by an object's owner, see EncodedPack.lent).
   */
  function writtenEntry(pack: LoadedPack, offset: number, end: number): Buffer | undefined {
    const kept = written.get(pack.name);
    if (kept === undefined || kept.size !== pack.size || unverified.has(pack.name) || offset < 0 || end > kept.size || end <= offset) return undefined;
    const ends = kept.ends;
    let lo = 0;
    let hi = ends.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((ends[mid] as number) > offset) hi = mid;
      else lo = mid + 1;
    }
    const part = kept.parts[lo];
    if (part === undefined || part === null) return undefined;
    const partStart = (ends[lo] as number) - part.byteLength;
    // An entry lies in one piece (the encoder's own buffer, or a block of entries built
    // beforehand); one that does not is read as before.
    return end <= (ends[lo] as number) ? Buffer.from(part.buffer, part.byteOffset + offset - partStart, end - offset) : undefined;
  }

  /** Forgets the kept bytes of `name` (see {@link written}). */
  function forgetWritten(name: string): void {
    const kept = written.get(name);
    if (kept === undefined) return;
    written.delete(name);
    keptWritten.delete(kept.entry);
    keptWrittenBytes -= kept.size;
  }

  /** {@link entryBytes} when they are in memory already (a cached pack or window), else undefined. */
  function entryBytesInMemory(pack: LoadedPack, offset: number, crc: number): { bytes: Buffer; verified: boolean } | undefined {
    const end = pack.index.endOf(offset);
    if (pack.size <= WHOLE_PACK_MAX_BYTES) {
      const kept = writtenEntry(pack, offset, end);
      if (kept !== undefined) return { bytes: kept, verified: true };
      const whole = packBytes.get(repoKey, pack.name);
      return whole === undefined ? undefined : wholeEntry(pack, whole.subarray(offset, end), offset, crc);
    }
    const start = offset - (offset % WINDOW_BYTES);
    if (end > Math.min(start + WINDOW_BYTES + WINDOW_SPILL, pack.size)) return undefined;
    const window = cachedWindow(pack.name, start);
    if (window === undefined) return undefined;
    const bytes = window.subarray(offset - start, end - start);
    if (crc32(bytes) !== crc) throw corrupt(`${pack.name}@${offset}`, "entry bytes do not match the CRC-32 its index records");
    return { bytes, verified: !unverified.has(pack.name) };
  }

  function readInMemory(oid: Oid, view = false): GitObject | undefined {
    if (!scanFinished) return undefined;
    const at = locate(oid);
    if (at === null) return undefined;
    try {
      const offset = at.pack.index.offsetAt(at.entry);
      const entry = entryBytesInMemory(at.pack, offset, at.pack.index.crcAt(at.entry));
      if (entry === undefined) return undefined;
      const head = parseEntryHead(at.pack.name, entry.bytes);
      if (isDelta(head.typeCode)) return undefined;
      const type = typeOfCode(head.typeCode);
      // An unverified entry is inflated (never viewed): a stored block's content has no check of its own.
      // The inflate is a call of its own, given locals only: a fire commit views every entry it
      // reads, and V8 optimised this function before a read that inflates had run here; that
      // read's property loads, without feedback, then undid the code (design notes §67).
      const content = (view && entry.verified ? storedView(entry.bytes, head.dataAt, head.size) : null) ?? inflatedEntry(at, entry, head);
      if (entry.verified) return { oid, type, content };
      const object = hashObject(type, content);
      if (object.oid !== oid) throw corrupt(oid, `packed content hashes to ${object.oid} (${at.pack.name})`);
      return object;
    } catch (error) {
      throw asDamage(oid, at.pack, error);
    }
  }

  /** Decodes the entry at `offset`, resolving deltas through their bases. */
  async function decodeAt(pack: LoadedPack, offset: number, depth: number, crc: number | undefined, point: boolean): Promise<{ type: GitObject["type"]; content: Buffer; verified: boolean }> {
    const { bytes, verified } = await entryBytes(pack, offset, crc, point);
    const head = parseEntryHead(pack.name, bytes);
    const payload = inflateEntry(pack.name, bytes, head);
    if (!isDelta(head.typeCode)) return { type: typeOfCode(head.typeCode), content: payload, verified };
    if (depth >= MAX_DELTA_DEPTH) throw corrupt(`${pack.name}@${offset}`, `delta chain deeper than ${MAX_DELTA_DEPTH}`);
    let base: { type: GitObject["type"]; content: Uint8Array };
    if (head.baseDistance !== undefined) {
      base = await decodeAt(pack, offset - head.baseDistance, depth + 1, undefined, point);
    } else {
      const object = await readFrom(head.baseOid as Oid, depth + 1, point);
      if (object === null) throw corrupt(head.baseOid as Oid, "delta base missing from every pack");
      base = object;
    }
    return { type: base.type, content: applyDelta(pack.name, base.content, payload), verified: false };
  }

  async function readFrom(oid: Oid, depth: number, point: boolean): Promise<GitObject | null> {
    const at = locate(oid);
    if (at === null) return null;
    try {
      const { type, content, verified } = await decodeAt(at.pack, at.pack.index.offsetAt(at.entry), depth, at.pack.index.crcAt(at.entry), point);
      // A whole entry of a checksummed pack is what the index says it is; anything else (a
      // range read, a delta result, an entry of a pack that failed its checksum) is hashed
      // against its oid as loose objects are.
      if (verified) return { oid, type, content };
      const object = hashObject(type, content);
      if (object.oid !== oid) throw corrupt(oid, `packed content hashes to ${object.oid} (${at.pack.name})`);
      return object;
    } catch (error) {
      throw asDamage(oid, at.pack, error);
    }
  }

  async function read(oid: Oid, allowRescan: boolean, point = false): Promise<GitObject | null> {
    await ensureScanned();
    // A miss is looked for again after a fresh listing (twice: a listing taken while another
    // process was between placing a merged pack and deleting the old ones can miss both); a
    // pack that vanished under a read is replaced by a fresh listing.
    let misses = 0;
    let gone = 0;
    for (;;) {
      try {
        const found = await readFrom(oid, 0, point);
        if (found !== null) return found;
        if (!allowRescan || ++misses > 2) {
          if (allowRescan && broken.size > 0) {
            const [name, why] = broken.entries().next().value as [string, WorkflowHostError];
            throw new WorkflowHostError(
              "object_corrupt",
              `git object ${oid} cannot be read: it is in no readable pack, and the index of ${name} is damaged (${why.message})`,
              { oid, pack: name, reason: "damaged pack index" },
              { cause: why },
            );
          }
          if (allowRescan && salvaged.size > 0) {
            // It may be among a damaged pack's entries that could not be read: that object's
            // damage (its run's problem), never a missing object of a sound store.
            const [name, lost] = salvaged.entries().next().value as [string, { indexed: number; unreadable: number }];
            throw damagedObject(oid, `it is in no readable pack, and pack ${name} is damaged (its index lost or damaged, the pack failing its checksum: ${lost.unreadable} of its entries could not be read); restore the pack from a remote or a backup`, { pack: name, unreadableEntries: lost.unreadable });
          }
          return null;
        }
      } catch (error) {
        if (!(error instanceof PackGone)) throw error;
        if (++gone > 5) return null;
      }
      await rescan();
    }
  }

  return {
    read,
    readInMemory,
    contains: (oid) => locate(oid) !== null,
    markPacked(oids, found) {
      for (let i = 0; i < packs.length; i++) (packs[i] as LoadedPack).index.markFound(oids, found);
    },
    ensureScanned,
    get packs() {
      return packs;
    },
    ageOf: (pack) => ages.get(pack.name) ?? newestAge,
    adopt(placed, replaced, given) {
      for (const name of replaced ?? []) forgetWritten(name);
      if (given !== undefined && placed.size <= WHOLE_PACK_MAX_BYTES && !written.has(placed.name)) {
        const { parts: all, lent } = given;
        const ends = new Float64Array(all.length);
        const parts: (Uint8Array | null)[] = [];
        let size = 0;
        for (let i = 0; i < all.length; i++) {
          const part = all[i] as Uint8Array;
          size += part.byteLength;
          ends[i] = size;
          parts.push(part);
        }
        for (const i of lent) parts[i] = null;
        if (size === placed.size) {
          const name = placed.name;
          const entry = { size, forget: () => forgetWritten(name) };
          written.set(name, { parts, size, ends, entry });
          keptWritten.add(entry);
          keptWrittenBytes += size;
          // Oldest first out, whichever reader kept it.
          trimKeptWritten();
        }
      }
      let age = Number.NEGATIVE_INFINITY;
      for (const name of replaced ?? []) age = Math.max(age, ages.get(name) ?? Number.NEGATIVE_INFINITY);
      if (age === Number.NEGATIVE_INFINITY) age = newestAge === Number.NEGATIVE_INFINITY ? 0 : newestAge + 1;
      for (const name of replaced ?? []) if (name !== placed.name) ages.delete(name);
      setAge(placed.name, age);
      packs = [placed, ...packs.filter((p) => p.name !== placed.name && replaced?.has(p.name) !== true)];
      if (replaced !== undefined && replaced.size > 0) dropHandles(new Set(packs.map((p) => p.name)));
    },
    async recheckWritten(names) {
      let left = false;
      for (const name of names) {
        if (!written.has(name)) continue;
        forgetWritten(name);
        const pack = packs.find((p) => p.name === name);
        if (pack === undefined || !pack.mergeable) continue;
        const path = `${packDir}/${name}.pack`;
        let read: Buffer;
        try {
          const bytes = await fsFor(pack.size).readFile(path);
          read = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
        } catch (error) {
          if (errnoCode(error) !== "ENOENT") throw error;
          pack.mergeable = false;
          left = true;
          continue;
        }
        if (read.length !== pack.size || !trailerMatches(read, pack.index.packChecksum)) {
          failedChecksum(pack, path);
          left = true;
        } else packBytes.set(repoKey, name, read, read.byteLength);
      }
      return left;
    },
    async close() {
      // Kept written packs are a cache: a closed reader gives its share of the budget back.
      for (const name of [...written.keys()]) forgetWritten(name);
      closing = true;
      for (const wake of [...trailerWaits]) wake();
      while (trailerChecks.size > 0) await Promise.all(trailerChecks);
      closing = false;
      while (revWrites.size > 0) await Promise.all(revWrites);
      const kept = pointHandles.splice(0);
      await Promise.all(kept.map(async (k) => (await k.handle.catch(() => null))?.close().catch(() => undefined)));
    },
  };
}
