/**
 * `waitForSignal` of the runtime adapter: a signal, optionally raced by a durable timeout.
 *
 * A timed wait goes: arming → racing → settling → done.
 * - arming, one commit under the repo lock: pick the timer (resume a pending `wait:<name>:<n>`
 *   no other wait of this process holds, else the next n; or the caller's `timerId`) and, when
 *   the log already holds an unconsumed signal of the name, settle at once in that same commit;
 *   else append the TimerSet (nothing when resuming).
 * - racing: the channel's `awaitNext` against the timer's fire; whichever resolves first stops
 *   the other (a signal the channel handed out meanwhile is kept for settling).
 * - settling, one commit under the repo lock, by log order: the event with the lower seq wins.
 *   A signal that wins is consumed (SignalConsumed) together with a TimerCancelled when the
 *   timer is still armed; a fire that wins leaves every signal unconsumed (a signal this wait
 *   holds goes back to the channel for the next wait). When the timer won the race, a signal
 *   committed before the fire but not yet seen by the channel still wins: it is claimed from
 *   the log. If the signal was consumed elsewhere meanwhile, the wait races again.
 *
 * Rule for ties: there are none — every event has its own seq; "first" means committed first.
 */
import type { Clock } from "../time/clock.js";
import type { RunEventFeed } from "../../seams/signals/run-event-feed.js";
import type { WorkflowHostScheduler } from "../../seams/scheduler/scheduler-types.js";
import type { ReceivedSignal, WorkflowHostSignalChannel } from "../../seams/signals/signal-channel-types.js";
import { WorkflowHostError, isWorkflowHostError } from "../errors.js";
import type { Logger } from "../logger.js";
import type { Principal, RepoStore } from "../substrate/types.js";
import type { RunLog } from "../workflow/run-log.js";
import { summarizeRunLog } from "../workflow/run-log-summary.js";
import { isoFromMs } from "../workflow/time.js";
import type { UnconsumedSignal } from "../workflow/types.js";
import { WORKFLOW_RUN_KIND } from "../workflow/workflow-run-kind.js";
import type { SignalWaitTimedOut } from "./runtime-types.js";
import { signalWaitTimerId, signalWaitTimerNumber } from "../workflow/signal-wait-timer.js";
import { newSignalConsumed, newTimerCancelled, newTimerSet, type NewRunEvent } from "../workflow/event-constructors.js";
import { isSignalConsumed, isTimerFired, isTimerSet } from "../workflow/event-guards.js";
import type { RunLogWriter } from "../workflow/run-log-writer.js";
import { foldTimerEvents, type TimerFiring } from "../workflow/timer-lifecycle.js";
import { watchTimer, type WatchTimerContext } from "./watch-timer.js";

/** What a wait needs: the timer wait's context (feed and committed reads), plus the writer and the scheduler. */
export interface SignalWaitContext extends WatchTimerContext {
  /** Writes the run logs of this deployment (the same store, principal, repoId, ref and limit). */
  readonly runLog: RunLogWriter;
  readonly scheduler: WorkflowHostScheduler;
  /** Wall clock: `at` of the events a wait writes and the timeout's fireAt. */
  readonly clock: Clock;
  readonly logger: Logger;
  /** `runId/timerId` of the timers held by timed waits in progress in this process. */
  readonly activeTimers: Set<string>;
}

/** Already-validated inputs of one wait. */
export interface SignalWaitRequest {
  readonly runId: string;
  readonly signalName: string;
  readonly timeoutMs?: number;
  readonly timerId?: string;
  readonly stepId?: string;
  /** Aborts the wait (the caller's signal or the runtime stopping). */
  readonly signal: AbortSignal;
  /** True when the abort came from the caller (the wait is abandoned: its timer is cancelled). */
  readonly abandoned: () => boolean;
}

type Settled<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: unknown };

function settle<T>(promise: Promise<T>): Promise<Settled<T>> {
  return promise.then(
    (value) => ({ ok: true, value }),
    (error: unknown) => ({ ok: false, error }),
  );
}

function received(signal: UnconsumedSignal | ReceivedSignal): ReceivedSignal {
  return { signalId: signal.signalId, signalName: signal.signalName, payload: signal.payload, seq: signal.seq, at: signal.at };
}

function isConsumedIn(log: RunLog, signalId: string): boolean {
  return log.events.some((e) => isSignalConsumed(e) && e.data.signalId === signalId);
}

/**
 * Waits for a signal of `request.signalName` in the run and records it consumed; with
 * `timeoutMs` or `timerId`, races it against a durable timer (see the module comment).
 * @returns the signal, or `{timedOut: true, timerId}`
 * @throws aborted, channel_stopped, timer_not_found, and the store's errors
 */
export async function waitForSignalInRun(
  ctx: SignalWaitContext,
  channel: WorkflowHostSignalChannel,
  request: SignalWaitRequest,
): Promise<ReceivedSignal | SignalWaitTimedOut> {
  if (request.timeoutMs === undefined && request.timerId === undefined) return untimedWait(channel, request);
  return timedWait(ctx, channel, request);
}

async function untimedWait(channel: WorkflowHostSignalChannel, request: SignalWaitRequest): Promise<ReceivedSignal> {
  for (;;) {
    const signal = await channel.awaitNext(request.signalName, request.signal);
    let seq: number | null;
    try {
      ({ seq } = await channel.consume(signal.signalId, request.stepId));
    } catch (error) {
      channel.release(signal.signalId);
      throw error;
    }
    // null: another process consumed it first; it is not this wait's.
    if (seq !== null) return signal;
  }
}

type Arming =
  | { readonly kind: "signal"; readonly signal: ReceivedSignal; readonly timerId: string; readonly cancelled: boolean }
  | { readonly kind: "timeout"; readonly timerId: string }
  | { readonly kind: "armed"; readonly timerId: string; readonly setSeq: number };

async function timedWait(ctx: SignalWaitContext, channel: WorkflowHostSignalChannel, request: SignalWaitRequest): Promise<ReceivedSignal | SignalWaitTimedOut> {
  const { runId, signalName } = request;
  const keyOf = (timerId: string): string => `${runId}/${timerId}`;
  let reserved: string | null = null;
  let claimed: string | null = null;
  const undo = (): void => {
    if (reserved !== null) ctx.activeTimers.delete(keyOf(reserved));
    if (claimed !== null) channel.release(claimed);
    reserved = null;
    claimed = null;
  };
  let arming: Arming;
  try {
    const written = await ctx.runLog.append<Arming>(runId, `Wait for signal ${signalName} of run ${runId}`, (log) => {
      // Re-run after a lost compare-and-swap: forget the previous attempt's picks.
      undo();
      const at = isoFromMs(ctx.clock().getTime());
      const timer = pickTimer(ctx, log, request);
      reserved = timer.timerId;
      ctx.activeTimers.add(keyOf(timer.timerId));
      const limit = timer.kind === "fired" ? timer.firedSeq : Number.POSITIVE_INFINITY;
      for (const candidate of log.state.unconsumedSignals) {
        if (candidate.signalName !== signalName || candidate.seq >= limit) continue;
        if (!channel.claim(candidate.signalId)) continue;
        claimed = candidate.signalId;
        const append: NewRunEvent[] = [];
        if (timer.kind === "pending") append.push(newTimerCancelled({ timerId: timer.timerId, reason: `signal ${candidate.signalId}` }, at));
        append.push(newSignalConsumed({ signalId: candidate.signalId, stepId: request.stepId }, at));
        return { append, result: { kind: "signal", signal: received(candidate), timerId: timer.timerId, cancelled: timer.kind === "pending" } };
      }
      if (timer.kind === "fired") return { append: [], result: { kind: "timeout", timerId: timer.timerId } };
      if (timer.kind === "pending") return { append: [], result: { kind: "armed", timerId: timer.timerId, setSeq: timer.setSeq } };
      const fireAt = isoFromMs(ctx.clock().getTime() + (request.timeoutMs as number), "timeoutMs");
      return {
        append: [newTimerSet({ timerId: timer.timerId, fireAt, ...(request.stepId === undefined ? {} : { stepId: request.stepId }) }, at)],
        result: { kind: "armed", timerId: timer.timerId, setSeq: log.nextSeq },
      };
    });
    arming = written.result as Arming;
  } catch (error) {
    undo();
    throw error;
  }
  try {
    if (arming.kind === "signal") {
      if (arming.cancelled) ctx.scheduler.dropQueued(ctx.repoId, runId, arming.timerId);
      return arming.signal;
    }
    if (arming.kind === "timeout") return { timedOut: true, timerId: arming.timerId };
    return await race(ctx, channel, request, arming.timerId, arming.setSeq);
  } finally {
    if (reserved !== null) ctx.activeTimers.delete(keyOf(reserved));
  }
}

type TimerPick =
  | { readonly kind: "pending"; readonly timerId: string; readonly setSeq: number }
  | { readonly kind: "fired"; readonly timerId: string; readonly firedSeq: number }
  | { readonly kind: "new"; readonly timerId: string };

function pickTimer(ctx: SignalWaitContext, log: RunLog, request: SignalWaitRequest): TimerPick {
  const { runId, signalName } = request;
  if (request.timerId !== undefined) {
    const timerId = request.timerId;
    const history = foldTimerEvents(log.events, timerId);
    if (history.status === "armed" && history.setSeq !== null) return { kind: "pending", timerId, setSeq: history.setSeq };
    if (history.status === "fired" && history.fired !== null) return { kind: "fired", timerId, firedSeq: history.fired.seq };
    if (request.timeoutMs === undefined) {
      throw new WorkflowHostError("timer_not_found", `timer ${timerId} of run ${runId} is not armed and no timeoutMs was given to arm it`, { repoId: ctx.repoId, runId, timerId });
    }
    return { kind: "new", timerId };
  }
  // Resume the lowest pending wait timer no wait of this process holds: after a restart, that
  // is the deadline the interrupted wait armed.
  let resume: { n: number; timerId: string; setSeq: number } | null = null;
  for (const [timerId, pending] of log.state.pendingTimers) {
    const n = signalWaitTimerNumber(signalName, timerId);
    if (n === null || ctx.activeTimers.has(`${runId}/${timerId}`)) continue;
    if (resume === null || n < resume.n) resume = { n, timerId, setSeq: pending.setSeq };
  }
  if (resume !== null) return { kind: "pending", timerId: resume.timerId, setSeq: resume.setSeq };
  // A new wait never reuses a number: fired and cancelled timers keep theirs.
  let highest = 0;
  for (const event of log.events) {
    if (!isTimerSet(event)) continue;
    const n = signalWaitTimerNumber(signalName, event.data.timerId);
    if (n !== null && n > highest) highest = n;
  }
  return { kind: "new", timerId: signalWaitTimerId(signalName, highest + 1) };
}

async function race(
  ctx: SignalWaitContext,
  channel: WorkflowHostSignalChannel,
  request: SignalWaitRequest,
  timerId: string,
  setSeq: number,
): Promise<ReceivedSignal | SignalWaitTimedOut> {
  for (;;) {
    const local = new AbortController();
    const onAbort = (): void => local.abort();
    request.signal.addEventListener("abort", onAbort, { once: true });
    if (request.signal.aborted) local.abort();
    const signalP = channel.awaitNext(request.signalName, local.signal);
    const timerP = watchTimer(ctx, request.runId, timerId, local.signal);
    let first: Settled<unknown>;
    let held: ReceivedSignal | undefined;
    let fire: TimerFiring | undefined;
    try {
      first = await Promise.race([settle(signalP), settle(timerP)]);
      local.abort();
      const [s, f] = await Promise.all([settle(signalP), settle(timerP)]);
      held = s.ok ? s.value : undefined;
      fire = f.ok ? f.value : undefined;
    } finally {
      request.signal.removeEventListener("abort", onAbort);
    }
    if (!first.ok) {
      if (held !== undefined) channel.release(held.signalId);
      if (request.abandoned() && fire === undefined) await cancelAbandoned(ctx, request.runId, timerId);
      throw first.error;
    }
    const outcome = await decide(ctx, channel, request, timerId, setSeq, held, fire);
    if (outcome !== "retry") return outcome;
  }
}

/** Settles a race by log order; "retry" when the signal was consumed elsewhere meanwhile. */
async function decide(
  ctx: SignalWaitContext,
  channel: WorkflowHostSignalChannel,
  request: SignalWaitRequest,
  timerId: string,
  setSeq: number,
  held: ReceivedSignal | undefined,
  fire: TimerFiring | undefined,
): Promise<ReceivedSignal | SignalWaitTimedOut | "retry"> {
  const { runId } = request;
  let signal = held;
  if (signal === undefined) {
    // Unreachable: a race settles successfully only with a signal or a fire.
    if (fire === undefined) throw new Error("a race settled with neither a signal nor a fire");
    signal = await claimEarlierSignal(ctx, channel, request, fire.seq);
    if (signal === undefined) return { timedOut: true, timerId };
  }
  const chosen = signal;
  type Verdict = "signal" | "signal_cancelled" | "timeout" | "gone";
  let verdict: Verdict;
  try {
    const written = await ctx.runLog.append<Verdict>(runId, `Signal ${chosen.signalName} (${chosen.signalId}) ends a wait of run ${runId}`, (log) => {
      if (isConsumedIn(log, chosen.signalId)) return { append: [], result: "gone" };
      const fired = log.events.find((e) => isTimerFired(e) && e.seq > setSeq && e.data.timerId === timerId);
      if (fired !== undefined && fired.seq < chosen.seq) return { append: [], result: "timeout" };
      const at = isoFromMs(ctx.clock().getTime());
      const armed = log.state.pendingTimers.has(timerId);
      const append: NewRunEvent[] = [];
      if (armed) append.push(newTimerCancelled({ timerId, reason: `signal ${chosen.signalId}` }, at));
      append.push(newSignalConsumed({ signalId: chosen.signalId, stepId: request.stepId }, at));
      return { append, result: armed ? "signal_cancelled" : "signal" };
    });
    verdict = written.result ?? "gone";
  } catch (error) {
    channel.release(chosen.signalId);
    throw error;
  }
  switch (verdict) {
    case "signal_cancelled":
      ctx.scheduler.dropQueued(ctx.repoId, runId, timerId);
      return chosen;
    case "signal":
      return chosen;
    case "timeout":
      channel.release(chosen.signalId);
      return { timedOut: true, timerId };
    case "gone":
      return "retry";
  }
}

/**
 * The timer fired first as this process saw it; a signal committed before the fire that the
 * channel has not handed out (possibly not even seen yet) still wins by log order.
 */
async function claimEarlierSignal(
  ctx: SignalWaitContext,
  channel: WorkflowHostSignalChannel,
  request: SignalWaitRequest,
  firedSeq: number,
): Promise<ReceivedSignal | undefined> {
  const reads = await ctx.store.openCommittedReads(ctx.principal, { kind: WORKFLOW_RUN_KIND, id: ctx.repoId }, ctx.ref);
  // The state alone: the run's summary (kept by run tree oid; folded on when the log only grew).
  const summary = await summarizeRunLog(reads, request.runId, { maxEventBytes: ctx.maxEventBytes });
  for (const candidate of summary.state.unconsumedSignals) {
    if (candidate.signalName !== request.signalName || candidate.seq >= firedSeq) continue;
    if (channel.claim(candidate.signalId)) return received(candidate);
  }
  return undefined;
}

/** A wait its caller abandoned needs its timeout no more; failures are only reported. */
async function cancelAbandoned(ctx: SignalWaitContext, runId: string, timerId: string): Promise<void> {
  try {
    await ctx.scheduler.cancelTimer(ctx.repoId, runId, timerId, "wait aborted");
  } catch (error) {
    if (!isWorkflowHostError(error, "aborted")) ctx.logger.warn(`could not cancel timer ${timerId} of run ${runId} after an aborted wait: ${String(error)}`, { repoId: ctx.repoId, runId, timerId });
  }
}
