/**
 * The story of one series in a run's log, for `schedule describe` and `runs show`: every fire
 * (scheduled, manual, backfill) with its lateness, every skipped stretch with its reason,
 * pauses, and how it ended. Pure; events in seq order.
 */
import type { RunEvent } from "../types.js";

export interface SeriesFire {
  readonly seq: number;
  readonly scheduledFor: string | null;
  readonly firedAt: string | null;
  /** firedAt − (jitteredFor ?? scheduledFor), ms; null when either is unknown. */
  readonly latenessMs: number | null;
  readonly kind: "scheduled" | "manual" | "backfill";
  readonly requestId?: string;
  readonly jitteredFor?: string;
}

export interface SeriesSkip {
  readonly seq: number;
  readonly reason: string;
  readonly firstMissed: string;
  readonly lastMissed: string;
  readonly count: number;
}

export interface SeriesHistory {
  readonly fires: readonly SeriesFire[];
  readonly skips: readonly SeriesSkip[];
  /** Pause stretches: the SchedulePaused seq and `at`, and the ScheduleResumed seq (null while paused). */
  readonly pauses: readonly { readonly seq: number; readonly at: string | null; readonly reason?: string; readonly resumedSeq: number | null }[];
  /** The event that ended the series (ScheduleEnded, TimerCancelled, terminal), or null. */
  readonly end: { readonly seq: number; readonly type: string; readonly reason: string | null } | null;
}

/** Folds the run's events for `timerId` (see the module comment). */
export function seriesHistory(events: Iterable<RunEvent>, timerId: string): SeriesHistory {
  const fires: SeriesFire[] = [];
  const skips: SeriesSkip[] = [];
  const pauses: { seq: number; at: string | null; reason?: string; resumedSeq: number | null }[] = [];
  let end: SeriesHistory["end"] = null;
  for (const event of events) {
    const d = (event as { data?: Record<string, unknown> }).data;
    if (d?.["timerId"] !== timerId) {
      if (event.type === "RunCompleted" || event.type === "RunFailed" || event.type === "RunCancelled") end = { seq: event.seq, type: event.type, reason: null };
      continue;
    }
    const str = (k: string): string | null => (typeof d[k] === "string" ? (d[k] as string) : null);
    switch (event.type) {
      case "TimerSet":
        end = null;
        break;
      case "TimerFired":
        fires.push(fireOf(event.seq, d));
        break;
      case "TimerSkipped":
        skips.push({ seq: event.seq, reason: str("reason") ?? "missed", firstMissed: str("firstMissed") ?? "", lastMissed: str("lastMissed") ?? "", count: d["count"] as number });
        break;
      case "SchedulePaused":
        pauses.push({ seq: event.seq, at: typeof event["at"] === "string" ? event["at"] : null, ...(str("reason") === null ? {} : { reason: str("reason") as string }), resumedSeq: null });
        break;
      case "ScheduleResumed": {
        const open = pauses.at(-1);
        if (open !== undefined && open.resumedSeq === null) open.resumedSeq = event.seq;
        break;
      }
      case "ScheduleEnded":
      case "TimerCancelled":
        end = { seq: event.seq, type: event.type, reason: str("reason") };
        break;
      default:
    }
  }
  return { fires, skips, pauses, end };
}

/** A `TimerFired`'s data as a {@link SeriesFire}. */
function fireOf(seq: number, d: Record<string, unknown>): SeriesFire {
  const str = (k: string): string | null => (typeof d[k] === "string" ? (d[k] as string) : null);
  const scheduledFor = str("scheduledFor");
  const firedAt = str("firedAt");
  const due = str("jitteredFor") ?? scheduledFor;
  return {
    seq,
    scheduledFor,
    firedAt,
    latenessMs: due === null || firedAt === null ? null : Date.parse(firedAt) - Date.parse(due),
    kind: d["manual"] === true ? "manual" : d["backfill"] === true ? "backfill" : "scheduled",
    ...(str("requestId") === null ? {} : { requestId: str("requestId") as string }),
    ...(str("jitteredFor") === null ? {} : { jitteredFor: str("jitteredFor") as string }),
  };
}

/** What a list of series shows of each one's story (see {@link seriesMarks}). */
export interface SeriesMarks {
  /** The reason of the pause in force (the last `SchedulePaused` not followed by a `ScheduleResumed`), or null. */
  readonly pauseReason: string | null;
  /** The last `TimerFired` of the series (scheduled, manual or backfill), or null. */
  readonly lastFire: SeriesFire | null;
}

/**
 * Every timer's {@link SeriesMarks} in one pass over a run's events (seq order), for a list of
 * series: `seriesHistory` per series would read the log once per series. Timers with nothing to
 * mark are absent.
 */
export function seriesMarks(events: Iterable<RunEvent>): Map<string, SeriesMarks> {
  const marks = new Map<string, { pauseReason: string | null; lastFire: SeriesFire | null }>();
  const of = (timerId: string) => {
    let m = marks.get(timerId);
    if (m === undefined) marks.set(timerId, (m = { pauseReason: null, lastFire: null }));
    return m;
  };
  for (const event of events) {
    const d = (event as { data?: Record<string, unknown> }).data;
    const timerId = d?.["timerId"];
    if (d === undefined || typeof timerId !== "string") continue;
    if (event.type === "TimerFired") of(timerId).lastFire = fireOf(event.seq, d);
    else if (event.type === "SchedulePaused") of(timerId).pauseReason = typeof d["reason"] === "string" ? d["reason"] : null;
    else if (event.type === "ScheduleResumed") of(timerId).pauseReason = null;
  }
  return marks;
}
