/**
 * Cron series through the scheduler. This file also runs under TZ=America/New_York and
 * TZ=Australia/Sydney (`npm run test:zones`): results must not depend on the process zone.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { Clock } from "../../../src/time/clock.js";
import { nextTick } from "../../../src/workflow/cron.js";
import type { RunEvent } from "../../../src/workflow/types.js";
import { createHarness, firedOf, ofType, type Harness } from "./harness.js";

const HOUR_MS = 3_600_000;
let h: Harness | undefined;

afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** A cron TimerSet as a runtime writes it: fireAt is the first tick after `nowIso`. */
function cronSet(timerId: string, cron: string, timezone: string | undefined, nowIso: string, misfire?: string): Record<string, unknown> {
  const fireAt = nextTick(cron, timezone, nowIso);
  return {
    type: "TimerSet",
    data: { timerId, fireAt, cron, ...(timezone === undefined ? {} : { timezone }), ...(misfire === undefined ? {} : { misfire }) },
  };
}

function lastTimerSet(log: readonly RunEvent[]): string | undefined {
  const sets = ofType(log, "TimerSet");
  return (sets.at(-1) as { data: { fireAt: string } } | undefined)?.data.fireAt;
}

async function runSeries(start: string, cron: string, zone: string | undefined, advanceMs: number): Promise<{ fired: string[]; log: RunEvent[] }> {
  h = await createHarness(start, { discoverEveryMs: 24 * HOUR_MS });
  await h.append("r1", cronSet("c", cron, zone, start));
  await h.scheduler.start();
  await h.clock.advance(advanceMs);
  await h.scheduler.idle();
  const log = await h.log("r1");
  return { fired: firedOf(log, "c").map((f) => f.scheduledFor), log };
}

describe("cron series", () => {
  it("fires a monthly series once per month and arms the next tick in the same commit (A2)", async () => {
    const { fired, log } = await runSeries("2026-01-05T00:00:00.000Z", "0 0 1 * *", "UTC", 28 * 24 * HOUR_MS);
    expect(fired).toEqual(["2026-02-01T00:00:00.000Z"]);
    expect(lastTimerSet(log)).toBe("2026-03-01T00:00:00.000Z");
    const firedEvent = log.find((e) => e.type === "TimerFired")!;
    const next = log.find((e) => e.seq === firedEvent.seq + 1)!;
    expect(next.type).toBe("TimerSet");
    expect(h!.scheduler.stats().commits).toBe(1);
  });

  it("computes a yearly tick from the armed tick (A2)", async () => {
    expect(nextTick("0 9 1 1 *", "UTC", "2026-03-01T00:00:00.000Z")).toBe("2027-01-01T09:00:00.000Z");
  });

  it("fires a fixed local time in a spring-forward gap at the end of the gap (B1)", async () => {
    const { fired } = await runSeries("2026-03-08T06:30:00.000Z", "30 2 * * *", "America/New_York", 3 * 24 * HOUR_MS - 60_000);
    expect(fired).toEqual(["2026-03-08T07:00:00.000Z", "2026-03-09T06:30:00.000Z", "2026-03-10T06:30:00.000Z"]);
  });

  it("skips non-existent hours of a stepped series across Cairo's DST start (B4)", async () => {
    const { fired } = await runSeries("2026-04-23T17:00:00.000Z", "0 */2 * * *", "Africa/Cairo", 31 * HOUR_MS);
    expect(fired.slice(0, 3)).toEqual(["2026-04-23T18:00:00.000Z", "2026-04-23T20:00:00.000Z", "2026-04-23T23:00:00.000Z"]);
    // 02:00 … 22:00 local on Apr 24 (UTC+3): 11 ticks, every two hours.
    const apr24 = fired.filter((t) => t >= "2026-04-23T23:00:00.000Z" && t <= "2026-04-24T19:00:00.000Z");
    expect(apr24).toHaveLength(11);
    for (let i = 1; i < fired.length; i += 1) {
      if (fired[i - 1]! >= "2026-04-23T23:00:00.000Z") expect(Date.parse(fired[i]!) - Date.parse(fired[i - 1]!)).toBe(2 * HOUR_MS);
    }
  });

  it("fires a repeated local time once, at its first occurrence (B5)", async () => {
    const { fired, log } = await runSeries("2026-11-01T04:00:00.000Z", "30 1 * * *", "America/New_York", 4 * HOUR_MS);
    expect(fired).toEqual(["2026-11-01T05:30:00.000Z"]);
    expect(lastTimerSet(log)).toBe("2026-11-02T06:30:00.000Z");
  });

  it("fires Berlin's repeated 02:00 once (B5)", async () => {
    const { fired } = await runSeries("2026-10-24T12:00:00.000Z", "0 2 * * *", "Europe/Berlin", 40 * HOUR_MS);
    expect(fired).toEqual(["2026-10-25T00:00:00.000Z", "2026-10-26T01:00:00.000Z"]);
  });

  it("uses UTC when no zone is named, whatever the process zone (B7)", async () => {
    const { fired } = await runSeries("2025-10-04T15:30:00.000Z", "0 * * * *", undefined, 3 * HOUR_MS);
    expect(fired).toEqual(["2025-10-04T16:00:00.000Z", "2025-10-04T17:00:00.000Z", "2025-10-04T18:00:00.000Z"]);
  });
});

describe("missed ticks", () => {
  /** C1's log: a series whose last tick fired at 10:00 with no follow-on TimerSet (original format). */
  async function c1Harness(runs: number, misfire?: "skip" | "latest" | "all"): Promise<Harness> {
    const harness = await createHarness("2026-05-01T09:58:00.000Z", misfire === undefined ? {} : { misfire });
    for (let i = 0; i < runs; i += 1) {
      await harness.append(
        `run${i}`,
        { type: "TimerSet", data: { timerId: "c5", fireAt: "2026-05-01T10:00:00.000Z", cron: "*/5 * * * *", timezone: "UTC" } },
        { type: "TimerFired", data: { timerId: "c5", scheduledFor: "2026-05-01T10:00:00.000Z" } },
      );
    }
    harness.clock.jump("2026-05-01T11:02:30.000Z");
    return harness;
  }

  it("skips missed ticks with one TimerSkipped and keeps the series alive (C1)", async () => {
    h = await c1Harness(1);
    await h.scheduler.start();
    await h.clock.advance(0);
    await h.scheduler.idle();
    let log = await h.log("run0");
    expect(firedOf(log)).toHaveLength(1);
    const skipped = ofType(log, "TimerSkipped");
    expect(skipped.map((e) => (e as { data: unknown }).data)).toEqual([
      { timerId: "c5", firstMissed: "2026-05-01T10:05:00.000Z", lastMissed: "2026-05-01T11:00:00.000Z", count: 12, reason: "missed" },
    ]);
    expect(lastTimerSet(log)).toBe("2026-05-01T11:05:00.000Z");
    await h.clock.advance(150_000);
    await h.scheduler.idle();
    log = await h.log("run0");
    expect(firedOf(log).map((f) => f.scheduledFor)).toEqual(["2026-05-01T10:00:00.000Z", "2026-05-01T11:05:00.000Z"]);
  });

  it("fires nothing at startup for 200 series that missed ticks (C1)", async () => {
    h = await c1Harness(200);
    await h.scheduler.start();
    await h.clock.advance(0);
    await h.scheduler.idle();
    expect(h.scheduler.stats().fired).toBe(0);
    expect(h.scheduler.stats().skippedTicks).toBe(200 * 12);
    expect(h.scheduler.stats().commits).toBe(1);
    expect(h.scheduler.queuedTimers()).toHaveLength(200);
  });

  it("fires only the newest missed tick under `latest`", async () => {
    h = await c1Harness(1, "latest");
    await h.scheduler.start();
    await h.clock.advance(0);
    await h.scheduler.idle();
    const log = await h.log("run0");
    expect(firedOf(log).map((f) => f.scheduledFor)).toEqual(["2026-05-01T10:00:00.000Z", "2026-05-01T11:00:00.000Z"]);
    expect((ofType(log, "TimerSkipped")[0] as { data: { count: number; lastMissed: string } }).data).toMatchObject({ count: 11, lastMissed: "2026-05-01T10:55:00.000Z" });
    expect(lastTimerSet(log)).toBe("2026-05-01T11:05:00.000Z");
  });

  it("fires each missed tick under `all`, at most maxCatchUp", async () => {
    h = await c1Harness(1, "all");
    await h.restart({ misfire: "all", maxCatchUp: 5 });
    await h.clock.advance(0);
    await h.scheduler.idle();
    const log = await h.log("run0");
    expect(firedOf(log).map((f) => f.scheduledFor).slice(1)).toEqual([
      "2026-05-01T10:40:00.000Z",
      "2026-05-01T10:45:00.000Z",
      "2026-05-01T10:50:00.000Z",
      "2026-05-01T10:55:00.000Z",
      "2026-05-01T11:00:00.000Z",
    ]);
    expect((ofType(log, "TimerSkipped")[0] as { data: unknown }).data).toMatchObject({ firstMissed: "2026-05-01T10:05:00.000Z", lastMissed: "2026-05-01T10:35:00.000Z", count: 7 });
  });

  it("notices a forward wall-clock jump within the re-check interval and does not catch up (E1)", async () => {
    h = await createHarness("2026-05-01T00:00:00.000Z");
    await h.append("r1", cronSet("every-minute", "* * * * *", "UTC", "2026-05-01T00:00:00.000Z"));
    await h.append("r1", { type: "TimerSet", data: { timerId: "once", fireAt: "2026-05-02T00:00:00.000Z" } });
    await h.scheduler.start();
    h.clock.jump("2026-05-02T00:00:30.000Z");
    await h.clock.advance(60_000);
    await h.scheduler.idle();
    const log = await h.log("r1");
    const once = firedOf(log, "once");
    expect(once).toHaveLength(1);
    expect(Date.parse(once[0]!.firedAt)).toBeLessThanOrEqual(Date.parse("2026-05-02T00:01:00.000Z"));
    expect(firedOf(log, "every-minute").map((f) => f.scheduledFor)).toEqual(["2026-05-02T00:01:00.000Z"]);
    const skipped = ofType(log, "TimerSkipped").map((e) => (e as { data: { count: number } }).data.count);
    expect(skipped.reduce((a, b) => a + b, 0)).toBe(1_440);
  });

  it("keeps a series firing when the clock reads differently for tick and delay (E3)", async () => {
    h = await createHarness("2026-05-01T00:00:00.000Z");
    const base = h.clock;
    let reads = 0;
    // Every other reading is 7 s ahead: what a slow next-tick computation sees.
    const skewed: Clock = () => new Date(base.now() + (reads++ % 2 === 0 ? 0 : 7_000));
    await h.restart({ clock: skewed });
    await h.append("r1", cronSet("c", "*/10 * * * * *", "UTC", "2026-05-01T00:00:00.000Z"));
    await h.clock.advance(5 * 60_000);
    await h.scheduler.idle();
    const log = await h.log("r1");
    const fired = firedOf(log, "c").map((f) => Date.parse(f.scheduledFor));
    const skippedCount = ofType(log, "TimerSkipped").reduce((n, e) => n + (e as { data: { count: number } }).data.count, 0);
    expect(new Set(fired).size).toBe(fired.length);
    for (let i = 1; i < fired.length; i += 1) expect(fired[i]!).toBeGreaterThan(fired[i - 1]!);
    // 30 ticks in 5 minutes: each fired or skipped once, and the series still has an armed tick.
    expect(fired.length + skippedCount).toBeGreaterThanOrEqual(29);
    expect(fired.length).toBeGreaterThan(20);
    expect(h.scheduler.queuedTimers().map((t) => t.timerId)).toEqual(["c"]);
  });
});
