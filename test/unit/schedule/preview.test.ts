/**
 * Preview of the next slots, UTC and local, of an expression before it is set and of an armed
 * series (bounds, slot numbers, jitter). Every instant is given with its offset, so nothing
 * depends on the process zone.
 */
import { describe, expect, it } from "vitest";
import { localIso, previewCron, previewSeries } from "../../../src/workflow/schedule/preview.js";
import { jitterDelayMs, slotDueMs } from "../../../src/workflow/schedule/jitter.js";
import type { PendingTimer } from "../../../src/workflow/types.js";
import { expectCode } from "../../helpers/expect-code.js";

describe("preview", () => {
  it("lists the next slots of an expression in UTC and in its zone, across a DST gap (B1)", () => {
    expect(previewCron({ cron: "30 2 * * *", timezone: "America/New_York", after: "2026-03-07T12:00:00Z", count: 3 })).toEqual([
      { slot: 1, utc: "2026-03-08T07:00:00.000Z", local: "2026-03-08T03:00:00-04:00" },
      { slot: 2, utc: "2026-03-09T06:30:00.000Z", local: "2026-03-09T02:30:00-04:00" },
      { slot: 3, utc: "2026-03-10T06:30:00.000Z", local: "2026-03-10T02:30:00-04:00" },
    ]);
  });

  it("refuses a startAt after its endAt (time_invalid) rather than listing nothing", () => {
    expectCode(() => previewCron({ cron: "* * * * *", after: "2026-05-01T00:00:00Z", count: 3, startAt: "2026-05-02T00:00:00Z", endAt: "2026-05-01T12:00:00Z" }), "time_invalid");
    expect(previewCron({ cron: "0 * * * *", after: "2026-05-01T00:00:00Z", count: 3, startAt: "2026-05-01T12:00:00Z", endAt: "2026-05-01T12:00:00Z" })).toHaveLength(1);
  });

  it("keeps to startAt, endAt and maxTicks", () => {
    const ticks = previewCron({ cron: "0 * * * *", after: "2026-05-01T10:00:00Z", startAt: "2026-05-01T12:30:00Z", endAt: "2026-05-01T20:00:00Z", maxTicks: 3, count: 10 });
    expect(ticks.map((t) => t.utc)).toEqual(["2026-05-01T13:00:00.000Z", "2026-05-01T14:00:00.000Z", "2026-05-01T15:00:00.000Z"]);
    expect(previewCron({ cron: "0 * * * *", after: "2026-05-01T10:00:00Z", endAt: "2026-05-01T11:30:00Z", count: 10 })).toHaveLength(1);
  });

  it("refuses a bad expression, zone or count with the field's code", () => {
    expect(() => previewCron({ cron: "61 * * * *", after: "2026-05-01T10:00:00Z", count: 1 })).toThrow(expect.objectContaining({ code: "cron_invalid" }));
    expect(() => previewCron({ cron: "0 * * * *", timezone: "America/New_Yrok", after: "2026-05-01T10:00:00Z", count: 1 })).toThrow(expect.objectContaining({ code: "cron_invalid" }));
    expect(() => previewCron({ cron: "0 * * * *", after: "2026-05-01T10:00:00Z", count: 0 })).toThrow(expect.objectContaining({ code: "time_invalid" }));
  });

  it("continues an armed series' slot numbers and shows each slot's jittered instant", () => {
    const pending: PendingTimer = { timerId: "s", fireAt: "2026-05-01T11:00:00.000Z", setSeq: 3, cron: "0 * * * *", timezone: "Europe/Rome", maxTicks: 5, slot: 4, jitterMs: 60_000 };
    const ticks = previewSeries("r1", pending, 10);
    expect(ticks.map((t) => [t.slot, t.utc, t.local])).toEqual([
      [4, "2026-05-01T11:00:00.000Z", "2026-05-01T13:00:00+02:00"],
      [5, "2026-05-01T12:00:00.000Z", "2026-05-01T14:00:00+02:00"],
    ]);
    for (const t of ticks) expect(Date.parse(t.jitteredFor as string)).toBe(slotDueMs("r1", pending, t.utc));
  });

  it("derives the same delay for the same run, timer and slot, within the cap and below the gap", () => {
    const a = jitterDelayMs("r1", "s", "2026-05-01T11:00:00.000Z", 600_000);
    expect(jitterDelayMs("r1", "s", "2026-05-01T11:00:00.000Z", 600_000)).toBe(a);
    const delays = Array.from({ length: 200 }, (_, i) => jitterDelayMs("r1", `s${i}`, "2026-05-01T11:00:00.000Z", 600_000, 120_000));
    for (const d of delays) expect(d >= 0 && d < 120_000 && Number.isInteger(d)).toBe(true);
    expect(new Set(delays).size).toBeGreaterThan(100);
    expect(localIso(Date.parse("2026-05-01T11:00:00.250Z"), "UTC")).toBe("2026-05-01T11:00:00.250+00:00");
  });
});
