/**
 * What each schedule control appends to a run's log, decided from the log under the repo lock.
 * Pure: the caller passes the log and the clock's reading, numbers the events and commits them
 * (see `seams/scheduler/schedule-controls.ts`). Every decision is idempotent: deciding again on the log
 * after the commit appends nothing.
 *
 * - pause: `SchedulePaused`; nothing when already paused.
 * - resume: `ScheduleResumed`, then for the slots that fell due while paused one `TimerSkipped`
 *   (reason `paused`, the whole stretch) and the next future slot (`TimerSet`, or
 *   `ScheduleEnded` at a bound). With `catchUp` only `ScheduleResumed`: the overdue slot stays
 *   armed and the scheduler applies the series' misfire policy to the stretch.
 * - trigger: one `TimerFired` with `manual: true`, the caller's `requestId` and
 *   `scheduledFor = firedAt = now`; nothing when that requestId already fired this series. The
 *   armed slot does not move.
 * - backfill: one `TimerFired` with `backfill: true` per slot in `[from, to]` that is before the
 *   armed slot and has no fire yet (of any kind but manual). A range of more than `maxTicks`
 *   (1 … 1 000, default 1 000) slots is refused whole (`backfill_too_large`, naming where a
 *   range that fits ends), never cut short.
 */
import { WorkflowHostError } from "../../errors.js";
import { ticksBetween } from "../cron.js";
import { isoFromMs, MIN_MS } from "../time.js";
import { newScheduleResumed, newSchedulePaused, newTimerFired, newTimerSkipped } from "../event-constructors.js";
import { isTimerFired } from "../event-guards.js";
import type { PendingTimer, RunEvent, RunState } from "../types.js";
import { dueSlots, followOn, type SeriesEvent } from "./series-slots.js";

/** Most slots one backfill fires. */
export const MAX_BACKFILL_TICKS = 1_000;

export type ControlOutcome<K extends string> = { readonly outcome: K; readonly events: readonly SeriesEvent[] };

/**
 * The armed series `timerId` of the run.
 * @throws `schedule_not_found` when the run has ended, or `timerId` is not an armed cron series
 */
export function armedSeries(state: RunState, timerId: string): PendingTimer {
  const pending = state.terminal === null ? state.pendingTimers.get(timerId) : undefined;
  if (pending?.cron === undefined) {
    const why = state.terminal !== null ? `is not armed: the run has ended (${state.terminal})` : pending === undefined ? "is not armed (never set, cancelled or ended)" : "is a one-shot timer, not a cron series";
    throw new WorkflowHostError("schedule_not_found", `schedule ${timerId} of run ${state.runId} ${why}; allowed: an armed cron series`, { runId: state.runId, timerId, terminal: state.terminal });
  }
  return pending;
}

/** Pause: `SchedulePaused`, or nothing when the series is paused already. */
export function planPause(state: RunState, timerId: string, reason?: string): ControlOutcome<"paused" | "already_paused"> {
  const pending = armedSeries(state, timerId);
  if (pending.pausedAt !== undefined) return { outcome: "already_paused", events: [] };
  return { outcome: "paused", events: [newSchedulePaused({ timerId, reason })] };
}

/**
 * Resume at `nowMs` (see the module comment).
 * @returns `resumed` with the events, or `not_paused` with none
 */
export function planResume(state: RunState, timerId: string, nowMs: number, catchUp = false): ControlOutcome<"resumed" | "not_paused"> & { readonly skipped: number } {
  const pending = armedSeries(state, timerId);
  if (pending.pausedAt === undefined) return { outcome: "not_paused", events: [], skipped: 0 };
  const events: SeriesEvent[] = [newScheduleResumed({ timerId, catchUp })];
  if (catchUp || Date.parse(pending.fireAt) > nowMs) return { outcome: "resumed", events, skipped: 0 };
  const { count, newest } = dueSlots(state.runId, { ...pending, jitterMs: 0 }, nowMs, 2);
  events.push(newTimerSkipped({ timerId, firstMissed: pending.fireAt, lastMissed: newest, count, reason: "paused" }));
  const next = followOn(pending, newest, count);
  if (next !== null) events.push(next);
  return { outcome: "resumed", events, skipped: count };
}

/**
 * Trigger now: a manual fire, once per `requestId` (see the module comment).
 * @returns `firedAt`: now for a new fire; for a `duplicate`, the `firedAt` of the fire that
 *   `requestId` made (else its event's `at`, else its `scheduledFor`; null only for an event
 *   that holds none of them, which this host never writes), so a retry answers as the first call did
 */
export function planTrigger(state: RunState, events: Iterable<RunEvent>, timerId: string, requestId: string, nowMs: number): ControlOutcome<"triggered" | "duplicate"> & { readonly firedAt: string | null } {
  armedSeries(state, timerId);
  for (const event of events) {
    if (isTimerFired(event) && event.data.timerId === timerId && event.data.manual === true && event.data.requestId === requestId) {
      return { outcome: "duplicate", events: [], firedAt: event.data.firedAt ?? event.at ?? event.data.scheduledFor ?? null };
    }
  }
  const now = isoFromMs(nowMs);
  return { outcome: "triggered", events: [newTimerFired({ timerId, scheduledFor: now, firedAt: now, manual: true, requestId })], firedAt: now };
}

/**
 * The most slots a backfill fires: `maxTicks`, or {@link MAX_BACKFILL_TICKS} when not given.
 * A value out of range is refused, never lowered to the ceiling (it was, silently: 5 000 became
 * 1 000, and 1.5 was a bare RangeError), as the CLI's `--max-ticks` and the HTTP route refuse it.
 * @throws `usage` (data `{field: "maxTicks", value}`) unless a whole number 1 … {@link MAX_BACKFILL_TICKS}
 */
export function backfillLimit(maxTicks: number | undefined): number {
  const limit = maxTicks ?? MAX_BACKFILL_TICKS;
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_BACKFILL_TICKS) {
    throw new WorkflowHostError("usage", `backfill maxTicks ${String(limit)} is not valid; allowed: a whole number 1 … ${MAX_BACKFILL_TICKS}`, { field: "maxTicks", value: limit });
  }
  return limit;
}

/**
 * Backfill the slots of `[fromIso, toIso]` (both inclusive; see the module comment).
 * @param maxTicks - most slots, a whole number 1 … {@link MAX_BACKFILL_TICKS} (default {@link MAX_BACKFILL_TICKS})
 * @returns the fires to append, the slots already fired (skipped as done), and when nothing is
 *   to fire, why (`emptyBecause`; null otherwise). A range is fired whole or not at all: never cut.
 * @throws `schedule_not_found`; `time_invalid` when from > to or to is after now; `usage` for a
 *   `maxTicks` out of range (data `{field, value}`); `backfill_too_large` when the range holds more
 *   than `maxTicks` slots to consider (fired or not), with `data.count`, `data.maxTicks`,
 *   `data.lastSlotWithin` (the last of the first `maxTicks` slots: a `to` that fits) and
 *   `data.nextSlot` (the slot after it: the next range's `from`)
 */
export function planBackfill(
  state: RunState,
  events: Iterable<RunEvent>,
  timerId: string,
  range: { readonly fromIso: string; readonly toIso: string; readonly maxTicks?: number },
  nowMs: number,
): ControlOutcome<"backfilled"> & { readonly slots: readonly string[]; readonly alreadyFired: readonly string[]; readonly emptyBecause: string | null } {
  const pending = armedSeries(state, timerId);
  const fromMs = Date.parse(range.fromIso);
  const toMs = Date.parse(range.toIso);
  if (fromMs > toMs || toMs > nowMs) {
    throw new WorkflowHostError("time_invalid", `backfill range ${range.fromIso} .. ${range.toIso} is not a past range; allowed: from <= to <= now (${isoFromMs(nowMs)})`, { from: range.fromIso, to: range.toIso });
  }
  const limit = backfillLimit(range.maxTicks);
  // Slots before the armed one only: the armed slot and later belong to the running series.
  const untilMs = Math.min(toMs, Date.parse(pending.fireAt) - 1);
  // The search starts 1 ms before `from` (its start is exclusive), kept inside the instants'
  // range: a `from` at 0000-01-01T00:00:00.000Z was time_invalid naming -62167219200001. (A slot
  // at exactly that first instant is then not found.)
  const span = untilMs < fromMs ? null : ticksBetween(pending.cron as string, pending.timezone ?? "UTC", isoFromMs(Math.max(fromMs - 1, MIN_MS)), isoFromMs(untilMs), limit, "first");
  if (span !== null && span.count > limit) {
    // The whole range or nothing: the caller is told where a range of `limit` slots ends and
    // where the next would start, so the range can be split, never cut short unseen.
    const lastSlotWithin = span.ticks.at(-1) as string;
    const nextSlot = ticksBetween(pending.cron as string, pending.timezone ?? "UTC", lastSlotWithin, isoFromMs(untilMs), 1, "first").ticks[0] ?? null;
    throw new WorkflowHostError(
      "backfill_too_large",
      `backfill of ${timerId} from ${range.fromIso} to ${range.toIso} covers ${span.count} slots; allowed: at most ${limit} (nothing was written; the first ${limit} end at ${lastSlotWithin}: backfill to ${lastSlotWithin}, then from ${nextSlot ?? "the next slot"})`,
      { timerId, count: span.count, maxTicks: limit, lastSlotWithin, nextSlot },
    );
  }
  const done = new Set<number>();
  for (const event of events) {
    if (isTimerFired(event) && event.data.timerId === timerId && event.data.manual !== true && event.data.scheduledFor !== undefined) done.add(Date.parse(event.data.scheduledFor));
  }
  const slots = span?.ticks ?? [];
  const todo = slots.filter((s) => !done.has(Date.parse(s)));
  const firedAt = isoFromMs(nowMs);
  const emptyBecause =
    todo.length > 0
      ? null
      : fromMs >= Date.parse(pending.fireAt)
        ? `the range starts at or after the armed slot ${pending.fireAt}; that slot and later ones belong to the running series`
        : slots.length > 0
          ? "every slot in the range had fired already"
          : `no slot of ${pending.cron as string} (${pending.timezone ?? "UTC"}) lies in the range before the armed slot ${pending.fireAt}`;
  return {
    outcome: "backfilled",
    events: todo.map((scheduledFor) => newTimerFired({ timerId, scheduledFor, firedAt, backfill: true })),
    slots: todo,
    alreadyFired: slots.filter((s) => done.has(Date.parse(s))),
    emptyBecause,
  };
}
