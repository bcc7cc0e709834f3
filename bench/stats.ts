/**
 * Small statistics and timing helpers for the benchmarks. Figures are summarised by medians
 * and nearest-rank percentiles, which a few outliers on a shared, noisy machine cannot drag.
 */
import { readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";

/** Milliseconds since an arbitrary origin, with sub-millisecond resolution (monotonic). */
export function nowMs(): number {
  return performance.now();
}

/** The nearest-rank percentile `p` (0..100) of `values`; NaN for an empty list. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1] as number;
}

/** The median of `values` (mean of the middle two for an even count); NaN when empty. */
export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

/** The largest of `values`; NaN when empty. */
export function maxOf(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  let max = Number.NEGATIVE_INFINITY;
  for (const v of values) if (v > max) max = v;
  return max;
}

/** Resolves after `ms` milliseconds of real time. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * CPU time (ms) of the main thread alone (Linux: its /proc stat, 10 ms ticks), or NaN where
 * /proc is missing. `process.cpuUsage()` also counts the garbage collector's helpers, the thread
 * pool's file writes and flushes, and pack merging on its worker thread.
 */
export function mainThreadCpuMs(): number {
  try {
    const stat = readFileSync(`/proc/self/task/${process.pid}/stat`, "latin1");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return ((Number(fields[11]) + Number(fields[12])) * 1_000) / 100;
  } catch {
    return Number.NaN;
  }
}
