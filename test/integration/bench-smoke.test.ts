/**
 * The benchmarks' smoke run (`npm run bench -- --quick`): every benchmark runs at small sizes
 * and prints its table. Figures are not asserted: a benchmark measures, it does not test.
 */
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { runTsScript } from "../helpers/child-process.js";

const root = fileURLToPath(new URL("../..", import.meta.url));

describe("npm run bench -- --quick", () => {
  it("runs every benchmark and prints one table each, with a row per size", { timeout: 900_000 }, async () => {
    const run = await runTsScript(join(root, "bench", "run.ts"), ["--quick"], { timeoutMs: 880_000 });
    expect({ code: run.code, signal: run.signal, stderr: run.code === 0 ? "" : run.stderr.slice(-3_000) }).toEqual({ code: 0, signal: null, stderr: "" });
    const titles = [...run.stdout.matchAll(/^### (\d+)\. /gm)].map((m) => m[1]);
    expect(titles).toEqual(["1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11"]);
    for (const section of run.stdout.split(/^### /m).slice(1)) {
      const rows = section.split("\n").filter((line) => line.startsWith("| ") && !line.startsWith("| size"));
      expect(rows.length).toBeGreaterThan(0);
      for (const row of rows) expect(row.split("|").filter((cell) => cell.trim() !== "")).toHaveLength(4);
    }
    expect(run.stderr).not.toMatch(/Error|exited/);
  });
});
