/**
 * The pack files of one bare repository: finding objects in them, writing the objects of one
 * commit as one new pack, and merging small packs so lookups stay cheap.
 *
 * Why packs: a commit that fires a thousand timers on a 10 000-run deployment writes ~3 000
 * objects (a blob, the run's two trees on the path, then `runs/` and the root). As loose
 * objects that is ~15 000 file-system calls (temp write, rename, fan-out folders, existence
 * checks) and dominated the commit; as one pack it is two files. Reading a recovery's 100 000
 * event blobs likewise costs one file read instead of 100 000 opens.
 *
 * Crash safety is git's: the pack and its index are written to temp files in `objects/`, the
 * pack is renamed into `objects/pack/` first and its index last. Git and this store only look
 * at packs that have an index, so a reader sees either no new pack or a whole one, and a crash
 * leaves at worst a temp file or an unreferenced pack (as with loose objects, nothing refers to
 * the new objects until the ref moves).
 *
 * Durability ("fsync"), by git's rules: a commit's pack and index are flushed (both at once)
 * before they are renamed, so their bytes are on disk before the ref can move; the renames
 * themselves are not flushed folder by folder. Git never flushes folders: it relies on the
 * file system keeping metadata operations in order (ext4, XFS and btrfs journal them in
 * sequence), so a ref rename that survived a crash implies the pack renames made before it
 * did. The ref store flushes the ref's folder once after the ref moved, which makes the whole
 * commit durable when the write returns. A merge flushes the pack folder once, before deleting
 * the packs it replaces (a deletion that outran the merged pack's name would lose objects); the
 * deletions are not flushed (a deleted pack that comes back is only a duplicate).
 *
 * Reading: every `pack-*.idx` is parsed once (lookups are binary searches in memory); pack
 * bytes are read whole and cached while small, by range otherwise. Whole entries and git's
 * delta entries (what `git gc` writes) are decoded here; every object is checked against its
 * oid. A pack that vanished (`git gc`, another process merging) triggers one rescan of the
 * folder, as git itself does.
 *
 * Merging (see {@link PackStore.maintain}): once more than {@link MAX_PACKS} packs exist, the
 * smallest are merged geometrically (each kept pack holds at least twice the objects of all
 * smaller ones together) by copying their entries byte for byte, in the background, then the
 * merged packs are deleted, index first. Big folders are stored as deltas in merged packs (see
 * pack-merge.ts). Packs holding ref-deltas (a base named by oid, possibly elsewhere) are left
 * to git.
 */
import { createHash, randomBytes, webcrypto } from "node:crypto";
import { WorkflowHostError } from "../errors.js";
import { errnoCode, type FileHandleLike, type FsAdapter } from "./fs-adapter.js";
import { type GitObject, hashObject } from "./git-object.js";
import type { ScopedLruCache } from "./lru-cache.js";
import {
  applyDelta,
  crc32,
  encodePack,
  type EncodedPack,
  inflateEntry,
  isDelta,
  packHasRefDeltas,
  type PackIndex,
  type PackSource,
  parseEntryHead,
  parsePackIndex,
  typeOfCode,
} from "./pack-file.js";
import { mergePacks } from "./pack-merge.js";
import type { DeltaBase, ParsedTree } from "./tree-object.js";
import type { Oid } from "./types.js";

/** Temp files in `objects/` older than this (ms) are a dead writer's and are removed. */
export const STALE_TEMP_MS = 15 * 60_000;
/** A spare temp file pair older than this (ms) is replaced, not used (see makeSpare). */
const SPARE_MAX_AGE_MS = 60_000;
/**
 * An empty temp file older than this (ms) is a spare no writer will use (spares are taken
 * only while younger than {@link SPARE_MAX_AGE_MS} and written the moment they are taken), left
 * by a process that was killed: removed at open rather than after {@link STALE_TEMP_MS}.
 */
export const STALE_SPARE_MS = 5 * SPARE_MAX_AGE_MS;
const EMPTY = new Uint8Array(0);
/** More packs than this and the smallest are merged. */
export const MAX_PACKS = 16;
/**
 * Packs up to this size (bytes), and their indexes, are written and read with the quick
 * (blocking) adapter: a commit's pack is tens of KB, and each round trip through the thread pool
 * costs more than the call itself (see fs-adapter.ts). Merged packs go through the pool.
 */
const QUICK_PACK_BYTES = 64 * 1024;
/**
 * Packs up to this size are read whole (and cached, their checksum checked once); bigger ones
 * (a generated or imported history, a merged pack of a big deployment) through windows.
 */
const WHOLE_PACK_MAX_BYTES = 8 * 1024 * 1024;
/**
 * Bigger packs are read in windows of this size (plus {@link WINDOW_SPILL}), cached with the
 * whole packs (same byte budget): a recovery walks a 40 MB pack of 200 000 events mostly in
 * order, so a few windows serve it, where reading it whole kept 40 MB per pack in memory and
 * hashed all of it before the first object could be used.
 */
const WINDOW_BYTES = 1024 * 1024;
/** How far past its window an entry may end and still be served from it (bigger: read alone). */
const WINDOW_SPILL = 64 * 1024;
/** Delta chains deeper than git's default depth (50) by a margin are refused as corrupt. */
const MAX_DELTA_DEPTH = 64;

export interface PackStoreOptions {
  readonly fs: FsAdapter;
  /**
   * For the small files (see QUICK_PACK_BYTES), the renames that publish a pack and the pack
   * folder's listing (see fs-adapter.ts); default `fs`.
   */
  readonly quickFs?: FsAdapter;
  readonly gitdir: string;
  /** Distinguishes this repository's entries in the shared cache. */
  readonly repoKey: string;
  /** Whole pack files by pack name (scoped by `repoKey`), weighted by bytes; shared by all repositories. */
  readonly packBytes: ScopedLruCache<Buffer>;
  /** Windows of big packs (see WINDOW_BYTES), shared by all repositories; default `packBytes`. */
  readonly packWindows?: ScopedLruCache<Buffer>;
  readonly durable: boolean;
  /** A parsed tree by oid when one is cached (merging uses it instead of parsing big folders). */
  readonly cachedTree?: (oid: Oid) => ParsedTree | undefined;
  /** The delta a big tree was written with, when known (merging stores it as is). */
  readonly deltaBase?: (oid: Oid) => DeltaBase | undefined;
}

export interface PackStore {
  /**
   * The object from a pack, checked against its oid; null when no pack holds it.
   * @param rescan look for packs added since the last scan before giving up
   * @throws `object_corrupt` when a pack holds it but it cannot be decoded
   */
  read(oid: Oid, rescan: boolean): Promise<GitObject | null>;
  /**
   * The object, when a known pack holds it whole (not as a delta) in bytes already in memory
   * (a cached pack or window): checked as {@link read} checks it, without any I/O and without
   * a promise, for walks reading a million small objects. Undefined whenever {@link read} is
   * needed instead (not scanned yet, not found, not in memory, a delta).
   * @throws `object_corrupt` as {@link read}
   */
  readInMemory(oid: Oid): GitObject | undefined;
  /**
   * Writes `objects` as one new pack; resolves once it is in place (its bytes flushed when
   * durable; its name is made durable by the ref's folder flush, see module comment).
   */
  write(objects: readonly GitObject[]): Promise<void>;
  /**
   * Starts writing `objects` as one new pack to temp files, returning at once: `publish` puts
   * it in place (as {@link write}), `discard` removes the temp files. One of the two must be
   * called. Lets a commit write its pack while it waits for the ref lock.
   */
  stage(objects: readonly GitObject[]): StagedObjects;
  /**
   * Whether a pack this store knows holds `oid` (an in-memory index lookup, no rescan). A writer
   * skips such objects: writing them again (a subtree or file put back unchanged, as retention's
   * archive commit does) would only store a second copy until a merge drops it.
   */
  contains(oid: Oid): boolean;
  /**
   * Starts merging small packs in the background when there are too many (see module
   * comment); one merge at a time, failures ignored. Returns at once: a merge copies megabytes
   * and must not delay the commit that triggered it.
   */
  maintain(): void;
  /**
   * A merge for a quiet moment (see {@link quietMergeSet}): the packs besides the biggest are
   * merged into one, so recent commits get their deltas without waiting for {@link MAX_PACKS};
   * the biggest is merged in too only once the others together hold half its objects, so each
   * object is rewritten O(log n) times over the repository's life, never the whole history on
   * every call. Waits for a merge already running first. Failures are ignored (as maintain's).
   */
  compact(): Promise<void>;
  /** Resolves when no merge is running. */
  idle(): Promise<void>;
  /**
   * Waits for the running merge and removes the spare temp files; later commits create their
   * temp files themselves (the store stays usable).
   */
  close(): Promise<void>;
  /** Number of packs known. */
  readonly count: number;
}

/** Objects written to temp files, not yet visible to any reader. */
export interface StagedObjects {
  /** Moves them into place; resolves once a reader can find them (bytes flushed when durable). */
  publish(): Promise<void>;
  /** Removes the temp files (after the writes in flight finish); never throws. */
  discard(): Promise<void>;
}

interface StagedPack {
  publish(): Promise<LoadedPack>;
  discard(): Promise<void>;
}

interface LoadedPack {
  /** `pack-<checksum>` (no extension). */
  readonly name: string;
  readonly index: PackIndex;
  readonly size: number;
  /** False once it was found to hold ref-delta entries (git's), which are never merged here. */
  mergeable: boolean;
}

function corrupt(oid: string, reason: string, cause?: unknown): WorkflowHostError {
  return new WorkflowHostError("object_corrupt", `git object ${oid} cannot be read: ${reason}`, { oid, reason }, cause === undefined ? {} : { cause });
}

class PackGone extends Error {}

/** Creates the pack store of the bare repository at `gitdir`. */
export function createPackStore(opts: PackStoreOptions): PackStore {
  const { fs, gitdir, repoKey, packBytes, durable } = opts;
  const packWindows = opts.packWindows ?? packBytes;
  const quickFs = opts.quickFs ?? fs;
  const packDir = `${gitdir}/objects/pack`;
  const tempPrefix = randomBytes(4).toString("hex");
  let tempCounter = 0;
  /** Newest first: recently written objects are the ones read most. */
  let packs: LoadedPack[] = [];
  let scanned: Promise<void> | null = null;
  let merging: Promise<void> | null = null;
  /** The one sweep of stale temp files (see sweepTemps). */
  let sweeping: Promise<void> | null = null;
  let packDirMade = false;
  const oidBytes = Buffer.alloc(20);
  /**
   * Packs whose index cannot be parsed (truncated, wrong checksum), with why: their objects
   * cannot be found, so a miss is then reported as this damage (`object_corrupt` naming the
   * pack), never as a missing object (which would make a ref pointing into the pack read as
   * dangling). Looked at again at every scan: an index rewritten whole is taken up.
   */
  const broken = new Map<string, WorkflowHostError>();

  /** The adapter for reading or writing a pack of `bytes` and its index (see QUICK_PACK_BYTES). */
  const fsFor = (bytes: number): FsAdapter => (bytes <= QUICK_PACK_BYTES ? quickFs : fs);

  async function loadPack(name: string): Promise<LoadedPack | null> {
    const stat = await quickFs.statOrNull(`${packDir}/${name}.pack`);
    if (stat === null) return null;
    const idx = await fsFor(Number(stat.size)).readFileOrNull(`${packDir}/${name}.idx`);
    if (idx === null) return null;
    return { name, index: parsePackIndex(name, idx, Number(stat.size)), size: Number(stat.size), mergeable: true };
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
      const kept = packs.filter((p) => names.has(`${p.name}.idx`) && names.has(`${p.name}.pack`));
      const fresh: string[] = [];
      for (const file of names) {
        if (!file.endsWith(".idx")) continue;
        const name = file.slice(0, -4);
        if (!known.has(name) && names.has(`${name}.pack`)) fresh.push(name);
      }
      // All at once: a reader behind a busy writer has one new pack per commit to load.
      let unreadable = 0;
      const loaded = await Promise.all(
        fresh.map((name) =>
          loadPack(name).then(
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
      const added = loaded.filter((pack): pack is LoadedPack => pack !== null);
      const vanished = added.length + unreadable < fresh.length;
      packs = [...added, ...kept];
      if (!vanished) return;
    }
  }

  /** True once a scan has finished (packs are then known). */
  let scanFinished = false;

  function ensureScanned(): Promise<void> {
    sweeping ??= sweepTemps();
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

  /**
   * Removes what killed writers left, once per store (at the first read of the repository), in
   * the background, best effort:
   * - temp files in `objects/` (git's `tmp_` prefix: `tmp_pack_`, `tmp_idx_`, `tmp_obj_`) older
   *   than {@link STALE_TEMP_MS}, or empty and older than {@link STALE_SPARE_MS} (a spare pair).
   *   Nothing refers to them (a pack counts once renamed into `objects/pack/`), and a live
   *   writer's temp files are milliseconds old;
   * - a `pack-*.pack` in `objects/pack/` without its `.idx`, older than {@link STALE_TEMP_MS}: a
   *   merge (or commit) killed between placing the pack and its index. No reader uses a pack
   *   without an index, and a live writer places the index microseconds after the pack.
   * Git itself removes such files only at `git gc`, after two weeks.
   */
  async function sweepTemps(): Promise<void> {
    try {
      const dir = `${gitdir}/objects`;
      for (const name of await fs.readdirOrEmpty(dir)) {
        if (!name.startsWith("tmp_")) continue;
        const stat = await fs.statOrNull(`${dir}/${name}`);
        if (stat === null || !stat.isFile()) continue;
        const ageMs = Date.now() - stat.mtimeMs;
        if (ageMs > STALE_TEMP_MS || (Number(stat.size) === 0 && ageMs > STALE_SPARE_MS)) await fs.unlinkQuiet(`${dir}/${name}`);
      }
      const names = new Set(await fs.readdirOrEmpty(packDir));
      for (const name of names) {
        if (!/^pack-[0-9a-f]{40,64}\.pack$/.test(name) || names.has(name.replace(/\.pack$/, ".idx"))) continue;
        const stat = await fs.statOrNull(`${packDir}/${name}`);
        if (stat === null || !stat.isFile() || Date.now() - stat.mtimeMs <= STALE_TEMP_MS) continue;
        // Looked at once more just before: an index that arrived meanwhile makes it a pack.
        if ((await fs.statOrNull(`${packDir}/${name.replace(/\.pack$/, ".idx")}`)) === null) await fs.unlinkQuiet(`${packDir}/${name}`);
      }
    } catch {
      // A file left is only wasted space.
    }
  }

  async function rescan(): Promise<void> {
    scanned = scan();
    await scanned;
  }

  function locate(oid: Oid): { pack: LoadedPack; entry: number } | null {
    if (packs.length === 0 || oidBytes.write(oid, 0, "hex") !== 20) return null;
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
  async function entryBytes(pack: LoadedPack, offset: number, crc?: number): Promise<{ bytes: Buffer; verified: boolean }> {
    const end = pack.index.endOf(offset);
    const path = `${packDir}/${pack.name}.pack`;
    try {
      if (pack.size <= WHOLE_PACK_MAX_BYTES) {
        let whole = packBytes.get(repoKey, pack.name);
        if (whole === undefined) {
          const bytes = await fsFor(pack.size).readFile(path);
          whole = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
          // One SHA-1 over the whole pack (git's own trailer) instead of one per object read.
          const sum = createHash("sha1").update(whole.subarray(0, whole.length - 20)).digest("hex");
          if (whole.length < 32 || sum !== whole.toString("hex", whole.length - 20) || sum !== pack.index.packChecksum) {
            throw new WorkflowHostError("object_corrupt", `pack ${pack.name} is corrupt: checksum mismatch`, { pack: pack.name });
          }
          packBytes.set(repoKey, pack.name, whole, whole.byteLength);
        }
        return { bytes: whole.subarray(offset, end), verified: true };
      }
      let bytes: Buffer;
      const start = offset - (offset % WINDOW_BYTES);
      const windowEnd = Math.min(start + WINDOW_BYTES + WINDOW_SPILL, pack.size);
      if (end <= windowEnd) {
        const key = `${pack.name}@${start}`;
        let window = packWindows.get(repoKey, key);
        if (window === undefined) {
          const read = await fs.readRange(path, start, windowEnd - start);
          if (read.byteLength !== windowEnd - start) throw new PackGone(pack.name);
          window = Buffer.from(read.buffer, read.byteOffset, read.byteLength);
          packWindows.set(repoKey, key, window, window.byteLength);
        }
        bytes = window.subarray(offset - start, end - start);
      } else {
        const read = await fs.readRange(path, offset, end - offset);
        bytes = Buffer.from(read.buffer, read.byteOffset, read.byteLength);
      }
      if (crc === undefined) return { bytes, verified: false };
      if (crc32(bytes) !== crc) throw corrupt(`${pack.name}@${offset}`, "entry bytes do not match the CRC-32 its index records");
      return { bytes, verified: true };
    } catch (error) {
      if (errnoCode(error) === "ENOENT") throw new PackGone(pack.name);
      throw error;
    }
  }

  /** {@link entryBytes} when they are in memory already (a cached pack or window), else undefined. */
  function entryBytesInMemory(pack: LoadedPack, offset: number, crc: number): { bytes: Buffer; verified: boolean } | undefined {
    const end = pack.index.endOf(offset);
    if (pack.size <= WHOLE_PACK_MAX_BYTES) {
      const whole = packBytes.get(repoKey, pack.name);
      return whole === undefined ? undefined : { bytes: whole.subarray(offset, end), verified: true };
    }
    const start = offset - (offset % WINDOW_BYTES);
    if (end > Math.min(start + WINDOW_BYTES + WINDOW_SPILL, pack.size)) return undefined;
    const window = packWindows.get(repoKey, `${pack.name}@${start}`);
    if (window === undefined) return undefined;
    const bytes = window.subarray(offset - start, end - start);
    if (crc32(bytes) !== crc) throw corrupt(`${pack.name}@${offset}`, "entry bytes do not match the CRC-32 its index records");
    return { bytes, verified: true };
  }

  function readInMemory(oid: Oid): GitObject | undefined {
    if (!scanFinished) return undefined;
    const at = locate(oid);
    if (at === null) return undefined;
    const offset = at.pack.index.offsetAt(at.entry);
    const entry = entryBytesInMemory(at.pack, offset, at.pack.index.crcAt(at.entry));
    if (entry === undefined) return undefined;
    const head = parseEntryHead(at.pack.name, entry.bytes);
    if (isDelta(head.typeCode)) return undefined;
    const type = typeOfCode(head.typeCode);
    const content = inflateEntry(at.pack.name, entry.bytes, head);
    if (entry.verified) return { oid, type, content };
    const object = hashObject(type, content);
    if (object.oid !== oid) throw corrupt(oid, `packed content hashes to ${object.oid} (${at.pack.name})`);
    return object;
  }

  /** Decodes the entry at `offset`, resolving deltas through their bases. */
  async function decodeAt(pack: LoadedPack, offset: number, depth: number, crc?: number): Promise<{ type: GitObject["type"]; content: Buffer; verified: boolean }> {
    const { bytes, verified } = await entryBytes(pack, offset, crc);
    const head = parseEntryHead(pack.name, bytes);
    const payload = inflateEntry(pack.name, bytes, head);
    if (!isDelta(head.typeCode)) return { type: typeOfCode(head.typeCode), content: payload, verified };
    if (depth >= MAX_DELTA_DEPTH) throw corrupt(`${pack.name}@${offset}`, `delta chain deeper than ${MAX_DELTA_DEPTH}`);
    let base: { type: GitObject["type"]; content: Uint8Array };
    if (head.baseDistance !== undefined) {
      base = await decodeAt(pack, offset - head.baseDistance, depth + 1);
    } else {
      const object = await readFrom(head.baseOid as Oid, depth + 1);
      if (object === null) throw corrupt(head.baseOid as Oid, "delta base missing from every pack");
      base = object;
    }
    return { type: base.type, content: applyDelta(pack.name, base.content, payload), verified: false };
  }

  async function readFrom(oid: Oid, depth: number): Promise<GitObject | null> {
    const at = locate(oid);
    if (at === null) return null;
    const { type, content, verified } = await decodeAt(at.pack, at.pack.index.offsetAt(at.entry), depth, at.pack.index.crcAt(at.entry));
    // A whole entry of a checksummed pack is what the index says it is; anything else (a
    // range read, a delta result) is hashed against its oid as loose objects are.
    if (verified) return { oid, type, content };
    const object = hashObject(type, content);
    if (object.oid !== oid) throw corrupt(oid, `packed content hashes to ${object.oid} (${at.pack.name})`);
    return object;
  }

  async function read(oid: Oid, allowRescan: boolean): Promise<GitObject | null> {
    await ensureScanned();
    // A miss is looked for again after a fresh listing (twice: a listing taken while another
    // process was between placing a merged pack and deleting the old ones can miss both); a
    // pack that vanished under a read is replaced by a fresh listing.
    let misses = 0;
    let gone = 0;
    for (;;) {
      try {
        const found = await readFrom(oid, 0);
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
          return null;
        }
      } catch (error) {
        if (!(error instanceof PackGone)) throw error;
        if (++gone > 5) return null;
      }
      await rescan();
    }
  }

  const tempName = (kind: "pack" | "idx"): string => `${gitdir}/objects/tmp_${kind}_${tempPrefix}${(tempCounter++).toString(36)}`;

  /**
   * Two empty temp files made ahead of time (through the thread pool, off the commit's path)
   * for the next small pack: creating a file is the slowest call of a commit here (~0.3 ms on
   * ext4, against ~0.005 ms to open one that exists), and a commit needs two. Used only while
   * younger than {@link SPARE_MAX_AGE_MS}, far below the age at which any store sweeps temp
   * files ({@link STALE_TEMP_MS}); removed by {@link PackStore.close}.
   */
  let spare: { readonly pack: string; readonly idx: string; readonly madeAt: number } | null = null;
  let makingSpare: Promise<void> | null = null;
  let closed = false;

  function makeSpare(): void {
    if (spare !== null || makingSpare !== null || closed) return;
    const pair = { pack: tempName("pack"), idx: tempName("idx"), madeAt: Date.now() };
    makingSpare = Promise.all([fs.writeNewFile(pair.pack, EMPTY, false), fs.writeNewFile(pair.idx, EMPTY, false)])
      .then(
        () => {
          if (closed) return removeFiles(pair.pack, pair.idx);
          spare = pair;
        },
        // A spare is an optimisation: without one, the next commit creates its files itself.
        () => removeFiles(pair.pack, pair.idx),
      )
      .finally(() => {
        makingSpare = null;
      });
  }

  /** The spare pair if there is a fresh one (it is then no longer spare), else null. */
  function takeSpare(): { pack: string; idx: string } | null {
    const pair = spare;
    spare = null;
    if (pair === null) return null;
    if (Date.now() - pair.madeAt > SPARE_MAX_AGE_MS) {
      void removeFiles(pair.pack, pair.idx);
      return null;
    }
    return pair;
  }

  async function removeFiles(...paths: string[]): Promise<void> {
    for (const path of paths) await quickFs.unlinkQuiet(path).catch(() => undefined);
  }

  /** Writes `data` into the spare temp file `path`, or creates it when it is gone. */
  async function writeSpare(path: string, data: Uint8Array): Promise<void> {
    let handle: FileHandleLike;
    try {
      handle = await quickFs.open(path, "r+");
    } catch (error) {
      if (errnoCode(error) !== "ENOENT") throw error;
      return quickFs.writeNewFile(path, data, durable);
    }
    try {
      await handle.write(data);
      if (durable) await handle.sync();
    } finally {
      await handle.close();
    }
  }

  /**
   * Writes `encoded` to two temp files in `objects/`; `publish` renames the pack into
   * `objects/pack/` and then its index, `discard` removes the temp files. Until published, no
   * reader (git or this store) sees the objects. A commit's pack (≤ QUICK_PACK_BYTES) is written
   * with the quick adapter into the spare pair: through the thread pool, the three calls per file
   * cost more than the write itself (measured: −1 ms of a 4 ms signal delivery). Bigger packs
   * (merges, imports) go through the pool, both files at once, so a slow disk does not stall
   * the event loop.
   */
  function stageEncoded(encoded: EncodedPack, flushFolder: boolean): StagedPack {
    const name = `pack-${encoded.checksum}`;
    const quick = encoded.pack.length <= QUICK_PACK_BYTES;
    const pair = quick ? takeSpare() : null;
    const tempPack = pair?.pack ?? tempName("pack");
    const tempIdx = pair?.idx ?? tempName("idx");
    const writer = fsFor(encoded.pack.length);
    const write = (path: string, data: Uint8Array): Promise<void> => (pair !== null ? writeSpare(path, data) : writer.writeNewFile(path, data, durable));
    const written = Promise.all([write(tempPack, encoded.pack), write(tempIdx, encoded.idx)]);
    // Observed here so a failure is never unhandled; `publish` and `discard` await it again.
    written.catch(() => undefined);
    if (quick) makeSpare();
    const removeTemps = async (): Promise<void> => {
      await written.catch(() => undefined);
      await removeFiles(tempPack, tempIdx);
    };
    return {
      async publish() {
        try {
          await written;
          if (!packDirMade) {
            await quickFs.mkdirp(packDir);
            packDirMade = true;
          }
          // The pack before its index: a pack counts once its index exists (git's order too).
          try {
            await quickFs.rename(tempPack, `${packDir}/${name}.pack`);
          } catch (error) {
            // The folder is git's to manage; if it is gone, make it again once.
            if (errnoCode(error) !== "ENOENT") throw error;
            await quickFs.mkdirp(packDir);
            await quickFs.rename(tempPack, `${packDir}/${name}.pack`);
          }
          await quickFs.rename(tempIdx, `${packDir}/${name}.idx`);
        } catch (error) {
          await removeTemps();
          throw error;
        }
        // A commit's pack leaves its folder to the ref's folder flush (see module comment).
        if (durable && flushFolder) await fs.fsyncDir(packDir);
        return { name, index: parsePackIndex(name, encoded.idx, encoded.pack.length), size: encoded.pack.length, mergeable: true };
      },
      discard: removeTemps,
    };
  }

  /** Puts a merged pack in place, its name flushed before the packs it replaces are deleted. */
  function place(encoded: EncodedPack): Promise<LoadedPack> {
    return stageEncoded(encoded, true).publish();
  }

  function stage(objects: readonly GitObject[]): StagedObjects {
    const staged = stageEncoded(encodePack(objects), false);
    return {
      async publish() {
        await ensureScanned();
        const placed = await staged.publish();
        packs = [placed, ...packs.filter((p) => p.name !== placed.name)];
      },
      discard: staged.discard,
    };
  }

  /**
   * Which packs to merge: the smallest by object count, until each kept pack holds at least
   * twice the objects of all smaller ones together. Counted in objects, not bytes: lookups and
   * merging cost per object, while a commit's pack is mostly bytes of one big folder (a
   * 10 000-run `runs/` tree) in a handful of objects; by bytes, every merge would also re-copy
   * a recovery-sized pack of 100 000 objects.
   */
  function mergeSet(): LoadedPack[] {
    const byCount = packs.filter((p) => p.mergeable).sort((a, b) => a.index.count - b.index.count);
    let below = 0;
    let upto = 1;
    byCount.forEach((pack, i) => {
      if (i > 0 && pack.index.count < 2 * below) upto = i;
      below += pack.index.count;
    });
    const chosen = byCount.slice(0, Math.max(2, upto + 1));
    // Oldest first (`packs` is newest first): consecutive versions of a big folder then meet
    // base before target, so each is stored as a delta against the one before.
    const age = new Map(packs.map((p, i) => [p.name, i]));
    return chosen.sort((a, b) => (age.get(b.name) ?? 0) - (age.get(a.name) ?? 0));
  }

  /**
   * The packs a quiet merge takes: every mergeable pack but the biggest (by objects) when they
   * hold fewer than half its objects together, else all of them; none when that is one pack.
   * Oldest first, as {@link mergeSet}.
   */
  function quietMergeSet(): LoadedPack[] {
    const byCount = packs.filter((p) => p.mergeable).sort((a, b) => a.index.count - b.index.count);
    const biggest = byCount.at(-1);
    if (biggest === undefined) return [];
    const rest = byCount.slice(0, -1);
    const restCount = rest.reduce((n, p) => n + p.index.count, 0);
    const chosen = 2 * restCount < biggest.index.count ? rest : byCount;
    if (chosen.length < 2) return [];
    const age = new Map(packs.map((p, i) => [p.name, i]));
    return chosen.sort((a, b) => (age.get(b.name) ?? 0) - (age.get(a.name) ?? 0));
  }

  /** Merges until at most {@link MAX_PACKS} packs are left (commits may add packs meanwhile). */
  async function mergeSmallPacks(): Promise<void> {
    while (packs.length > MAX_PACKS) {
      if (!(await mergeOnce())) return;
    }
  }

  /**
   * A merge source reading only the entries the merge will copy: a big folder this store wrote
   * with a known delta (see ParsedTree.deltaBase) whose base comes earlier in the merge is stored
   * as that delta and never read, which for per-commit packs of a big deployment is ~99% of
   * their bytes. The rest is read in as few ranges as the entries' layout allows; an entry asked
   * for outside them is read on its own.
   * @param earlier oids of the sources before this one (this pack's are added)
   */
  async function mergeSource(pack: LoadedPack, earlier: Set<Oid>): Promise<PackSource> {
    const path = `${packDir}/${pack.name}.pack`;
    const index = pack.index;
    const order = Array.from({ length: index.count }, (_, i) => i).sort((a, b) => index.offsetAt(a) - index.offsetAt(b));
    const ranges: { start: number; end: number }[] = [];
    for (const i of order) {
      const oid = index.oidAt(i);
      const known = opts.deltaBase?.(oid);
      const skip = known !== undefined && earlier.has(known.oid);
      earlier.add(oid);
      if (skip) continue;
      const start = index.offsetAt(i);
      const end = index.endOf(start);
      const last = ranges[ranges.length - 1];
      if (last !== undefined && last.end === start) last.end = end;
      else ranges.push({ start, end });
    }
    const loaded: { start: number; end: number; bytes: Buffer }[] = [];
    for (const range of ranges) {
      const bytes = await fs.readRange(path, range.start, range.end - range.start);
      if (bytes.byteLength !== range.end - range.start) throw new PackGone(pack.name);
      loaded.push({ ...range, bytes: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength) });
    }
    return {
      name: pack.name,
      index,
      async entry(start, end) {
        for (const range of loaded) {
          if (range.start <= start && end <= range.end) return range.bytes.subarray(start - range.start, end - range.start);
        }
        const bytes = await fs.readRange(path, start, end - start);
        if (bytes.byteLength !== end - start) throw new PackGone(pack.name);
        return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      },
    };
  }

  /** One merge of the {@link mergeSet} (or of `pick`). @returns whether another round may make progress */
  async function mergeOnce(pick: () => LoadedPack[] = mergeSet): Promise<boolean> {
    try {
      const chosen = pick();
      if (chosen.length < 2) return false;
      const sources: PackSource[] = [];
      const earlier = new Set<Oid>();
      for (const pack of chosen) sources.push(await mergeSource(pack, earlier));
      // The merged pack's checksum (megabytes of SHA-1) is computed off the event loop.
      const merged = await mergePacks(sources, async (body) => Buffer.from(await webcrypto.subtle.digest("SHA-1", body)), opts.cachedTree, opts.deltaBase, async (oid) => {
        const object = await read(oid, false);
        if (object === null) throw corrupt(oid, "missing while merging packs");
        return object;
      });
      if (merged === null) {
        // A source holds ref-deltas (git's): find it and leave it to git from now on.
        for (const pack of chosen) {
          const raw = await fs.readFile(`${packDir}/${pack.name}.pack`);
          if (packHasRefDeltas(Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength), pack.index)) pack.mergeable = false;
        }
        return chosen.some((pack) => !pack.mergeable);
      }
      const placed = await place(merged);
      const gone = new Set(chosen.map((p) => p.name));
      gone.delete(placed.name);
      packs = [placed, ...packs.filter((p) => !gone.has(p.name) && p.name !== placed.name)];
      for (const name of gone) {
        // Index first: without it nobody starts reading the pack; readers mid-way rescan.
        await fs.unlinkQuiet(`${packDir}/${name}.idx`);
        await fs.unlinkQuiet(`${packDir}/${name}.pack`);
        packBytes.delete(repoKey, name);
      }
      return true;
    } catch {
      // Merging is an optimisation: on any failure the packs stay as they were (a merged pack
      // already in place only duplicates objects, which git allows).
      return false;
    }
  }

  return {
    read,
    readInMemory,
    async write(objects) {
      await stage(objects).publish();
    },
    stage,
    contains: (oid) => locate(oid) !== null,
    maintain() {
      if (merging !== null || packs.length <= MAX_PACKS) return;
      merging = mergeSmallPacks().finally(() => {
        merging = null;
      });
    },
    async compact() {
      while (merging !== null) await merging;
      if (closed) return;
      merging = mergeOnce(quietMergeSet)
        .then(() => undefined)
        .finally(() => {
          merging = null;
        });
      await merging;
    },
    async idle() {
      await sweeping;
      await merging;
    },
    async close() {
      closed = true;
      await makingSpare;
      const pair = spare;
      spare = null;
      if (pair !== null) await removeFiles(pair.pack, pair.idx);
      await sweeping;
      await merging;
    },
    get count() {
      return packs.length;
    },
  };
}
