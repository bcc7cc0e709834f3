/**
 * The `workflow-run` kind handler: what a valid commit to a deployment repo is (docs/design.md §2–§4).
 * The store calls `validatePush` with readers of the current tip and of the tree about to be
 * committed; it throws the first violation and nothing moves.
 */
import { WorkflowHostError } from "../errors.js";
import type { CommittedReads, KindHandler, PathChange, PushContext } from "../substrate/types.js";
import { isTerminalEventType } from "./event-shapes.js";
import { DEFAULT_MAX_EVENT_BYTES, parseEvent } from "./events.js";
import { checkCompactedLog, foldEventFiles, foldProblem, sameBytes } from "./compacted-log.js";
import { REPO_OR_RUN_ID_PATTERN } from "./ids.js";
import { compactedLogPath, parseEventPath, parseEventPathName, runEventsPrefix, runsPrefix } from "./paths.js";
import { openEventsFolder } from "./events-folder.js";
import { runFolderPart } from "./run-folder.js";
import { ARCHIVE_REF, isArchiveRef } from "./run-archive.js";
import { isMissingRunObject, missingObjectError } from "./run-log.js";
import { unreadableRunError } from "./unreadable-runs.js";
import { isUnreadableObject } from "../substrate/object-store.js";

/** Kind name of deployment repos. */
export const WORKFLOW_RUN_KIND = "workflow-run";

/** Folder under the data dir holding deployment repos. */
export const WORKFLOW_RUN_DIRECTORY_PREFIX = "deployments";

export interface WorkflowRunKindOptions {
  /** Largest accepted event file (bytes of UTF-8, default 1 MiB). */
  readonly maxEventBytes?: number;
}

interface RunChanges {
  readonly added: { readonly seq: number; readonly change: PathChange }[];
  readonly deleted: { readonly seq: number; readonly change: PathChange }[];
  compacted: PathChange | null;
  /** A blob was added to `blobs/` (the run must then have a log). */
  blobAdded: PathChange | null;
}

function rejected(path: string, seq: number | null, detail: string): WorkflowHostError {
  return new WorkflowHostError("event_invalid", `${path}: ${detail}`, { path, seq });
}

/**
 * The handler for deployment repos: kind `"workflow-run"`, directoryPrefix `"deployments"`.
 *
 * `validatePush` accepts a commit when, for every changed path under `runs/`:
 * - the path belongs to the run folder's layout (the original system's, see run-folder.ts): an
 *   event file `runs/<runId>/events/<seq>.json` (seq without leading zeros), the sealed log
 *   `runs/<runId>/events.jsonl`, a blob `runs/<runId>/blobs/<64 lowercase hex>`, the plain
 *   file `runs/<runId>/grants.json`, or anything under `runs/<runId>/parts/`; anything else
 *   under `runs/` is refused, and so is a symlink for any of the files;
 * - event files are only added (append-only: an existing event is never modified or deleted),
 *   and blobs too (immutable); a blob is only added to a run that has a log (`events/` or
 *   `events.jsonl`: without one a run folder holds only grants.json and parts/);
 * - a run's new seqs continue its prior maximum densely (the first event of a run is 0 or 1);
 * - each new event parses ({@link parseEvent}: body seq equals the file name, schema, ids,
 *   instants, a TimerSet's cron and zone probed with croner, size ≤ `maxEventBytes`);
 * - nothing follows a terminal event (`RunCompleted`, `RunFailed`, `RunCancelled`), nor a valid
 *   sealed log (an `events.jsonl` that is not valid ends nothing, see compacted-log.ts);
 * - an `events.jsonl` is added only as a valid seal of an ended run: beside the run's event
 *   files (the original's form, which `compactRun` writes) it is exactly their fold, each
 *   file's bytes plus `\n` in seq order; in the commit that deletes every event file of the run
 *   it is the fold of those; alone, its lines are a valid ended log. A valid sealed log is never
 *   modified or deleted; one that is not valid may be replaced by a valid one, or removed.
 * - a run folder leaves only whole, once the run has ended, and only when the archive ref
 *   (`refs/archive/runs`, see run-archive.ts) holds the same folder (same tree oid) at that
 *   moment: that is a retention commit; any other removal of an event file is refused;
 * - a new run folder may not take the id of an archived run (the archive holds `runs/<runId>`).
 * A commit to the archive ref itself only adds whole run folders under `runs/` that it does not
 * hold yet: an archived run never changes.
 * Paths outside `runs/` (top-level `addresses/`, `agent-state/`, `.gitignore`, …) are not this
 * handler's concern. Only the changed runs are read (their event folder listing, the prior last
 * event, and the new blobs; a commit that writes `events.jsonl` also reads that run's event
 * files, once), so the cost is O(changed runs), not O(repo). Signal ids are not checked for duplicates here: that needs the whole log
 * and is the signal channel's job, under the repo lock.
 *
 * @throws the first violation, in run-id then seq order: `event_invalid` (path rules, seq rules,
 *   after-terminal, bad JSON or shape), or the field's own code (`id_invalid`, `time_invalid`,
 *   `cron_invalid`), or `payload_too_large`; `data` holds `path` and `seq` (null for a path rule).
 *   A changed run's prior last event that cannot be read (the check needs it: does it end the
 *   run?) is `object_missing` / `object_corrupt` naming the deployment and the run
 *   (`unreadableRunError`: `data` `repoId`, `runId`, `path`, `oid`, `unreadableRun`; "nothing
 *   was written"); the other changed runs are still checked, and `data.unreadableRuns` holds
 *   every such run's own error (the first one's included), so a batch of appends can drop them
 *   all at once; the commit is refused.
 */
export function workflowRunKind(opts: WorkflowRunKindOptions = {}): KindHandler {
  const maxEventBytes = opts.maxEventBytes ?? DEFAULT_MAX_EVENT_BYTES;
  return {
    kind: WORKFLOW_RUN_KIND,
    directoryPrefix: WORKFLOW_RUN_DIRECTORY_PREFIX,
    async validatePush(ctx: PushContext): Promise<void> {
      if (isArchiveRef(ctx.ref)) {
        await checkArchiveCommit(ctx);
        return;
      }
      const removed = await checkRunsRemoved(ctx, maxEventBytes);
      const runs = groupByRun(removed.size === 0 ? ctx.changes : ctx.changes.filter((c) => !removed.has(runIdOf(c.path))));
      let archive: CommittedReads | null | undefined;
      const lost: WorkflowHostError[] = [];
      for (const runId of [...runs.keys()].sort()) {
        const run = runs.get(runId);
        if (run === undefined) continue;
        if (ctx.pause !== undefined) await ctx.pause();
        if (ctx.prior === null || (await ctx.prior.treeOid(`${runsPrefix}${runId}`)) === null) {
          // A new run folder: its id must not be one that retention archived.
          archive ??= (await ctx.readRef?.(ARCHIVE_REF)) ?? null;
          if (archive !== null && (await archive.treeOid(`${runsPrefix}${runId}`)) !== null) {
            const first = ctx.changes.find((c) => runIdOf(c.path) === runId);
            throw new WorkflowHostError("event_invalid", `${first?.path ?? `${runsPrefix}${runId}`}: run ${runId} was archived (${ARCHIVE_REF} holds runs/${runId}); a run id is never reused`, {
              path: first?.path ?? `${runsPrefix}${runId}`,
              seq: null,
              reason: "run_archived",
            });
          }
        }
        try {
          if (run.compacted !== null || run.deleted.length > 0) await checkCompaction(ctx, runId, run, maxEventBytes);
          else await checkAppend(ctx, runId, run, maxEventBytes);
        } catch (error) {
          // This run's own object cannot be read (its prior last event): named, and the other
          // changed runs are checked on, so one refusal names every such run of the commit (a
          // batch of appends drops them all in one retry). Their last events are read for a
          // commit that passes anyway: nothing more is read than for one that passes.
          if (isMissingRunObject(error) && error.data["runId"] === runId) {
            lost.push(unreadableRunError(ctx.repoId.id, { runId, path: String(error.data["path"]), error }, "nothing was written"));
            continue;
          }
          // The first violation in run-id order is thrown: a lost run before it, if any.
          throw lost.length > 0 ? unreadableRunsError(lost) : error;
        }
        if (run.blobAdded !== null && (await ctx.prospective.treeOid(runEventsPrefix(runId).slice(0, -1))) === null && (await ctx.prospective.treeOid(compactedLogPath(runId))) === null) {
          const error = rejected(run.blobAdded.path, null, "a run folder without a log (events/ or events.jsonl) holds only grants.json and parts/");
          throw lost.length > 0 ? unreadableRunsError(lost) : error;
        }
      }
      if (lost.length > 0) throw unreadableRunsError(lost);
    },
  };
}

/**
 * The refusal of a commit whose changed runs' prior last events could not be read: the first
 * run's error (`unreadableRunError`: its code, `repoId`, `runId`, `path`, `oid`, "nothing was
 * written"), with `data.unreadableRuns` holding every such run's own error, the first one's
 * included, in run-id order (see `unreadableRunsIn`).
 */
function unreadableRunsError(lost: readonly WorkflowHostError[]): WorkflowHostError {
  const first = lost[0] as WorkflowHostError;
  const more = lost.length === 1 ? "" : ` (and ${lost.length - 1} more run${lost.length === 2 ? "" : "s"} of this commit: ${lost.slice(1).map((e) => String(e.data["runId"])).join(", ")})`;
  const detail = first.message.startsWith(`${first.code}: `) ? first.message.slice(first.code.length + 2) : first.message;
  return new WorkflowHostError(first.code, `${detail}${more}`, { ...first.data, unreadableRuns: lost }, { cause: first.cause });
}

/** The run id of a path under `runs/`, or "" for any other path. */
function runIdOf(path: string): string {
  if (!path.startsWith(runsPrefix)) return "";
  const end = path.indexOf("/", runsPrefix.length);
  return end < 0 ? "" : path.slice(runsPrefix.length, end);
}

/**
 * The runs a commit removes whole (their folder is gone), each checked as a retention removal:
 * the run had ended, and the archive ref holds its folder with the same tree oid.
 * @throws event_invalid (`data.reason` "not_archived" or "not_ended") for the first that is not
 */
async function checkRunsRemoved(ctx: PushContext, maxEventBytes: number): Promise<Set<string>> {
  const removed = new Set<string>();
  if (ctx.prior === null) return removed;
  const seen = new Set<string>();
  let archive: CommittedReads | null | undefined;
  for (const change of ctx.changes) {
    if (change.status !== "deleted") continue;
    const runId = runIdOf(change.path);
    if (runId === "" || seen.has(runId)) continue;
    seen.add(runId);
    // A retention commit removes up to thousands of runs: the writer's process keeps its turns.
    if (ctx.pause !== undefined) await ctx.pause();
    const folder = `${runsPrefix}${runId}`;
    if ((await ctx.prospective.treeOid(folder)) !== null) continue;
    const priorOid = await ctx.prior.treeOid(folder);
    archive ??= (await ctx.readRef?.(ARCHIVE_REF)) ?? null;
    const archivedOid = archive === null ? null : await archive.treeOid(folder);
    if (priorOid === null || archivedOid !== priorOid) {
      throw new WorkflowHostError("event_invalid", `${change.path}: run ${runId} was removed, but only a run the archive (${ARCHIVE_REF}) holds unchanged may leave the live tree`, {
        path: change.path,
        seq: parseEventPath(change.path)?.seq ?? null,
        reason: "not_archived",
      });
    }
    const { seqs, last } = await priorEvents(ctx.prior, runId);
    const ended =
      (seqs.length > 0 && isTerminalBytes(last)) ||
      (seqs.length === 0 && (await isSealed(ctx.prior, runId, maxEventBytes)));
    if (!ended) {
      throw new WorkflowHostError("event_invalid", `${change.path}: run ${runId} has not ended; only an ended run leaves the live tree`, {
        path: change.path,
        seq: null,
        reason: "not_ended",
      });
    }
    removed.add(runId);
  }
  return removed;
}

/**
 * A commit to the archive ref: it only adds whole run folders it does not hold yet.
 * @throws event_invalid for a change outside `runs/<runId>/`, a modified or deleted path, or a
 *   run the archive already holds
 */
async function checkArchiveCommit(ctx: PushContext): Promise<void> {
  const checked = new Set<string>();
  for (const change of ctx.changes) {
    const runId = runIdOf(change.path);
    if (runId === "" || !REPO_OR_RUN_ID_PATTERN.test(runId)) throw rejected(change.path, null, `${ARCHIVE_REF} holds only run folders runs/<runId>/`);
    if (change.status !== "added") throw rejected(change.path, null, `an archived run never changes; it was ${change.status}`);
    if (checked.has(runId)) continue;
    checked.add(runId);
    if (ctx.pause !== undefined) await ctx.pause();
    if (ctx.prior !== null && (await ctx.prior.treeOid(`${runsPrefix}${runId}`)) !== null) {
      throw rejected(change.path, null, `run ${runId} is archived already; an archived run never changes`);
    }
  }
}

const ALLOWED = "allowed under runs/<runId>/: events/<seq>.json, events.jsonl, blobs/<64 lowercase hex>, grants.json, parts/…";

function groupByRun(changes: readonly PathChange[]): Map<string, RunChanges> {
  const runs = new Map<string, RunChanges>();
  const runOf = (runId: string): RunChanges => {
    let run = runs.get(runId);
    if (run === undefined) {
      run = { added: [], deleted: [], compacted: null, blobAdded: null };
      runs.set(runId, run);
    }
    return run;
  };
  for (const change of [...changes].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))) {
    if (!change.path.startsWith(runsPrefix)) continue;
    const symlink = change.mode === "120000";
    const event = parseEventPath(change.path);
    if (event !== null) {
      if (change.status === "modified") throw rejected(change.path, event.seq, "event files are append-only; an existing event was modified");
      if (symlink && change.status !== "deleted") throw rejected(change.path, event.seq, "an event file is a plain file, not a symlink");
      const run = runOf(event.runId);
      (change.status === "added" ? run.added : run.deleted).push({ seq: event.seq, change });
      continue;
    }
    const [runId = "", ...rest] = change.path.slice(runsPrefix.length).split("/");
    const part = REPO_OR_RUN_ID_PATTERN.test(runId) ? runFolderPart(rest.join("/")) : null;
    if (part === null || part === "events") throw rejected(change.path, null, `not part of a run folder; ${ALLOWED}`);
    if (symlink && change.status !== "deleted" && part !== "parts") throw rejected(change.path, null, `a symlink; ${ALLOWED} as plain files`);
    if (part === "events.jsonl") runOf(runId).compacted = change;
    else if (part === "blobs") {
      if (change.status !== "added") throw rejected(change.path, null, `a blob is immutable; it was ${change.status}`);
      runOf(runId).blobAdded = change;
    }
  }
  return runs;
}

// Every entry named `<seq>.json` holds its seq, whatever it is: a folder or a symlink pushed
// by git in place of an event file is unreadable, but the next event must still come after it,
// or the reader (which counts it, see `readRunLog`) and this check disagree on the next seq and
// every later append to the run is refused.
// The folder is indexed by seq from its stored bytes and kept by oid (see events-folder.ts): an
// append to a run of 200,000 events neither lists them as objects nor sorts their seqs, and the
// writer's own check that others only added (append-log-cache.ts) indexed this folder already.
async function priorEventSeqs(prior: CommittedReads | null, runId: string): Promise<Float64Array> {
  return (await priorEvents(prior, runId)).seqs;
}

/**
 * The run's prior event seqs (ascending) and the bytes of the last one (null when it is not a
 * file), read through the folder's seq index: a long run's `events/` is not parsed whole to find
 * one entry (the index is kept by oid, and the log's read made it already).
 */
async function priorEvents(prior: CommittedReads | null, runId: string): Promise<{ seqs: Float64Array; last: Uint8Array | null }> {
  if (prior === null) return { seqs: new Float64Array(0), last: null };
  const path = runEventsPrefix(runId).slice(0, -1);
  const folder = await openEventsFolder(prior, path, await prior.treeOid(path));
  const k = folder.seqs.length - 1;
  if (k < 0) return { seqs: folder.seqs, last: null };
  const entry = folder.entry(folder.at[k] as number);
  if (entry.type !== "blob") return { seqs: folder.seqs, last: null };
  try {
    return { seqs: folder.seqs, last: await prior.readBlobByOid(entry.oid) };
  } catch (error) {
    // The run's own object: named as the readers name it (its run, path, oid), so a writer can
    // tell the run's loss from the deployment's and commit the other runs' appends without it.
    if (isUnreadableObject(error)) throw missingObjectError(runId, `${path}/${entry.name}`, entry.oid, error);
    throw error;
  }
}

// The prior log was validated on the way in, except for commits that arrived by `git push`; an
// unreadable last event is therefore judged not terminal rather than blocking every append.
function isTerminalBytes(bytes: Uint8Array | null): boolean {
  if (bytes === null) return false;
  try {
    const value: unknown = JSON.parse(new TextDecoder().decode(bytes));
    return typeof value === "object" && value !== null && isTerminalEventType(String((value as { type?: unknown }).type));
  } catch {
    return false;
  }
}

/**
 * Whether the sealed log at `reads` is valid, so that it is the run's log and ends it. Only
 * read for a run that has an `events.jsonl`.
 */
async function isSealed(reads: CommittedReads | null, runId: string, maxEventBytes: number): Promise<boolean> {
  const bytes = (await reads?.readBlob(compactedLogPath(runId))) ?? null;
  if (bytes === null || reads === null) return false;
  const files = await eventFileBytes(reads, runId);
  if (files.length === 0) return checkCompactedLog(runId, bytes, { maxEventBytes }).problem === null;
  return foldProblem(runId, bytes, files) === null && isTerminalBytes(files.at(-1) ?? null);
}

/** The bytes of every `<seq>.json` entry of the run's events folder, in seq order (empty for a non-file). */
async function eventFileBytes(reads: CommittedReads, runId: string): Promise<Uint8Array[]> {
  const entries = await reads.listDir(runEventsPrefix(runId).slice(0, -1));
  const files: { seq: number; bytes: Uint8Array }[] = [];
  for (const entry of entries) {
    const seq = parseEventPathName(entry.name);
    if (seq === null) continue;
    files.push({ seq, bytes: entry.type === "blob" && entry.mode !== "120000" ? await reads.readBlobByOid(entry.oid) : new Uint8Array() });
  }
  return files.sort((a, b) => a.seq - b.seq).map((f) => f.bytes);
}

async function checkAppend(ctx: PushContext, runId: string, run: RunChanges, maxEventBytes: number): Promise<void> {
  const added = [...run.added].sort((a, b) => a.seq - b.seq);
  const first = added[0];
  if (first === undefined) return;
  const prior = await priorEvents(ctx.prior, runId);
  const priorSeqs = prior.seqs;
  // Only a valid seal ends a run; with event files beside it, their terminal event already does.
  if (priorSeqs.length === 0 && ctx.prior !== null && (await ctx.prior.treeOid(compactedLogPath(runId))) !== null && (await isSealed(ctx.prior, runId, maxEventBytes))) {
    throw rejected(first.change.path, first.seq, "the run is sealed (events.jsonl: it ended); nothing may follow");
  }
  const priorMax = priorSeqs.at(-1) ?? -1;
  let terminalSeq: number | null =
    priorMax >= 0 && isTerminalBytes(prior.last) ? priorMax : null;
  let expected = priorMax + 1;
  if (priorMax < 0 && first.seq === 1) expected = 1;
  for (const { seq, change } of added) {
    if (seq !== expected) {
      throw rejected(change.path, seq, `seq ${seq} breaks the dense sequence; expected ${expected}${priorMax < 0 && expected === 0 ? " or 1" : ""}`);
    }
    expected += 1;
    if (terminalSeq !== null) throw rejected(change.path, seq, `nothing may follow the terminal event at seq ${terminalSeq}`);
    const event = parseEvent(await ctx.prospective.readBlobByOid(change.oid), { path: change.path, expectedSeq: seq, maxEventBytes });
    if (isTerminalEventType(event.type)) terminalSeq = seq;
  }
}

async function checkCompaction(ctx: PushContext, runId: string, run: RunChanges, maxEventBytes: number): Promise<void> {
  const deleted = [...run.deleted].sort((a, b) => a.seq - b.seq);
  const compacted = run.compacted;
  const path = compactedLogPath(runId);
  if (compacted !== null && compacted.status !== "added" && (await isSealed(ctx.prior, runId, maxEventBytes))) {
    throw rejected(path, null, `a sealed log never changes; it was ${compacted.status}`);
  }
  if (compacted === null || compacted.status === "deleted") {
    const d = deleted[0];
    if (d !== undefined) throw rejected(d.change.path, d.seq, "event files are append-only; an existing event was deleted");
    // An events.jsonl that was not a valid seal, removed: the run reads from its event files.
    await checkAppend(ctx, runId, run, maxEventBytes);
    return;
  }
  if (deleted.length === 0) {
    // The original's form: the sealed log beside the run's event files (new ones checked as any
    // append), their exact fold; or, with no event files at all, a valid ended log by itself.
    await checkAppend(ctx, runId, run, maxEventBytes);
    const bytes = await ctx.prospective.readBlobByOid(compacted.oid);
    const files = await eventFileBytes(ctx.prospective, runId);
    const problem = (files.length === 0 ? null : foldProblem(runId, bytes, files)) ?? checkCompactedLog(runId, bytes, { maxEventBytes }).problem;
    if (problem !== null) throw problem.error;
    return;
  }
  // Sealed with every event file removed in the same commit.
  const added = run.added[0];
  if (added !== undefined) throw rejected(added.change.path, added.seq, "events may not be added in the commit that seals the run and removes its event files");
  const priorSeqs = await priorEventSeqs(ctx.prior, runId);
  const deletedSeqs = deleted.map((d) => d.seq);
  if (priorSeqs.length === 0 || Array.from(priorSeqs).join(",") !== deletedSeqs.join(",")) {
    throw rejected(path, null, "compaction must delete exactly every event file of the run");
  }
  if ((await ctx.prospective.listDir(runEventsPrefix(runId).slice(0, -1))).length > 0) {
    throw rejected(path, null, "compaction must leave the run's events folder empty");
  }
  const parts: Uint8Array[] = [];
  for (const { change } of deleted) parts.push(await (ctx.prior as CommittedReads).readBlobByOid(change.oid));
  if (!isTerminalBytes(parts.at(-1) ?? null)) throw rejected(path, null, "only an ended run (last event terminal) may be compacted");
  const actual = await ctx.prospective.readBlobByOid(compacted.oid);
  if (!sameBytes(actual, foldEventFiles(parts))) {
    throw rejected(path, null, "the compacted log must be each event's bytes followed by \\n, in seq order");
  }
}
