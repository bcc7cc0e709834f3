/**
 * A cron tick the host's queue delivered on time is not a misfire because the fire commits ahead
 * of it were slow: the skip policy is for ticks missed while no host ran (or across a clock jump).
 * Each commit here takes 700 ms of wall time (the wall clock is moved inside it), one timer per
 * commit, so the tick due with three one-shots is committed more than the 1 s grace after it.
 * Its TimerFired records when the host took it up, so the log alone tells it from a misfire.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { RepoStore } from "../../../src/substrate/index.js";
import { readRunLogFromFiles } from "../../../src/workflow/run-log.js";
import type { RunEvent } from "../../../src/workflow/types.js";
import { checkTimerLog } from "../../integration/reliability/timer-invariants.js";
import { createHarness, type Harness } from "./harness.js";

let h: Harness | undefined;

afterEach(async () => {
  await h?.close();
  h = undefined;
});

const DUE = "2026-05-01T00:01:00.000Z";
const GRACE_MS = 1_000;

/** Every fire commit moves the wall clock `ms` forward first, as a slow commit would. */
function slowCommits(harness: Harness, ms: number): void {
  const store = harness.store as RepoStore & { writeTreeDelta: RepoStore["writeTreeDelta"] };
  const write = store.writeTreeDelta.bind(store);
  store.writeTreeDelta = ((...args: Parameters<RepoStore["writeTreeDelta"]>) => {
    harness.clock.jump(new Date(harness.clock.now() + ms).toISOString());
    return write(...args);
  }) as RepoStore["writeTreeDelta"];
}

type FireData = { scheduledFor?: string; firedAt?: string; firstMissed?: string; takenUpAt?: string };
const dataOf = (e: RunEvent): FireData => (e as { data: FireData }).data;

function checkOne(runId: string, log: readonly RunEvent[], endMs: number): string[] {
  const files = new Map(log.map((e) => [`${e.seq}.json`, Buffer.from(JSON.stringify(e))]));
  return checkTimerLog({ runs: new Map([[runId, readRunLogFromFiles(runId, files)]]), endMs, dueGraceMs: 2_000, cronGraceMs: GRACE_MS }).violations;
}

describe("a cron tick held up behind a backlog", () => {
  it("fires late rather than being recorded as missed when the host's queue delivered it on time", async () => {
    h = await createHarness("2026-05-01T00:00:00.000Z", { maxBatch: 1, misfire: "skip", misfireGraceMs: GRACE_MS });
    await h.rawDelta({
      "runs/a1/events/1.json": JSON.stringify({ seq: 1, type: "TimerSet", data: { timerId: "t", fireAt: DUE } }),
      "runs/a2/events/1.json": JSON.stringify({ seq: 1, type: "TimerSet", data: { timerId: "t", fireAt: DUE } }),
      "runs/a3/events/1.json": JSON.stringify({ seq: 1, type: "TimerSet", data: { timerId: "t", fireAt: DUE } }),
      "runs/z/events/1.json": JSON.stringify({ seq: 1, type: "TimerSet", data: { timerId: "tick", fireAt: DUE, cron: "* * * * *", timezone: "UTC" } }),
    });
    await h.scheduler.start();
    slowCommits(h, 700);
    await h.clock.advance(60_000);
    await h.scheduler.idle();
    const log = await h.log("z");
    const outcomes = log
      .filter((e) => e.type === "TimerFired" || e.type === "TimerSkipped")
      .map((e) => ({ type: e.type, slot: dataOf(e).scheduledFor ?? dataOf(e).firstMissed }));
    expect(outcomes[0]).toEqual({ type: "TimerFired", slot: DUE });

    // The log shows why: committed past the grace, taken up within it.
    const fired = dataOf(log.find((e) => e.type === "TimerFired") as RunEvent);
    expect(Date.parse(fired.firedAt as string) - Date.parse(DUE)).toBeGreaterThan(GRACE_MS);
    expect(fired.takenUpAt).toBeDefined();
    expect(Date.parse(fired.takenUpAt as string) - Date.parse(DUE)).toBeLessThanOrEqual(GRACE_MS);
    expect(checkOne("z", log, h.clock.now())).toEqual([]);
  });

  it("still records a tick taken up past the grace (the host was down) as missed", async () => {
    h = await createHarness("2026-05-01T00:00:05.000Z", { misfire: "skip", misfireGraceMs: GRACE_MS });
    await h.rawDelta({
      "runs/z/events/1.json": JSON.stringify({ seq: 1, type: "TimerSet", data: { timerId: "tick", fireAt: "2026-05-01T00:00:00.000Z", cron: "* * * * *" } }),
    });
    await h.scheduler.start();
    await h.clock.advance(0);
    await h.scheduler.idle();
    const log = await h.log("z");
    expect(log.map((e) => e.type)).toEqual(["TimerSet", "TimerSkipped", "TimerSet"]);
  });

  it("writes no takenUpAt on a tick committed within the grace", async () => {
    h = await createHarness("2026-05-01T00:00:00.000Z", { misfire: "skip", misfireGraceMs: GRACE_MS });
    await h.rawDelta({
      "runs/z/events/1.json": JSON.stringify({ seq: 1, type: "TimerSet", data: { timerId: "tick", fireAt: DUE, cron: "* * * * *" } }),
    });
    await h.scheduler.start();
    await h.clock.advance(60_000);
    await h.scheduler.idle();
    const fired = (await h.log("z")).filter((e) => e.type === "TimerFired").map(dataOf);
    expect(fired).toHaveLength(1);
    expect(fired[0]?.takenUpAt).toBeUndefined();
  });
});
