/**
 * Every help text fits a 100-column terminal: the top-level help, each command's `--help`, and
 * each group's (`workflow-host schedule --help`). A longer line wrapped mid-word in the reader's
 * terminal, options and examples included.
 */
import { describe, expect, it } from "vitest";
import { commands } from "../../../src/cli/commands/index.js";
import { runCli } from "./cli-io.js";

const MAX_COLUMNS = 100;
const groups = [...new Set(commands.filter((c) => c.name.length > 1).map((c) => c.name[0] as string))];
const helpCalls: string[][] = [["--help"], ...commands.map((c) => [...c.name, "--help"]), ...groups.map((g) => [g, "--help"])];

/** The lines of `text` longer than the limit (in code points), with their width. */
function overlong(text: string): string[] {
  return text
    .split("\n")
    .filter((line) => [...line].length > MAX_COLUMNS)
    .map((line) => `${[...line].length}: ${line}`);
}

describe(`help texts fit ${MAX_COLUMNS} columns`, () => {
  it.each(helpCalls.map((argv) => [argv.join(" "), argv] as const))("workflow-host %s", async (_, argv) => {
    const run = await runCli(argv);
    expect(run.code).toBe(0);
    expect(run.stdout.length).toBeGreaterThan(0);
    expect(overlong(run.stdout)).toEqual([]);
  });

  // An example's continuation line without the previous line's trailing ` \` ran as a command of
  // its own when pasted (repo create's --remote-base).
  it.each(helpCalls.map((argv) => [argv.join(" "), argv] as const))("workflow-host %s: examples paste", async (_, argv) => {
    const lines = (await runCli(argv)).stdout.split("\n");
    const broken: string[] = [];
    let inExamples = false;
    lines.forEach((line, i) => {
      if (/^Examples?:$/.test(line)) inExamples = true;
      else if (line.trim() === "") inExamples = false;
      else if (inExamples && /^\s+-/.test(line) && !(lines[i - 1] ?? "").endsWith(" \\")) broken.push(line);
    });
    expect(broken).toEqual([]);
  });

  // Prose wrapped before a dash that is no flag split an argument from its command ("head" / "-1").
  it.each(helpCalls.map((argv) => [argv.join(" "), argv] as const))("workflow-host %s: no line starts with a bare argument", async (_, argv) => {
    const lines = (await runCli(argv)).stdout.split("\n");
    expect(lines.filter((line) => /^\s*-(?!-?[a-z])/.test(line))).toEqual([]);
  });
});
