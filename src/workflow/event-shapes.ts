/**
 * The structural checks of the run log's events, written out by hand: the same rules as the
 * arktype schemas in `./event-schemas.js` (a property test keeps the two equivalent), without
 * loading arktype. Building arktype's keyword scopes costs 130–200 ms at import, more than a
 * read-only CLI command (`timers`, `runs`, `check`) may spend starting up, and a recovery checks
 * a million events with them; these checks are plain property tests.
 *
 * Like the schemas they check shape and primitive types only (ids, instants and cron expressions
 * are checked afterwards by their own parsers, see `./events.js`), and undeclared keys are kept.
 */
import type { TerminalEventType } from "./types.js";

/** The event types that end a run; nothing may follow them (docs/design.md §3). */
export const TERMINAL_EVENT_TYPES: ReadonlySet<string> = new Set<TerminalEventType>(["RunCompleted", "RunFailed", "RunCancelled"]);

/** True for `RunCompleted`, `RunFailed` and `RunCancelled`. */
export function isTerminalEventType(type: string): type is TerminalEventType {
  return TERMINAL_EVENT_TYPES.has(type);
}

/** The event types the log model interprets; any other type is passed through after the base check. */
export const KNOWN_EVENT_TYPES = [
  "TimerSet",
  "TimerFired",
  "TimerSkipped",
  "TimerCancelled",
  "SchedulePaused",
  "ScheduleResumed",
  "ScheduleEnded",
  "SignalReceived",
  "SignalConsumed",
  "RunCompleted",
  "RunFailed",
  "RunCancelled",
] as const;

export type KnownEventType = (typeof KNOWN_EVENT_TYPES)[number];

const KNOWN: ReadonlySet<string> = new Set(KNOWN_EVENT_TYPES);

/** True when the log model interprets events of this type. */
export function isKnownEventType(type: string): type is KnownEventType {
  return KNOWN.has(type);
}

type Obj = Record<string, unknown>;

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "string") return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  return typeof value === "object" ? "an object" : typeof value;
}

/** `path must be <expected> (was <value>)`, the form of arktype's summaries. */
function must(path: string, expected: string, value: unknown): string {
  return `${path} must be ${expected} (was ${describe(value)})`;
}

const has = (o: object, key: string): boolean => Object.prototype.hasOwnProperty.call(o, key);

function isObject(value: unknown): value is Obj {
  return typeof value === "object" && value !== null;
}

function isSafeIntegerIn(value: unknown, min: number): boolean {
  return typeof value === "number" && Number.isInteger(value) && value >= min && value <= Number.MAX_SAFE_INTEGER;
}

/** Problems found so far; allocated only when there is one. */
type Problems = string[] | null;

function add(problems: Problems, problem: string): string[] {
  if (problems === null) return [problem];
  problems.push(problem);
  return problems;
}

/** A required string key. */
function str(p: Problems, o: Obj, key: string, path: string): Problems {
  if (!has(o, key)) return add(p, `${path}${key} must be a string (was missing)`);
  return typeof o[key] === "string" ? p : add(p, must(`${path}${key}`, "a string", o[key]));
}

/** An optional key holding a string (or also null, with `orNull`). */
function optStr(p: Problems, o: Obj, key: string, path: string, orNull = false): Problems {
  if (!has(o, key)) return p;
  const v = o[key];
  return typeof v === "string" || (orNull && v === null) ? p : add(p, must(`${path}${key}`, orNull ? "a string or null" : "a string", v));
}

/** `seq: number`, `type` equal to one of `types`, and (unless `atRequired` is null) an `at` string. */
function optBool(p: Problems, o: Obj, key: string): Problems {
  if (!has(o, key)) return p;
  return typeof o[key] === "boolean" ? p : add(p, must(`data.${key}`, "a boolean", o[key]));
}

/** An optional integer in min … max (arktype's `min <= number.integer <= max`). */
function optInt(p: Problems, o: Obj, key: string, min: number, max: number): Problems {
  if (!has(o, key)) return p;
  const v = o[key];
  return typeof v === "number" && Number.isInteger(v) && v >= min && v <= max ? p : add(p, must(`data.${key}`, `an integer in ${min} … ${max}`, v));
}

function envelope(value: Obj, types: readonly string[], at: "optional" | "required"): Problems {
  let p: Problems = null;
  // arktype's `number` excludes NaN.
  if (!has(value, "seq") || typeof value["seq"] !== "number" || Number.isNaN(value["seq"])) p = add(p, must("seq", "a number", value["seq"]));
  if (!has(value, "type") || !types.includes(value["type"] as string)) p = add(p, must("type", types.map((t) => JSON.stringify(t)).join(" or "), value["type"]));
  return at === "required" ? str(p, value, "at", "") : optStr(p, value, "at", "");
}

/** The `data` object of an event, or the problem when it is missing or not an object. */
function dataOf(event: Obj): Obj | string {
  if (!has(event, "data")) return "data must be an object (was missing)";
  const data = event["data"];
  return isObject(data) ? data : must("data", "an object", data);
}

function done(p: Problems): string | null {
  return p === null ? null : p.join("\n");
}

/**
 * Checks every event's envelope: a non-negative safe-integer `seq` and a non-empty string `type`.
 * @returns null when the value passes, else a summary of what is wrong (one line per problem)
 */
export function eventBaseProblem(value: unknown): string | null {
  if (!isObject(value)) return must("value", "an object", value);
  let p: Problems = null;
  if (!has(value, "seq")) p = add(p, "seq must be a number (was missing)");
  else if (!isSafeIntegerIn(value["seq"], 0)) p = add(p, must("seq", "an integer in 0 … 9007199254740991", value["seq"]));
  if (!has(value, "type")) p = add(p, "type must be a string (was missing)");
  else if (typeof value["type"] !== "string" || value["type"].length === 0) p = add(p, must("type", "a non-empty string", value["type"]));
  return done(p);
}

const TERMINAL_TYPES = ["RunCompleted", "RunFailed", "RunCancelled"] as const;
const MISFIRES: ReadonlySet<unknown> = new Set([null, "skip", "latest", "all"]);

function timerSet(v: Obj): string | null {
  let p = envelope(v, ["TimerSet"], "optional");
  const d = dataOf(v);
  if (typeof d === "string") return done(add(p, d));
  p = str(p, d, "timerId", "data.");
  p = str(p, d, "fireAt", "data.");
  p = optStr(p, d, "stepId", "data.", true);
  p = optStr(p, d, "cron", "data.", true);
  p = optStr(p, d, "timezone", "data.", true);
  if (has(d, "misfire") && !MISFIRES.has(d["misfire"])) p = add(p, must("data.misfire", '"skip", "latest", "all" or null', d["misfire"]));
  p = optStr(p, d, "startAt", "data.");
  p = optStr(p, d, "endAt", "data.");
  p = optInt(p, d, "maxTicks", 1, 1_000_000);
  p = optInt(p, d, "slot", 1, Number.MAX_SAFE_INTEGER);
  p = optInt(p, d, "jitterMs", 0, 86_400_000);
  p = optStr(p, d, "owner", "data.");
  return done(p);
}

function timerFired(v: Obj): string | null {
  let p = envelope(v, ["TimerFired"], "optional");
  const d = dataOf(v);
  if (typeof d === "string") return done(add(p, d));
  p = str(p, d, "timerId", "data.");
  p = optStr(p, d, "scheduledFor", "data.");
  p = optStr(p, d, "firedAt", "data.");
  p = optBool(p, d, "manual");
  p = optStr(p, d, "requestId", "data.");
  p = optBool(p, d, "backfill");
  p = optStr(p, d, "jitteredFor", "data.");
  p = optStr(p, d, "takenUpAt", "data.");
  return done(p);
}

function timerSkipped(v: Obj): string | null {
  let p = envelope(v, ["TimerSkipped"], "optional");
  const d = dataOf(v);
  if (typeof d === "string") return done(add(p, d));
  p = str(p, d, "timerId", "data.");
  p = str(p, d, "firstMissed", "data.");
  p = str(p, d, "lastMissed", "data.");
  if (!has(d, "count") || !isSafeIntegerIn(d["count"], 1)) p = add(p, must("data.count", "an integer in 1 … 9007199254740991", d["count"]));
  if (!has(d, "reason") || (d["reason"] !== "missed" && d["reason"] !== "paused")) p = add(p, must("data.reason", '"missed" or "paused"', d["reason"]));
  return done(p);
}

function timerCancelled(v: Obj): string | null {
  let p = envelope(v, ["TimerCancelled"], "optional");
  const d = dataOf(v);
  if (typeof d === "string") return done(add(p, d));
  p = str(p, d, "timerId", "data.");
  p = optStr(p, d, "reason", "data.");
  return done(p);
}

function schedulePaused(v: Obj): string | null {
  let p = envelope(v, ["SchedulePaused"], "optional");
  const d = dataOf(v);
  if (typeof d === "string") return done(add(p, d));
  p = str(p, d, "timerId", "data.");
  p = optStr(p, d, "reason", "data.");
  return done(p);
}

function scheduleResumed(v: Obj): string | null {
  let p = envelope(v, ["ScheduleResumed"], "optional");
  const d = dataOf(v);
  if (typeof d === "string") return done(add(p, d));
  p = str(p, d, "timerId", "data.");
  p = optBool(p, d, "catchUp");
  return done(p);
}

const END_REASONS: ReadonlySet<unknown> = new Set(["endAt", "maxTicks"]);

function scheduleEnded(v: Obj): string | null {
  let p = envelope(v, ["ScheduleEnded"], "optional");
  const d = dataOf(v);
  if (typeof d === "string") return done(add(p, d));
  p = str(p, d, "timerId", "data.");
  if (!has(d, "reason") || !END_REASONS.has(d["reason"])) p = add(p, must("data.reason", '"endAt" or "maxTicks"', d["reason"]));
  p = optStr(p, d, "lastTick", "data.");
  return done(p);
}

function signalReceived(v: Obj): string | null {
  let p = envelope(v, ["SignalReceived"], "required");
  p = str(p, v, "signalName", "");
  p = str(p, v, "signalId", "");
  if (!has(v, "payload")) p = add(p, "payload must be present (was missing)");
  return done(p);
}

function signalConsumed(v: Obj): string | null {
  let p = envelope(v, ["SignalConsumed"], "optional");
  const d = dataOf(v);
  if (typeof d === "string") return done(add(p, d));
  p = str(p, d, "signalId", "data.");
  p = optStr(p, d, "stepId", "data.");
  return done(p);
}

function terminal(v: Obj): string | null {
  return done(envelope(v, TERMINAL_TYPES, "optional"));
}

const SHAPES: Readonly<Record<KnownEventType, (value: Obj) => string | null>> = {
  TimerSet: timerSet,
  TimerFired: timerFired,
  TimerSkipped: timerSkipped,
  TimerCancelled: timerCancelled,
  SchedulePaused: schedulePaused,
  ScheduleResumed: scheduleResumed,
  ScheduleEnded: scheduleEnded,
  SignalReceived: signalReceived,
  SignalConsumed: signalConsumed,
  RunCompleted: terminal,
  RunFailed: terminal,
  RunCancelled: terminal,
};

/**
 * Checks a value against the shape of the known event type `type` (the schema
 * `knownEventSchemas[type]` in `./event-schemas.js` states the same rules).
 * @returns null when the value passes, else a summary of what is wrong (one line per problem)
 */
export function knownEventProblem(type: KnownEventType, value: unknown): string | null {
  if (!isObject(value)) return must("value", "an object", value);
  return SHAPES[type](value);
}
