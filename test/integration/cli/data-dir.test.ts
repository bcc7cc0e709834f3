import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { errorCodeOf, runCliInProcess } from "../reliability/cli-in-process.js";

const tempDir = useTempDirs("wh-cli-data-dir-");

describe("a --data-dir that names a file, not a folder", () => {
  it.each([
    [["timers"]],
    [["repo", "list"]],
    [["serve"]],
    [["serve", "--init"]],
    [["repo", "create", "--repo", "r"]],
  ])("is data_dir_not_found saying it is a file, exit 1: %j", async (command) => {
    const root = await tempDir();
    const file = join(root, "data");
    await writeFile(file, "");
    const run = await runCliInProcess([...command, "--data-dir", file]);
    expect({ code: run.code, error: errorCodeOf(run.stderr), lines: run.stderr.trim().split("\n").length }).toEqual({ code: 1, error: "data_dir_not_found", lines: 1 });
    expect(run.stderr).toContain("is a file, not a folder");
    expect(run.stderr).not.toContain("does not exist");
  });
});

describe("check --by without --acknowledge", () => {
  it("is a bad flag (exit 2), not silently ignored", async () => {
    const root = await tempDir();
    const run = await runCliInProcess(["check", "--data-dir", root, "--by", "ana"]);
    expect({ code: run.code, error: errorCodeOf(run.stderr) }).toEqual({ code: 2, error: "usage" });
  });
});
