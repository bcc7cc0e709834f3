/**
 * IANA time zones, read through `Intl` (the tz database shipped with the runtime). Cron series
 * name their zone explicitly; the process zone (`TZ`) is never consulted.
 */
import { WorkflowHostError, describeValue, type ErrorCode } from "../errors.js";

/** The zone of a cron series that names none (docs/design.md §3): UTC, never the host's zone. */
export const DEFAULT_TIME_ZONE = "UTC";

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatterFor(zone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(zone);
  if (formatter === undefined) {
    formatter = new Intl.DateTimeFormat("en-US", {
      timeZone: zone,
      hourCycle: "h23",
      year: "numeric",
      month: "numeric",
      day: "numeric",
      hour: "numeric",
      minute: "numeric",
      second: "numeric",
    });
    formatters.set(zone, formatter);
  }
  return formatter;
}

const OFFSET_NAME = /GMT(?:([+-])(\d{2}):(\d{2})(?::(\d{2}))?)?$/;
const offsetFormatters = new Map<string, Intl.DateTimeFormat>();

function offsetFormatterFor(zone: string): Intl.DateTimeFormat {
  let formatter = offsetFormatters.get(zone);
  if (formatter === undefined) {
    formatter = new Intl.DateTimeFormat("en-US", { timeZone: zone, timeZoneName: "longOffset" });
    offsetFormatters.set(zone, formatter);
  }
  return formatter;
}

/**
 * Checks an IANA time zone name (e.g. `Europe/Rome`, `UTC`) against the runtime's tz database.
 * Offsets such as `+02:00` are refused even where `Intl` accepts them, so a log reads the same
 * on every Node version.
 * @param value - anything; only a known zone name passes.
 * @param field - name used in the error (default `"timezone"`).
 * @param code - error code to throw (default `time_invalid`; cron validation passes `cron_invalid`).
 * @returns the same string.
 * @throws `code` with `data {field, value}`.
 */
export function parseTimeZone(value: unknown, field = "timezone", code: ErrorCode = "time_invalid"): string {
  if (typeof value === "string" && value.length > 0 && value.length <= 64 && /^[A-Za-z]/.test(value)) {
    try {
      formatterFor(value);
      return value;
    } catch {
      // fall through to the error below
    }
  }
  throw new WorkflowHostError(code, `${field} ${describeValue(value)} is not a known IANA time zone; allowed: a tz database name such as "UTC" or "Europe/Rome"`, {
    field,
    value,
  });
}

/**
 * The zone's UTC offset at an instant, in whole seconds (wall clock minus UTC).
 * @param zone - a zone that passed {@link parseTimeZone}.
 * @param epochSec - seconds since the epoch.
 */
export function zoneOffsetSec(zone: string, epochSec: number): number {
  // Before 1800 every zone keeps its earliest offset (see FIRST_CHANGE_YEAR), which also keeps
  // years 0000–0099 and their era away from the formatter.
  const at = new Date(Math.max(epochSec, EARLIEST_SEC) * 1000);
  // "…, GMT-04:56:02": one short string, a third of the cost of the parts below (and far less
  // garbage), which matters when a zone's transitions are first looked up.
  const named = OFFSET_NAME.exec(offsetFormatterFor(zone).format(at));
  if (named !== null) {
    if (named[1] === undefined) return 0;
    const sec = Number(named[2]) * 3600 + Number(named[3]) * 60 + Number(named[4] ?? 0);
    return named[1] === "-" ? -sec : sec;
  }
  const parts = formatterFor(zone).formatToParts(at);
  const get = (type: Intl.DateTimeFormatPartTypes): number => Number(parts.find((p) => p.type === type)?.value);
  const wall = new Date(0);
  wall.setUTCFullYear(get("year"), get("month") - 1, get("day"));
  wall.setUTCHours(get("hour"), get("minute"), get("second"), 0);
  return Math.round(wall.getTime() / 1000) - epochSec;
}

/** A stretch of time during which a zone's offset does not change. */
export interface OffsetStretch {
  /** First second of the stretch (epoch seconds, inclusive). */
  readonly fromSec: number;
  /** Last second of the stretch (epoch seconds, inclusive). */
  readonly toSec: number;
  /** Offset during the stretch (seconds, wall clock minus UTC). */
  readonly offsetSec: number;
}

const FIXED_ZONES = new Set(["UTC", "Etc/UTC"]);

/** An offset change: `atSec` is the first second (epoch) with `offsetSec`. */
interface Transition {
  readonly atSec: number;
  readonly offsetSec: number;
}

// The tz database records no offset change before 1800 (local mean time until the first one),
// so everything earlier is one stretch with the zone's earliest offset.
const FIRST_CHANGE_YEAR = 1800;
// Beyond the tz database's explicit table (2037) a zone follows its last rule, which repeats
// with the 400-year Gregorian cycle (146 097 days, a whole number of weeks). Years from 2800 on
// reuse the transitions of the year 400·k earlier, shifted by k cycles.
const CYCLE_YEARS = 400;
const CYCLE_SEC = 146_097 * 86_400;
const REUSE_FROM_YEAR = 2_800;
const PROBE_SEC = 7 * 86_400;
const EARLIEST_SEC = yearStartSec(FIRST_CHANGE_YEAR);
const transitionCache = new Map<string, Map<number, readonly Transition[]>>();

/** Epoch seconds of January 1st, 00:00 UTC, of `year` (proleptic Gregorian). */
function yearStartSec(year: number): number {
  const d = new Date(0);
  d.setUTCFullYear(year, 0, 1);
  return Math.floor(d.getTime() / 1000);
}

function yearOfSec(sec: number): number {
  return new Date(sec * 1000).getUTCFullYear();
}

/**
 * Offset changes with `atSec` in (January 1st of `year`, January 1st of `year + 1`], from one
 * offset lookup a week plus a binary search (~20 lookups) per change, remembered per zone and
 * year. Two changes less than a week apart that cancel out would be missed; the tz database has
 * none since 1800.
 */
function transitionsInYear(zone: string, year: number): readonly Transition[] {
  if (year < FIRST_CHANGE_YEAR) return [];
  let byYear = transitionCache.get(zone);
  if (byYear === undefined) {
    byYear = new Map();
    transitionCache.set(zone, byYear);
  }
  const hit = byYear.get(year);
  if (hit !== undefined) return hit;
  let found: Transition[];
  if (year >= REUSE_FROM_YEAR) {
    const cycles = Math.floor((year - (REUSE_FROM_YEAR - CYCLE_YEARS)) / CYCLE_YEARS);
    found = transitionsInYear(zone, year - cycles * CYCLE_YEARS).map((t) => ({ atSec: t.atSec + cycles * CYCLE_SEC, offsetSec: t.offsetSec }));
  } else {
    found = [];
    const end = yearStartSec(year + 1);
    let probe = yearStartSec(year);
    let offset = zoneOffsetSec(zone, probe);
    while (probe < end) {
      const next = Math.min(probe + PROBE_SEC, end);
      const nextOffset = zoneOffsetSec(zone, next);
      if (nextOffset !== offset) {
        // The first second in (probe, next] whose offset is not `offset`; more than one change
        // inside a week is found by probing on from there.
        let same = probe;
        let changed = next;
        while (changed - same > 1) {
          const mid = Math.floor((same + changed) / 2);
          if (zoneOffsetSec(zone, mid) === offset) same = mid;
          else changed = mid;
        }
        offset = zoneOffsetSec(zone, changed);
        found.push({ atSec: changed, offsetSec: offset });
        probe = changed;
        continue;
      }
      probe = next;
    }
  }
  if (byYear.size >= 4_096) byYear.clear();
  byYear.set(year, found);
  return found;
}

/**
 * Fills the transition cache {@link offsetStretches} reads for `[fromSec, toSec]`, one year at
 * a time, calling `pause` between years so a long window never holds the event loop (a zone's
 * first use costs about 0.3 ms of offset lookups per year since 1800; later uses are free).
 */
export async function prepareOffsetStretches(zone: string, fromSec: number, toSec: number, pause: () => Promise<void>): Promise<void> {
  if (FIXED_ZONES.has(zone) || toSec < fromSec) return;
  const last = yearOfSec(toSec);
  for (let year = Math.max(yearOfSec(fromSec) - 1, FIRST_CHANGE_YEAR); year <= last; year++) {
    transitionsInYear(zone, year);
    await pause();
  }
}

/**
 * Splits `[fromSec, toSec]` at the zone's offset changes.
 *
 * Cost: O(years of the range after 1800 + changes), from a per-zone, per-year cache of
 * transitions (see {@link transitionsInYear}; {@link prepareOffsetStretches} fills it without
 * blocking). The range before 1800 is one stretch.
 */
export function offsetStretches(zone: string, fromSec: number, toSec: number): OffsetStretch[] {
  if (FIXED_ZONES.has(zone)) return [{ fromSec, toSec, offsetSec: 0 }];
  const stretches: OffsetStretch[] = [];
  let start = fromSec;
  let offset = zoneOffsetSec(zone, fromSec);
  const last = yearOfSec(toSec);
  for (let year = Math.max(yearOfSec(fromSec) - 1, FIRST_CHANGE_YEAR); year <= last; year++) {
    for (const t of transitionsInYear(zone, year)) {
      if (t.atSec <= fromSec || t.atSec > toSec || t.offsetSec === offset) continue;
      stretches.push({ fromSec: start, toSec: t.atSec - 1, offsetSec: offset });
      start = t.atSec;
      offset = t.offsetSec;
    }
  }
  stretches.push({ fromSec: start, toSec, offsetSec: offset });
  return stretches;
}
