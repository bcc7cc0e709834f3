/**
 * Pure parts of dispatch: the idempotency key of an event, backoff delays, consumer option
 * checks and the consumer ref's name. No I/O, no clock.
 */
import { WorkflowHostError, describeValue } from "../../src/errors.js";
import { isSignalReceived, isTimerFired, isTimerSkipped } from "../../src/workflow/event-guards.js";
import { parseRepoId, parseRunId } from "../../src/workflow/ids.js";
import type { RunEvent } from "../../src/workflow/types.js";
import { DISPATCH_EVENT_TYPES, type BackoffPolicy, type ConsumerOptions, type DispatchEventType } from "./dispatch-types.js";

/** Consumer names: one ref component git accepts, no dots (so never `.lock` or `..`). */
export const CONSUMER_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$/;

/** The ref of a consumer's progress inside each deployment repo. */
export function consumerRef(name: string): string {
  return `refs/consumers/${parseConsumerName(name)}`;
}

/** @throws id_invalid naming the field "consumer" */
export function parseConsumerName(value: unknown): string {
  if (typeof value === "string" && CONSUMER_NAME_PATTERN.test(value)) return value;
  throw new WorkflowHostError("id_invalid", `consumer ${typeof value === "string" ? describeValue(value) : String(value)} is not valid; allowed: 1-100 characters of A-Z a-z 0-9 _ -, starting with a letter or digit`, { field: "consumer", value });
}

/** A run's event within one deployment: `<runId>/<seq>`, unique because logs are append-only. */
export function eventId(runId: string, seq: number): string {
  return `${runId}/${seq}`;
}

/**
 * The stable key a handler uses to make its effect once:
 * - TimerFired: `<repoId>/<runId>/<timerId>/<scheduledFor>` (a log of the original system
 *   without `scheduledFor`: `<repoId>/<runId>/<timerId>/seq-<seq>`);
 * - TimerSkipped: `<repoId>/<runId>/<timerId>/skipped/<firstMissed>`;
 * - SignalReceived: `<repoId>/<runId>/signal/<signalId>` (signal ids are unique per run);
 * - RunCompleted / RunFailed / RunCancelled: `<repoId>/<runId>/<type>` (one per run).
 * The same event gets the same key in every attempt, every restart and every consumer.
 */
export function idempotencyKey(repoId: string, runId: string, seq: number, event: RunEvent): string {
  if (isTimerFired(event)) return `${repoId}/${runId}/${event.data.timerId}/${event.data.scheduledFor ?? `seq-${seq}`}`;
  if (isTimerSkipped(event)) return `${repoId}/${runId}/${event.data.timerId}/skipped/${event.data.firstMissed}`;
  if (isSignalReceived(event)) return `${repoId}/${runId}/signal/${event.signalId}`;
  return `${repoId}/${runId}/${event.type}`;
}

/**
 * Delay before the attempt after `failedAttempt` (1-based) failed, in ms.
 * @param random a number in [0, 1) for the jitter
 */
export function backoffDelayMs(policy: BackoffPolicy, failedAttempt: number, random: () => number): number {
  if (Array.isArray(policy)) {
    const list = policy as readonly number[];
    return list[Math.min(failedAttempt - 1, list.length - 1)] ?? 0;
  }
  const p = policy as Exclude<BackoffPolicy, readonly number[]>;
  const base = p.baseMs ?? 1_000;
  const max = p.maxMs ?? 60_000;
  const computed = Math.min(max, base * (p.factor ?? 2) ** (failedAttempt - 1));
  return p.jitter === "none" ? computed : Math.floor(random() * computed);
}

/**
 * Default of {@link ConsumerOptions.maxUnrecorded}: 1 000, or 4 × concurrency if more. About a
 * second of events at 1 000 fires/s: a checkpoint commit slowed by a busy disk or event loop
 * then does not hold deliveries back (at 64, one of ~70 ms did, and lag grew with every one).
 */
export function defaultMaxUnrecorded(concurrency: number): number {
  return Math.max(1_000, 4 * concurrency);
}

export interface CheckedConsumer {
  readonly name: string;
  readonly types: ReadonlySet<DispatchEventType>;
  readonly repoIds: ReadonlySet<string> | null;
  readonly runIds: ReadonlySet<string> | null;
  readonly concurrency: number;
  readonly maxAttempts: number;
  readonly backoff: BackoffPolicy;
  readonly timeoutMs: number;
  readonly maxUnrecorded: number;
  readonly startFrom: "genesis" | "head";
}

/** The fields a consumer's `filter` takes. */
const FILTER_FIELDS: readonly string[] = ["types", "repoIds", "runIds"];
/** The fields of an exponential backoff. */
const BACKOFF_FIELDS: readonly string[] = ["type", "baseMs", "maxMs", "factor", "jitter"];

function bad(field: string, value: unknown, allowed: string): WorkflowHostError {
  return new WorkflowHostError("config_invalid", `consumer option ${field} ${describeValue(value)} is not valid; allowed: ${allowed}`, { field, value });
}

function intIn(field: string, value: unknown, min: number, max: number, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) throw bad(field, value, `an integer ${min} … ${max}`);
  return value;
}

/** `value` with anything between `//` and `@` hidden, for messages: a URL's user and password never leave it. */
function withoutUserinfo(value: unknown): unknown {
  return typeof value === "string" ? value.replace(/\/\/[^/?#]*@/, "//***@") : value;
}

/**
 * Checks a consumer's options and fills in defaults (see {@link ConsumerOptions}).
 * @throws id_invalid (name, a repoId or runId in the filter), config_invalid (anything else)
 */
export function checkConsumer(opts: ConsumerOptions, needsTarget = true): CheckedConsumer {
  const name = parseConsumerName(opts.name);
  if (needsTarget && (opts.handler === undefined) === (opts.http === undefined)) throw bad("handler/http", "both or neither", "exactly one of handler and http");
  if (opts.handler !== undefined && typeof opts.handler !== "function") throw bad("handler", opts.handler, "a function");
  if (opts.http !== undefined) {
    let url: URL;
    const shown = withoutUserinfo(opts.http.url);
    try {
      url = new URL(opts.http.url);
    } catch {
      throw bad("http.url", shown, "an absolute http: or https: URL");
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") throw bad("http.url", shown, "an absolute http: or https: URL");
    // Credentials in the URL would be repeated wherever the URL is (delivery errors, logs,
    // status): refused; the receiver authenticates the host by the signature header instead.
    if (url.username !== "" || url.password !== "") throw bad("http.url", shown, "a URL without user or password (the receiver checks X-Workflow-Host-Signature)");
    if (typeof opts.http.secret !== "string" || opts.http.secret.length < 16) throw bad("http.secret", "(hidden)", "a string of at least 16 characters");
  }
  // A misspelt filter field (`type` for `types`) would hand the consumer every event of every
  // deployment without a word: refused, as the consumers file refuses a misspelt option.
  const filter: unknown = opts.filter;
  if (filter !== undefined && filter !== null) {
    if (typeof filter !== "object" || Array.isArray(filter)) throw bad("filter", filter, "an object {types?, repoIds?, runIds?}");
    const unknown = Object.keys(filter).find((key) => !FILTER_FIELDS.includes(key));
    if (unknown !== undefined) throw bad(`filter.${unknown}`, (filter as Record<string, unknown>)[unknown], `no such field; the filter takes ${FILTER_FIELDS.join(", ")}`);
    for (const field of ["repoIds", "runIds"] as const) {
      const ids = (filter as Record<string, unknown>)[field];
      if (ids !== undefined && !Array.isArray(ids)) throw bad(`filter.${field}`, ids, "a list of ids");
    }
  }
  const types = opts.filter?.types ?? DISPATCH_EVENT_TYPES;
  if (!Array.isArray(types) || types.length === 0 || types.some((t) => !DISPATCH_EVENT_TYPES.includes(t))) throw bad("filter.types", types, DISPATCH_EVENT_TYPES.join(", "));
  const repoIds = opts.filter?.repoIds === undefined ? null : new Set(opts.filter.repoIds.map((id) => parseRepoId(id, "filter.repoIds")));
  const runIds = opts.filter?.runIds === undefined ? null : new Set(opts.filter.runIds.map((id) => parseRunId(id, "filter.runIds")));
  const backoff = opts.backoff ?? { type: "exponential" };
  if (Array.isArray(backoff)) {
    const list = backoff as readonly unknown[];
    if (list.length === 0 || list.some((ms) => typeof ms !== "number" || !Number.isInteger(ms) || ms < 0 || ms > 86_400_000)) throw bad("backoff", backoff, "a non-empty list of integer ms 0 … 86 400 000");
  } else {
    const p = backoff as Exclude<BackoffPolicy, readonly number[]>;
    if (typeof p !== "object" || p === null) throw bad("backoff", p, `{type: "exponential", baseMs?, maxMs?, factor?, jitter?} or a list of ms`);
    if (p.type !== "exponential") throw bad("backoff.type", p.type, `"exponential" or a list of ms`);
    const unknownKey = Object.keys(p).find((key) => !BACKOFF_FIELDS.includes(key));
    if (unknownKey !== undefined) throw bad(`backoff.${unknownKey}`, (p as unknown as Record<string, unknown>)[unknownKey], `no such field; an exponential backoff takes ${BACKOFF_FIELDS.join(", ")}`);
    intIn("backoff.baseMs", p.baseMs, 0, 86_400_000, 0);
    intIn("backoff.maxMs", p.maxMs, 0, 86_400_000, 0);
    if (p.factor !== undefined && (typeof p.factor !== "number" || !(p.factor >= 1) || p.factor > 100)) throw bad("backoff.factor", p.factor, "a number 1 … 100");
    if (p.jitter !== undefined && p.jitter !== "full" && p.jitter !== "none") throw bad("backoff.jitter", p.jitter, `"full" or "none"`);
  }
  const startFrom = opts.startFrom ?? "genesis";
  if (startFrom !== "genesis" && startFrom !== "head") throw bad("startFrom", startFrom, `"genesis" or "head"`);
  const concurrency = intIn("concurrency", opts.concurrency, 1, 1_000, 8);
  return {
    name,
    types: new Set(types),
    repoIds,
    runIds,
    concurrency,
    maxAttempts: intIn("maxAttempts", opts.maxAttempts, 1, 1_000, 5),
    backoff,
    timeoutMs: intIn("timeoutMs", opts.timeoutMs, 1, 3_600_000, 30_000),
    maxUnrecorded: intIn("maxUnrecorded", opts.maxUnrecorded, 1, 1_000_000, defaultMaxUnrecorded(concurrency)),
    startFrom,
  };
}
