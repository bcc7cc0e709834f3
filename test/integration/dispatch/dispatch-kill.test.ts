/**
 * Kill test: a child host with a consumer whose handler logs each handover (fsynced) is
 * SIGKILLed 30 times while timers fire and dispatch runs, and restarted each time (see
 * `./dispatch-kill-scenario.ts` for what is checked). `DISPATCH_KILL_SEED` replays a run.
 */
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { hasGitCli } from "../../helpers/git-cli.js";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { seedFromEnv } from "../reliability/prng.js";
import { killAllWatched } from "../reliability/serve-process.js";
import { runDispatchKillScenario } from "./dispatch-kill-scenario.js";

const tempDir = useTempDirs("wfh-dispatch-kill-");

beforeAll(async () => {
  expect(await hasGitCli()).toBe(true);
});

afterEach(async () => {
  await killAllWatched();
});

describe("dispatch across SIGKILLs", () => {
  it("hands every TimerFired over at least once, never again once recorded as done, repeating only handovers in flight at a kill", async () => {
    const seed = seedFromEnv("DISPATCH_KILL_SEED");
    const report = await runDispatchKillScenario({ root: await tempDir(), seed, log: (line) => console.info(`[dispatch-kill seed ${seed}] ${line}`) });
    expect(report.violations, `seed ${seed}`).toEqual([]);
    expect(report.kills).toBeGreaterThanOrEqual(30);
    expect(report.fired).toBe(300);
    expect(report.parked).toBe(3);
    expect(report.handovers).toBeGreaterThanOrEqual(300);
  }, 400_000);
});
