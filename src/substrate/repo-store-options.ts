/**
 * The options of `createRepoStore`, checked and given their defaults (see `RepoStoreOptions`
 * in types.ts for each one's meaning and unit).
 */
import { describeValue, WorkflowHostError } from "../errors.js";
import { createSystemTimers, systemClock, type Clock } from "../time/clock.js";
import { createBlockingFsAdapter, createFsAdapter, type FsAdapter } from "./fs-adapter.js";
import type { Identity } from "./git-object.js";
import { ScopedLruCache } from "./lru-cache.js";
import type { ObjectCaches } from "./object-store.js";
import type { KindHandler, RepoStoreOptions, TimerApi } from "./types.js";

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
 * Checks the options and fills in the defaults.
 * @throws config_invalid for a bad option (two handlers of one kind, a bad author or
 *   directoryPrefix, a negative time or size); TypeError (from the fs adapter) for an `fs`
 *   without the node:fs API
 */
export function resolveRepoStoreOptions(opts: RepoStoreOptions): ResolvedRepoStoreOptions {
  const fs = createFsAdapter(opts.fs);
  const quickFs = opts.blockingRefIo === false ? fs : createBlockingFsAdapter(opts.fs);
  const dataDir = opts.dataDir.replace(/\/+$/, "") || "/";
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
  const identity = checkIdentity(opts.author ?? DEFAULT_IDENTITY);
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
  return { fs, quickFs, dataDir, handlers, timers, sleep, clock, identity, durable, staleLockMs, lockTimeoutMs, maxAttempts, foreignWriterRoomMs, packThreshold, pollMs, useChokidar, caches };
}
