/**
 * Reads and writes the objects of one bare repository.
 *
 * Writes are crash-safe. All objects of a commit go through {@link ObjectStore.writeObjects}:
 * a commit of at least `packThreshold` objects (default 3) becomes one pack file (see
 * pack-store.ts: a thousand-timer fire commit is ~3 000 objects, and as loose files their system
 * calls were most of the commit's time; even a one-event append creates six files loose, two as
 * a pack, and creating a file is what costs on a busy disk); a smaller one is written as loose
 * objects — deflate into a temp file inside `objects/`, then rename it to `objects/xx/yyyy…`.
 * Either way a reader (this process, another one, or git) sees no object or a whole one;
 * isomorphic-git would write loose objects in place.
 *
 * Reads look in the known packs (an in-memory index lookup), then for a loose object, then in
 * packs added since (another process, `git gc`), and finally ask isomorphic-git. Parsed trees,
 * commits and blobs are cached by oid (an oid names its content forever); objects this store
 * writes are cached as they are written, so the commit's own readers (validation, the tail)
 * never go back to disk for them.
 */
import { createHash, randomBytes } from "node:crypto";
import { constants as zlibConstants, deflateSync, inflateSync } from "node:zlib";
import { WorkflowHostError } from "../errors.js";
import { systemClock } from "../time/clock.js";
import { errnoCode } from "./fs-adapter.js";
import { MAX_LOOSE_OBJECT_BYTES, readBoundedFileOrNull } from "./bounded-file.js";
import { isHexOid } from "./hex-oid.js";
import { damagedObject, decodeCommit, type GitObject, isDamagedObject, type ObjectType, unwrapObject, wrapObject } from "./git-object.js";
import { BIG_TREE_ENTRIES, decodeTree, type DeltaBase, dirEntriesOf, EMPTY_TREE_OID, type ParsedTree, retireTree } from "./tree-object.js";
import { startWrite } from "./tree-buffers.js";
import { dirEntriesOfTreeBytes } from "./tree-bytes.js";
import { createPackStore, type StagedObjects } from "./pack-store.js";
import type { PackedObjects } from "./packed-objects.js";
import type { Oid } from "./types.js";
import type { ObjectStore, ObjectStoreOptions } from "./object-store-types.js";

// The types live in object-store-types.ts; they are part of this module's API.
export type { ObjectCaches, ObjectStore, ObjectStoreOptions } from "./object-store-types.js";

/** Trees with at least this many entries are cached per repository as recent versions (see createObjectStore). */
export { BIG_TREE_ENTRIES } from "./tree-object.js";
/** The fewest bytes a tree entry takes (a one-byte mode and name, a space, a NUL, the oid). */
const MIN_TREE_ENTRY_BYTES = 24;
/** Recent versions of big trees kept per repository. */
const RECENT_BIG_TREES = 4;
/** Deltas of big trees kept per repository for pack merging (a few hundred bytes each). */
const DELTA_BASES_KEPT = 1_024;

/** Most object files (packs, indexes and loose objects) a {@link ObjectSource.storeMark} names; more: no mark. */
const MARKED_FILES_MAX = 4_096;

/** Length of an oid in hex digits and in bytes. */
const OID_HEX = 40;
const OID_BYTES = 20;

/** Bytes of built trees kept per repository (see ObjectStore.rememberBuiltTrees). */
const BUILT_TREE_BYTES = 32 * 1024 * 1024;

const BLOB_CACHE_MAX_BYTES = 256 * 1024;
const WRITE_PARALLELISM = 8;
const STORE_UNCOMPRESSED_ABOVE_BYTES = 64 * 1024;

/**
 * zlib level for a loose object: 1 (git's own `core.looseCompression` default) for ordinary
 * objects; 0 (stored, still a valid zlib stream) for big ones — a 10 000-entry folder is
 * rewritten on every commit that touches it, mostly 20-byte hashes that barely compress, and
 * level 1 would cost ~6x the time of everything else in the commit. `git gc` packs and
 * delta-compresses them either way.
 */
function compressionLevel(object: GitObject): number {
  return object.content.byteLength > STORE_UNCOMPRESSED_ABOVE_BYTES ? zlibConstants.Z_NO_COMPRESSION : zlibConstants.Z_BEST_SPEED;
}


/**
 * True for the `object_corrupt` error of an object of the asked type that is not in the
 * repository (nowhere, or another type under that oid), as opposed to one that is there but
 * cannot be read (a torn pack or loose file).
 */
export function isAbsentObject(error: unknown): boolean {
  return error instanceof WorkflowHostError && error.code === "object_corrupt" && error.data.absent === true;
}

export { isDamagedObject } from "./git-object.js";

/**
 * True for an object a run can be read without (see run-log.ts): one not in the repository
 * ({@link isAbsentObject}) or one there that fails its own check ({@link isDamagedObject}: a
 * torn loose file, a pack entry that does not inflate or hashes to another oid). Not for an I/O
 * error, or a pack or pack index that cannot be read at all.
 */
export function isUnreadableObject(error: unknown): error is WorkflowHostError {
  return isAbsentObject(error) || isDamagedObject(error);
}

/** Data of the `object_corrupt` error for an object that is not there (see {@link isAbsentObject}). */
const ABSENT = { absent: true } as const;

function corrupt(oid: string, reason: string, cause?: unknown, extra: Record<string, unknown> = {}): WorkflowHostError {
  return new WorkflowHostError(
    "object_corrupt",
    `git object ${oid} cannot be read: ${reason}`,
    { oid, reason, ...extra },
    cause === undefined ? {} : { cause },
  );
}

/** Creates the object store of the bare repository at `gitdir`. */
export function createObjectStore(opts: ObjectStoreOptions): ObjectStore {
  const { fs, gitdir, repoKey, caches, durable } = opts;
  const quickFs = opts.quickFs ?? fs;
  const packs = createPackStore({ fs, quickFs, gitdir, repoKey, packBytes: caches.packs, ...(caches.packWindows === undefined ? {} : { packWindows: caches.packWindows }), durable, clock: opts.clock ?? systemClock, cachedTree: (oid) => cachedTree(oid), knownDeltas: () => deltaBases });
  /**
   * The last few big folders (e.g. `runs/`) of this repository, newest first, kept apart from
   * the shared tree cache. Each commit makes a new version of such a folder (its content,
   * 400 KB for 10 000 runs, is what the next commit splices); in the shared cache the old
   * versions would live until evicted, long enough for V8 to move them to the old generation,
   * and their buffers would then pile up until a full GC (one every ~0.7 s at 150 commits/s, each
   * stalling everything for 20–50 ms). Kept here, a version is dropped a few commits later and
   * is reclaimed young. Only the newest versions are ever needed again: the next commit edits
   * the newest, and the live tail diffs it against the one before.
   */
  const recentBigTrees: ParsedTree[] = [];
  /** Deltas of the big trees this store wrote, by tree oid, oldest first (see ParsedTree.deltaBase). */
  const deltaBases = new Map<Oid, DeltaBase>();

  function cachedTree(oid: Oid): ParsedTree | undefined {
    for (const tree of recentBigTrees) if (tree.oid === oid) return tree;
    return caches.trees.get(repoKey, oid);
  }

  function cacheTree(tree: ParsedTree): void {
    if (tree.deltaBase !== undefined && !deltaBases.has(tree.oid)) {
      deltaBases.set(tree.oid, tree.deltaBase);
      // Kept until merged, or about as long as MAX_PACKS commits take to be merged.
      if (deltaBases.size > DELTA_BASES_KEPT) deltaBases.delete(deltaBases.keys().next().value as Oid);
    }
    if (tree.count < BIG_TREE_ENTRIES) {
      caches.trees.set(repoKey, tree.oid, tree, tree.count + 1);
      return;
    }
    const at = recentBigTrees.findIndex((t) => t.oid === tree.oid);
    if (at >= 0) {
      const [old] = recentBigTrees.splice(at, 1);
      if (old !== undefined && old !== tree) retireTree(old);
    }
    recentBigTrees.unshift(tree);
    // A version dropped here is edited no more (the next read of it decodes it from its pack):
    // its owned bytes, if any, may be reused once its pack is written (tree-buffers.ts).
    if (recentBigTrees.length > RECENT_BIG_TREES) retireTree(recentBigTrees.pop() as ParsedTree);
  }
  /**
   * Trees a committed write built from stored bytes (folder appends: a run's folder and its
   * `events/`), by oid, oldest first, at most BUILT_TREE_BYTES of content. The next append to
   * that run reads exactly these (its log's check indexes the new `events/` from its bytes, its
   * build copies them); read from the pack the write just put there, each append paid for the
   * whole pack read and its SHA-1 in one piece (15–35 ms for a 200,000-entry folder), where the
   * generic edit left its parsed tree in the cache. The content is the bytes the write hashed
   * and stored, so it is handed out as the pack read would hand it out, unchecked.
   */
  const builtTrees = new Map<Oid, GitObject>();
  let builtBytes = 0;

  function keepBuilt(object: GitObject): void {
    if (object.type !== "tree" || object.content.byteLength > BUILT_TREE_BYTES) return;
    const old = builtTrees.get(object.oid);
    if (old !== undefined) {
      builtTrees.delete(object.oid);
      builtBytes -= old.content.byteLength;
    }
    builtTrees.set(object.oid, object);
    builtBytes += object.content.byteLength;
    for (const [oid, kept] of builtTrees) {
      if (builtBytes <= BUILT_TREE_BYTES) break;
      builtTrees.delete(oid);
      builtBytes -= kept.content.byteLength;
    }
  }
  const objectsDir = `${gitdir}/objects`;
  const knownDirs = new Set<string>();
  const tempPrefix = randomBytes(4).toString("hex");
  let tempCounter = 0;

  const loosePath = (oid: Oid): string => `${objectsDir}/${oid.slice(0, 2)}/${oid.slice(2)}`;

  async function readPacked(oid: Oid): Promise<GitObject> {
    let result: { type: string; object: unknown };
    // isomorphic-git reads through the raw module: the pack folder is checked first.
    await fs.checkFolder?.(`${objectsDir}/pack`);
    try {
      // Loaded only here: every object this store writes or git packs is read without it.
      const { readObject } = await import("isomorphic-git");
      result = await readObject({ fs: fs.raw as never, gitdir, oid, format: "content", cache: caches.packCache });
    } catch (error) {
      throw corrupt(oid, "missing (neither loose nor in a pack)", error, ABSENT);
    }
    const content = result.object;
    if (!(content instanceof Uint8Array)) throw corrupt(oid, "pack returned no content");
    const wrapped = wrapObject({ oid, type: result.type as ObjectType, content });
    return unwrapObject(oid, wrapped);
  }

  /** @param point see PackStore.read */
  async function read(oid: Oid, point = false): Promise<GitObject> {
    if (!isHexOid(oid)) throw corrupt(String(oid), "not a 40-hex object id");
    const built = builtTrees.get(oid);
    if (built !== undefined) return built;
    let packed: GitObject | null;
    try {
      packed = await packs.read(oid, false, point);
    } catch (error) {
      // A damaged packed copy: a whole loose copy (written again to repair it) is read instead.
      if (!isDamagedObject(error)) throw error;
      return (await readLoose(oid).catch(() => null)) ?? Promise.reject(error);
    }
    if (packed !== null) return packed;
    // Usually a miss (objects are packed); a loose object is a few hundred bytes.
    return (await readLoose(oid)) ?? (await packs.read(oid, true)) ?? readPacked(oid);
  }

  /**
   * The loose object `oid`, or null when there is no such file.
   * @throws `object_corrupt` damaged ({@link damagedObject}, naming the file) when it does not
   *   inflate or its content is not `oid`'s; `object_corrupt` when it is not a regular file
   */
  async function readLoose(oid: Oid): Promise<GitObject | null> {
    const path = loosePath(oid);
    const raw = await readBoundedFileOrNull(quickFs, path, MAX_LOOSE_OBJECT_BYTES, (found) => corrupt(oid, `loose object ${path} is ${found}`, undefined, { path, found }));
    if (raw === null) return null;
    let inflated: Buffer;
    try {
      inflated = inflateSync(raw);
    } catch (error) {
      throw damagedObject(oid, `loose object ${path} does not inflate (a torn or truncated file)`, { path }, error);
    }
    try {
      return unwrapObject(oid, inflated);
    } catch (error) {
      if (!isDamagedObject(error)) throw error;
      throw damagedObject(oid, `loose object ${path}: ${String(error.data.reason)}`, { path }, error);
    }
  }

  /**
   * Whether `oid` is stored, without reading it (see ObjectSource.stored): true at once when a
   * known pack's index holds it; else a look for its loose file, then in packs added since.
   */
  function stored(oid: Oid): boolean | Promise<boolean> {
    if (isHexOid(oid) && packs.contains(oid)) return true;
    return storedElsewhere(oid);
  }

  /** See ObjectSource.packedAll. */
  function packedAll(hexOids: string): Uint8Array {
    const count = Math.floor(hexOids.length / OID_HEX);
    const out = new Uint8Array(count);
    // One native decode of the whole column (dashes, which stand for none, as zeros: git's
    // null oid, never an object), then one index lookup per oid.
    const bytes = Buffer.from(hexOids.replaceAll("-", "0"), "hex");
    if (bytes.length === count * OID_BYTES) packs.markPacked(bytes, out);
    return out;
  }

  /** See ObjectSource.storeMark. */
  async function storeMark(): Promise<string | null> {
    const top = await quickFs.readdirOrEmpty(objectsDir);
    if (top.includes("info")) {
      const info = await quickFs.readdirOrEmpty(`${objectsDir}/info`);
      if (info.includes("alternates") || info.includes("http-alternates")) return null;
    }
    const names: string[] = [];
    // A pack or index changed in place (truncated, a byte flipped, lost and restored) keeps its
    // name, not its size and time: both are part of the mark.
    for (const name of await quickFs.readdirOrEmpty(`${objectsDir}/pack`)) {
      if (!/^pack-[0-9a-f]{40}\.(pack|idx)$/.test(name)) continue;
      const stat = await quickFs.statOrNull(`${objectsDir}/pack/${name}`);
      if (stat === null) return null;
      names.push(`${name} ${stat.size} ${stat.mtimeMs}`);
    }
    // Loose objects by name too (a store's first commit is two of them): a deployment of many
    // (written by git itself) has no mark, its rows' objects are looked up instead.
    for (const dir of top) {
      if (!/^[0-9a-f]{2}$/.test(dir)) continue;
      for (const rest of await quickFs.readdirOrEmpty(`${objectsDir}/${dir}`)) {
        if (!/^[0-9a-f]{38}$/.test(rest)) continue;
        if (names.push(`${dir}${rest}`) > MARKED_FILES_MAX) return null;
      }
    }
    return createHash("sha1").update(names.sort().join("\n")).digest("hex");
  }

  async function storedElsewhere(oid: Oid): Promise<boolean> {
    if (!isHexOid(oid)) return false;
    if ((await quickFs.statOrNull(loosePath(oid))) !== null) return true;
    try {
      // A pack added since they were listed (another process, `git gc`), or one only git can read.
      return (await packs.read(oid, true)) !== null || (await readPacked(oid)) !== null;
    } catch (error) {
      // Not stored whole: damaged, or not found while a damaged pack is loaded (design notes
      // §79: an object of its unreadable part cannot be told from one never there). Either way
      // it cannot be read, and a caller trusting it as stored (a start restoring a run unread)
      // would append after it.
      if (isDamagedObject(error) || isAbsentObject(error)) return false;
      throw error;
    }
  }

  async function readTyped(oid: Oid, type: ObjectType, point = false): Promise<GitObject> {
    const object = await read(oid, point);
    if (object.type !== type) throw corrupt(oid, `is a ${object.type}, expected a ${type}`, undefined, { ...ABSENT, found: object.type });
    return object;
  }

  async function writeOne(object: GitObject, touched: Set<string>): Promise<void> {
    const dir = `${objectsDir}/${object.oid.slice(0, 2)}`;
    const target = loosePath(object.oid);
    // Only blobs are looked up first: the same bytes are often written again, while a commit
    // (parent + time) or a tree on a changed path is new almost always. Rewriting an object
    // that exists is harmless (same bytes, atomic rename), just slower than one stat.
    if (object.type === "blob" && (await fs.statOrNull(target)) !== null) return;
    if (!knownDirs.has(dir)) {
      await fs.mkdirp(dir);
      knownDirs.add(dir);
    }
    // git's own temp name pattern, so `git gc` / `git prune` clean up after a crash.
    const temp = `${objectsDir}/tmp_obj_${tempPrefix}${(tempCounter++).toString(36)}`;
    try {
      await fs.writeNewFile(temp, deflateSync(wrapObject(object), { level: compressionLevel(object) }), durable);
      // Renaming over an identical object written concurrently is harmless: same bytes.
      try {
        await fs.rename(temp, target);
      } catch (error) {
        // `git gc` (prune-packed) removes emptied fan-out folders, so a remembered one may be gone.
        if (errnoCode(error) !== "ENOENT") throw error;
        await fs.mkdirp(dir);
        await fs.rename(temp, target);
      }
    } catch (error) {
      await fs.unlinkQuiet(temp);
      throw error;
    }
    touched.add(dir);
  }

  let historySeen = false;

  async function holdsHistory(): Promise<boolean> {
    if (historySeen) return true;
    const packFiles = await quickFs.readdirOrEmpty(`${objectsDir}/pack`);
    historySeen = packFiles.some((name) => name.endsWith(".pack") || name.endsWith(".idx"));
    for (const dir of historySeen ? [] : await fs.readdirOrEmpty(objectsDir)) {
      if (!/^[0-9a-f]{2}$/.test(dir)) continue;
      for (const rest of await fs.readdirOrEmpty(`${objectsDir}/${dir}`)) {
        if (!/^[0-9a-f]{38}$/.test(rest)) continue;
        let object: GitObject;
        try {
          object = await read(`${dir}${rest}`);
        } catch {
          // An object that cannot be read may be a commit: count it, rather than risk a second root.
          historySeen = true;
          return true;
        }
        if (object.type !== "commit") continue;
        const commit = decodeCommit(object.oid, object.content);
        if (commit.parents.length > 0 || commit.tree !== EMPTY_TREE_OID) {
          historySeen = true;
          return true;
        }
      }
    }
    return historySeen;
  }

  return {
    read: (oid) => read(oid),
    stored,
    packedAll,
    storeMark,
    holdsHistory,
    async readTree(oid) {
      const hit = cachedTree(oid);
      if (hit !== undefined) return hit;
      const object = await readTyped(oid, "tree");
      const tree = decodeTree(oid, object.content);
      cacheTree(tree);
      return tree;
    },
    async readTreeForEdit(oid, cache) {
      const hit = cachedTree(oid);
      if (hit !== undefined) return hit;
      // One lookup in the pack indexes: a window already in memory still serves it (see PackStore.read).
      const tree = decodeTree(oid, (await readTyped(oid, "tree", true)).content);
      if (cache || tree.count >= BIG_TREE_ENTRIES) cacheTree(tree);
      return tree;
    },
    async readCommit(oid) {
      const hit = caches.commits.get(repoKey, oid);
      if (hit !== undefined) return hit;
      const commit = decodeCommit(oid, (await readTyped(oid, "commit")).content);
      caches.commits.set(repoKey, oid, commit);
      return commit;
    },
    async readBlob(oid) {
      const hit = caches.blobs.get(repoKey, oid);
      if (hit !== undefined) return hit.slice();
      const content = (await readTyped(oid, "blob")).content;
      const copy = new Uint8Array(content);
      if (copy.byteLength <= BLOB_CACHE_MAX_BYTES) caches.blobs.set(repoKey, oid, copy, copy.byteLength + 64);
      return copy.slice();
    },
    scanning: {
      async readTree(oid) {
        const hit = cachedTree(oid);
        if (hit !== undefined) return hit;
        // A run's folders are in a pack window already, as its blobs are (see readBlobs).
        const object = packs.readInMemory(oid) ?? (await readTyped(oid, "tree"));
        if (object.type !== "tree") throw corrupt(oid, `is a ${object.type}, expected a tree`, undefined, { ...ABSENT, found: object.type });
        const tree = decodeTree(oid, object.content);
        // A big folder (`runs/`) is what every later read walks through: kept as always.
        if (tree.count >= BIG_TREE_ENTRIES) cacheTree(tree);
        return tree;
      },
      async listTree(oid) {
        const hit = cachedTree(oid);
        if (hit !== undefined) return dirEntriesOf(hit);
        // Listed from the stored bytes (a view of the window, not kept): no parsed tree.
        const object = packs.readInMemory(oid, true) ?? (await readTyped(oid, "tree"));
        if (object.type !== "tree") throw corrupt(oid, `is a ${object.type}, expected a tree`, undefined, { ...ABSENT, found: object.type });
        // A folder that may be big (runs/) is parsed and kept as readTree keeps it (its bytes
        // copied: a kept tree must not hold a window).
        if (object.content.byteLength >= BIG_TREE_ENTRIES * MIN_TREE_ENTRY_BYTES) {
          const tree = decodeTree(oid, new Uint8Array(object.content));
          if (tree.count >= BIG_TREE_ENTRIES) cacheTree(tree);
          return dirEntriesOf(tree);
        }
        return dirEntriesOfTreeBytes(oid, object.content);
      },
      readBlob: readBlobForScan,
      async readBlobs(oids) {
        const out: Uint8Array[] = [];
        for (const oid of oids) {
          // Most of a walk's blobs are in a pack window already: decoded at once, no promise,
          // and (stored uncompressed, as the store writes events) not copied out of it.
          const object = caches.blobs.has(repoKey, oid) ? undefined : packs.readInMemory(oid, true);
          if (object === undefined) out.push(await readBlobForScan(oid));
          else if (object.type !== "blob") throw corrupt(oid, `is a ${object.type}, expected a blob`, undefined, { ...ABSENT, found: object.type });
          else out.push(object.content);
        }
        return out;
      },
    },
    async writeObjects(objects) {
      await stageObjects(objects).publish();
    },
    stageObjects,
    // A view of the cached pack when the entry is one stored block (a fire commit reads every
    // run's `events/` folder here, and copied each of them out only to read it once).
    readInMemory: (oid) => builtTrees.get(oid) ?? packs.readInMemory(oid, true),
    cachedTree: (oid) => cachedTree(oid),
    rememberTrees(trees) {
      for (const tree of trees) cacheTree(tree);
    },
    rememberBuiltTrees(objects) {
      for (const object of objects) keepBuilt(object);
    },
    maintain: () => packs.maintain(),
    compact: () => packs.compact(),
    idle: () => packs.idle(),
    close: () => packs.close(),
  };

  /** A blob for a walk: from the cache when there, else read and not cached. */
  async function readBlobForScan(oid: Oid): Promise<Uint8Array> {
    const hit = caches.blobs.get(repoKey, oid);
    if (hit !== undefined) return hit.slice();
    // Not copied: what a read decodes is always fresh bytes (inflated, unstored or rebuilt from
    // a delta), never a view of a cached pack.
    return (await readTyped(oid, "blob")).content;
  }

  /** See {@link ObjectStore.stageObjects}. */
  function stageObjects(all: readonly GitObject[], pause?: () => Promise<void>, novel?: ReadonlySet<Oid>, packed?: PackedObjects): StagedObjects {
    // A big folder's version in owned bytes (tree-buffers.ts) is counted as written until the
    // write settles: its bytes are not reused while the pack or loose file is written from them.
    let ends: (() => void)[] | undefined;
    for (const object of all) {
      if (object.type !== "tree" || object.content.byteLength < BIG_TREE_ENTRIES * MIN_TREE_ENTRY_BYTES) continue;
      const end = startWrite(object.content);
      if (end !== undefined) (ends ??= []).push(end);
    }
    const staged = stageUncounted(all, pause, novel, packed);
    const counted = ends;
    if (counted !== undefined) {
      void staged.settled.then(() => {
        for (const end of counted) end();
      });
    }
    return staged;
  }

  /** {@link stageObjects} without counting owned bytes' writes. */
  function stageUncounted(all: readonly GitObject[], pause?: () => Promise<void>, novel?: ReadonlySet<Oid>, packed?: PackedObjects): StagedObjects {
    // Objects a known pack holds already are not written again (the commit always is). Each
    // look is a search of every pack's index: most of a commit's trees are known to be new.
    const stored = (o: GitObject): boolean => o.type !== "commit" && novel?.has(o.oid) !== true && packs.contains(o.oid);
    let objects = all.some(stored) ? all.filter((o) => !stored(o)) : all;
    const inPack = packed !== undefined && packed.count > 0 ? packed : undefined;
    if (inPack !== undefined && objects.length + inPack.count < opts.packThreshold) {
      // Loose after all: the built entries as objects, each stored under its own name.
      objects = [...inPack.objects(), ...objects.filter((o) => !inPack.has(o.oid))];
      return stageUncounted(objects, pause);
    }
    const remember = (): void => {
      for (const object of objects) {
        if (object.type === "blob" && object.content.byteLength <= BLOB_CACHE_MAX_BYTES) {
          caches.blobs.set(repoKey, object.oid, new Uint8Array(object.content), object.content.byteLength + 64);
        } else if (object.type === "commit") {
          caches.commits.set(repoKey, object.oid, decodeCommit(object.oid, object.content));
        }
      }
    };
    if (inPack !== undefined || objects.length >= opts.packThreshold) {
      const staged = packs.stage(objects, pause, inPack);
      return {
        async publish() {
          await staged.publish();
          remember();
        },
        discard: staged.discard,
        settled: staged.settled,
      };
    }
    // Loose objects are written under their final names (each atomically), so nothing is
    // written before `publish`; settled once that write settled, or once discarded unpublished.
    let settle: () => void = () => undefined;
    const settled = new Promise<void>((resolve) => (settle = resolve));
    let publishing = false;
    return {
      async publish() {
        publishing = true;
        try {
          await writeLoose(objects);
        } finally {
          settle();
        }
        remember();
      },
      discard: () => {
        if (!publishing) settle();
        return Promise.resolve();
      },
      settled,
    };
  }

  async function writeLoose(objects: readonly GitObject[]): Promise<void> {
    const touched = new Set<string>();
    // A few writes in flight hide disk latency; unbounded fan-out would exhaust file handles
    // on a big commit (tens of thousands of objects).
    const writeAll = async (batch: readonly GitObject[]): Promise<void> => {
      let next = 0;
      const worker = async (): Promise<void> => {
        while (next < batch.length) await writeOne(batch[next++] as GitObject, touched);
      };
      // Every worker ends before a failure is reported: none still reads an object's bytes
      // once the write settled (owned bytes, tree-buffers.ts, are reused after that).
      const outcomes = await Promise.allSettled(Array.from({ length: Math.min(WRITE_PARALLELISM, batch.length) }, worker));
      for (const outcome of outcomes) if (outcome.status === "rejected") throw outcome.reason;
    };
    // Commits go last, so an interrupted write never leaves a commit whose tree is missing.
    await writeAll(objects.filter((o) => o.type !== "commit"));
    await writeAll(objects.filter((o) => o.type === "commit"));
    if (durable) {
      // The renames are only durable once the folders holding the new names are flushed.
      await Promise.all([...touched].map((dir) => fs.fsyncDir(dir)));
    }
  }
}
