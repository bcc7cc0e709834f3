/**
 * Small statistics and timing helpers for the benchmarks. Figures are summarised by medians
 * and nearest-rank percentiles, which a few outliers on a shared, noisy machine cannot drag.
 */
import { readFileSync } from "node:fs";
import { monitorEventLoopDelay, performance } from "node:perf_hooks";

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

/** CPU time (ms) of the whole process: every thread, user and system. */
export function processCpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1_000;
}

/**
 * A fire phase split into commits, from the scheduler's `fired` reports: a report naming a new
 * commit closes the span before it. Per commit: wall time, the process's CPU time and the main
 * thread's (ms), and how many fires it carried. The first span runs from {@link start}.
 */
export class CommitTimings {
  readonly wallMs: number[] = [];
  readonly cpuMs: number[] = [];
  readonly mainCpuMs: number[] = [];
  readonly batches: number[] = [];
  #sha = "";
  #wall = 0;
  #cpu = 0;
  #main = 0;

  /**
   * Marks the start of the fire phase (the first commit's span).
   * @param atMs when it starts on {@link nowMs}'s clock (default now): a due instant still ahead
   */
  start(atMs = nowMs()): void {
    this.#wall = atMs;
    this.#cpu = processCpuMs();
    this.#main = mainThreadCpuMs();
  }

  /** One fire reported as committed in `commitSha`. */
  fired(commitSha: string): void {
    if (commitSha !== this.#sha) {
      const wall = nowMs();
      const cpu = processCpuMs();
      const main = mainThreadCpuMs();
      this.wallMs.push(wall - this.#wall);
      this.cpuMs.push(cpu - this.#cpu);
      this.mainCpuMs.push(main - this.#main);
      this.batches.push(0);
      this.#wall = wall;
      this.#cpu = cpu;
      this.#main = main;
      this.#sha = commitSha;
    }
    this.batches[this.batches.length - 1] = (this.batches[this.batches.length - 1] as number) + 1;
  }
}

/** How long the event loop was held at a stretch while some work ran, in ms. */
export interface LoopHolds {
  /** The event-loop delay histogram's max (1 ms resolution). */
  readonly loopDelayMaxMs: number;
  /** The histogram's 99th percentile. */
  readonly loopDelayP99Ms: number;
  /** The longest gap between two ticks of a 1 ms interval, the last one up to the stop. */
  readonly longestGapMs: number;
}

/**
 * Starts watching the event loop for the work that follows: what a host's fire loop would wait
 * behind it. Call the returned function once the work is done.
 */
export function watchLoopHolds(): () => LoopHolds {
  const delay = monitorEventLoopDelay({ resolution: 1 });
  delay.enable();
  let lastTick = performance.now();
  let longestGapMs = 0;
  const ticker = setInterval(() => {
    const at = performance.now();
    longestGapMs = Math.max(longestGapMs, at - lastTick);
    lastTick = at;
  }, 1);
  return () => {
    clearInterval(ticker);
    longestGapMs = Math.max(longestGapMs, performance.now() - lastTick);
    delay.disable();
    return { loopDelayMaxMs: delay.max / 1e6, loopDelayP99Ms: delay.percentile(99) / 1e6, longestGapMs };
  };
}
