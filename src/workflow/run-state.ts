/**
 * The RunState reducer (docs/design.md §3): what a run's log means for the scheduler and the signal
 * channel. Pure; events are read in numeric seq order.
 *
 * Timers follow the lifecycle of `timer-lifecycle.ts` (arm, fire, skip, cancel, terminal, and
 * the schedule controls: pause, resume, end; manual and backfill fires leave a series alone); this
 * reducer applies it to every timer of a run at once, deferring a series' next-tick computation
 * until it is needed (a follow-on TimerSet usually re-arms it first).
 * Schedule events the controls never write (a log pushed with git can hold them) are schedule
 * problems, by the rules of `timer-lifecycle.ts` ({@link pauseProblem},
 * {@link offSeriesFireProblem}): they change nothing, and {@link reduceRunStateWithProblems}
 * names each once (see {@link ScheduleProblem}).
 *
 * Signals: `observedSignalIds` holds every `SignalReceived` signalId (the dedupe set). A
 * `SignalReceived` whose signalId was already seen is a duplicate delivery and is ignored.
 * `unconsumedSignals` are those not followed by a `SignalConsumed` of their id, in seq order.
 *
 * An event whose seq is not above `lastSeq` has already been applied and is ignored, so a
 * tailer that sees the same event twice (a repeated watcher notification) stays correct.
 */
import { isScheduleEnded, isSchedulePaused, isScheduleResumed, isSignalConsumed, isSignalReceived, isTerminalEvent, isTimerCancelled, isTimerFired, isTimerSet, isTimerSkipped } from "./event-guards.js";
import { advanceSeries, armTimer, notArmedFireProblem, offSeriesFireProblem, pauseProblem, pauseTransition, timerTransition } from "./timer-lifecycle.js";
import { isOffSeriesFire } from "./schedule/series-state.js";
import type {
  PendingTimer,
  RunEvent,
  RunState,
  SignalReceivedEvent,
  TerminalEventType,
  TimerFiredEvent,
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
 * - a `TimerFired` of a timer that is not armed: its one-shot generation already fired (a second
 *   fire, as a host that fired from a log with a lost event wrote it, design notes §69), it was
 *   cancelled or ended, or it was never set;
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
 * Where a {@link createRunStateFold} stands after some events: enough to go on folding later
 * events from there (what the state holds, plus the cron ticks not computed yet and the manual
 * fires' requestIds). Opaque and never changed: a fold continued from it copies what it changes.
 */
export interface RunStateFoldPoint {
  readonly runId: string;
  readonly lastSeq: number;
  /** @internal */ readonly terminal: TerminalEventType | null;
  /** @internal */ readonly pending: ReadonlyMap<string, PendingTimer>;
  /** @internal */ readonly advances: ReadonlyMap<string, { readonly after: string }>;
  /** @internal */ readonly observed: ReadonlySet<string>;
  /** @internal */ readonly unconsumed: ReadonlyMap<string, UnconsumedSignal>;
  /** @internal */ readonly requestIds: ReadonlyMap<string, ReadonlySet<string>>;
}

/** A fold of a run's log one event at a time (see {@link createRunStateFold}). */
export interface RunStateFold {
  /** Applies the next event (ascending seq; one at or below the last applied seq is ignored); the schedule problem it raised, or null. */
  apply(event: RunEvent): ScheduleProblem | null;
  /**
   * Where the fold stands now, to continue from later (`createRunStateFold(runId, point)`).
   * Costs O(timers waiting for a cron tick); the fold copies a collection before it next changes it.
   */
  point(): RunStateFoldPoint;
  /** The state after every event applied (call it once, at the end; {@link point} before it if wanted). */
  finish(): RunState;
}

/**
 * {@link reduceRunStateWithProblems} one event at a time, for a log too long to hold in memory
 * (see run-log-summary.ts): only the state is kept, never the events.
 * @param runId the run the events belong to
 * @param from where an earlier fold of the same run stood ({@link RunStateFold.point}): the fold
 *   goes on from there, as if it had applied the same events itself; `from` is not changed
 * @returns the fold: `apply`, `point` and `finish` (see {@link RunStateFold})
 */
export function createRunStateFold(runId: string, from?: RunStateFoldPoint): RunStateFold {
  const draft = from === undefined ? Draft.fresh(runId) : Draft.at(from);
  const problems: ScheduleProblem[] = [];
  draft.problems = problems;
  return {
    apply(event) {
      draft.apply(event);
      // At most one per event; nothing else is kept.
      return problems.pop() ?? null;
    },
    point: () => draft.point(),
    finish: () => draft.finish(),
  };
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
  const fired = oneShotFired(state, event);
  if (fired !== null) return fired;
  const draft = Draft.from(state);
  draft.apply(event);
  return draft.finish();
}

/**
 * {@link applyEvent} of the event a fire commit applies most, the `TimerFired` of an armed
 * one-shot at its own `fireAt`, made directly: the state {@link Draft} makes for it (the timer
 * disarmed, nothing else changed but `lastSeq`), without a draft per fire. null for any other
 * case (the draft handles it): another event, a run that ended, a manual or backfill fire, a
 * series, a timer not armed, a `scheduledFor` that is not the very `fireAt` string. The caller
 * has checked `event.seq > state.lastSeq`.
 */
function oneShotFired(state: RunState, event: RunEvent): RunState | null {
  // The type compared here, not through isTimerFired: a guard V8 compiled for recovery's parsed
  // events was deoptimised by the first event a fire commit made (another object shape).
  if (event.type !== "TimerFired" || state.terminal !== null) return null;
  const data = (event as TimerFiredEvent).data;
  if (data.manual === true || data.backfill === true) return null;
  const timer = state.pendingTimers.get(data.timerId);
  if (timer === undefined || timer.cron !== undefined || data.scheduledFor !== timer.fireAt) return null;
  // The draft's check that the two are the same instant (timerTransition): equal strings are
  // when the instant can be read at all; a burst's fires share their fireAt, read once.
  if (timer.fireAt !== lastReadableInstant) {
    if (Number.isNaN(Date.parse(timer.fireAt))) return null;
    lastReadableInstant = timer.fireAt;
  }
  let pendingTimers: Map<string, PendingTimer>;
  if (state.pendingTimers.size === 1) {
    // As Draft.disarm: the run's only timer going leaves the shared empty map.
    pendingTimers = NO_TIMERS;
  } else {
    pendingTimers = new Map(state.pendingTimers);
    pendingTimers.delete(data.timerId);
  }
  // Laid out as Draft.finish lays a state out (same fields, same order).
  return {
    runId: state.runId,
    lastSeq: event.seq,
    terminal: null,
    pendingTimers,
    observedSignalIds: state.observedSignalIds,
    unconsumedSignals: state.unconsumedSignals,
  };
}

/** The last `fireAt` {@link oneShotFired} found Date.parse reads ("" for none: no instant is ""). */
let lastReadableInstant = "";

/** A cron tick not computed yet: the first tick after `after` (skipped when re-armed first). */
interface Advance {
  readonly after: string;
}

/** Shared by drafts with no deferred tick (most of them: a one-shot's fire never defers one); never changed. */
const NO_ADVANCES: ReadonlyMap<string, Advance> = new Map();
/**
 * The pending timers of a state whose only timer a draft disarmed (most fires of a burst): shared
 * by all of them and never changed (a draft copies a map it does not own before changing it).
 */
const NO_TIMERS: Map<string, PendingTimer> = new Map();
/** Shared by drafts that have seen no manual fire; never changed. */
const NO_REQUEST_IDS: ReadonlyMap<string, Set<string>> = new Map();

class Draft {
  private pending: Map<string, PendingTimer>;
  /** Deferred cron ticks; {@link NO_ADVANCES} until the first one (copied on first change, see advancesToChange). */
  private advances: ReadonlyMap<string, Advance>;
  private observed: Set<string>;
  private unconsumed: Map<string, UnconsumedSignal> | null;
  /** The unconsumed signals of the fold point this draft went on from, until copied into `unconsumed`. */
  private unconsumedFrom: ReadonlyMap<string, UnconsumedSignal> | null = null;
  private ownsTimers: boolean;
  private ownsSignals: boolean;
  /** Where schedule problems go; null when nobody asked (they are then only skipped). */
  problems: ScheduleProblem[] | null = null;
  /** requestIds of the manual fires seen so far, per timerId ({@link NO_REQUEST_IDS} until the first). */
  private requestIds: ReadonlyMap<string, Set<string>> = NO_REQUEST_IDS;
  private ownsRequestIds = false;

  private constructor(
    private readonly base: RunState,
    private lastSeq: number,
    private terminal: TerminalEventType | null,
    owns: boolean,
  ) {
    this.pending = base.pendingTimers as Map<string, PendingTimer>;
    // Applying one event (applyEvent, a fire commit's every fire) allocates no collection it
    // does not change: the empty ones are shared until first written.
    this.advances = NO_ADVANCES;
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

  /** A draft going on from a fold point: shares its collections until it changes them. */
  static at(point: RunStateFoldPoint): Draft {
    const draft = new Draft(emptyRunState(point.runId), point.lastSeq, point.terminal, false);
    draft.pending = point.pending as Map<string, PendingTimer>;
    draft.advances = point.advances.size === 0 ? NO_ADVANCES : new Map(point.advances);
    draft.observed = point.observed as Set<string>;
    draft.unconsumedFrom = point.unconsumed;
    draft.requestIds = point.requestIds as Map<string, Set<string>>;
    draft.ownsRequestIds = false;
    return draft;
  }

  /** Where this draft stands; from here on it copies each collection before changing it. */
  point(): RunStateFoldPoint {
    if (this.unconsumed !== null) {
      this.unconsumedFrom = this.unconsumed;
      this.unconsumed = null;
    }
    this.ownsTimers = false;
    this.ownsSignals = false;
    this.ownsRequestIds = false;
    return {
      runId: this.base.runId,
      lastSeq: this.lastSeq,
      terminal: this.terminal,
      pending: this.pending,
      advances: this.advances.size === 0 ? NO_ADVANCES : new Map(this.advances),
      observed: this.observed,
      unconsumed: this.unconsumedFrom ?? new Map(this.base.unconsumedSignals.map((s) => [s.signalId, s])),
      requestIds: this.requestIds,
    };
  }

  apply(event: RunEvent): void {
    if (event.seq <= this.lastSeq) return;
    this.lastSeq = event.seq;
    if (this.terminal !== null) return;
    if (isTimerSet(event)) {
      const previous = this.pending.get(event.data.timerId);
      this.dropAdvance(event.data.timerId);
      this.timers().set(event.data.timerId, armTimer(event, previous));
    } else if (isTimerFired(event) || isTimerSkipped(event)) {
      this.onFiredOrSkipped(event);
    } else if (isTimerCancelled(event) || isScheduleEnded(event)) {
      this.disarm(event.data.timerId);
    } else if (isSchedulePaused(event) || isScheduleResumed(event)) {
      const timer = this.armed(event.data.timerId);
      const problem = pauseProblem(timer, event);
      const next = timer === undefined || problem !== null ? undefined : pauseTransition(timer, event);
      if (problem !== null) this.problem(event.seq, problem);
      else if (next !== undefined && next !== timer) this.timers().set(event.data.timerId, next);
    } else if (isSignalReceived(event)) {
      this.onSignal(event);
    } else if (isSignalConsumed(event)) {
      this.signals().delete(event.data.signalId);
    } else if (isTerminalEvent(event)) {
      this.terminal = event.type;
      this.pending = new Map();
      this.advances = NO_ADVANCES;
      this.ownsTimers = true;
    }
  }

  finish(): RunState {
    if (this.advances.size > 0) for (const timerId of [...this.advances.keys()]) this.armed(timerId);
    return {
      runId: this.base.runId,
      lastSeq: this.lastSeq,
      terminal: this.terminal,
      pendingTimers: this.pending,
      observedSignalIds: this.observed,
      unconsumedSignals:
        this.unconsumed !== null ? [...this.unconsumed.values()] : this.unconsumedFrom !== null ? [...this.unconsumedFrom.values()] : this.base.unconsumedSignals,
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
      this.unconsumed = new Map(this.unconsumedFrom ?? this.base.unconsumedSignals.map((s) => [s.signalId, s]));
      this.unconsumedFrom = null;
      this.ownsSignals = true;
    }
    return this.unconsumed ?? new Map();
  }

  /** The armed generation of a timer, computing a deferred cron tick first. */
  private armed(timerId: string): PendingTimer | undefined {
    const timer = this.pending.get(timerId);
    const advance = this.advances.get(timerId);
    if (timer === undefined || advance === undefined) return timer;
    this.dropAdvance(timerId);
    const next = advanceSeries(timer, advance.after);
    if (next === null) {
      this.timers().delete(timerId);
      return undefined;
    }
    this.timers().set(timerId, next);
    return next;
  }

  private disarm(timerId: string): void {
    this.dropAdvance(timerId);
    if (!this.pending.has(timerId)) return;
    // A run's only timer going (a one-shot's fire): the shared empty map, not a copy emptied
    // again nor a new one per fire (not owned: copied before any later change).
    if (!this.ownsTimers && this.pending.size === 1) {
      this.pending = NO_TIMERS;
      return;
    }
    this.timers().delete(timerId);
  }

  private advance(timerId: string, after: string): void {
    this.timers();
    this.advancesToChange().set(timerId, { after });
  }

  /** The deferred ticks, as a map of this draft's own (the shared empty one is never written). */
  private advancesToChange(): Map<string, Advance> {
    if (this.advances === NO_ADVANCES) this.advances = new Map();
    return this.advances as Map<string, Advance>;
  }

  private dropAdvance(timerId: string): void {
    if (this.advances.has(timerId)) (this.advances as Map<string, Advance>).delete(timerId);
  }

  private onFiredOrSkipped(event: TimerFiredEvent | TimerSkippedEvent): void {
    const timerId = event.data.timerId;
    const timer = this.armed(timerId);
    if (isTimerFired(event) && isOffSeriesFire(event)) {
      this.onOffSeriesFire(timer, event);
      return;
    }
    if (timer === undefined) {
      // Nothing to fire: a second fire of a one-shot's generation, or a fire after a cancel.
      if (this.problems !== null && isTimerFired(event)) this.problem(event.seq, notArmedFireProblem(event));
      return;
    }
    const step = timerTransition(timer, event);
    if (step.kind === "disarm") this.disarm(timerId);
    else if (step.kind === "advance") this.advance(timerId, step.after);
  }

  private problem(seq: number, detail: string): void {
    this.problems?.push({ seq, detail });
  }

  /** A manual or backfill fire: it never moves the series; a problem is recorded, if any. */
  private onOffSeriesFire(timer: PendingTimer | undefined, event: TimerFiredEvent): void {
    const { timerId, requestId } = event.data;
    if (event.data.manual === true && requestId !== undefined && !this.ownsRequestIds) {
      this.requestIds = new Map([...this.requestIds].map(([id, ids]) => [id, new Set(ids)]));
      this.ownsRequestIds = true;
    }
    let seen = this.requestIds.get(timerId);
    const repeated = event.data.manual === true && requestId !== undefined && seen?.has(requestId) === true;
    const problem = offSeriesFireProblem(timer, event, repeated);
    if (problem !== null) this.problem(event.seq, problem);
    if (event.data.manual === true && requestId !== undefined) {
      if (seen === undefined) (this.requestIds as Map<string, Set<string>>).set(timerId, (seen = new Set()));
      seen.add(requestId);
    }
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
