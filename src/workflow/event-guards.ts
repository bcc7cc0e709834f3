/**
 * A type guard per event type. `RunEvent` includes events of types this project does not
 * interpret (`OtherEvent`, whose `type` is any string), so comparing `type` alone does not
 * narrow; these guards do. Events are expected as {@link parseEvent} returns them: a known type
 * has passed its schema, so its fields are what the guard promises.
 */
import { isTerminalEventType } from "./event-shapes.js";
import type {
  KnownEvent,
  RunEvent,
  ScheduleEndedEvent,
  SchedulePausedEvent,
  ScheduleResumedEvent,
  SignalConsumedEvent,
  SignalReceivedEvent,
  TerminalEvent,
  TimerCancelledEvent,
  TimerFiredEvent,
  TimerSetEvent,
  TimerSkippedEvent,
} from "./types.js";

export function isTimerSet(event: RunEvent): event is TimerSetEvent {
  return event.type === "TimerSet";
}

export function isTimerFired(event: RunEvent): event is TimerFiredEvent {
  return event.type === "TimerFired";
}

export function isTimerSkipped(event: RunEvent): event is TimerSkippedEvent {
  return event.type === "TimerSkipped";
}

export function isTimerCancelled(event: RunEvent): event is TimerCancelledEvent {
  return event.type === "TimerCancelled";
}

export function isSchedulePaused(event: RunEvent): event is SchedulePausedEvent {
  return event.type === "SchedulePaused";
}

export function isScheduleResumed(event: RunEvent): event is ScheduleResumedEvent {
  return event.type === "ScheduleResumed";
}

export function isScheduleEnded(event: RunEvent): event is ScheduleEndedEvent {
  return event.type === "ScheduleEnded";
}

export function isSignalReceived(event: RunEvent): event is SignalReceivedEvent {
  return event.type === "SignalReceived";
}

export function isSignalConsumed(event: RunEvent): event is SignalConsumedEvent {
  return event.type === "SignalConsumed";
}

// From event-shapes.ts, not event-schemas.ts (which loads the schema library): the CLI reads
// events through these guards and starts faster without it.
export function isTerminalEvent(event: RunEvent): event is TerminalEvent {
  return isTerminalEventType(event.type);
}

/** The event types that name one timer: the four timer events and the schedule controls. */
export type TimerEvent = TimerSetEvent | TimerFiredEvent | TimerSkippedEvent | TimerCancelledEvent | SchedulePausedEvent | ScheduleResumedEvent | ScheduleEndedEvent;

export function isTimerEvent(event: RunEvent): event is TimerEvent {
  return isTimerSet(event) || isTimerFired(event) || isTimerSkipped(event) || isTimerCancelled(event) || isSchedulePaused(event) || isScheduleResumed(event) || isScheduleEnded(event);
}

/** The event as a known one, or null for a type this project does not interpret. */
export function asKnownEvent(event: RunEvent): KnownEvent | null {
  return isTimerEvent(event) || isSignalReceived(event) || isSignalConsumed(event) || isTerminalEvent(event) ? event : null;
}

/** The timerId a timer event names; undefined for any other event. */
export function timerIdOf(event: RunEvent): string | undefined {
  return isTimerEvent(event) ? event.data.timerId : undefined;
}
