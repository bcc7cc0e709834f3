/**
 * Crash test: `workflow-host serve` in a child process is SIGKILLed 25 times (some kills inside
 * a commit) while 2 000 timers fall due over ~5 s, a cron series ticks every second and another
 * process sets, reschedules and cancels timers; it is restarted each time. The log alone must
 * show every armed generation fired exactly once and never early, nothing for a cancelled
 * timer, every cron tick fired or skipped once, a linear history git can verify, and a ref that
 * was never seen torn. `CRASH_SEED` replays a run.
 */
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { hasGitCli } from "../../helpers/git-cli.js";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { runCrashScenario } from "./crash-scenario.js";
import { seedFromEnv } from "./prng.js";
import { killAllWatched } from "./serve-process.js";

const tempDir = useTempDirs("wfh-crash-");

beforeAll(async () => {
  expect(await hasGitCli()).toBe(true);
});

afterEach(async () => {
  await killAllWatched();
});

describe("crash safety of a served deployment", () => {
  it("loses, doubles and fires early no timer across 25 SIGKILLs of the host, some inside commits", async () => {
    const seed = seedFromEnv("CRASH_SEED");
    const report = await runCrashScenario({ root: await tempDir(), seed, log: (line) => console.info(`[crash seed ${seed}] ${line}`) });
    console.info(`[crash seed ${seed}] ${JSON.stringify({ ...report, violations: report.violations.length })}`);
    expect(report.violations, `seed ${seed}`).toEqual([]);
    expect(report.kills).toBe(25);
    expect(report.timers.fired).toBeGreaterThanOrEqual(2_000);
    expect(report.timers.cronFired).toBeGreaterThan(0);
    // How many kills land inside a commit and how many ref values the sampler sees depend on
    // the machine's speed: they are printed above, not asserted.
    expect(report.refSamples.torn).toBe(0);
  }, 300_000);
});
