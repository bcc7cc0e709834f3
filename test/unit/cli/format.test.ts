/**
 * Durations as the CLI prints them: two units at most, spaced, never a raw count of ms
 * beyond a second.
 */
import { describe, expect, it } from "vitest";
import { dueIn, duration } from "../../../src/cli/format.js";

describe("CLI durations", () => {
  it.each([
    [2, "2 ms"],
    [999, "999 ms"],
    [4_250, "4.2 s"],
    [190_000, "3 min 10 s"],
    [7_500_000, "2 h 5 min"],
    [3 * 86_400_000 + 4 * 3_600_000 + 59_000, "3 d 4 h"],
    [18_486_316_923, "213 d 23 h"],
  ])("prints %d ms as %s", (ms, text) => {
    expect(duration(ms)).toBe(text);
  });

  it("says whether a time is ahead or past due", () => {
    expect(dueIn(3 * 86_400_000 + 4 * 3_600_000)).toBe("in 3 d 4 h");
    expect(dueIn(-2)).toBe("late 2 ms");
  });
});
