/**
 * Structural schemas of the run log's events (docs/design.md §3), in arktype: the published
 * statement of the shapes. Reading and writing events checks the same rules with the hand-written
 * checks of `./event-shapes.js` (kept equivalent by a property test), so that a read-only start
 * does not pay for loading arktype. They check shape and primitive types only; ids, instants and cron expressions are checked afterwards by their own
 * parsers (see `./events.js`), which give the specific error codes. Undeclared keys are kept,
 * so a newer writer's extra fields pass through an older reader.
 */
import { type } from "arktype";
import type { KnownEventType } from "./event-shapes.js";

export { TERMINAL_EVENT_TYPES, isKnownEventType, isTerminalEventType, type KnownEventType } from "./event-shapes.js";

/** Every event: a non-negative safe-integer `seq` and a non-empty `type`. */
export const eventBaseSchema = type({
  seq: "0 <= number.integer <= 9007199254740991",
  type: "string > 0",
});

/**
 * The original system's timer envelope declares `stepId`, `cron`, `timezone` and `misfire` as
 * `string | null`; a null is read as the field being absent (see `validateEvent`, which drops
 * it), and nothing this project writes ever holds one.
 */
export const timerSetSchema = type({
  seq: "number",
  type: "'TimerSet'",
  "at?": "string",
  data: {
    timerId: "string",
    fireAt: "string",
    "stepId?": "string | null",
    "cron?": "string | null",
    "timezone?": "string | null",
    "misfire?": "'skip' | 'latest' | 'all' | null",
    "startAt?": "string",
    "endAt?": "string",
    "maxTicks?": "1 <= number.integer <= 1000000",
    "slot?": "1 <= number.integer <= 9007199254740991",
    "jitterMs?": "0 <= number.integer <= 86400000",
    "owner?": "string",
  },
});

/** `scheduledFor` and `firedAt` are absent in logs written by the original system. */
export const timerFiredSchema = type({
  seq: "number",
  type: "'TimerFired'",
  "at?": "string",
  data: {
    timerId: "string",
    "scheduledFor?": "string",
    "firedAt?": "string",
    "manual?": "boolean",
    "requestId?": "string",
    "backfill?": "boolean",
    "jitteredFor?": "string",
    "takenUpAt?": "string",
  },
});

export const timerSkippedSchema = type({
  seq: "number",
  type: "'TimerSkipped'",
  "at?": "string",
  data: {
    timerId: "string",
    firstMissed: "string",
    lastMissed: "string",
    count: "1 <= number.integer <= 9007199254740991",
    reason: "'missed' | 'paused'",
  },
});

export const timerCancelledSchema = type({
  seq: "number",
  type: "'TimerCancelled'",
  "at?": "string",
  data: { timerId: "string", "reason?": "string" },
});

/** Schedule controls (src/workflow/schedule/): pause, resume, and the end of a bounded series. */
export const schedulePausedSchema = type({
  seq: "number",
  type: "'SchedulePaused'",
  "at?": "string",
  data: { timerId: "string", "reason?": "string" },
});

export const scheduleResumedSchema = type({
  seq: "number",
  type: "'ScheduleResumed'",
  "at?": "string",
  data: { timerId: "string", "catchUp?": "boolean" },
});

export const scheduleEndedSchema = type({
  seq: "number",
  type: "'ScheduleEnded'",
  "at?": "string",
  data: { timerId: "string", reason: "'endAt' | 'maxTicks'", "lastTick?": "string" },
});

export const signalReceivedSchema = type({
  seq: "number",
  type: "'SignalReceived'",
  signalName: "string",
  signalId: "string",
  payload: "unknown",
  at: "string",
});

export const signalConsumedSchema = type({
  seq: "number",
  type: "'SignalConsumed'",
  "at?": "string",
  data: { signalId: "string", "stepId?": "string" },
});

export const terminalEventSchema = type({
  seq: "number",
  type: "'RunCompleted' | 'RunFailed' | 'RunCancelled'",
  "at?": "string",
});

/** Schema per interpreted event type; any other type is passed through after the base check. */
export const knownEventSchemas = {
  TimerSet: timerSetSchema,
  TimerFired: timerFiredSchema,
  TimerSkipped: timerSkippedSchema,
  TimerCancelled: timerCancelledSchema,
  SchedulePaused: schedulePausedSchema,
  ScheduleResumed: scheduleResumedSchema,
  ScheduleEnded: scheduleEndedSchema,
  SignalReceived: signalReceivedSchema,
  SignalConsumed: signalConsumedSchema,
  RunCompleted: terminalEventSchema,
  RunFailed: terminalEventSchema,
  RunCancelled: terminalEventSchema,
} as const satisfies Record<KnownEventType, unknown>;
