/**
 * Pending timers read straight from the logs at each deployment's tip: what a host would arm
 * if it started now. Needs no running host and takes no lock, so it is safe next to one.
 */
import { DEFAULT_REF } from "../substrate/ref-name.js";
import { isWorkflowHostError, type WorkflowHostError } from "../errors.js";
import { clockOf, type ClockOption } from "../time/clock-option.js";
import type { Principal, RepoStore } from "../substrate/types.js";
import { parseRepoId } from "../workflow/ids.js";
import type { BadEvent } from "../workflow/run-log.js";
import { summarizeRunLog } from "../workflow/run-log-summary.js";
import { readEachRun, requireRunLog, requireWholeRunLog, type UnreadableRun } from "../workflow/unreadable-runs.js";
import type { MisfirePolicy } from "../workflow/types.js";
import { WORKFLOW_RUN_KIND } from "../workflow/workflow-run-kind.js";
import { createTimeSlicer } from "../time/time-slicer.js";

/** One armed timer generation of one run. */
export interface PendingTimerInfo {
  readonly repoId: string;
  readonly runId: string;
  readonly timerId: string;
  /** When this generation is due (a cron series: its next tick), RFC 3339 UTC. */
  readonly fireAt: string;
  /** How long until `fireAt` (ms from now, by the `clock` given); 0 when it is due or overdue. */
  readonly dueInMs: number;
  /** How far `fireAt` is past now (ms); 0 when it is in the future. An overdue one-shot fires as soon as a host runs. */
  readonly lateMs: number;
  /** Seq of the TimerSet that armed it. */
  readonly setSeq: number;
  readonly stepId?: string;
  readonly cron?: string;
  readonly timezone?: string;
  readonly misfire?: MisfirePolicy;
  /** True for a paused cron series: it fires nothing until resumed (`schedule resume`). */
  readonly paused?: boolean;
}

/** `clock` (or the deprecated `nowMs`, epoch ms) is the reference instant for `dueInMs` and `lateMs`, read once per call. */
export interface ListPendingTimersOptions extends ClockOption {
  readonly principal?: Principal;
  /** Only this deployment. Default: every deployment in the store. */
  readonly repoId?: string;
  /** Default `DEFAULT_REF` ("refs/heads/main"). */
  readonly ref?: string;
  /**
   * Awaited before each run and each event folded, so a listing of many runs gives the event
   * loop a turn every few ms (heartbeats, fires and other requests go on meanwhile). Default: a
   * time slicer of `DEFAULT_SLICE_MS` (src/time/time-slicer.ts), one per call.
   */
  readonly pause?: () => Promise<void>;
}

export interface PendingTimersReport {
  /** Sorted by fireAt, then repo, run and timer id. */
  readonly timers: readonly PendingTimerInfo[];
  /** Events that could not be read (skipped, as a host would); `workflow-host check` explains them. */
  readonly badEvents: readonly (BadEvent & { readonly repoId: string })[];
  /**
   * Deployments that could not be read (e.g. `ref_corrupt`), when every deployment is listed:
   * their timers are missing from `timers`; the others are listed. Empty with `repoId`, which
   * throws instead.
   */
  readonly failedRepos: readonly { readonly repoId: string; readonly error: WorkflowHostError }[];
  /**
   * Runs whose folder or `events/` folder could not be read (`object_missing`, `object_corrupt`),
   * or whose log could not be read whole (an event, `blobs/` or the sealed log lost or damaged:
   * the same codes, `path` the first such object; a lost event may be a timer's fire, so none of
   * the run's timers is listed as pending), or that hold no log because their `events` entry is a file or a link (`event_invalid`, at
   * `runs/<runId>/events`, as `workflow-host check` names it); see
   * src/workflow/unreadable-runs.ts. By repo then run: their timers are missing from `timers`;
   * the deployment's other runs are listed (a host skips and reports a run whose folders cannot
   * be read the same way).
   */
  readonly unreadableRuns: readonly (UnreadableRun & { readonly repoId: string })[];
  readonly repos: number;
  /** Run folders listed, read or not. */
  readonly runs: number;
}

/**
 * Lists every armed timer of every non-terminal run.
 * @returns the timers, any unreadable events and runs met on the way and, when every deployment
 *   is listed, the deployments that could not be read (`failedRepos`)
 * @throws repo_id_invalid for a bad `repoId`, config_invalid without a clock; with `repoId`: repo_not_found, ref_corrupt,
 *   object_corrupt (the tip's root or `runs/` folder), io_failed; authorize_denied
 */
export async function listPendingTimers(store: RepoStore, opts: ListPendingTimersOptions): Promise<PendingTimersReport> {
  const nowMs = clockOf(opts, "listPendingTimers")().getTime();
  const principal = opts.principal ?? null;
  const ref = opts.ref ?? DEFAULT_REF;
  const repoIds = opts.repoId === undefined ? await store.listRepos(principal, WORKFLOW_RUN_KIND) : [parseRepoId(opts.repoId)];
  const timers: PendingTimerInfo[] = [];
  const badEvents: (BadEvent & { repoId: string })[] = [];
  const failedRepos: { repoId: string; error: WorkflowHostError }[] = [];
  const unreadableRuns: (UnreadableRun & { repoId: string })[] = [];
  let runs = 0;
  const pause = opts.pause ?? createTimeSlicer().pause;
  for (const repoId of repoIds) {
    try {
      const found = await pendingTimersOf(store, principal, repoId, ref, nowMs, pause);
      timers.push(...found.timers);
      badEvents.push(...found.badEvents);
      for (const run of found.unreadable) unreadableRuns.push({ ...run, repoId });
      runs += found.runs;
    } catch (error) {
      // One deployment that cannot be read does not hide the others' timers.
      if (opts.repoId !== undefined || !isWorkflowHostError(error) || error.code === "authorize_denied" || error.code === "store_stopped") throw error;
      failedRepos.push({ repoId, error });
    }
  }
  const key = (t: PendingTimerInfo): string => `${t.repoId}\u0000${t.runId}\u0000${t.timerId}`;
  timers.sort((a, b) => Date.parse(a.fireAt) - Date.parse(b.fireAt) || (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
  return { timers, badEvents, failedRepos, unreadableRuns, repos: repoIds.length, runs };
}

/** The pending timers of one deployment (see {@link listPendingTimers}). */
async function pendingTimersOf(
  store: RepoStore,
  principal: Principal,
  repoId: string,
  ref: string,
  nowMs: number,
  pause: () => Promise<void>,
): Promise<{ timers: PendingTimerInfo[]; badEvents: (BadEvent & { repoId: string })[]; unreadable: readonly UnreadableRun[]; runs: number }> {
  const timers: PendingTimerInfo[] = [];
  const badEvents: (BadEvent & { repoId: string })[] = [];
  const reads = await store.openCommittedReads(principal, { kind: WORKFLOW_RUN_KIND, id: repoId }, ref);
  // Folded event by event (a run's log has no size bound), and kept by the run's tree oid; a run
  // whose folders cannot be read, whose events entry is no folder (no log), or whose log was not
  // read whole (a lost event may be a timer's fire) is named, the others listed.
  const { runs, unreadable } = await readEachRun(reads, async (runId) => {
    const log = requireRunLog(repoId, await summarizeRunLog(reads, runId, { pause }));
    for (const bad of log.bad) badEvents.push({ ...bad, repoId });
    requireWholeRunLog(repoId, log);
    if (log.state.terminal !== null) return;
    for (const pending of log.state.pendingTimers.values()) {
      timers.push({
        repoId,
        runId,
        timerId: pending.timerId,
        fireAt: pending.fireAt,
        dueInMs: Math.max(0, Date.parse(pending.fireAt) - nowMs),
        lateMs: Math.max(0, nowMs - Date.parse(pending.fireAt)),
        setSeq: pending.setSeq,
        ...(pending.stepId === undefined ? {} : { stepId: pending.stepId }),
        ...(pending.cron === undefined ? {} : { cron: pending.cron, timezone: pending.timezone ?? "UTC" }),
        ...(pending.misfire === undefined ? {} : { misfire: pending.misfire }),
        ...(pending.pausedAt === undefined ? {} : { paused: true }),
      });
    }
  }, pause);
  return { timers, badEvents, unreadable, runs: runs.length + unreadable.length };
}
