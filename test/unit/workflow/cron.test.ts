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

  it.each([
    ["@yearly", "0 0 1 1 *"],
    ["@hourly", "0 * * * *"],
    [" @daily ", "0 0 * * *"],
  ])("refuses the nickname %j naming the 5 fields it stands for (%s)", (expr, fields) => {
    let message = "";
    try {
      validateCron(expr);
    } catch (error) {
      message = (error as WorkflowHostError).message;
      expect((error as WorkflowHostError).code).toBe("cron_invalid");
    }
    expect(message).toContain(`write its 5 fields: ${fields}`);
    expect(message).not.toContain("1 fields");
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

  it("counts a fixed-time series exactly when the window starts at or just after an offset change", () => {
    // The repeated 01:30 of 2026-11-01 in New York (06:30Z) must not count when the window
    // opens between the two occurrences, nor the end of a spring gap be lost at its edge.
    expect(ticksBetween("30 1 * * *", "America/New_York", "2026-11-01T05:59:59Z", "2026-11-02T06:30:00Z", 0).count).toBe(1);
    const cases: [string, string, string][] = [
      ["30 1 * * *", "America/New_York", "2026-11-01T06:00:00Z"],
      ["30 2 * * *", "America/New_York", "2026-03-08T07:00:00Z"],
      ["0 2 * * *", "Europe/Berlin", "2026-10-25T01:00:00Z"],
      ["30 2 * * 0", "Europe/Rome", "2026-03-29T01:00:00Z"],
    ];
    for (const [expr, zone, changeIso] of cases) {
      const change = Date.parse(changeIso);
      for (let offsetMin = -150; offsetMin <= 150; offsetMin += 15) {
        for (const nudgeMs of [-1000, 0, 1000]) {
          const after = new Date(change + offsetMin * 60_000 + nudgeMs).toISOString();
          const until = new Date(change + 3 * 86_400_000).toISOString();
          const walked = ticksBetween(expr, zone, after, until, 1000).count;
          expect({ expr, zone, after, count: ticksBetween(expr, zone, after, until, 0).count }).toEqual({ expr, zone, after, count: walked });
        }
      }
    }
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

describe("catch-up over long downtime (issue 19, fault 3)", () => {
  const DAY_MS = 86_400_000;
  const dayNumber = (y: number, m: number, d: number): number => {
    const date = new Date(0);
    date.setUTCFullYear(y, m - 1, d);
    return Math.round(date.getTime() / DAY_MS);
  };

  it("counts a daily series armed in year 0001 exactly, without visiting each day", () => {
    const span = ticksBetween("0 0 * * *", "UTC", "0001-01-01T00:00:00.000Z", "2026-05-01T12:00:00.000Z", 2, "last");
    // Every midnight from 0001-01-02 to 2026-05-01, both included.
    expect(span.count).toBe(dayNumber(2026, 5, 1) - dayNumber(1, 1, 2) + 1);
    expect(span.first).toBe("0001-01-02T00:00:00.000Z");
    expect(span.last).toBe("2026-05-01T00:00:00.000Z");
    expect(span.ticks).toEqual(["2026-04-30T00:00:00.000Z", "2026-05-01T00:00:00.000Z"]);
  });

  it("counts year 0000 to 9999 for interval and fixed-time series, weekday and day-of-month rules included", () => {
    const all = dayNumber(9999, 12, 31) - dayNumber(0, 1, 1) + 1;
    expect(ticksBetween("0 12 * * *", "UTC", "0000-01-01T00:00:00.000Z", "9999-12-31T23:59:59.999Z", 0).count).toBe(all);
    expect(ticksBetween("*/30 * * * *", "UTC", "0000-01-01T00:00:00.000Z", "9999-12-31T23:59:59.999Z", 0).count).toBe(all * 48 - 1); // the start is excluded
    // 29 February: 97 leap days per 400 years, 25 cycles.
    expect(ticksBetween("0 0 29 2 *", "UTC", "0000-01-01T00:00:00.000Z", "9999-12-31T23:59:59.999Z", 0).count).toBe(25 * 97);
    // Mondays: the 400-year cycle is 20 871 whole weeks.
    expect(ticksBetween("0 0 * * 1", "UTC", "0000-01-01T00:00:00.000Z", "9999-12-31T23:59:59.999Z", 0).count).toBe(25 * 20_871);
  });

  it("counts a New York 02:30 series over a century of DST rule changes like croner does, year by year", () => {
    // The century is the sum of its years; each year is checked against a tick-by-tick walk
    // for a sample of years (the rules changed in 1918, 1942, 1945, 1967, 1974, 1987, 2007).
    const count = (from: string, to: string): number => ticksBetween("30 2 * * *", "America/New_York", from, to, 0).count;
    let sum = 0;
    for (let y = 1920; y < 2020; y++) sum += count(`${y}-01-01T00:00:00.000Z`, `${y + 1}-01-01T00:00:00.000Z`);
    expect(count("1920-01-01T00:00:00.000Z", "2020-01-01T00:00:00.000Z")).toBe(sum);
    for (const y of [1920, 1945, 1974, 1987, 2007, 2026]) {
      const walked = ticks("30 2 * * *", "America/New_York", `${y}-01-01T00:00:00.000Z`, 400, `${y + 1}-01-01T00:00:00.000Z`);
      expect(count(`${y}-01-01T00:00:00.000Z`, `${y + 1}-01-01T00:00:00.000Z`)).toBe(walked.length);
    }
  });

  it("agrees with a tick-by-tick walk over windows of months in DST zones", () => {
    const expr = fc
      .tuple(fc.constantFrom("0", "30"), fc.constantFrom("0", "30", "*/20"), fc.constantFrom("1", "2", "3", "0", "*/6"), fc.constantFrom("*", "1", "L", "15W"), fc.constantFrom("*", "0", "1-5", "5#2"))
      .map(([s, m, h, dom, dow]) => `${s} ${m} ${h} ${dom} * ${dow}`);
    fc.assert(
      fc.property(
        expr,
        fc.constantFrom("America/New_York", "Europe/Berlin", "Australia/Lord_Howe", "America/Santiago", "Pacific/Apia"),
        fc.integer({ min: Date.UTC(1990, 0, 1), max: Date.UTC(2030, 0, 1) }),
        fc.integer({ min: 1, max: 120 }),
        (cron, zone, afterMs, days) => {
          const after = new Date(afterMs).toISOString();
          const until = new Date(afterMs + days * DAY_MS).toISOString();
          const walked = ticks(cron, zone, after, 20_000, until);
          expect(ticksBetween(cron, zone, after, until, 0).count).toBe(walked.length);
        },
      ),
      { numRuns: 40, seed: 20261201 },
    );
  });

  it("finds ticks after year 2999 up to 9999 (a minutely series does not end at 2999-12-31)", () => {
    expect(nextTick("* * * * *", "UTC", "2999-12-31T23:59:30.000Z")).toBe("3000-01-01T00:00:00.000Z");
    expect(nextTick("0 0 29 2 *", "Europe/Rome", "5000-01-01T00:00:00.000Z")).toBe("5004-02-28T23:00:00.000Z");
    expect(nextTick("30 2 * * *", "America/New_York", "7777-03-01T00:00:00.000Z")).toBe("7777-03-01T07:30:00.000Z");
    expect(nextTick("30 2 * * *", "America/New_York", "7777-07-01T00:00:00.000Z")).toBe("7777-07-01T06:30:00.000Z");
    expect(nextTick("0 0 * * *", "UTC", "9999-12-30T12:00:00.000Z")).toBe("9999-12-31T00:00:00.000Z");
    expect(nextTick("* * * * *", "UTC", "9999-12-31T23:59:00.000Z")).toBeNull();
    const span = ticksBetween("0 * * * *", "UTC", "4999-12-31T22:30:00.000Z", "5000-01-01T02:30:00.000Z", 10);
    expect(span.ticks).toEqual(["4999-12-31T23:00:00.000Z", "5000-01-01T00:00:00.000Z", "5000-01-01T01:00:00.000Z", "5000-01-01T02:00:00.000Z"]);
  });
});
