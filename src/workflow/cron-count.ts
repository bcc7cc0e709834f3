/**
 * Counting the ticks of a cron series in a window without visiting each tick or each day.
 *
 * For an interval job croner fires at every whole second whose local wall time matches the
 * pattern (see the DST rule in `./cron.js`). Within a stretch where the zone's offset is
 * constant, local wall time is UTC shifted by that offset, so the count is the number of
 * matching wall-clock seconds in the shifted stretch: (matching days) × (matching seconds a day),
 * plus the two partial days at the ends. Which days of a month match depends only on the
 * month's shape (which month, its length, the weekday of its 1st): croner decides each of the at
 * most 91 shapes once per pattern, and days are then counted month by month, whole 400-year
 * Gregorian cycles at once. A spring-forward gap falls between two stretches and is counted in
 * neither (interval jobs skip it); a repeated hour is in both (interval jobs fire on both).
 *
 * A fixed-time job fires once per matching local day, like an interval job with one matching
 * second a day, except at an offset change that skips or repeats its time of day: in a gap it
 * fires once at the end of the gap (same local day only), in a repeated hour once, at the first
 * occurrence; each such change adds or takes one tick (see {@link fixedTimeCorrection}).
 *
 * Cost: O(months of the window, at most 2 × 4 800) + O(offset changes in the window); never
 * O(ticks) or O(days), and no croner search at all.
 * The counting runs as a generator that yields between units of work, so an async caller can
 * give the event loop a turn ({@link prepareTickCount}); {@link countTicks} runs it through.
 */
import type { Cron } from "croner";
import { offsetStretches, prepareOffsetStretches, type OffsetStretch } from "./time-zone.js";

/** What counting needs from a compiled series. */
export interface TickTables {
  /** IANA zone of the series. */
  readonly timezone: string;
  /** croner in the series' zone. */
  readonly cron: Cron;
  /** croner with the same pattern at UTC offset 0: decides which wall-clock days match. */
  readonly utcCron: Cron;
  /** croner's fixed-time classification (single second, minute and hour). */
  readonly fixedTime: boolean;
  /** Matching hours (24 entries), minutes (60) and seconds (60), from croner's parse. */
  readonly hours: readonly boolean[];
  readonly minutes: readonly boolean[];
  readonly seconds: readonly boolean[];
}

const DAY_SEC = 86_400;
const CYCLE_DAYS = 146_097;
const CYCLE_MS = CYCLE_DAYS * DAY_SEC * 1000;
/** Last instant of the supported range, 9999-12-31T23:59:59.999Z (as `parseInstant`). */
export const LAST_TICK_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);
// croner's forward search gives up at year 3000 for patterns without a year field. Ticks repeat
// with the 400-year Gregorian cycle (and so do zone rules past the tz database's table), so a
// search from 2600 on is made 400·k years earlier and shifted back.
const SHIFT_FROM_MS = Date.UTC(2600, 0, 1);

function cyclesToShift(ms: number): number {
  return ms < SHIFT_FROM_MS ? 0 : Math.floor((ms - SHIFT_FROM_MS) / CYCLE_MS) + 1;
}

/**
 * croner's first tick strictly after `afterMs` (whole seconds, as croner compares), or null past
 * 9999-12-31T23:59:59Z. Works for the whole range 0000–9999 (see SHIFT_FROM_MS).
 */
export function cronNextMs(cron: Cron, afterMs: number): number | null {
  const k = cyclesToShift(afterMs);
  const next = cron.nextRun(new Date(afterMs - k * CYCLE_MS));
  if (next === null) return null;
  const ms = next.getTime() + k * CYCLE_MS;
  return ms > LAST_TICK_MS ? null : ms;
}

/** croner's latest `limit` ticks strictly before `beforeMs`, newest first (whole range 0000–9999). */
export function cronPreviousMs(cron: Cron, limit: number, beforeMs: number): number[] {
  const k = cyclesToShift(beforeMs);
  return cron.previousRuns(limit, new Date(beforeMs - k * CYCLE_MS)).map((d) => d.getTime() + k * CYCLE_MS);
}

/** Work done between two yields of the counting generator: one stretch, one month block, … */
type Steps = Generator<void, number, void>;

/**
 * Number of ticks t with afterMs < t ≤ untilMs (epoch milliseconds). Pure; see the module
 * comment for the cost. Exact over the whole range 0000–9999.
 */
export function countTicks(tables: TickTables, afterMs: number, untilMs: number): number {
  const memo = memoKey(tables, afterMs, untilMs);
  const hit = counted.get(memo);
  if (hit !== undefined) return hit;
  const steps = countSteps(tables, afterMs, untilMs);
  let step = steps.next();
  while (step.done !== true) step = steps.next();
  remember(memo, step.value);
  return step.value;
}

/**
 * Counts what {@link countTicks} will be asked for, awaiting `pause` between units of work
 * (each well under a millisecond, except a zone's first use of a year: ~0.3 ms), and remembers
 * the result so the synchronous call that follows is a lookup. This is how a caller with an
 * event loop keeps every turn short however long the window.
 * @param pause resolves when the caller is ready to go on (e.g. after a macrotask when its time
 *   slice is used up); called often, so it should return at once while the slice lasts
 */
export async function prepareTickCount(tables: TickTables, afterMs: number, untilMs: number, pause: () => Promise<void>): Promise<number> {
  const memo = memoKey(tables, afterMs, untilMs);
  const hit = counted.get(memo);
  if (hit !== undefined) return hit;
  await prepareOffsetStretches(tables.timezone, Math.floor(afterMs / 1000), Math.floor(untilMs / 1000) + 1, pause);
  // Which days match, per month shape: ~31 croner checks each, up to 91 shapes in a long window.
  const t = prefixTables(tables);
  for (let month = 1; month <= 12; month++) {
    for (const length of month === 2 ? [28, 29] : [monthLength(2001, month)]) {
      for (let firstWeekday = 0; firstWeekday < 7; firstWeekday++) {
        shapePrefix(t, month, length, firstWeekday);
        await pause();
      }
    }
  }
  const steps = countSteps(tables, afterMs, untilMs);
  let step = steps.next();
  while (step.done !== true) {
    await pause();
    step = steps.next();
  }
  remember(memo, step.value);
  return step.value;
}

// Results by (series, window): prepareTickCount fills it, the planner's countTicks reads it.
const COUNT_MEMO_LIMIT = 256;
const counted = new Map<string, number>();
const tableIds = new WeakMap<TickTables, number>();
let nextTableId = 0;

function memoKey(tables: TickTables, afterMs: number, untilMs: number): string {
  let id = tableIds.get(tables);
  if (id === undefined) {
    id = nextTableId++;
    tableIds.set(tables, id);
  }
  return `${id}:${afterMs}:${untilMs}`;
}

function remember(key: string, value: number): void {
  if (counted.size >= COUNT_MEMO_LIMIT) {
    const oldest = counted.keys().next();
    if (oldest.done !== true) counted.delete(oldest.value);
  }
  counted.set(key, value);
}

function* countSteps(tables: TickTables, afterMs: number, untilMs: number): Steps {
  if (untilMs <= afterMs) return 0;
  const loSec = Math.floor(afterMs / 1000) + 1;
  const hiSec = Math.floor(untilMs / 1000);
  if (hiSec < loSec) return 0;
  const stretches = offsetStretches(tables.timezone, loSec, hiSec);
  let n = 0;
  for (const stretch of stretches) {
    n += countWallSeconds(tables, stretch.fromSec + stretch.offsetSec, stretch.toSec + stretch.offsetSec);
    yield;
  }
  // The correction looks at offset changes from two days before the window: a change just
  // before it (or at its first second) can still put a repeated second occurrence, or the end
  // of a gap, inside it. Each correction checks its own instant against the window.
  if (tables.fixedTime) n += yield* fixedTimeCorrection(tables, offsetStretches(tables.timezone, loSec - 2 * DAY_SEC, hiSec), afterMs, untilMs);
  return n;
}

/**
 * What croner's fixed-time rule adds to or takes from the stretch count at each offset change
 * whose skipped or repeated wall-clock range holds the job's time of day, on a matching day:
 * - a gap: the stretch count has no tick (the wall time does not exist); croner fires once at
 *   the end of the gap, the change's instant, when that is still the same local day: +1 if that
 *   instant is in the window;
 * - a repeat: the stretch count has both occurrences in the window; croner fires only at the
 *   first: −1 if the second is in the window.
 */
function* fixedTimeCorrection(tables: TickTables, stretches: readonly OffsetStretch[], afterMs: number, untilMs: number): Steps {
  const t = prefixTables(tables);
  const tod = timeOfDaySec(tables);
  const inWindow = (sec: number): boolean => sec * 1000 > afterMs && sec * 1000 <= untilMs;
  let correction = 0;
  for (let i = 1; i < stretches.length; i++) {
    const before = (stretches[i - 1] as OffsetStretch).offsetSec;
    const at = (stretches[i] as OffsetStretch).fromSec;
    const after = (stretches[i] as OffsetStretch).offsetSec;
    // Wall-clock seconds that do not exist (gap) or exist twice (repeat) at this change.
    const lo = at + Math.min(before, after);
    const hi = at + Math.max(before, after);
    const day = Math.ceil((lo - tod) / DAY_SEC);
    const wall = day * DAY_SEC + tod;
    if (wall >= hi || !dayMatches(t, day)) continue;
    if (after > before) {
      if (Math.floor(hi / DAY_SEC) === day && inWindow(at)) correction += 1;
    } else if (inWindow(wall - after)) {
      correction -= 1;
    }
    if (i % 64 === 0) yield;
  }
  return correction;
}

function timeOfDaySec(tables: TickTables): number {
  return tables.hours.indexOf(true) * 3600 + tables.minutes.indexOf(true) * 60 + tables.seconds.indexOf(true);
}

/** Matching wall-clock seconds in [fromSec, toSec], wall time written as if it were UTC. */
function countWallSeconds(tables: TickTables, fromSec: number, toSec: number): number {
  if (toSec < fromSec) return 0;
  const t = prefixTables(tables);
  const perDay = matchesBelow(t, DAY_SEC);
  const firstDay = Math.floor(fromSec / DAY_SEC);
  const lastDay = Math.floor(toSec / DAY_SEC);
  const fromInDay = fromSec - firstDay * DAY_SEC;
  const toInDay = toSec - lastDay * DAY_SEC;
  if (firstDay === lastDay) {
    return dayMatches(t, firstDay) ? matchesBelow(t, toInDay + 1) - matchesBelow(t, fromInDay) : 0;
  }
  let n = dayMatches(t, firstDay) ? perDay - matchesBelow(t, fromInDay) : 0;
  n += dayMatches(t, lastDay) ? matchesBelow(t, toInDay + 1) : 0;
  return n + countMatchingDays(t, firstDay + 1, lastDay - 1) * perDay;
}

// ── Calendar arithmetic on day numbers (days since 1970-01-01, proleptic Gregorian) ──

interface Civil {
  readonly year: number;
  /** 1–12. */
  readonly month: number;
  /** 1–31. */
  readonly day: number;
}

/** Civil date of a day number (H. Hinnant's `civil_from_days`). */
function civilFromDays(days: number): Civil {
  const z = days + 719_468;
  const era = Math.floor(z / CYCLE_DAYS);
  const doe = z - era * CYCLE_DAYS;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const month = mp < 10 ? mp + 3 : mp - 9;
  return { year: yoe + era * 400 + (month <= 2 ? 1 : 0), month, day };
}

/** Day number of a civil date (H. Hinnant's `days_from_civil`). */
function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * (month > 2 ? month - 3 : month + 9) + 2) / 5) + day - 1;
  return era * CYCLE_DAYS + yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy - 719_468;
}

function monthLength(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

/** 0 = Sunday. 1970-01-01 was a Thursday. */
function weekday(days: number): number {
  return (((days + 4) % 7) + 7) % 7;
}

/** Matching days 1..k of a month shape: `below[k]` for k = 0..length. */
type DayPrefix = readonly number[];

/**
 * Which days of a month of this shape match the pattern's day-of-month, month and day-of-week
 * fields (with croner's L, W, # and OR/AND rules), decided by croner on a month of the same
 * shape in 2000–2399 at the pattern's first matching time of day.
 */
function shapePrefix(t: PrefixTable, month: number, length: number, firstWeekday: number): DayPrefix {
  const key = (month * 32 + length) * 7 + firstWeekday;
  const hit = t.shapes.get(key);
  if (hit !== undefined) return hit;
  let year = 2000;
  while (monthLength(year, month) !== length || weekday(daysFromCivil(year, month, 1)) !== firstWeekday) year += 1;
  const below = [0];
  for (let day = 1; day <= length; day++) {
    const at = new Date(Date.UTC(year, month - 1, day, t.firstHour, t.firstMinute, t.firstSecond));
    below.push((below.at(-1) ?? 0) + (t.tables.utcCron.match(at) ? 1 : 0));
  }
  t.shapes.set(key, below);
  return below;
}

function dayMatches(t: PrefixTable, days: number): boolean {
  const { year, month, day } = civilFromDays(days);
  const below = shapePrefix(t, month, monthLength(year, month), weekday(days - day + 1));
  return (below[day] ?? 0) > (below[day - 1] ?? 0);
}

/** Matching days in [fromDay, toDay] (day numbers, inclusive): O(months), whole cycles at once. */
function countMatchingDays(t: PrefixTable, fromDay: number, toDay: number): number {
  if (toDay < fromDay) return 0;
  const span = toDay - fromDay + 1;
  const cycles = Math.floor(span / CYCLE_DAYS);
  let n = 0;
  if (cycles > 0) n += cycles * countMatchingDaysInMonths(t, fromDay, fromDay + CYCLE_DAYS - 1);
  return n + countMatchingDaysInMonths(t, fromDay + cycles * CYCLE_DAYS, toDay);
}

function countMatchingDaysInMonths(t: PrefixTable, fromDay: number, toDay: number): number {
  if (toDay < fromDay) return 0;
  let { year, month, day } = civilFromDays(fromDay);
  let monthStart = fromDay - day + 1;
  let n = 0;
  for (;;) {
    const length = monthLength(year, month);
    const below = shapePrefix(t, month, length, weekday(monthStart));
    const lastDay = Math.min(length, toDay - monthStart + 1);
    n += (below[lastDay] ?? 0) - (below[day - 1] ?? 0);
    monthStart += length;
    if (monthStart > toDay) return n;
    day = 1;
    month += 1;
    if (month === 13) {
      month = 1;
      year += 1;
    }
  }
}

// ── Time of day ──

interface PrefixTable {
  readonly tables: TickTables;
  readonly hours: readonly boolean[];
  readonly minutes: readonly boolean[];
  /** hourBelow[h] = matching hours < h; likewise minutes and seconds. */
  readonly hourBelow: readonly number[];
  readonly minuteBelow: readonly number[];
  readonly secondBelow: readonly number[];
  readonly firstHour: number;
  readonly firstMinute: number;
  readonly firstSecond: number;
  /** Day prefixes by month shape (see {@link shapePrefix}). */
  readonly shapes: Map<number, DayPrefix>;
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
      tables,
      hours: tables.hours,
      minutes: tables.minutes,
      hourBelow: prefix(tables.hours),
      minuteBelow: prefix(tables.minutes),
      secondBelow: prefix(tables.seconds),
      firstHour: Math.max(0, tables.hours.indexOf(true)),
      firstMinute: Math.max(0, tables.minutes.indexOf(true)),
      firstSecond: Math.max(0, tables.seconds.indexOf(true)),
      shapes: new Map(),
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
