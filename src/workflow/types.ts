/**
 * The run log's data model (docs/design.md §3). Events are plain JSON; instants are normalised
 * RFC 3339 strings in UTC with milliseconds (`Date.prototype.toISOString()`).
 */

export type MisfirePolicy = "skip" | "latest" | "all";

/** Why ticks of a series did not fire. */
export type SkipReason = "missed" | "paused";

/** Why a series ended by itself. */
export type ScheduleEndReason = "endAt" | "maxTicks";

/** A cron series' schedule fields (see `./schedule/`), carried from its TimerSet to its armed timer. */
export interface SeriesFields {
  /** Schedule bounds (cron only): no tick before `startAt` or after `endAt`. */
  readonly startAt?: string;
  readonly endAt?: string;
  /** The series ends after this many slots (fired or skipped; manual and backfill fires do not count). */
  readonly maxTicks?: number;
  /** Ordinal (1-based) of the slot this TimerSet arms (armed timer: the armed slot); absent means 1. */
  readonly slot?: number;
  /** Most delay added to each tick, derived from run, timer and slot (ms). */
  readonly jitterMs?: number;
  /** Who declared the series; `"sync"` marks series that `syncSchedules` owns. */
  readonly owner?: string;
}

export interface TimerSetData extends SeriesFields {
  readonly timerId: string;
  readonly fireAt: string;
  readonly stepId?: string;
  readonly cron?: string;
  readonly timezone?: string;
  readonly misfire?: MisfirePolicy;
}

export interface TimerSetEvent {
  readonly seq: number;
  readonly type: "TimerSet";
  readonly at?: string;
  readonly data: TimerSetData;
}

export interface TimerFiredEvent {
  readonly seq: number;
  readonly type: "TimerFired";
  readonly at?: string;
  /** `scheduledFor`/`firedAt` are absent in logs written by the original system. */
  readonly data: {
    readonly timerId: string;
    readonly scheduledFor?: string;
    readonly firedAt?: string;
    /** A fire asked for by a caller (trigger now), not a slot of the series; never moves it. */
    readonly manual?: boolean;
    /** The caller's idempotency key of a manual fire. */
    readonly requestId?: string;
    /** A past slot fired on purpose by a backfill; never moves the series. */
    readonly backfill?: boolean;
    /** `scheduledFor` plus the series' jitter for this slot: the instant it became due. */
    readonly jitteredFor?: string;
    /**
     * When the running host took the tick up (its queue handed it to the fire loop): written only
     * on a series tick taken up within `misfireGraceMs` of its due time but committed later than
     * that (behind a backlog of fire commits), so the log shows why it fired instead of being
     * skipped as missed.
     */
    readonly takenUpAt?: string;
  };
}

export interface TimerSkippedEvent {
  readonly seq: number;
  readonly type: "TimerSkipped";
  readonly at?: string;
  readonly data: {
    readonly timerId: string;
    readonly firstMissed: string;
    readonly lastMissed: string;
    readonly count: number;
    /** `missed`: the host was down or the clock jumped; `paused`: the series was paused. */
    readonly reason: SkipReason;
  };
}

export interface TimerCancelledEvent {
  readonly seq: number;
  readonly type: "TimerCancelled";
  readonly at?: string;
  readonly data: { readonly timerId: string; readonly reason?: string };
}

/** A series was paused: no tick fires until it is resumed. */
export interface SchedulePausedEvent {
  readonly seq: number;
  readonly type: "SchedulePaused";
  readonly at?: string;
  readonly data: { readonly timerId: string; readonly reason?: string };
}

/** A paused series was resumed; `catchUp` applies the misfire policy to the paused stretch. */
export interface ScheduleResumedEvent {
  readonly seq: number;
  readonly type: "ScheduleResumed";
  readonly at?: string;
  readonly data: { readonly timerId: string; readonly catchUp?: boolean };
}

/** A series reached a bound (`endAt`, `maxTicks`) and is over. */
export interface ScheduleEndedEvent {
  readonly seq: number;
  readonly type: "ScheduleEnded";
  readonly at?: string;
  readonly data: { readonly timerId: string; readonly reason: ScheduleEndReason; readonly lastTick?: string };
}

export interface SignalReceivedEvent {
  readonly seq: number;
  readonly type: "SignalReceived";
  readonly signalName: string;
  readonly signalId: string;
  readonly payload: unknown;
  readonly at: string;
}

export interface SignalConsumedEvent {
  readonly seq: number;
  readonly type: "SignalConsumed";
  readonly at?: string;
  readonly data: { readonly signalId: string; readonly stepId?: string };
}

export type TerminalEventType = "RunCompleted" | "RunFailed" | "RunCancelled";

export interface TerminalEvent {
  readonly seq: number;
  readonly type: TerminalEventType;
  readonly at?: string;
  readonly [key: string]: unknown;
}

/** Any event type this project does not interpret; passed through untouched. */
export interface OtherEvent {
  readonly seq: number;
  readonly type: string;
  readonly [key: string]: unknown;
}

export type KnownEvent =
  | TimerSetEvent
  | TimerFiredEvent
  | TimerSkippedEvent
  | TimerCancelledEvent
  | SchedulePausedEvent
  | ScheduleResumedEvent
  | ScheduleEndedEvent
  | SignalReceivedEvent
  | SignalConsumedEvent
  | TerminalEvent;

export type RunEvent = KnownEvent | OtherEvent;

/** An armed timer: the latest `TimerSet` generation of a timerId that nothing disarmed. */
export interface PendingTimer extends SeriesFields {
  readonly timerId: string;
  /** When this generation is due (for a cron series: its next tick). */
  readonly fireAt: string;
  /** Seq of the `TimerSet` that armed this generation (its generation number). */
  readonly setSeq: number;
  readonly stepId?: string;
  readonly cron?: string;
  /** IANA zone of the cron series; "UTC" when the TimerSet named none. */
  readonly timezone?: string;
  readonly misfire?: MisfirePolicy;
  /** While paused: the SchedulePaused event's `at` ("" when it had none). Absent while running. */
  readonly pausedAt?: string;
}

export interface UnconsumedSignal {
  readonly signalId: string;
  readonly signalName: string;
  readonly payload: unknown;
  readonly seq: number;
  readonly at: string;
}

export interface RunState {
  readonly runId: string;
  /** Highest seq seen, or -1 for an empty log. */
  readonly lastSeq: number;
  /** The terminal event type once the run ended, else null. */
  readonly terminal: TerminalEventType | null;
  /** Armed timers by timerId (empty once terminal). */
  readonly pendingTimers: ReadonlyMap<string, PendingTimer>;
  /** Every signalId in the log, consumed or not (the dedupe set). */
  readonly observedSignalIds: ReadonlySet<string>;
  /** SignalReceived events not yet followed by a SignalConsumed, in seq order. */
  readonly unconsumedSignals: readonly UnconsumedSignal[];
}
