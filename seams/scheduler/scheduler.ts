/**
 * The host scheduler: the single writer of timer outcomes (docs/design.md §5).
 *
 * States: created → starting (recovering every active deployment) → running (live tail,
 * discovery polling, one armed timer) → stopped. Per deployment a {@link RepoTracker} keeps
 * the runs' state; one process-wide timer queue holds every armed generation.
 *
 * Guarantees:
 * - exactly one TimerFired per armed generation, across restarts, crashes, retries and
 *   duplicate TimerSets: every fire is decided under the repo lock from the log at the parent
 *   commit (see `src/workflow/timer-ledger.ts`);
 * - never before fireAt by the injected clock; an overdue timer fires at once;
 * - due timers of one repo are committed together, the batch growing with the backlog (1,000,
 *   then twice the previous commit's while timers wait, at most `maxBatch`), and fire commits
 *   of one repo start at least `minCommitIntervalMs` apart (group commit); a commit held back
 *   that way takes every timer that came due while it waited (the queue is asked as the batch
 *   is cut, not left to deliver after the fire loops);
 * - a failed commit is retried with backoff and reported; a bad event is reported and skipped.
 */
import { storeOf } from "../../src/substrate/store-option.js";
import { DEFAULT_REF } from "../../src/substrate/ref-name.js";
import { WorkflowHostError } from "../../src/errors.js";
import { silentLogger, type Logger } from "../../src/logger.js";
import { createSystemTimers, type TimerHandle, type Timers } from "../../src/time/clock.js";
import { createTimeSlicer } from "../../src/time/time-slicer.js";
import { DEFAULT_MAX_CATCH_UP, DEFAULT_MISFIRE_GRACE_MS } from "../../src/workflow/timer-ledger.js";
import { WORKFLOW_RUN_KIND } from "../../src/workflow/workflow-run-kind.js";
import { RepoTracker, type TrackerContext } from "./repo-tracker.js";
import { createSchedulerQueue, type DueGeneration } from "./scheduler-queue.js";
import { cancelTimerDurably } from "./timer-cancel.js";
import type {
  CancelOutcome,
  SchedulerEvent,
  SchedulerOptions,
  SchedulerStats,
  WorkflowHostScheduler,
} from "./scheduler-types.js";

export type * from "./scheduler-types.js";

const MAX_RECENT_BAD = 100;
/** How many cancellation reports are remembered to drop the second sighting of one cancel. */
const MAX_REPORTED_CANCELS = 1_000;
/** See {@link SchedulerOptions.minCommitIntervalMs}. */
export const DEFAULT_MIN_COMMIT_INTERVAL_MS = 8;
/** See {@link SchedulerOptions.maxBatch}. */
export const DEFAULT_MAX_BATCH = 20_000;

/**
 * Creates the scheduler. Nothing runs until `start()`.
 * @param opts see {@link SchedulerOptions}; `store` must have the workflow-run kind handler
 * @throws `config_invalid` (synchronously) without a store; `time_invalid` for a `maxArmMs` or `minCommitIntervalMs` out of range;
 *   after that nothing: every runtime failure is reported through `onEvent`/`logger`
 */
export function createWorkflowHostScheduler(opts: SchedulerOptions): WorkflowHostScheduler {
  const store = storeOf(opts, "createWorkflowHostScheduler");
  const ref = opts.ref ?? DEFAULT_REF;
  const minCommitIntervalMs = opts.minCommitIntervalMs ?? DEFAULT_MIN_COMMIT_INTERVAL_MS;
  if (typeof minCommitIntervalMs !== "number" || !Number.isFinite(minCommitIntervalMs) || minCommitIntervalMs < 0 || minCommitIntervalMs > 60_000) {
    throw new WorkflowHostError("time_invalid", `minCommitIntervalMs ${String(minCommitIntervalMs)} is not a number of milliseconds in 0 … 60000`, { minCommitIntervalMs });
  }
  const logger = opts.logger ?? silentLogger;
  const timers: Timers = opts.timers ?? createSystemTimers({ unref: true });
  const discoverEveryMs = opts.discoverEveryMs ?? 2_000;
  const retryInitialMs = opts.retryInitialMs ?? 500;
  const retryMaxMs = opts.retryMaxMs ?? 30_000;
  const nowMs = (): number => opts.clock().getTime();

  const trackers = new Map<string, RepoTracker>();
  const failedRepos = new Map<string, { retryAtMs: number; delayMs: number }>();
  const counters = { fired: 0, skippedTicks: 0, cancelled: 0, commits: 0, commitFailures: 0, badEvents: 0 };
  const recentBad: { repoId: string; path: string; seq: number | null; code: string }[] = [];
  let state: "created" | "starting" | "running" | "stopped" = "created";
  let discoverHandle: TimerHandle | null = null;
  let discovering: Promise<void> | null = null;

  /** Cancellations reported, by `repo/run/timer@commit`: our own cancel and the tail both see it. */
  const reportedCancels = new Set<string>();

  // Each report goes to one place: `onEvent` when given, else the logger (never both, so a
  // listener that prints reports does not see every warning twice).
  const log: Logger = opts.onEvent === undefined ? logger : silentLogger;

  const report = (event: SchedulerEvent): void => {
    if (event.type === "cancelled") {
      const key = `${event.repoId}/${event.runId}/${event.timerId}@${event.commitSha ?? ""}`;
      if (reportedCancels.has(key)) return;
      reportedCancels.add(key);
      if (reportedCancels.size > MAX_REPORTED_CANCELS) reportedCancels.delete(reportedCancels.values().next().value as string);
      counters.cancelled += 1;
    } else if (event.type === "bad_event") {
      recentBad.push({ repoId: event.repoId, path: event.path, seq: event.seq, code: event.error.code });
      if (recentBad.length > MAX_RECENT_BAD) recentBad.shift();
      log.warn(`bad event skipped: ${event.path} (${event.error.message})`, { repoId: event.repoId, seq: event.seq });
    } else if (event.type === "commit_failed" || event.type === "repo_failed") {
      const run = event.type === "commit_failed" && event.runId !== undefined ? ` (run ${event.runId})` : "";
      log.error(`${event.type} in ${event.repoId}${run}, retry in ${event.retryInMs} ms: ${String(event.error)}`);
    } else if (event.type === "timer_rejected") {
      log.error(`timer ${event.runId}/${event.timerId} in ${event.repoId} refused: ${String(event.error)}`);
    } else if (event.type === "rewind_refused") {
      log.warn(`ref of ${event.repoId} moved back from ${event.from} to its ancestor ${event.to}: refused; nothing fires again or is committed until it is restored to ${event.from} or the host restarts`);
    } else if (event.type === "index_replaced") {
      log.warn(`a directory sat at the recovery index path of ${event.repoId}; moved to ${event.displacedTo} and the index rebuilt`);
    } else if (event.type === "archive_unreadable") {
      log.warn(`archive ref of ${event.repoId} unreadable; live runs served, archived runs cannot be read: ${event.error.message}`);
    } else if (event.type === "ref_rewritten") {
      log.warn(`ref of ${event.repoId} rewritten from ${event.from ?? "nothing"} to ${event.to}; runs re-read`);
    }
    try {
      opts.onEvent?.(event);
    } catch {
      // A listener's failure must never stop the scheduler.
    }
  };

  /** Due generations to their deployments' fire loops: each loop's promise with what it was given. */
  const route = (due: readonly DueGeneration[]): [Promise<void>, DueGeneration[]][] => {
    const byRepo = new Map<string, DueGeneration[]>();
    // Indexed: a for-of makes an iterator result per timer until V8 optimises the loop (a fresh host's first bursts).
    for (let i = 0; i < due.length; i++) {
      const item = due[i] as DueGeneration;
      const list = byRepo.get(item.repoId);
      if (list === undefined) byRepo.set(item.repoId, [item]);
      else list.push(item);
    }
    return [...byRepo].map(([repoId, list]) => [trackers.get(repoId)?.fire(list) ?? Promise.resolve(), list]);
  };
  const deliveryFailed = (error: unknown, due: readonly DueGeneration[]): void => {
    logger.error(`timer delivery failed: ${String(error)}`);
    const retryAtMs = nowMs() + retryInitialMs;
    for (const item of due) queue.arm(item.repoId, item.runId, item.pending, retryAtMs);
  };
  /**
   * Fire loops fed by `takeDue` (a loop cutting its batch took what fell due meanwhile, for any
   * deployment); the delivery in flight waits for them as for its own, so `advance` on a
   * FakeClock and `stop()` still see every commit through.
   */
  const taken = new Set<Promise<void>>();
  const queue = createSchedulerQueue({
    clock: opts.clock,
    timers,
    ...(opts.maxArmMs === undefined ? {} : { maxArmMs: opts.maxArmMs }),
    onDue: async (due) => {
      await Promise.all(route(due).map(([loop]) => loop));
      while (taken.size > 0) await Promise.all([...taken]);
    },
    onError: deliveryFailed,
  });
  const takeDue = (): void => {
    const due = queue.takeDue();
    if (due.length === 0) return;
    for (const [loop, list] of route(due)) {
      const watched: Promise<void> = loop.catch((error: unknown) => deliveryFailed(error, list)).finally(() => taken.delete(watched));
      taken.add(watched);
    }
  };

  const ctx: TrackerContext = {
    store,
    principal: opts.principal,
    ref,
    clock: opts.clock,
    timers,
    queue,
    maxBatch: opts.maxBatch ?? DEFAULT_MAX_BATCH,
    minCommitIntervalMs,
    maxEventBytes: opts.maxEventBytes ?? 1_048_576,
    planOptions: {
      misfire: opts.misfire ?? "skip",
      maxCatchUp: opts.maxCatchUp ?? DEFAULT_MAX_CATCH_UP,
      misfireGraceMs: opts.misfireGraceMs ?? DEFAULT_MISFIRE_GRACE_MS,
    },
    retryInitialMs,
    retryMaxMs,
    report,
    count: (what, n = 1) => {
      counters[what] += n;
    },
    recoveryIndex: opts.recoveryIndex ?? true,
    takeDue,
    ...(opts.onCommittedEvents === undefined ? {} : { onCommittedEvents: opts.onCommittedEvents }),
  };

  async function track(repoId: string): Promise<void> {
    const tracker = new RepoTracker(repoId, ctx, (failed, error) => {
      if (trackers.get(repoId) !== failed) return;
      trackers.delete(repoId);
      void failed.stop();
      markFailed(repoId, error);
    });
    trackers.set(repoId, tracker);
    try {
      await tracker.recover();
      failedRepos.delete(repoId);
    } catch (error) {
      trackers.delete(repoId);
      await tracker.stop();
      markFailed(repoId, error);
    }
  }

  function markFailed(repoId: string, error: unknown): void {
    const previous = failedRepos.get(repoId);
    const delayMs = previous === undefined ? retryInitialMs : Math.min(previous.delayMs * 2, retryMaxMs);
    failedRepos.set(repoId, { retryAtMs: nowMs() + delayMs, delayMs });
    report({ type: "repo_failed", repoId, retryInMs: delayMs, error });
  }

  async function discover(): Promise<void> {
    let listed: readonly (string | { id: string; kind: string })[];
    try {
      listed = await opts.listActiveDeployments();
    } catch (error) {
      logger.error(`listing deployments failed: ${String(error)}`);
      return;
    }
    const active = new Set(listed.filter((r) => typeof r === "string" || r.kind === WORKFLOW_RUN_KIND).map((r) => (typeof r === "string" ? r : r.id)));
    const now = nowMs();
    const starting: Promise<void>[] = [];
    for (const repoId of active) {
      if (trackers.has(repoId)) continue;
      const failed = failedRepos.get(repoId);
      if (failed !== undefined && failed.retryAtMs > now) continue;
      starting.push(track(repoId));
    }
    for (const [repoId, tracker] of trackers) {
      if (!active.has(repoId)) {
        trackers.delete(repoId);
        starting.push(tracker.stop());
      }
    }
    await Promise.all(starting);
  }

  function refresh(): Promise<void> {
    if (state === "stopped") return Promise.resolve();
    if (discovering === null) {
      discovering = discover().finally(() => {
        discovering = null;
      });
    }
    return discovering;
  }

  function armDiscovery(): void {
    if (state !== "running") return;
    discoverHandle = timers.setTimeout(() => {
      discoverHandle = null;
      return refresh().finally(armDiscovery);
    }, discoverEveryMs);
  }

  /** Drops a queued timer from memory (see `dropQueued`); without `repoId`, in every deployment. */
  function dropQueued(runId: string, timerId: string, repoId: string | undefined, setSeq: number | undefined): boolean {
    let dropped = false;
    for (const tracker of trackers.values()) {
      if (repoId !== undefined && tracker.repoId !== repoId) continue;
      const queued = queue.queued(tracker.repoId, runId, timerId);
      const pending = tracker.run(runId)?.state.pendingTimers.get(timerId);
      const upTo = Math.max(setSeq ?? -1, queued?.setSeq ?? -1, pending?.setSeq ?? -1);
      if (queue.suppress(tracker.repoId, runId, timerId, upTo)) dropped = true;
      tracker.forget(runId, timerId);
    }
    return dropped;
  }

  return {
    async start() {
      if (state !== "created") throw new WorkflowHostError("scheduler_stopped", `start() called on a scheduler that is ${state}`, { state });
      state = "starting";
      await refresh();
      if (state !== "starting") return;
      state = "running";
      armDiscovery();
    },

    async stop() {
      if (state === "stopped") return;
      state = "stopped";
      if (discoverHandle !== null) timers.clearTimeout(discoverHandle);
      discoverHandle = null;
      await discovering;
      for (const tracker of trackers.values()) tracker.releaseThrottle();
      await queue.stop();
      await Promise.all([...trackers.values()].map((t) => t.stop()));
      trackers.clear();
    },

    dropQueued(repoId, runId, timerId, setSeq) {
      return dropQueued(runId, timerId, repoId, setSeq);
    },

    cancelQueued(runId, timerId, repoId, setSeq) {
      return dropQueued(runId, timerId, repoId, setSeq);
    },

    async cancelTimer(repoId, runId, timerId, reason) {
      const result = await cancelTimerDurably({
        store,
        principal: opts.principal,
        repoId,
        runId,
        timerId,
        ...(reason === undefined ? {} : { reason }),
        ref,
        ...(opts.maxEventBytes === undefined ? {} : { maxEventBytes: opts.maxEventBytes }),
        clock: opts.clock,
      });
      if (result.outcome === "cancelled") {
        queue.disarm(repoId, runId, timerId);
        report({ type: "cancelled", repoId, runId, timerId, commitSha: result.commitSha });
      }
      return result;
    },

    queuedTimers() {
      return queue.entries().sort((a, b) => Date.parse(a.fireAt) - Date.parse(b.fireAt));
    },

    async servedPendingTimers(repoId, pause = createTimeSlicer().pause) {
      if (state === "stopped") return null;
      return (await trackers.get(repoId)?.pendingSnapshot(pause)) ?? null;
    },

    stats(): SchedulerStats {
      let runs = 0;
      for (const tracker of trackers.values()) runs += tracker.runs.size;
      return { repos: trackers.size, runs, queued: queue.size, ...counters, recentBadEvents: [...recentBad] };
    },

    refresh,

    async idle() {
      await Promise.all([...trackers.values()].map((t) => t.idle()));
    },
  };
}
