/**
 * The timer ledger: what the scheduler appends when a queued timer comes due, decided from the
 * run's state as read under the repo lock. Pure: no clock reads, no I/O.
 *
 * Rules (docs/design.md §3, §5):
 * - Only the armed generation fires: the run must not be terminal and its pending timer must
 *   still have the generation (`setSeq`) and `fireAt` the queue held. Anything else is stale
 *   (already fired, cancelled, re-set, run ended) and appends nothing, which is what makes a
 *   retried or duplicated fire exactly-once.
 * - Never early: `now < fireAt` appends nothing (the caller re-arms).
 * - A one-shot fires once with its original `scheduledFor`, however late.
 * - A cron tick is on time when it is the newest due tick and at most `misfireGraceMs` late,
 *   judged when the running host took it up (`takenUpMs`), not when its commit lands: a tick
 *   the host's queue handed over on time fires however long the fire commits ahead of it take,
 *   and its TimerFired records `takenUpAt` when it lands later than the grace. Ticks due by then
 *   are counted as of that moment; later ones are the follow-on's business.
 *   Older due ticks are missed and handled by the misfire policy: `skip` records them in one
 *   TimerSkipped; `latest` records all but the newest as skipped and fires the newest; `all`
 *   fires each, the newest `maxCatchUp` of them, recording older excess as skipped.
 * - A fired or skipped cron series is followed, in the same commit, by a TimerSet for the first
 *   tick after the newest due tick: computed from the ticks, never from "now"; or by a
 *   ScheduleEnded when that passes its `endAt` or `maxTicks`.
 * - A paused series appends nothing (its pause commit raced the queue); a jittered tick is due
 *   at its slot plus the slot's delay (./schedule/jitter.ts), and its TimerFired records both.
 */
import { newTimerFired, newTimerSkipped, type NewTimerEvent } from "./event-constructors.js";
import { dueSlots, followOn } from "./schedule/series-slots.js";
import { slotDueMs } from "./schedule/jitter.js";
import { isoFromMs } from "./time.js";
import type { MisfirePolicy, PendingTimer, RunState } from "./types.js";

/** A queued timer as the scheduler held it: one generation of one timer. */
export interface DueTimer {
  readonly timerId: string;
  readonly fireAt: string;
  readonly setSeq: number;
}

export interface FirePlanOptions {
  /** The injected clock's reading, epoch ms. */
  readonly nowMs: number;
  /** Policy for series whose TimerSet names none. Default "skip". */
  readonly misfire?: MisfirePolicy;
  /** Most missed ticks fired under `all` (default 100). */
  readonly maxCatchUp?: number;
  /** How late the newest due tick may be and still fire as on time (ms, default 1 000). */
  readonly misfireGraceMs?: number;
  /**
   * When the running host took the timer up (epoch ms: the wall clock when its queue handed the
   * timer to the fire loop). A series tick is judged on time or missed at
   * `min(nowMs, max(due time, takenUpMs))`. Default: `nowMs` (judged at the commit).
   */
  readonly takenUpMs?: number | undefined;
}

/** A typed event without `seq`/`at`: the caller numbers and stamps it. */
export type PlannedEvent = NewTimerEvent;

export type FirePlan =
  | { readonly kind: "stale"; readonly reason: "terminal" | "not_armed" | "rearmed" | "paused" }
  | { readonly kind: "not_due"; readonly fireAt: string; /** When it is due (epoch ms): fireAt, plus jitter for a jittered series. */ readonly dueMs: number }
  | {
      readonly kind: "append";
      readonly events: readonly PlannedEvent[];
      /** The clock reading recorded as `firedAt`. */
      readonly firedAt: string;
      /** `scheduledFor` of every TimerFired planned, oldest first. */
      readonly fired: readonly string[];
      readonly skipped: { readonly firstMissed: string; readonly lastMissed: string; readonly count: number } | null;
      /** The next tick armed by the follow-on TimerSet, or null (one-shot, or series over). */
      readonly nextFireAt: string | null;
    };

export const DEFAULT_MAX_CATCH_UP = 100;
export const DEFAULT_MISFIRE_GRACE_MS = 1_000;

/**
 * Decides what to append for one due timer.
 * @param state the run's state read under the repo lock
 * @returns `stale` (append nothing), `not_due` (re-arm at `fireAt`) or the events to append
 * @throws cron_invalid only if a series in the log has become uncompilable (never for a series
 *   validated on write)
 */
export function planDueTimer(state: RunState, due: DueTimer, options: FirePlanOptions): FirePlan {
  if (state.terminal !== null) return { kind: "stale", reason: "terminal" };
  const pending = state.pendingTimers.get(due.timerId);
  if (pending === undefined) return { kind: "stale", reason: "not_armed" };
  if (pending.setSeq !== due.setSeq || pending.fireAt !== due.fireAt) return { kind: "stale", reason: "rearmed" };
  if (pending.pausedAt !== undefined) return { kind: "stale", reason: "paused" };
  // A jittered series is due at its slot plus the slot's delay, never before.
  const dueMs = slotDueMs(state.runId, pending);
  if (options.nowMs < dueMs) return { kind: "not_due", fireAt: pending.fireAt, dueMs };
  const firedAt = isoFromMs(options.nowMs);
  if (pending.cron === undefined) {
    return {
      kind: "append",
      // Laid out directly: its three fields are always there (newTimerFired's copy of the
      // defined keys was an entries array per fire, in a burst of tens of thousands).
      events: [{ type: "TimerFired", data: { timerId: pending.timerId, scheduledFor: pending.fireAt, firedAt } }],
      firedAt,
      fired: [pending.fireAt],
      skipped: null,
      nextFireAt: null,
    };
  }
  return planCronTick(state, pending, firedAt, options);
}

function planCronTick(state: RunState, pending: PendingTimer, firedAt: string, options: FirePlanOptions): FirePlan {
  const policy = pending.misfire ?? options.misfire ?? "skip";
  const maxCatchUp = Math.max(1, options.maxCatchUp ?? DEFAULT_MAX_CATCH_UP);
  const graceMs = options.misfireGraceMs ?? DEFAULT_MISFIRE_GRACE_MS;

  // Due ticks: the armed one plus every later tick up to now, within the series' bounds (see
  // ./schedule/series-slots.ts). Only the tail is materialised: one tick more than will fire, so
  // the last skipped tick is known when there are skips.
  const tailLimit = policy === "all" ? maxCatchUp + 1 : 2;
  const nowMs = options.nowMs;
  const judgedMs = options.takenUpMs === undefined ? nowMs : Math.min(nowMs, Math.max(slotDueMs(state.runId, pending), options.takenUpMs));
  const { count, tail, newest } = dueSlots(state.runId, pending, judgedMs, tailLimit);
  const newestDueMs = slotDueMs(state.runId, pending, newest);
  const onTime = judgedMs - newestDueMs <= graceMs;
  // Taken up on time, committed late: the log says when it was taken up, for an auditor.
  const takenUpAt = onTime && nowMs - newestDueMs > graceMs ? isoFromMs(judgedMs) : undefined;

  let toFire: string[];
  if (policy === "all") toFire = tail.slice(-maxCatchUp);
  else if (policy === "latest" || onTime) toFire = [newest];
  else toFire = [];

  const skippedCount = count - toFire.length;
  const events: PlannedEvent[] = [];
  let skipped: { firstMissed: string; lastMissed: string; count: number } | null = null;
  if (skippedCount > 0) {
    const lastMissed = toFire.length === 0 ? newest : previousOf(tail, toFire[0] as string);
    skipped = { firstMissed: pending.fireAt, lastMissed, count: skippedCount };
    events.push(newTimerSkipped({ timerId: pending.timerId, ...skipped, reason: "missed" }));
  }
  for (const scheduledFor of toFire) {
    const jitteredFor = pending.jitterMs === undefined ? undefined : isoFromMs(slotDueMs(state.runId, pending, scheduledFor));
    events.push(newTimerFired({ timerId: pending.timerId, scheduledFor, firedAt, jitteredFor, takenUpAt: scheduledFor === newest ? takenUpAt : undefined }));
  }

  const next = followOn(pending, newest, count);
  if (next !== null) events.push(next);
  const nextFireAt = next?.type === "TimerSet" ? next.data.fireAt : null;
  return { kind: "append", events, firedAt, fired: toFire, skipped, nextFireAt };
}

/** The tick before `tick` in `tail` (ascending); `tail` always holds it when called. */
function previousOf(tail: readonly string[], tick: string): string {
  const index = tail.indexOf(tick);
  return tail[index - 1] ?? tick;
}
