/**
 * The repo store's edges to the OS: this process as a ref-lock holder, and wrappers that turn
 * file-system failures of reads and calls into typed `io_failed` errors.
 */
import { hostname as osHostname } from "node:os";
import { WorkflowHostError } from "../errors.js";
import { asIoFailure, errnoCode } from "./fs-adapter.js";
import type { LockHolder } from "./ref-store.js";
import type { CommittedReads, DirEntry, Principal, RepoId, RepoStore } from "./types.js";

/** This process as a ref-lock holder; `isAlive` asks the OS (ESRCH: no such process). */
export function thisProcessAsHolder(): LockHolder {
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
export function describeTarget(repoId: unknown): string {
  if (typeof repoId === "object" && repoId !== null && "kind" in repoId && "id" in repoId) {
    return `${String((repoId as RepoId).kind)}/${String((repoId as RepoId).id)}`;
  }
  return String(repoId);
}

/** `reads` whose file-system failures are `io_failed` (see {@link asIoFailure}). */
export function typedReads(reads: CommittedReads, where: string): CommittedReads {
  // What was being done is spelled out only on failure: a recovery makes a million calls.
  const guard = <T>(run: () => Promise<T>, doing: () => string): Promise<T> => {
    const fail = (error: unknown): never => {
      throw asIoFailure(error, `${doing()} in ${where}`);
    };
    let call: Promise<T>;
    try {
      call = run();
    } catch (error) {
      call = Promise.reject(error);
    }
    return call.catch(fail);
  };
  return {
    commitSha: reads.commitSha,
    listDir: (path) => guard(() => reads.listDir(path), () => `listing ${path}`),
    readBlob: (path) => guard(() => reads.readBlob(path), () => `reading ${path}`),
    readBlobByOid: (oid) => guard(() => reads.readBlobByOid(oid), () => `reading blob ${oid}`),
    ...(reads.readBlobsByOid === undefined
      ? {}
      : { readBlobsByOid: (oids: readonly string[]) => guard(() => (reads.readBlobsByOid as (o: readonly string[]) => Promise<Uint8Array[]>)(oids), () => `reading ${oids.length} blobs`) }),
    treeOid: (path) => guard(() => reads.treeOid(path), () => `reading ${path}`),
    ...(reads.listTree === undefined ? {} : { listTree: (oid: string) => guard(() => (reads.listTree as (o: string) => Promise<readonly DirEntry[]>)(oid), () => `listing tree ${oid}`) }),
    ...(reads.pointOid === undefined ? {} : { pointOid: (path: string) => guard(() => (reads.pointOid as (p: string) => Promise<string | null>)(path), () => `reading ${path}`) }),
    ...(reads.readTreeBytes === undefined
      ? {}
      : { readTreeBytes: (oid: string) => guard(() => (reads.readTreeBytes as (o: string) => Promise<Uint8Array | null>)(oid), () => `reading tree ${oid}`) }),
    ...(reads.scan === undefined ? {} : { scan: () => typedReads((reads.scan as () => CommittedReads)(), where) }),
    ...(reads.stored === undefined ? {} : { stored: (oid: string) => storedGuarded(reads.stored as (o: string) => boolean | Promise<boolean>, oid, guard) }),
    ...(reads.packedAll === undefined ? {} : { packedAll: reads.packedAll.bind(reads) }),
    ...(reads.storeMark === undefined ? {} : { storeMark: () => guard(() => (reads.storeMark as () => Promise<string | null>)(), () => "listing the object folders") }),
  };
}

/** {@link CommittedReads.stored} through `guard` when it answers with a promise (a known pack's answer stays synchronous). */
function storedGuarded(stored: (oid: string) => boolean | Promise<boolean>, oid: string, guard: <T>(run: () => Promise<T>, doing: () => string) => Promise<T>): boolean | Promise<boolean> {
  let answer: boolean | Promise<boolean>;
  try {
    answer = stored(oid);
  } catch (error) {
    answer = Promise.reject(error);
  }
  return answer === true || answer === false ? answer : guard(() => answer as Promise<boolean>, () => `looking for object ${oid}`);
}

/**
 * The store with every file-system failure (ENOSPC, EROFS, EIO, EMFILE, …) turned into
 * `io_failed` carrying the errno, so callers branch on one code and the CLI prints it typed.
 */
export function withTypedIoFailures(store: RepoStore): RepoStore {
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
    ...(store.isAncestor === undefined
      ? {}
      : { isAncestor: (p: Principal, repoId: RepoId, a: string, d: string) => guard(`walking the history of ${describeTarget(repoId)}`, () => (store.isAncestor as NonNullable<RepoStore["isAncestor"]>)(p, repoId, a, d)) }),
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
    escapingLinks: (p, repoId) => guard(`looking for links in ${describeTarget(repoId)}`, () => (store.escapingLinks as NonNullable<RepoStore["escapingLinks"]>)(p, repoId)),
    compactPacks: (p, repoId) => guard(`compacting the packs of ${describeTarget(repoId)}`, () => (store.compactPacks as NonNullable<RepoStore["compactPacks"]>)(p, repoId)),
    poke: (repoId) => store.poke(repoId),
    close: () => store.close(),
  };
}
