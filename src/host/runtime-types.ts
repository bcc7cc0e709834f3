/**
 * Options and handle of the runtime adapter (docs/design.md §7): what a workflow runtime calls for
 * durable timers and signals of the runs of one deployment.
 */
import type { RunEventFeed } from "../../seams/signals/run-event-feed.js";
import type { CancelOutcome, WorkflowHostScheduler } from "../../seams/scheduler/scheduler-types.js";
import type { DeliverResult, ReceivedSignal, WorkflowHostSignalChannel } from "../../seams/signals/signal-channel-types.js";
import type { Logger } from "../logger.js";
import type { Principal, RepoStore } from "../substrate/types.js";
import type { Clock, Timers } from "../time/clock.js";
import type { MisfirePolicy } from "../workflow/types.js";
import type { CompactRunResult } from "./compact-run.js";
import type { EndRunResult } from "./end-run.js";
import type { TimerFiring } from "../workflow/timer-lifecycle.js";

export type { TimerFiring } from "../workflow/timer-lifecycle.js";

export interface RuntimeAdapterOptions {
  /** Store holding the deployment (with the workflow-run kind handler). */
  readonly store: RepoStore;
  /** Passed to every store call. */
  readonly principal: Principal;
  /** The deployment; checked on creation (repo_id_invalid). */
  readonly repoId: string;
  /** Ref holding the run logs. Default `DEFAULT_REF` ("refs/heads/main"). */
  readonly ref?: string;
  /** The scheduler that fires this deployment's timers (the single writer of TimerFired). */
  readonly scheduler: WorkflowHostScheduler;
  /** Wall clock: `delayMs`, `timeoutMs` and cron next ticks count from it; stamps `at`. */
  readonly clock: Clock;
  /**
   * Accepted so a host can hand the same time sources to every component. The adapter arms no
   * in-memory timer of its own: every timeout is a durable timer that the scheduler fires.
   */
  readonly timers?: Timers;
  /** The signal channel of a run (a host keeps one per run and stops them). */
  readonly channel: (runId: string) => WorkflowHostSignalChannel;
  /**
   * The deployment's event feed, shared with the host's channels so every commit is read once.
   * Default: a feed of the adapter's own (subscribed while a wait is pending, closed by `stop`).
   */
  readonly feed?: RunEventFeed;
  /** Makes a signalId when `deliverSignal` is given none. Default: the channel's own (a random UUID). */
  readonly newId?: () => string;
  /** Where background failures (`scheduleIn`) are reported. Default: silent. */
  readonly logger?: Logger;
  /** Largest serialised event (bytes, default 1 MiB); must match the store's kind handler. */
  readonly maxEventBytes?: number;
}

import type { TimerSpec } from "../workflow/timer-spec.js";
export type { TimerSpec } from "../workflow/timer-spec.js";

export interface SetTimerResult {
  readonly timerId: string;
  /** The armed generation's fireAt (RFC 3339, UTC). */
  readonly fireAt: string;
  /** Seq of the TimerSet that armed it (the generation). */
  readonly setSeq: number;
  /** False when the same request was already armed and nothing was committed. */
  readonly committed: boolean;
}

/**
 * Drops the scheduled timer from the scheduler's memory (`dropQueued`; the log keeps it, so a
 * restart arms it again). Idempotent.
 */
export interface ScheduleDisposer {
  (): void;
  /**
   * Settles when the background TimerSet write is done: the result, or null when the disposer
   * ran before the write started (nothing was written). Rejects with the write's error, which is
   * also reported to the logger, so nobody has to listen.
   */
  readonly ready: Promise<SetTimerResult | null>;
}

export interface WaitForTimerOptions {
  /** Aborts the wait (rejects with `aborted`); the timer itself is untouched. */
  readonly signal?: AbortSignal;
}

export interface WaitForSignalOptions {
  /**
   * Longest wait (ms, finite, ≥ 0), kept by a durable timer: it survives restarts, and a wait
   * re-issued after a restart resumes the deadline its predecessor armed rather than starting a
   * new one. Default: wait without limit.
   */
  readonly timeoutMs?: number;
  /**
   * Aborts the wait: rejects with `aborted`; a signal handed out meanwhile goes back to the
   * channel and the wait's timer is cancelled durably.
   */
  readonly signal?: AbortSignal;
  /**
   * Pins the id of the timeout timer (for runtimes with their own deterministic ids) instead of
   * `wait:<signalName>:<n>`. A pending timer of that id is resumed; one that already fired is
   * taken as this wait's timeout (decided by log order against the signals); otherwise it is set
   * `timeoutMs` from now (without `timeoutMs`: timer_not_found).
   */
  readonly timerId?: string;
  /** Recorded in the SignalConsumed (and the TimerSet) of this wait. */
  readonly stepId?: string;
}

/** What a timed-out `waitForSignal` returns. */
export interface SignalWaitTimedOut {
  readonly timedOut: true;
  /** The timer that fired. */
  readonly timerId: string;
}

export interface WorkflowRuntime {
  readonly repoId: string;
  /**
   * Arms `timerId` of `runId` at `fireAt` in the background (a TimerSet, idempotent as
   * `setTimer`) and returns at once.
   * @returns the disposer; `disposer.ready` settles when the write is done
   * @throws id_invalid, time_invalid synchronously (nothing written); host_stopped
   */
  scheduleIn(runId: string, timerId: string, fireAt: string | Date): ScheduleDisposer;
  /**
   * Arms a timer durably (one TimerSet commit). Idempotent: nothing is committed when the timer
   * is already armed for the same request (one-shot: same fireAt and stepId; cron: same
   * expression, zone, misfire and stepId, whatever tick it is at), nor when its last generation
   * was a one-shot at the same fireAt that has fired (it would fire twice). A different request
   * re-arms it (a reschedule: the old generation never fires); so does any request after a
   * cancel. A fireAt in the past fires at once. `delayMs` counts from now, so repeating a
   * `delayMs` request is a reschedule.
   * @throws id_invalid (runId, timerId, stepId), time_invalid (fireAt, delayMs, not exactly one
   *   of fireAt/delayMs/cron), cron_invalid (expression, zone, no future tick), event_invalid
   *   (misfire; the run has ended) — all but the last before any write; host_stopped; the
   *   store's write errors
   */
  setTimer(runId: string, spec: TimerSpec): Promise<SetTimerResult>;
  /**
   * Resolves when the last-armed generation of the timer has fired (at once if it already has).
   * @throws id_invalid; timer_not_found (never set, cancelled, run ended — also while waiting);
   *   aborted; host_stopped (the runtime was stopped); store_stopped
   */
  waitForTimer(runId: string, timerId: string, options?: WaitForTimerOptions): Promise<TimerFiring>;
  /**
   * Cancels a timer durably through the scheduler (TimerCancelled unless it already fired,
   * decided under the repo lock).
   * @returns the scheduler's outcome and the commit (null when nothing was committed)
   * @throws id_invalid; host_stopped; the store's write errors
   */
  cancelTimer(runId: string, timerId: string, reason?: string): Promise<{ outcome: CancelOutcome; commitSha: string | null }>;
  /**
   * Delivers a signal through the run's channel (deduplicated by signalId).
   * @throws as the channel's `deliver`; host_stopped
   */
  deliverSignal(runId: string, signalName: string, payload: unknown, signalId?: string): Promise<DeliverResult>;
  /**
   * Waits for the oldest unconsumed signal of that name and records it consumed (SignalConsumed).
   * With `timeoutMs` (or `timerId`) a durable timer races the signal and the log decides: the
   * event committed first (lower seq) wins. Signal wins: one commit appends SignalConsumed and,
   * if the timer is still armed, TimerCancelled. Timer wins: `{timedOut: true}`, and the signal
   * (if any) stays unconsumed for the next wait. A signal already in the log settles the wait in
   * its first commit, without arming a timer.
   * @throws id_invalid (runId, signalName, timerId, stepId), time_invalid (timeoutMs) before any
   *   write; aborted; channel_stopped; host_stopped; timer_not_found (the timer was cancelled by
   *   someone else, or the run ended); the store's errors
   */
  waitForSignal(runId: string, signalName: string, options?: WaitForSignalOptions): Promise<ReceivedSignal | SignalWaitTimedOut>;
  /**
   * Seals an ended run into `runs/<runId>/events.jsonl` (each event file's bytes plus `\n`, in
   * seq order; the event files are kept). Idempotent: an already sealed run commits nothing.
   * @returns `{committed, commitSha, path, events, bytes}`
   * @throws id_invalid; run_archived (retention archived it); event_invalid (`data.reason`:
   *   "no_log", "not_ended", "log_problems"); host_stopped; the store's write errors
   */
  compactRun(runId: string): Promise<CompactRunResult>;
  /**
   * Ends the run as completed: appends `RunCompleted` (stamped `at` now, `data` if given), which
   * disarms its timers; nothing may follow. Idempotent for a run already completed.
   * @param data plain JSON recorded as the event's `data` (a result), optional
   * @returns `{type, seq, committed, commitSha}`
   * @throws id_invalid, run_not_found (the run has no event: nothing is written), run_archived
   *   (retention archived it: it ended already), event_invalid (`data.reason` "already_ended":
   *   it ended otherwise; or data not JSON); host_stopped; the store's write errors
   */
  completeRun(runId: string, data?: Record<string, unknown>): Promise<EndRunResult>;
  /** As {@link completeRun}, appending `RunFailed` (`data`: the error, optional). */
  failRun(runId: string, data?: Record<string, unknown>): Promise<EndRunResult>;
  /** As {@link completeRun}, appending `RunCancelled` (`data`: the reason, optional). */
  cancelRun(runId: string, data?: Record<string, unknown>): Promise<EndRunResult>;
  /**
   * Ends every pending wait of this runtime (they reject with host_stopped) and waits until their
   * subscriptions are released; durable timers stay armed in the log. Later calls throw
   * host_stopped. Idempotent. Channels are not stopped: their owner stops them.
   */
  stop(): Promise<void>;
}
