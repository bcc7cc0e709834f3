import { defineConfig, mergeConfig } from "vitest/config";
import base, { KILL_SUITES } from "./vitest.config.js";

/**
 * `npm run test:reliability`: the time-boxed kill and contention scenarios ({@link KILL_SUITES}):
 * a served deployment SIGKILLed 25 times while timers fall due, a dispatching host SIGKILLed 30
 * times, and 30 s of signals, pushes and fires contending for one ref. Each runs for a minute or
 * so whatever the machine, which is most of what kept `npm test` near its 10-minute budget; CI
 * runs them after it. The base config's aliases and pool, with its own files (mergeConfig would
 * append to the base's include and exclude lists, which exclude exactly these files, so those two
 * are replaced).
 */
const { include: _include, exclude: _exclude, ...baseTest } = base.test ?? {};

export default mergeConfig(
  { ...base, test: baseTest },
  defineConfig({
    test: {
      include: [...KILL_SUITES],
      testTimeout: 300_000,
    },
  }),
);
