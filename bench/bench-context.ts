/**
 * What every benchmark gets from the runner, and what it returns.
 */
import type { RepoCache } from "./repo-generator.js";
import type { BenchTable } from "./table.js";

export interface BenchContext {
  /** Small sizes, few repeats: a smoke run, figures not meaningful. */
  readonly quick: boolean;
  /**
   * Also run the 1,000,000-pending-timer rows (memory, restart): minutes each, so only with
   * `--huge`; the default full run stops at 100,000.
   */
  readonly huge: boolean;
  readonly cache: RepoCache;
  /** Progress output (stderr), so stdout holds only the tables. */
  log(message: string): void;
}

export interface Benchmark {
  /** `--only <name>` selects it. */
  readonly name: string;
  run(ctx: BenchContext): Promise<BenchTable>;
}

/** A fixed instant far from the bench's real time: pending timers are due around it. */
export const BASE_MS = Date.parse("2030-01-01T00:00:00.000Z");
