/**
 * Running a scheduler over a store under a FakeClock, for the fixture and property tests:
 * reading every run log at the tip, comparing the scheduler's queue with what the log arms,
 * and waiting (on event-loop turns, never on time) until the two agree.
 */
import { createWorkflowHostScheduler } from "../../seams/scheduler/scheduler.js";
import type { QueuedTimer, SchedulerEvent, SchedulerOptions, WorkflowHostScheduler } from "../../seams/scheduler/scheduler-types.js";
import type { RepoId, RepoStore } from "../../src/substrate/types.js";
import type { FakeClock } from "../../src/testing/fake-clock.js";
import { readRunLog, type RunLog } from "../../src/workflow/run-log.js";
import { WORKFLOW_RUN_KIND } from "../../src/workflow/workflow-run-kind.js";
import { outOfTurns } from "./wait-turns.js";

const HOUR_MS = 3_600_000;

/** A queue entry as the fixture manifests write it. */
export interface QueueView {
  readonly runId: string;
  readonly timerId: string;
  readonly fireAt: string;
  readonly setSeq: number;
}

export interface RunningScheduler {
  readonly scheduler: WorkflowHostScheduler;
  /** Every report, in order. */
  readonly events: SchedulerEvent[];
}

export function repoIdOf(id: string): RepoId {
  return { kind: WORKFLOW_RUN_KIND, id };
}

/**
 * A scheduler (not started) serving every deployment of `store`, on the FakeClock's wall clock
 * and timers. Discovery polls once a day so long advances do not spend their time listing repos;
 * fire commits are not throttled (`minCommitIntervalMs` 0) unless `extra` says otherwise.
 */
export function makeScheduler(store: RepoStore, clock: FakeClock, extra: Partial<SchedulerOptions> = {}): RunningScheduler {
  const events: SchedulerEvent[] = [];
  const scheduler = createWorkflowHostScheduler({
    repoStore: store,
    principal: null,
    listActiveDeployments: () => store.listRepos(null, WORKFLOW_RUN_KIND),
    clock: clock.clock,
    timers: clock.timers,
    discoverEveryMs: 24 * HOUR_MS,
    onEvent: (event) => events.push(event),
    // The group-commit throttle waits on these fake timers; back-to-back commits at one fake
    // instant are what these runs expect (test/unit/scheduler/group-commit.test.ts covers it).
    minCommitIntervalMs: 0,
    ...extra,
  });
  return { scheduler, events };
}

/** Every run's log at the tip of `ref`, by runId. */
export async function readRepoLogs(store: RepoStore, repoId: string, ref = "refs/heads/main"): Promise<Map<string, RunLog>> {
  const reads = await store.openCommittedReads(null, repoIdOf(repoId), ref);
  const logs = new Map<string, RunLog>();
  for (const entry of await reads.listDir("runs")) {
    if (entry.type === "tree") logs.set(entry.name, await readRunLog(reads, entry.name));
  }
  return logs;
}

/** Sorts queue views by fireAt, then runId, then timerId (the order manifests list them in). */
export function sortQueue<T extends QueueView>(timers: readonly T[]): QueueView[] {
  return timers
    .map(({ runId, timerId, fireAt, setSeq }) => ({ runId, timerId, fireAt, setSeq }))
    .sort((a, b) => cmp(a.fireAt, b.fireAt) || cmp(a.runId, b.runId) || cmp(a.timerId, b.timerId));
}

/** The scheduler's queue of one repo, as queue views. */
export function queueOf(scheduler: WorkflowHostScheduler, repoId: string): QueueView[] {
  return sortQueue(scheduler.queuedTimers().filter((t: QueuedTimer) => t.repoId === repoId));
}

/** What the log arms: every pending timer of every run that has not ended. */
export function armedByLog(logs: ReadonlyMap<string, RunLog>): QueueView[] {
  const out: QueueView[] = [];
  for (const [runId, log] of logs) {
    if (log.state.terminal !== null) continue;
    for (const timer of log.state.pendingTimers.values()) out.push({ runId, timerId: timer.timerId, fireAt: timer.fireAt, setSeq: timer.setSeq });
  }
  return sortQueue(out);
}

/**
 * Waits until the scheduler is idle and its queue holds exactly what the log at the tip arms,
 * e.g. after a commit whose follow-on cron TimerSet reaches the queue through the live tail.
 * Gives up after `maxTurns` event-loop turns.
 * @throws Error showing both sides when they never agree
 */
export async function waitForCaughtUp(scheduler: WorkflowHostScheduler, store: RepoStore, repoId: string, maxTurns = 20_000): Promise<void> {
  let tip: string | null | undefined;
  let wanted: QueueView[] = [];
  const since = performance.now();
  for (let turn = 0; ; turn += 1) {
    await scheduler.idle();
    const now = await store.resolveRef(null, repoIdOf(repoId), "refs/heads/main");
    if (now !== tip) {
      tip = now;
      wanted = armedByLog(await readRepoLogs(store, repoId));
    }
    const have = queueOf(scheduler, repoId);
    if (JSON.stringify(have) === JSON.stringify(wanted)) return;
    if (outOfTurns(turn, maxTurns, since)) {
      throw new Error(`scheduler queue never matched the log of ${repoId} at ${String(tip)}:\nqueue ${JSON.stringify(have)}\nlog   ${JSON.stringify(wanted)}`);
    }
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}

/**
 * Runs the clock forward to `untilMs`, stopping at every fireAt the scheduler has queued and
 * letting it catch up with the log there, so a cron series' next tick is armed before the
 * clock passes it however slow the disk is.
 * @throws Error when the clock stops making progress (a due timer that never leaves the queue)
 */
export async function runUntil(run: RunningScheduler, store: RepoStore, repoId: string, clock: FakeClock, untilMs: number): Promise<void> {
  let stalled = 0;
  while (clock.now() < untilMs) {
    const next = Math.min(untilMs, ...run.scheduler.queuedTimers().map((t) => Date.parse(t.fireAt)));
    const before = clock.now();
    await clock.advance(Math.max(0, next - before));
    await waitForCaughtUp(run.scheduler, store, repoId);
    stalled = clock.now() === before ? stalled + 1 : 0;
    if (stalled > 100) throw new Error(`timers due at ${new Date(before).toISOString()} stay queued: ${JSON.stringify(queueOf(run.scheduler, repoId))}`);
  }
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** What a scheduler holds of one deployment, as its callers see it (see {@link heldViewAt}). */
export interface HeldView {
  readonly commitSha: string;
  /** `stats().runs`. */
  readonly statsRuns: number;
  /** Run folders held, readable or not (servedPendingTimers). */
  readonly runs: number;
  /** Every pending timer as `runId/timerId@fireAt`, with " paused" for a paused one, sorted. */
  readonly pending: string[];
  /** The timers armed in memory. */
  readonly queued: QueueView[];
  /** The runs held as unreadable, sorted. */
  readonly unreadable: string[];
}

/**
 * The scheduler's view of `repoId` once every run is at `commitSha` (its tail applied it).
 * @throws Error when the scheduler does not get there within 5,000 turns of the event loop
 */
export async function heldViewAt(scheduler: WorkflowHostScheduler, repoId: string, commitSha: string): Promise<HeldView> {
  const since = performance.now();
  for (let turn = 0; ; turn += 1) {
    await scheduler.idle();
    const served = await scheduler.servedPendingTimers(repoId);
    if (served !== null && served !== "unsettled" && served.commitSha === commitSha) {
      return {
        commitSha,
        statsRuns: scheduler.stats().runs,
        runs: served.runs,
        pending: served.timers.map((t, i) => `${served.runIds[i] as string}/${t.timerId}@${t.fireAt}${t.pausedAt === undefined ? "" : " paused"}`).sort(),
        queued: queueOf(scheduler, repoId),
        unreadable: served.unreadable.map((u) => u.runId).sort(),
      };
    }
    if (outOfTurns(turn, 5_000, since)) throw new Error(`the scheduler never held ${repoId} at ${commitSha}: ${JSON.stringify(served)}`);
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}

/** {@link heldViewAt} of a scheduler started afresh on `store` with no recovery index (every log read at the tip), stopped after. */
export async function freshHeldViewAt(store: RepoStore, clock: FakeClock, repoId: string, commitSha: string): Promise<HeldView> {
  const { scheduler } = makeScheduler(store, clock, { recoveryIndex: false });
  await scheduler.start();
  try {
    return await heldViewAt(scheduler, repoId, commitSha);
  } finally {
    await scheduler.stop();
  }
}
