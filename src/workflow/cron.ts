/**
 * Cron series over croner (docs/design.md §3). This module never parses a cron field itself: croner
 * compiles the expression and finds every tick; the counting shortcut in `./cron-count.js` reads
 * croner's parsed hour/minute/second tables.
 *
 * DST rule (the Vixie cron rule, as implemented by croner 11 with its default
 * `fixedTimeRule: "single-value"`):
 * - A fixed-time job (a single second, minute and hour, no wildcard, step, list or range, e.g.
 *   `30 2 * * *`) whose local time falls in a spring-forward gap fires once, at the end of the gap,
 *   when that is still the same local day (New York 02:30 on 2026-03-08 fires at 03:00 EDT =
 *   07:00Z). A local time that occurs twice
 *   (fall back) fires once, at its first occurrence.
 * - Every other job is an interval job: it fires at every real instant whose local wall time
 *   matches. So stepped or wildcard hours skip the local times that do not exist (Cairo's
 *   every-two-hours job has no 00:00 on 2026-04-24, when clocks jump from 00:00 to 01:00), and a
 *   repeated local hour fires on both occurrences, keeping an hourly job hourly through the
 *   fall-back day.
 * Day-of-month and day-of-week combine with OR when both are restricted (Vixie); a `+` before
 * the day-of-week field asks croner for AND.
 */
import { Cron, CronPattern } from "croner";
import { WorkflowHostError, describeValue } from "../errors.js";
import { isoFromMs, parseInstant } from "./time.js";
import { DEFAULT_TIME_ZONE, parseTimeZone } from "./time-zone.js";
import { countTicks, cronNextMs, cronPreviousMs, prepareTickCount, type TickTables } from "./cron-count.js";

/** A compiled, validated series: croner in the series' zone plus what counting needs. */
export interface CompiledCron extends TickTables {
  readonly expr: string;
}

// Probing starts at a fixed instant so validation is pure (no clock read). A 5- or 6-field
// pattern has no year field, so its ticks repeat with the 400-year Gregorian cycle, and a
// pattern without a tick after this instant never fires (ticks are found up to year 9999,
// see cronNextMs). The
// probe is cheap for real patterns (the rarest day-of-month pattern, Feb 29, is at most 8 years
// away) and costs a few milliseconds for impossible ones, which are remembered.
const PROBE_FROM = new Date(Date.UTC(2000, 0, 1));

const MAX_EXPR_LENGTH = 256;
const CACHE_LIMIT = 512;
const cache = new Map<string, CompiledCron>();
// Refusals are remembered too: probing a pattern that never fires walks croner to year 9999,
// and a log written elsewhere may repeat the same bad TimerSet in many runs.
const refused = new Map<string, WorkflowHostError>();

function remember<K, V>(map: Map<K, V>, key: K, value: V): void {
  if (map.size >= CACHE_LIMIT) {
    const oldest = map.keys().next();
    if (oldest.done !== true) map.delete(oldest.value);
  }
  map.set(key, value);
}

function cronInvalid(expr: unknown, timezone: unknown, why: string, cause?: unknown): WorkflowHostError {
  return new WorkflowHostError(
    "cron_invalid",
    `cron ${describeValue(expr)} (zone ${describeValue(timezone)}) is not valid: ${why}; allowed: 5 or 6 fields (optional seconds first) with at least one future tick, in a known IANA zone`,
    { field: "cron", value: expr, timezone },
    cause === undefined ? {} : { cause },
  );
}

/**
 * Compiles and caches a series (by expression and zone; the cache keeps the 512 most recently
 * compiled and is safe to share: croner objects built without a callback hold no timers).
 * @throws `cron_invalid` as {@link validateCron}.
 */
export function compileCron(expr: unknown, timezone: unknown = DEFAULT_TIME_ZONE): CompiledCron {
  const key = typeof expr === "string" && typeof timezone === "string" ? `${timezone}\u0000${expr}` : undefined;
  if (key !== undefined) {
    const hit = cache.get(key);
    if (hit !== undefined) {
      cache.delete(key);
      cache.set(key, hit);
      return hit;
    }
    const no = refused.get(key);
    if (no !== undefined) throw new WorkflowHostError(no.code, no.message.slice(no.code.length + 2), { ...no.data }, { cause: no.cause });
  }
  try {
    const compiled = compile(expr, timezone);
    if (key !== undefined) remember(cache, key, compiled);
    return compiled;
  } catch (error) {
    if (key !== undefined && error instanceof WorkflowHostError) remember(refused, key, error);
    throw error;
  }
}

/** The usual cron nicknames and the 5 fields each stands for (named in the refusal of one). */
const CRON_NICKNAMES: ReadonlyMap<string, string> = new Map([
  ["@yearly", "0 0 1 1 *"],
  ["@annually", "0 0 1 1 *"],
  ["@monthly", "0 0 1 * *"],
  ["@weekly", "0 0 * * 0"],
  ["@daily", "0 0 * * *"],
  ["@midnight", "0 0 * * *"],
  ["@hourly", "0 * * * *"],
]);

function compile(expr: unknown, timezone: unknown): CompiledCron {
  if (typeof expr !== "string" || expr.length > MAX_EXPR_LENGTH) throw cronInvalid(expr, timezone, "not a string of at most 256 characters");
  const fields = expr.trim().split(/\s+/).filter((f) => f.length > 0).length;
  const nickname = CRON_NICKNAMES.get(expr.trim().toLowerCase());
  if (nickname !== undefined) throw cronInvalid(expr, timezone, `nicknames are not taken (their meaning varies between schedulers); write its 5 fields: ${nickname}`);
  if (fields !== 5 && fields !== 6) throw cronInvalid(expr, timezone, `${fields} fields`);
  let zone: string;
  try {
    zone = parseTimeZone(timezone, "timezone", "cron_invalid");
  } catch (error) {
    throw cronInvalid(expr, timezone, "unknown time zone", error);
  }
  let cron: Cron;
  let pattern: CronPattern;
  let utc: Cron;
  try {
    cron = new Cron(expr, { timezone: zone, mode: "5-or-6-parts" });
    pattern = new CronPattern(expr, zone, { mode: "5-or-6-parts" });
    utc = new Cron(expr, { utcOffset: 0, mode: "5-or-6-parts" });
  } catch (error) {
    throw cronInvalid(expr, timezone, error instanceof Error ? error.message : String(error), error);
  }
  let probe: Date | null;
  try {
    probe = cron.nextRun(PROBE_FROM);
  } catch (error) {
    throw cronInvalid(expr, timezone, "croner could not evaluate it", error);
  }
  if (probe === null) throw cronInvalid(expr, timezone, "it never fires (no such date)");
  return {
    expr,
    timezone: zone,
    cron,
    utcCron: utc,
    fixedTime: pattern.isFixedTime,
    hours: pattern.hour.map((v) => v !== 0),
    minutes: pattern.minute.map((v) => v !== 0),
    seconds: pattern.second.map((v) => v !== 0),
  };
}

/**
 * Checks a cron series definition, as a `TimerSet` with `cron` must pass before it is written.
 *
 * Rejected (`cron_invalid`): anything but a string of 5 fields (minute hour day-of-month month
 * day-of-week) or 6 (seconds first), so `@daily` nicknames and 7-field year patterns too; a
 * value croner refuses (`61 * * * *`); an unknown zone (`America/New_Yrok`); and a pattern that
 * never fires (`0 0 30 2 *`, `0 0 31 4 *`), found by one croner probe from 2000-01-01T00:00Z.
 *
 * @param expr - the cron expression.
 * @param timezone - IANA zone the expression is read in (default `"UTC"`, never the host's zone).
 * @returns the expression and the zone it resolves to.
 * @throws `cron_invalid` with `data {field, value, timezone}`.
 */
export function validateCron(expr: unknown, timezone: unknown = DEFAULT_TIME_ZONE): { cron: string; timezone: string } {
  const compiled = compileCron(expr, timezone);
  return { cron: compiled.expr, timezone: compiled.timezone };
}

/**
 * The first tick of a series strictly after an instant. Ticks are whole seconds; a fraction
 * in `afterIso` counts (a tick at 10:00:00 is not after 10:00:00.500).
 *
 * The next tick is always computed from the tick that fired (`scheduledFor`), never from "now",
 * so a late wake-up does not shift the series (docs/design.md §3).
 *
 * @param expr - cron expression (5 or 6 fields).
 * @param timezone - IANA zone (default `"UTC"`).
 * @param afterIso - RFC 3339 instant.
 * @returns the tick as a normalised ISO string, or null when the series has no later tick
 *   (only past year 9999).
 * @throws `cron_invalid` for the expression or zone, `time_invalid` for `afterIso`.
 */
export function nextTick(expr: string, timezone: string | undefined, afterIso: string): string | null {
  const compiled = compileCron(expr, timezone ?? DEFAULT_TIME_ZONE);
  const afterMs = Date.parse(parseInstant(afterIso, "after"));
  const next = firstTickAfter(compiled, afterMs);
  return next === null ? null : isoFromMs(next);
}

/** First tick > afterMs (epoch ms), or null. */
export function firstTickAfter(compiled: CompiledCron, afterMs: number): number | null {
  let next = cronNextMs(compiled.cron, afterMs);
  // croner compares whole seconds; guard the strictly-after contract at the millisecond.
  while (next !== null && next <= afterMs) next = cronNextMs(compiled.cron, next);
  return next;
}

/** Last tick ≤ untilMs (epoch ms), or null. */
function lastTickAtOrBefore(compiled: CompiledCron, untilMs: number): number | null {
  // previousRuns is strictly before its reference but includes a run earlier in the same second.
  const [prev] = cronPreviousMs(compiled.cron, 1, untilMs + 1);
  return prev ?? null;
}

/**
 * Does the costly part of {@link ticksBetween}`(…, afterIso, untilIso, …)` ahead, awaiting
 * `pause` between small units of work (see `prepareTickCount`), so the synchronous call that
 * follows with the same series and window finds its count ready. For callers on an event loop:
 * the fire planner is pure and synchronous, its caller prepares.
 * @throws `cron_invalid`, `time_invalid` as {@link ticksBetween}
 */
export async function prepareTicksBetween(
  expr: string,
  timezone: string | undefined,
  afterIso: string,
  untilIso: string,
  pause: () => Promise<void>,
): Promise<void> {
  const compiled = compileCron(expr, timezone ?? DEFAULT_TIME_ZONE);
  const afterMs = Date.parse(parseInstant(afterIso, "after"));
  const untilMs = Date.parse(parseInstant(untilIso, "until"));
  if (untilMs > afterMs) await prepareTickCount(compiled, afterMs, untilMs, pause);
}

/** Ticks of a series in a window, as {@link ticksBetween} returns them. */
export interface TickSpan {
  /** How many ticks lie in the window (exact). */
  readonly count: number;
  /** The earliest tick in the window, or null when there is none. */
  readonly first: string | null;
  /** The latest tick in the window, or null when there is none. */
  readonly last: string | null;
  /** At most `limit` ticks, ascending: the earliest ones (`take: "first"`) or the latest. */
  readonly ticks: readonly string[];
}

/**
 * Ticks of a series in `(afterIso, untilIso]`: what a host that was down (or whose clock jumped)
 * missed. Used for the misfire policies: `skip` needs count, first and last; `latest` needs
 * last; `all` needs the ticks themselves, at most `maxCatchUp`.
 *
 * Cost is bounded by the window's months and the zone's offset changes in it, never by its
 * ticks or days (see `./cron-count.js`): at most `limit` ticks are materialised, and the rest
 * are counted from croner's tables per month shape. A `* * * * * *` series missed since year
 * 0000, or a daily one armed in year 0001, is counted exactly in about a millisecond once the
 * zone's tables are warm. Long windows should be prepared with {@link prepareTicksBetween} by a
 * caller on an event loop.
 *
 * @param expr - cron expression (5 or 6 fields).
 * @param timezone - IANA zone (default `"UTC"`).
 * @param afterIso - exclusive start (RFC 3339), usually the last tick that fired.
 * @param untilIso - inclusive end (RFC 3339), usually "now" as read from the injected clock.
 * @param limit - most ticks to return in `ticks`; a non-negative integer.
 * @param take - `"first"` (default) returns the earliest `limit` ticks, `"last"` the latest.
 * @returns count, first, last and ticks; an empty span when `untilIso` ≤ `afterIso`.
 * @throws `cron_invalid`, `time_invalid`; a `RangeError` for a negative or fractional `limit`.
 */
export function ticksBetween(
  expr: string,
  timezone: string | undefined,
  afterIso: string,
  untilIso: string,
  limit: number,
  take: "first" | "last" = "first",
): TickSpan {
  if (!Number.isSafeInteger(limit) || limit < 0) throw new RangeError(`limit must be a non-negative integer, got ${String(limit)}`);
  const compiled = compileCron(expr, timezone ?? DEFAULT_TIME_ZONE);
  const afterMs = Date.parse(parseInstant(afterIso, "after"));
  const untilMs = Date.parse(parseInstant(untilIso, "until"));
  const empty: TickSpan = { count: 0, first: null, last: null, ticks: [] };
  if (untilMs <= afterMs) return empty;
  const firstMs = firstTickAfter(compiled, afterMs);
  if (firstMs === null || firstMs > untilMs) return empty;

  const ticks: number[] = [];
  if (take === "first") {
    let cursor: number | null = firstMs;
    while (cursor !== null && cursor <= untilMs && ticks.length < limit) {
      ticks.push(cursor);
      cursor = firstTickAfter(compiled, cursor);
    }
    if (cursor === null || cursor > untilMs) {
      return spanOf(ticks.length, firstMs, ticks.at(-1) ?? firstMs, ticks);
    }
    const lastMs = lastTickAtOrBefore(compiled, untilMs) ?? firstMs;
    const restFrom = ticks.at(-1) ?? afterMs;
    return spanOf(ticks.length + countTicks(compiled, restFrom, untilMs), firstMs, lastMs, ticks);
  }

  const lastMs = lastTickAtOrBefore(compiled, untilMs) ?? firstMs;
  if (limit > 0) {
    for (const t of cronPreviousMs(compiled.cron, limit, untilMs + 1)) {
      if (t <= afterMs) break;
      ticks.push(t);
    }
    ticks.reverse();
    if (ticks.length < limit) return spanOf(ticks.length, firstMs, lastMs, ticks);
  }
  return spanOf(countTicks(compiled, afterMs, untilMs), firstMs, lastMs, ticks);
}

function spanOf(count: number, firstMs: number, lastMs: number, ticks: readonly number[]): TickSpan {
  return { count, first: isoFromMs(firstMs), last: isoFromMs(lastMs), ticks: ticks.map((t) => isoFromMs(t)) };
}
