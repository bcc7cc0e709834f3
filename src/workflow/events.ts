/**
 * Reading and writing single events of a run log (docs/design.md §3). An event file holds one JSON
 * object and nothing else: `serializeEvent` writes `JSON.stringify(event)` as UTF-8 with no
 * trailing newline (the compacted `events.jsonl` adds one newline per event), and the size limit
 * applies to exactly those bytes.
 *
 * Error codes: structure (bad JSON, wrong shape, seq mismatch) is `event_invalid` with arktype's
 * summary; a field that fails its own parser keeps that parser's code (`id_invalid`,
 * `time_invalid`, `cron_invalid`), so a TimerSet with `fireAt: "2026-02-30T00:00:00Z"` is
 * `time_invalid` naming `data.fireAt`, whether it is read from a log or about to be written.
 * Every error's `data` carries `path` (when known) and `seq`.
 */
import { type } from "arktype";
import { WorkflowHostError, describeValue } from "../errors.js";
import { validateCron } from "./cron.js";
import {
  eventBaseSchema,
  isKnownEventType,
  isTerminalEventType,
  knownEventSchemas,
} from "./event-schemas.js";
import { parseSignalId, parseSignalName, parseStepId, parseTimerId } from "./ids.js";
import { assertJsonValue } from "./json-value.js";
import { parseInstant } from "./time.js";
import { parseTimeZone } from "./time-zone.js";
import type { RunEvent } from "./types.js";

/** Default largest serialised event: 1 MiB (1 048 576 bytes of UTF-8). */
export const DEFAULT_MAX_EVENT_BYTES = 1_048_576;

/** Where an event comes from, for checks and error messages. */
export interface EventContext {
  /** Repo path of the event file, e.g. `runs/r1/events/3.json`; named in errors. */
  readonly path?: string;
  /** The seq the file name promises; the body's `seq` must equal it. */
  readonly expectedSeq?: number;
  /** Largest accepted size in bytes of UTF-8 (default {@link DEFAULT_MAX_EVENT_BYTES}). */
  readonly maxEventBytes?: number;
}

type Json = Record<string, unknown>;

/** TimerSet fields the original system may write as `null`, meaning absent. */
const NULLABLE_TIMER_FIELDS = ["stepId", "cron", "timezone", "misfire"] as const;

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

function where(ctx: EventContext, seq: number | undefined): Json {
  const data: Json = {};
  if (ctx.path !== undefined) data["path"] = ctx.path;
  if (seq !== undefined) data["seq"] = seq;
  else if (ctx.expectedSeq !== undefined) data["seq"] = ctx.expectedSeq;
  return data;
}

function label(ctx: EventContext): string {
  return ctx.path === undefined ? "event" : `event ${ctx.path}`;
}

function eventInvalid(ctx: EventContext, seq: number | undefined, detail: string, extra: Json = {}, cause?: unknown): WorkflowHostError {
  return new WorkflowHostError("event_invalid", `${label(ctx)}: ${detail}`, { ...where(ctx, seq), ...extra }, cause === undefined ? {} : { cause });
}

/** Re-raises a field parser's error with the event's path and seq added. */
function inEvent<T>(ctx: EventContext, seq: number, check: () => T, extra: Json = {}): T {
  try {
    return check();
  } catch (error) {
    if (!(error instanceof WorkflowHostError)) throw error;
    const detail = error.message.slice(error.code.length + 2);
    throw new WorkflowHostError(error.code, `${label(ctx)}: ${detail}`, { ...error.data, ...extra, ...where(ctx, seq) }, { cause: error });
  }
}

function maxBytes(ctx: EventContext): number {
  return ctx.maxEventBytes ?? DEFAULT_MAX_EVENT_BYTES;
}

/**
 * Parses one event file.
 *
 * Order of checks: size (before decoding), UTF-8, JSON, base shape (`seq`, `type`), body seq
 * against `expectedSeq`, the schema of a known type, then ids, instants and cron through their
 * parsers. Instants in the result are normalised (`toISOString()`); the input is not changed.
 * A TimerSet's `stepId`, `cron`, `timezone` or `misfire` given as `null` (as the original
 * system writes an absent one) is left out of the result.
 * Unknown event types are returned as parsed after the base check.
 *
 * @param input - the file's bytes, or its text.
 * @param ctx - path (for errors), expectedSeq, maxEventBytes (default 1 MiB).
 * @returns the event.
 * @throws `payload_too_large` (`data {path, seq, sizeBytes, maxEventBytes}`); `event_invalid`
 *   (bad UTF-8 or JSON, wrong shape, seq mismatch; arktype's summary in the message);
 *   `id_invalid`, `time_invalid`, `cron_invalid` for a field (`data` names it, plus path and seq).
 */
export function parseEvent(input: Uint8Array | string, ctx: EventContext = {}): RunEvent {
  const bytes = typeof input === "string" ? encoder.encode(input) : input;
  if (bytes.length > maxBytes(ctx)) {
    throw new WorkflowHostError(
      "payload_too_large",
      `${label(ctx)} is ${bytes.length} bytes; allowed: at most ${maxBytes(ctx)}`,
      { ...where(ctx, undefined), sizeBytes: bytes.length, maxEventBytes: maxBytes(ctx) },
    );
  }
  let text: string;
  try {
    text = typeof input === "string" ? input : decoder.decode(input);
  } catch (error) {
    throw eventInvalid(ctx, undefined, "is not UTF-8", {}, error);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw eventInvalid(ctx, undefined, `is not JSON (${error instanceof Error ? error.message : String(error)})`, {}, error);
  }
  return validateEvent(value, ctx);
}

/**
 * Checks an in-memory event and returns it with instants normalised (see {@link parseEvent} for
 * the checks and errors; the size limit is not applied here, see {@link serializeEvent}).
 */
export function validateEvent(value: unknown, ctx: EventContext = {}): RunEvent {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw eventInvalid(ctx, undefined, `${describeValue(value)} is not a JSON object; allowed: {seq, type, ...}`);
  }
  const base = eventBaseSchema(value);
  if (base instanceof type.errors) throw eventInvalid(ctx, undefined, base.summary, { summary: base.summary });
  const event = value as Json & { seq: number; type: string };
  const seq = event.seq;
  if (ctx.expectedSeq !== undefined && seq !== ctx.expectedSeq) {
    throw eventInvalid(ctx, seq, `body seq ${seq} differs from the file name's ${ctx.expectedSeq}`, { expectedSeq: ctx.expectedSeq });
  }
  if (!isKnownEventType(event.type)) return event as RunEvent;
  const checked = knownEventSchemas[event.type](value);
  if (checked instanceof type.errors) throw eventInvalid(ctx, seq, `${event.type}: ${checked.summary}`, { summary: checked.summary });
  const out: Json = { ...event };
  if (event["at"] !== undefined) out["at"] = inEvent(ctx, seq, () => parseInstant(event["at"], "at"));
  const data = event["data"] as Json | undefined;
  const field = <T>(name: string, parse: (v: unknown, f: string) => T): T => inEvent(ctx, seq, () => parse(data?.[name], `data.${name}`));
  switch (event.type) {
    case "TimerSet": {
      const d: Json = { ...data, timerId: field("timerId", parseTimerId), fireAt: field("fireAt", parseInstant) };
      for (const name of NULLABLE_TIMER_FIELDS) if (d[name] === null) delete d[name];
      if (d["stepId"] !== undefined) d["stepId"] = field("stepId", parseStepId);
      checkSeriesFields(ctx, seq, d, field);
      if (d["cron"] !== undefined) {
        inEvent(ctx, seq, () => validateCron(d["cron"], d["timezone"]), { field: "data.cron" });
      } else if (d["timezone"] !== undefined) {
        field("timezone", (v, f) => parseTimeZone(v, f));
      }
      out["data"] = d;
      break;
    }
    case "TimerFired": {
      const d: Json = { ...data, timerId: field("timerId", parseTimerId) };
      if (data?.["scheduledFor"] !== undefined) d["scheduledFor"] = field("scheduledFor", parseInstant);
      if (data?.["firedAt"] !== undefined) d["firedAt"] = field("firedAt", parseInstant);
      if (data?.["jitteredFor"] !== undefined) d["jitteredFor"] = field("jitteredFor", parseInstant);
      if (data?.["requestId"] !== undefined) d["requestId"] = field("requestId", parseSignalId);
      if ((d["manual"] === true) !== (d["requestId"] !== undefined) || (d["manual"] === true && d["backfill"] === true)) {
        throw eventInvalid(ctx, seq, `TimerFired: manual ${String(d["manual"])}, requestId ${describeValue(d["requestId"])}, backfill ${String(d["backfill"])}; allowed: a manual fire names a requestId (and only it does), and is not a backfill`);
      }
      out["data"] = d;
      break;
    }
    case "TimerSkipped": {
      const first = field("firstMissed", parseInstant);
      const last = field("lastMissed", parseInstant);
      const count = data?.["count"] as number;
      if (first > last || (count === 1) !== (first === last)) {
        throw eventInvalid(ctx, seq, `TimerSkipped covers ${first}..${last} with count ${count}; allowed: firstMissed <= lastMissed, equal exactly when count is 1`);
      }
      out["data"] = { ...data, timerId: field("timerId", parseTimerId), firstMissed: first, lastMissed: last };
      break;
    }
    case "TimerCancelled":
    case "SchedulePaused":
    case "ScheduleResumed":
      out["data"] = { ...data, timerId: field("timerId", parseTimerId) };
      break;
    case "ScheduleEnded": {
      const d: Json = { ...data, timerId: field("timerId", parseTimerId) };
      if (data?.["lastTick"] !== undefined) d["lastTick"] = field("lastTick", parseInstant);
      out["data"] = d;
      break;
    }
    case "SignalReceived":
      inEvent(ctx, seq, () => parseSignalName(event["signalName"]));
      inEvent(ctx, seq, () => parseSignalId(event["signalId"]));
      inEvent(ctx, seq, () => assertJsonValue(event["payload"], "payload"));
      break;
    case "SignalConsumed": {
      const d: Json = { ...data, signalId: field("signalId", parseSignalId) };
      if (data?.["stepId"] !== undefined) d["stepId"] = field("stepId", parseStepId);
      out["data"] = d;
      break;
    }
    default:
      // Terminal events: only `at`, checked above.
      if (!isTerminalEventType(event.type)) throw eventInvalid(ctx, seq, `unhandled type ${event.type}`);
  }
  return out as RunEvent;
}

/**
 * Checks a TimerSet's schedule fields (bounds, slot, jitter, owner): they belong to a cron
 * series, `startAt <= fireAt <= endAt`, and the slot is within `maxTicks`. Normalises the instants.
 */
function checkSeriesFields(ctx: EventContext, seq: number, d: Json, field: <T>(name: string, parse: (v: unknown, f: string) => T) => T): void {
  const names = ["startAt", "endAt", "maxTicks", "slot", "jitterMs", "owner"].filter((n) => d[n] !== undefined);
  if (names.length === 0) return;
  if (d["cron"] === undefined) {
    throw eventInvalid(ctx, seq, `TimerSet ${names.join(", ")} without cron; allowed: schedule fields only on a cron series`, { fields: names });
  }
  const fireAtMs = Date.parse(d["fireAt"] as string);
  if (d["startAt"] !== undefined) {
    d["startAt"] = field("startAt", parseInstant);
    if (Date.parse(d["startAt"] as string) > fireAtMs) throw eventInvalid(ctx, seq, `TimerSet fireAt ${String(d["fireAt"])} is before startAt ${String(d["startAt"])}; allowed: fireAt >= startAt`);
  }
  if (d["endAt"] !== undefined) {
    d["endAt"] = field("endAt", parseInstant);
    if (Date.parse(d["endAt"] as string) < fireAtMs) throw eventInvalid(ctx, seq, `TimerSet fireAt ${String(d["fireAt"])} is after endAt ${String(d["endAt"])}; allowed: fireAt <= endAt`);
  }
  if (d["maxTicks"] !== undefined && ((d["slot"] as number | undefined) ?? 1) > (d["maxTicks"] as number)) {
    throw eventInvalid(ctx, seq, `TimerSet slot ${String(d["slot"])} is past maxTicks ${String(d["maxTicks"])}; allowed: slot <= maxTicks`);
  }
  if (d["owner"] !== undefined) d["owner"] = field("owner", parseSignalId);
}

/**
 * The exact bytes of an event file: UTF-8 `JSON.stringify` of the validated event (instants
 * normalised), no trailing newline.
 *
 * @param event - any event; it must be plain JSON data (no `undefined`, class instances, NaN).
 * @param opts - maxEventBytes (default 1 MiB) and path (for errors).
 * @returns bytes that {@link parseEvent} accepts and that decode to the same event.
 * @throws `payload_too_large` when the bytes exceed the limit (`data {seq, sizeBytes,
 *   maxEventBytes}`); otherwise as {@link validateEvent}.
 */
export function serializeEvent(event: RunEvent, opts: Omit<EventContext, "expectedSeq"> = {}): Uint8Array {
  const normalised = validateEvent(event, opts);
  // JSON.stringify would silently drop or rewrite what is not plain data (undefined, NaN, Date).
  inEvent(opts, normalised.seq, () => assertJsonValue(normalised, "event"));
  const bytes = encoder.encode(JSON.stringify(normalised));
  if (bytes.length > maxBytes(opts)) {
    throw new WorkflowHostError(
      "payload_too_large",
      `${label(opts)} seq ${normalised.seq} serialises to ${bytes.length} bytes; allowed: at most ${maxBytes(opts)}`,
      { ...where(opts, normalised.seq), sizeBytes: bytes.length, maxEventBytes: maxBytes(opts) },
    );
  }
  return bytes;
}
