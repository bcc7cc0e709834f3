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
  const parts = formatterFor(zone).formatToParts(new Date(epochSec * 1000));
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

/**
 * Splits `[fromSec, toSec]` at the zone's offset changes.
 *
 * Cost: one offset lookup per day of the range, plus a binary search (~17 lookups) per change.
 * The range is sampled once a day, so two changes less than a day apart that cancel out would be
 * missed; the tz database has none in current rules.
 */
export function offsetStretches(zone: string, fromSec: number, toSec: number): OffsetStretch[] {
  if (FIXED_ZONES.has(zone)) return [{ fromSec, toSec, offsetSec: 0 }];
  const stretches: OffsetStretch[] = [];
  let start = fromSec;
  let offset = zoneOffsetSec(zone, fromSec);
  let probe = fromSec;
  while (probe < toSec) {
    const next = Math.min(probe + 86_400, toSec);
    if (zoneOffsetSec(zone, next) === offset) {
      probe = next;
      continue;
    }
    let same = probe;
    let changed = next;
    while (changed - same > 1) {
      const mid = Math.floor((same + changed) / 2);
      if (zoneOffsetSec(zone, mid) === offset) same = mid;
      else changed = mid;
    }
    stretches.push({ fromSec: start, toSec: changed - 1, offsetSec: offset });
    start = changed;
    offset = zoneOffsetSec(zone, changed);
    probe = changed;
  }
  stretches.push({ fromSec: start, toSec, offsetSec: offset });
  return stretches;
}
