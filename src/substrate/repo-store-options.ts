/**
 * The options of `createRepoStore`: what each means ({@link RepoStoreOptions}), and how they
 * are checked and given their defaults ({@link resolveRepoStoreOptions}).
 */
import { describeValue, WorkflowHostError } from "../errors.js";
import { createSystemTimers, monotonicNowOf, systemClock, type Clock, type MonotonicNow } from "../time/clock.js";
import { containFs, createContainment } from "./contained-fs.js";
import { createBlockingFsAdapter, createFsAdapter, type FsAdapter } from "./fs-adapter.js";
import type { Identity } from "./git-object.js";
import { ScopedLruCache } from "./lru-cache.js";
import type { ObjectCaches } from "./object-store.js";
import type { Authorize, KindHandler, RefMove, TimerApi } from "./types.js";

export interface RepoStoreOptions {
  /** Root folder; repos live at `<dataDir>/<directoryPrefix>/<repoId>.git`. */
  readonly dataDir: string;
  /**
   * node:fs compatible module (memfs works), with `realpathSync` or `promises.realpath` (folders
   * below the data dir are checked to resolve inside it, see contained-fs.ts). Default: node:fs.
   */
  readonly fs?: unknown;
  readonly kindHandlers: readonly KindHandler[];
  readonly authorize: Authorize;
  /** Commit timestamps come from here. Default: the system clock. */
  readonly clock?: Clock;
  /**
   * Watch refs of other processes: chokidar as a hint plus a periodic ref check every
   * `pollMs` (default 1000 ms). `false` turns both off (in-process commits are still seen).
   */
  readonly watch?: false | { readonly pollMs?: number; readonly chokidar?: boolean };
  /** "fsync": every object, ref and folder write is flushed before the ref moves. Default "none". */
  readonly durability?: "none" | "fsync";
  /**
   * A `<ref>.lock` is a crashed writer's, and is broken, once this process has seen it unchanged
   * for this long by its monotonic clock, or when its mtime is this far in the past (ms, default
   * 10 000); a future mtime is never trusted. The lock of a process of this machine that no
   * longer exists (recorded beside the lock, see ref-store.ts) is broken at once.
   */
  readonly staleLockMs?: number;
  /**
   * How long a writer waits for another's `<ref>.lock` before `ref_locked` (ms, default
   * `staleLockMs` + 5 000: long enough to see a crashed writer's lock turn stale and break it).
   */
  readonly lockTimeoutMs?: number;
  /** Commit author/committer identity. Default `workflow-host <workflow-host@localhost>`. */
  readonly author?: { readonly name: string; readonly email: string };
  /**
   * Timers for ref polling, lock back-off and retry back-off. Default: the global
   * `setTimeout`/`clearTimeout`.
   */
  readonly timers?: TimerApi;
  /** Compare-and-swap attempts per write before `ref_conflict` (default 32). */
  readonly maxWriteAttempts?: number;
  /**
   * The commit fence: called under the ref lock before each commit's objects are written and
   * again, synchronously, right before the ref's rename (no await between the two: a writer
   * that stalled mid-commit is checked after the stall); throwing aborts that write (the ref
   * does not move) with the thrown error. Must not have side effects: it runs twice per commit
   * (once only when `beforeRefMove` is given: a move it accepted is decided).
   * A host passes its lock's `assertHeld`, so a host that lost its lock stops committing at
   * once. Default none.
   */
  readonly fence?: () => void;
  /**
   * Called under the ref lock after `fence`, once a commit's objects are in place (a real `git`
   * can read them) and right before the ref moves from `from` to `to`; throwing aborts that
   * write with the thrown error (the ref does not move). Cluster mode pushes the commit to the
   * deployment's remote here, so a commit exists locally only once the remote accepted it.
   * Not called for `initRepo`'s genesis commit. Default none.
   */
  readonly beforeRefMove?: (move: RefMove) => Promise<void>;
  /**
   * Room left to other writers of a repository (another process, `git push`), in ms (default
   * 0: off; a host uses 100): after a lost compare-and-swap the retry waits a jittered backoff
   * instead of re-taking the ref at once, and for 5 s after a commit by someone else on a ref
   * this store's commits to that ref start at least this far apart (jittered ±50 %), so an
   * external writer's read-then-update cycle finds the ref still. Refs are judged one by one:
   * this store's own commits to another ref of the repository are not someone else's.
   */
  readonly foreignWriterRoomMs?: number;
  /**
   * Parsed-tree cache size, counted in tree entries across all repositories (default 500 000;
   * a 10 000-entry folder counts 10 001).
   */
  readonly treeCacheEntries?: number;
  /** Blob cache size in bytes across all repositories (default 32 MiB; blobs over 256 KiB are not cached). */
  readonly blobCacheBytes?: number;
  /**
   * A commit that writes at least this many objects is stored as one pack file (two files: the
   * pack and its index) instead of that many loose objects (default 3). Creating a file is the
   * dearest thing a commit does on a busy disk (~0.3–0.5 ms each measured here, against ~0.03 ms
   * for a rename), so a one-event append (~6 objects) and a batch of fires alike become one
   * pack; a one- or two-object write stays loose. `Infinity` always writes loose objects. Packs
   * beyond 16 are merged in the background.
   */
  readonly packThreshold?: number;
  /** Pack bytes cached for reads, across all repositories (default 128 MiB; packs over 64 MiB are read by range). */
  readonly packCacheBytes?: number;
  /**
   * Make the small-file calls on a commit's critical path (ref reads, the ref lock, the renames
   * that publish a pack, and the writes of a commit's pack and index up to 1 MiB,
   * `QUICK_COMMIT_PACK_BYTES`) synchronously (default true): each is a few µs on a local disk
   * (~0.1 ms for a 380 KB pack into the page cache) against ~0.1–0.4 ms through libuv's thread
   * pool, many times that on a busy machine, and a commit makes about ten of them in a row.
   * Flushes stay asynchronous. Set false on a file system where a call can block for long (a
   * network mount): the event loop would wait with it.
   */
  readonly blockingRefIo?: boolean;
}

const systemTimers = createSystemTimers();

const DEFAULT_IDENTITY: Identity = { name: "workflow-host", email: "workflow-host@localhost" };

function checkIdentity(identity: Identity): Identity {
  // fsck --strict refuses names/emails containing <, > or a newline.
  const bad = /[<>\n\0]/;
  if (bad.test(identity.name) || bad.test(identity.email) || identity.name.trim() === "") {
    throw new WorkflowHostError("config_invalid", `createRepoStore: author ${describeValue(identity)} must not contain <, > or newlines`, { field: "author", value: identity });
  }
  return identity;
}

function positive(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (!Number.isFinite(value) || value < 0) throw new WorkflowHostError("config_invalid", `createRepoStore: ${name} ${String(value)} must be a number >= 0`, { field: name, value });
  return value;
}

/** What `createRepoStore` runs on. */
export interface ResolvedRepoStoreOptions {
  readonly fs: FsAdapter;
  readonly quickFs: FsAdapter;
  readonly dataDir: string;
  readonly handlers: ReadonlyMap<string, KindHandler>;
  readonly timers: TimerApi;
  readonly sleep: (ms: number) => Promise<void>;
  readonly clock: Clock;
  /** Monotonic time (ms) for spacing commits: `timers.now` when the timers have one, else the system's. */
  readonly monotonicNow: MonotonicNow;
  readonly identity: Identity;
  readonly durable: boolean;
  readonly staleLockMs: number;
  readonly lockTimeoutMs: number;
  readonly maxAttempts: number;
  readonly foreignWriterRoomMs: number;
  readonly packThreshold: number;
  readonly pollMs: number | null;
  readonly useChokidar: boolean;
  readonly caches: ObjectCaches;
}

/**
 * Checks a `dataDir` option: a non-empty path without NUL. (An empty one read as `/` here while
 * the host lock, which joins paths, took the current folder.)
 * @param where - the function whose option it is, for the message
 * @returns the path as given
 * @throws config_invalid for anything else
 */
export function checkDataDir(value: unknown, where: string): string {
  if (typeof value === "string" && value !== "" && !value.includes("\u0000")) return value;
  throw new WorkflowHostError("config_invalid", `${where}: dataDir ${describeValue(value)} is not a data dir; allowed: a non-empty path (a folder, made on start when missing)`, { field: "dataDir", value });
}

/**
 * Checks the options and fills in the defaults.
 * @throws config_invalid for a bad option (an empty or missing dataDir, two handlers of one kind, a bad author or
 *   directoryPrefix, a negative time or size); TypeError (from the fs adapter) for an `fs`
 *   without the node:fs API or without a realpath
 */
export function resolveRepoStoreOptions(opts: RepoStoreOptions): ResolvedRepoStoreOptions {
  // Both adapters share one containment: a folder checked through one is checked for both.
  const plainFs = createFsAdapter(opts.fs, { noFollow: true });
  const dataDir = checkDataDir(opts.dataDir, "createRepoStore").replace(/\/+$/, "") || "/";
  const containment = createContainment(dataDir, plainFs.raw, { repoPrefixes: opts.kindHandlers.map((handler) => handler.directoryPrefix) });
  const fs = containFs(plainFs, containment);
  const quickFs = opts.blockingRefIo === false ? fs : containFs(createBlockingFsAdapter(opts.fs, { noFollow: true }), containment);
  const handlers = new Map<string, KindHandler>();
  for (const handler of opts.kindHandlers) {
    if (handlers.has(handler.kind)) throw new WorkflowHostError("config_invalid", `createRepoStore: two handlers for kind ${handler.kind}`, { field: "kindHandlers", value: handler.kind });
    if (!/^[A-Za-z0-9_-]+$/.test(handler.directoryPrefix)) {
      throw new WorkflowHostError("config_invalid", `createRepoStore: directoryPrefix ${describeValue(handler.directoryPrefix)} must be one folder name`, { field: "directoryPrefix", value: handler.directoryPrefix });
    }
    handlers.set(handler.kind, handler);
  }
  const timers: TimerApi = opts.timers ?? {
    setTimeout: (callback, ms) => systemTimers.setTimeout(callback, ms),
    clearTimeout: (handle) => systemTimers.clearTimeout(handle),
  };
  const sleep = (ms: number): Promise<void> =>
    new Promise((resolve) => {
      timers.setTimeout(resolve, Math.max(0, ms));
    });
  const clock = opts.clock ?? systemClock;
  const monotonicNow = monotonicNowOf(opts.timers);
  const identity = checkIdentity(opts.author ?? DEFAULT_IDENTITY);
  if (opts.durability !== undefined && opts.durability !== "fsync" && opts.durability !== "none") {
    // A misspelt "fsync" would otherwise write without flushing, silently.
    throw new WorkflowHostError("config_invalid", `createRepoStore: durability ${describeValue(opts.durability)} is not valid; allowed: "fsync" or "none"`, { field: "durability", value: opts.durability });
  }
  const durable = opts.durability === "fsync";
  const staleLockMs = positive(opts.staleLockMs, 10_000, "staleLockMs");
  // By default a writer outwaits a lock until it is stale (and breaks it), so the first write
  // after a crashed writer waits instead of failing with ref_locked.
  const lockTimeoutMs = positive(opts.lockTimeoutMs, staleLockMs + 5_000, "lockTimeoutMs");
  const maxAttempts = Math.max(1, Math.floor(positive(opts.maxWriteAttempts, 32, "maxWriteAttempts")));
  const foreignWriterRoomMs = positive(opts.foreignWriterRoomMs, 0, "foreignWriterRoomMs");
  const packThreshold = opts.packThreshold === Number.POSITIVE_INFINITY ? Number.POSITIVE_INFINITY : Math.max(1, positive(opts.packThreshold, 3, "packThreshold"));
  const pollMs = opts.watch === false ? null : Math.max(1, positive(opts.watch?.pollMs, 1_000, "watch.pollMs"));
  const useChokidar = opts.watch !== false && (opts.watch?.chokidar ?? true) && fs.isNodeFs;
  const caches: ObjectCaches = {
    trees: new ScopedLruCache(positive(opts.treeCacheEntries, 500_000, "treeCacheEntries")),
    commits: new ScopedLruCache(20_000),
    blobs: new ScopedLruCache(positive(opts.blobCacheBytes, 32 * 1024 * 1024, "blobCacheBytes")),
    packs: new ScopedLruCache(positive(opts.packCacheBytes, 128 * 1024 * 1024, "packCacheBytes")),
    // A few windows per big pack a walk reads at once (a recovery's blobs and trees).
    packWindows: new ScopedLruCache(16 * 1024 * 1024),
    packCache: {},
  };
  return { fs, quickFs, dataDir, handlers, timers, sleep, clock, monotonicNow, identity, durable, staleLockMs, lockTimeoutMs, maxAttempts, foreignWriterRoomMs, packThreshold, pollMs, useChokidar, caches };
}
