import { existsSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { git } from "../../helpers/git-cli.js";
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

describe("a --data-dir below a file (its parent is a regular file)", () => {
  it.each([
    [["timers"]],
    [["serve", "--init"]],
    [["repo", "create", "--repo", "r"]],
    [["demo"]],
  ])("is data_dir_not_found naming the file, not io_failed (ENOTDIR), exit 1: %j", async (command) => {
    const root = await tempDir();
    const file = join(root, "data");
    await writeFile(file, "");
    const run = await runCliInProcess([...command, "--data-dir", join(file, "sub", "deeper")]);
    expect({ code: run.code, error: errorCodeOf(run.stderr) }).toEqual({ code: 1, error: "data_dir_not_found" });
    expect(run.stderr).toContain(`${file} is a file`);
  });
});

describe("check --by without --acknowledge", () => {
  it("is a bad flag (exit 2), not silently ignored", async () => {
    const root = await tempDir();
    const run = await runCliInProcess(["check", "--data-dir", root, "--by", "ana"]);
    expect({ code: run.code, error: errorCodeOf(run.stderr) }).toEqual({ code: 2, error: "usage" });
  });
});

describe("a data dir whose path holds a space", () => {
  it("is quoted in the commands check and timers suggest", async () => {
    const root = await tempDir();
    const dataDir = join(root, "my data");
    expect((await runCliInProcess(["repo", "create", "--data-dir", dataDir, "--repo", "dep"])).code).toBe(0);
    const work = join(root, "work");
    await git(["clone", "--quiet", join(dataDir, "deployments", "dep.git"), work]);
    await mkdir(join(work, "runs/r1/events"), { recursive: true });
    await writeFile(join(work, "runs/r1/events/1.json"), "not json");
    await git(["add", "runs"], { cwd: work });
    await git(["commit", "--quiet", "-m", "A bad event"], { cwd: work });
    await git(["push", "--quiet", "origin", "HEAD:main"], { cwd: work });
    const quoted = `--data-dir '${dataDir}'`;
    expect((await runCliInProcess(["check", "--data-dir", dataDir])).stdout).toContain(`workflow-host check ${quoted} --acknowledge`);
    expect((await runCliInProcess(["timers", "--data-dir", dataDir])).stdout).toContain(`workflow-host check ${quoted}`);
  });
});

describe("a --data-dir to be made where folders refuse new entries (/proc)", () => {
  // node's recursive mkdir loops for ever there (mkdir says ENOENT although the parent exists).
  it.skipIf(!existsSync("/proc/self"))
    .each([[["repo", "create", "--repo", "r"]], [["serve", "--init"]]])("ends with one typed error line, exit 1, instead of hanging: %j", async (command) => {
      const run = await runCliInProcess([...command, "--data-dir", `/proc/wfh-no-such-${process.pid}/data`]);
      expect({ code: run.code, error: errorCodeOf(run.stderr), lines: run.stderr.trim().split("\n").length }).toEqual({ code: 1, error: "io_failed", lines: 1 });
    });
});
