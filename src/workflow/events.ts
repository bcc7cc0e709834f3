/**
 * Reading and writing single events of a run log (docs/design.md §3). An event file holds one JSON
 * object and nothing else: `serializeEvent` writes `JSON.stringify(event)` as UTF-8 with no
 * trailing newline (the compacted `events.jsonl` adds one newline per event), and the size limit
 * applies to exactly those bytes.
 *
 * Error codes: structure (bad JSON, wrong shape, seq mismatch) is `event_invalid` with a summary
 * of what is wrong (the shapes are those of the arktype schemas in `./event-schemas.js`, checked
 * by hand in `./event-shapes.js` so that reading a log does not load arktype); a field that fails its own parser keeps that parser's code (`id_invalid`,
 * `time_invalid`, `cron_invalid`), so a TimerSet with `fireAt: "2026-02-30T00:00:00Z"` is
 * `time_invalid` naming `data.fireAt`, whether it is read from a log or about to be written.
 * Every error's `data` carries `path` (when known) and `seq`.
 */
import { WorkflowHostError, describeValue } from "../errors.js";
import { validateCron } from "./cron.js";
import { eventBaseProblem, isKnownEventType, isTerminalEventType, knownEventProblem } from "./event-shapes.js";
import { parseSignalId, parseSignalName, parseStepId, parseTimerId } from "./ids.js";
import { assertJsonValue, jsonTextNestsDeeper, MAX_EVENT_DEPTH } from "./json-value.js";
import { writeAsciiChars } from "../substrate/byte-copy.js";
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

/** A field parser's error with the event's path and seq added; anything else as it is. */
function inEventError(ctx: EventContext, seq: number, error: unknown, extra: Json = {}): unknown {
  if (!(error instanceof WorkflowHostError)) return error;
  const detail = error.message.slice(error.code.length + 2);
  return new WorkflowHostError(error.code, `${label(ctx)}: ${detail}`, { ...error.data, ...extra, ...where(ctx, seq) }, { cause: error });
}

/** Re-raises a field parser's error with the event's path and seq added. */
function inEvent<T>(ctx: EventContext, seq: number, check: () => T, extra: Json = {}): T {
  try {
    return check();
  } catch (error) {
    throw inEventError(ctx, seq, error, extra);
  }
}

/** `data` to normalise: itself when JSON.parse just made it (the caller's alone), else a copy. */
function ownData(fromJson: boolean, data: Json | undefined): Json {
  return fromJson && data !== undefined ? data : { ...data };
}

/**
 * `parse(holder[name], label)`, its error placed in the event (see {@link inEvent}). Not a
 * closure: a log read calls it for a few fields of every event.
 */
function fieldOf<T>(ctx: EventContext, seq: number, holder: Json | undefined, name: string, fieldLabel: string, parse: (v: unknown, f: string) => T): T {
  try {
    return parse(holder?.[name], fieldLabel);
  } catch (error) {
    throw inEventError(ctx, seq, error);
  }
}

function maxBytes(ctx: EventContext): number {
  return ctx.maxEventBytes ?? DEFAULT_MAX_EVENT_BYTES;
}

/**
 * Parses one event file.
 *
 * Order of checks: size (before decoding), UTF-8, nesting (at most `MAX_EVENT_DEPTH` levels), JSON, base shape (`seq`, `type`), body seq
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
 *   (bad UTF-8 or JSON, nested too deep, wrong shape, seq mismatch; a summary of the shape problems in the message);
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
  if (jsonTextNestsDeeper(text)) throw eventInvalid(ctx, undefined, `nests objects and arrays more than ${MAX_EVENT_DEPTH} levels deep; allowed: at most ${MAX_EVENT_DEPTH}`, { maxDepth: MAX_EVENT_DEPTH });
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw eventInvalid(ctx, undefined, `is not JSON (${error instanceof Error ? error.message : String(error)})`, {}, error);
  }
  return checkEvent(value, ctx, true, text.length <= SHALLOW_JSON_CHARS);
}

/**
 * JSON text up to this many characters nests at most half as deep, which `JSON.stringify` always
 * handles (it overflows the stack somewhere past 3 000 levels here): a payload parsed from such
 * text is plain JSON data without checking. Longer text is checked, so a payload nested
 * 100 000 deep is refused on read as it is on write.
 */
const SHALLOW_JSON_CHARS = 1_024;

/**
 * Checks an in-memory event and returns it with instants normalised (see {@link parseEvent} for
 * the checks and errors; the size limit is not applied here, see {@link serializeEvent}).
 */
export function validateEvent(value: unknown, ctx: EventContext = {}): RunEvent {
  return checkEvent(value, ctx, false, false);
}

/**
 * {@link validateEvent}. `fromJson`: the value is what `JSON.parse` just returned (the caller's
 * alone, so it is normalised in place); `plainJson`: and from text short enough that it is
 * plain JSON data already (see {@link SHALLOW_JSON_CHARS}).
 */
function checkEvent(value: unknown, ctx: EventContext, fromJson: boolean, plainJson: boolean): RunEvent {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw eventInvalid(ctx, undefined, `${describeValue(value)} is not a JSON object; allowed: {seq, type, ...}`);
  }
  const base = eventBaseProblem(value);
  if (base !== null) throw eventInvalid(ctx, undefined, base, { summary: base });
  const event = value as Json & { seq: number; type: string };
  const seq = event.seq;
  if (ctx.expectedSeq !== undefined && seq !== ctx.expectedSeq) {
    throw eventInvalid(ctx, seq, `body seq ${seq} differs from the file name's ${ctx.expectedSeq}`, { expectedSeq: ctx.expectedSeq });
  }
  if (!isKnownEventType(event.type)) return event as RunEvent;
  const checked = knownEventProblem(event.type, value);
  if (checked !== null) throw eventInvalid(ctx, seq, `${event.type}: ${checked}`, { summary: checked });
  // A value JSON.parse just made is the caller's alone: normalised in place, not copied.
  const out: Json = fromJson ? event : { ...event };
  if (event["at"] !== undefined) out["at"] = fieldOf(ctx, seq, event, "at", "at", parseInstant);
  const data = event["data"] as Json | undefined;
  switch (event.type) {
    case "TimerSet": {
      const d: Json = ownData(fromJson, data);
      d["timerId"] = fieldOf(ctx, seq, data, "timerId", "data.timerId", parseTimerId);
      d["fireAt"] = fieldOf(ctx, seq, data, "fireAt", "data.fireAt", parseInstant);
      for (const name of NULLABLE_TIMER_FIELDS) if (d[name] === null) delete d[name];
      if (d["stepId"] !== undefined) d["stepId"] = fieldOf(ctx, seq, data, "stepId", "data.stepId", parseStepId);
      checkSeriesFields(ctx, seq, d, (name, parse) => fieldOf(ctx, seq, data, name, `data.${name}`, parse));
      if (d["cron"] !== undefined) {
        inEvent(ctx, seq, () => validateCron(d["cron"], d["timezone"]), { field: "data.cron" });
      } else if (d["timezone"] !== undefined) {
        fieldOf(ctx, seq, data, "timezone", "data.timezone", (v, f) => parseTimeZone(v, f));
      }
      out["data"] = d;
      break;
    }
    case "TimerFired": {
      const d: Json = ownData(fromJson, data);
      d["timerId"] = fieldOf(ctx, seq, data, "timerId", "data.timerId", parseTimerId);
      if (data?.["scheduledFor"] !== undefined) d["scheduledFor"] = fieldOf(ctx, seq, data, "scheduledFor", "data.scheduledFor", parseInstant);
      if (data?.["firedAt"] !== undefined) d["firedAt"] = fieldOf(ctx, seq, data, "firedAt", "data.firedAt", parseInstant);
      if (data?.["jitteredFor"] !== undefined) d["jitteredFor"] = fieldOf(ctx, seq, data, "jitteredFor", "data.jitteredFor", parseInstant);
      if (data?.["takenUpAt"] !== undefined) d["takenUpAt"] = fieldOf(ctx, seq, data, "takenUpAt", "data.takenUpAt", parseInstant);
      if (data?.["requestId"] !== undefined) d["requestId"] = fieldOf(ctx, seq, data, "requestId", "data.requestId", parseSignalId);
      if ((d["manual"] === true) !== (d["requestId"] !== undefined) || (d["manual"] === true && d["backfill"] === true)) {
        throw eventInvalid(ctx, seq, `TimerFired: manual ${String(d["manual"])}, requestId ${describeValue(d["requestId"])}, backfill ${String(d["backfill"])}; allowed: a manual fire names a requestId (and only it does), and is not a backfill`);
      }
      out["data"] = d;
      break;
    }
    case "TimerSkipped": {
      const first = fieldOf(ctx, seq, data, "firstMissed", "data.firstMissed", parseInstant);
      const last = fieldOf(ctx, seq, data, "lastMissed", "data.lastMissed", parseInstant);
      const count = data?.["count"] as number;
      if (first > last || (count === 1) !== (first === last)) {
        throw eventInvalid(ctx, seq, `TimerSkipped covers ${first}..${last} with count ${count}; allowed: firstMissed <= lastMissed, equal exactly when count is 1`);
      }
      const d: Json = ownData(fromJson, data);
      d["timerId"] = fieldOf(ctx, seq, data, "timerId", "data.timerId", parseTimerId);
      d["firstMissed"] = first;
      d["lastMissed"] = last;
      out["data"] = d;
      break;
    }
    case "TimerCancelled":
    case "SchedulePaused":
    case "ScheduleResumed": {
      const d: Json = ownData(fromJson, data);
      d["timerId"] = fieldOf(ctx, seq, data, "timerId", "data.timerId", parseTimerId);
      out["data"] = d;
      break;
    }
    case "ScheduleEnded": {
      const d: Json = ownData(fromJson, data);
      d["timerId"] = fieldOf(ctx, seq, data, "timerId", "data.timerId", parseTimerId);
      if (data?.["lastTick"] !== undefined) d["lastTick"] = fieldOf(ctx, seq, data, "lastTick", "data.lastTick", parseInstant);
      out["data"] = d;
      break;
    }
    case "SignalReceived":
      fieldOf(ctx, seq, event, "signalName", "signalName", parseSignalName);
      fieldOf(ctx, seq, event, "signalId", "signalId", parseSignalId);
      if (!plainJson) inEvent(ctx, seq, () => assertJsonValue(event["payload"], "payload"));
      break;
    case "SignalConsumed": {
      const d: Json = ownData(fromJson, data);
      d["signalId"] = fieldOf(ctx, seq, data, "signalId", "data.signalId", parseSignalId);
      if (data?.["stepId"] !== undefined) d["stepId"] = fieldOf(ctx, seq, data, "stepId", "data.stepId", parseStepId);
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
  inEvent(opts, normalised.seq, () => assertJsonValue(normalised, "event", MAX_EVENT_DEPTH));
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

/**
 * {@link serializeEvent} for the event a fire commit writes most, a plain `TimerFired`
 * (`{seq, type, at, data: {timerId, scheduledFor, firedAt}}`, keys in that order, nothing else):
 * its fields are checked with their parsers (the one validation of an event the scheduler
 * builds) and the bytes are laid out from a template, without `JSON.stringify`, the shape
 * checks or a copy. The bytes are exactly those serializeEvent writes for the same event.
 *
 * @param event - the event; any other shape returns null (serialise it with serializeEvent).
 * @param opts - maxEventBytes (default 1 MiB) and path (for errors).
 * @returns the bytes, and the event as they hold it (instants normalised), frozen; or null.
 * @throws `id_invalid`, `time_invalid` for a field; `event_invalid` for a bad seq;
 *   `payload_too_large` past the limit (as serializeEvent).
 */
export function serializePlainTimerFired(event: RunEvent, opts: Omit<EventContext, "expectedSeq"> = {}): { bytes: Uint8Array; event: RunEvent } | null {
  if (event.type !== "TimerFired" || event.at === undefined || !hasKeys(event, EVENT_KEYS)) return null;
  return plainTimerFired(event.seq, event.at, (event as { data?: unknown }).data, opts);
}

/**
 * {@link serializePlainTimerFired} of the event `{seq, type, at, data}` given as its four fields
 * (a fire commit's: no event object is made for it first); the same checks, bytes and errors.
 */
export function serializePlainTimerFiredOf(seq: number, type: string, at: string, data: unknown, opts: Omit<EventContext, "expectedSeq"> = {}): { bytes: Uint8Array; event: RunEvent } | null {
  return type === "TimerFired" ? plainTimerFired(seq, at, data, opts) : null;
}

function plainTimerFired(seq: number, atValue: unknown, dataValue: unknown, opts: Omit<EventContext, "expectedSeq">): { bytes: Uint8Array; event: RunEvent } | null {
  const data = dataValue as Json;
  if (typeof data !== "object" || data === null || Array.isArray(data) || !hasKeys(data, DATA_KEYS)) return null;
  if (!Number.isSafeInteger(seq) || seq < 0) throw eventInvalid(opts, undefined, `seq ${describeValue(seq)} is not a non-negative integer`);
  // A fire commit gives every event it lays out the same `at` and `firedAt` (its "now"): each
  // is checked once and its stretch of the template kept as bytes (see TimerFiredBlocks); a
  // value that differs from the last one is checked (and may throw) as before, in the same order.
  let head = lastHead;
  if (head === null || atValue !== head.input) {
    let at: string;
    try {
      at = parseInstant(atValue, "at");
    } catch (error) {
      throw inEventError(opts, seq, error);
    }
    lastHead = head = { input: atValue as string, value: at, bytes: Buffer.from(`,"type":"TimerFired","at":"${at}","data":{"timerId":"`, "latin1") };
  }
  const timerId = fieldOf(opts, seq, data, "timerId", "data.timerId", parseTimerId);
  const scheduledForValue = data.scheduledFor;
  const scheduledFor = scheduledForValue === lastScheduledForInput && lastScheduledFor !== "" ? lastScheduledFor : fieldOf(opts, seq, data, "scheduledFor", "data.scheduledFor", parseInstant);
  lastScheduledForInput = scheduledForValue as string;
  lastScheduledFor = scheduledFor;
  let tail = lastTail;
  if (tail === null || data.firedAt !== tail.input) {
    const firedAt = fieldOf(opts, seq, data, "firedAt", "data.firedAt", parseInstant);
    lastTail = tail = { input: data.firedAt as string, value: firedAt, bytes: Buffer.from(`","firedAt":"${firedAt}"}}`, "latin1") };
  }
  // Ids and stored instants are ASCII that JSON writes as it is: no escapes, one byte a char
  // (parseTimerId's pattern and the stored instant form allow nothing else).
  // `{"seq":${seq},"type":"TimerFired","at":"${at}","data":{"timerId":"${timerId}","scheduledFor":"${scheduledFor}","firedAt":"${firedAt}"}}`,
  // written piece by piece into its buffer: no string of the whole event (its concatenations and
  // their flattening were ~9 MB of a 20,000-fire burst's garbage).
  const seqDigits = decimalDigits(seq);
  const length = TF_SEQ.length + seqDigits + head.bytes.length + timerId.length + TF_SCHEDULED_FOR.length + scheduledFor.length + tail.bytes.length;
  if (length > maxBytes(opts)) {
    throw new WorkflowHostError(
      "payload_too_large",
      `${label(opts)} seq ${seq} serialises to ${length} bytes; allowed: at most ${maxBytes(opts)}`,
      { ...where(opts, seq), sizeBytes: length, maxEventBytes: maxBytes(opts) },
    );
  }
  const bytes = Buffer.allocUnsafe(length);
  // Typed-array copies and a loop per string: each Buffer copy or write is a call into C++.
  bytes.set(TF_SEQ, 0);
  let w = TF_SEQ.length;
  for (let n = seq, i = w + seqDigits - 1; i >= w; i--, n = Math.floor(n / 10)) bytes[i] = 0x30 + (n % 10);
  w += seqDigits;
  bytes.set(head.bytes, w);
  w += head.bytes.length;
  w += writeAsciiChars(timerId, bytes, w);
  bytes.set(TF_SCHEDULED_FOR, w);
  w += TF_SCHEDULED_FOR.length;
  w += writeAsciiChars(scheduledFor, bytes, w);
  bytes.set(tail.bytes, w);
  const normalised = Object.freeze({ seq, type: "TimerFired" as const, at: head.value, data: Object.freeze({ timerId, scheduledFor, firedAt: tail.value }) });
  return { bytes, event: normalised };
}

/**
 * A stretch of the plain TimerFired template around an instant a fire commit shares between
 * its events: the value as given (`input`), as checked (`value`, normalised) and the stretch's bytes.
 */
interface TimerFiredBlock {
  readonly input: string;
  readonly value: string;
  readonly bytes: Uint8Array;
}
/** `,"type":"TimerFired","at":"<at>","data":{"timerId":"` for the last `at` laid out. */
let lastHead: TimerFiredBlock | null = null;
/** `","firedAt":"<firedAt>"}}` for the last `firedAt` laid out. */
let lastTail: TimerFiredBlock | null = null;
/** The last `scheduledFor` laid out, as given and as checked ("" for none yet: no instant is ""). */
let lastScheduledForInput = "";
let lastScheduledFor = "";

/** The fixed pieces of a plain TimerFired's bytes (see serializePlainTimerFired), in order. */
const TF_SEQ = Buffer.from('{"seq":', "latin1");
const TF_SCHEDULED_FOR = Buffer.from('","scheduledFor":"', "latin1");

/** Decimal digits of a non-negative safe integer. */
function decimalDigits(n: number): number {
  let d = 1;
  for (let rest = n; rest >= 10; rest = Math.floor(rest / 10)) d++;
  return d;
}

const EVENT_KEYS = ["seq", "type", "at", "data"] as const;
const DATA_KEYS = ["timerId", "scheduledFor", "firedAt"] as const;

/** Whether `value`'s own enumerable keys are exactly `keys`, in that order. */
function hasKeys(value: object, keys: readonly string[]): boolean {
  let i = 0;
  for (const key in value) {
    if (!Object.prototype.hasOwnProperty.call(value, key)) return false;
    if (keys[i] !== key) return false;
    i += 1;
  }
  return i === keys.length;
}
