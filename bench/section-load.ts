/**
 * The machine's load around each benchmark section. The machine these runs share has few
 * cores and other jobs; a section measured while the 1-minute load average exceeded the core
 * count competed for CPU, and its figures are marked as taken under load.
 */
import { availableParallelism, loadavg } from "node:os";
import { sleep } from "./stats.js";

/** The load averages (1, 5, 15 min) around one section. */
export interface SectionLoad {
  /** The benchmark's `--only` name. */
  readonly name: string;
  readonly before: readonly number[];
  readonly after: readonly number[];
  readonly cores: number;
  /** How long the section ran, ms. */
  readonly durationMs: number;
  /** How long the runner waited for the load to fall before starting, ms. */
  readonly waitedMs: number;
}

/** Cores the load is compared with. */
export function coreCount(): number {
  return availableParallelism();
}

/** The 1/5/15-minute load averages now. */
export function loadNow(): number[] {
  return loadavg();
}

/**
 * Whether the section ran under load: the 1-minute average before or after it exceeded the
 * core count (the average after includes the section's own processes).
 */
export function underLoad(load: SectionLoad): boolean {
  return (load.before[0] ?? 0) > load.cores || (load.after[0] ?? 0) > load.cores;
}

/**
 * Waits until the 1-minute load average is at most the core count, checking every 5 s, for
 * at most `maxWaitMs`. @returns how long it waited, ms
 */
export async function waitForCalm(maxWaitMs: number, log: (text: string) => void): Promise<number> {
  const cores = coreCount();
  let waited = 0;
  while ((loadNow()[0] ?? 0) > cores && waited < maxWaitMs) {
    if (waited === 0) log(`load ${(loadNow()[0] ?? 0).toFixed(2)} > ${cores} cores: waiting up to ${Math.round(maxWaitMs / 1_000)} s for it to fall`);
    await sleep(5_000);
    waited += 5_000;
  }
  return waited;
}

/** "1.47 / 1.78 / 2.32". */
export function formatLoad(load: readonly number[]): string {
  return load.map((l) => l.toFixed(2)).join(" / ");
}
