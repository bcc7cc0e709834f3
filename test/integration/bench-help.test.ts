/**
 * `npm run bench -- --help` prints how to run the benchmarks (flags and every benchmark's
 * name) and exits 0 without running any; an unknown flag is still refused.
 */
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { BENCHMARKS } from "../../bench/run.js";
import { runTsScript } from "../helpers/child-process.js";

const root = fileURLToPath(new URL("../..", import.meta.url));

describe("npm run bench -- --help", () => {
  it("prints the flags and every benchmark's name, runs nothing, exits 0", { timeout: 60_000 }, async () => {
    for (const flag of ["--help", "-h"]) {
      const run = await runTsScript(join(root, "bench", "run.ts"), [flag], { timeoutMs: 50_000 });
      expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: "" });
      for (const text of ["--quick", "--huge", "--only", ...BENCHMARKS.map((b) => b.name)]) expect(run.stdout).toContain(text);
      expect(run.stdout).not.toMatch(/^### /m);
    }
  });

  it("refuses an unknown flag with exit 1 and names the known ones", { timeout: 60_000 }, async () => {
    const run = await runTsScript(join(root, "bench", "run.ts"), ["--fast"], { timeoutMs: 50_000 });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("--help");
  });
});

describe("npm run bench with a bad --only", () => {
  it("says what is wrong on one line (no stack trace), prints and runs nothing, exits 1", { timeout: 60_000 }, async () => {
    const run = await runTsScript(join(root, "bench", "run.ts"), ["--quick", "--only", "nope"], { timeoutMs: 50_000 });
    expect(run.code).toBe(1);
    expect(run.stdout).toBe("");
    expect(run.stderr.trim().split("\n")).toHaveLength(1);
    expect(run.stderr).toContain("unknown benchmark nope; known: fire, lateness");
  });
});
