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
});
