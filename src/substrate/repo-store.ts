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
import { systemClock } from "../time/clock.js";
import { DEFAULT_REF } from "./ref-name.js";
import { WorkflowHostError, describeValue } from "../errors.js";
import { subscribeCommits } from "./commit-subscription.js";
import { findEscapingLinks } from "./contained-fs.js";
import { assertDerivedName, readDerivedFile, writeDerivedFile } from "./derived-files.js";
import type { LockHolder } from "./ref-store.js";
import { encodeCommit, hashObject } from "./git-object.js";
import { EMPTY_TREE_OID, isRegularFileMode } from "./tree-object.js";
import { createKeyedQueue } from "./keyed-queue.js";
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
import { MAX_ANCESTRY_WALK } from "./types.js";
import { describeTarget, thisProcessAsHolder, typedReads, withTypedIoFailures } from "./repo-store-io.js";
import { resolveRepoStoreOptions } from "./repo-store-options.js";
import { commitWithRetry, fileEntries, type Planner, type WriteEngineDeps } from "./write-engine.js";

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
 * @throws config_invalid for a bad option (two handlers of one kind, a bad author or
 *   directoryPrefix, a negative time or size); TypeError (from the fs adapter) for an `fs`
 *   without the node:fs API.
 */
export function createRepoStore(opts: RepoStoreOptions): RepoStore {
  const { fs, quickFs, dataDir, handlers, timers, sleep, clock, monotonicNow, identity, durable, staleLockMs, lockTimeoutMs, maxAttempts, foreignWriterRoomMs, packThreshold, pollMs, useChokidar, caches } =
    resolveRepoStoreOptions(opts);

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
        fileClock: systemClock, // lock and temp file mtimes are stamped by the OS clock, so compare with it
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
    monotonicNow,
    maxAttempts,
    sleep,
    onCommitted: (r) => watchers.get(r.key)?.watcher.notify(),
    ...(opts.fence === undefined ? {} : { fence: opts.fence }),
    ...(opts.beforeRefMove === undefined ? {} : { beforeRefMove: opts.beforeRefMove }),
    roomMs: foreignWriterRoomMs,
  });

  /**
   * In-process writes queue per ref: one writer of a ref at a time in this process, so its
   * commits never race each other; writes to different refs of a repository (a dispatch
   * checkpoint beside fire commits on main) go side by side, as git's per-ref locks allow.
   * `refName` is normalised (`HEAD` stays `HEAD`: a write through it and one to its target
   * still exclude each other by the ref lock and compare-and-swap).
   */
  const writeKey = (repo: RepoHandle, refName: string): string => `${repo.key}\0${refName}`;

  function write<R>(repo: RepoHandle, refName: string, message: string, plan: Planner<R>): Promise<WriteResult<R>> {
    if (typeof message !== "string") throw new TypeError("commit message must be a string");
    return queue.run(writeKey(repo, refName), () => commitWithRetry(engineDeps(repo), refName, message, plan));
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
      const repo = await open(principal, repoId, DEFAULT_REF, "init");
      return queue.run(writeKey(repo, DEFAULT_REF), async () => {
        await ensureRepoLayout(fs, repo.gitdir, durable);
        const existing = await repo.resolveRef(DEFAULT_REF);
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
        const outcome = await repo.refs.compareAndSwap(DEFAULT_REF, null, genesis.oid, () =>
          repo.objects.writeObjects([emptyTree, genesis]),
        );
        if (outcome.ok) {
          watchers.get(repo.key)?.watcher.notify();
          return { created: true, commitSha: genesis.oid };
        }
        // Another process initialised it first; its genesis is as good as ours.
        const winner = await repo.resolveRef(DEFAULT_REF);
        if (winner === null) throw new WorkflowHostError("ref_conflict", `refs/heads/main of ${repo.key} vanished during init`, { repoId });
        return { created: false, commitSha: winner };
      });
    },

    async listRepos(principal, kind) {
      ensureOpen();
      const handler = handlerForKind(handlers, kind);
      await authorize(principal, { kind, id: "*" }, null, "list");
      const folder = `${dataDir}/${handler.directoryPrefix}`;
      const names = await fs.readdirOrEmpty(folder);
      // A file where the kind's folder belongs holds no repositories, but reading it as "none"
      // would hide every one a person meant to be there: said as the file system says it.
      if (names.length === 0) {
        const found = await fs.statOrNull(folder);
        if (found !== null && !found.isDirectory()) {
          throw new WorkflowHostError(
            "io_failed",
            `listing repositories of ${kind} failed: ENOTDIR on ${folder}: it is a file, not a folder; move it away (the repositories live in ${folder}/<id>.git)`,
            { errno: "ENOTDIR", cause: "not_a_folder", path: folder },
          );
        }
      }
      const ids: string[] = [];
      for (const name of names) {
        if (!name.endsWith(".git")) continue;
        const id = name.slice(0, -4);
        if (!REPO_ID_PATTERN.test(id)) continue;
        // A repository folder leading outside the data dir is listed all the same, so that each
        // use of it fails on its own (path_escapes_data_dir) instead of the whole listing.
        if ((await fs.statOrNull(`${gitdirOf(handler, id)}/HEAD`).catch(keepEscaping)) !== null) ids.push(id);
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

    async isAncestor(principal, repoId, ancestor, descendant) {
      const repo = await open(principal, repoId, null, "read");
      // Breadth first from the descendant: a rewind is usually a few first parents back.
      const seen = new Set<string>([descendant]);
      const queue: string[] = [descendant];
      for (let i = 0; i < queue.length && i < MAX_ANCESTRY_WALK; i += 1) {
        const sha = queue[i] as string;
        if (sha === ancestor) return true;
        for (const parent of (await repo.readCommit(sha)).parents) {
          if (seen.has(parent)) continue;
          seen.add(parent);
          queue.push(parent);
        }
      }
      return false;
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
          ...(delta.appends === undefined ? {} : { appends: delta.appends }),
          ...(delta.result === undefined ? {} : { result: delta.result }),
          ...(wopts.pause === undefined ? {} : { pause: wopts.pause }),
          ...(wopts.prevalidated === true ? { prevalidated: true } : {}),
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
      const displaced = await writeDerivedFile(fs, repo.gitdir, name, content, durable);
      return displaced === null ? undefined : { displaced };
    },

    async escapingLinks(principal, repoId) {
      const repo = await open(principal, repoId, null, "read");
      return findEscapingLinks(fs.raw, dataDir, repo.gitdir, { repository: true });
    },

    async compactPacks(principal, repoId) {
      const repo = await open(principal, repoId, null, "write");
      await repo.objects.compact();
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

/** A `path_escapes_data_dir` as "something is there"; any other error as it is. */
function keepEscaping(error: unknown): true {
  if (error instanceof WorkflowHostError && error.code === "path_escapes_data_dir") return true;
  throw error;
}
