/**
 * Two series of one run, both with missed ticks, due in the same fire commit: the commit counts
 * each series' missed ticks before planning it (the count awaits), the second after the first
 * series' events were applied to the run's state. Both series' outcomes land, in one commit, at
 * consecutive seqs.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { RunEvent } from "../../../src/workflow/types.js";
import { createHarness, type Harness } from "./harness.js";

let h: Harness | undefined;

afterEach(async () => {
  await h?.close();
  h = undefined;
});

type TickData = { timerId?: string; count?: number; firstMissed?: string; fireAt?: string };
const dataOf = (e: RunEvent): TickData => (e as { data: TickData }).data;

describe("missed ticks of two series in one run", () => {
  it("are counted and planned for each series in turn, in one commit", async () => {
    // The host starts 10 minutes after both series' first tick: ten ticks each missed.
    h = await createHarness("2026-05-01T00:10:30.000Z", { misfire: "skip", misfireGraceMs: 1_000 });
    await h.rawDelta({
      "runs/z/events/1.json": JSON.stringify({ seq: 1, type: "TimerSet", data: { timerId: "a", fireAt: "2026-05-01T00:00:00.000Z", cron: "* * * * *", timezone: "UTC" } }),
      "runs/z/events/2.json": JSON.stringify({ seq: 2, type: "TimerSet", data: { timerId: "b", fireAt: "2026-05-01T00:01:00.000Z", cron: "* * * * *", timezone: "UTC" } }),
    });
    await h.scheduler.start();
    await h.clock.advance(0);
    await h.scheduler.idle();
    const log = await h.log("z");
    expect(log.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6]);
    const after = log.slice(2).map((e) => ({ type: e.type, timerId: dataOf(e).timerId, count: dataOf(e).count, fireAt: dataOf(e).fireAt }));
    // Oldest due first: a (00:00, 11 ticks up to 00:10), then b (00:01, 10 ticks); each re-armed at 00:11.
    expect(after).toEqual([
      { type: "TimerSkipped", timerId: "a", count: 11, fireAt: undefined },
      { type: "TimerSet", timerId: "a", count: undefined, fireAt: "2026-05-01T00:11:00.000Z" },
      { type: "TimerSkipped", timerId: "b", count: 10, fireAt: undefined },
      { type: "TimerSet", timerId: "b", count: undefined, fireAt: "2026-05-01T00:11:00.000Z" },
    ]);
  });
});
