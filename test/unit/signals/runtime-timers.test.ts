import { afterEach, describe, expect, it } from "vitest";
import { createSignalHarness, ofType, watched, type SignalHarness } from "./harness.js";

let h: SignalHarness | undefined;

afterEach(async () => {
  await h?.close();
  h = undefined;
});

const START = "2026-03-01T09:00:00.000Z";

describe("setTimer", () => {
  it("commits one TimerSet and nothing for the same timerId and fireAt again", async () => {
    h = await createSignalHarness(START);
    const rt = h.node.runtime;
    const first = await rt.setTimer("r1", { timerId: "t1", fireAt: "2026-03-01T11:00:00+01:00" });
    expect(first).toEqual({ timerId: "t1", fireAt: "2026-03-01T10:00:00.000Z", setSeq: 1, committed: true });
    const tip = await h.tip();
    expect(await rt.setTimer("r1", { timerId: "t1", fireAt: "2026-03-01T10:00:00Z" })).toEqual({ ...first, committed: false });
    expect(await h.tip()).toBe(tip);
    const moved = await rt.setTimer("r1", { timerId: "t1", fireAt: new Date("2026-03-01T11:00:00Z") });
    expect(moved).toEqual({ timerId: "t1", fireAt: "2026-03-01T11:00:00.000Z", setSeq: 2, committed: true });
    expect(ofType(await h.log("r1"), "TimerSet")).toHaveLength(2);
  });

  it("does not arm a fired one-shot again for the same fireAt", async () => {
    h = await createSignalHarness(START);
    const rt = h.node.runtime;
    await rt.setTimer("r1", { timerId: "t1", fireAt: "2026-03-01T09:00:05Z" });
    const fired = rt.waitForTimer("r1", "t1");
    await h.node.armed("r1", "t1");
    await h.clock.advance(5_000);
    await fired;
    const tip = await h.tip();
    expect(await rt.setTimer("r1", { timerId: "t1", fireAt: "2026-03-01T09:00:05Z" })).toEqual({ timerId: "t1", fireAt: "2026-03-01T09:00:05.000Z", setSeq: 1, committed: false });
    expect(await h.tip()).toBe(tip);
  });

  it("counts delayMs from the injected clock", async () => {
    h = await createSignalHarness(START);
    const result = await h.node.runtime.setTimer("r1", { timerId: "t1", delayMs: 90_000, stepId: "step-1" });
    expect(result.fireAt).toBe("2026-03-01T09:01:30.000Z");
    expect(ofType(await h.log("r1"), "TimerSet")[0]).toMatchObject({ data: { timerId: "t1", fireAt: "2026-03-01T09:01:30.000Z", stepId: "step-1" } });
  });

  it("arms a cron series at its next tick in its zone and leaves an armed series alone", async () => {
    h = await createSignalHarness(START);
    const rt = h.node.runtime;
    const result = await rt.setTimer("r1", { timerId: "daily", cron: "30 9 * * *", timezone: "Europe/Rome" });
    expect(result).toMatchObject({ fireAt: "2026-03-02T08:30:00.000Z", committed: true });
    await h.node.armed("r1", "daily");
    await h.clock.advance(24 * 3_600_000);
    await h.node.reported((e) => e.type === "fired" && e.timerId === "daily");
    const again = await rt.setTimer("r1", { timerId: "daily", cron: "30 9 * * *", timezone: "Europe/Rome" });
    expect(again).toMatchObject({ fireAt: "2026-03-03T08:30:00.000Z", committed: false });
  });

  it("refuses bad input before any write", async () => {
    h = await createSignalHarness(START);
    const rt = h.node.runtime;
    const tip = await h.tip();
    const cases: [Parameters<typeof rt.setTimer>[1], string][] = [
      [{ timerId: "t", fireAt: "2026-02-30T00:00:00Z" }, "time_invalid"],
      [{ timerId: "t", fireAt: "2026-03-08T02:30:00" }, "time_invalid"],
      [{ timerId: "t", delayMs: -1 }, "time_invalid"],
      [{ timerId: "t", delayMs: Number.NaN }, "time_invalid"],
      [{ timerId: "t", fireAt: "2026-03-02T00:00:00Z", delayMs: 5 } as never, "time_invalid"],
      [{ timerId: "t" } as never, "time_invalid"],
      [{ timerId: "t", cron: "0 0 30 2 *" }, "cron_invalid"],
      [{ timerId: "t", cron: "61 * * * *" }, "cron_invalid"],
      [{ timerId: "t", cron: "0 0 * * *", timezone: "America/New_Yrok" }, "cron_invalid"],
      [{ timerId: "../t", delayMs: 5 }, "id_invalid"],
      [{ timerId: "t", delayMs: 5, stepId: "a/b" }, "id_invalid"],
    ];
    for (const [spec, code] of cases) await expect(rt.setTimer("r1", spec)).rejects.toMatchObject({ code });
    await expect(rt.setTimer("a/b", { timerId: "t", delayMs: 5 })).rejects.toMatchObject({ code: "id_invalid" });
    expect(await h.tip()).toBe(tip);
  });
});

describe("waitForTimer", () => {
  it("resolves when the scheduler fires the armed generation, and at once once fired", async () => {
    h = await createSignalHarness(START);
    const rt = h.node.runtime;
    await rt.setTimer("r1", { timerId: "t1", delayMs: 5_000 });
    const waiting = rt.waitForTimer("r1", "t1");
    await h.node.armed("r1", "t1");
    await h.clock.advance(5_000);
    const fire = await waiting;
    expect(fire).toEqual({ timerId: "t1", scheduledFor: "2026-03-01T09:00:05.000Z", firedAt: "2026-03-01T09:00:05.000Z", seq: 2 });
    expect(await rt.waitForTimer("r1", "t1")).toEqual(fire);
  });

  it("keeps waiting through a reschedule and resolves at a cron series' next tick", async () => {
    h = await createSignalHarness(START);
    const rt = h.node.runtime;
    await rt.setTimer("r1", { timerId: "t1", delayMs: 5_000 });
    const waiting = watched(rt.waitForTimer("r1", "t1"));
    await rt.setTimer("r1", { timerId: "t1", delayMs: 60_000 });
    await h.node.caughtUp();
    await h.clock.advance(5_000);
    expect(waiting.state()).toBe("pending");
    await h.clock.advance(55_000);
    expect((await waiting.promise).scheduledFor).toBe("2026-03-01T09:01:00.000Z");

    await rt.setTimer("r1", { timerId: "minutely", cron: "* * * * *" });
    const tick = rt.waitForTimer("r1", "minutely");
    await h.node.armed("r1", "minutely");
    await h.clock.advance(60_000);
    expect((await tick).scheduledFor).toBe("2026-03-01T09:02:00.000Z");
  });

  it("rejects timer_not_found for a timer never set, cancelled before or while waiting", async () => {
    h = await createSignalHarness(START);
    const rt = h.node.runtime;
    await expect(rt.waitForTimer("r1", "nope")).rejects.toMatchObject({ code: "timer_not_found" });
    await rt.setTimer("r1", { timerId: "t1", delayMs: 5_000 });
    // Observed before the call that rejects it, which takes several turns of the event loop.
    const waiting = expect(rt.waitForTimer("r1", "t1")).rejects.toMatchObject({ code: "timer_not_found" });
    expect(await rt.cancelTimer("r1", "t1", "not needed")).toMatchObject({ outcome: "cancelled" });
    await waiting;
    await expect(rt.waitForTimer("r1", "t1")).rejects.toMatchObject({ code: "timer_not_found" });
  });

  it("rejects aborted on abort and host_stopped on stop", async () => {
    h = await createSignalHarness(START);
    const rt = h.node.runtime;
    await rt.setTimer("r1", { timerId: "t1", delayMs: 5_000 });
    const controller = new AbortController();
    const aborted = rt.waitForTimer("r1", "t1", { signal: controller.signal });
    controller.abort();
    await expect(aborted).rejects.toMatchObject({ code: "aborted" });
    const stopped = expect(rt.waitForTimer("r1", "t1")).rejects.toMatchObject({ code: "host_stopped" });
    await rt.stop();
    await stopped;
    await expect(rt.waitForTimer("r1", "t1")).rejects.toMatchObject({ code: "host_stopped" });
  });
});

describe("scheduleIn", () => {
  it("writes the TimerSet in the background and its disposer drops the queued timer", async () => {
    h = await createSignalHarness(START);
    const rt = h.node.runtime;
    const dispose = rt.scheduleIn("r1", "t1", "2026-03-01T09:00:05Z");
    expect(await dispose.ready).toMatchObject({ timerId: "t1", fireAt: "2026-03-01T09:00:05.000Z", committed: true });
    await h.node.armed("r1", "t1");
    dispose();
    dispose();
    expect(h.node.scheduler.queuedTimers()).toEqual([]);
    await h.clock.advance(10_000);
    expect(ofType(await h.log("r1"), "TimerFired")).toEqual([]);
  });

  it("writes nothing when disposed at once, and throws bad input synchronously", async () => {
    h = await createSignalHarness(START);
    const rt = h.node.runtime;
    const tip = await h.tip();
    const dispose = rt.scheduleIn("r1", "t1", new Date("2026-03-01T09:00:05Z"));
    dispose();
    expect(await dispose.ready).toBeNull();
    expect(await h.tip()).toBe(tip);
    expect(() => rt.scheduleIn("r1", "t1", "2026-02-30T00:00:00Z")).toThrow(expect.objectContaining({ code: "time_invalid" }));
    expect(() => rt.scheduleIn("r1", "..", "2026-03-02T00:00:00Z")).toThrow(expect.objectContaining({ code: "id_invalid" }));
  });

  it("fires a scheduled timer that is not disposed", async () => {
    h = await createSignalHarness(START);
    const rt = h.node.runtime;
    const dispose = rt.scheduleIn("r1", "t1", "2026-03-01T09:00:05Z");
    await dispose.ready;
    const fire = rt.waitForTimer("r1", "t1");
    await h.node.armed("r1", "t1");
    await h.clock.advance(5_000);
    expect((await fire).seq).toBe(2);
  });
});
