import { defineConfig, mergeConfig } from "vitest/config";
import base from "./vitest.config.js";

/**
 * `npm run test:cluster`: the several-hosts suites (test/cluster), each starting its own
 * PostgreSQL server, host processes and git remotes. The base config's aliases and pool, with
 * its own files (mergeConfig would append to the base's include and exclude lists, which
 * exclude exactly these suites, so those two are replaced) and one file at a time: they measure
 * nothing, but a starved machine stretches lease renewals into takeovers the tests did not plan.
 */
const { include: _include, exclude: _exclude, ...baseTest } = base.test ?? {};

export default mergeConfig(
  { ...base, test: baseTest },
  defineConfig({
    test: {
      include: ["test/cluster/**/*.test.ts"],
      testTimeout: 900_000,
      hookTimeout: 120_000,
      maxWorkers: 1,
      fileParallelism: false,
    },
  }),
);
