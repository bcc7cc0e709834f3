/**
 * Waiting for one timer of one run to fire, from the log: attach to the deployment's event feed
 * (which hands over every commit after some C), read the log at the tip T ≥ C, then apply the
 * feed's commits, skipping seqs already applied, so a fire committed in between is neither
 * missed nor seen twice.
 *
 * The timer's events are folded by {@link TimerFold} (`src/workflow/timer-lifecycle.ts`). Each
 * TimerSet starts a new generation; the wait is for a TimerFired of the generation armed last,
 * so a reschedule keeps the wait going and a cron series resolves at its next tick (the
 * follow-on TimerSet comes after the TimerFired in the same commit).
 */
import type { RunEventFeed, RunEventListener } from "../../seams/signals/run-event-feed.js";
import { WorkflowHostError } from "../errors.js";
import type { Principal, RepoStore } from "../substrate/types.js";
import { parseRunId, parseTimerId } from "../workflow/ids.js";
import { forEachRunEvent, summarizeRunLog } from "../workflow/run-log-summary.js";
import { TimerFold, type TimerFiring } from "../workflow/timer-lifecycle.js";
import type { RunEvent } from "../workflow/types.js";
import { WORKFLOW_RUN_KIND } from "../workflow/workflow-run-kind.js";

export interface WatchTimerContext {
  /** The deployment's event feed (one subscription shared by every wait). */
  readonly feed: RunEventFeed;
  readonly store: RepoStore;
  readonly principal: Principal;
  readonly repoId: string;
  readonly ref: string;
  /** Largest event read (bytes). */
  readonly maxEventBytes: number;
}

/**
 * Resolves when the generation of `timerId` armed last has a TimerFired in the log: at once when
 * it already has one, else when the feed hands over the commit holding it (made by this process
 * or another).
 * @param signal aborts the wait; the feed listener is detached either way before this settles
 * @returns the fire
 * @throws id_invalid (runId, timerId) before any store call; timer_not_found when the timer was
 *   never set, or its last generation was cancelled or the run ended before it fired (also when
 *   that happens while waiting); aborted; store_stopped when the store closes meanwhile; the
 *   store's read errors
 */
export async function watchTimer(ctx: WatchTimerContext, runId: string, timerId: string, signal?: AbortSignal): Promise<TimerFiring> {
  parseRunId(runId);
  parseTimerId(timerId);
  const aborted = (): WorkflowHostError =>
    new WorkflowHostError("aborted", `waiting for timer ${timerId} of run ${runId} was aborted`, { repoId: ctx.repoId, runId, timerId });
  if (signal?.aborted === true) throw aborted();
  const fold = new TimerFold(timerId);
  /** The first outcome reached event by event: a cron fire is followed by its next TimerSet in the same commit. */
  let settled: { readonly fire: TimerFiring } | { readonly error: unknown } | null = null;
  let early: RunEvent[] | null = [];
  let wake: (() => void) | null = null;
  const step = (event: RunEvent): void => {
    fold.apply(event);
    if (settled !== null) return;
    try {
      const fire = outcome(fold, ctx.repoId, runId, timerId);
      if (fire !== null) settled = { fire };
    } catch (error) {
      settled = { error };
    }
  };
  const listener: RunEventListener = {
    events(events) {
      for (const event of events) {
        if (early !== null) early.push(event);
        else step(event);
      }
      wake?.();
    },
    failed(error) {
      settled ??= { error };
      wake?.();
    },
  };
  const onAbort = (): void => wake?.();
  signal?.addEventListener("abort", onAbort, { once: true });
  try {
    const attachment = await ctx.feed.attach(runId, listener);
    try {
      // Read at the tip, not at `from`: the feed may lag behind a commit the caller already
      // waited for (its own setTimer). The tip is at or after `from`, and the fold skips the
      // events it has already applied, so the feed's later commits add exactly the rest.
      // The run's summary (kept by run tree oid, folded on from the last one when the log only
      // grew) says whether the timer is armed at the tip: then the fold starts there, and
      // nothing of the log is read again per wait. Otherwise (it fired, was cancelled, the run
      // ended) its history is folded from the log streamed once, none of it held.
      const reads = await ctx.store.openCommittedReads(ctx.principal, { kind: WORKFLOW_RUN_KIND, id: ctx.repoId }, ctx.ref);
      const summary = await summarizeRunLog(reads, runId, { maxEventBytes: ctx.maxEventBytes });
      const pending = summary.state.pendingTimers.get(timerId);
      if (pending !== undefined) fold.resumeArmed(pending, summary.maxFileSeq);
      else await forEachRunEvent(reads, runId, (event) => fold.apply(event), { maxEventBytes: ctx.maxEventBytes });
      const initial = outcome(fold, ctx.repoId, runId, timerId);
      if (initial !== null) return initial;
      const buffered = early;
      early = null;
      for (const event of buffered) step(event);
      for (;;) {
        const result = settled as { readonly fire: TimerFiring } | { readonly error: unknown } | null;
        if (result !== null) {
          if ("fire" in result) return result.fire;
          throw result.error;
        }
        if (isAborted(signal)) throw aborted();
        await new Promise<void>((resolve) => {
          wake = resolve;
        });
        wake = null;
      }
    } finally {
      await attachment.detach();
    }
  } finally {
    signal?.removeEventListener("abort", onAbort);
  }
}

/** The fire, null to keep waiting, or throws timer_not_found. */
function outcome(fold: TimerFold, repoId: string, runId: string, timerId: string): TimerFiring | null {
  if (fold.status === "fired") return fold.fired;
  if (fold.status === "armed") return null;
  const why =
    fold.status === "absent"
      ? "was never set"
      : fold.status === "cancelled"
        ? "was cancelled"
        : fold.status === "skipped"
          ? "had its tick skipped (TimerSkipped)"
          : fold.status === "over"
            ? "is a series that reached its bound (ScheduleEnded)"
            : "belongs to a run that ended";
  throw new WorkflowHostError("timer_not_found", `timer ${timerId} of run ${runId} in ${repoId} ${why}; nothing will fire it`, {
    repoId,
    runId,
    timerId,
    status: fold.status,
  });
}

// A function, so the check is not narrowed away across awaits.
function isAborted(signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true;
}
