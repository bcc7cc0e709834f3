/**
 * Turning what a runtime asks for (`fireAt` | `delayMs` | `cron`) into the data of a TimerSet,
 * checked in full before anything is written. Pure: "now" is passed in.
 */
import { WorkflowHostError, describeValue } from "../errors.js";
import { nextTick, validateCron } from "./cron.js";
import { timerSetEvent } from "./event-constructors.js";
import { parseStepId, parseTimerId } from "./ids.js";
import { isoFromMs, parseInstant } from "./time.js";
import { DEFAULT_TIME_ZONE } from "./time-zone.js";
import type { PendingTimer, TimerSetData } from "./types.js";
import type { MisfirePolicy } from "./types.js";


interface TimerSpecBase {
  readonly timerId: string;
  readonly stepId?: string;
  /** Misfire policy of a cron series (default: the scheduler's). */
  readonly misfire?: MisfirePolicy;
}

/**
 * When a timer fires: exactly one of `fireAt` (an instant: RFC 3339 with offset, or a Date),
 * `delayMs` (ms from the clock's now, finite, ≥ 0) or `cron` (5 or 6 fields, in `timezone`,
 * IANA, default "UTC"; the first tick after now).
 */
export type TimerSpec = TimerSpecBase &
  (
    | { readonly fireAt: string | Date; readonly delayMs?: never; readonly cron?: never; readonly timezone?: never }
    | { readonly delayMs: number; readonly fireAt?: never; readonly cron?: never; readonly timezone?: never }
    | { readonly cron: string; readonly timezone?: string; readonly fireAt?: never; readonly delayMs?: never }
  );

/**
 * An instant given as RFC 3339 text or a Date, normalised (UTC, milliseconds).
 * @throws time_invalid naming `field`
 */
export function instantOf(value: unknown, field: string): string {
  if (value instanceof Date) {
    if (!Number.isFinite(value.getTime())) throw new WorkflowHostError("time_invalid", `${field} is an invalid Date; allowed: a valid Date or an RFC 3339 instant with offset`, { field, value: String(value) });
    return isoFromMs(value.getTime(), field);
  }
  return parseInstant(value, field);
}

/**
 * Checks a duration in ms.
 * @returns the same number
 * @throws time_invalid naming `field` when not a finite number ≥ 0
 */
export function durationMs(value: unknown, field: string): number {
  if (typeof value === "number" && Number.isFinite(value) && value >= 0) return value;
  throw new WorkflowHostError("time_invalid", `${field} ${describeValue(value)} is not a duration; allowed: a finite number of milliseconds >= 0`, { field, value });
}

/**
 * `nowMs + delayMs` as an instant. A delay that is not whole milliseconds, or that reaches past
 * year 9999, is refused as the delay the caller gave (the computed instant would name a number
 * they never passed).
 */
function delayedInstant(nowMs: number, delayMs: unknown): string {
  const ms = durationMs(delayMs, "delayMs");
  if (!Number.isInteger(ms) || !Number.isInteger(nowMs + ms) || nowMs + ms > MAX_INSTANT_MS) {
    throw new WorkflowHostError("time_invalid", `delayMs ${describeValue(delayMs)} is not a delay a timer can have; allowed: whole milliseconds >= 0 that put fireAt at or before 9999-12-31T23:59:59.999Z`, { field: "delayMs", value: delayMs });
  }
  return isoFromMs(nowMs + ms, "delayMs");
}

/** 9999-12-31T23:59:59.999Z, the last instant a timer may have. */
const MAX_INSTANT_MS = 253_402_300_799_999;

/**
 * The TimerSet data for a request.
 * @param nowMs the clock's reading (epoch ms): `delayMs` counts from it; a cron's first tick is
 *   the first after it
 * @returns validated data (it passes the TimerSet schema, cron compiled with its zone)
 * @throws id_invalid (timerId, stepId); time_invalid (fireAt, delayMs, not exactly one of
 *   fireAt/delayMs/cron, timezone without cron); cron_invalid (expression, zone, no tick after
 *   now); event_invalid (misfire: not a policy, or given without cron)
 */
export function resolveTimerSpec(spec: TimerSpec, nowMs: number): TimerSetData {
  const timerId = parseTimerId(spec.timerId);
  const stepId = spec.stepId === undefined ? undefined : parseStepId(spec.stepId);
  const given = (["fireAt", "delayMs", "cron"] as const).filter((k) => spec[k] !== undefined);
  if (given.length !== 1) {
    throw new WorkflowHostError("time_invalid", `timer ${timerId} names ${given.length === 0 ? "none" : given.join(" and ")} of fireAt, delayMs, cron; allowed: exactly one`, { timerId, given });
  }
  let data: TimerSetData;
  if (spec.cron !== undefined) {
    const series = validateCron(spec.cron, spec.timezone ?? DEFAULT_TIME_ZONE);
    const fireAt = nextTick(series.cron, series.timezone, isoFromMs(nowMs));
    if (fireAt === null) {
      throw new WorkflowHostError("cron_invalid", `cron ${describeValue(series.cron)} (zone ${series.timezone}) has no tick after now; allowed: a series with a future tick`, {
        field: "cron",
        value: series.cron,
        timezone: series.timezone,
      });
    }
    data = { timerId, fireAt, cron: series.cron, timezone: series.timezone };
  } else {
    const timezone = (spec as { timezone?: unknown }).timezone;
    if (timezone !== undefined) {
      throw new WorkflowHostError("time_invalid", `timezone ${describeValue(timezone)} given without cron; allowed: timezone only with a cron series`, { field: "timezone", value: timezone });
    }
    if (spec.misfire !== undefined) {
      // A one-shot that fell due while no host ran fires once on recovery: no policy applies.
      throw new WorkflowHostError("event_invalid", `misfire ${describeValue(spec.misfire)} given without cron; allowed: misfire only with a cron series`, { field: "misfire", value: spec.misfire });
    }
    const fireAt = spec.fireAt !== undefined ? instantOf(spec.fireAt, "fireAt") : delayedInstant(nowMs, spec.delayMs);
    data = { timerId, fireAt };
  }
  if (stepId !== undefined) data = { ...data, stepId };
  if (spec.misfire !== undefined) data = { ...data, misfire: spec.misfire };
  // The schema's own checks (misfire values, field shapes) run here, before any write.
  return timerSetEvent(1, data).data;
}

/**
 * Whether an armed timer already is this request, so setting it again would change nothing:
 * a one-shot with the same fireAt and stepId, or a series with the same expression, zone,
 * misfire and stepId (whichever tick it has reached).
 */
export function sameTimerRequest(pending: PendingTimer, data: TimerSetData): boolean {
  if (pending.stepId !== data.stepId) return false;
  if (data.cron === undefined) return pending.cron === undefined && Date.parse(pending.fireAt) === Date.parse(data.fireAt);
  return pending.cron === data.cron && (pending.timezone ?? DEFAULT_TIME_ZONE) === (data.timezone ?? DEFAULT_TIME_ZONE) && pending.misfire === data.misfire;
}
