/**
 * `npm run bench` arguments: `--only` without a name must not fall back to the full run (27
 * minutes, rewriting bench/RESULTS.md), and names are checked before anything runs.
 */
import { describe, expect, it } from "vitest";
import { BenchUsageError, parseBenchArgs } from "../../../bench/run.js";

describe("parseBenchArgs", () => {
  it.each([[["--only"]], [["--quick", "--only"]], [["--only="]], [["--only", ""]], [["--only", ","]], [["--only=,"]]])(
    "refuses %j (no benchmark named) instead of running them all",
    (argv) => {
      expect(() => parseBenchArgs(argv)).toThrow(BenchUsageError);
      expect(() => parseBenchArgs(argv)).toThrow(/--only needs/);
    },
  );

  it("refuses an unknown benchmark name, naming the known ones", () => {
    expect(() => parseBenchArgs(["--only", "lateness,nope"])).toThrow(BenchUsageError);
    expect(() => parseBenchArgs(["--only", "nope"])).toThrow(/unknown benchmark nope; known: fire, lateness/);
  });

  it("refuses an unknown flag", () => {
    expect(() => parseBenchArgs(["--fast"])).toThrow(BenchUsageError);
  });

  it("reads the flags it knows", () => {
    expect(parseBenchArgs(["--quick", "--only", "lateness", "--only=fire,http"])).toEqual({ quick: true, huge: false, only: ["lateness", "fire", "http"] });
    expect(parseBenchArgs([])).toEqual({ quick: false, huge: false, only: [] });
  });
});
