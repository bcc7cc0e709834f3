import { afterEach, describe, expect, it } from "vitest";
import { nextBatchSize } from "../../../seams/scheduler/fire-committer.js";
import { createHarness, firedOf, type Harness } from "./harness.js";

let h: Harness | undefined;

afterEach(async () => {
  await h?.close();
  h = undefined;
});

const FIRE_AT = "2026-05-01T00:01:00.000Z";

/** `runs` runs with one timer each, all due at FIRE_AT, written in one commit. */
async function seedRuns(harness: Harness, runs: number): Promise<void> {
  const puts: Record<string, string> = {};
  for (let i = 0; i < runs; i += 1) {
    puts[`runs/r${i}/events/1.json`] = JSON.stringify({ seq: 1, type: "TimerSet", data: { timerId: "t", fireAt: FIRE_AT } });
  }
  await harness.rawDelta(puts);
}

describe("the fire batch grows with the backlog", () => {
  it("commits a backlog of 2,500 due timers in fewer than 2.5 commits, each timer fired exactly once", async () => {
    h = await createHarness("2026-05-01T00:00:00.000Z");
    await seedRuns(h, 2_500);
    await h.scheduler.start();
    await h.clock.advance(60_000);
    await h.scheduler.idle();
    expect(h.scheduler.stats().fired).toBe(2_500);
    expect(h.scheduler.stats().commits).toBeLessThan(2_500 / 1_000);
    // The first commit of a backlog is no bigger than a fixed batch was: its fires are not held back.
    const perCommit = new Map<string, number>();
    for (const e of h.events) if (e.type === "fired") perCommit.set(e.commitSha, (perCommit.get(e.commitSha) ?? 0) + 1);
    expect([...perCommit.values()]).toEqual([1_000, 1_500]);
    for (let i = 0; i < 2_500; i += 1) expect(firedOf(await h.log(`r${i}`))).toHaveLength(1);
    expect(h.scheduler.queuedTimers()).toEqual([]);
  }, 120_000);

  it("keeps maxBatch as the most timers in any commit", async () => {
    h = await createHarness("2026-05-01T00:00:00.000Z", { maxBatch: 1_500 });
    await seedRuns(h, 3_000);
    await h.scheduler.start();
    await h.clock.advance(60_000);
    await h.scheduler.idle();
    const perCommit = new Map<string, number>();
    for (const e of h.events) if (e.type === "fired") perCommit.set(e.commitSha, (perCommit.get(e.commitSha) ?? 0) + 1);
    expect([...perCommit.values()]).toEqual([1_000, 1_500, 500]);
    expect(h.scheduler.stats().fired).toBe(3_000);
  }, 120_000);

  it("sizes batches: 1,000 after an idle spell, then twice the previous, capped by maxBatch and the backlog", () => {
    expect(nextBatchSize(0, 5, 20_000)).toBe(5);
    expect(nextBatchSize(0, 50_000, 20_000)).toBe(1_000);
    expect(nextBatchSize(1_000, 50_000, 20_000)).toBe(2_000);
    expect(nextBatchSize(16_000, 50_000, 20_000)).toBe(20_000);
    expect(nextBatchSize(4, 50_000, 20_000)).toBe(1_000);
    expect(nextBatchSize(0, 50_000, 25)).toBe(25);
    const sizes: number[] = [];
    for (let left = 20_000, previous = 0; left > 0; left -= previous) sizes.push((previous = nextBatchSize(previous, left, 20_000)));
    expect(sizes).toEqual([1_000, 2_000, 4_000, 8_000, 5_000]);
  });
});
