import { describe, expect, it } from "vitest";
import { tableSectionsOf } from "../../../bench/results.js";

const table = (n: number, title: string, figure: string): string => `### ${n}. ${title}\n\n| size | ours |\n|---|---|\n| a | ${figure} |\n`;

describe("tables a partial --huge run keeps from the previous file", () => {
  it("drops the tables measured now and keeps one table per benchmark, the first (newest) of each", () => {
    const previous = [
      "# Benchmark results",
      "",
      "## Tables",
      "",
      table(1, "Recovery (start)", "old 1"),
      "## Tables kept from the previous run of this file",
      "",
      table(1, "Retention (aged) — taken under load (1-min load 5 → 4 on 2 cores)", "newer"),
      table(1, "Retention (aged) — taken under load (1-min load 21 → 20 on 2 cores)", "older"),
      table(4, "Memory (queue)", "m"),
      table(1, "Recovery (start) — taken under load (1-min load 21 → 19 on 2 cores)", "old 2"),
      "## Design changes behind these figures",
      "",
      "### 1. Not a table",
    ].join("\n");
    const kept = tableSectionsOf(previous, ["Recovery (start)"]);
    expect(kept.map((k) => k.split("\n")[0])).toEqual(["### 1. Retention (aged) — taken under load (1-min load 5 → 4 on 2 cores)", "### 4. Memory (queue)"]);
    expect(kept.join("\n")).not.toContain("older");
  });
});
