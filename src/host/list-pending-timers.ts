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
import type { MisfirePolicy, PendingTimer } from "../workflow/types.js";
import type { ServedPendingTimers } from "../../seams/scheduler/scheduler-types.js";
import { WORKFLOW_RUN_KIND } from "../workflow/workflow-run-kind.js";
import { createTimeSlicer } from "../time/time-slicer.js";
import { createSystemTimers, type Timers } from "../time/clock.js";
import { slicedSort } from "../time/sliced-sort.js";

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
  /**
   * The commit each deployment listed was read at (null: its ref has no commit), by repo in the
   * order listed; a deployment in `failedRepos` is not here.
   */
  readonly commits: readonly { readonly repoId: string; readonly commitSha: string | null }[];
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
  const commits: { repoId: string; commitSha: string | null }[] = [];
  let runs = 0;
  const pause = opts.pause ?? createTimeSlicer().pause;
  for (const repoId of repoIds) {
    try {
      const found = await pendingTimersOf(store, principal, repoId, ref, nowMs, pause);
      timers.push(...found.timers);
      badEvents.push(...found.badEvents);
      for (const run of found.unreadable) unreadableRuns.push({ ...run, repoId });
      runs += found.runs;
      commits.push({ repoId, commitSha: found.commitSha });
    } catch (error) {
      // One deployment that cannot be read does not hide the others' timers.
      if (opts.repoId !== undefined || !isWorkflowHostError(error) || error.code === "authorize_denied" || error.code === "store_stopped") throw error;
      failedRepos.push({ repoId, error });
    }
  }
  const key = (t: PendingTimerInfo): string => `${t.repoId}\u0000${t.runId}\u0000${t.timerId}`;
  timers.sort((a, b) => Date.parse(a.fireAt) - Date.parse(b.fireAt) || (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
  return { timers, badEvents, failedRepos, unreadableRuns, repos: repoIds.length, runs, commits };
}

/** One armed generation of run `runId` as the listing gives it, `dueInMs` and `lateMs` counted from `nowMs`. */
function pendingTimerInfo(repoId: string, runId: string, pending: PendingTimer, nowMs: number): PendingTimerInfo {
  const fireAtMs = Date.parse(pending.fireAt);
  return {
    repoId,
    runId,
    timerId: pending.timerId,
    fireAt: pending.fireAt,
    dueInMs: Math.max(0, fireAtMs - nowMs),
    lateMs: Math.max(0, nowMs - fireAtMs),
    setSeq: pending.setSeq,
    ...(pending.stepId === undefined ? {} : { stepId: pending.stepId }),
    ...(pending.cron === undefined ? {} : { cron: pending.cron, timezone: pending.timezone ?? "UTC" }),
    ...(pending.misfire === undefined ? {} : { misfire: pending.misfire }),
    ...(pending.pausedAt === undefined ? {} : { paused: true }),
  };
}

/** The pending timers of one deployment (see {@link listPendingTimers}). */
async function pendingTimersOf(
  store: RepoStore,
  principal: Principal,
  repoId: string,
  ref: string,
  nowMs: number,
  pause: () => Promise<void>,
): Promise<{ timers: PendingTimerInfo[]; badEvents: (BadEvent & { repoId: string })[]; unreadable: readonly UnreadableRun[]; runs: number; commitSha: string | null }> {
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
    for (const pending of log.state.pendingTimers.values()) timers.push(pendingTimerInfo(repoId, runId, pending, nowMs));
  }, pause);
  return { timers, badEvents, unreadable, runs: runs.length + unreadable.length, commitSha: reads.commitSha };
}

/** Options of {@link listServedPendingTimers}; `clock` as for {@link listPendingTimers}. */
export interface ListServedPendingTimersOptions extends ClockOption {
  /** Awaited every few hundred timers listed and sorted. Default: a time slicer of `DEFAULT_SLICE_MS`, one per call. */
  readonly pause?: () => Promise<void>;
  /**
   * Timers for the 10 ms waited before asking again while the deployment's runs are not all at
   * one commit (a fire commit of the host in flight, the tail applying a commit). Default
   * node's, unref'd.
   */
  readonly timers?: Timers;
  /** Asks before giving up on a deployment that stays unsettled (then null). Default 100. */
  readonly tries?: number;
  /**
   * The deployment's ref tip now (e.g. the store's `resolveRef`), read before each ask; what it
   * throws is thrown (a damaged ref: fold it, and the fold reports it as before). The
   * scheduler's answer is taken only when it is at that tip: while it is behind (the tail has
   * not applied another writer's commit yet) it is asked again after `poke()` and a wait, up to
   * `tries`, then null (fold). Default: none (the scheduler's commit is taken as it is).
   */
  readonly tip?: () => Promise<string | null>;
  /** Asks the store to look at the ref now (see RepoStore.poke), before waiting for the tail. */
  readonly poke?: () => void;
}

/** How long (ms) {@link listServedPendingTimers} waits before asking an unsettled deployment again. */
const SETTLE_MS = 10;

/** How many of the served timers are made into listing entries between two pauses. */
const LISTED_PER_PAUSE = 512;

/**
 * The pending timers of one deployment a running scheduler serves, from the scheduler's memory
 * (see `WorkflowHostScheduler.servedPendingTimers`): no log is read, and the report is what
 * {@link listPendingTimers} with this `repoId` gives at the commit `commits[0]` names. `badEvents`
 * is empty (the host reported each as it read it: `bad_event`); `unreadableRuns` names the runs
 * the host holds as damaged or as holding no log; `failedRepos` is empty.
 * @returns null when the scheduler does not serve `repoId` or has not recovered it (fold the
 *   logs instead), or when its runs stayed unsettled or behind `tip` for `tries` asks
 * @throws config_invalid without a clock; what `tip` throws
 */
export async function listServedPendingTimers(
  scheduler: { servedPendingTimers(repoId: string, pause?: () => Promise<void>): Promise<ServedPendingTimers | "unsettled" | null> },
  repoId: string,
  opts: ListServedPendingTimersOptions,
): Promise<PendingTimersReport | null> {
  const nowMs = clockOf(opts, "listServedPendingTimers")().getTime();
  const pause = opts.pause ?? createTimeSlicer().pause;
  const waits = opts.timers ?? createSystemTimers({ unref: true });
  const settle = (): Promise<void> => new Promise<void>((resolve) => waits.setTimeout(resolve, SETTLE_MS));
  const tries = opts.tries ?? 100;
  let served: ServedPendingTimers | "unsettled" | null = null;
  let atTip = false;
  for (let i = 0; i < tries && !atTip; i++) {
    if (i > 0) await settle();
    const tip = opts.tip === undefined ? undefined : await opts.tip();
    served = await scheduler.servedPendingTimers(repoId, pause);
    if (served === null) return null;
    atTip = served !== "unsettled" && (tip === undefined || served.commitSha === tip);
    if (!atTip && i === 0) opts.poke?.();
  }
  if (served === null || served === "unsettled" || !atTip) return null;
  const { runIds, timers: held } = served;
  const listed: { info: PendingTimerInfo; fireAtMs: number }[] = new Array(held.length);
  for (let i = 0; i < held.length; i++) {
    if (i % LISTED_PER_PAUSE === 0) await pause();
    const info = pendingTimerInfo(repoId, runIds[i] as string, held[i] as PendingTimer, nowMs);
    listed[i] = { info, fireAtMs: Date.parse(info.fireAt) };
  }
  // The fold's order: fireAt, then run and timer id (one repo).
  const sorted = await slicedSort(listed, (a, b) => a.fireAtMs - b.fireAtMs || compareIds(a.info, b.info), pause);
  const timers: PendingTimerInfo[] = new Array(sorted.length);
  for (let i = 0; i < sorted.length; i++) timers[i] = (sorted[i] as { info: PendingTimerInfo }).info;
  // In the order the fold meets them: `runs/` as git orders a folder's entries (each a folder: its name and "/").
  const treeOrder = (runId: string): string => `${runId}/`;
  const unreadableRuns = served.unreadable.map((run) => ({ ...run, repoId })).sort((a, b) => (treeOrder(a.runId) < treeOrder(b.runId) ? -1 : treeOrder(a.runId) > treeOrder(b.runId) ? 1 : 0));
  return { timers, badEvents: [], failedRepos: [], unreadableRuns, repos: 1, runs: served.runs, commits: [{ repoId, commitSha: served.commitSha }] };
}

/** By run id, then timer id. */
function compareIds(a: PendingTimerInfo, b: PendingTimerInfo): number {
  if (a.runId !== b.runId) return a.runId < b.runId ? -1 : 1;
  return a.timerId < b.timerId ? -1 : a.timerId > b.timerId ? 1 : 0;
}
