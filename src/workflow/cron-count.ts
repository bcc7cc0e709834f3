/**
 * Counting the ticks of a cron series in a window without visiting each tick.
 *
 * For an interval job croner fires at every whole second whose local wall time matches the
 * pattern (see the DST rule in `./cron.js`). Within a stretch where the zone's offset is
 * constant, local wall time is UTC shifted by that offset, so the count is the number of
 * matching wall-clock seconds in the shifted stretch. That number is found per matching day:
 * croner (in UTC) jumps to the next day with a tick, and the seconds of that day which match are
 * counted from croner's hour, minute and second tables. A spring-forward gap falls between two
 * stretches and is counted in neither (interval jobs skip it); a repeated hour is in both
 * (interval jobs fire on both occurrences).
 *
 * A fixed-time job fires at most once a day, with DST special cases (end of gap, first of two
 * occurrences), so it is counted by walking croner itself.
 */
import type { Cron } from "croner";
import { offsetStretches } from "./time-zone.js";

/** What counting needs from a compiled series. */
export interface TickTables {
  /** IANA zone of the series. */
  readonly timezone: string;
  /** croner in the series' zone. */
  readonly cron: Cron;
  /** croner with the same pattern at UTC offset 0: finds matching wall-clock days. */
  readonly utcCron: Cron;
  /** croner's fixed-time classification (single second, minute and hour). */
  readonly fixedTime: boolean;
  /** Matching hours (24 entries), minutes (60) and seconds (60), from croner's parse. */
  readonly hours: readonly boolean[];
  readonly minutes: readonly boolean[];
  readonly seconds: readonly boolean[];
}

const DAY_SEC = 86_400;

/**
 * Number of ticks t with afterMs < t ≤ untilMs (epoch milliseconds).
 *
 * Cost: interval jobs, one croner call per matching day plus one zone lookup per day of the
 * window; fixed-time jobs, one croner call per tick (at most one a day).
 */
export function countTicks(tables: TickTables, afterMs: number, untilMs: number): number {
  if (untilMs <= afterMs) return 0;
  if (tables.fixedTime) {
    let n = 0;
    let next = tables.cron.nextRun(new Date(afterMs));
    while (next !== null && next.getTime() <= untilMs) {
      if (next.getTime() > afterMs) n += 1;
      next = tables.cron.nextRun(next);
    }
    return n;
  }
  const loSec = Math.floor(afterMs / 1000) + 1;
  const hiSec = Math.floor(untilMs / 1000);
  if (hiSec < loSec) return 0;
  let n = 0;
  for (const stretch of offsetStretches(tables.timezone, loSec, hiSec)) {
    n += countWallSeconds(tables, stretch.fromSec + stretch.offsetSec, stretch.toSec + stretch.offsetSec);
  }
  return n;
}

/** Matching wall-clock seconds in [fromSec, toSec], wall time written as if it were UTC. */
function countWallSeconds(tables: TickTables, fromSec: number, toSec: number): number {
  const table = prefixTables(tables);
  let n = 0;
  let w = fromSec;
  while (w <= toSec) {
    // croner's nextRun is strictly after a whole second, so this is the first match at or after w.
    const next = tables.utcCron.nextRun(new Date((w - 1) * 1000));
    if (next === null) break;
    const t = Math.floor(next.getTime() / 1000);
    if (t > toSec) break;
    const dayStart = Math.floor(t / DAY_SEC) * DAY_SEC;
    const dayEnd = dayStart + DAY_SEC - 1;
    n += matchesBelow(table, Math.min(toSec, dayEnd) - dayStart + 1) - matchesBelow(table, t - dayStart);
    w = dayEnd + 1;
  }
  return n;
}

interface PrefixTable {
  readonly hours: readonly boolean[];
  readonly minutes: readonly boolean[];
  readonly seconds: readonly boolean[];
  /** hourBelow[h] = matching hours < h; likewise minutes and seconds. */
  readonly hourBelow: readonly number[];
  readonly minuteBelow: readonly number[];
  readonly secondBelow: readonly number[];
}

const prefixCache = new WeakMap<TickTables, PrefixTable>();

function prefix(flags: readonly boolean[]): number[] {
  const out = [0];
  for (const flag of flags) out.push((out.at(-1) ?? 0) + (flag ? 1 : 0));
  return out;
}

function prefixTables(tables: TickTables): PrefixTable {
  let table = prefixCache.get(tables);
  if (table === undefined) {
    table = {
      hours: tables.hours,
      minutes: tables.minutes,
      seconds: tables.seconds,
      hourBelow: prefix(tables.hours),
      minuteBelow: prefix(tables.minutes),
      secondBelow: prefix(tables.seconds),
    };
    prefixCache.set(tables, table);
  }
  return table;
}

/** Matching seconds-of-day strictly below `sec` (0 ≤ sec ≤ 86 400) on a day whose date matches. */
function matchesBelow(t: PrefixTable, sec: number): number {
  const perMinute = t.secondBelow[60] ?? 0;
  const perHour = (t.minuteBelow[60] ?? 0) * perMinute;
  const hour = Math.floor(sec / 3600);
  const minute = Math.floor((sec % 3600) / 60);
  const second = sec % 60;
  let n = (t.hourBelow[hour] ?? 0) * perHour;
  if (hour < 24 && t.hours[hour] === true) {
    n += (t.minuteBelow[minute] ?? 0) * perMinute;
    if (t.minutes[minute] === true) n += t.secondBelow[second] ?? 0;
  }
  return n;
}
