import { availableParallelism } from "node:os";
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

const here = (path: string): string => fileURLToPath(new URL(path, import.meta.url));

/**
 * The time-boxed kill and contention scenarios: a minute or so each on any machine, so they run
 * as `npm run test:reliability` (vitest.reliability.config.ts), which CI runs after `npm test`.
 */
export const KILL_SUITES = [
  "test/integration/reliability/crash.test.ts",
  "test/integration/reliability/concurrency.test.ts",
  "test/integration/dispatch/dispatch-kill.test.ts",
] as const;

export default defineConfig({
  resolve: {
    // The package's own name, as a consumer imports it (the README's examples), points at the
    // sources, as tsconfig.json's `paths` does for tsc and tsx.
    alias: [
      { find: /^workflow-host$/, replacement: here("./src/index.ts") },
      { find: /^workflow-host\/seams$/, replacement: here("./seams/index.ts") },
      { find: /^workflow-host\/testing$/, replacement: here("./src/testing/index.ts") },
    ],
  },
  test: {
    include: ["test/**/*.test.ts"],
    // The benchmarks' smoke run is a run of bench/, not a test: `npm run test:bench-smoke`
    // (CI runs it after `npm test`) sets WORKFLOW_HOST_BENCH_SMOKE to include it.
    // The several-hosts suites start PostgreSQL and host processes: `npm run test:cluster`; the
    // kill and contention scenarios run as `npm run test:reliability`.
    exclude: ["test/cluster/**", ...KILL_SUITES, ...(process.env["WORKFLOW_HOST_BENCH_SMOKE"] === "1" ? [] : ["test/integration/bench-smoke.test.ts"])],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: "forks",
    // Most integration files wait on child processes and git, not on the CPU: two files at a
    // time even on a 2-core machine (vitest would run one there).
    maxWorkers: Math.max(2, availableParallelism() - 1),
  },
});
