/**
 * Reading each run of a deployment when some cannot be read: a run whose folder or `events/`
 * folder is not in the repository or is damaged is that run's problem, never the listing's. The
 * scheduler's recovery skips and reports such a run (design notes §52, §57); the readers outside
 * it (pending timers, `runs list`, `check`, retention, the schedule controls) read each run
 * through {@link readRunOrReport} or {@link readEachRun}, so the other runs are read as usual and
 * the damaged one is named with its error. A run whose `events` entry is a file or a link holds
 * no log: the readers that need its log read it through {@link requireRunLog} and name it the
 * same way (`event_invalid`, as `check` names the entry). A reader that presents runs' states or
 * pending timers names a run whose log it did not read whole (an event lost or damaged) too,
 * reading each run through {@link requireWholeRunLog}. A missing or damaged `runs/` folder,
 * root or tip commit is not one run's: it is thrown as the store raised it (nothing of the
 * deployment can be read).
 */
import { WorkflowHostError } from "../errors.js";
import type { CommittedReads, DirEntry } from "../substrate/types.js";
import { REPO_OR_RUN_ID_PATTERN } from "./ids.js";
import { createTimeSlicer } from "../time/time-slicer.js";
import { runsPrefix } from "./paths.js";
import { type BadEvent, isMissingRunObject, type RunFolderIndex, type RunLog } from "./run-log.js";
import type { RunLogSummary } from "./run-log-summary.js";

/** A run that a reader could not read (whole), with why. */
export interface UnreadableRun {
  readonly runId: string;
  /**
   * Where the object that could not be read sits: `runs/<runId>` (the run folder),
   * `runs/<runId>/events`, or, for a reader that needs the run whole, the first object of it
   * that could not be read (`runs/<runId>/events/<seq>.json`, `…/blobs`, `…/events.jsonl`).
   */
  readonly path: string;
  /**
   * `object_missing` (not in the repository) or `object_corrupt` (there, but failing its own
   * check); `data`: `runId`, `path`, `oid` (and `damaged`, `reason`, `pack` for a damaged one).
   * Or `event_invalid` for a run that holds no log because its `events` entry is a file or a
   * link (see {@link noRunLogError}); `data`: `repoId`, `runId`, `path`, `noRunLog: true`.
   */
  readonly error: WorkflowHostError;
}

/** What {@link readRunOrReport} gives: the run's value, or why it could not be read. */
export type RunRead<T> = { readonly value: T; readonly unreadable: null } | { readonly value: null; readonly unreadable: UnreadableRun };

/**
 * Reads one run with `read` (`readRunLog`, `summarizeRunLog`, `forEachRunEvent`, or anything
 * reading through them), turning the error they throw for a run whose folder or `events/` folder
 * cannot be read (`object_missing`, `object_corrupt` naming this run: see `isMissingRunObject`)
 * into an {@link UnreadableRun}.
 * @throws any other error of `read` as it comes (a missing `runs/` folder, I/O, a bad id)
 */
export async function readRunOrReport<T>(runId: string, read: () => Promise<T>): Promise<RunRead<T>> {
  try {
    return { value: await read(), unreadable: null };
  } catch (error) {
    if (!(error instanceof WorkflowHostError) || !(isMissingRunObject(error) || isNoRunLogError(error)) || error.data["runId"] !== runId) throw error;
    return { value: null, unreadable: { runId, path: String(error.data["path"]), error } };
  }
}

/**
 * The `event_invalid` error of a run that holds no log: its `events` entry (`problem.path`,
 * `runs/<runId>/events`) is a file or a link, not a folder, and no sealed `events.jsonl` stands in
 * for it. `workflow-host check` names the same entry with the same code; the readers that need a
 * run's log (`runs list`, `runs show`, pending timers) report it as a run that cannot be read
 * (design notes §64, §66).
 * @returns `data`: `repoId`, `runId`, `path`, `noRunLog: true`; the message: "run <runId> of
 *   deployment <repoId> has no log to read: <the problem>; workflow-host check names what is there"
 */
export function noRunLogError(repoId: string, runId: string, problem: BadEvent): WorkflowHostError {
  const { error } = problem;
  const why = error.message.startsWith(`${error.code}: `) ? error.message.slice(error.code.length + 2) : error.message;
  return new WorkflowHostError("event_invalid", `run ${runId} of deployment ${repoId} has no log to read: ${why}; workflow-host check names what is there`, {
    repoId,
    runId,
    path: problem.path,
    noRunLog: true,
  });
}

/** Whether `error` is a {@link noRunLogError}. */
export function isNoRunLogError(error: unknown): boolean {
  return error instanceof WorkflowHostError && error.code === "event_invalid" && error.data["noRunLog"] === true && typeof error.data["runId"] === "string";
}

/**
 * A run's summary (or its log, `readRunLog`) as a reader that needs its log takes it: throws
 * when the run holds no log because its `events` entry is not a folder (no event, no bad entry,
 * and a problem at `runs/<runId>/events`: a file or a link pushed there; no sealed log read in
 * its place). Read it inside {@link readRunOrReport} or {@link readEachRun} to name such a run
 * among the unreadable ones, or let the error through for a single run (`runs show`: exit 1).
 * @returns `log` as it is
 * @throws event_invalid ({@link noRunLogError})
 */
export function requireRunLog<L extends RunLogSummary | RunLog>(repoId: string, log: L): L {
  const events = "eventCount" in log ? log.eventCount : log.events.length;
  const bad = "badCount" in log ? log.badCount : log.bad.length;
  if (events !== 0 || bad !== 0) return log;
  const eventsPath = `${runsPrefix}${log.runId}/events`;
  const problem = log.problems.find((p) => p.path === eventsPath);
  if (problem !== undefined) throw noRunLogError(repoId, log.runId, problem);
  return log;
}

/**
 * What a reader that presents a run's state says of one whose log was not read whole (an event
 * blob, `blobs/` or a sealed log lost or damaged): the lost event may be the one its state turns
 * on (a timer's `TimerFired`, a cancellation, the run's end).
 */
export const STATE_NOT_KNOWN = "its state and pending timers are not known (the lost event may be the one they turn on)";

/**
 * The first object of a run's log (a summary or `readRunLog`'s log) that could not be read — an
 * event blob, `blobs/`, a sealed `events.jsonl` (`object_missing`, `object_corrupt`) — as an
 * {@link UnreadableRun}; null when every object read. A summary's `unreadable` counts past its
 * `maxReports`; a log's reports are all there.
 */
export function unreadableRunOf(log: RunLogSummary | RunLog): UnreadableRun | null {
  if ("unreadable" in log) return log.unreadable === null ? null : { runId: log.runId, path: log.unreadable.path, error: log.unreadable.error };
  return unreadablePartOf(log.runId, log.bad, log.problems);
}

/**
 * The rule of every reader that presents runs' states or pending timers (pending timers, `runs
 * list`, the schedule list and sync): a run is presented only when its log was read whole. As
 * {@link requireRunLog}, and throws for a run with an object of its log that could not be read
 * (see {@link unreadableRunOf}), so that, read inside {@link readRunOrReport} or
 * {@link readEachRun}, the run is named among the unreadable ones (its `path` the lost object's)
 * rather than shown as if whole. A reader of one run (`runs show`) uses {@link unreadableRunOf}
 * to show what it can read and say that the state is not known.
 * @returns `log` as it is
 * @throws event_invalid ({@link noRunLogError}); `object_missing` or `object_corrupt`
 *   ({@link unreadableRunError}, "its state and pending timers are not known")
 */
export function requireWholeRunLog<L extends RunLogSummary | RunLog>(repoId: string, log: L): L {
  requireRunLog(repoId, log);
  const part = unreadableRunOf(log);
  if (part !== null) throw unreadableRunError(repoId, part, STATE_NOT_KNOWN);
  return log;
}

/**
 * Lists `runs/` at the commit `reads` is pinned to and reads each run folder whose name is a
 * run id (other entries are passed over, as the scheduler passes them over) with `read`, in
 * name order, one at a time, awaiting `pause` before each (default: a time slicer of
 * `DEFAULT_SLICE_MS`, src/time/time-slicer.ts, so the event loop gets a turn every few ms).
 * @returns the runs read with their values, and the runs that could not be read (see
 *   {@link readRunOrReport})
 * @throws the listing's errors (a missing or damaged `runs/` folder or root: the whole
 *   deployment's), and what `read` throws other than a run's unreadable folder
 */
export async function readEachRun<T>(
  reads: CommittedReads,
  read: (runId: string, entry: DirEntry) => Promise<T>,
  pause: () => Promise<void> = createTimeSlicer().pause,
): Promise<{ readonly runs: readonly { readonly runId: string; readonly value: T }[]; readonly unreadable: readonly UnreadableRun[] }> {
  const runs: { runId: string; value: T }[] = [];
  const unreadable: UnreadableRun[] = [];
  for (const entry of await reads.listDir(runsPrefix.slice(0, -1))) {
    if (entry.type !== "tree" || !REPO_OR_RUN_ID_PATTERN.test(entry.name)) continue;
    // Reads served from the store's caches settle without an event-loop turn: thousands of
    // runs would otherwise hold the loop (heartbeats, fires, other requests) for seconds.
    await pause();
    const got = await readRunOrReport(entry.name, () => read(entry.name, entry));
    if (got.unreadable === null) runs.push({ runId: entry.name, value: got.value });
    else unreadable.push(got.unreadable);
  }
  return { runs, unreadable };
}

/**
 * The first of a run's reports (bad events, then problems, as given) naming an object of the
 * run that cannot be read (`object_missing`, `object_corrupt`: an event blob, the `blobs/`
 * folder, a sealed `events.jsonl`), as an {@link UnreadableRun}; null when there is none. A
 * reader that must not act on part of a run (retention, schedule sync) skips a run with one.
 */
export function unreadablePartOf(runId: string, ...reports: readonly (readonly BadEvent[])[]): UnreadableRun | null {
  for (const list of reports) {
    for (const report of list) if (isMissingRunObject(report.error)) return { runId, path: report.path, error: report.error };
  }
  return null;
}

/**
 * What is lost of a run, in words: `its run folder`, `its events/ folder`, `event <seq>`, `its
 * blobs/ folder`, `its sealed log`, or the path itself.
 */
function lostPartOf(runId: string, path: string): string {
  const run = `runs/${runId}`;
  if (path === run) return "its run folder";
  if (path === `${run}/events`) return "its events/ folder";
  const seq = /^runs\/[^/]+\/events\/(\d+)\.json$/.exec(path)?.[1];
  if (seq !== undefined) return `event ${seq}`;
  if (path === `${run}/blobs`) return "its blobs/ folder";
  if (path === `${run}/events.jsonl`) return "its sealed log";
  return path;
}

/**
 * The error a caller gets for a run that cannot be read whole when it asked for that run alone
 * (`runs show`, `GET …/runs/:run`, a write that decides from the run's history): the same code
 * as the run's own error (`object_missing`: not in the repository; `object_corrupt`: damaged),
 * and a message naming the deployment, the run, what is lost, its path and oid, then
 * `consequence` (a null `repoId`: the deployment is not named). The message never holds the store's own wording (which may name files on the
 * server); `workflow-host check` gives the details.
 * @param consequence - what the caller should know next, e.g. "nothing was written"
 * @returns `data`: the run error's data (`runId`, `path`, `oid`; `damaged`, `reason`, `pack` for
 *   a damaged object) with `repoId` (unless null) and `unreadableRun: true`; `cause`: the run's
 *   error
 */
export function unreadableRunError(repoId: string | null, run: UnreadableRun, consequence: string): WorkflowHostError {
  const { error } = run;
  const oid = typeof error.data["oid"] === "string" && error.data["oid"] !== "" ? `, git object ${error.data["oid"]}` : "";
  const state = error.code === "object_missing" ? "is not in the repository" : "is damaged";
  return new WorkflowHostError(
    error.code,
    `run ${run.runId}${repoId === null ? "" : ` of deployment ${repoId}`} cannot be read whole: ${lostPartOf(run.runId, run.path)} (${run.path}${oid}) ${state}; ${consequence}; restore it (workflow-host check lists what is lost)`,
    { ...error.data, ...(repoId === null ? {} : { repoId }), runId: run.runId, path: run.path, unreadableRun: true },
    { cause: error },
  );
}

/**
 * `error` as {@link unreadableRunError} when it is `runId`'s own error (any run's with a null
 * `runId`) for an object of it that cannot be read (see `isMissingRunObject`), else `error` as
 * it is (an error already composed so is returned as it is).
 */
export function asUnreadableRunError(repoId: string | null, runId: string | null, error: unknown, consequence: string): unknown {
  if (!isMissingRunObject(error) || error.data["unreadableRun"] === true) return error;
  const errorRunId = error.data["runId"];
  if (typeof errorRunId !== "string" || (runId !== null && errorRunId !== runId)) return error;
  return unreadableRunError(repoId, { runId: errorRunId, path: String(error.data["path"]), error }, consequence);
}

/**
 * {@link requireRunLog} from a run folder's listing (`openRunFolder`), for a reader of a page
 * that does not fold the whole log: the run holds no log when its folder has neither an
 * `events/` folder nor a sealed `events.jsonl`, and its `events` entry is there as something
 * else (a problem at `runs/<runId>/events`).
 * @throws event_invalid ({@link noRunLogError})
 */
export function requireRunFolderLog(repoId: string, runId: string, index: RunFolderIndex): void {
  if (index.layout.events !== null || index.layout.compacted !== null) return;
  const eventsPath = `${runsPrefix}${runId}/events`;
  const problem = index.strays.find((p) => p.path === eventsPath);
  if (problem !== undefined) throw noRunLogError(repoId, runId, problem);
}

/**
 * Each run `error` names as one whose object cannot be read, with that run's own error: the
 * entries of `data.unreadableRuns` when it has them (the workflow-run kind's push check names
 * every changed run whose last event it could not read in one refusal), else the one run of
 * `data.runId` (see `isMissingRunObject`); empty for any other error (a `runs/` folder, root
 * or tip: the deployment's).
 * @returns run id → that run's error (as `error` gave it: composed or not)
 */
export function unreadableRunsIn(error: unknown): Map<string, WorkflowHostError> {
  const runs = new Map<string, WorkflowHostError>();
  if (!isMissingRunObject(error)) return runs;
  const listed = error.data["unreadableRuns"];
  if (Array.isArray(listed)) {
    for (const each of listed) {
      if (isMissingRunObject(each) && typeof each.data["runId"] === "string" && !runs.has(each.data["runId"])) runs.set(each.data["runId"], each);
    }
  }
  const runId = error.data["runId"];
  if (typeof runId === "string" && !runs.has(runId)) runs.set(runId, error);
  return runs;
}

/**
 * The guard of every write that decides from a run's whole history (the schedule controls:
 * pause, resume, trigger, backfill): throws when any object of the log it was given could not
 * be read (an event blob, `blobs/`, the sealed log; see {@link unreadablePartOf}). What is lost
 * could be the very event the decision turns on (a series' `TimerFired`, its pause, its end),
 * so a decision on the rest could fire a slot twice or undo what was done.
 * @throws `object_missing` or `object_corrupt` ({@link unreadableRunError}: the run, what is
 *   lost, "nothing was written")
 */
export function requireWholeRun(repoId: string, log: RunLog): void {
  const part = unreadablePartOf(log.runId, log.bad, log.problems);
  if (part !== null) throw unreadableRunError(repoId, part, "nothing was written");
}
