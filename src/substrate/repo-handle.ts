/**
 * One open repository: its object store and ref store, plus the checks that join them — a ref
 * must point at a readable commit, and a missing ref is only "unborn" when the repository
 * exists.
 */
import type { Clock } from "../time/clock.js";
import { DEFAULT_REF } from "./ref-name.js";
import { WorkflowHostError, describeValue } from "../errors.js";
import { createCommittedReads } from "./committed-reads.js";
import type { FsAdapter } from "./fs-adapter.js";
import type { ParsedCommit } from "./git-object.js";
import { createObjectStore, isAbsentObject, type ObjectCaches, type ObjectStore } from "./object-store.js";
import { OID_PATTERN } from "./ref-name.js";
import { createRefStore, type LockHolder, refCorrupt, type RefStore, type Sleep } from "./ref-store.js";
import { repoLayoutExists } from "./repo-layout.js";
import type { CommittedReads, KindHandler, Oid, RepoId } from "./types.js";

export interface RepoHandle {
  readonly repoId: RepoId;
  readonly handler: KindHandler;
  /** `<kind>/<id>`: key of the per-repo queue, watcher and cache entries. */
  readonly key: string;
  readonly gitdir: string;
  readonly objects: ObjectStore;
  readonly refs: RefStore;
  /**
   * The commit `refName` (a full name or `HEAD`) points at, or null when unborn.
   * @throws `ref_corrupt` naming the ref and its value when the file is torn or the commit is
   *   missing or unreadable; `repo_not_found` when the ref is absent because the repository is.
   */
  resolveRef(refName: string): Promise<Oid | null>;
  /**
   * Checks that `value`, read from ref `name`, is a readable commit.
   * @throws `ref_corrupt` naming the ref and the value when there is no commit with that oid (a
   *   dangling ref); `object_corrupt` (naming the pack or object) when it is there but unreadable.
   */
  checkRefTarget(name: string, value: Oid): Promise<void>;
  /** As {@link resolveRef}, also naming the ref that holds the value (after symbolic refs). */
  resolveRefNamed(refName: string): Promise<{ readonly name: string; readonly value: Oid | null }>;
  /**
   * A commit by sha.
   * @throws `object_corrupt` naming the sha when it is missing or not a commit;
   *   `repo_not_found` when the repository does not exist.
   */
  readCommit(sha: Oid): Promise<ParsedCommit>;
  /** Reads pinned to `commitSha` (null: the empty, unborn state). */
  readsAt(commitSha: Oid | null): Promise<CommittedReads>;
  /** @throws `repo_not_found` unless the repository exists. */
  assertExists(): Promise<void>;
  /**
   * Checks that ref `name`, found missing, may be read as unborn and get a root commit: the
   * repository exists, and when `name` is its main line (`refs/heads/main`, or the branch HEAD
   * names) the repository holds no history at all (see `ObjectStore.holdsHistory`). Other
   * branches may start afresh beside an existing history.
   * @throws `repo_not_found`; `ref_corrupt` naming the ref when the main line is missing from a
   *   repository that holds commits (the ref was lost: it must be restored, never restarted)
   */
  assertUnborn(name: string): Promise<void>;
}

export interface RepoHandleOptions {
  readonly fs: FsAdapter;
  /** For refs, ref locks and the renames that publish a pack (see fs-adapter.ts); default `fs`. */
  readonly quickFs?: FsAdapter;
  readonly repoId: RepoId;
  readonly handler: KindHandler;
  readonly gitdir: string;
  readonly caches: ObjectCaches;
  readonly durable: boolean;
  /** See `RepoStoreOptions.packThreshold`. */
  readonly packThreshold: number;
  readonly staleLockMs: number;
  readonly lockTimeoutMs: number;
  readonly sleep: Sleep;
  /**
   * Wall clock compared with the mtimes of lock and temp files (the ref store's stale locks, the
   * pack store's stale temp files), which the OS stamps: the system clock in production.
   */
  readonly fileClock: Clock;
  /** This process as recorded beside the ref locks it takes (see ref-store.ts). */
  readonly lockHolder?: LockHolder;
}

export function createRepoHandle(opts: RepoHandleOptions): RepoHandle {
  const { fs, repoId, gitdir } = opts;
  const key = `${repoId.kind}/${repoId.id}`;
  const quickFs = opts.quickFs ?? fs;
  const objects = createObjectStore({ fs, quickFs, gitdir, repoKey: key, caches: opts.caches, durable: opts.durable, packThreshold: opts.packThreshold, clock: opts.fileClock });
  const refs = createRefStore({
    fs: quickFs,
    gitdir,
    durable: opts.durable,
    staleLockMs: opts.staleLockMs,
    lockTimeoutMs: opts.lockTimeoutMs,
    sleep: opts.sleep,
    clock: opts.fileClock,
    ...(opts.lockHolder === undefined ? {} : { holder: opts.lockHolder }),
  });

  async function assertExists(): Promise<void> {
    if (await repoLayoutExists(fs, gitdir)) return;
    throw new WorkflowHostError(
      "repo_not_found",
      `repository ${describeValue(key)} does not exist at ${gitdir}; create it with initRepo`,
      { repoId, gitdir },
    );
  }

  async function readCommit(sha: Oid): Promise<ParsedCommit> {
    try {
      return await objects.readCommit(sha);
    } catch (error) {
      await assertExists();
      throw error;
    }
  }

  async function checkRefTarget(name: string, value: Oid): Promise<void> {
    try {
      // Cached after the first time, so a steady ref costs one small file read.
      await objects.readCommit(value);
    } catch (error) {
      await assertExists();
      // Where the object would be read from leads outside the data dir: nothing is known of it.
      if (error instanceof WorkflowHostError && error.code === "path_escapes_data_dir") throw error;
      // A commit that is there but unreadable (a torn pack) is the object's fault, not the ref's.
      if (error instanceof WorkflowHostError && error.code === "object_corrupt" && !isAbsentObject(error)) throw error;
      if (isAbsentObject(error) && error instanceof WorkflowHostError && typeof error.data.found === "string") {
        throw refCorrupt(name, value, `which names a ${error.data.found}, not a commit`, error, "point the ref at a commit");
      }
      throw refCorrupt(name, value, "but no commit with that id is in the repository (a dangling ref: the object is missing)", error, "restore the object, or point the ref at an existing commit", { missingObject: value });
    }
  }

  async function isMainLine(name: string): Promise<boolean> {
    if (name === DEFAULT_REF || name === "HEAD") return true;
    // HEAD only ever names a branch: another ref (the archive, a consumer's progress) is never
    // the main line, even when a damaged HEAD cannot say which branch is.
    if (!name.startsWith("refs/heads/")) return false;
    try {
      return (await refs.resolve("HEAD")).name === name;
    } catch {
      return true;
    }
  }

  async function assertUnborn(name: string): Promise<void> {
    await assertExists();
    if (!(await isMainLine(name)) || !(await objects.holdsHistory())) return;
    throw new WorkflowHostError(
      "ref_corrupt",
      `ref ${name} of ${key} does not exist, but the repository already holds commits; restore the ref (from packed-refs, a backup or a clone): a new root commit would orphan the history`,
      { ref: name, repoId, reason: "missing ref in a repository with history" },
    );
  }

  async function resolveRefNamed(refName: string): Promise<{ name: string; value: Oid | null }> {
    const resolved = await refs.resolve(refName);
    if (resolved.value === null) await assertUnborn(resolved.name);
    else await checkRefTarget(resolved.name, resolved.value);
    return resolved;
  }

  return {
    repoId,
    handler: opts.handler,
    key,
    gitdir,
    objects,
    refs,
    assertExists,
    assertUnborn,
    readCommit,
    resolveRefNamed,
    checkRefTarget,
    async resolveRef(refName) {
      return (await resolveRefNamed(refName)).value;
    },
    async readsAt(commitSha) {
      if (commitSha === null) return createCommittedReads(objects, null, null);
      if (!OID_PATTERN.test(commitSha)) {
        throw new WorkflowHostError("object_corrupt", `${describeValue(commitSha)} is not a 40-hex commit id`, {
          oid: commitSha,
        });
      }
      const commit = await readCommit(commitSha);
      return createCommittedReads(objects, commitSha, commit.tree);
    },
  };
}
