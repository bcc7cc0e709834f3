/**
 * What every benchmark gets from the runner, and what it returns.
 */
import type { RepoCache } from "./repo-generator.js";
import type { BenchTable } from "./table.js";

export interface BenchContext {
  /** Small sizes, few repeats: a smoke run, figures not meaningful. */
  readonly quick: boolean;
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
