/**
 * Reading each run of a deployment when some cannot be read: a run whose folder or `events/`
 * folder is not in the repository or is damaged is that run's problem, never the listing's. The
 * scheduler's recovery skips and reports such a run (design notes §52, §57); the readers outside
 * it (pending timers, `runs list`, `check`, retention, the schedule controls) read each run
 * through {@link readRunOrReport} or {@link readEachRun}, so the other runs are read as usual and
 * the damaged one is named with its error. A missing or damaged `runs/` folder, root or tip
 * commit is not one run's: it is thrown as the store raised it (nothing of the deployment can be
 * read).
 */
import type { WorkflowHostError } from "../errors.js";
import type { CommittedReads, DirEntry } from "../substrate/types.js";
import { REPO_OR_RUN_ID_PATTERN } from "./ids.js";
import { runsPrefix } from "./paths.js";
import { type BadEvent, isMissingRunObject } from "./run-log.js";

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
    if (!isMissingRunObject(error) || error.data["runId"] !== runId) throw error;
    return { value: null, unreadable: { runId, path: String(error.data["path"]), error } };
  }
}

/**
 * Lists `runs/` at the commit `reads` is pinned to and reads each run folder whose name is a
 * run id (other entries are passed over, as the scheduler passes them over) with `read`, in
 * name order, one at a time.
 * @returns the runs read with their values, and the runs that could not be read (see
 *   {@link readRunOrReport})
 * @throws the listing's errors (a missing or damaged `runs/` folder or root: the whole
 *   deployment's), and what `read` throws other than a run's unreadable folder
 */
export async function readEachRun<T>(
  reads: CommittedReads,
  read: (runId: string, entry: DirEntry) => Promise<T>,
): Promise<{ readonly runs: readonly { readonly runId: string; readonly value: T }[]; readonly unreadable: readonly UnreadableRun[] }> {
  const runs: { runId: string; value: T }[] = [];
  const unreadable: UnreadableRun[] = [];
  for (const entry of await reads.listDir(runsPrefix.slice(0, -1))) {
    if (entry.type !== "tree" || !REPO_OR_RUN_ID_PATTERN.test(entry.name)) continue;
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
