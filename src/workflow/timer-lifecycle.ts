/**
 * The one statement of a timer's life in a run log (docs/design.md §3). Pure. Every reader of
 * the lifecycle goes through here: `reduceRunState` (all timers of a run), and
 * {@link foldTimerEvents} / {@link TimerFold} (one timer: waiting for its fire, the cancel
 * verb's outcome, the set verb's already-fired guard, the signal wait's deadline).
 *
 * Per timerId (states: absent → armed(generation) → absent), events in numeric seq order:
 * - `TimerSet` arms a new generation (its seq is `setSeq`), replacing any armed one: a reschedule.
 * - `TimerFired` disarms a one-shot when it fires the armed generation: its `scheduledFor`
 *   equals the armed `fireAt`, or it has no `scheduledFor` (logs written by the original system
 *   name no tick, so the fire is taken to be of the armed generation). A `scheduledFor` that
 *   differs is a stale fire of an earlier generation (committed before a reschedule was seen)
 *   and leaves the armed generation alone, so the reschedule still fires.
 * - A cron series is not ended by a fire. A `TimerFired` whose `scheduledFor` is at or after the
 *   armed tick (or absent) advances the series to the first tick after it; the follow-on
 *   `TimerSet` the scheduler commits in the same commit then re-arms the same tick explicitly.
 *   Logs from the original system have no follow-on `TimerSet`; the advance keeps their series
 *   armed. A `scheduledFor` before the armed tick is stale and ignored.
 * - `TimerSkipped` whose `lastMissed` is at or after the armed tick advances a series past
 *   `lastMissed`; for a one-shot it disarms only when its range covers the armed `fireAt`.
 * - `TimerCancelled` disarms (one-shot or series).
 * - A terminal event disarms everything; later events only move `lastSeq`.
 * - Schedule controls (see `./schedule/series-state.ts`): `SchedulePaused`/`ScheduleResumed`
 *   mark the armed series paused or running (a new `TimerSet` of the series keeps the pause),
 *   `ScheduleEnded` disarms it, and manual or backfill fires (`manual`/`backfill: true`) are not
 *   slots of the series: they leave the armed generation alone, as a stale fire does.
 * A series whose next tick cannot be computed (no later tick, or an expression that does not
 * compile in a log that skipped validation) is disarmed rather than thrown on.
 *
 * Schedule events the controls never write (only a log pushed with git can hold them) are
 * schedule problems, named by {@link pauseProblem} and {@link offSeriesFireProblem}: they change
 * nothing, and the reducer reports each once (`reduceRunStateWithProblems`).
 */
import { nextTick } from "./cron.js";
import { isTerminalEventType } from "./event-shapes.js";
import { isScheduleEnded, isSchedulePaused, isScheduleResumed, isTimerCancelled, isTimerFired, isTimerSet, isTimerSkipped, timerIdOf } from "./event-guards.js";
import { isOffSeriesFire, pausedTimer, resumedTimer, withSeriesFields } from "./schedule/series-state.js";
import { DEFAULT_TIME_ZONE } from "./time-zone.js";
import type { PendingTimer, RunEvent, SchedulePausedEvent, ScheduleResumedEvent, TimerFiredEvent, TimerSetEvent, TimerSkippedEvent } from "./types.js";

/** What a fire or a skip does to the armed generation of its timer. */
export type TimerTransition =
  /** A one-shot's armed generation is over (fired, or its tick was skipped). */
  | { readonly kind: "disarm" }
  /** A series moves on: its next tick is the first after `after` (see {@link advanceSeries}). */
  | { readonly kind: "advance"; readonly after: string }
  /** A fire or skip of an earlier generation or tick: the armed generation stays as it is. */
  | { readonly kind: "stale" };

/**
 * The generation a `TimerSet` arms (a series with no zone gets "UTC"), with its schedule fields.
 * @param previous - the generation armed before for the same timerId, if any: a series keeps its pause
 */
export function armTimer(event: TimerSetEvent, previous?: PendingTimer): PendingTimer {
  const d = event.data;
  const timer: { -readonly [K in keyof PendingTimer]: PendingTimer[K] } = { timerId: d.timerId, fireAt: d.fireAt, setSeq: event.seq };
  if (d.stepId !== undefined) timer.stepId = d.stepId;
  if (d.cron !== undefined) {
    timer.cron = d.cron;
    timer.timezone = d.timezone ?? DEFAULT_TIME_ZONE;
  } else if (d.timezone !== undefined) {
    timer.timezone = d.timezone;
  }
  if (d.misfire !== undefined) timer.misfire = d.misfire;
  return withSeriesFields(timer, d, previous);
}

/**
 * What a `SchedulePaused` or `ScheduleResumed` does to `armed`: the same generation paused or
 * running (unchanged for a one-shot, or when it already was).
 */
export function pauseTransition(armed: PendingTimer, event: SchedulePausedEvent | ScheduleResumedEvent): PendingTimer {
  return isSchedulePaused(event) ? pausedTimer(armed, event.at) : resumedTimer(armed);
}

/**
 * Why a `SchedulePaused` or `ScheduleResumed` is one the controls never write, or null when it
 * is not: a pause or resume of a timer that is not an armed cron series (never set, cancelled,
 * ended, or a one-shot), or a resume of a series that is not paused. Such an event changes
 * nothing ({@link pauseTransition} leaves the timer as it is).
 * @param armed - the generation armed for the event's timerId, if any
 */
export function pauseProblem(armed: PendingTimer | undefined, event: SchedulePausedEvent | ScheduleResumedEvent): string | null {
  const timerId = event.data.timerId;
  if (armed?.cron === undefined) return `${event.type} of ${timerId}, which is not an armed cron series (never set, cancelled, ended or a one-shot timer)`;
  if (isScheduleResumed(event) && armed.pausedAt === undefined) return `ScheduleResumed of ${timerId}, which is not paused; allowed: a resume after a SchedulePaused`;
  return null;
}

/**
 * Why a plain `TimerFired` (not manual, not backfill) of a timer that is not armed is one the
 * scheduler never writes: it fires exactly once per armed generation, decided under the repo
 * lock, so such a fire is a second fire of a one-shot (as a host wrote it from a log with a
 * lost event, design notes §69), a fire after a cancel or an end, or a fire of a timer never
 * set. It changes nothing in the state.
 */
export function notArmedFireProblem(event: TimerFiredEvent): string {
  return `TimerFired of ${event.data.timerId}, which is not armed (already fired, cancelled, ended or never set); allowed: one fire per armed generation`;
}

/**
 * Why a manual or backfill `TimerFired` (see `isOffSeriesFire`) is one the controls never write,
 * or null when it is not. Neither kind moves the series, problem or not.
 * - manual: its `requestId` already fired the timer (`repeatedRequest`), or the timer is not an
 *   armed cron series;
 * - backfill: the timer is not an armed cron series; it names no `scheduledFor`; its
 *   `scheduledFor` is after its `firedAt` (or the event's `at`), at or after the armed slot, or
 *   not a slot of the series.
 * @param armed - the generation armed for the event's timerId, if any
 * @param repeatedRequest - true when an earlier manual fire of this timer carried the same requestId
 */
export function offSeriesFireProblem(armed: PendingTimer | undefined, event: TimerFiredEvent, repeatedRequest: boolean): string | null {
  const { timerId, scheduledFor, firedAt, requestId } = event.data;
  if (event.data.manual === true) {
    if (repeatedRequest) return `manual TimerFired of ${timerId} repeats requestId ${JSON.stringify(requestId)}; allowed: one manual fire per requestId and series`;
    if (armed?.cron === undefined) return `manual TimerFired of ${timerId}, which is not an armed cron series`;
    return null;
  }
  if (armed?.cron === undefined) return `backfill TimerFired of ${timerId}, which is not an armed cron series`;
  if (scheduledFor === undefined) return `backfill TimerFired of ${timerId} names no scheduledFor; allowed: a past slot of the series`;
  const now = firedAt ?? (typeof event.at === "string" ? event.at : undefined);
  if (now !== undefined && before(now, scheduledFor)) return `backfill TimerFired of ${timerId} for ${scheduledFor} is in the future (fired at ${now}); allowed: a past slot`;
  if (!before(scheduledFor, armed.fireAt)) return `backfill TimerFired of ${timerId} for ${scheduledFor} is not before the armed slot ${armed.fireAt}; allowed: a past slot`;
  if (!isSlot(armed, scheduledFor)) return `backfill TimerFired of ${timerId} for ${scheduledFor} is not a slot of ${armed.cron}; allowed: a past slot of the series`;
  return null;
}

/**
 * What a `TimerFired` or `TimerSkipped` does to `armed` (the generation armed for its timerId).
 * @returns disarm, advance (series only) or stale; see the module comment for the rules
 */
export function timerTransition(armed: PendingTimer, event: TimerFiredEvent | TimerSkippedEvent): TimerTransition {
  if (isTimerFired(event)) {
    if (isOffSeriesFire(event)) return { kind: "stale" };
    const { scheduledFor } = event.data;
    if (armed.cron === undefined) {
      return scheduledFor === undefined || sameInstant(scheduledFor, armed.fireAt) ? { kind: "disarm" } : { kind: "stale" };
    }
    if (scheduledFor === undefined) return { kind: "advance", after: armed.fireAt };
    return before(scheduledFor, armed.fireAt) ? { kind: "stale" } : { kind: "advance", after: scheduledFor };
  }
  const { firstMissed, lastMissed } = event.data;
  if (armed.cron === undefined) {
    return !before(armed.fireAt, firstMissed) && !before(lastMissed, armed.fireAt) ? { kind: "disarm" } : { kind: "stale" };
  }
  return before(lastMissed, armed.fireAt) ? { kind: "stale" } : { kind: "advance", after: lastMissed };
}

/**
 * A series moved past `after`: the same generation at its first tick after `after`.
 * @returns the advanced timer, or null when no tick follows or the expression does not compile
 *   (the series is then disarmed, never thrown on)
 */
export function advanceSeries(timer: PendingTimer, after: string): PendingTimer | null {
  let fireAt: string | null = null;
  try {
    fireAt = timer.cron === undefined ? null : nextTick(timer.cron, timer.timezone ?? DEFAULT_TIME_ZONE, after);
  } catch {
    fireAt = null;
  }
  return fireAt === null ? null : { ...timer, fireAt };
}

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

/**
 * Where one timer's last generation stands: `armed`; ended by a `fired` fire, a `skipped` tick
 * (a one-shot whose tick a TimerSkipped covers, or a series left with no next tick), a
 * `cancelled` TimerCancelled, a series `over` by a ScheduleEnded (a bound reached) or an `ended`
 * run; `absent` when never set.
 */
export type TimerStatus = "absent" | "armed" | "fired" | "skipped" | "cancelled" | "over" | "ended";

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
  return fold.history();
}

/**
 * The lifecycle of one timer, event by event, by the rules of the module comment. A fire of the
 * armed generation (a one-shot's, or a series' tick) makes it `fired` and keeps that fire until
 * the next TimerSet: a series' follow-on TimerSet re-arms it.
 */
export class TimerFold {
  status: TimerStatus = "absent";
  fired: TimerFiring | null = null;
  setSeq: number | null = null;
  private lastSeq = -1;
  private armed: PendingTimer | null = null;
  private setFireAt: string | null = null;
  private series = false;

  constructor(private readonly timerId: string) {}

  apply(event: RunEvent): void {
    // Seqs only grow: an event at or below the last one applied was seen already.
    if (event.seq <= this.lastSeq) return;
    this.lastSeq = event.seq;
    if (this.status === "ended") return;
    if (isTerminalEventType(event.type)) {
      if (this.status !== "fired") this.status = "ended";
      this.armed = null;
      return;
    }
    if (timerIdOf(event) !== this.timerId) return;
    if (isTimerSet(event)) {
      this.armed = armTimer(event, this.armed ?? undefined);
      this.status = "armed";
      this.fired = null;
      this.setSeq = event.seq;
      this.setFireAt = event.data.fireAt;
      this.series = event.data.cron !== undefined;
      return;
    }
    if (this.status !== "armed" || this.armed === null) return;
    const armed = this.armed;
    if (isTimerCancelled(event)) {
      this.status = "cancelled";
      this.armed = null;
    } else if (isScheduleEnded(event)) {
      this.status = "over";
      this.armed = null;
    } else if (isSchedulePaused(event) || isScheduleResumed(event)) {
      this.armed = pauseTransition(armed, event);
    } else if (isTimerFired(event) || isTimerSkipped(event)) {
      const step = timerTransition(armed, event);
      if (step.kind === "stale") return;
      if (isTimerFired(event)) {
        const scheduledFor = event.data.scheduledFor ?? armed.fireAt;
        this.status = "fired";
        this.fired = { timerId: this.timerId, scheduledFor, firedAt: event.data.firedAt ?? event.at ?? scheduledFor, seq: event.seq };
        this.armed = null;
        return;
      }
      this.armed = step.kind === "advance" ? advanceSeries(armed, step.after) : null;
      if (this.armed === null) this.status = "skipped";
    }
  }

  /**
   * Starts the fold where a log's state left this timer armed, instead of applying the log:
   * `pending` is the timer as the log's `RunState.pendingTimers` holds it (folded by the same
   * rules), and events at or below `throughSeq` (the log's highest file seq) count as applied.
   * Only for a fold that has applied nothing yet.
   */
  resumeArmed(pending: PendingTimer, throughSeq: number): void {
    this.status = "armed";
    this.fired = null;
    this.armed = pending;
    this.setSeq = pending.setSeq;
    this.setFireAt = pending.fireAt;
    this.series = pending.cron !== undefined;
    this.lastSeq = Math.max(this.lastSeq, throughSeq);
  }

  history(): TimerHistory {
    return { status: this.status, setSeq: this.setSeq, fireAt: this.setFireAt, cron: this.series, fired: this.fired };
  }
}

// Instants in validated events are normalised, but comparing epoch milliseconds keeps the
// rules right for hand-built events with offsets too.
function sameInstant(a: string, b: string): boolean {
  // Equal strings (a fire of a normalised fireAt, every plain fire) need one parse, not two.
  if (a === b) return !Number.isNaN(Date.parse(a));
  return Date.parse(a) === Date.parse(b);
}

/** True when `instant` is a tick of the series' cron expression (false when it cannot tell). */
function isSlot(timer: PendingTimer, instant: string): boolean {
  try {
    const next = timer.cron === undefined ? null : nextTick(timer.cron, timer.timezone ?? DEFAULT_TIME_ZONE, new Date(Date.parse(instant) - 1).toISOString());
    return next !== null && sameInstant(next, instant);
  } catch {
    return false;
  }
}

function before(a: string, b: string): boolean {
  return Date.parse(a) < Date.parse(b);
}
