/**
 * The read and write helpers take the wall clock as `clock: Clock`, like every component
 * (issue 13: one option vocabulary); the `nowMs` they took before still works, deprecated.
 * On memfs under a FakeClock.
 */
import { afterEach, describe, expect, it } from "vitest";
import { archiveEndedRuns } from "../../../src/host/archive-ended-runs.js";
import { endRun } from "../../../src/host/end-run.js";
import { listPendingTimers } from "../../../src/host/list-pending-timers.js";
import { createHarness, REPO, type Harness } from "../scheduler/harness.js";

const NOW = "2026-05-01T10:00:00.000Z";
const HOUR = 60 * 60 * 1000;

let harness: Harness | null = null;
afterEach(async () => {
  await harness?.close();
  harness = null;
});

describe("the clock option", () => {
  it("lists pending timers against the clock given, or the deprecated nowMs, and refuses neither", async () => {
    const h = (harness = await createHarness(NOW));
    await h.append("r1", { type: "TimerSet", data: { timerId: "t", fireAt: "2026-05-01T12:00:00.000Z" } });
    const byClock = await listPendingTimers(h.store, { repoId: REPO, clock: h.clock.clock });
    expect(byClock.timers.map((t) => t.dueInMs)).toEqual([2 * HOUR]);
    const byNowMs = await listPendingTimers(h.store, { repoId: REPO, nowMs: h.clock.now() + HOUR });
    expect(byNowMs.timers.map((t) => t.dueInMs)).toEqual([HOUR]);
    await expect(listPendingTimers(h.store, { repoId: REPO })).rejects.toMatchObject({ code: "config_invalid" });
  });

  it("stamps a run's end with the clock given and archives against it", async () => {
    const h = (harness = await createHarness(NOW));
    await h.append("r1", { type: "Started" });
    await endRun({ store: h.store, principal: null, repoId: REPO, runId: "r1", outcome: "completed", clock: h.clock.clock });
    expect((await h.log("r1")).at(-1)).toMatchObject({ type: "RunCompleted", at: NOW });
    await expect(endRun({ store: h.store, principal: null, repoId: REPO, runId: "r1", outcome: "completed" })).rejects.toMatchObject({ code: "config_invalid" });
    await h.clock.advance(2 * HOUR);
    const pass = await archiveEndedRuns({ store: h.store, principal: null, repoId: REPO, clock: h.clock.clock, endedRunsAfterMs: HOUR });
    expect(pass.archived).toEqual(["r1"]);
  });
});
