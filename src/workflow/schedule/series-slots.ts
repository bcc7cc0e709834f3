/**
 * The slots of a series that are due, within its bounds, and what follows them. Shared by the
 * fire planner (`../timer-ledger.ts`) and the resume planner (`./schedule-controls.ts`). Pure.
 *
 * Bounds: no slot after `endAt`; at most `maxTicks` slots counted from the TimerSet that set
 * it (each TimerSet names the `slot` it arms). Jitter: a slot counts as due only once
 * `scheduledFor + delay` has come (see `./jitter.ts`). After the due slots the series either
 * arms its next slot (a TimerSet computed from the newest due slot, never from "now") or ends
 * with a `ScheduleEnded` that names the bound.
 */
import { compileCron, firstTickAfter, ticksBetween } from "../cron.js";
import { isoFromMs } from "../time.js";
import { newScheduleEnded, newTimerSet, type NewTimerEvent } from "../event-constructors.js";
import type { PendingTimer, TimerSetData } from "../types.js";
import { slotDueMs } from "./jitter.js";

/** A timer or schedule event a planner decides, without `seq` (and `at`, which the writer adds). */
export type SeriesEvent = NewTimerEvent;

export interface DueSlots {
  /** How many slots are due, the armed one included (≥ 1). */
  readonly count: number;
  /** The newest due slots, oldest first, at most `tailLimit`; when all are listed, the armed slot is first. */
  readonly tail: readonly string[];
  readonly newest: string;
}

/**
 * The due slots of an armed series whose armed slot is due at `nowMs`.
 * @param tailLimit - how many of the newest slots to list (≥ 2 so the slot before the newest is known)
 */
export function dueSlots(runId: string, pending: PendingTimer, nowMs: number, tailLimit: number): DueSlots {
  const cron = pending.cron as string;
  const zone = pending.timezone ?? "UTC";
  let untilMs = nowMs;
  if (pending.endAt !== undefined) untilMs = Math.min(untilMs, Date.parse(pending.endAt));
  let later = ticksBetween(cron, zone, pending.fireAt, isoFromMs(Math.max(untilMs, Date.parse(pending.fireAt))), tailLimit, "last");
  if (pending.maxTicks !== undefined) {
    const remaining = pending.maxTicks - (pending.slot ?? 1) + 1;
    if (1 + later.count > remaining) {
      const first = remaining <= 1 ? null : ticksBetween(cron, zone, pending.fireAt, isoFromMs(untilMs), remaining - 1, "first");
      untilMs = Date.parse(first?.ticks[remaining - 2] ?? pending.fireAt);
      later = ticksBetween(cron, zone, pending.fireAt, isoFromMs(untilMs), tailLimit, "last");
    }
  }
  const newestLater = later.ticks.at(-1);
  if (newestLater !== undefined && slotDueMs(runId, pending, newestLater) > nowMs) {
    // Its jittered instant has not come: it waits for its own wake-up. Only the newest slot can
    // be in this state (a slot's delay is less than the gap to the next one).
    later = ticksBetween(cron, zone, pending.fireAt, isoFromMs(Date.parse(newestLater) - 1), tailLimit, "last");
  }
  const tail = later.ticks.length === later.count ? [pending.fireAt, ...later.ticks] : [...later.ticks];
  return { count: 1 + later.count, tail, newest: tail.at(-1) ?? pending.fireAt };
}

/**
 * What follows `consumed` slots of a series ending with `newest`: the TimerSet of the next slot
 * (carrying every field of the series, its slot number advanced), a `ScheduleEnded` when a bound
 * is reached, or nothing when the expression has no later tick.
 */
export function followOn(pending: PendingTimer, newest: string, consumed: number): SeriesEvent | null {
  const cron = pending.cron as string;
  const zone = pending.timezone ?? "UTC";
  const slot = (pending.slot ?? 1) + consumed;
  if (pending.maxTicks !== undefined && slot > pending.maxTicks) {
    return newScheduleEnded({ timerId: pending.timerId, reason: "maxTicks", lastTick: newest });
  }
  const nextMs = firstTickAfter(compileCron(cron, zone), Date.parse(newest));
  if (nextMs === null) return null;
  if (pending.endAt !== undefined && nextMs > Date.parse(pending.endAt)) {
    return newScheduleEnded({ timerId: pending.timerId, reason: "endAt", lastTick: newest });
  }
  return newTimerSet(seriesSetData(pending, isoFromMs(nextMs), pending.maxTicks === undefined ? undefined : slot));
}

/** The data of a TimerSet re-arming `pending`'s series at `fireAt` with its fields kept. */
export function seriesSetData(pending: PendingTimer, fireAt: string, slot: number | undefined): TimerSetData {
  return {
    timerId: pending.timerId,
    fireAt,
    cron: pending.cron as string,
    timezone: pending.timezone ?? "UTC",
    ...(pending.misfire === undefined ? {} : { misfire: pending.misfire }),
    ...(pending.stepId === undefined ? {} : { stepId: pending.stepId }),
    ...(pending.startAt === undefined ? {} : { startAt: pending.startAt }),
    ...(pending.endAt === undefined ? {} : { endAt: pending.endAt }),
    ...(pending.maxTicks === undefined ? {} : { maxTicks: pending.maxTicks }),
    ...(slot !== undefined && slot > 1 ? { slot } : {}),
    ...(pending.jitterMs === undefined ? {} : { jitterMs: pending.jitterMs }),
    ...(pending.owner === undefined ? {} : { owner: pending.owner }),
  };
}
