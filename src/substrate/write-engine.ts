/**
 * The one commit loop behind every store write. One attempt:
 *
 *   resolve tip → pin reads at the tip → run the caller's plan (merge / computeDelta)
 *   → apply its edits to the tip's tree → unchanged tree: commit nothing
 *   → kind handler's validatePush (prior / prospective reads, O(changed) inputs)
 *   → lock the ref, compare with the tip, write the objects, move the ref.
 *
 * The first attempt is optimistic: the plan runs without holding the ref lock, and the
 * compare-and-swap fails if another process (or git) moved the ref meanwhile; its objects are
 * written to temp files while the lock is taken, and put in place once the compare succeeded.
 * A lost race is retried under the ref lock: take `<ref>.lock`, read the tip under it, re-run the plan,
 * commit, release — so a writer that lost once cannot lose again to the same kind of race and
 * two busy processes cannot starve each other. Room for other writers (`roomMs`): a lost race
 * waits a jittered backoff before the locked retry, and once a commit by someone else is seen
 * on a ref, this process spaces its commits to that ref for a while, so an external `git push`
 * (read tip, send objects, compare-and-swap) is not beaten to the ref every time. Under the ref
 * lock `fence` may veto the write (a host that lost its lock) twice: before the objects are
 * written (no work for a writer already known to be fenced off), and again right before the
 * rename, after every awaited step (a writer that stalled in between and lost its lock meanwhile
 * does not move the ref when it runs again); not again once `beforeRefMove` accepted the move
 * (the remote's compare-and-swap fences cluster mode, and the local ref follows the remote).
 * Either way the plan always sees the state it
 * extends, no commit is lost and history stays linear (each commit's only parent is the tip it
 * was computed on). Callers run this inside the repository's in-process queue: one writer per
 * repo per process.
 */
import type { Clock, MonotonicNow } from "../time/clock.js";
import { createTimeSlicer } from "../time/time-slicer.js";
import { WorkflowHostError, describeValue } from "../errors.js";
import { createCommittedReads, type ObjectSource } from "./committed-reads.js";
import { holdMerges } from "./pack-merge-thread.js";
import { encodeCommit, type GitObject, hashObject, type Identity } from "./git-object.js";
import { type BigTreeBeside, decodeTree, EMPTY_TREE_OID, findEntry, type ParsedTree } from "./tree-object.js";
import type { Sleep } from "./ref-store.js";
import type { RepoHandle } from "./repo-handle.js";
import { parseRepoPath } from "./repo-path.js";
import { applyTreeEdits, type TreeEditResult } from "./tree-edit.js";
import { planAppends, type AppendPlan, type AppendSource } from "./folder-append.js";
import { PackedObjects } from "./packed-objects.js";
import { PackPrefix } from "./pack-file.js";
import type { AppendedFolder, CommittedReads, FolderAppend, Oid, PathChange, RefMove, WriteResult } from "./types.js";

/** Blob contents by repo path: strings are stored as UTF-8. */
export type FileMap =
  | ReadonlyMap<string, Uint8Array | string>
  | Readonly<Record<string, Uint8Array | string>>;

/** What a plan asks for, applied in order: clear a folder, delete paths, put files. */
export interface PlannedWrite<R> {
  /** Folder (segments, [] = root) whose content is replaced by the puts inside it. */
  readonly clear?: readonly string[];
  readonly deletes?: readonly string[];
  readonly puts?: FileMap;
  /** Files added to subfolders of existing folders (see TreeDelta.appends). */
  readonly appends?: readonly FolderAppend[];
  readonly result?: R;
  /** Awaited between units of the commit's work (see WriteTreeDeltaOptions.pause). */
  readonly pause?: () => Promise<void>;
  /** The kind handler's validatePush is not run (see WriteTreeDeltaOptions.prevalidated). */
  readonly prevalidated?: boolean;
}

/** Computes a write against the tip; null means "nothing to do". May run more than once. */
export type Planner<R> = (parentSha: Oid | null, reads: CommittedReads) => Promise<PlannedWrite<R> | null>;

export interface WriteEngineDeps {
  readonly repo: RepoHandle;
  readonly identity: Identity;
  readonly clock: Clock;
  /** Monotonic time (ms) the spacing of commits is measured on (see the module comment). */
  readonly monotonicNow: MonotonicNow;
  /** Attempts before `ref_conflict` (a locked attempt only fails when its lock is stolen). */
  readonly maxAttempts: number;
  readonly sleep: Sleep;
  /** Called after the ref moved, to wake this process's subscribers at once. */
  readonly onCommitted: (repo: RepoHandle) => void;
  /**
   * Called under the ref lock before the commit's objects are written and again, synchronously,
   * right before the ref's rename; throwing aborts the write (the ref does not move).
   */
  readonly fence?: () => void;
  /**
   * Called under the ref lock once the commit's objects are in place and right before the ref
   * moves (after `fence`); throwing aborts the write (the ref does not move, the objects stay
   * unreferenced). See RepoStoreOptions.beforeRefMove.
   */
  readonly beforeRefMove?: (move: RefMove) => Promise<void>;
  /** Room left to other writers (ms, 0 = none); see the module comment. */
  readonly roomMs?: number;
}

/** How long after a commit by someone else this process keeps spacing its commits (ms). */
const SHARED_FOR_MS = 5_000;

/**
 * Per ref of a repository: the tip this process last wrote there, and whether someone else
 * writes it too. Per ref, not per repository: this process's own commits to another ref (a
 * dispatch consumer's checkpoints beside fire commits on main) are not someone else's.
 */
interface Sharing {
  ourTip: Oid | null | undefined;
  /** Monotonic time (ms, on `WriteEngineDeps.monotonicNow`) until which commits are spaced; 0 when not shared. */
  sharedUntilMs: number;
  /** Monotonic time (ms) of this process's last commit to the ref. */
  lastCommitMs: number;
}

const sharing = new WeakMap<RepoHandle, Map<string, Sharing>>();

/** @param refName the full ref name the write resolved to */
function sharingOf(repo: RepoHandle, refName: string): Sharing {
  let refs = sharing.get(repo);
  if (refs === undefined) {
    refs = new Map();
    sharing.set(repo, refs);
  }
  let s = refs.get(refName);
  if (s === undefined) {
    s = { ourTip: undefined, sharedUntilMs: 0, lastCommitMs: Number.NEGATIVE_INFINITY };
    refs.set(refName, s);
  }
  return s;
}

/** A delay in [ms/2, 3ms/2): spreads retries of several writers apart. */
function jitter(ms: number): number {
  return ms * (0.5 + Math.random());
}

/**
 * Entries of a {@link FileMap}, each content checked to be bytes or a string.
 * @throws content_invalid for any other content (null, a number, an object), before anything is written
 */
export function fileEntries(files: FileMap | undefined): [string, Uint8Array | string][] {
  if (files === undefined) return [];
  const entries = files instanceof Map ? [...(files as ReadonlyMap<string, Uint8Array | string>).entries()] : Object.entries(files as Readonly<Record<string, Uint8Array | string>>);
  for (const [path, content] of entries) {
    if (typeof content !== "string" && !(content instanceof Uint8Array)) {
      throw new WorkflowHostError("content_invalid", `the content of ${describeValue(path)} is ${describeValue(content)}; allowed: a Uint8Array (bytes) or a string (written as UTF-8)`, { path });
    }
  }
  return entries;
}

/** The distinct parent folders of `changes`, each ending in "/" ("" for root-level files). */
export function changedPrefixes(changes: readonly PathChange[]): string[] {
  const set = new Set<string>();
  for (const change of changes) set.add(change.path.slice(0, change.path.lastIndexOf("/") + 1));
  return [...set].sort();
}

function toBytes(content: Uint8Array | string): Uint8Array {
  return typeof content === "string" ? Buffer.from(content, "utf8") : content;
}

/** A computed attempt: nothing to commit, or a commit with every object it needs. */
type Prepared<R> =
  | { readonly kind: "noop"; readonly result: R | undefined }
  | {
      readonly kind: "commit";
      readonly commit: GitObject;
      readonly objects: readonly GitObject[];
      readonly trees: Iterable<ParsedTree>;
      readonly result: R | undefined;
      /** The plan's time slicer, also awaited while the pack is encoded. */
      readonly pause?: (() => Promise<void>) | undefined;
      /**
       * The new root's blob changes against the tip's, when they are exactly its diff
       * (TreeEditResult.exact), listed when called (a fire commit's are mostly never asked for).
       */
      readonly changes: (() => readonly PathChange[]) | null;
      /** See WriteResult.folderOid. */
      readonly folderOid: (path: string) => Oid | null | undefined;
      /** See WriteResult.appended. */
      readonly appended: readonly (AppendedFolder | undefined)[] | undefined;
      /** See TreeEditResult.spliced. */
      readonly novel: ReadonlySet<Oid>;
      /** The appends' objects, already laid out as pack entries (see planWriteAppends). */
      readonly packed: PackedObjects | undefined;
      /** The appends' objects built as objects (AppendPlan.objects): their trees are kept once committed. */
      readonly built: readonly GitObject[];
    };

/**
 * The write's appends (PlannedWrite.appends), built from the stored folders' bytes (no folder is
 * parsed: an append to a run of 200,000 events edits its `events/` folder's bytes, where the
 * generic edit decodes the whole folder in one step); what the direct build declines becomes
 * plain puts, which are added to `blobs` and `puts` here. A prevalidated write's built runs
 * have their new objects written straight into `packed` as pack entries (packed-objects.ts): no
 * object per file or folder, no second copy of their bytes when the pack is encoded. Any other
 * write gets them as objects (AppendPlan.objects), which its validatePush reads.
 * @returns the folder puts and objects built, or undefined when there are no appends
 */
async function planWriteAppends<R>(repo: RepoHandle, planned: PlannedWrite<R>, baseTree: Oid | null, blobs: Map<Oid, GitObject>, puts: { path: string[]; oid: Oid }[], packed: PackedObjects, pause: (() => Promise<void>) | undefined): Promise<AppendPlan | undefined> {
  const appends = planned.appends;
  if (appends === undefined || appends.length === 0) return undefined;
  assertFoldersOnce(appends);
  const plan = await planAppends(appendSourceOf(repo.objects), baseTree, appends, pause, planned.prevalidated === true ? packed : undefined);
  for (const [path, content] of plan.puts) {
    const blob = hashObject("blob", content);
    blobs.set(blob.oid, blob);
    puts.push({ path: parseRepoPath(path), oid: blob.oid });
  }
  return plan;
}

/**
 * Refuses appends that name one folder twice (TreeDelta.appends: each folder once): built from
 * the stored folder, the second would replace the first and drop its files from the commit.
 * Folders given in order (a fire commit's, by run id) cost one comparison each.
 * @throws `path_violation` (data `{path}`: the folder named twice), before anything is read
 */
function assertFoldersOnce(appends: readonly FolderAppend[]): void {
  let ordered = true;
  for (let i = 1; i < appends.length && ordered; i++) ordered = (appends[i - 1] as FolderAppend).folder < (appends[i] as FolderAppend).folder;
  if (ordered) return;
  const seen = new Set<string>();
  for (const { folder } of appends) {
    if (seen.has(folder)) throw new WorkflowHostError("path_violation", `folder ${describeValue(folder)} is appended to twice in one write; allowed: each folder once`, { path: folder });
    seen.add(folder);
  }
}

/**
 * One {@link AppendSource} per object store, kept: a fire commit's planAppends then calls the
 * same two functions every commit, so the code V8 optimised for the first commit's calls still
 * holds for the next (a fresh pair per commit was a new call target each time, and the optimised
 * code was thrown away and compiled again).
 */
const appendSources = new WeakMap<RepoHandle["objects"], AppendSource>();

function appendSourceOf(store: RepoHandle["objects"]): AppendSource {
  let source = appendSources.get(store);
  if (source === undefined) {
    source = { readTree: (oid) => store.readTree(oid), readRaw: (oid) => store.readInMemory(oid) ?? store.read(oid) };
    appendSources.set(store, source);
  }
  return source;
}

async function prepare<R>(deps: WriteEngineDeps, name: string, tip: Oid | null, message: string, plan: Planner<R>): Promise<Prepared<R>> {
  const { repo } = deps;
  const reads = await repo.readsAt(tip);
  const planned = await plan(tip, reads);
  if (planned === null) return { kind: "noop", result: undefined };

  // A validated write with appends is sliced even when its caller gave no slicer: the folder it
  // appends to may be a long run's `events/` of 200,000 entries (megabytes to read, walk, hash
  // and pack), which no step may do in one piece.
  const pause = planned.pause ?? (planned.prevalidated !== true && (planned.appends?.length ?? 0) > 0 ? createTimeSlicer().pause : undefined);
  const blobs = new Map<Oid, GitObject>();
  const puts: { path: string[]; oid: Oid }[] = [];
  for (const [path, content] of fileEntries(planned.puts)) {
    if (pause !== undefined && puts.length % 64 === 63) await pause();
    const blob = hashObject("blob", toBytes(content));
    blobs.set(blob.oid, blob);
    puts.push({ path: parseRepoPath(path), oid: blob.oid });
  }
  const deletes = (planned.deletes ?? []).map((path) => parseRepoPath(path));
  let appended: AppendPlan | undefined;
  // Sized for a fire commit's three objects per run, about 500 bytes in all (it grows).
  const runs = planned.appends?.length ?? 0;
  const packed = new PackedObjects(3 * runs + 16, 512 * runs);
  const baseTree = tip === null ? null : (await repo.readCommit(tip)).tree;
  // The folders on edited paths belong to runs spread over the deployment: each is read on its
  // own (a point read, not the 1 MiB pack window around it). A prevalidated write (a fire commit)
  // reads each of them once, for the edit, and nothing reads those versions again (its new ones
  // are remembered): they are not cached either. Other writes are validated, which reads them again.
  const store = repo.objects;
  const cacheOld = planned.prevalidated !== true;
  const readOld = (oid: Oid): Promise<ParsedTree> => store.readTreeForEdit(oid, cacheOld);
  appended = await planWriteAppends(repo, planned, baseTree, blobs, puts, packed, pause);
  const deferredChanges = appended?.deferredChanges;
  const beside = appended !== undefined && planned.clear === undefined ? prefixBeside(packed, puts, deletes, appended) : undefined;
  const edit = await applyTreeEdits(readOld, baseTree, {
    ...(planned.clear === undefined ? {} : { clear: planned.clear }),
    deletes,
    puts: appended === undefined ? puts : [...puts, ...appended.folders],
    ...(deferredChanges === undefined ? {} : { deferredChanges }),
    ...(beside === undefined ? {} : { beside }),
  }, pause);
  if (edit.rootOid === (baseTree ?? EMPTY_TREE_OID)) return { kind: "noop", result: planned.result };

  if (repo.handler.validatePush !== undefined && planned.prevalidated !== true) {
    // The appends' built objects (new files, folders) are not stored yet either.
    const built = new Map<Oid, GitObject>();
    for (const object of appended?.objects ?? []) built.set(object.oid, object);
    const source: ObjectSource = {
      readTree: (oid) => {
        const pending = edit.pending.get(oid);
        if (pending !== undefined) return Promise.resolve(pending);
        const object = built.get(oid);
        return object !== undefined && object.type === "tree" ? Promise.resolve(decodeTree(oid, object.content)) : repo.objects.readTree(oid);
      },
      readBlob: (oid) => {
        const pending = blobs.get(oid) ?? built.get(oid);
        return pending !== undefined && pending.type === "blob" ? Promise.resolve(pending.content.slice()) : repo.objects.readBlob(oid);
      },
    };
    await repo.handler.validatePush({
      repoId: repo.repoId,
      ref: name,
      prior: tip === null ? null : reads,
      prospective: createCommittedReads(source, null, edit.rootOid),
      changes: edit.changes,
      changedPathPrefixes: changedPrefixes(edit.changes),
      readRef: async (other) => {
        const sha = await repo.resolveRef(other);
        return sha === null ? null : repo.readsAt(sha);
      },
      ...(pause === undefined ? {} : { pause }),
    });
  }

  const commit = encodeCommit({
    tree: edit.rootOid,
    parents: tip === null ? [] : [tip],
    author: deps.identity,
    committer: deps.identity,
    timestampSec: Math.floor(deps.clock().getTime() / 1000),
    message,
  });
  const objects: GitObject[] = [];
  const added = new Set<Oid>();
  // The put blobs that changed something (none in a fire commit: its files are built into `packed`).
  if (blobs.size > 0) for (const change of edit.changes) {
    const blob = blobs.get(change.oid);
    if (change.status !== "deleted" && blob !== undefined && !added.has(blob.oid)) {
      added.add(blob.oid);
      objects.push(blob);
    }
  }
  // Nothing refers to these objects until the ref moves, so a crash mid-way leaves only
  // unreferenced ones (the object store writes the commit last).
  // One at a time: a commit can hold hundreds of thousands of new trees, more than a call
  // takes as spread arguments.
  // An object listed twice (two runs can get the same bytes) is stored once by the pack writer.
  for (const object of appended?.objects ?? []) objects.push(object);
  for (const tree of edit.newTrees) objects.push(tree);
  objects.push(commit);
  // The appended folders by path, made on the first lookup by path (a fire commit's committer
  // takes them by position, WriteResult.appended, and never asks).
  let appendedByPath: Map<string, Oid> | undefined;
  const appendedOid = (path: string): Oid | undefined => {
    if (appended === undefined) return undefined;
    if (appendedByPath === undefined) {
      appendedByPath = new Map();
      const list = planned.appends ?? [];
      for (let i = 0; i < list.length; i++) {
        const oids = appended.built[i];
        const append = list[i] as FolderAppend;
        if (oids === undefined) continue;
        appendedByPath.set(append.folder, oids.folder);
        appendedByPath.set(`${append.folder}/${append.sub}`, oids.sub);
      }
    }
    return appendedByPath.get(path);
  };
  const folderOid = (path: string): Oid | null | undefined => {
    const known = appendedOid(path) ?? edit.folders.get(path);
    if (known !== undefined) return known;
    // A folder the edit did not descend into, inside one it rewrote: one lookup there.
    const slash = path.lastIndexOf("/");
    const parentOid = slash < 0 ? edit.rootOid : edit.folders.get(path.slice(0, slash));
    const parent = parentOid === undefined || parentOid === null ? undefined : edit.pending.get(parentOid);
    if (parent === undefined) return parentOid === null ? null : undefined;
    const entry = findEntry(parent, path.slice(slash + 1));
    return entry === undefined || entry.type !== "tree" ? null : entry.oid;
  };
  // An appended folder is an earlier version of itself with entries added (never one already
  // there): new by construction, as the edit's spliced trees are (TreeEditResult.spliced). Its
  // new files are not looked for in the packs either (a fire commit's events: one look in every
  // pack's index per event, for a blob that is new unless another run's event had the very same
  // bytes, fire time included); such a copy only costs its bytes until the packs are merged, and
  // git reads an object packed twice as it reads one.
  let novel: ReadonlySet<Oid> = edit.spliced;
  if (appended !== undefined && appended.objects.length > 0) {
    const all = new Set(edit.spliced);
    for (const object of appended.objects) all.add(object.oid);
    novel = all;
  }
  return { kind: "commit", commit, objects, trees: edit.pending.values(), result: planned.result, pause, changes: edit.exact ? frozenChanges(edit) : null, folderOid, appended: appended?.built, novel, packed: packed.count > 0 ? packed : undefined, built: appended?.objects ?? [] };
}

/**
 * For a write whose new objects are all built into `packed` (a fire commit) and whose edit puts
 * only the built folders: the pack's trailer hash is started (pack-file.ts PackPrefix) while
 * the big folder above them (`runs/`) is hashed on the hasher thread (tree-object.ts
 * BigTreeBeside; design notes §81). The pack will hold `packed`'s entries, one new tree per folder
 * on the put paths (the root included) and the commit; the new folders come parents after
 * children, so the big one is the first after `packed`. When the pack turns out otherwise (a
 * folder that did not change, an object already stored), the encoder does not use the prefix.
 * Undefined when the write is not of that shape.
 */
function prefixBeside(packed: PackedObjects, puts: readonly { path: readonly string[] }[], deletes: readonly (readonly string[])[], appended: AppendPlan): BigTreeBeside | undefined {
  if (packed.count === 0 || puts.length > 0 || deletes.length > 0 || appended.objects.length > 0) return undefined;
  const folders = new Set<string>();
  for (const { path } of appended.folders) {
    let prefix = "";
    folders.add(prefix);
    for (let i = 0; i < path.length - 1; i++) {
      prefix += `${path[i] as string}/`;
      folders.add(prefix);
    }
  }
  const count = packed.count + folders.size + 1;
  return {
    run(content) {
      packed.prefix ??= new PackPrefix(packed, count, content);
    },
  };
}

/**
 * The edit's changes as a frozen copy, made when called; holds only the list (or what lists it),
 * not the edit's trees.
 */
function frozenChanges(edit: TreeEditResult): () => readonly PathChange[] {
  const later = edit.changesLater;
  if (later !== undefined) return () => Object.freeze(later().slice());
  const changes = edit.changes;
  return () => Object.freeze(changes.slice());
}

/** Own commits' changes kept per repository for its subscribers (see {@link ownCommitChanges}). */
const OWN_COMMITS_KEPT = 4;
const ownCommits = new WeakMap<RepoHandle, Map<Oid, { readonly parentSha: Oid | null; readonly changes: () => readonly PathChange[] }>>();

function rememberOwnCommit(repo: RepoHandle, sha: Oid, parentSha: Oid | null, list: (() => readonly PathChange[]) | null): void {
  if (list === null) return;
  let listed: readonly PathChange[] | undefined;
  // Listed once, on the first subscriber's ask.
  const changes = (): readonly PathChange[] => (listed ??= list());
  let kept = ownCommits.get(repo);
  if (kept === undefined) {
    kept = new Map();
    ownCommits.set(repo, kept);
  }
  kept.set(sha, { parentSha, changes });
  if (kept.size > OWN_COMMITS_KEPT) kept.delete(kept.keys().next().value as Oid);
}

/**
 * The blob changes of a recent commit this process made on `repo` against its parent `parentSha`
 * (what `diffTrees` of the two trees returns: the write's own edit, kept for the last few
 * commits, frozen and shared), or undefined when not known: a subscriber then diffs.
 */
export function ownCommitChanges(repo: RepoHandle, sha: Oid, parentSha: Oid | null): readonly PathChange[] | undefined {
  return ownCommitChangesLater(repo, sha, parentSha)?.();
}

/**
 * {@link ownCommitChanges}, listed when the returned function is first called: a subscriber
 * that may never look at them (the scheduler's tail skips a fire commit it adopted whole) does
 * not pay for listing a big commit's paths.
 */
export function ownCommitChangesLater(repo: RepoHandle, sha: Oid, parentSha: Oid | null): (() => readonly PathChange[]) | undefined {
  const kept = ownCommits.get(repo)?.get(sha);
  return kept !== undefined && kept.parentSha === parentSha ? kept.changes : undefined;
}

/**
 * Runs `plan` and commits its result on `refName` (a full ref name or `HEAD`).
 * @returns `committed: false` (ref unmoved) when the plan returns null or leaves the tree as
 *   it was; otherwise the new commit, whose only parent is `parentSha`.
 * @throws `ref_conflict` after `maxAttempts` failed attempts; `ref_corrupt`, `ref_locked`,
 *   `path_violation`, `object_corrupt`; anything the plan or `validatePush` throws (the ref
 *   does not move).
 */
export async function commitWithRetry<R>(
  deps: WriteEngineDeps,
  refName: string,
  message: string,
  plan: Planner<R>,
): Promise<WriteResult<R>> {
  // While it is in flight, the merge thread gives way (see pack-merge-thread.ts).
  const release = holdMerges();
  try {
    return await commitHeld(deps, refName, message, plan);
  } finally {
    release();
  }
}

async function commitHeld<R>(
  deps: WriteEngineDeps,
  refName: string,
  message: string,
  plan: Planner<R>,
): Promise<WriteResult<R>> {
  const { repo } = deps;
  let lastSeen: Oid | null = null;
  const committed = (prepared: Prepared<R> & { kind: "commit" }, name: string, tip: Oid | null, attempt: number): WriteResult<R> => {
    const shared = sharingOf(repo, name);
    shared.ourTip = prepared.commit.oid;
    shared.lastCommitMs = deps.monotonicNow();
    repo.objects.rememberTrees(prepared.trees);
    // The folders the appends built, as bytes: the next append to the same run reads them.
    repo.objects.rememberBuiltTrees(prepared.built);
    deps.onCommitted(repo);
    // Pack merging, if due, runs in the background, outside the ref lock and this write.
    repo.objects.maintain();
    return { committed: true, commitSha: prepared.commit.oid, parentSha: tip, attempts: attempt, result: prepared.result, folderOid: prepared.folderOid, ...(prepared.appended === undefined ? {} : { appended: prepared.appended }) };
  };
  const noop = (tip: Oid | null, attempt: number, result: R | undefined): WriteResult<R> => ({
    committed: false,
    commitSha: tip,
    parentSha: tip,
    attempts: attempt,
    result,
  });

  const roomMs = deps.roomMs ?? 0;
  const fence = deps.fence ?? (() => undefined);
  const beforeRefMove = deps.beforeRefMove;
  // The check right before the rename. With `beforeRefMove` (cluster mode) the move was already
  // accepted by the remote's compare-and-swap, the fence of that mode: the local ref follows it.
  const lastFence = beforeRefMove === undefined ? fence : undefined;
  for (let attempt = 1; attempt <= deps.maxAttempts; attempt++) {
    if (attempt === 1) {
      let { name, value: tip } = await repo.resolveRefNamed(refName);
      const shared = sharingOf(repo, name);
      if (roomMs > 0) {
        const nowMs = deps.monotonicNow();
        // The ref moved since our last commit, and not by us: another writer is active.
        if (shared.ourTip !== undefined && tip !== shared.ourTip) shared.sharedUntilMs = nowMs + SHARED_FOR_MS;
        const waitMs = nowMs < shared.sharedUntilMs ? shared.lastCommitMs + jitter(roomMs) - nowMs : 0;
        if (waitMs > 0) {
          await deps.sleep(waitMs);
          ({ name, value: tip } = await repo.resolveRefNamed(refName));
        }
      }
      const prepared = await prepare(deps, name, tip, message, plan);
      if (prepared.kind === "noop") return noop(tip, attempt, prepared.result);
      // Before the ref moves: a subscriber woken by the ref watcher may look for it at once.
      rememberOwnCommit(repo, prepared.commit.oid, tip, prepared.changes);
      // The pack is written to temp files while the ref lock is taken and compared; it is put
      // in place only once the compare succeeded, and removed unseen when the race was lost.
      const staged = repo.objects.stageObjects(prepared.objects, prepared.pause, prepared.novel, prepared.packed);
      let published = false;
      let outcome: Awaited<ReturnType<typeof repo.refs.compareAndSwap>>;
      try {
        outcome = await repo.refs.compareAndSwap(name, tip, prepared.commit.oid, async () => {
          fence();
          await staged.publish();
          published = true;
          await beforeRefMove?.({ repoId: repo.repoId, ref: name, from: tip, to: prepared.commit.oid });
        }, lastFence);
      } finally {
        if (!published) await staged.discard();
      }
      if (outcome.ok) return committed(prepared, name, tip, attempt);
      lastSeen = outcome.current;
      // Lost to another process: leave it room instead of taking the ref lock at once.
      if (roomMs > 0) {
        shared.sharedUntilMs = deps.monotonicNow() + SHARED_FOR_MS;
        await deps.sleep(jitter(roomMs));
      }
      continue;
    }
    const { name } = await repo.refs.resolve(refName);
    let tip: Oid | null = null;
    let prepared: Prepared<R> | undefined;
    const outcome = await repo.refs.lockedUpdate(name, async (current) => {
      if (current === null) await repo.assertUnborn(name);
      else await repo.checkRefTarget(name, current);
      tip = current;
      const ready = await prepare(deps, name, current, message, plan);
      prepared = ready;
      if (ready.kind === "noop") return null;
      rememberOwnCommit(repo, ready.commit.oid, current, ready.changes);
      return {
        next: ready.commit.oid,
        beforeSwap: async () => {
          fence();
          await repo.objects.stageObjects(ready.objects, undefined, ready.novel, ready.packed).publish();
          await beforeRefMove?.({ repoId: repo.repoId, ref: name, from: current, to: ready.commit.oid });
        },
        ...(lastFence === undefined ? {} : { fence: lastFence }),
      };
    });
    const done = prepared as Prepared<R> | undefined;
    if (outcome === "swapped" && done?.kind === "commit") return committed(done, name, tip, attempt);
    if (outcome === "skipped") return noop(tip, attempt, done?.result);
    // Our lock was broken as stale while we held it (a very slow attempt): back off, retry.
    lastSeen = tip;
    await deps.sleep(Math.random() * Math.min(2 ** attempt, 50));
  }
  throw new WorkflowHostError(
    "ref_conflict",
    `ref ${refName} of ${repo.key} kept moving: ${deps.maxAttempts} write attempts lost`,
    { repoId: repo.repoId, ref: refName, attempts: deps.maxAttempts, lastSeen },
  );
}
