/**
 * Event-level subscription over the store's commit subscription: for each new commit, the event
 * files it added, parsed, in numeric seq order per run, and the events of a sealed log
 * (`events.jsonl`) it added that no event file held, so a run sealed in either form replays
 * every event once. Bad files and edits to existing events
 * (possible only through `git push`, which skips validatePush) are reported and skipped; so is a
 * sealed log that was a run's whole log (valid, no event files beside it) and that a later
 * commit modified or removed (`log_rewritten`: its events are not replayed a second time). A run
 * removed whole by a retention commit is not a rewrite when the archive ref holds each of its
 * removed event files unchanged (see run-archive.ts); any other removal is reported.
 */
import { WorkflowHostError } from "../errors.js";
import type { CommitChange, CommittedReads, Principal, RepoId, RepoStore, SubscribeFrom } from "../substrate/types.js";
import { checkCompactedLog } from "./compacted-log.js";
import { GITLINK_MODE, isRegularFileMode } from "../substrate/tree-object.js";
import { parseEvent } from "./events.js";
import { parseCompactedLogPath, parseEventPath, runEventsPrefix } from "./paths.js";
import { runsMovedToArchive } from "./run-archive.js";
import type { RunEvent } from "./types.js";

/** One event added to a run's log by a commit. */
export interface KindEvent {
  readonly runId: string;
  readonly seq: number;
  readonly commitSha: string;
  readonly event: RunEvent;
}

/** Something a subscriber was told about instead of an event. */
export type KindIssue =
  | { readonly type: "bad_event"; readonly runId: string; readonly seq: number; readonly path: string; readonly commitSha: string; readonly error: WorkflowHostError }
  | { readonly type: "event_rewritten"; readonly runId: string; readonly seq: number; readonly path: string; readonly commitSha: string; readonly status: "modified" | "deleted" }
  /**
   * A run's sealed log (`runs/<runId>/events.jsonl`) that was its whole log at the parent (valid,
   * no event files beside it) and that this commit modified or removed: a seal never changes.
   * Its events are not yielded again; the log now reads as the new tip says.
   */
  | { readonly type: "log_rewritten"; readonly runId: string; readonly path: string; readonly commitSha: string; readonly status: "modified" | "deleted" }
  | { readonly type: "ref_rewritten"; readonly from: string | null; readonly to: string };

/** Parses one event file; the default is {@link parseEvent} with the file's seq checked. */
export type EventValidator = (bytes: Uint8Array, where: { readonly path: string; readonly seq: number }) => RunEvent;

export interface SubscribeKindOptions {
  readonly from?: SubscribeFrom;
  /** Only these event types are yielded (default: all). */
  readonly kinds?: readonly string[];
  /** Only this run's events are yielded (default: every run). */
  readonly runId?: string;
  readonly signal?: AbortSignal;
  /** Told about bad events, edited events and sealed logs, and force pushes; default: ignored. */
  readonly onIssue?: (issue: KindIssue) => void;
  /** Called after every commit has been handled, with the commit (its events already yielded). */
  readonly onCommit?: (commit: CommitChange) => void;
  /**
   * Asked first for every commit, before any of its events is read: true skips the commit (no
   * event of it is read, parsed or yielded, no issue reported; `onCommit` is still called).
   * For a subscriber that was handed a commit's events another way. Default: nothing skipped.
   */
  readonly skipCommit?: (commit: CommitChange) => boolean;
}

export const defaultEventValidator: EventValidator = (bytes, where) => parseEvent(bytes, { path: where.path, expectedSeq: where.seq });

/**
 * Yields `{runId, seq, commitSha, event}` for every event blob added by each commit after
 * `from`, commit by commit, in numeric seq order within a commit (runs in path order).
 * Exactly-once and gap-free as the underlying {@link RepoStore.subscribe} is.
 * @param validator parses a blob into an event; throwing reports the file as a bad event
 */
export async function* subscribeKind(
  store: RepoStore,
  principal: Principal,
  repoId: RepoId,
  ref: string,
  validator: EventValidator = defaultEventValidator,
  options: SubscribeKindOptions = {},
): AsyncGenerator<KindEvent> {
  const kinds = options.kinds === undefined ? null : new Set(options.kinds);
  const onIssue = options.onIssue ?? (() => {});
  const subscribeOptions = {
    ...(options.from === undefined ? {} : { from: options.from }),
    ...(options.signal === undefined ? {} : { signal: options.signal }),
    onRewrite: (info: { from: string | null; to: string }) => onIssue({ type: "ref_rewritten", ...info }),
  };
  for await (const commit of store.subscribe(principal, repoId, ref, subscribeOptions)) {
    if (options.skipCommit?.(commit) === true) {
      options.onCommit?.(commit);
      continue;
    }
    const added: { runId: string; seq: number; path: string; oid: string }[] = [];
    // Runs this commit seals (events.jsonl written); event files it removes are judged with it.
    const sealing = new Map<string, { path: string; oid: string; removed: { seq: number; path: string }[] }>();
    // Event files removed outside a seal: a rewrite, unless the run was archived (checked below).
    const removedFiles: { runId: string; seq: number; path: string; status: "modified" | "deleted" }[] = [];
    // Sealed logs this commit modifies or removes: a rewrite when the seal was the run's whole log.
    const sealChanges: SealChange[] = [];
    for (const change of commit.changes) {
      const sealed = parseCompactedLogPath(change.path);
      if (sealed === null || (options.runId !== undefined && sealed.runId !== options.runId)) continue;
      if (change.status !== "deleted") sealing.set(sealed.runId, { path: change.path, oid: change.oid, removed: [] });
      if (change.status !== "added") sealChanges.push({ runId: sealed.runId, path: change.path, status: change.status });
    }
    if (sealChanges.length > 0) {
      const rewritten = await sealsRewritten(store, principal, repoId, commit, sealChanges);
      for (const seal of rewritten) {
        // Its events were yielded when the seal came: not again from the edited bytes.
        sealing.delete(seal.runId);
        onIssue({ type: "log_rewritten", runId: seal.runId, path: seal.path, commitSha: commit.commitSha, status: seal.status });
      }
    }
    for (const change of commit.changes) {
      const where = parseEventPath(change.path);
      if (where === null) continue;
      if (options.runId !== undefined && where.runId !== options.runId) continue;
      if (change.status === "added" && !isRegularFileMode(change.mode)) {
        // A symlink's target or a gitlink's commit id is no event file: reported, never read.
        const error = new WorkflowHostError("event_invalid", `${change.path} is a ${change.mode === GITLINK_MODE ? "gitlink (a submodule commit)" : "symlink"}, not an event file`, { path: change.path, seq: where.seq });
        onIssue({ type: "bad_event", runId: where.runId, seq: where.seq, path: change.path, commitSha: commit.commitSha, error });
      } else if (change.status === "added") {
        added.push({ ...where, path: change.path, oid: change.oid });
      } else if (change.status === "deleted" && sealing.has(where.runId)) {
        sealing.get(where.runId)?.removed.push({ seq: where.seq, path: change.path });
      } else {
        removedFiles.push({ ...where, path: change.path, status: change.status });
      }
    }
    if (removedFiles.length > 0) {
      const moved = await runsMovedToArchive(store, principal, repoId, commit.commitSha, commit.parentSha, removedFiles.filter((r) => r.status === "deleted").map((r) => r.runId));
      for (const removed of removedFiles) {
        if (moved.has(removed.runId)) continue;
        onIssue({ type: "event_rewritten", runId: removed.runId, seq: removed.seq, path: removed.path, commitSha: commit.commitSha, status: removed.status });
      }
    }
    added.sort((a, b) => (a.runId < b.runId ? -1 : a.runId > b.runId ? 1 : a.seq - b.seq));
    const reads = added.length > 0 || sealing.size > 0 ? await store.openCommittedReads(principal, repoId, commit.commitSha) : null;
    for (const item of added) {
      let event: RunEvent;
      try {
        event = validator(await (reads as CommittedReads).readBlobByOid(item.oid), item);
      } catch (error) {
        const reported =
          error instanceof WorkflowHostError
            ? error
            : new WorkflowHostError("event_invalid", `${item.path} could not be read as an event`, { path: item.path }, { cause: error });
        onIssue({ type: "bad_event", runId: item.runId, seq: item.seq, path: item.path, commitSha: commit.commitSha, error: reported });
        continue;
      }
      if (kinds !== null && !kinds.has(event.type)) continue;
      yield { runId: item.runId, seq: item.seq, commitSha: commit.commitSha, event };
    }
    for (const [runId, seal] of [...sealing].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      // Beside its event files the sealed log repeats them (they were yielded as they came); a
      // log that stands alone brings its events now, less those of the files it replaced,
      // which were yielded before. Removed files are a rewrite unless the seal is valid.
      const standsAlone = (await (reads as CommittedReads).listDir(runEventsPrefix(runId).slice(0, -1))).length === 0;
      const check = standsAlone ? checkCompactedLog(runId, await (reads as CommittedReads).readBlobByOid(seal.oid)) : null;
      const valid = check !== null && check.problem === null;
      for (const removed of seal.removed) {
        if (!valid) onIssue({ type: "event_rewritten", runId, seq: removed.seq, path: removed.path, commitSha: commit.commitSha, status: "deleted" });
      }
      if (!valid) continue;
      const before = new Set(seal.removed.map((r) => r.seq));
      for (const event of check.events) {
        if (before.has(event.seq) || (kinds !== null && !kinds.has(event.type))) continue;
        yield { runId, seq: event.seq, commitSha: commit.commitSha, event };
      }
    }
    options.onCommit?.(commit);
  }
}

/** A sealed log (`runs/<runId>/events.jsonl`) a commit modified or removed. */
interface SealChange {
  readonly runId: string;
  readonly path: string;
  readonly status: "modified" | "deleted";
}

/**
 * Of `changes` (sealed logs a commit modified or removed), those that were their run's whole log
 * at the parent: the seal valid and no event file beside it (a seal beside event files repeats
 * them, and an invalid one was reported when it came, so changing either is no rewrite). A
 * removal that moved the run to the archive ref (retention) is none either. The same rule the
 * scheduler's tail applies (`sealRewrittenProblem`). A push is the only way here: the store's
 * own commits never change a seal.
 */
async function sealsRewritten(
  store: RepoStore,
  principal: Principal,
  repoId: RepoId,
  commit: CommitChange,
  changes: readonly SealChange[],
): Promise<SealChange[]> {
  if (commit.parentSha === null) return [];
  const parent = await store.openCommittedReads(principal, repoId, commit.parentSha);
  const alone: SealChange[] = [];
  for (const change of changes) {
    if ((await parent.listDir(runEventsPrefix(change.runId).slice(0, -1))).length > 0) continue;
    const bytes = await parent.readBlob(change.path);
    if (bytes === null || checkCompactedLog(change.runId, bytes).problem !== null) continue;
    alone.push(change);
  }
  const removed = alone.filter((change) => change.status === "deleted").map((change) => change.runId);
  const moved = removed.length === 0 ? new Set<string>() : await runsMovedToArchive(store, principal, repoId, commit.commitSha, commit.parentSha, removed);
  return alone.filter((change) => !(change.status === "deleted" && moved.has(change.runId)));
}
