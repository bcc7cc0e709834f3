/**
 * Building the events the scheduler and the signal channel write. Each constructor validates
 * like {@link parseEvent} and returns the event with instants normalised; the size limit is
 * applied when the event is serialised ({@link serializeEvent}).
 */
import { WorkflowHostError } from "../errors.js";
import type { TimerEvent } from "./event-guards.js";
import { validateEvent } from "./events.js";
import { assertJsonValue } from "./json-value.js";
import type {
  KnownEvent,
  ScheduleEndedEvent,
  SchedulePausedEvent,
  ScheduleResumedEvent,
  SignalConsumedEvent,
  SkipReason,
  SignalReceivedEvent,
  TerminalEvent,
  TerminalEventType,
  TimerCancelledEvent,
  TimerFiredEvent,
  TimerSetData,
  TimerSetEvent,
  TimerSkippedEvent,
} from "./types.js";

type WithoutSeq<E> = E extends unknown ? { readonly [K in keyof E as K extends "seq" ? never : K]: E[K] } : never;

/** Validates an event built here; its type is the one it was built with (the parser keeps `type`). */
function validated<E extends KnownEvent>(event: E): E {
  return validateEvent(event) as E;
}

/**
 * An event to append, before the appender gives it the next seq (see `openRunLog`). Built by
 * the `new…` constructors below; validated (like {@link parseEvent}) when appended.
 */
export type NewRunEvent = WithoutSeq<KnownEvent>;

/** A timer or schedule event to append: what the fire and schedule planners decide. */
export type NewTimerEvent = WithoutSeq<TimerEvent>;

/**
 * The fields a `TimerFired` may carry besides its slot: a manual or backfill fire, a jittered due
 * time, when the host took a tick up that it committed late.
 */
type FireMarks = { readonly [K in "manual" | "requestId" | "backfill" | "jitteredFor" | "takenUpAt"]?: TimerFiredEvent["data"][K] | undefined };

/** A `TimerSet` to append (see {@link timerSetEvent}). Keys whose value is undefined are left out. */
export function newTimerSet(data: TimerSetData, at?: string): WithoutSeq<TimerSetEvent> {
  return withAt({ type: "TimerSet" as const, data: defined(data) }, at);
}

/** A `TimerFired` to append (see {@link timerFiredEvent}); undefined marks are left out. */
export function newTimerFired(data: { readonly timerId: string; readonly scheduledFor: string; readonly firedAt: string } & FireMarks, at?: string): WithoutSeq<TimerFiredEvent> {
  return withAt({ type: "TimerFired" as const, data: defined(data) as TimerFiredEvent["data"] }, at);
}

/** A `TimerSkipped` to append (see {@link timerSkippedEvent}); `reason` defaults to `missed`. */
export function newTimerSkipped(
  data: { readonly timerId: string; readonly firstMissed: string; readonly lastMissed: string; readonly count: number; readonly reason?: SkipReason },
  at?: string,
): WithoutSeq<TimerSkippedEvent> {
  return withAt({ type: "TimerSkipped" as const, data: { ...defined(data), reason: data.reason ?? "missed" } }, at);
}

/** Longest `reason` of a TimerCancelled or SchedulePaused written here, in characters (Unicode code points: an emoji is one). */
export const MAX_REASON_CHARS = 1_000;

/**
 * Checks a cancel or pause reason before anything is read or written: absent, or a string of at
 * most {@link MAX_REASON_CHARS} characters. Every face (library, CLI, HTTP) applies this one limit.
 * @throws `event_invalid` (data `{field: "reason", lengthChars, maxChars}`)
 */
export function checkReason(reason: unknown): void {
  if (reason === undefined) return;
  if (typeof reason !== "string") throw new WorkflowHostError("event_invalid", `reason is ${typeof reason}; allowed: a string of at most ${MAX_REASON_CHARS} characters`, { field: "reason" });
  // Counted only past the limit in code units: no reason under it can be over it in characters.
  if (reason.length > MAX_REASON_CHARS) {
    let chars = 0;
    for (const _ of reason) chars += 1;
    if (chars > MAX_REASON_CHARS) {
      throw new WorkflowHostError("event_invalid", `reason is ${chars} characters long; allowed: at most ${MAX_REASON_CHARS}`, { field: "reason", lengthChars: chars, maxChars: MAX_REASON_CHARS });
    }
  }
}

/**
 * A `SchedulePaused` to append; an undefined reason is left out.
 * @throws `event_invalid` for a reason over {@link MAX_REASON_CHARS}
 */
export function newSchedulePaused(data: { readonly timerId: string; readonly reason?: string | undefined }, at?: string): WithoutSeq<SchedulePausedEvent> {
  checkReason(data.reason);
  return withAt({ type: "SchedulePaused" as const, data: defined(data) as { timerId: string; reason?: string } }, at);
}

/** A `ScheduleResumed` to append; `catchUp` is written only when true. */
export function newScheduleResumed(data: { readonly timerId: string; readonly catchUp?: boolean }, at?: string): WithoutSeq<ScheduleResumedEvent> {
  return withAt({ type: "ScheduleResumed" as const, data: { timerId: data.timerId, ...(data.catchUp === true ? { catchUp: true } : {}) } }, at);
}

/** A `ScheduleEnded` to append: the series reached a bound after `lastTick`. */
export function newScheduleEnded(data: ScheduleEndedEvent["data"], at?: string): WithoutSeq<ScheduleEndedEvent> {
  return withAt({ type: "ScheduleEnded" as const, data: defined(data) }, at);
}

/**
 * A `TimerCancelled` to append (see {@link timerCancelledEvent}); an undefined reason is left out.
 * @throws `event_invalid` for a reason over {@link MAX_REASON_CHARS}
 */
export function newTimerCancelled(data: { readonly timerId: string; readonly reason?: string | undefined }, at?: string): WithoutSeq<TimerCancelledEvent> {
  checkReason(data.reason);
  return withAt({ type: "TimerCancelled" as const, data: defined(data) as { timerId: string; reason?: string } }, at);
}

/** A terminal event to append (`RunCompleted`, `RunFailed`, `RunCancelled`), with extra fields such as a reason. */
export function newTerminalEvent(type: TerminalEventType, at: string, extra: Readonly<Record<string, unknown>> = {}): WithoutSeq<TerminalEvent> {
  return { ...extra, type, at };
}

/** A `SignalReceived` to append (see {@link signalReceivedEvent}). */
export function newSignalReceived(data: { readonly signalName: string; readonly signalId: string; readonly payload: unknown; readonly at: string }): WithoutSeq<SignalReceivedEvent> {
  return { type: "SignalReceived", signalName: data.signalName, signalId: data.signalId, payload: data.payload, at: data.at };
}

/** A `SignalConsumed` to append (see {@link signalConsumedEvent}); an undefined stepId is left out. */
export function newSignalConsumed(data: { readonly signalId: string; readonly stepId?: string | undefined }, at?: string): WithoutSeq<SignalConsumedEvent> {
  return withAt({ type: "SignalConsumed" as const, data: defined(data) as { signalId: string; stepId?: string } }, at);
}

/** Copies the keys whose value is not undefined, so optional fields never hold `undefined`. */
function defined<T extends object>(value: T): T {
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) if (v !== undefined) out[key] = v;
  return out as T;
}

function withAt<T extends { type: string }>(event: T, at: string | undefined): T & { at?: string } {
  return at === undefined ? event : { ...event, at };
}

/**
 * A `TimerSet`: arms `timerId` at `fireAt` (a one-shot), or one tick of a cron series.
 * @param seq - the event's seq (non-negative integer).
 * @param data - timerId; fireAt (RFC 3339 with offset); stepId?; cron? (5 or 6 fields, with at
 *   least one future tick); timezone? (IANA, default "UTC" for a series); misfire? (`skip` |
 *   `latest` | `all`).
 * @param at - when the event was written (RFC 3339), optional.
 * @throws `event_invalid`, `id_invalid`, `time_invalid`, `cron_invalid`.
 */
export function timerSetEvent(seq: number, data: TimerSetData, at?: string): TimerSetEvent {
  return validated({ seq, ...newTimerSet(data, at) });
}

/**
 * A `TimerFired` for the tick due at `scheduledFor`, committed at `firedAt`.
 * @throws `event_invalid`, `id_invalid`, `time_invalid`.
 */
export function timerFiredEvent(
  seq: number,
  data: { readonly timerId: string; readonly scheduledFor: string; readonly firedAt: string },
  at?: string,
): TimerFiredEvent {
  return validated({ seq, ...newTimerFired(data, at) });
}

/**
 * A `TimerSkipped` covering `count` missed ticks of a series, `firstMissed`..`lastMissed`
 * (the `skip` misfire policy). `reason` is always `"missed"`.
 * @throws `event_invalid` (count not a positive integer, range inconsistent with count),
 *   `id_invalid`, `time_invalid`.
 */
export function timerSkippedEvent(
  seq: number,
  data: { readonly timerId: string; readonly firstMissed: string; readonly lastMissed: string; readonly count: number },
  at?: string,
): TimerSkippedEvent {
  return validated({ seq, ...newTimerSkipped(data, at) });
}

/**
 * A `TimerCancelled`: disarms `timerId` (a one-shot or a whole series).
 * @throws `event_invalid`, `id_invalid`, `time_invalid`.
 */
export function timerCancelledEvent(seq: number, data: { readonly timerId: string; readonly reason?: string }, at?: string): TimerCancelledEvent {
  return validated({ seq, ...newTimerCancelled(data, at) });
}

/**
 * A `SignalReceived`: a delivery of `signalName` with dedupe key `signalId`.
 * @param data - signalName, signalId, payload (plain JSON data, so it reads back unchanged),
 *   at (RFC 3339; required on this event).
 * @throws `event_invalid` (payload not plain JSON data), `id_invalid`, `time_invalid`.
 */
export function signalReceivedEvent(
  seq: number,
  data: { readonly signalName: string; readonly signalId: string; readonly payload: unknown; readonly at: string },
): SignalReceivedEvent {
  assertJsonValue(data.payload, "payload");
  return validated({ seq, ...newSignalReceived(data) });
}

/**
 * A `SignalConsumed`: `signalId` was handed to a waiter (optionally of step `stepId`).
 * @throws `event_invalid`, `id_invalid`, `time_invalid`.
 */
export function signalConsumedEvent(seq: number, data: { readonly signalId: string; readonly stepId?: string }, at?: string): SignalConsumedEvent {
  return validated({ seq, ...newSignalConsumed(data, at) });
}
