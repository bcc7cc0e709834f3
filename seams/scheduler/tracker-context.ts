/**
 * What a deployment's view and its fire committer take from the scheduler: the store, the
 * injected time, the process-wide timer queue and where reports go. Shared by both halves of a
 * {@link RepoTracker} (see repo-tracker.ts); nothing in it is per deployment.
 */
import type { RepoStore } from "../../src/substrate/types.js";
import type { Clock, Timers } from "../../src/time/clock.js";
import type { SchedulerQueue } from "./scheduler-queue.js";
import type { CommittedEvents, SchedulerEvent } from "./scheduler-types.js";

export interface TrackerContext {
  readonly store: RepoStore;
  readonly principal: unknown;
  readonly ref: string;
  /** The injected wall clock: "now" for fire decisions, never fires before fireAt by it. */
  readonly clock: Clock;
  /**
   * The injected timers: the group-commit throttle waits on them, and their `now` (else the
   * wall clock) is the monotonic time the throttle and the time slicing measure.
   */
  readonly timers: Timers;
  /** The process-wide queue of armed generations; it also owns suppressions (`dropQueued`). */
  readonly queue: SchedulerQueue;
  /** Most timers per fire commit (see SchedulerOptions.maxBatch). */
  readonly maxBatch: number;
  /** Fire commits of one repo start at least this far apart (monotonic ms; see SchedulerOptions). */
  readonly minCommitIntervalMs: number;
  readonly maxEventBytes: number;
  readonly planOptions: { misfire: "skip" | "latest" | "all"; maxCatchUp: number; misfireGraceMs: number };
  readonly retryInitialMs: number;
  readonly retryMaxMs: number;
  readonly report: (event: SchedulerEvent) => void;
  readonly count: (what: "fired" | "skippedTicks" | "commits" | "commitFailures" | "badEvents", n?: number) => void;
  /**
   * Hands every generation due now (of any deployment) to its deployment's fire buffer, while
   * the delivery that started the calling fire loop is still in flight: a fire loop calls it as
   * it cuts a batch, so timers that came due while it waited go out in that commit.
   */
  readonly takeDue: () => void;
  /** Use and keep the derived recovery index (see recovery-index.ts). */
  readonly recoveryIndex: boolean;
  /** Told of each fire commit with the events it added, once its ref moved (see SchedulerOptions.onCommittedEvents). */
  readonly onCommittedEvents?: (committed: CommittedEvents) => void;
}

/** Epoch ms by the context's wall clock. */
export function wallMs(ctx: TrackerContext): number {
  return ctx.clock().getTime();
}

/** Monotonic ms: the injected timers' `now`, else the wall clock (only differences mean anything). */
export function monotonicMs(ctx: TrackerContext): () => number {
  const timers = ctx.timers;
  return timers.now === undefined ? () => wallMs(ctx) : () => (timers.now as () => number)();
}
