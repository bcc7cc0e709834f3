/**
 * The live tail's step: applies one commit of the deployment's ref to its view. Added events of
 * a run are applied in seq order when they extend its state; anything else (an edit, a
 * deletion, an out-of-order seq) re-reads the whole run. A run the fire committer already moved
 * to this commit's state (same events tree oid) is left as it is: a state is a function of its
 * tree. Runs a retention commit moved to the archive ref are dropped, unreported; runs whose
 * folder a commit deleted any other way (a push) are dropped too, their removed event files
 * reported as rewrites, so the view is what a fresh recovery at the commit reads. A sealed log
 * that was a run's whole log (`events.jsonl`, no event files) is as immutable as an event file:
 * its removal or change is reported the same way, unless retention moved the run.
 */
import { WorkflowHostError } from "../../src/errors.js";
import type { CommitChange, Principal } from "../../src/substrate/types.js";
import { parseEvent } from "../../src/workflow/events.js";
import { parseCompactedLogPath, runEventsPrefix, runsPrefix } from "../../src/workflow/paths.js";
import { immutableChangedProblem } from "../../src/workflow/run-folder.js";
import { isRegularFileMode } from "../../src/substrate/tree-object.js";
import { afterTerminalProblem, classifyRunPath, rewrittenProblem, sealRewrittenProblem, sequenceProblems } from "../../src/workflow/log-problems.js";
import type { BadEvent } from "../../src/workflow/run-log.js";
import { applyEvent } from "../../src/workflow/run-state.js";
import { createTimeSlicer, DEFAULT_SLICE_MS } from "../../src/time/time-slicer.js";
import { isSchedulePaused, isScheduleResumed, isTimerCancelled } from "../../src/workflow/event-guards.js";
import type { PendingTimer, RunEvent } from "../../src/workflow/types.js";
import { runsMovedToArchive } from "../../src/workflow/run-archive.js";
import type { DeploymentView } from "./deployment-view.js";
import { monotonicMs } from "./tracker-context.js";

/** Applies `commit` to `view` (see the module comment). @throws read errors (the tail is restarted) */
export async function applyTailCommit(view: DeploymentView, commit: CommitChange): Promise<void> {
  const ctx = view.ctx;
  view.archive = undefined;
  const byRun = new Map<string, { adds: { seq: number; oid: string; path: string }[]; reread: boolean }>();
  const problems = new Map<string, BadEvent>();
  // Runs this process's fire committer already moved to this very commit (adopted from the
  // write itself, see FireCommitter.adoptFromWrite): their changes are what it wrote, so they
  // are neither read back nor parsed again. Everything else in the commit is read as usual.
  const own = view.takeOwnCommit(commit.commitSha, commit.parentSha);
  // Every run this commit changed was adopted (a whole fire commit): nothing to look at.
  if (own?.complete === true) return;
  const adopted = own?.runs;
  // Runs this commit seals by adding events.jsonl; event files it removes are fine when the
  // run then reads as sealed (the log is the same, in its other form), reported otherwise.
  const sealing = new Set<string>();
  for (const c of commit.changes) {
    if (c.status !== "added" || !c.path.endsWith(".jsonl")) continue;
    const runId = parseCompactedLogPath(c.path)?.runId;
    if (runId !== undefined) sealing.add(runId);
  }
  const folded: BadEvent[] = [];
  // Runs whose event files (or whole sealed log) this commit removes outside a seal: a retention
  // commit's, or a rewrite.
  const removedRuns = new Set<string>();
  for (const change of commit.changes) {
    if (adopted !== undefined && adopted.has(runIdOfPath(change.path))) continue;
    const place = classifyRunPath(change.path, change.mode);
    if (place === null) continue;
    // Pushed entries that belong to no run's log are reported; they name no run to read.
    if (place.kind === "foreign") {
      problems.set(place.problem.path, place.problem);
      continue;
    }
    if (place.kind === "aside" && isRegularFileMode(change.mode)) {
      // The original layout's files beside the log are not read; a blob is immutable, and a
      // run with no log yet is read again (blobs/ needs a log beside it).
      if (place.part === "blobs" && change.status !== "added") problems.set(change.path, immutableChangedProblem(place.runId, change.path, change.status));
      if ((view.runs.get(place.runId)?.state.lastSeq ?? -1) >= 0) continue;
    }
    const entry = byRun.get(place.runId) ?? { adds: [], reread: false };
    byRun.set(place.runId, entry);
    if (place.kind === "event" && change.status === "added" && isRegularFileMode(change.mode)) {
      entry.adds.push({ seq: place.seq, oid: change.oid, path: change.path });
      continue;
    }
    // Anything else in a run's log (a symlink, a gitlink, a folder, a bad name, an edit) is judged by
    // reading the run again; an edit or removal of an event is reported as well.
    entry.reread = true;
    if (place.kind === "event" && change.status !== "added") {
      // Removed by a commit that seals the run (events.jsonl added): judged once it is read.
      if (change.status === "deleted" && sealing.has(place.runId)) folded.push(rewrittenProblem(place.runId, place.seq, change.path, change.status));
      else problems.set(change.path, rewrittenProblem(place.runId, place.seq, change.path, change.status));
      if (change.status === "deleted" && !sealing.has(place.runId)) removedRuns.add(place.runId);
    } else if (place.kind === "run" && change.status !== "added" && parseCompactedLogPath(change.path) !== null && readFromSealAlone(view, place.runId)) {
      // The run's whole log as the view holds it (before this commit), changed or removed: a
      // seal never changes, so it is reported as an event file would be (a valid seal only: an
      // invalid one, reported when read, may be replaced or removed). Not for a run that
      // retention moved to the archive ref (see below).
      problems.set(change.path, sealRewrittenProblem(place.runId, change.path, change.status));
      if (change.status === "deleted") removedRuns.add(place.runId);
    }
  }
  if (removedRuns.size > 0) {
    // Ended runs that retention moved to the archive ref: nothing to report, nothing to track.
    // A retention commit removes up to thousands of runs: the event loop gets its turns.
    const slicer = createTimeSlicer(DEFAULT_SLICE_MS, monotonicMs(ctx));
    const moved = await runsMovedToArchive(ctx.store, ctx.principal as Principal, view.rid, commit.commitSha, commit.parentSha, removedRuns, slicer.pause);
    // One look at each problem, not one per moved run: a retention commit removes thousands
    // of runs, each with its event files, and a scan per run made the tail quadratic.
    if (moved.size > 0) {
      for (const path of [...problems.keys()]) {
        const end = path.indexOf("/", runsPrefix.length);
        if (path.startsWith(runsPrefix) && end > 0 && moved.has(path.slice(runsPrefix.length, end))) problems.delete(path);
      }
    }
    for (const runId of moved) {
      await slicer.pause();
      byRun.delete(runId);
      view.dropRun(runId);
    }
  }
  for (const problem of problems.values()) view.reportBad(problem);
  if (byRun.size === 0) return;
  const reads = await ctx.store.openCommittedReads(ctx.principal, view.rid, commit.commitSha);
  for (const [runId, change] of byRun) {
    const record = view.runs.get(runId);
    if (record !== undefined && record.eventsOid !== null && !change.reread) {
      // Already at this commit's events tree (our own fire commit, adopted when it landed):
      // a state is a function of the tree, so there is nothing to apply.
      if ((await reads.treeOid(runEventsPrefix(runId).slice(0, -1))) === record.eventsOid) {
        record.runTreeOid = await reads.treeOid(`${runsPrefix}${runId}`);
        continue;
      }
    }
    change.adds.sort((a, b) => a.seq - b.seq);
    const extends_ = record !== undefined && !change.reread && (change.adds[0]?.seq ?? 0) > record.maxFileSeq;
    if (!extends_ || record === undefined) {
      // Read whole; a run whose folder this commit deleted is dropped there, as a fresh
      // recovery at this commit would not hold it (its removed event files are reported above).
      await view.readRun(reads, runId);
      continue;
    }
    const gaps = sequenceProblems(runId, change.adds.map((a) => a.seq), record.maxFileSeq);
    for (const gap of gaps) view.reportBad(gap);
    record.bad += gaps.length;
    for (const add of change.adds) {
      record.maxFileSeq = Math.max(record.maxFileSeq, add.seq);
      // A blob that cannot be read (not there yet because the ref moved before its objects
      // were complete, a torn write, an I/O error) is not bad content: the error ends this
      // tail, which is reported (repo_failed) and restarted with backoff from the tip, so the
      // event is read once it can be. Only bytes that were read and are not an event are
      // reported as a bad event and skipped.
      const bytes = await reads.readBlobByOid(add.oid);
      let event: RunEvent;
      try {
        event = parseEvent(bytes, { path: add.path, expectedSeq: add.seq, maxEventBytes: ctx.maxEventBytes });
      } catch (error) {
        record.bad += 1;
        view.reportBad({ runId, path: add.path, seq: add.seq, error: asHostError(error, add.path) });
        continue;
      }
      if (record.state.terminal !== null) {
        // The run has ended: skipped (as recovery skips it), and said so.
        record.bad += 1;
        view.reportBad(afterTerminalProblem(runId, add.seq, record.state.terminal, null));
        continue;
      }
      const cancelled = isTimerCancelled(event) ? event.data.timerId : null;
      const armed = cancelled !== null && record.state.pendingTimers.has(cancelled);
      const series = isSchedulePaused(event) || isScheduleResumed(event) ? event.data.timerId : null;
      const wasPaused = series !== null && record.state.pendingTimers.get(series)?.pausedAt !== undefined;
      record.state = applyEvent(record.state, event);
      // Whoever wrote it (this host, the CLI, another process, a push): one report per cancel.
      if (armed) ctx.report({ type: "cancelled", repoId: view.repoId, runId, timerId: cancelled, commitSha: commit.commitSha });
      // And one per pause or resume that changed the series' state (the dashboard follows them).
      if (series !== null) reportPauseChange(view, runId, series, wasPaused, record.state.pendingTimers.get(series), event, commit.commitSha);
    }
    record.eventsOid = await reads.treeOid(runEventsPrefix(runId).slice(0, -1));
    // The last event's blob, which the recovery index keeps (design notes §74): the last add
    // when it is the log's last file (adds come after maxFileSeq, sorted by seq).
    const lastAdd = change.adds[change.adds.length - 1];
    record.lastEventOid = lastAdd !== undefined && lastAdd.seq === record.maxFileSeq ? lastAdd.oid : null;
    record.runTreeOid = await reads.treeOid(`${runsPrefix}${runId}`);
    view.indexDirty = true;
    view.sync(runId, record);
  }
  for (const removed of folded) {
    const record = view.runs.get(removed.runId);
    if (record === undefined || record.bad > 0 || record.state.terminal === null) view.reportBad(removed);
  }
}

/** Reports `paused` or `resumed` when the series `timerId` of `runId` changed state (`after`: its pending timer after `event`). */
function reportPauseChange(view: DeploymentView, runId: string, timerId: string, wasPaused: boolean, after: PendingTimer | undefined, event: RunEvent, commitSha: string): void {
  const paused = after?.pausedAt !== undefined;
  if (after === undefined || paused === wasPaused) return;
  if (!paused) {
    view.ctx.report({ type: "resumed", repoId: view.repoId, runId, timerId, commitSha });
    return;
  }
  const reason = isSchedulePaused(event) && typeof event.data.reason === "string" ? event.data.reason : undefined;
  view.ctx.report({ type: "paused", repoId: view.repoId, runId, timerId, ...(reason === undefined ? {} : { reason }), commitSha });
}

/**
 * Whether the view read the run's log from its sealed log alone: no `events/` folder (eventsOid
 * null, as the view records it from the tree), and ended (only a valid seal is read as the log;
 * an invalid one leaves the run with no events). A run held as a row is looked at as it is.
 */
function readFromSealAlone(view: DeploymentView, runId: string): boolean {
  const held = view.runs.base(runId);
  return held !== undefined && held.eventsOid === null && held.state.terminal !== null;
}

/** The run a path under `runs/` belongs to, or "" for any other path. */
function runIdOfPath(path: string): string {
  if (!path.startsWith(runsPrefix)) return "";
  const end = path.indexOf("/", runsPrefix.length);
  return end < 0 ? "" : path.slice(runsPrefix.length, end);
}

function asHostError(error: unknown, path: string): WorkflowHostError {
  return error instanceof WorkflowHostError
    ? error
    : new WorkflowHostError("event_invalid", `${path} could not be read as an event`, { path }, { cause: error });
}
