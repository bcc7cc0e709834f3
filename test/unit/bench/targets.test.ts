import { describe, expect, it } from "vitest";
import { judge, ms, target, times } from "../../../bench/table.js";

describe("benchmark target checks", () => {
  it("mark a negative round trip invalid, never met", () => {
    // The figure a full run once printed for a cross-process round trip (clocks of two processes).
    const check = target("signal round trip p50 < 250 ms across processes", -5_265, 250, "max", ms);
    expect(check.verdict).toBe("invalid");
  });

  it("mark NaN and infinite figures invalid whichever way the limit points", () => {
    for (const value of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]) {
      expect(judge(value, 50, "max")).toBe("invalid");
      expect(judge(value, 50, "min")).toBe("invalid");
    }
  });

  it("mark a ratio invalid when a figure it was computed from is invalid", () => {
    // -2 / -1 is a plausible-looking 2×: only its inputs show it is nonsense.
    expect(target("warm ≥ 1.5× faster than cold", -2 / -1, 1.5, "min", times, [-2, -1]).verdict).toBe("invalid");
    expect(judge(10, 3, "min", [100, Number.NaN])).toBe("invalid");
  });

  it("judge valid figures against the limit, the limit itself included", () => {
    expect(judge(39, 50, "max")).toBe("met");
    expect(judge(50, 50, "max")).toBe("met");
    expect(judge(51, 50, "max")).toBe("missed");
    expect(judge(0, 50, "max")).toBe("met");
    expect(judge(2_000, 2_000, "min")).toBe("met");
    expect(judge(1_999, 2_000, "min")).toBe("missed");
  });

  it("refuse a target whose limit is not a finite, non-negative number", () => {
    expect(() => judge(1, Number.NaN, "max")).toThrow(RangeError);
    expect(() => judge(1, -1, "min")).toThrow(RangeError);
  });
});
