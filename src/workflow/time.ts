/**
 * Instants (docs/design.md §2): RFC 3339 date-times with an explicit offset, stored normalised as
 * `Date.prototype.toISOString()` (UTC, milliseconds). Parsing is done field by field, never with
 * `Date.parse`, whose handling of offset-less and out-of-range strings depends on the engine and
 * on the process time zone.
 */
import { WorkflowHostError, describeValue } from "../errors.js";

// RFC 3339 §5.6 `date-time`: full-date "T" full-time, with time-offset = "Z" / ("+" / "-") hh:mm.
// §5.6 lets "T" and "Z" be lower case and, in its NOTE, allows a space as the separator.
const RFC3339 =
  /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/;

/** The stored form, `Date.prototype.toISOString()` of a year 0000–9999. */
const STORED = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** The first instant of the range every instant lies in: 0000-01-01T00:00:00.000Z (docs/design.md, "Years"). */
export const MIN_MS = utcMs(0, 1, 1, 0, 0, 0, 0);
const MAX_MS = utcMs(9999, 12, 31, 23, 59, 59, 999);

function isLeapYear(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

/** Days in `month` (1–12) of `year`, Gregorian calendar. */
function daysInMonth(year: number, month: number): number {
  if (month === 2) return isLeapYear(year) ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

// Date.UTC maps years 0–99 to 1900–1999, so the year is set separately.
function utcMs(year: number, month: number, day: number, hour: number, minute: number, second: number, ms: number): number {
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  date.setUTCHours(hour, minute, second, ms);
  return date.getTime();
}

/** Digits at `at`, `at + 1` of a string the {@link STORED} pattern matched. */
function two(value: string, at: number): number {
  return (value.charCodeAt(at) - 48) * 10 + value.charCodeAt(at + 1) - 48;
}

/** For a string of the stored form: a real calendar date, hour ≤ 23, minute and second ≤ 59. */
function isRealStoredInstant(value: string): boolean {
  const year = two(value, 0) * 100 + two(value, 2);
  const month = two(value, 5);
  const day = two(value, 8);
  return month >= 1 && month <= 12 && day >= 1 && day <= daysInMonth(year, month) && two(value, 11) <= 23 && two(value, 14) <= 59 && two(value, 17) <= 59;
}

function invalid(field: string, value: unknown, why: string): WorkflowHostError {
  return new WorkflowHostError(
    "time_invalid",
    `${field} ${describeValue(value)} is not a valid instant (${why}); allowed: an RFC 3339 date-time with an offset, e.g. 2026-05-01T10:00:00Z or 2026-05-01T12:00:00+02:00`,
    { field, value },
  );
}

/**
 * Parses an RFC 3339 date-time (§5.6) into the stored form.
 *
 * Accepted: `YYYY-MM-DD`, a `T`, `t` or space separator (§5.6 NOTE), `hh:mm:ss`, optional
 * fractional seconds of any length (truncated to milliseconds, never rounded, so a value never
 * moves into the next second), and an offset `Z`, `z` or `±hh:mm` with hh ≤ 23, mm ≤ 59 (`-00:00`
 * reads as UTC). The date must exist in the Gregorian calendar (2026-02-29 and 2026-04-31 are
 * rejected, 2028-02-29 passes), hour ≤ 23, minute and second ≤ 59. A leap second (`:60`) is
 * rejected: JavaScript time has no leap seconds, so a `Date` cannot represent it and it would
 * silently become the next second. The result must lie within years 0000–9999 in UTC.
 *
 * The process time zone is never consulted: `2026-03-08T02:30:00-05:00` gives
 * `2026-03-08T07:30:00.000Z` under any `TZ`.
 *
 * @param value - anything; only a string can pass.
 * @param field - name used in the error, e.g. `"fireAt"` or `"data.fireAt"`.
 * @returns the instant as `Date.prototype.toISOString()` (UTC, 3 fractional digits, `Z`).
 * @throws `time_invalid` with `data {field, value}`.
 */
export function parseInstant(value: unknown, field: string): string {
  if (typeof value !== "string") throw invalid(field, value, "not a string");
  // Most instants read are already in the stored form (every event this project writes, and a
  // fire commit writes the same `at` into thousands of events): one whose fields are in range is
  // returned as it is (the checks below would rebuild the same string), without building a Date
  // and without remembering it; anything else goes through the checks below.
  if (value.length === 24 && STORED.test(value) && isRealStoredInstant(value)) return value;
  return parseInstantUncached(value, field);
}

function parseInstantUncached(value: string, field: string): string {
  const m = RFC3339.exec(value);
  if (m === null) throw invalid(field, value, "not RFC 3339 with an explicit offset");
  const [, y, mo, d, h, mi, s, frac, zulu, sign, oh, om] = m;
  const year = Number(y);
  const month = Number(mo);
  const day = Number(d);
  const hour = Number(h);
  const minute = Number(mi);
  const second = Number(s);
  if (month < 1 || month > 12) throw invalid(field, value, "month out of range");
  if (day < 1 || day > daysInMonth(year, month)) throw invalid(field, value, "no such calendar date");
  if (hour > 23) throw invalid(field, value, "hour out of range");
  if (minute > 59) throw invalid(field, value, "minute out of range");
  if (second > 59) throw invalid(field, value, "second out of range; leap seconds are not representable");
  let offsetMinutes = 0;
  if (zulu === undefined) {
    const offH = Number(oh);
    const offM = Number(om);
    if (offH > 23 || offM > 59) throw invalid(field, value, "offset out of range");
    offsetMinutes = (sign === "-" ? -1 : 1) * (offH * 60 + offM);
  }
  const millis = frac === undefined ? 0 : Number(frac.slice(0, 3).padEnd(3, "0"));
  const ms = utcMs(year, month, day, hour, minute, second, millis) - offsetMinutes * 60_000;
  if (ms < MIN_MS || ms > MAX_MS) throw invalid(field, value, "outside years 0000-9999 in UTC");
  return new Date(ms).toISOString();
}

/**
 * Milliseconds since the epoch of an instant in any RFC 3339 form {@link parseInstant} accepts.
 * @param field - name used in the error (default `"instant"`).
 * @throws `time_invalid`.
 */
export function instantMs(iso: string, field = "instant"): number {
  return Date.parse(parseInstant(iso, field));
}

/**
 * The stored form of an epoch-milliseconds value.
 * @param ms - milliseconds since 1970-01-01T00:00:00Z; must be an integer within years 0000–9999.
 * @param field - name used in the error (default `"instant"`).
 * @throws `time_invalid` for NaN, fractions or out-of-range values.
 */
export function isoFromMs(ms: number, field = "instant"): string {
  // A fire commit asks for the same instant (its "now") once per timer: the last answer is kept.
  if (ms === lastIsoMs) return lastIso;
  if (!Number.isInteger(ms) || ms < MIN_MS || ms > MAX_MS) throw invalid(field, ms, "not an integer millisecond within years 0000-9999");
  lastIso = new Date(ms).toISOString();
  lastIsoMs = ms;
  return lastIso;
}

let lastIsoMs = Number.NaN;
let lastIso = "";
