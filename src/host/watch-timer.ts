/**
 * Waiting for one timer of one run to fire, from the log: attach to the deployment's event feed
 * (which hands over every commit after some C), read the log at the tip T ≥ C, then apply the
 * feed's commits, skipping seqs already applied, so a fire committed in between is neither
 * missed nor seen twice.
 *
 * Per timerId the log is folded in seq order (states: absent → armed(generation) → fired |
 * cancelled | ended). Each TimerSet starts a new generation; the wait is for a TimerFired of
 * the generation armed last, so a reschedule keeps the wait going and a cron series resolves
 * at its next tick (the follow-on TimerSet comes after the TimerFired in the same commit).
 */
import type { RunEventFeed, RunEventListener } from "../../seams/run-event-feed.js";
import { WorkflowHostError } from "../errors.js";
import type { Principal, RepoStore } from "../substrate/types.js";
import { isTerminalEventType } from "../workflow/event-shapes.js";
import { parseRunId, parseTimerId } from "../workflow/ids.js";
import { readRunLog } from "../workflow/run-log.js";
import type { RunEvent, TimerFiredEvent, TimerSetEvent } from "../workflow/types.js";
import { WORKFLOW_RUN_KIND } from "../workflow/workflow-run-kind.js";

/** A fire of the awaited generation. */
export interface TimerFiring {
  readonly timerId: string;
  /** The tick that fired (RFC 3339, UTC). Logs of the original system name none: the armed fireAt. */
  readonly scheduledFor: string;
  /** When the scheduler committed it (RFC 3339, UTC); falls back to the event's `at`, then scheduledFor. */
  readonly firedAt: string;
  /** Seq of the TimerFired event. */
  readonly seq: number;
}

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

/** Where one timer stands after a run's events (see the module comment). */
export type TimerStatus = "absent" | "armed" | "fired" | "cancelled" | "ended";

export interface TimerHistory {
  readonly status: TimerStatus;
  /** Seq of the TimerSet of the last generation, or null when never set. */
  readonly setSeq: number | null;
  /** fireAt of the last generation's TimerSet, and whether it was a cron series. */
  readonly fireAt: string | null;
  readonly cron: boolean;
  /** The fire of the last generation, when status is "fired". */
  readonly fired: TimerFiring | null;
}

/**
 * Folds a run's events (numeric seq order) for one timer. Pure.
 * @returns the status of the generation armed last, its TimerSet seq and its fire
 */
export function foldTimerEvents(events: Iterable<RunEvent>, timerId: string): TimerHistory {
  const fold = new TimerFold(timerId);
  for (const event of events) fold.apply(event);
  return { status: fold.status, setSeq: fold.setSeq, fireAt: fold.armedFireAt, cron: fold.cron, fired: fold.fired };
}

/** The pure fold of one timer's events (see the module comment). */
class TimerFold {
  status: TimerStatus = "absent";
  fired: TimerFiring | null = null;
  setSeq: number | null = null;
  private lastSeq = -1;
  armedFireAt: string | null = null;
  cron = false;

  constructor(private readonly timerId: string) {}

  apply(event: RunEvent): void {
    // Seqs only grow: an event at or below the last one applied was seen already.
    if (event.seq <= this.lastSeq) return;
    this.lastSeq = event.seq;
    if (this.status === "ended") return;
    if (isTerminalEventType(event.type)) {
      if (this.status !== "fired") this.status = "ended";
      return;
    }
    const data = (event as { data?: { timerId?: unknown } }).data;
    if (data?.timerId !== this.timerId) return;
    if (event.type === "TimerSet") {
      const set = event as TimerSetEvent;
      this.status = "armed";
      this.fired = null;
      this.setSeq = set.seq;
      this.armedFireAt = set.data.fireAt;
      this.cron = set.data.cron !== undefined;
    } else if (event.type === "TimerFired" && this.status === "armed") {
      const fired = event as TimerFiredEvent;
      const armed = this.armedFireAt as string;
      const scheduledFor = fired.data.scheduledFor;
      // A one-shot fire naming another tick is a stale fire of an earlier generation.
      if (!this.cron && scheduledFor !== undefined && Date.parse(scheduledFor) !== Date.parse(armed)) return;
      this.status = "fired";
      this.fired = {
        timerId: this.timerId,
        scheduledFor: scheduledFor ?? armed,
        firedAt: fired.data.firedAt ?? fired.at ?? scheduledFor ?? armed,
        seq: fired.seq,
      };
    } else if (event.type === "TimerCancelled" && this.status === "armed") {
      this.status = "cancelled";
    }
  }
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
      const reads = await ctx.store.openCommittedReads(ctx.principal, { kind: WORKFLOW_RUN_KIND, id: ctx.repoId }, ctx.ref);
      const log = await readRunLog(reads, runId, { maxEventBytes: ctx.maxEventBytes });
      for (const event of log.events) fold.apply(event);
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
  const why = fold.status === "absent" ? "was never set" : fold.status === "cancelled" ? "was cancelled" : "belongs to a run that ended";
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
