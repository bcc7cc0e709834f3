/**
 * The RunState reducer (docs/design.md §3): what a run's log means for the scheduler and the signal
 * channel. Pure; events are read in numeric seq order.
 *
 * Timer lifecycle, per timerId (states: absent → armed(generation) → absent):
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
 *   mark the armed series paused or running, `ScheduleEnded` disarms it, and manual or backfill
 *   fires leave it alone.
 * - Schedule events the controls never write (a log pushed with git can hold them) are schedule
 *   problems: they change nothing and {@link reduceRunStateWithProblems} names each once (see
 *   {@link ScheduleProblem}).
 * A series whose next tick cannot be computed (no later tick, or an expression that does not
 * compile in a log that skipped validation) is disarmed rather than thrown on.
 *
 * Signals: `observedSignalIds` holds every `SignalReceived` signalId (the dedupe set). A
 * `SignalReceived` whose signalId was already seen is a duplicate delivery and is ignored.
 * `unconsumedSignals` are those not followed by a `SignalConsumed` of their id, in seq order.
 *
 * An event whose seq is not above `lastSeq` has already been applied and is ignored, so a
 * tailer that sees the same event twice (a repeated watcher notification) stays correct.
 */
import { isTerminalEventType } from "./event-shapes.js";
import { nextTick } from "./cron.js";
import { DEFAULT_TIME_ZONE } from "./time-zone.js";
import { isOffSeriesFire, pausedTimer, resumedTimer, withSeriesFields } from "./schedule/series-state.js";
import type {
  PendingTimer,
  RunEvent,
  RunState,
  SignalConsumedEvent,
  SignalReceivedEvent,
  TerminalEventType,
  TimerCancelledEvent,
  TimerFiredEvent,
  TimerSetEvent,
  TimerSkippedEvent,
  UnconsumedSignal,
} from "./types.js";

/**
 * The state of a run with an empty log.
 * @returns `lastSeq -1`, not terminal, no timers, no signals.
 */
export function emptyRunState(runId: string): RunState {
  return {
    runId,
    lastSeq: -1,
    terminal: null,
    pendingTimers: new Map(),
    observedSignalIds: new Set(),
    unconsumedSignals: [],
  };
}

/**
 * Folds a whole log into its state.
 * @param runId - the run the events belong to.
 * @param events - the run's events in any order; they are sorted by numeric seq (stably, on a
 *   copy), because directory listings sort `10.json` before `2.json`. Events are expected as
 *   {@link parseEvent} returns them (validated, instants normalised).
 * @returns the state after every event; equal to folding {@link applyEvent} over the sorted events.
 *   Cost: O(n log n) plus one cron computation per series still armed at the end.
 */
export function reduceRunState(runId: string, events: Iterable<RunEvent>): RunState {
  const sorted = [...events].sort((a, b) => a.seq - b.seq);
  const draft = Draft.fresh(runId);
  for (const event of sorted) draft.apply(event);
  return draft.finish();
}

/**
 * A schedule event that breaks the controls' rules, as only a `git push` can write it. It is
 * skipped (it changes nothing in the state):
 * - a manual `TimerFired` whose `requestId` already fired that timer;
 * - a manual `TimerFired` of a timer that is not an armed cron series;
 * - a backfill `TimerFired` whose `scheduledFor` is after its `firedAt` (or its event's `at`), at
 *   or after the armed slot, or not a slot of the series;
 * - a `SchedulePaused` of a timer that is not an armed cron series;
 * - a `ScheduleResumed` of a series that is not paused (or not an armed cron series).
 */
export interface ScheduleProblem {
  readonly seq: number;
  /** Why the event was skipped, naming the event and the rule. */
  readonly detail: string;
}

/**
 * {@link reduceRunState}, plus the schedule problems of the log (see {@link ScheduleProblem}),
 * in seq order, each once.
 */
export function reduceRunStateWithProblems(runId: string, events: Iterable<RunEvent>): { state: RunState; problems: ScheduleProblem[] } {
  const sorted = [...events].sort((a, b) => a.seq - b.seq);
  const draft = Draft.fresh(runId);
  const problems: ScheduleProblem[] = [];
  draft.problems = problems;
  for (const event of sorted) draft.apply(event);
  return { state: draft.finish(), problems };
}

/**
 * Applies one event, for tailing a log.
 * @returns a new state; the input is never modified. Collections the event does not touch are
 *   shared with the input (cheap copy): a timer event copies `pendingTimers`, a signal event
 *   copies the signal collections (O(size) each), anything else copies nothing. An event whose
 *   seq is not above `state.lastSeq` returns `state` itself.
 */
export function applyEvent(state: RunState, event: RunEvent): RunState {
  if (event.seq <= state.lastSeq) return state;
  const draft = Draft.from(state);
  draft.apply(event);
  return draft.finish();
}

/** A cron tick not computed yet: the first tick after `after` (skipped when re-armed first). */
interface Advance {
  readonly after: string;
}

class Draft {
  private pending: Map<string, PendingTimer>;
  private advances: Map<string, Advance>;
  private observed: Set<string>;
  private unconsumed: Map<string, UnconsumedSignal> | null;
  private ownsTimers: boolean;
  private ownsSignals: boolean;
  /** Where schedule problems go; null when nobody asked (they are then only skipped). */
  problems: ScheduleProblem[] | null = null;
  /** requestIds of the manual fires seen so far, per timerId. */
  private readonly requestIds = new Map<string, Set<string>>();

  private constructor(
    private readonly base: RunState,
    private lastSeq: number,
    private terminal: TerminalEventType | null,
    owns: boolean,
  ) {
    this.pending = base.pendingTimers as Map<string, PendingTimer>;
    this.advances = new Map();
    this.observed = base.observedSignalIds as Set<string>;
    this.unconsumed = owns ? new Map() : null;
    this.ownsTimers = owns;
    this.ownsSignals = owns;
  }

  static fresh(runId: string): Draft {
    return new Draft(emptyRunState(runId), -1, null, true);
  }

  static from(state: RunState): Draft {
    return new Draft(state, state.lastSeq, state.terminal, false);
  }

  apply(event: RunEvent): void {
    if (event.seq <= this.lastSeq) return;
    this.lastSeq = event.seq;
    if (this.terminal !== null) return;
    switch (event.type) {
      case "TimerSet":
        this.onSet(event as TimerSetEvent);
        return;
      case "TimerFired":
        this.onFired(event as TimerFiredEvent);
        return;
      case "TimerSkipped":
        this.onSkipped(event as TimerSkippedEvent);
        return;
      case "TimerCancelled":
      case "ScheduleEnded":
        this.disarm((event as TimerCancelledEvent).data.timerId);
        return;
      case "SchedulePaused":
      case "ScheduleResumed":
        this.onPauseOrResume(event);
        return;
      case "SignalReceived":
        this.onSignal(event as SignalReceivedEvent);
        return;
      case "SignalConsumed":
        this.signals().delete((event as SignalConsumedEvent).data.signalId);
        return;
      default:
        if (isTerminalEventType(event.type)) {
          this.terminal = event.type;
          this.pending = new Map();
          this.advances = new Map();
          this.ownsTimers = true;
        }
    }
  }

  finish(): RunState {
    for (const timerId of [...this.advances.keys()]) this.armed(timerId);
    return {
      runId: this.base.runId,
      lastSeq: this.lastSeq,
      terminal: this.terminal,
      pendingTimers: this.pending,
      observedSignalIds: this.observed,
      unconsumedSignals: this.unconsumed === null ? this.base.unconsumedSignals : [...this.unconsumed.values()],
    };
  }

  private timers(): Map<string, PendingTimer> {
    if (!this.ownsTimers) {
      this.pending = new Map(this.pending);
      this.ownsTimers = true;
    }
    return this.pending;
  }

  private signals(): Map<string, UnconsumedSignal> {
    if (!this.ownsSignals) {
      this.observed = new Set(this.observed);
      this.unconsumed = new Map(this.base.unconsumedSignals.map((s) => [s.signalId, s]));
      this.ownsSignals = true;
    }
    return this.unconsumed ?? new Map();
  }

  /** The armed generation of a timer, computing a deferred cron tick first. */
  private armed(timerId: string): PendingTimer | undefined {
    const timer = this.pending.get(timerId);
    const advance = this.advances.get(timerId);
    if (timer === undefined || advance === undefined) return timer;
    this.advances.delete(timerId);
    let fireAt: string | null = null;
    try {
      fireAt = timer.cron === undefined ? null : nextTick(timer.cron, timer.timezone ?? DEFAULT_TIME_ZONE, advance.after);
    } catch {
      fireAt = null;
    }
    if (fireAt === null) {
      this.timers().delete(timerId);
      return undefined;
    }
    const next: PendingTimer = { ...timer, fireAt };
    this.timers().set(timerId, next);
    return next;
  }

  private disarm(timerId: string): void {
    this.advances.delete(timerId);
    if (this.pending.has(timerId)) this.timers().delete(timerId);
  }

  private advance(timerId: string, after: string): void {
    this.timers();
    this.advances.set(timerId, { after });
  }

  private onSet(event: TimerSetEvent): void {
    const d = event.data;
    const timer: {
      -readonly [K in keyof PendingTimer]: PendingTimer[K];
    } = { timerId: d.timerId, fireAt: d.fireAt, setSeq: event.seq };
    if (d.stepId !== undefined) timer.stepId = d.stepId;
    if (d.cron !== undefined) {
      timer.cron = d.cron;
      timer.timezone = d.timezone ?? DEFAULT_TIME_ZONE;
    } else if (d.timezone !== undefined) {
      timer.timezone = d.timezone;
    }
    if (d.misfire !== undefined) timer.misfire = d.misfire;
    const previous = this.pending.get(d.timerId);
    this.advances.delete(d.timerId);
    this.timers().set(d.timerId, withSeriesFields(timer, d, previous));
  }

  private onPauseOrResume(event: RunEvent): void {
    const timerId = (event as { data: { timerId: string } }).data.timerId;
    const timer = this.armed(timerId);
    if (timer?.cron === undefined) {
      this.problem(event.seq, `${event.type} of ${timerId}, which is not an armed cron series (never set, cancelled, ended or a one-shot timer)`);
      return;
    }
    if (event.type === "ScheduleResumed" && timer.pausedAt === undefined) {
      this.problem(event.seq, `ScheduleResumed of ${timerId}, which is not paused; allowed: a resume after a SchedulePaused`);
      return;
    }
    const next = event.type === "SchedulePaused" ? pausedTimer(timer, event["at"] as string | undefined) : resumedTimer(timer);
    if (next !== timer) this.timers().set(timerId, next);
  }

  private problem(seq: number, detail: string): void {
    this.problems?.push({ seq, detail });
  }

  /** Records a manual or backfill fire's problems; neither moves the series. */
  private onOffSeriesFire(event: TimerFiredEvent): void {
    const { timerId, scheduledFor, firedAt, requestId } = event.data;
    const timer = this.armed(timerId);
    if (event.data.manual === true) {
      const seen = this.requestIds.get(timerId) ?? new Set<string>();
      this.requestIds.set(timerId, seen);
      if (requestId !== undefined && seen.has(requestId)) {
        this.problem(event.seq, `manual TimerFired of ${timerId} repeats requestId ${JSON.stringify(requestId)}; allowed: one manual fire per requestId and series`);
      } else if (timer?.cron === undefined) {
        this.problem(event.seq, `manual TimerFired of ${timerId}, which is not an armed cron series`);
      }
      if (requestId !== undefined) seen.add(requestId);
      return;
    }
    if (timer?.cron === undefined) {
      this.problem(event.seq, `backfill TimerFired of ${timerId}, which is not an armed cron series`);
      return;
    }
    if (scheduledFor === undefined) {
      this.problem(event.seq, `backfill TimerFired of ${timerId} names no scheduledFor; allowed: a past slot of the series`);
      return;
    }
    const now = firedAt ?? (typeof event.at === "string" ? event.at : undefined);
    if (now !== undefined && before(now, scheduledFor)) {
      this.problem(event.seq, `backfill TimerFired of ${timerId} for ${scheduledFor} is in the future (fired at ${now}); allowed: a past slot`);
    } else if (!before(scheduledFor, timer.fireAt)) {
      this.problem(event.seq, `backfill TimerFired of ${timerId} for ${scheduledFor} is not before the armed slot ${timer.fireAt}; allowed: a past slot`);
    } else if (!isSlot(timer, scheduledFor)) {
      this.problem(event.seq, `backfill TimerFired of ${timerId} for ${scheduledFor} is not a slot of ${timer.cron ?? ""}; allowed: a past slot of the series`);
    }
  }

  private onFired(event: TimerFiredEvent): void {
    if (isOffSeriesFire(event)) {
      this.onOffSeriesFire(event);
      return;
    }
    const { timerId, scheduledFor } = event.data;
    const timer = this.armed(timerId);
    if (timer === undefined) return;
    if (timer.cron === undefined) {
      if (scheduledFor === undefined || sameInstant(scheduledFor, timer.fireAt)) this.disarm(timerId);
      return;
    }
    if (scheduledFor === undefined) this.advance(timerId, timer.fireAt);
    else if (!before(scheduledFor, timer.fireAt)) this.advance(timerId, scheduledFor);
  }

  private onSkipped(event: TimerSkippedEvent): void {
    const { timerId, firstMissed, lastMissed } = event.data;
    const timer = this.armed(timerId);
    if (timer === undefined) return;
    if (timer.cron === undefined) {
      if (!before(timer.fireAt, firstMissed) && !before(lastMissed, timer.fireAt)) this.disarm(timerId);
      return;
    }
    if (!before(lastMissed, timer.fireAt)) this.advance(timerId, lastMissed);
  }

  private onSignal(event: SignalReceivedEvent): void {
    if (this.observed.has(event.signalId)) return;
    const signals = this.signals();
    this.observed.add(event.signalId);
    signals.set(event.signalId, {
      signalId: event.signalId,
      signalName: event.signalName,
      payload: event.payload,
      seq: event.seq,
      at: event.at,
    });
  }
}

// Instants in validated events are normalised, but comparing epoch milliseconds keeps the
// reducer right for hand-built events with offsets too.
function sameInstant(a: string, b: string): boolean {
  return Date.parse(a) === Date.parse(b);
}

/** True when `instant` is a tick of the series' cron expression (false when it cannot tell). */
function isSlot(timer: PendingTimer, instant: string): boolean {
  try {
    const next = nextTick(timer.cron as string, timer.timezone ?? DEFAULT_TIME_ZONE, new Date(Date.parse(instant) - 1).toISOString());
    return next !== null && sameInstant(next, instant);
  } catch {
    return false;
  }
}

function before(a: string, b: string): boolean {
  return Date.parse(a) < Date.parse(b);
}
