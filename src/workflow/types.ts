/**
 * The run log's data model (docs/design.md §3). Events are plain JSON; instants are normalised
 * RFC 3339 strings in UTC with milliseconds (`Date.prototype.toISOString()`).
 */

export type MisfirePolicy = "skip" | "latest" | "all";

export interface TimerSetData {
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
  readonly data: { readonly timerId: string; readonly scheduledFor?: string; readonly firedAt?: string };
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
    readonly reason: "missed";
  };
}

export interface TimerCancelledEvent {
  readonly seq: number;
  readonly type: "TimerCancelled";
  readonly at?: string;
  readonly data: { readonly timerId: string; readonly reason?: string };
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
  | SignalReceivedEvent
  | SignalConsumedEvent
  | TerminalEvent;

export type RunEvent = KnownEvent | OtherEvent;

/** An armed timer: the latest `TimerSet` generation of a timerId that nothing disarmed. */
export interface PendingTimer {
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
