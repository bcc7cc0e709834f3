/**
 * Rules of the code base that no single behaviour test can see (issue 13):
 * - time is injected: outside src/time, the CLI and the test kit's FakeClock, no code reads
 *   `Date.now`, `performance.now` or calls node's global `setTimeout`;
 * - every append to a run's log goes through the run-log writer (`openRunLog`): only it calls
 *   `appendRunEvents`.
 * Comments are left out of the scan: they may name what the code must not call.
 */
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../../", import.meta.url));

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(`${root}${dir}`, { withFileTypes: true })) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) out.push(...sourceFiles(path));
    else if (entry.name.endsWith(".ts")) out.push(path);
  }
  return out;
}

/** The file's code lines (1-based numbers kept), block and line comments blanked. */
function codeLines(path: string): { line: number; text: string }[] {
  const text = readFileSync(`${root}${path}`, "utf8").replace(/\/\*[\s\S]*?\*\//g, (block) => block.replace(/[^\n]/g, " "));
  return text.split("\n").map((line, i) => ({ line: i + 1, text: line.replace(/(^|[^:"'`])\/\/.*$/, "$1") }));
}

function offending(pattern: RegExp, allowed: (path: string) => boolean): string[] {
  const hits: string[] = [];
  for (const path of [...sourceFiles("src"), ...sourceFiles("seams")]) {
    if (allowed(path)) continue;
    for (const { line, text } of codeLines(path)) if (pattern.test(text)) hits.push(`${path}:${line}: ${text.trim()}`);
  }
  return hits;
}

describe("source rules", () => {
  it("reads the time only through an injected clock or timers outside src/time and the CLI", () => {
    const timeRead = /\bDate\.now\(|\bperformance\.now\(|(?<![.\w])setTimeout\(/;
    const allowed = (path: string): boolean => path.startsWith("src/time/") || path.startsWith("src/cli/") || path === "src/testing/fake-clock.ts";
    expect(offending(timeRead, allowed)).toEqual([]);
  });

  it("appends to run logs only through the run-log writer", () => {
    const allowed = (path: string): boolean => path === "src/workflow/run-log-writer.ts" || path === "src/workflow/run-log-append.ts";
    // Imports and calls; re-exporting it (the workflow barrel) is not a use.
    expect(offending(/^\s*import\b.*\bappendRunEvents\b|\bappendRunEvents\s*(?:<[^>]*>)?\(/, allowed)).toEqual([]);
  });
});
