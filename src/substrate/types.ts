/**
 * Shapes of the git substrate: a store of bare git repositories, each written by
 * compare-and-swap commits and read at pinned commits. Nothing here knows about workflows.
 */
import type { Timers } from "../time/clock.js";

/** A repository address: `kind` picks the {@link KindHandler}, `id` the repository. */
/** Most commits {@link RepoStore.isAncestor} walks before it answers false. */
export const MAX_ANCESTRY_WALK = 100_000;

export interface RepoId {
  readonly kind: string;
  readonly id: string;
}

/** Who is asking. Opaque to the store; passed to `authorize`. */
export type Principal = unknown;

/** What an operation does, as seen by `authorize`. */
export type RepoAction = "init" | "list" | "read" | "write" | "subscribe";

/**
 * Gate on every store operation. Return (or resolve) `true` to allow; anything else makes the
 * store throw `authorize_denied`.
 */
export type Authorize = (
  principal: Principal,
  repoId: RepoId | { readonly kind: string; readonly id: "*" },
  ref: string | null,
  action: RepoAction,
) => boolean | Promise<boolean>;

/** A 40-character lowercase hex SHA-1 object id. */
export type Oid = string;

/**
 * What a tree entry is: a file ("blob", including symlinks), a folder ("tree"), or a gitlink
 * ("commit", mode 160000: a submodule's commit id, whose object is not in this repository).
 * The store never writes gitlinks; a `git push` may bring them.
 */
export type EntryType = "blob" | "tree" | "commit";

export interface DirEntry {
  readonly name: string;
  readonly type: EntryType;
  readonly oid: Oid;
  /**
   * Git's file mode of an entry that is not a plain file or folder: "100755" (executable),
   * "120000" (a symlink, whose blob is its target) or "160000" (a gitlink). Absent for a plain
   * file (100644) and a folder. The store itself writes only plain files, but a `git push` may
   * bring anything, so readers that need a regular file check it (see `isRegularFileMode`).
   */
  readonly mode?: string;
}

/** Reads pinned to one commit; every call sees the same tree whatever moves the ref. */
export interface CommittedReads {
  /** The commit these reads are pinned to, or null for an unborn ref (no commit yet). */
  readonly commitSha: Oid | null;
  /** Entries of the tree at `path` ("" is the root), sorted by name; [] when absent. */
  listDir(path: string): Promise<readonly DirEntry[]>;
  /** Bytes of the blob at `path`, or null when there is none. */
  readBlob(path: string): Promise<Uint8Array | null>;
  /** Bytes of a blob by oid (object_corrupt when missing or not a blob). */
  readBlobByOid(oid: Oid): Promise<Uint8Array>;
  /**
   * Bytes of several blobs, in the order asked, as {@link readBlobByOid} reads each (same
   * errors); one call for a run's whole log, where blobs already in memory cost no promise each.
   * Optional: without it, callers read one blob at a time.
   */
  readBlobsByOid?(oids: readonly Oid[]): Promise<Uint8Array[]>;
  /** Oid of the tree or blob at `path` ("" is the root tree), or null when absent. */
  treeOid(path: string): Promise<Oid | null>;
  /**
   * Entries of the tree `oid`, as {@link listDir} lists the folder that is that tree (sorted by
   * name): for a reader that has the folder's oid from a listing already (a recovery has each
   * run's from `runs/`), so it is not found again from the root by name.
   * @throws object_corrupt for an oid that is not 40 hex digits, or an object that is missing or not a tree
   * Optional: without it, callers use {@link listDir}.
   */
  listTree?(oid: Oid): Promise<readonly DirEntry[]>;
  /**
   * As {@link treeOid}, for a lookup in a big folder that nothing else reads: the folder holding
   * the last segment, unless the caches hold it parsed, is searched in its stored bytes (kept by
   * these reads, at most two folders) instead of parsed and cached. One lookup in the archive's
   * `runs/` of 100,000 runs then costs one pass over its 4 MB, not 100,000 parsed entries.
   * Optional: without it, callers use {@link treeOid}.
   */
  pointOid?(path: string): Promise<Oid | null>;
  /**
   * The stored content of the tree `oid` (git's tree format: `<mode> <name>\0<20-byte oid>` per
   * entry, in the order stored), without parsing it into entries or adding it to the caches: for
   * a reader that walks a big folder once in its own way (a run's `events/` of 200,000 names,
   * see tree-bytes.ts `walkTreeBytes`). When the caches hold the tree parsed, its content is
   * taken from there. Callers must not change the bytes.
   * @returns the content, or null when `oid` is not a tree
   * @throws object_corrupt for an oid that is not 40 hex digits or an object that is missing
   * Optional: without it, callers use {@link listDir}.
   */
  readTreeBytes?(oid: Oid): Promise<Uint8Array | null>;
  /**
   * Whether the object `oid` is in the repository, without reading it: true (not a promise) when
   * a known pack's index holds it (an in-memory lookup, no inflate), else a promise after a look
   * for its loose file and in packs added since. An object that cannot be read whole is not
   * there: damaged, or not found while a damaged pack is loaded (its unreadable part cannot be
   * told from objects never stored); an oid that is not 40 hex digits is not there either.
   * @throws an I/O error of that look as the store raises it
   * Optional: without it, callers cannot tell without reading the object.
   */
  stored?(oid: Oid): boolean | Promise<boolean>;
  /**
   * {@link stored}'s in-memory part for many oids at once: `hexOids` holds them end to end (40
   * characters each; 40 dashes stand for none); the answer holds, per oid, 1 when a known pack's
   * index holds it, else 0 (for none too; ask {@link stored} about the others: a loose file or a
   * pack added since).
   * One decode of the whole string, one index lookup per oid: a start asks about every run.
   * Optional.
   */
  packedAll?(hexOids: string): Uint8Array;
  /**
   * A mark of the files that hold the repository's objects now: the SHA-1 (hex) of the sorted
   * names, sizes and modification times of `objects/pack/pack-*.pack` and `.idx`, and of the
   * names of the loose objects, or null when objects
   * may live elsewhere too (an `objects/info/alternates`) or there are over 4,096 such files.
   * Pack files are never changed in place by a writer (their names are their checksums; one
   * truncated or rewritten by a fault or a copy changes size or time), nor are loose objects
   * (their names are their oids), so two equal marks mean every object stored at the first is
   * stored at the second: a start that finds the mark the recovery index was written
   * with need not look its rows' objects up (design notes §74). A few readdirs, no object read.
   * Optional.
   */
  storeMark?(): Promise<string | null>;
  /**
   * Reads pinned to the same commit, for a walk that reads most objects once (a recovery reading
   * every run's log): what it reads is taken from the store's caches when there, but not added
   * to them (except big folders), so a walk of a million events neither pushes out what the
   * running host reads again nor holds its objects in memory. The few trees read last are kept
   * by these reads themselves, so walking down into one run's folder several times reads each
   * of its trees once. The blobs its `readBlobsByOid` returns may be views of the store's pack
   * memory (not copies): callers must not change them. Optional: a store without it is walked
   * through the reads themselves.
   */
  scan?(): CommittedReads;
}

/** One path changed by a commit, relative to its first parent. */
export interface PathChange {
  readonly path: string;
  /** The new blob oid; for `deleted`, the old one. */
  readonly oid: Oid;
  readonly status: "added" | "modified" | "deleted";
  /**
   * Git's file mode when it is not a plain file (see {@link DirEntry.mode}); "160000" for a
   * gitlink, whose `oid` names a commit that is not in this repository (never read it as a blob).
   */
  readonly mode?: string;
}

/** Paths a commit writes: `puts` maps a repo path to its bytes (UTF-8 for strings). */
export interface TreeDelta {
  readonly puts?: ReadonlyMap<string, Uint8Array | string> | Readonly<Record<string, Uint8Array | string>>;
  /** Paths of blobs (or whole subtrees) to remove. */
  readonly deletes?: readonly string[];
  /**
   * New files added to the subfolder of existing folders (a fire commit's events: `runs/<id>`,
   * sub `events`), each folder once (a folder named twice: `path_violation`, nothing written)
   * and nothing else put under it. The same as putting each
   * file at `<folder>/<sub>/<name>` (same trees, same oids, and the same `validatePush` unless
   * `WriteTreeDeltaOptions.prevalidated`), but both new folders are built from the stored ones'
   * bytes (see folder-append.ts), which costs a fraction of the generic edit and never parses
   * the subfolder (a long run's `events/`: 200,000 entries); a subfolder of 256 KiB or more is
   * worked on in time slices (the write's `pause`, or a slicer of 10 ms for a write that is not
   * prevalidated). Where that build declines, the files are plain puts.
   */
  readonly appends?: readonly FolderAppend[];
}

/** Files to add to `<folder>/<sub>/` (see {@link TreeDelta.appends}). */
export interface FolderAppend {
  /** Repo path of the folder ("runs/r1"), no trailing "/". */
  readonly folder: string;
  /** Name of its subfolder the files go to ("events"). */
  readonly sub: string;
  /**
   * The subfolder's oid at the parent commit, when the caller knows it (a hint: nothing rests on
   * it). A folder holding nothing but that subfolder is then not read: its bytes follow from the
   * oid, and are taken only when they hash to the folder's oid.
   */
  readonly subOid?: Oid;
  /** File names (none there yet) and their bytes. */
  readonly files: readonly { readonly name: string; readonly content: Uint8Array }[];
}

/** The new oids of a {@link FolderAppend}'s folder and subfolder in the commit that made them. */
export interface AppendedFolder {
  readonly folder: Oid;
  readonly sub: Oid;
  /** The blob oid of the append's last file (as `files` lists them). */
  readonly last: Oid;
}

/** What a `computeDelta` returns: the delta plus any value the caller wants back. */
export interface DeltaResult<R> extends TreeDelta {
  readonly result?: R;
}

/** What a write returns. `committed` is false for a no-op (the ref did not move). */
export interface WriteResult<R = undefined> {
  readonly committed: boolean;
  /** The ref's value after the write: the new commit, or the unchanged tip on a no-op. */
  readonly commitSha: Oid | null;
  /** The tip the write was computed against (the new commit's parent). */
  readonly parentSha: Oid | null;
  /** How many compare-and-swap attempts the write took (1 when uncontended). */
  readonly attempts: number;
  readonly result: R | undefined;
  /**
   * Set on a committed write: the oid of the folder at `path` (segments joined by "/", no
   * trailing slash) in the new commit's tree, found without a read when the write rewrote the
   * folder holding it; null when that folder holds no such folder; undefined when the write did
   * not rewrite the folder holding it (read it with `openCommittedReads`).
   */
  readonly folderOid?: (path: string) => Oid | null | undefined;
  /**
   * Set on a committed write with `appends`: per append, in the order `computeDelta` returned
   * them, the new oids of its folder and subfolder, or undefined for one that went through the
   * generic edit (ask `folderOid` for that one). The same oids `folderOid` gives, by position.
   */
  readonly appended?: readonly (AppendedFolder | undefined)[];
}

/** One commit as seen by a subscriber. */
export interface CommitChange {
  readonly commitSha: Oid;
  /** First parent, or null for a root commit. */
  readonly parentSha: Oid | null;
  readonly changes: readonly PathChange[];
}

/** Where a subscription starts: after the current tip, after a given commit, or from the root. */
export type SubscribeFrom = "head" | "genesis" | Oid;

export interface SubscribeOptions {
  readonly from?: SubscribeFrom;
  readonly signal?: AbortSignal;
  /** Called when the ref moved to a commit that does not descend from the last one seen. */
  readonly onRewrite?: (info: { readonly from: Oid | null; readonly to: Oid }) => void;
}

/** What `validatePush` sees: readers before and after, and what changed, so checks are O(changed). */
export interface PushContext {
  readonly repoId: RepoId;
  readonly ref: string;
  /** Reads of the current tip, or null when the ref is unborn. */
  readonly prior: CommittedReads | null;
  /** Reads of the tree about to be committed (its commitSha is null: not committed yet). */
  readonly prospective: CommittedReads;
  /** Every changed blob path. */
  readonly changes: readonly PathChange[];
  /** The distinct parent directories of changed paths, each ending in "/". */
  readonly changedPathPrefixes: readonly string[];
  /**
   * Reads of another ref of the same repository at its current tip (a full ref name), or null
   * when it does not exist yet; for rules that span refs (an archive ref). Optional: stores
   * that cannot give it leave it out.
   */
  readonly readRef?: (ref: string) => Promise<CommittedReads | null>;
  /** Awaited between units of validation (one run, say) when the writer asked for it; may be absent. */
  readonly pause?: () => Promise<void>;
}

/** Per-kind policy: where its repos live and what a valid tree is. */
export interface KindHandler {
  readonly kind: string;
  /** Folder under the data dir holding this kind's repos, e.g. "deployments". */
  readonly directoryPrefix: string;
  /** Throw (a WorkflowHostError, usually `event_invalid`) to refuse the commit; nothing moves. */
  validatePush?(ctx: PushContext): void | Promise<void>;
}

/** Timer functions (a FakeClock provides both): the `Timers` of src/time, under its older name. */
export type TimerApi = Timers;

// The options of createRepoStore live beside their resolution.
export type { RepoStoreOptions } from "./repo-store-options.js";

export interface WriteTreeOptions {
  readonly files: ReadonlyMap<string, Uint8Array | string> | Readonly<Record<string, Uint8Array | string>>;
  /** When set, everything under this folder is replaced by the `files` inside it. */
  readonly clearPrefix?: string;
  readonly message: string;
}

export interface WriteTreePreservingPrefixOptions<R> {
  /** A folder path ending in "/", e.g. "runs/r1/events/". */
  readonly preservePrefix: string;
  /**
   * Runs under the repo lock with the regular files directly under the prefix (name → bytes)
   * at the current tip; returns the new set for the prefix (return `existing` unchanged for a
   * no-op). `others` names the entries under the prefix that are not regular files (folders,
   * symlinks, gitlinks — only a `git push` makes them): they are kept as they are, and the new set may
   * not name them (`path_violation`). `oids` gives the blob oid of each file in `existing`
   * (so a caller can cache what it derives from a file by oid). Re-run after a lost
   * compare-and-swap.
   */
  readonly merge: (
    existing: ReadonlyMap<string, Uint8Array>,
    parentSha: Oid | null,
    others: ReadonlySet<string>,
    oids: ReadonlyMap<string, Oid>,
  ) =>
    | { readonly files: ReadonlyMap<string, Uint8Array | string>; readonly result?: R }
    | Promise<{ readonly files: ReadonlyMap<string, Uint8Array | string>; readonly result?: R }>;
  readonly message: string;
}

export interface WriteTreeDeltaOptions<R> {
  /** Runs under the repo lock against the current tip; re-run after a lost compare-and-swap. */
  readonly computeDelta: (
    parentSha: Oid | null,
    reads: CommittedReads,
  ) => DeltaResult<R> | null | Promise<DeltaResult<R> | null>;
  readonly message: string;
  /**
   * For a big write (a fire commit of thousands of timers): awaited between units of the
   * commit's own work (hashing the new files, editing each folder, validating each run), so the
   * caller can give the event loop a turn (a time slicer); default none.
   */
  readonly pause?: () => Promise<void>;
  /**
   * The caller built every change itself, under the kind's rules, from the log at the
   * `parentSha` it was given, and validated each event it wrote (the scheduler's fire commits):
   * the kind handler's `validatePush` is not run for this write. Never set it for content that
   * came from outside the process. Default false.
   */
  readonly prevalidated?: boolean;
}

/**
 * A store of bare git repositories. Every method checks the repo id (`repo_id_invalid`) and
 * kind (`kind_unknown`) before any fs call, then asks `authorize` (`authorize_denied`); after
 * `close()` every method throws `store_stopped`. A ref may be given as `main`,
 * `refs/heads/main` or `HEAD` (a name git's check-ref-format refuses is `path_violation`).
 * Writes to one repo are serialised in this process and compare-and-swapped across processes
 * (git's lock protocol), so concurrent writers never lose a commit and history stays linear.
 */
export interface RepoStore {
  readonly dataDir: string;
  /**
   * Idempotent, also across processes racing: creates the bare repo (HEAD → refs/heads/main)
   * and a genesis commit (empty tree, message "genesis") on `refs/heads/main`.
   * @returns `created: true` only for the call that created the genesis commit; `commitSha`
   *   is the current tip of main either way.
   * @throws `ref_corrupt` when main exists but is torn or dangling (it is never overwritten).
   */
  initRepo(principal: Principal, repoId: RepoId): Promise<{ created: boolean; commitSha: Oid }>;
  /**
   * Ids of the existing repos of a kind, sorted (authorized as `{kind, id: "*"}`, ref null);
   * none when the kind's folder does not exist yet.
   * @throws `io_failed` (`data.errno` "ENOTDIR", `data.cause` "not_a_folder") when something
   *   other than a folder stands where the kind's folder belongs (`<dataDir>/deployments`)
   */
  listRepos(principal: Principal, kind: string): Promise<string[]>;
  /**
   * The commit a ref points at, or null when the ref does not exist yet (unborn).
   * @throws `ref_corrupt` naming the ref and its value for a torn ref file (empty, truncated,
   *   not 40 hex + newline) or one pointing at a missing commit — never null for those;
   *   `object_corrupt` (naming the pack or object) when the commit is there but cannot be read;
   *   `repo_not_found` when the repository does not exist.
   */
  resolveRef(principal: Principal, repoId: RepoId, ref: string): Promise<Oid | null>;
  /**
   * Reads pinned to one commit: a 40-hex sha, or the commit a ref points at now.
   * @throws `ref_corrupt`, `repo_not_found` as resolveRef; `object_corrupt` for an unknown sha.
   */
  openCommittedReads(principal: Principal, repoId: RepoId, refOrSha: string): Promise<CommittedReads>;
  /**
   * Whether commit `ancestor` is reachable from commit `descendant` through parents (a commit is
   * its own ancestor). Walks at most {@link MAX_ANCESTRY_WALK} commits, newest first; false past
   * that. Optional: a store without it cannot tell a rewind from another rewrite.
   * @throws `repo_id_invalid`, `authorize_denied` (action "read"), `repo_not_found`,
   *   `object_corrupt` (a commit on the way cannot be read, or `descendant` is not a commit)
   */
  isAncestor?(principal: Principal, repoId: RepoId, ancestor: Oid, descendant: Oid): Promise<boolean>;
  /**
   * Commits `files` on top of the ref's tip (additive), or replaces the `clearPrefix` folder.
   * No commit when the tree would not change (`committed: false`).
   * @throws `path_violation` for a bad path (before anything is written); `ref_corrupt`,
   *   `ref_locked` (another writer held the lock longer than `lockTimeoutMs`), `ref_conflict`
   *   (attempts exhausted), `repo_not_found`, `object_corrupt`; whatever `validatePush` throws.
   */
  writeTree(principal: Principal, repoId: RepoId, ref: string, opts: WriteTreeOptions): Promise<WriteResult>;
  /**
   * Replaces the blobs directly under `preservePrefix` with what `merge` returns (run under the
   * repo lock against the tip; re-run after a lost race). Subfolders of the prefix are kept.
   * @throws as writeTree; `path_violation` for a result name outside the prefix.
   */
  writeTreePreservingPrefix<R = undefined>(
    principal: Principal,
    repoId: RepoId,
    ref: string,
    opts: WriteTreePreservingPrefixOptions<R>,
  ): Promise<WriteResult<R>>;
  /**
   * Commits the puts and deletes `computeDelta` returns (null or an unchanged tree: no commit).
   * @throws as writeTree.
   */
  writeTreeDelta<R = undefined>(
    principal: Principal,
    repoId: RepoId,
    ref: string,
    opts: WriteTreeDeltaOptions<R>,
  ): Promise<WriteResult<R>>;
  /**
   * Every commit on the ref's first-parent chain after `from` (default "head", fixed when this
   * is called), oldest first, each exactly once with its blob changes against its first
   * parent; commits by this store are seen at once, others' within `watch.pollMs`. A rewrite
   * (tip not descending from the last commit yielded) calls `onRewrite` and yields one
   * synthetic change set from the last yielded commit to the new tip. Ends (returns) on
   * `signal` abort or `close()`.
   * @throws (from the iteration) `ref_corrupt`, `repo_not_found`, `object_corrupt` (an unknown
   *   `from` sha), `authorize_denied`.
   */
  subscribe(principal: Principal, repoId: RepoId, ref: string, opts?: SubscribeOptions): AsyncIterable<CommitChange>;
  /**
   * A derived file of the repository: data kept beside it, never in its history, that its
   * writer can rebuild from committed trees (a cache keyed by tree oids). Optional: stores
   * without it simply have no derived files.
   * @returns the bytes last written under `name`, or null when there are none (never written,
   *   or torn by a crash: a file whose checksum does not match is treated as absent)
   * @throws `path_violation` for a bad name (one file name of letters, digits, `.`, `_`, `-`),
   *   `repo_id_invalid`, `authorize_denied` (action "read"), `store_stopped`
   */
  readDerived?(principal: Principal, repoId: RepoId, name: string): Promise<Uint8Array | null>;
  /**
   * Replaces a derived file atomically (readers see the old bytes or the new, whole). Concurrent
   * writers of one name: the last one wins. A directory found at its path is moved aside (kept,
   * never deleted) and the file written all the same.
   * @returns `{displaced}` (where that directory now is) when one was moved, else nothing
   * @throws as readDerived (action "write"); `repo_not_found`; the file system's errors
   */
  writeDerived?(principal: Principal, repoId: RepoId, name: string, content: Uint8Array): Promise<void | { readonly displaced: string }>;
  /**
   * Housekeeping for a quiet moment: merges the repository's recent packs into one with their
   * deltas (the biggest pack only once the others hold half its objects, so history is not
   * rewritten on every call). Resolves when done; a failed merge leaves the packs as they were.
   * Optional: stores without packs leave it out.
   * @throws `repo_id_invalid`, `authorize_denied` (action "write"), `store_stopped`
   */
  compactPacks?(principal: Principal, repoId: RepoId): Promise<void>;
  /**
   * The symbolic links inside the repository's folder that lead outside it (elsewhere in the
   * data dir, into another repository, or out of the data dir), and the folder itself when it is
   * a link, as paths relative to the data dir: each makes the store refuse what passes
   * through it (`path_escapes_data_dir`). For health checks; walks the whole folder.
   * Optional: stores off a file system leave it out.
   * @throws `repo_id_invalid`, `authorize_denied` (action "read"), `store_stopped`
   */
  escapingLinks?(principal: Principal, repoId: RepoId): Promise<readonly string[]>;
  /** Asks every watcher to re-check refs now (tests; after an out-of-band write). */
  poke(repoId?: RepoId): void;
  /** Ends every subscription, closes watchers and timers, waits for queued writes; idempotent. */
  close(): Promise<void>;
}

/** A ref about to move by a commit of this store (see RepoStoreOptions.beforeRefMove). */
export interface RefMove {
  readonly repoId: RepoId;
  /** Full ref name, e.g. `refs/heads/main`. */
  readonly ref: string;
  /** The ref's value the commit extends; null for an unborn ref. */
  readonly from: Oid | null;
  /** The new commit. */
  readonly to: Oid;
}
