/**
 * `createRepoStore`: bare git repositories on disk as a database of committed trees.
 *
 * Every public method follows the same order: check the repo id and kind (no fs call before
 * that), ask `authorize`, then touch the disk. Writes go through the per-repository in-process
 * queue and {@link commitWithRetry}; reads are pinned to one commit. See docs/design.md §4.
 *
 * States: open → closed. `close()` ends every subscription and watcher and waits for queued
 * writes; every later call throws `store_stopped`.
 */
import { WorkflowHostError, describeValue } from "../errors.js";
import { subscribeCommits } from "./commit-subscription.js";
import { assertDerivedName, readDerivedFile, writeDerivedFile } from "./derived-files.js";
import { hostname as osHostname } from "node:os";
import { asIoFailure, createBlockingFsAdapter, createFsAdapter, errnoCode } from "./fs-adapter.js";
import type { LockHolder } from "./ref-store.js";
import { encodeCommit, hashObject, type Identity } from "./git-object.js";
import { EMPTY_TREE_OID, isRegularFileMode } from "./tree-object.js";
import { createKeyedQueue } from "./keyed-queue.js";
import { ScopedLruCache } from "./lru-cache.js";
import type { ObjectCaches } from "./object-store.js";
import { normalizeRefName, OID_PATTERN } from "./ref-name.js";
import { createRefWatcher, type RefWatcher } from "./ref-watcher.js";
import { createRepoHandle, type RepoHandle } from "./repo-handle.js";
import { assertRepoId, handlerForKind, REPO_ID_PATTERN } from "./repo-id.js";
import { ensureRepoLayout } from "./repo-layout.js";
import { assertEntryName, parseFolderPath, parseRepoPath } from "./repo-path.js";
import type {
  CommittedReads,
  KindHandler,
  Oid,
  Principal,
  RepoAction,
  RepoId,
  RepoStore,
  RepoStoreOptions,
  TimerApi,
  WriteResult,
} from "./types.js";
import { commitWithRetry, fileEntries, type Planner, type WriteEngineDeps } from "./write-engine.js";

const DEFAULT_IDENTITY: Identity = { name: "workflow-host", email: "workflow-host@localhost" };

function checkIdentity(identity: Identity): Identity {
  // fsck --strict refuses names/emails containing <, > or a newline.
  const bad = /[<>\n\0]/;
  if (bad.test(identity.name) || bad.test(identity.email) || identity.name.trim() === "") {
    throw new TypeError(`createRepoStore: author ${describeValue(identity)} must not contain <, > or newlines`);
  }
  return identity;
}

function positive(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (!Number.isFinite(value) || value < 0) throw new TypeError(`createRepoStore: ${name} must be a number >= 0`);
  return value;
}

/**
 * Opens a store over `<dataDir>/<directoryPrefix>/<id>.git` repositories.
 *
 * Options (all but `dataDir`, `kindHandlers`, `authorize` optional): `fs` (default node:fs;
 * memfs works, without OS watching), `clock` (commit times, default system clock),
 * `watch` (default `{pollMs: 1000, chokidar: true}`; chokidar only on node:fs), `durability`
 * (default "none"; "fsync" flushes objects, folders and refs before a ref counts as moved),
 * `staleLockMs` (10 000), `lockTimeoutMs` (`staleLockMs` + 5 000), `author`, `timers`, `maxWriteAttempts` (32),
 * `treeCacheEntries` (500 000), `blobCacheBytes` (32 MiB), `packThreshold` (3 objects),
 * `packCacheBytes` (128 MiB), `blockingRefIo` (true).
 * @throws TypeError for a bad option (two handlers of one kind, a bad author, a negative time).
 */
export function createRepoStore(opts: RepoStoreOptions): RepoStore {
  const fs = createFsAdapter(opts.fs);
  const quickFs = opts.blockingRefIo === false ? fs : createBlockingFsAdapter(opts.fs);
  const dataDir = opts.dataDir.replace(/\/+$/, "") || "/";
  const handlers = new Map<string, KindHandler>();
  for (const handler of opts.kindHandlers) {
    if (handlers.has(handler.kind)) throw new TypeError(`createRepoStore: two handlers for kind ${handler.kind}`);
    if (!/^[A-Za-z0-9_-]+$/.test(handler.directoryPrefix)) {
      throw new TypeError(`createRepoStore: directoryPrefix ${describeValue(handler.directoryPrefix)} must be one folder name`);
    }
    handlers.set(handler.kind, handler);
  }
  const timers: TimerApi = opts.timers ?? {
    setTimeout: (callback, ms) => setTimeout(callback, ms),
    clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
  };
  const sleep = (ms: number): Promise<void> =>
    new Promise((resolve) => {
      timers.setTimeout(resolve, Math.max(0, ms));
    });
  const clock = opts.clock ?? (() => new Date());
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
    packCache: {},
  };

  // Who takes this store's ref locks, recorded beside each lock so a writer on this machine
  // can break the lock of a process that died holding it at once (see ref-store.ts). Only on
  // the real file system: another machine's processes, or memfs, cannot be probed.
  const lockHolder: LockHolder | undefined = fs.isNodeFs ? thisProcessAsHolder() : undefined;
  const queue = createKeyedQueue();
  const repos = new Map<string, RepoHandle>();
  const watchers = new Map<string, { watcher: RefWatcher; users: number }>();
  const wakers = new Set<() => void>();
  let closed = false;

  const gitdirOf = (handler: KindHandler, id: string): string => `${dataDir}/${handler.directoryPrefix}/${id}.git`;

  function ensureOpen(): void {
    if (closed) throw new WorkflowHostError("store_stopped", "the repo store was closed; create a new one", {});
  }

  async function authorize(principal: Principal, repoId: RepoId | { kind: string; id: "*" }, ref: string | null, action: RepoAction): Promise<void> {
    const allowed = await opts.authorize(principal, repoId, ref, action);
    if (allowed !== true) {
      throw new WorkflowHostError(
        "authorize_denied",
        `principal may not ${action} ${repoId.kind}/${repoId.id}${ref === null ? "" : ` at ${ref}`}`,
        { repoId, ref, action },
      );
    }
  }

  function handleFor(repoId: RepoId, handler: KindHandler): RepoHandle {
    const key = `${handler.kind}/${repoId.id}`;
    let repo = repos.get(key);
    if (repo === undefined) {
      repo = createRepoHandle({
        fs,
        quickFs,
        repoId: { kind: repoId.kind, id: repoId.id },
        handler,
        gitdir: gitdirOf(handler, repoId.id),
        caches,
        durable,
        packThreshold,
        staleLockMs,
        lockTimeoutMs,
        sleep,
        nowMs: () => Date.now(), // lock mtimes are stamped by the OS clock, so compare with it
        ...(lockHolder === undefined ? {} : { lockHolder }),
      });
      repos.set(key, repo);
    }
    return repo;
  }

  /** Validates, authorizes, opens: the prologue of every per-repo call. */
  async function open(principal: Principal, repoId: RepoId, ref: string | null, action: RepoAction): Promise<RepoHandle> {
    ensureOpen();
    const handler = assertRepoId(handlers, repoId);
    await authorize(principal, repoId, ref, action);
    ensureOpen();
    return handleFor(repoId, handler);
  }

  const engineDeps = (repo: RepoHandle): WriteEngineDeps => ({
    repo,
    identity,
    clock,
    maxAttempts,
    sleep,
    onCommitted: (r) => watchers.get(r.key)?.watcher.notify(),
    ...(opts.fence === undefined ? {} : { fence: opts.fence }),
    roomMs: foreignWriterRoomMs,
  });

  function write<R>(repo: RepoHandle, refName: string, message: string, plan: Planner<R>): Promise<WriteResult<R>> {
    if (typeof message !== "string") throw new TypeError("commit message must be a string");
    return queue.run(repo.key, () => commitWithRetry(engineDeps(repo), refName, message, plan));
  }

  function acquireWatcher(repo: RepoHandle): RefWatcher {
    let slot = watchers.get(repo.key);
    if (slot === undefined) {
      slot = { watcher: createRefWatcher({ gitdir: repo.gitdir, pollMs, useChokidar, timers }), users: 0 };
      watchers.set(repo.key, slot);
    }
    slot.users++;
    return slot.watcher;
  }

  function releaseWatcher(repo: RepoHandle): void {
    const slot = watchers.get(repo.key);
    if (slot === undefined) return;
    slot.users--;
    if (slot.users <= 0) {
      watchers.delete(repo.key);
      void slot.watcher.close();
    }
  }

  const store: RepoStore = {
    dataDir,

    async initRepo(principal, repoId) {
      const repo = await open(principal, repoId, "refs/heads/main", "init");
      return queue.run(repo.key, async () => {
        await ensureRepoLayout(fs, repo.gitdir, durable);
        const existing = await repo.resolveRef("refs/heads/main");
        if (existing !== null) return { created: false, commitSha: existing };
        const emptyTree = hashObject("tree", new Uint8Array());
        const genesis = encodeCommit({
          tree: EMPTY_TREE_OID,
          parents: [],
          author: identity,
          committer: identity,
          timestampSec: Math.floor(clock().getTime() / 1000),
          message: "genesis",
        });
        const outcome = await repo.refs.compareAndSwap("refs/heads/main", null, genesis.oid, () =>
          repo.objects.writeObjects([emptyTree, genesis]),
        );
        if (outcome.ok) {
          watchers.get(repo.key)?.watcher.notify();
          return { created: true, commitSha: genesis.oid };
        }
        // Another process initialised it first; its genesis is as good as ours.
        const winner = await repo.resolveRef("refs/heads/main");
        if (winner === null) throw new WorkflowHostError("ref_conflict", `refs/heads/main of ${repo.key} vanished during init`, { repoId });
        return { created: false, commitSha: winner };
      });
    },

    async listRepos(principal, kind) {
      ensureOpen();
      const handler = handlerForKind(handlers, kind);
      await authorize(principal, { kind, id: "*" }, null, "list");
      const names = await fs.readdirOrEmpty(`${dataDir}/${handler.directoryPrefix}`);
      const ids: string[] = [];
      for (const name of names) {
        if (!name.endsWith(".git")) continue;
        const id = name.slice(0, -4);
        if (!REPO_ID_PATTERN.test(id)) continue;
        if ((await fs.statOrNull(`${gitdirOf(handler, id)}/HEAD`)) !== null) ids.push(id);
      }
      return ids.sort();
    },

    async resolveRef(principal, repoId, ref) {
      const refName = normalizeRefName(ref);
      const repo = await open(principal, repoId, refName, "read");
      return repo.resolveRef(refName);
    },

    async openCommittedReads(principal, repoId, refOrSha) {
      const isSha = typeof refOrSha === "string" && OID_PATTERN.test(refOrSha);
      const target = isSha ? refOrSha : normalizeRefName(refOrSha);
      const repo = await open(principal, repoId, target, "read");
      return repo.readsAt(isSha ? refOrSha : await repo.resolveRef(target));
    },

    async writeTree(principal, repoId, ref, wopts) {
      const refName = normalizeRefName(ref);
      const clear = wopts.clearPrefix === undefined ? undefined : parseFolderPath(wopts.clearPrefix);
      const files = fileEntries(wopts.files);
      for (const [path] of files) parseRepoPath(path);
      const repo = await open(principal, repoId, refName, "write");
      return write(repo, refName, wopts.message, async () => ({
        ...(clear === undefined ? {} : { clear }),
        puts: new Map(files),
      }));
    },

    async writeTreePreservingPrefix(principal, repoId, ref, wopts) {
      const refName = normalizeRefName(ref);
      const prefix = wopts.preservePrefix;
      const segments = parseFolderPath(prefix);
      if (segments.length === 0 || !prefix.endsWith("/")) {
        throw new WorkflowHostError(
          "path_violation",
          `preservePrefix ${describeValue(prefix)} must be a folder path ending in "/", e.g. "runs/r1/events/"`,
          { path: prefix },
        );
      }
      const folder = segments.join("/");
      const repo = await open(principal, repoId, refName, "write");
      return write(repo, refName, wopts.message, async (parentSha, reads) => {
        const existing = new Map<string, Uint8Array>();
        // Folders, symlinks and gitlinks (pushed with git) are neither handed over as files nor
        // rewritten: re-putting a symlink's target bytes would turn it into a regular file.
        const others = new Set<string>();
        const oids = new Map<string, Oid>();
        for (const entry of await reads.listDir(folder)) {
          if (entry.type === "blob" && isRegularFileMode(entry.mode)) {
            existing.set(entry.name, await reads.readBlobByOid(entry.oid));
            oids.set(entry.name, entry.oid);
          } else others.add(entry.name);
        }
        const merged = await wopts.merge(existing, parentSha, others, oids);
        const next = new Map<string, Uint8Array | string>();
        for (const [key, content] of merged.files) {
          // Names are relative to the prefix; a full path under the prefix is accepted too.
          const name = key.startsWith(prefix) ? key.slice(prefix.length) : key;
          assertEntryName(name, key.startsWith(prefix) ? key : `${prefix}${key}`);
          if (others.has(name)) {
            throw new WorkflowHostError("path_violation", `${prefix}${name} is a folder, symlink or gitlink; a merge may not replace it`, { path: `${prefix}${name}` });
          }
          next.set(`${folder}/${name}`, content);
        }
        const deletes = [...existing.keys()].filter((name) => !next.has(`${folder}/${name}`)).map((name) => `${folder}/${name}`);
        // A merge usually hands back the existing bytes untouched plus one new file: only what
        // is not the very bytes it was given is put, so an append to a log of n events hashes
        // one blob, not n.
        const puts = new Map<string, Uint8Array | string>();
        for (const [path, content] of next) {
          if (existing.get(path.slice(folder.length + 1)) !== content) puts.set(path, content);
        }
        return { deletes, puts, ...(merged.result === undefined ? {} : { result: merged.result }) };
      });
    },

    async writeTreeDelta(principal, repoId, ref, wopts) {
      const refName = normalizeRefName(ref);
      const repo = await open(principal, repoId, refName, "write");
      return write(repo, refName, wopts.message, async (parentSha, reads) => {
        const delta = await wopts.computeDelta(parentSha, reads);
        if (delta === null) return null;
        return {
          ...(delta.puts === undefined ? {} : { puts: delta.puts }),
          ...(delta.deletes === undefined ? {} : { deletes: delta.deletes }),
          ...(delta.result === undefined ? {} : { result: delta.result }),
          ...(wopts.pause === undefined ? {} : { pause: wopts.pause }),
        };
      });
    },

    subscribe(principal, repoId, ref, sopts = {}) {
      ensureOpen();
      const refName = normalizeRefName(ref);
      const handler = assertRepoId(handlers, repoId);
      const from = sopts.from ?? "head";
      // The starting point is fixed now, not at the first `next()`, so commits made between
      // subscribe() and iteration are not skipped.
      const start = (async (): Promise<Oid | null> => {
        await authorize(principal, repoId, refName, "subscribe");
        const repo = handleFor(repoId, handler);
        if (from === "genesis") {
          await repo.assertExists();
          return null;
        }
        if (from === "head") return repo.resolveRef(refName);
        if (typeof from !== "string" || !OID_PATTERN.test(from)) {
          throw new WorkflowHostError("object_corrupt", `subscribe from ${describeValue(from)}: expected "head", "genesis" or a 40-hex commit id`, { from });
        }
        await repo.readCommit(from);
        return from;
      })();
      // Reported through the iteration; never an unhandled rejection if nobody iterates.
      start.catch(() => undefined);
      const repo = handleFor(repoId, handler);
      return subscribeCommits(
        {
          repo,
          refName,
          start,
          isClosed: () => closed,
          attach: (wake) => {
            const watcher = acquireWatcher(repo);
            const unlisten = watcher.listen(wake);
            wakers.add(wake);
            return () => {
              wakers.delete(wake);
              unlisten();
              releaseWatcher(repo);
            };
          },
        },
        sopts,
      );
    },

    async readDerived(principal, repoId, name) {
      assertDerivedName(name);
      const repo = await open(principal, repoId, null, "read");
      return readDerivedFile(fs, repo.gitdir, name);
    },

    async writeDerived(principal, repoId, name, content) {
      assertDerivedName(name);
      const repo = await open(principal, repoId, null, "write");
      await repo.assertExists();
      await writeDerivedFile(fs, repo.gitdir, name, content, durable);
    },

    poke(repoId) {
      if (closed) return;
      if (repoId === undefined) {
        for (const slot of watchers.values()) slot.watcher.notify();
        return;
      }
      watchers.get(`${repoId.kind}/${repoId.id}`)?.watcher.notify();
    },

    async close() {
      if (closed) return;
      closed = true;
      for (const wake of [...wakers]) wake();
      await queue.idle();
      await Promise.all([...repos.values()].map((repo) => repo.objects.close()));
      await Promise.all([...watchers.values()].map((slot) => slot.watcher.close()));
      watchers.clear();
    },
  };
  return withTypedIoFailures(store);
}

/** This process as a ref-lock holder; `isAlive` asks the OS (ESRCH: no such process). */
function thisProcessAsHolder(): LockHolder {
  return {
    pid: process.pid,
    hostname: osHostname(),
    isAlive(pid) {
      try {
        process.kill(pid, 0);
        return true;
      } catch (error) {
        return errnoCode(error) !== "ESRCH";
      }
    },
  };
}

/** Where a failing call was: "<kind>/<id>" for a repo id, else the kind. */
function describeTarget(repoId: unknown): string {
  if (typeof repoId === "object" && repoId !== null && "kind" in repoId && "id" in repoId) {
    return `${String((repoId as RepoId).kind)}/${String((repoId as RepoId).id)}`;
  }
  return String(repoId);
}

/** `reads` whose file-system failures are `io_failed` (see {@link asIoFailure}). */
function typedReads(reads: CommittedReads, where: string): CommittedReads {
  const guard = async <T>(doing: string, run: () => Promise<T>): Promise<T> => {
    try {
      return await run();
    } catch (error) {
      throw asIoFailure(error, `${doing} in ${where}`);
    }
  };
  return {
    commitSha: reads.commitSha,
    listDir: (path) => guard(`listing ${path}`, () => reads.listDir(path)),
    readBlob: (path) => guard(`reading ${path}`, () => reads.readBlob(path)),
    readBlobByOid: (oid) => guard(`reading blob ${oid}`, () => reads.readBlobByOid(oid)),
    treeOid: (path) => guard(`reading ${path}`, () => reads.treeOid(path)),
  };
}

/**
 * The store with every file-system failure (ENOSPC, EROFS, EIO, EMFILE, …) turned into
 * `io_failed` carrying the errno, so callers branch on one code and the CLI prints it typed.
 */
function withTypedIoFailures(store: RepoStore): RepoStore {
  const guard = async <T>(doing: string, run: () => Promise<T>): Promise<T> => {
    try {
      return await run();
    } catch (error) {
      throw asIoFailure(error, doing);
    }
  };
  return {
    dataDir: store.dataDir,
    initRepo: (p, repoId) => guard(`creating ${describeTarget(repoId)}`, () => store.initRepo(p, repoId)),
    listRepos: (p, kind) => guard(`listing repositories of ${kind}`, () => store.listRepos(p, kind)),
    resolveRef: (p, repoId, ref) => guard(`reading ref ${ref} of ${describeTarget(repoId)}`, () => store.resolveRef(p, repoId, ref)),
    openCommittedReads: (p, repoId, refOrSha) =>
      guard(`opening ${refOrSha} of ${describeTarget(repoId)}`, async () => typedReads(await store.openCommittedReads(p, repoId, refOrSha), describeTarget(repoId))),
    writeTree: (p, repoId, ref, wopts) => guard(`writing to ${describeTarget(repoId)}`, () => store.writeTree(p, repoId, ref, wopts)),
    writeTreePreservingPrefix: (p, repoId, ref, wopts) =>
      guard(`writing to ${describeTarget(repoId)}`, () => store.writeTreePreservingPrefix(p, repoId, ref, wopts)),
    writeTreeDelta: (p, repoId, ref, wopts) => guard(`writing to ${describeTarget(repoId)}`, () => store.writeTreeDelta(p, repoId, ref, wopts)),
    subscribe(p, repoId, ref, sopts) {
      const commits = store.subscribe(p, repoId, ref, sopts);
      const doing = `following ${ref} of ${describeTarget(repoId)}`;
      return {
        async *[Symbol.asyncIterator]() {
          try {
            yield* commits;
          } catch (error) {
            throw asIoFailure(error, doing);
          }
        },
      };
    },
    readDerived: (p, repoId, name) => guard(`reading ${name} of ${describeTarget(repoId)}`, () => (store.readDerived as NonNullable<RepoStore["readDerived"]>)(p, repoId, name)),
    writeDerived: (p, repoId, name, content) =>
      guard(`writing ${name} of ${describeTarget(repoId)}`, () => (store.writeDerived as NonNullable<RepoStore["writeDerived"]>)(p, repoId, name, content)),
    poke: (repoId) => store.poke(repoId),
    close: () => store.close(),
  };
}
