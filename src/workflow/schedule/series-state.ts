/**
 * How the schedule controls change one armed generation of a series in the RunState reducer
 * (`../run-state.ts`). Pure: plain data in, plain data out.
 *
 * States of a series (per timerId): running(slot) ⇄ paused(slot) → over.
 * - `SchedulePaused` on a running series: paused (the armed tick stays, it is not queued).
 * - `ScheduleResumed` on a paused series: running again; the resume's own commit then holds a
 *   `TimerSkipped` (reason `paused`) and the `TimerSet` of the next future tick, unless it asked
 *   to catch up, when the overdue tick is left to the misfire policy.
 * - A new `TimerSet` of a series (a reschedule, a sync update, the follow-on tick) keeps the
 *   pause: pausing is a property of the series, not of one tick.
 * - `ScheduleEnded`, `TimerCancelled` or a terminal event: over (disarmed by the reducer).
 * - Manual (`manual: true`) and backfill (`backfill: true`) fires never move the series.
 */
import type { PendingTimer, RunEvent, TimerSetData } from "../types.js";

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/** The schedule fields a TimerSet carries into its pending generation. */
const SERIES_FIELDS = ["startAt", "endAt", "maxTicks", "slot", "jitterMs", "owner"] as const;

/**
 * Adds a TimerSet's schedule fields to the generation it arms, and keeps a pause of the series
 * it replaces.
 * @param timer - the new generation, built from the TimerSet's core fields
 * @param data - the TimerSet's data
 * @param previous - the generation armed before, if any
 */
export function withSeriesFields(timer: PendingTimer, data: TimerSetData, previous: PendingTimer | undefined): PendingTimer {
  if (timer.cron === undefined) return timer;
  const out = { ...timer } as Mutable<PendingTimer>;
  for (const name of SERIES_FIELDS) {
    const value = data[name];
    if (value !== undefined) (out as Record<string, unknown>)[name] = value;
  }
  if (previous?.cron !== undefined && previous.pausedAt !== undefined) out.pausedAt = previous.pausedAt;
  return out;
}

/** The generation after `SchedulePaused` (a one-shot or an already paused series is unchanged). */
export function pausedTimer(timer: PendingTimer, at: string | undefined): PendingTimer {
  if (timer.cron === undefined || timer.pausedAt !== undefined) return timer;
  return { ...timer, pausedAt: at ?? "" };
}

/** The generation after `ScheduleResumed`. */
export function resumedTimer(timer: PendingTimer): PendingTimer {
  if (timer.pausedAt === undefined) return timer;
  const { pausedAt: _dropped, ...rest } = timer;
  return rest;
}

/** True for a fire that is not a slot of the series: a manual trigger or a backfill. */
export function isOffSeriesFire(event: RunEvent): boolean {
  const data = (event as { data?: { manual?: unknown; backfill?: unknown } }).data;
  return data?.manual === true || data?.backfill === true;
}
