/**
 * Pending timers read straight from the logs at each deployment's tip: what a host would arm
 * if it started now. Needs no running host and takes no lock, so it is safe next to one.
 */
import { DEFAULT_REF } from "../substrate/ref-name.js";
import { describeValue, isWorkflowHostError, WorkflowHostError } from "../errors.js";
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
import { compareTimerPlaces, type TimersCursor } from "./timers-cursor.js";

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
  /**
   * A page: only the timers after this place in the listing's order (a previous page's
   * `nextAfter`; see src/host/timers-cursor.ts). Default: from the first timer.
   */
  readonly after?: TimersCursor;
  /**
   * A page: at most this many timers (a whole number >= 1); only they are made into listing
   * entries, and a few times this many timers are held at once, never every timer. Default: every timer.
   */
  readonly limit?: number;
}

export interface PendingTimersReport {
  /**
   * Sorted by fireAt, then repo, run and timer id (plain code-unit order); with `after` or
   * `limit`, the page of them: the timers after `after`, at most `limit`.
   */
  readonly timers: readonly PendingTimerInfo[];
  /** Every pending timer of the runs read, on this page or not. */
  readonly pendingTimers: number;
  /**
   * The `after` of the next page (the place of this page's last timer) when more timers follow
   * this page, else null.
   */
  readonly nextAfter: TimersCursor | null;
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
 * @throws page_invalid for a `limit` that is not a whole number >= 1 (before anything is read);
 *   repo_id_invalid for a bad `repoId`, config_invalid without a clock; with `repoId`: repo_not_found, ref_corrupt,
 *   object_corrupt (the tip's root or `runs/` folder), io_failed; authorize_denied
 */
export async function listPendingTimers(store: RepoStore, opts: ListPendingTimersOptions): Promise<PendingTimersReport> {
  const nowMs = clockOf(opts, "listPendingTimers")().getTime();
  const limit = opts.limit ?? Number.POSITIVE_INFINITY;
  if (opts.limit !== undefined && !(Number.isSafeInteger(opts.limit) && opts.limit >= 1)) {
    throw new WorkflowHostError("page_invalid", `limit ${describeValue(opts.limit)} is not valid for a page of pending timers; allowed: a whole number >= 1`, { field: "limit", value: opts.limit });
  }
  const principal = opts.principal ?? null;
  const ref = opts.ref ?? DEFAULT_REF;
  const repoIds = opts.repoId === undefined ? await store.listRepos(principal, WORKFLOW_RUN_KIND) : [parseRepoId(opts.repoId)];
  const page = new TimersPage(opts.after ?? null, limit);
  const badEvents: (BadEvent & { repoId: string })[] = [];
  const failedRepos: { repoId: string; error: WorkflowHostError }[] = [];
  const unreadableRuns: (UnreadableRun & { repoId: string })[] = [];
  const commits: { repoId: string; commitSha: string | null }[] = [];
  let runs = 0;
  const pause = opts.pause ?? createTimeSlicer().pause;
  for (const repoId of repoIds) {
    try {
      // Kept apart until the deployment is read whole: one that fails lists none of its timers.
      const found = await pendingTimersOf(store, principal, repoId, ref, new TimersPage(page.after, limit), pause);
      page.merge(found.page);
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
  const { kept, nextAfter } = page.finish();
  // Only the page's timers are made into listing entries.
  const timers = kept.map((c) => pendingTimerInfo(c.place.repoId, c.place.runId, c.pending, nowMs));
  return { timers, pendingTimers: page.count, nextAfter, badEvents, failedRepos, unreadableRuns, repos: repoIds.length, runs, commits };
}

/** A pending timer met by the fold, at its place in the listing's order. */
interface PlacedTimer {
  readonly place: TimersCursor;
  readonly pending: PendingTimer;
}

/**
 * The page of the listing being gathered while the logs are folded: counts every timer offered,
 * keeps those after `after`, and never holds more than `2 × limit` of them (sorted and cut back
 * to `limit` when it gets there), so a page of 100 of a million timers holds a few hundred.
 */
class TimersPage {
  /** Every timer offered (and merged). */
  count = 0;
  /** Those after `after`: the page and what follows it. */
  #following = 0;
  #kept: PlacedTimer[] = [];

  constructor(
    readonly after: TimersCursor | null,
    readonly limit: number,
  ) {}

  offer(repoId: string, runId: string, pending: PendingTimer): void {
    this.count += 1;
    const place = { fireAtMs: Date.parse(pending.fireAt), repoId, runId, timerId: pending.timerId };
    if (this.after !== null && compareTimerPlaces(place, this.after) <= 0) return;
    this.#following += 1;
    this.#keep({ place, pending });
  }

  /** Takes in the timers another page (of one deployment, same bounds) gathered. */
  merge(other: TimersPage): void {
    this.count += other.count;
    this.#following += other.#following;
    for (const placed of other.#kept) this.#keep(placed);
  }

  /** The page, in the listing's order, and the next page's `after` when more timers follow. */
  finish(): { kept: readonly PlacedTimer[]; nextAfter: TimersCursor | null } {
    this.#cut();
    const last = this.#kept.at(-1);
    return { kept: this.#kept, nextAfter: this.#following > this.#kept.length && last !== undefined ? last.place : null };
  }

  #keep(placed: PlacedTimer): void {
    this.#kept.push(placed);
    if (this.#kept.length >= 2 * this.limit) this.#cut();
  }

  #cut(): void {
    this.#kept.sort((a, b) => compareTimerPlaces(a.place, b.place));
    if (this.#kept.length > this.limit) this.#kept.length = this.limit;
  }
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
  page: TimersPage,
  pause: () => Promise<void>,
): Promise<{ page: TimersPage; badEvents: (BadEvent & { repoId: string })[]; unreadable: readonly UnreadableRun[]; runs: number; commitSha: string | null }> {
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
    for (const pending of log.state.pendingTimers.values()) page.offer(repoId, runId, pending);
  }, pause);
  return { page, badEvents, unreadable, runs: runs.length + unreadable.length, commitSha: reads.commitSha };
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
 * {@link listPendingTimers} with this `repoId` (and no page) gives at the commit `commits[0]` names. `badEvents`
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
  return { timers, pendingTimers: timers.length, nextAfter: null, badEvents: [], failedRepos: [], unreadableRuns, repos: 1, runs: served.runs, commits: [{ repoId, commitSha: served.commitSha }] };
}

/** By run id, then timer id. */
function compareIds(a: PendingTimerInfo, b: PendingTimerInfo): number {
  if (a.runId !== b.runId) return a.runId < b.runId ? -1 : 1;
  return a.timerId < b.timerId ? -1 : a.timerId > b.timerId ? 1 : 0;
}
