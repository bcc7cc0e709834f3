import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

const here = (path: string): string => fileURLToPath(new URL(path, import.meta.url));

/**
 * `npm run test:cluster`: the several-hosts suites (test/cluster), each starting its own
 * PostgreSQL server, host processes and git remotes. One file at a time: they measure nothing,
 * but a starved machine stretches lease renewals into takeovers the tests did not plan.
 */
export default defineConfig({
  resolve: {
    alias: [
      { find: /^workflow-host$/, replacement: here("./src/index.ts") },
      { find: /^workflow-host\/seams$/, replacement: here("./seams/index.ts") },
      { find: /^workflow-host\/testing$/, replacement: here("./src/testing/index.ts") },
    ],
  },
  test: {
    include: ["test/cluster/**/*.test.ts"],
    testTimeout: 900_000,
    hookTimeout: 120_000,
    pool: "forks",
    maxWorkers: 1,
    fileParallelism: false,
  },
});
