import fc from "fast-check";
import { Cron } from "croner";
import { describe, expect, it, vi } from "vitest";
import { WorkflowHostError } from "../../../src/errors.js";
import { nextTick, ticksBetween, validateCron } from "../../../src/workflow/cron.js";

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(WorkflowHostError);
    return (error as WorkflowHostError).code;
  }
  return undefined;
}

/** Successive ticks after `from`: `n` of them, or those up to `until`. */
function ticks(expr: string, zone: string | undefined, from: string, n: number, until?: string): string[] {
  const out: string[] = [];
  let at = from;
  for (let i = 0; i < n; i += 1) {
    const next = nextTick(expr, zone, at);
    if (next === null || (until !== undefined && next > until)) break;
    out.push(next);
    at = next;
  }
  return out;
}

function localHour(iso: string, zone: string): number {
  return Number(new Intl.DateTimeFormat("en-GB", { timeZone: zone, hour: "numeric", hourCycle: "h23" }).format(new Date(iso)));
}

describe("validateCron", () => {
  // Case I4.
  it.each([
    ["0 0 30 2 *", "UTC"],
    ["0 0 31 4 *", "UTC"],
    ["0 0 31 2,4,6,9,11 *", "Europe/Rome"],
    ["61 * * * *", "UTC"],
    ["* 24 * * *", "UTC"],
    ["", "UTC"],
    ["   ", "UTC"],
    ["* * * *", "UTC"],
    ["0 0 0 * * * 2030", "UTC"],
    ["@daily", "UTC"],
    ["0 0 * * *", "America/New_Yrok"],
    ["0 0 * * *", "+02:00"],
    ["0 0 * * *", ""],
    ["not a cron", "UTC"],
  ])("rejects %j in zone %j with cron_invalid", (expr, zone) => {
    expect(codeOf(() => validateCron(expr, zone))).toBe("cron_invalid");
  });

  it("rejects non-strings", () => {
    expect(codeOf(() => validateCron(undefined))).toBe("cron_invalid");
    expect(codeOf(() => validateCron(5))).toBe("cron_invalid");
    expect(codeOf(() => validateCron("0 0 * * *", 5))).toBe("cron_invalid");
  });

  it("accepts 5 and 6 fields, defaulting the zone to UTC", () => {
    expect(validateCron("*/5 * * * *")).toEqual({ cron: "*/5 * * * *", timezone: "UTC" });
    expect(validateCron("0 30 2 * * *", "America/New_York")).toEqual({ cron: "0 30 2 * * *", timezone: "America/New_York" });
    expect(validateCron("0 0 29 2 *").timezone).toBe("UTC");
    expect(validateCron("0 9 * * MON-FRI", "Europe/Berlin").timezone).toBe("Europe/Berlin");
  });

  it("refuses the same bad pattern again with the same code and data", () => {
    for (let i = 0; i < 3; i += 1) {
      try {
        validateCron("0 0 31 4 *", "UTC");
        expect.unreachable();
      } catch (error) {
        expect((error as WorkflowHostError).code).toBe("cron_invalid");
        expect((error as WorkflowHostError).data).toMatchObject({ value: "0 0 31 4 *", timezone: "UTC" });
      }
    }
  });

  it("names the expression and the zone in the error data", () => {
    try {
      validateCron("0 0 30 2 *", "Europe/Rome");
      expect.unreachable();
    } catch (error) {
      expect((error as WorkflowHostError).data).toMatchObject({ field: "cron", value: "0 0 30 2 *", timezone: "Europe/Rome" });
    }
  });
});

describe("nextTick", () => {
  it("returns the first tick strictly after the instant", () => {
    expect(nextTick("*/5 * * * *", "UTC", "2026-05-01T10:00:00.000Z")).toBe("2026-05-01T10:05:00.000Z");
    expect(nextTick("*/5 * * * *", "UTC", "2026-05-01T09:59:59.999Z")).toBe("2026-05-01T10:00:00.000Z");
    expect(nextTick("* * * * * *", "UTC", "2026-05-01T10:00:00.500Z")).toBe("2026-05-01T10:00:01.000Z");
    expect(nextTick("*/5 * * * *", "UTC", "2026-05-01T12:00:00+02:00")).toBe("2026-05-01T10:05:00.000Z");
  });

  it("rejects a bad instant with time_invalid", () => {
    expect(codeOf(() => nextTick("* * * * *", "UTC", "2026-05-01T10:00:00"))).toBe("time_invalid");
  });

  // Case A2.
  it("steps a monthly series one month at a time and a yearly one to next year", () => {
    expect(ticks("0 0 1 * *", "UTC", "2026-01-05T00:00:00Z", 2)).toEqual(["2026-02-01T00:00:00.000Z", "2026-03-01T00:00:00.000Z"]);
    expect(nextTick("0 9 1 1 *", "UTC", "2026-03-01T00:00:00Z")).toBe("2027-01-01T09:00:00.000Z");
  });

  // Case B1: a fixed local time in the spring-forward gap fires once, at the end of the gap.
  it("fires a New York 02:30 job at 03:00 EDT on the gap day, then at 02:30 again", () => {
    expect(ticks("30 2 * * *", "America/New_York", "2026-03-08T06:30:00Z", 3)).toEqual([
      "2026-03-08T07:00:00.000Z",
      "2026-03-09T06:30:00.000Z",
      "2026-03-10T06:30:00.000Z",
    ]);
    // "Computed in under 50 ms" (case B1) is a cost; the bounded number of croner calls is
    // checked below, and bench/ measures time.
  });

  it("handles the Rome gap for Sunday jobs inside and outside the gap", () => {
    expect(ticks("30 2 * * 0", "Europe/Rome", "2026-03-28T00:00:00Z", 2)).toEqual(["2026-03-29T01:00:00.000Z", "2026-04-05T00:30:00.000Z"]);
    expect(ticks("0 5 * * 0", "Europe/Rome", "2026-03-28T00:00:00Z", 2)).toEqual(["2026-03-29T03:00:00.000Z", "2026-04-05T03:00:00.000Z"]);
  });

  // Case B4: stepped hours skip the local hour that does not exist.
  it("skips Cairo's missing midnight for 0 */2 and keeps every other even hour", () => {
    expect(ticks("0 */2 * * *", "Africa/Cairo", "2026-04-23T17:00:00Z", 4)).toEqual([
      "2026-04-23T18:00:00.000Z",
      "2026-04-23T20:00:00.000Z",
      "2026-04-23T23:00:00.000Z",
      "2026-04-24T01:00:00.000Z",
    ]);
    // Local 2026-04-24 runs from 2026-04-23T22:00Z (UTC+2) to 2026-04-24T21:00Z (UTC+3).
    const day = ticksBetween("0 */2 * * *", "Africa/Cairo", "2026-04-23T21:59:59Z", "2026-04-24T20:59:59Z", 50);
    expect(day.count).toBe(11);
    expect(day.ticks.map((t) => localHour(t, "Africa/Cairo"))).toEqual([2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22]);
    expect(day.first).toBe("2026-04-23T23:00:00.000Z");
    expect(day.last).toBe("2026-04-24T19:00:00.000Z");
  });

  // Case B5: a repeated local time fires once, at its first occurrence.
  it("fires a New York 01:30 job once on the fall-back day", () => {
    const span = ticksBetween("30 1 * * *", "America/New_York", "2026-11-01T04:00:00Z", "2026-11-01T08:00:00Z", 10);
    expect(span).toEqual({ count: 1, first: "2026-11-01T05:30:00.000Z", last: "2026-11-01T05:30:00.000Z", ticks: ["2026-11-01T05:30:00.000Z"] });
    expect(nextTick("30 1 * * *", "America/New_York", "2026-11-01T05:30:00.000Z")).toBe("2026-11-02T06:30:00.000Z");
    expect(ticks("0 2 * * *", "Europe/Berlin", "2026-10-24T12:00:00Z", 2)).toEqual(["2026-10-25T00:00:00.000Z", "2026-10-26T01:00:00.000Z"]);
  });

  it("treats a list of hours as an interval job: a listed time in the gap is skipped", () => {
    expect(ticks("30 2,14 * * *", "America/New_York", "2026-03-08T06:00:00Z", 2)).toEqual(["2026-03-08T18:30:00.000Z", "2026-03-09T06:30:00.000Z"]);
  });

  it("keeps an hourly job hourly through the fall-back hour (interval jobs fire on both occurrences)", () => {
    expect(ticks("0 * * * *", "America/New_York", "2026-11-01T03:30:00Z", 4)).toEqual([
      "2026-11-01T04:00:00.000Z",
      "2026-11-01T05:00:00.000Z",
      "2026-11-01T06:00:00.000Z",
      "2026-11-01T07:00:00.000Z",
    ]);
  });

  // Case B7: the series zone decides, never the process zone; no zone means UTC.
  it("reads an hourly UTC job the same under any process zone", () => {
    const expected = ["2025-10-04T16:00:00.000Z", "2025-10-04T17:00:00.000Z", "2025-10-04T18:00:00.000Z"];
    expect(ticks("0 * * * *", "UTC", "2025-10-04T15:30:00Z", 3)).toEqual(expected);
    expect(ticks("0 * * * *", undefined, "2025-10-04T15:30:00Z", 3)).toEqual(expected);
    expect(ticks("0 0 * * *", undefined, "2025-10-04T15:30:00Z", 1)).toEqual(["2025-10-05T00:00:00.000Z"]);
  });
});

describe("ticksBetween", () => {
  it("counts the ticks missed during downtime (case C1)", () => {
    const span = ticksBetween("*/5 * * * *", "UTC", "2026-05-01T10:00:00Z", "2026-05-01T11:02:30Z", 100);
    expect(span.count).toBe(12);
    expect(span.first).toBe("2026-05-01T10:05:00.000Z");
    expect(span.last).toBe("2026-05-01T11:00:00.000Z");
    expect(span.ticks).toHaveLength(12);
  });

  it("is empty when nothing falls in the window, and excludes the start", () => {
    expect(ticksBetween("0 4 * * *", "UTC", "2026-05-02T04:00:00Z", "2026-05-02T05:00:00Z", 5)).toEqual({ count: 0, first: null, last: null, ticks: [] });
    expect(ticksBetween("0 4 * * *", "UTC", "2026-05-02T05:00:00Z", "2026-05-02T04:00:00Z", 5).count).toBe(0);
    expect(ticksBetween("0 4 * * *", "UTC", "2026-05-02T03:00:00Z", "2026-05-02T04:00:00Z", 5).ticks).toEqual(["2026-05-02T04:00:00.000Z"]);
  });

  it("returns the latest ticks with take: last", () => {
    const span = ticksBetween("*/5 * * * *", "UTC", "2026-05-01T10:00:00Z", "2026-05-01T11:02:30Z", 2, "last");
    expect(span).toEqual({
      count: 12,
      first: "2026-05-01T10:05:00.000Z",
      last: "2026-05-01T11:00:00.000Z",
      ticks: ["2026-05-01T10:55:00.000Z", "2026-05-01T11:00:00.000Z"],
    });
  });

  it("counts a year of a every-second series without visiting each tick", () => {
    const nextRun = vi.spyOn(Cron.prototype, "nextRun");
    const previousRuns = vi.spyOn(Cron.prototype, "previousRuns");
    try {
      const span = ticksBetween("* * * * * *", "Europe/Rome", "2025-05-01T00:00:00Z", "2026-05-01T00:00:00Z", 100);
      expect(span.count).toBe(365 * 86_400);
      expect(span.ticks).toHaveLength(100);
      expect(span.first).toBe("2025-05-01T00:00:01.000Z");
      expect(span.last).toBe("2026-05-01T00:00:00.000Z");
      expect(nextRun.mock.calls.length + previousRuns.mock.calls.length).toBeLessThan(1_000);
    } finally {
      nextRun.mockRestore();
      previousRuns.mockRestore();
    }
  });

  it("counts across DST changes: an hourly New York job has 23 ticks in March's short day and 25 in November's long one", () => {
    expect(ticksBetween("0 * * * *", "America/New_York", "2026-03-08T04:59:59Z", "2026-03-09T03:59:59Z", 0).count).toBe(23);
    expect(ticksBetween("0 * * * *", "America/New_York", "2026-11-01T03:59:59Z", "2026-11-02T04:59:59Z", 0).count).toBe(25);
  });

  it("rejects a negative or fractional limit", () => {
    expect(() => ticksBetween("* * * * *", "UTC", "2026-05-01T10:00:00Z", "2026-05-01T11:00:00Z", -1)).toThrow(RangeError);
    expect(() => ticksBetween("* * * * *", "UTC", "2026-05-01T10:00:00Z", "2026-05-01T11:00:00Z", 1.5)).toThrow(RangeError);
  });

  // The counting shortcut must agree with walking croner tick by tick.
  it("agrees with a tick-by-tick walk around DST changes", () => {
    const zones = ["UTC", "America/New_York", "Europe/Berlin", "Africa/Cairo", "Australia/Lord_Howe", "Asia/Kolkata"];
    const changes = [Date.UTC(2026, 2, 8, 7), Date.UTC(2026, 2, 29, 1), Date.UTC(2026, 3, 23, 22), Date.UTC(2026, 3, 4, 15), Date.UTC(2026, 9, 4, 16), Date.UTC(2026, 9, 25, 1), Date.UTC(2026, 10, 1, 6)];
    const expr = fc
      .tuple(
        fc.constantFrom("0", "*/20", "15,45"),
        fc.constantFrom("*", "*/7", "0", "30", "5-10"),
        fc.constantFrom("*", "*/2", "1", "2", "1-3", "0,12", "22-23"),
        fc.constantFrom("*", "1", "L", "1-7"),
        fc.constantFrom("*", "0", "1-5"),
      )
      .map(([s, m, h, dom, dow]) => `${s} ${m} ${h} ${dom} * ${dow}`);
    fc.assert(
      fc.property(
        expr,
        fc.constantFrom(...zones),
        fc.constantFrom(...changes),
        fc.integer({ min: -36 * 3600, max: 36 * 3600 }),
        fc.integer({ min: 0, max: 48 * 3600 }),
        fc.integer({ min: 0, max: 5 }),
        (cron, zone, around, offsetSec, lengthSec, limit) => {
          const afterMs = around + offsetSec * 1000 + 250;
          const after = new Date(afterMs).toISOString();
          const until = new Date(afterMs + lengthSec * 1000).toISOString();
          const walked = ticks(cron, zone, after, 100_000, until);
          const span = ticksBetween(cron, zone, after, until, limit);
          expect(span.count).toBe(walked.length);
          expect(span.first).toBe(walked[0] ?? null);
          expect(span.last).toBe(walked.at(-1) ?? null);
          expect(span.ticks).toEqual(walked.slice(0, limit));
          expect(ticksBetween(cron, zone, after, until, limit, "last").ticks).toEqual(walked.slice(Math.max(0, walked.length - limit)));
        },
      ),
      { numRuns: 150, seed: 20260501 },
    );
  });
});
