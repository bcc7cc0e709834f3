/**
 * Group commit (`minCommitIntervalMs`): fire commits of one deployment start at least the
 * interval apart in real time; timers that come due in between go out together; a timer on a
 * quiet deployment is not held back. Only lower bounds on real time are asserted, never upper
 * ones tighter than seconds (machines here are shared and noisy).
 */
import { afterEach, describe, expect, it } from "vitest";
import { createWorkflowHostScheduler } from "../../../seams/scheduler.js";
import type { SchedulerEvent } from "../../../seams/scheduler-types.js";
import { expectCode } from "../../helpers/expect-code.js";
import { createHarness, firedOf, type Harness } from "./harness.js";

let h: Harness | undefined;

afterEach(async () => {
  await h?.close();
  h = undefined;
});

const START = "2026-03-01T00:00:00.000Z";
const at = (ms: number): string => new Date(Date.parse(START) + ms).toISOString();

/** Real time (performance.now()) of each `fired` report, by timer id. */
function firedTimes(events: readonly SchedulerEvent[], seen: Map<string, number>): void {
  for (const event of events) {
    if (event.type === "fired" && !seen.has(event.timerId)) seen.set(event.timerId, performance.now());
  }
}

async function setUp(intervalMs: number): Promise<{ harness: Harness; times: Map<string, number> }> {
  const harness = await createHarness(START, { minCommitIntervalMs: intervalMs });
  const times = new Map<string, number>();
  const events = harness.events;
  const push = events.push.bind(events);
  // Stamp each report as it arrives, not when the test looks.
  events.push = (...items: SchedulerEvent[]): number => {
    const n = push(...items);
    firedTimes(items, times);
    return n;
  };
  for (const [runId, timerId, ms] of [["r1", "a", 1_000], ["r2", "b", 1_001], ["r3", "c", 1_001]] as const) {
    await harness.append(runId, { type: "TimerSet", data: { timerId, fireAt: at(ms) } });
  }
  await harness.scheduler.start();
  return { harness, times };
}

describe("group commit", () => {
  it("holds timers that come due right after a commit until the interval has passed, then commits them together", async () => {
    const intervalMs = 400;
    const set = await setUp(intervalMs);
    h = set.harness;
    const commits0 = h.scheduler.stats().commits;
    const t0 = performance.now();
    await h.clock.advance(1_000); // a is due: committed at once
    await h.clock.advance(1); // b and c come due while a's commit is young
    await h.scheduler.idle();
    const { times } = set;
    expect([...times.keys()].sort()).toEqual(["a", "b", "c"]);
    // b and c went out in one commit, no sooner than the interval after a's commit started.
    expect(h.scheduler.stats().commits - commits0).toBe(2);
    expect((times.get("b") as number) - t0).toBeGreaterThanOrEqual(intervalMs);
    const shaOf = (timerId: string): string | undefined => {
      for (const e of h!.events) if (e.type === "fired" && e.timerId === timerId) return e.commitSha;
      return undefined;
    };
    expect(shaOf("c")).toBe(shaOf("b"));
    expect(shaOf("b")).not.toBe(shaOf("a"));
    for (const runId of ["r1", "r2", "r3"]) expect(firedOf(await h.log(runId))).toHaveLength(1);
  });

  it("does not hold back a timer on a deployment that has not committed for a while", async () => {
    const intervalMs = 5_000;
    const set = await setUp(intervalMs);
    h = set.harness;
    const t0 = performance.now();
    await h.clock.advance(1_000);
    await h.scheduler.idle();
    // Well under the interval: the first fire commit of the deployment does not wait.
    expect((set.times.get("a") as number) - t0).toBeLessThan(intervalMs);
  });

  it("with 0 commits back to back: every timer fires once", async () => {
    const set = await setUp(0);
    h = set.harness;
    await h.clock.advance(1_000);
    await h.clock.advance(2);
    await h.scheduler.idle();
    expect([...set.times.keys()].sort()).toEqual(["a", "b", "c"]);
  });

  it("refuses an interval that is not a number of milliseconds in 0 … 60000", async () => {
    h = await createHarness(START);
    for (const bad of [-1, Number.NaN, Number.POSITIVE_INFINITY, 60_001, "8" as unknown as number]) {
      expectCode(() => createWorkflowHostScheduler({ repoStore: h!.store, principal: null, listActiveDeployments: () => [], clock: h!.clock.clock, minCommitIntervalMs: bad }), "time_invalid");
    }
  });
});
