/**
 * Deterministic jitter of a cron series: each slot's delay is derived from the run, the timer
 * and the slot's instant, so every host and every restart computes the same delay, and a
 * tick is never released before `scheduledFor + delay`. Pure.
 *
 * Rule: delay = FNV-1a-32(`runId \0 timerId \0 slotIso`) mod (cap + 1), where cap is
 * `jitterMs`, lowered to 1 ms less than the gap to the next slot, so a spread never reorders
 * slots nor lets a slot be released after the next one is due.
 */
import { compileCron, firstTickAfter } from "../cron.js";
import type { PendingTimer } from "../types.js";

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

/** The last slot {@link slotDueMs} read, and its epoch ms (NaN for an unreadable one). */
let lastSlotIso = "";
let lastSlotMs = Number.NaN;

function fnv1a32(text: string): number {
  let hash = FNV_OFFSET;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, FNV_PRIME) >>> 0;
  }
  return hash >>> 0;
}

/**
 * The delay of one slot.
 * @param jitterMs - most delay (ms, 0 … 86 400 000); 0 gives 0
 * @param gapMs - ms from this slot to the next one (Infinity when there is none)
 * @returns an integer in 0 … min(jitterMs, gapMs - 1)
 */
export function jitterDelayMs(runId: string, timerId: string, slotIso: string, jitterMs: number, gapMs = Number.POSITIVE_INFINITY): number {
  const cap = Math.max(0, Math.min(jitterMs, gapMs - 1));
  if (cap === 0) return 0;
  return fnv1a32(`${runId}\u0000${timerId}\u0000${slotIso}`) % (cap + 1);
}

/**
 * When a slot of `timer` is due: the slot itself, plus its jitter for a jittered series.
 * @param slotIso - the slot (default the armed tick, `timer.fireAt`)
 * @returns epoch ms, never before the slot
 */
export function slotDueMs(runId: string, timer: PendingTimer, slotIso: string = timer.fireAt): number {
  // A burst's timers share their instant: read once, not once per fire (Date.parse is a call
  // into the runtime, ~0.3 µs).
  if (slotIso !== lastSlotIso) {
    lastSlotMs = Date.parse(slotIso);
    lastSlotIso = slotIso;
  }
  const slotMs = lastSlotMs;
  if (timer.jitterMs === undefined || timer.jitterMs === 0 || timer.cron === undefined) return slotMs;
  let gapMs = Number.POSITIVE_INFINITY;
  try {
    const next = firstTickAfter(compileCron(timer.cron, timer.timezone ?? "UTC"), slotMs);
    if (next !== null) gapMs = next - slotMs;
  } catch {
    // An uncompilable series is reported by the planner; no spread for it.
    return slotMs;
  }
  return slotMs + jitterDelayMs(runId, timer.timerId, slotIso, timer.jitterMs, gapMs);
}
