/**
 * Schedule controls on the fake clock, each with a scheduler restart between steps: pause and
 * resume, trigger now, backfill, bounds (endAt, maxTicks, startAt) and jitter.
 */
import { afterEach, describe, expect, it } from "vitest";
import { createScheduleControls, type ScheduleControls } from "../../../seams/scheduler/schedule-controls.js";
import { nextTick } from "../../../src/workflow/cron.js";
import { jitterDelayMs } from "../../../src/workflow/schedule/jitter.js";
import type { RunEvent } from "../../../src/workflow/types.js";
import { createHarness, firedOf, ofType, REPO, type Harness } from "../scheduler/harness.js";

/** Asserts that `fn` rejects with a WorkflowHostError of this `code`. */
async function expectCode(fn: () => Promise<unknown>, code: string): Promise<void> {
  await expect(fn()).rejects.toMatchObject({ name: "WorkflowHostError", code });
}

const MIN = 60_000;
const HOUR = 60 * MIN;
const START = "2026-05-01T10:00:00.000Z";
let h: Harness | undefined;

afterEach(async () => {
  await h?.close();
  h = undefined;
});

async function setup(data: Record<string, unknown>, runId = "r1"): Promise<{ h: Harness; c: ScheduleControls }> {
  h = await createHarness(START, { discoverEveryMs: 24 * HOUR });
  const cron = data["cron"] as string;
  await h.append(runId, { type: "TimerSet", data: { timerId: "s", fireAt: nextTick(cron, "UTC", START), ...data } });
  await h.scheduler.start();
  return { h, c: createScheduleControls({ store: h.store, principal: null, clock: h.clock.clock }) };
}

async function advance(harness: Harness, ms: number): Promise<void> {
  await harness.clock.advance(ms);
  await harness.scheduler.idle();
}

function dataOf(e: RunEvent): Record<string, unknown> {
  return (e as unknown as { data: Record<string, unknown> }).data;
}

function scheduled(log: readonly RunEvent[]): string[] {
  return ofType(log, "TimerFired")
    .filter((e) => dataOf(e)["manual"] !== true && dataOf(e)["backfill"] !== true)
    .map((e) => dataOf(e)["scheduledFor"] as string);
}

describe("pause and resume", () => {
  it("fires nothing while paused and records one skip per pause stretch, across restarts", async () => {
    const { h, c } = await setup({ cron: "*/5 * * * *" });
    await advance(h, 6 * MIN); // 10:06, fired 10:05
    expect((await c.pause(REPO, "r1", "s", { reason: "maintenance" })).outcome).toBe("paused");
    expect(await c.pause(REPO, "r1", "s")).toEqual({ outcome: "already_paused", commitSha: null });
    await h.restart();
    await advance(h, 30 * MIN); // 10:36
    expect(scheduled(await h.log("r1"))).toEqual(["2026-05-01T10:05:00.000Z"]);
    expect(h.scheduler.queuedTimers()).toEqual([]);
    await h.restart();
    const resumed = await c.resume(REPO, "r1", "s");
    expect(resumed).toMatchObject({ outcome: "resumed", skipped: 6 });
    await h.restart();
    await advance(h, 10 * MIN); // 10:46: 10:40 and 10:45 fire
    await c.pause(REPO, "r1", "s");
    await advance(h, 12 * MIN); // 10:58: 10:50, 10:55 due while paused
    await h.restart();
    await c.resume(REPO, "r1", "s");
    await advance(h, 3 * MIN); // 11:01: 11:00 fires
    const log = await h.log("r1");
    expect(scheduled(log)).toEqual(["2026-05-01T10:05:00.000Z", "2026-05-01T10:40:00.000Z", "2026-05-01T10:45:00.000Z", "2026-05-01T11:00:00.000Z"]);
    const skips = ofType(log, "TimerSkipped").map(dataOf);
    expect(skips).toEqual([
      { timerId: "s", firstMissed: "2026-05-01T10:10:00.000Z", lastMissed: "2026-05-01T10:35:00.000Z", count: 6, reason: "paused" },
      { timerId: "s", firstMissed: "2026-05-01T10:50:00.000Z", lastMissed: "2026-05-01T10:55:00.000Z", count: 2, reason: "paused" },
    ]);
    expect(ofType(log, "SchedulePaused")).toHaveLength(2);
    expect(ofType(log, "ScheduleResumed")).toHaveLength(2);
  });

  it("drops a queued tick when the pause is committed while the scheduler runs", async () => {
    const { h, c } = await setup({ cron: "0 * * * *" });
    expect(h.scheduler.queuedTimers()).toHaveLength(1);
    await c.pause(REPO, "r1", "s");
    await h.scheduler.idle();
    await advance(h, 3 * HOUR);
    expect(scheduled(await h.log("r1"))).toEqual([]);
    expect(h.scheduler.queuedTimers()).toEqual([]);
    expect((await c.list(REPO))[0]).toMatchObject({ timerId: "s", paused: true, nextAt: "2026-05-01T11:00:00.000Z" });
  });

  it("resume with catchUp leaves the stretch to the misfire policy (latest fires the newest slot once)", async () => {
    const { h, c } = await setup({ cron: "0 * * * *", misfire: "latest" });
    await c.pause(REPO, "r1", "s");
    await advance(h, 3 * HOUR + 30 * MIN); // 13:30
    await h.restart();
    expect((await c.resume(REPO, "r1", "s", { catchUp: true })).skipped).toBe(0);
    await advance(h, 1);
    const log = await h.log("r1");
    expect(scheduled(log)).toEqual(["2026-05-01T13:00:00.000Z"]);
    expect(ofType(log, "TimerSkipped").map(dataOf)).toEqual([{ timerId: "s", firstMissed: "2026-05-01T11:00:00.000Z", lastMissed: "2026-05-01T12:00:00.000Z", count: 2, reason: "missed" }]);
  });

  it("refuses a control on a series that is not armed", async () => {
    const { c } = await setup({ cron: "0 * * * *" });
    await expectCode(() => c.pause(REPO, "r1", "nope"), "schedule_not_found");
    await expectCode(() => c.trigger(REPO, "r2", "s", "q"), "schedule_not_found");
  });
});

describe("trigger now", () => {
  it("fires once per requestId, distinguishable from a slot, and never moves the next slot", async () => {
    const { h, c } = await setup({ cron: "0 * * * *" });
    await advance(h, 30 * MIN); // 10:30
    const first = await c.trigger(REPO, "r1", "s", "req-1");
    expect(first).toMatchObject({ outcome: "triggered", firedAt: "2026-05-01T10:30:00.000Z" });
    await h.restart();
    await advance(h, 5 * MIN); // 10:35
    // A retry answers the first fire's firedAt (not null, not now), and writes nothing.
    expect(await c.trigger(REPO, "r1", "s", "req-1")).toEqual({ outcome: "duplicate", firedAt: "2026-05-01T10:30:00.000Z", commitSha: null });
    expect(h.scheduler.queuedTimers().map((t) => t.fireAt)).toEqual(["2026-05-01T11:00:00.000Z"]);
    await h.restart();
    await advance(h, 26 * MIN); // 11:01
    const log = await h.log("r1");
    const manual = ofType(log, "TimerFired").filter((e) => dataOf(e)["manual"] === true).map(dataOf);
    expect(manual).toEqual([{ timerId: "s", scheduledFor: "2026-05-01T10:30:00.000Z", firedAt: "2026-05-01T10:30:00.000Z", manual: true, requestId: "req-1" }]);
    expect(scheduled(log)).toEqual(["2026-05-01T11:00:00.000Z"]);
    expect(dataOf(ofType(log, "TimerSet").at(-1) as RunEvent)["fireAt"]).toBe("2026-05-01T12:00:00.000Z");
  });
});

describe("trigger now, concurrently", () => {
  it("fires once when the same requestId is sent several times at once", async () => {
    const { h, c } = await setup({ cron: "0 * * * *" });
    const results = await Promise.all([1, 2, 3, 4].map(() => c.trigger(REPO, "r1", "s", "req-7")));
    expect(results.map((r) => r.outcome).sort()).toEqual(["duplicate", "duplicate", "duplicate", "triggered"]);
    expect(ofType(await h.log("r1"), "TimerFired")).toHaveLength(1);
  });
});

describe("backfill", () => {
  it("fires each past slot once, however often the range is backfilled", async () => {
    const { h, c } = await setup({ cron: "0 * * * *" });
    const one = await c.backfill(REPO, "r1", "s", { from: "2026-05-01T05:00:00Z", to: "2026-05-01T09:00:00Z" });
    expect(one.fired).toEqual(["05", "06", "07", "08", "09"].map((hh) => `2026-05-01T${hh}:00:00.000Z`));
    await h.restart();
    const two = await c.backfill(REPO, "r1", "s", { from: "2026-05-01T03:00:00Z", to: "2026-05-01T09:30:00Z" });
    expect(two.fired).toEqual(["2026-05-01T03:00:00.000Z", "2026-05-01T04:00:00.000Z"]);
    expect(two.alreadyFired).toHaveLength(5);
    await h.restart();
    expect((await c.backfill(REPO, "r1", "s", { from: "2026-05-01T03:00:00Z", to: "2026-05-01T09:00:00Z" })).commitSha).toBeNull();
    await advance(h, HOUR);
    const log = await h.log("r1");
    const backfilled = ofType(log, "TimerFired").filter((e) => dataOf(e)["backfill"] === true).map((e) => dataOf(e)["scheduledFor"]);
    expect(backfilled.sort()).toEqual(["03", "04", "05", "06", "07", "08", "09"].map((hh) => `2026-05-01T${hh}:00:00.000Z`));
    expect(scheduled(log)).toEqual(["2026-05-01T11:00:00.000Z"]);
  });

  it("refuses a range in the future or with more than 1 000 slots, writing nothing", async () => {
    const { h, c } = await setup({ cron: "* * * * *" });
    await expectCode(() => c.backfill(REPO, "r1", "s", { from: "2026-05-01T09:00:00Z", to: "2026-05-01T12:00:00Z" }), "time_invalid");
    await expectCode(() => c.backfill(REPO, "r1", "s", { from: "2026-04-30T00:00:00Z", to: "2026-05-01T09:00:00Z" }), "backfill_too_large");
    expect(firedOf(await h.log("r1"))).toEqual([]);
  });

  it("refuses a range longer than maxTicks whole, naming where a range that fits ends and the next starts", async () => {
    const { h, c } = await setup({ cron: "0 * * * *" });
    const at = (hh: string) => `2026-05-01T${hh}:00:00.000Z`;
    const cut = c.backfill(REPO, "r1", "s", { from: at("03"), to: at("09"), maxTicks: 3 });
    await expect(cut).rejects.toMatchObject({ code: "backfill_too_large", data: { count: 7, maxTicks: 3, lastSlotWithin: at("05"), nextSlot: at("06") } });
    await expect(cut).rejects.toThrow(/backfill to 2026-05-01T05:00:00.000Z, then from 2026-05-01T06:00:00.000Z/);
    expect(firedOf(await h.log("r1"))).toEqual([]);
    // Split where it says, the range is fired whole.
    expect((await c.backfill(REPO, "r1", "s", { from: at("03"), to: at("05"), maxTicks: 3 })).fired).toEqual([at("03"), at("04"), at("05")]);
    await expect(c.backfill(REPO, "r1", "s", { from: at("06"), to: at("09"), maxTicks: 3 })).rejects.toMatchObject({ code: "backfill_too_large", data: { count: 4, nextSlot: at("09") } });
    expect((await c.backfill(REPO, "r1", "s", { from: at("06"), to: at("09"), maxTicks: 4 })).fired).toEqual([at("06"), at("07"), at("08"), at("09")]);
  });

  it("refuses a maxTicks out of 1 … 1 000 (usage) before writing, never lowering it to the ceiling", async () => {
    const { h, c } = await setup({ cron: "0 * * * *" });
    const range = { from: "2026-05-01T05:00:00Z", to: "2026-05-01T09:00:00Z" };
    for (const maxTicks of [5_000, 1_001, 0, -1, 1.5, Number.NaN]) {
      await expect(c.backfill(REPO, "r1", "s", { ...range, maxTicks })).rejects.toMatchObject({ name: "WorkflowHostError", code: "usage", data: { field: "maxTicks" } });
    }
    expect(firedOf(await h.log("r1"))).toEqual([]);
    expect((await c.backfill(REPO, "r1", "s", { ...range, maxTicks: 1_000 })).fired).toHaveLength(5);
  });

  it("takes a range that starts at the first instant of year 0000, the start of the instants' range", async () => {
    const { h, c } = await setup({ cron: "0 12 1 1 *" });
    // The search for slots started 1 ms before `from`, outside the range: time_invalid naming -62167219200001.
    const result = await c.backfill(REPO, "r1", "s", { from: "0000-01-01T00:00:00Z", to: "0001-12-31T23:59:59Z" });
    expect(result.fired).toEqual(["0000-01-01T12:00:00.000Z", "0001-01-01T12:00:00.000Z"]);
    const backfilled = ofType(await h.log("r1"), "TimerFired").filter((e) => dataOf(e)["backfill"] === true);
    expect(backfilled.map((e) => dataOf(e)["scheduledFor"])).toEqual(["0000-01-01T12:00:00.000Z", "0001-01-01T12:00:00.000Z"]);
  });
});

describe("backfill that fires nothing", () => {
  it("says why: the range is at or after the armed slot, or every slot fired already", async () => {
    const { h, c } = await setup({ cron: "0 * * * *" });
    await c.pause(REPO, "r1", "s");
    await advance(h, 3 * HOUR); // 13:00, the paused series still armed at 11:00
    const late = await c.backfill(REPO, "r1", "s", { from: "2026-05-01T11:00:00Z", to: "2026-05-01T12:30:00Z" });
    expect(late).toMatchObject({ fired: [], alreadyFired: [], commitSha: null });
    expect(late.emptyBecause).toContain("2026-05-01T11:00:00.000Z");
    const once = await c.backfill(REPO, "r1", "s", { from: "2026-05-01T09:00:00Z", to: "2026-05-01T09:30:00Z" });
    expect(once.emptyBecause).toBeNull();
    const again = await c.backfill(REPO, "r1", "s", { from: "2026-05-01T09:00:00Z", to: "2026-05-01T09:30:00Z" });
    expect(again.fired).toEqual([]);
    expect(again.emptyBecause).not.toBeNull();
  });
});

describe("sync of a large declared set", () => {
  it("refuses more than 10 000 series with config_invalid before writing anything", async () => {
    const { h, c } = await setup({ cron: "0 * * * *" });
    const before = await h.log("r1");
    const declared = Array.from({ length: 10_001 }, (_, i) => ({ runId: `run-${i}`, timerId: "t", cron: "0 * * * *" }));
    await expectCode(() => c.syncSchedules(REPO, declared), "config_invalid");
    expect(await h.log("r1")).toEqual(before);
    expect(await h.log("run-0")).toEqual([]);
  });

  it("reports each run it has written, so an interrupted sync shows how far it got", async () => {
    const { c } = await setup({ cron: "0 * * * *" });
    const seen: [number, number][] = [];
    const declared = ["a", "b", "c"].map((runId) => ({ runId, timerId: "t", cron: "0 * * * *" }));
    await c.syncSchedules(REPO, declared, { onRunWritten: (done, total) => seen.push([done, total]) });
    expect(seen).toEqual([
      [1, 3],
      [2, 3],
      [3, 3],
    ]);
  });
});

describe("bounds", () => {
  it("endAt ends the series after its last slot with a recorded reason", async () => {
    const { h } = await setup({ cron: "0 * * * *", endAt: "2026-05-01T13:00:00Z" });
    await advance(h, 90 * MIN); // 11:30
    await h.restart();
    await advance(h, 5 * HOUR);
    const log = await h.log("r1");
    expect(scheduled(log)).toEqual(["2026-05-01T11:00:00.000Z", "2026-05-01T12:00:00.000Z", "2026-05-01T13:00:00.000Z"]);
    expect(ofType(log, "ScheduleEnded").map(dataOf)).toEqual([{ timerId: "s", reason: "endAt", lastTick: "2026-05-01T13:00:00.000Z" }]);
    expect(h.scheduler.queuedTimers()).toEqual([]);
  });

  it("maxTicks ends the series after that many slots, counting slots missed while down", async () => {
    const { h } = await setup({ cron: "0 * * * *", maxTicks: 4 });
    await advance(h, 61 * MIN); // 11:01: slot 1 fired
    await h.scheduler.stop();
    await h.clock.advance(2 * HOUR); // 13:01, host down: slots 2 (12:00) and 3 (13:00) due
    await h.restart();
    await h.scheduler.idle();
    await h.restart();
    await advance(h, 5 * HOUR);
    const log = await h.log("r1");
    // 12:00 and 13:00 were missed (misfire skip): slots 2 and 3; 14:00 is slot 4, the last.
    expect(scheduled(log)).toEqual(["2026-05-01T11:00:00.000Z", "2026-05-01T14:00:00.000Z"]);
    expect(ofType(log, "TimerSkipped").map((e) => dataOf(e)["count"])).toEqual([2]);
    expect(ofType(log, "ScheduleEnded").map(dataOf)).toEqual([{ timerId: "s", reason: "maxTicks", lastTick: "2026-05-01T14:00:00.000Z" }]);
  });

  it("refuses a TimerSet whose fireAt is outside its bounds, or bounds on a one-shot", async () => {
    h = await createHarness(START);
    await expectCode(() => h!.append("r1", { type: "TimerSet", data: { timerId: "s", fireAt: "2026-05-01T11:00:00Z", cron: "0 * * * *", endAt: "2026-05-01T10:30:00Z" } }), "event_invalid");
    await expectCode(() => h!.append("r1", { type: "TimerSet", data: { timerId: "s", fireAt: "2026-05-01T11:00:00Z", cron: "0 * * * *", startAt: "2026-05-01T12:00:00Z" } }), "event_invalid");
    await expectCode(() => h!.append("r1", { type: "TimerSet", data: { timerId: "s", fireAt: "2026-05-01T11:00:00Z", maxTicks: 3 } }), "event_invalid");
  });
});

describe("jitter", () => {
  async function jittered(restartEveryHour: boolean): Promise<RunEvent[]> {
    const { h } = await setup({ cron: "0 * * * *", jitterMs: 20 * MIN });
    for (let i = 0; i < 6; i += 1) {
      await advance(h, HOUR);
      if (restartEveryHour) await h.restart();
    }
    const log = await h.log("r1");
    await h.close();
    return log;
  }

  it("fires each slot at slot + its derived delay, never before, identically after restarts", async () => {
    const steady = await jittered(false);
    h = undefined;
    const restarted = await jittered(true);
    h = undefined;
    const view = (log: RunEvent[]) => ofType(log, "TimerFired").map((e) => ({ scheduledFor: dataOf(e)["scheduledFor"], jitteredFor: dataOf(e)["jitteredFor"] }));
    expect(view(restarted)).toEqual(view(steady));
    const fires = ofType(steady, "TimerFired").map(dataOf);
    expect(fires.length).toBeGreaterThanOrEqual(5);
    for (const f of fires) {
      const slot = f["scheduledFor"] as string;
      const delay = jitterDelayMs("r1", "s", slot, 20 * MIN, HOUR);
      expect(Date.parse(f["jitteredFor"] as string)).toBe(Date.parse(slot) + delay);
      expect(Date.parse(f["firedAt"] as string)).toBeGreaterThanOrEqual(Date.parse(f["jitteredFor"] as string));
    }
    expect(new Set(fires.map((f) => Date.parse(f["jitteredFor"] as string) - Date.parse(f["scheduledFor"] as string))).size).toBeGreaterThan(1);
  });

  it("does not fire at the slot itself when the slot's delay has not passed", async () => {
    const delay = jitterDelayMs("r1", "s", "2026-05-01T11:00:00.000Z", 20 * MIN, HOUR);
    expect(delay).toBeGreaterThan(0);
    const { h } = await setup({ cron: "0 * * * *", jitterMs: 20 * MIN });
    await advance(h, HOUR + delay - 1);
    await h.restart();
    await advance(h, 0);
    expect(firedOf(await h.log("r1"))).toEqual([]);
    await advance(h, 1);
    expect(firedOf(await h.log("r1")).map((f) => f.firedAt)).toEqual([new Date(Date.parse("2026-05-01T11:00:00.000Z") + delay).toISOString()]);
  });
});
