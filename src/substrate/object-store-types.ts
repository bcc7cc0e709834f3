/**
 * The types of the object store (./object-store.ts): its shared caches, its API and its options.
 */
import type { Clock } from "../time/clock.js";
import type { FsAdapter } from "./fs-adapter.js";
import type { GitObject, ParsedCommit } from "./git-object.js";
import type { ParsedTree } from "./tree-object.js";
import type { ScopedLruCache } from "./lru-cache.js";
import type { StagedObjects } from "./pack-store.js";
import type { PackedObjects } from "./packed-objects.js";
import type { ObjectSource } from "./committed-reads.js";
import type { Oid } from "./types.js";

/** Caches shared by every repository of a store, scoped by repo key, keyed by oid. */
export interface ObjectCaches {
  readonly trees: ScopedLruCache<ParsedTree>;
  readonly commits: ScopedLruCache<ParsedCommit>;
  readonly blobs: ScopedLruCache<Uint8Array>;
  /** Whole pack files (bytes), keyed by pack name, for reads out of packs; see pack-store.ts. */
  readonly packs: ScopedLruCache<Buffer>;
  /**
   * Windows of packs too big to read whole, keyed by pack name and offset; see pack-store.ts.
   * Small: they serve walks that read a pack mostly in order.
   */
  readonly packWindows?: ScopedLruCache<Buffer>;
  /** isomorphic-git's own cache object (pack indexes); shared so packs are indexed once. */
  readonly packCache: object;
}

export interface ObjectStore extends ObjectSource {
  /**
   * One object, checked against its oid.
   * @throws `object_corrupt` naming the oid when it is missing, torn or hashes differently.
   */
  read(oid: Oid): Promise<GitObject>;
  /** A parsed tree (cached). @throws `object_corrupt` when missing or not a tree. */
  readTree(oid: Oid): Promise<ParsedTree>;
  /**
   * A tree on a path a commit edits: from the caches when there, else read on its own (a point
   * read, see PackStore.read: the folders of scattered runs, not the pack windows around them)
   * and cached only when `cache` (big trees, such as `runs/`, always are).
   * @throws `object_corrupt` when missing or not a tree.
   */
  readTreeForEdit(oid: Oid, cache: boolean): Promise<ParsedTree>;
  /** A parsed commit (cached). @throws `object_corrupt` when missing or not a commit. */
  readCommit(oid: Oid): Promise<ParsedCommit>;
  /** A blob's bytes (a fresh copy; cached). @throws `object_corrupt` when missing or not a blob. */
  readBlob(oid: Oid): Promise<Uint8Array>;
  /**
   * One object when it can be had without I/O (a whole, undeltified entry of a pack already in
   * memory), else undefined: a caller that then reads it with {@link read} spares a promise per
   * object in the common case. Its content may be a view of the cached pack's bytes (an entry
   * stored as one block in a pack whose checksum was checked): read it, never change it.
   * @throws `object_corrupt` as `read`.
   */
  readInMemory(oid: Oid): GitObject | undefined;
  /**
   * Stores objects: as one pack when there are at least `packThreshold` of them, else as loose
   * objects (a blob already stored loose is skipped, at most 8 file writes in flight). Resolves
   * once every object is in its final place (its bytes flushed, with durability "fsync"; a
   * pack's name is made durable by the ref's folder flush, see pack-store.ts): only then may a
   * ref point at them. A failure leaves no partial object under its final name, only
   * unreferenced whole ones. Written blobs and commits are cached.
   */
  writeObjects(objects: readonly GitObject[]): Promise<void>;
  /**
   * {@link writeObjects} in two steps: a pack is written to temp files at once (returning
   * immediately) and put in place by `publish`; `discard` removes it unseen. Loose objects are
   * all written by `publish`. Exactly one of the two must be called. `pause`, when given, is
   * awaited between slices of encoding the pack (a big commit's time slicer). `novel`: oids the
   * caller knows to be new (see TreeEditResult.spliced), not looked for in the packs. `packed`:
   * more objects, new by construction, already laid out as pack entries (packed-objects.ts: a fire
   * commit's events and run folders); they go into the pack as they are (or loose, as objects,
   * when the commit is below `packThreshold`), are not looked for in the packs and are not
   * cached (nothing this process does reads them back soon: their writer adopted them).
   */
  stageObjects(objects: readonly GitObject[], pause?: () => Promise<void>, novel?: ReadonlySet<string>, packed?: PackedObjects): StagedObjects;
  /**
   * Reads of the same objects that use the caches but do not fill them (big trees excepted):
   * for a walk that reads most objects once (see `CommittedReads.scan`).
   */
  readonly scanning: ObjectSource;
  /** Remembers trees that were just written, so the next commit does not re-read them. */
  rememberTrees(trees: Iterable<ParsedTree>): void;
  /**
   * Remembers the stored bytes of trees a committed write built without parsing them (folder
   * appends, folder-append.ts), so {@link read}, {@link readInMemory} and the trees read from
   * them find them without reading the pack just written (which, under 8 MiB, would be read
   * whole and its SHA-1 checked in one piece). Only objects already in place (the ref moved)
   * may be given. Kept newest first, at most 32 MiB of them; non-trees are ignored.
   */
  rememberBuiltTrees(objects: Iterable<GitObject>): void;
  /**
   * Whether the repository holds any history: a pack, or a loose commit other than a root
   * commit of the empty tree (what a crashed `initRepo` can leave). A ref that reads as unborn
   * in such a repository was lost (a damaged ref store), and writing a new root commit on it
   * would orphan that history. Once true, remembered (history does not go away); while false,
   * looked for again on every call (a fresh repository has two loose objects at most).
   */
  holdsHistory(): Promise<boolean>;
  /** Starts housekeeping after a commit (merging small packs) in the background; never throws. */
  maintain(): void;
  /** Merges the recent packs at a quiet moment (see PackStore.compact); never throws. */
  compact(): Promise<void>;
  /** Resolves when no background housekeeping is running. */
  idle(): Promise<void>;
  /** Waits for background housekeeping and removes the pack store's spare temp files. */
  close(): Promise<void>;
}

export interface ObjectStoreOptions {
  readonly fs: FsAdapter;
  /**
   * For the small files of the critical path (see fs-adapter.ts): a commit's pack and index, the
   * renames that publish them, the pack folder's listing, loose-object lookups; default `fs`.
   */
  readonly quickFs?: FsAdapter;
  readonly gitdir: string;
  /** Distinguishes this repository's entries in the shared caches. */
  readonly repoKey: string;
  readonly caches: ObjectCaches;
  readonly durable: boolean;
  /**
   * The time stale temp files' ages are measured at; they are compared with mtimes the file
   * system stamps, so it must read the same clock as the OS. Default the system clock.
   */
  readonly clock?: Clock;
  /** Commits writing at least this many objects are written as one pack. */
  readonly packThreshold: number;
}
