/**
 * Preview: the next slots of a series, or of a cron expression before it is set, in UTC and in
 * the series' own zone. Pure (the caller passes "now").
 */
import { WorkflowHostError } from "../../errors.js";
import { compileCron, firstTickAfter, validateCron } from "../cron.js";
import { isoFromMs, parseInstant } from "../time.js";
import { DEFAULT_TIME_ZONE, zoneOffsetSec } from "../time-zone.js";
import type { PendingTimer } from "../types.js";
import { slotDueMs } from "./jitter.js";

/** Most slots one preview lists. */
export const MAX_PREVIEW_TICKS = 1_000;

export interface PreviewTick {
  /** 1-based position in the series when it counts slots (`maxTicks`), else in this preview. */
  readonly slot: number;
  /** The slot in UTC (RFC 3339, ms). */
  readonly utc: string;
  /** The same instant in the series' zone, with its offset (`2026-03-29T03:00:00+02:00`). */
  readonly local: string;
  /** For a jittered series: when the slot is released (utc + the slot's delay). */
  readonly jitteredFor?: string;
}

export interface PreviewSpec {
  readonly cron: string;
  /** IANA zone (default "UTC"). */
  readonly timezone?: string;
  /** List slots strictly after this instant (RFC 3339). */
  readonly after: string;
  /** How many (1 … 1 000). */
  readonly count: number;
  readonly startAt?: string;
  readonly endAt?: string;
  readonly maxTicks?: number;
}

/** An instant in a zone's wall time with its offset, to the second (ms when not 0). */
export function localIso(ms: number, zone: string): string {
  const offsetSec = zoneOffsetSec(zone, Math.floor(ms / 1000));
  const wall = new Date(ms + offsetSec * 1000).toISOString().slice(0, -1);
  const text = wall.endsWith(".000") ? wall.slice(0, -4) : wall;
  const sign = offsetSec < 0 ? "-" : "+";
  const abs = Math.abs(offsetSec);
  const hh = String(Math.floor(abs / 3600)).padStart(2, "0");
  const mm = String(Math.floor((abs % 3600) / 60)).padStart(2, "0");
  return `${text}${sign}${hh}:${mm}`;
}

/**
 * The next `count` slots of an expression, within its bounds.
 * @throws `cron_invalid` (expression, zone), `time_invalid` (after, startAt, endAt, startAt after
 *   endAt, count out of 1 … 1 000)
 */
export function previewCron(spec: PreviewSpec): PreviewTick[] {
  const { cron, timezone } = validateCron(spec.cron, spec.timezone ?? DEFAULT_TIME_ZONE);
  let afterMs = Date.parse(parseInstant(spec.after, "after"));
  const startMs = spec.startAt === undefined ? Number.NEGATIVE_INFINITY : Date.parse(parseInstant(spec.startAt, "startAt"));
  const endMs = spec.endAt === undefined ? Number.POSITIVE_INFINITY : Date.parse(parseInstant(spec.endAt, "endAt"));
  // Bounds that leave no instant are a slip in the bounds, not a series without slots.
  if (startMs > endMs) {
    throw new WorkflowHostError("time_invalid", `startAt ${String(spec.startAt)} is after endAt ${String(spec.endAt)}; allowed: startAt <= endAt`, { startAt: spec.startAt, endAt: spec.endAt });
  }
  if (spec.startAt !== undefined) afterMs = Math.max(afterMs, startMs - 1);
  const limit = checkCount(spec.count);
  const compiled = compileCron(cron, timezone);
  const out: PreviewTick[] = [];
  let cursor = firstTickAfter(compiled, afterMs);
  while (cursor !== null && cursor <= endMs && out.length < limit && (spec.maxTicks === undefined || out.length < spec.maxTicks)) {
    out.push({ slot: out.length + 1, utc: isoFromMs(cursor), local: localIso(cursor, timezone) });
    cursor = firstTickAfter(compiled, cursor);
  }
  return out;
}

/**
 * The next `count` slots of an armed series, from its armed slot on (within its bounds, its
 * slot numbers continued, jittered instants included).
 */
export function previewSeries(runId: string, pending: PendingTimer, count: number): PreviewTick[] {
  const limit = checkCount(count);
  const zone = pending.timezone ?? DEFAULT_TIME_ZONE;
  if (pending.cron === undefined) return [];
  const compiled = compileCron(pending.cron, zone);
  const endMs = pending.endAt === undefined ? Number.POSITIVE_INFINITY : Date.parse(pending.endAt);
  const out: PreviewTick[] = [];
  let slot = pending.slot ?? 1;
  let cursor: number | null = Date.parse(pending.fireAt);
  while (cursor !== null && cursor <= endMs && out.length < limit && (pending.maxTicks === undefined || slot <= pending.maxTicks)) {
    const utc = isoFromMs(cursor);
    const tick: PreviewTick = { slot: pending.maxTicks === undefined ? out.length + 1 : slot, utc, local: localIso(cursor, zone) };
    out.push(pending.jitterMs === undefined ? tick : { ...tick, jitteredFor: isoFromMs(slotDueMs(runId, pending, utc)) });
    slot += 1;
    cursor = firstTickAfter(compiled, cursor);
  }
  return out;
}

function checkCount(count: number): number {
  if (!Number.isSafeInteger(count) || count < 1 || count > MAX_PREVIEW_TICKS) {
    throw new WorkflowHostError("time_invalid", `preview count ${String(count)} is out of range; allowed: 1 … ${MAX_PREVIEW_TICKS}`, { field: "count", value: count });
  }
  return count;
}
