/**
 * A reader that goes away early (`set -o pipefail; workflow-host check … | head -1`) must not
 * change what the exit code says: the rest of the output is dropped, the command ends with its
 * own code (1 when `check` found problems or a deployment could not be read), and nothing is
 * printed but the command's own error lines (never a stack trace).
 */
import { spawn } from "node:child_process";
import { appendFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { gitAt, pushFiles } from "../../helpers/git-cli.js";
import { makeTempDir, removeTempDir } from "../../helpers/temp-dir.js";
import { runCli } from "../../unit/cli/cli-io.js";
import { CLI_MAIN, REPO_ROOT } from "../host/cli-child.js";


/** Runs the CLI as a child whose stdout reader is gone before anything is written: every write meets EPIPE. */
function runWithClosedStdout(args: readonly string[]): Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", CLI_MAIN, ...args], {
      cwd: REPO_ROOT,
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, WORKFLOW_HOST_DATA_DIR: "" },
    });
    child.stdout.destroy();
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    child.on("error", reject);
    child.on("close", (code, signal) => resolve({ code, signal, stderr }));
  });
}

/** A data dir where `check` finds a bad event (in `dep`) and one deployment (`broken`) cannot be read. */
async function troubledDataDir(root: string): Promise<string> {
  const dataDir = join(root, "data");
  for (const repo of ["broken", "dep"]) {
    expect((await runCli(["repo", "create", "-d", dataDir, "-r", repo])).code).toBe(0);
    for (let i = 0; i < 2; i++) {
      expect((await runCli(["timer", "set", "-d", dataDir, "-r", repo, "--run", `r${i}`, "-t", "t1", "--fire-at", "2026-06-01T00:00:00Z"])).code).toBe(0);
    }
  }
  expect((await runCli(["timer", "set", "-d", dataDir, "-r", "dep", "--run", "c1", "-t", "tick", "--cron", "0 * * * *"])).code).toBe(0);
  const dep = join(dataDir, "deployments", "dep.git");
  await pushFiles(dep, join(root, "work"), { "runs/run-b/events/1.json": '{"type":"TimerSet",' }, "A bad event");
  const broken = join(dataDir, "deployments", "broken.git");
  await gitAt(broken, ["pack-refs", "--all"]);
  await appendFile(join(broken, "packed-refs"), "garbage line\n");
  return dataDir;
}

describe("a closed stdout keeps the command's exit code", () => {
  // One data dir for every case, and one child per test: a child's start-up costs seconds on a
  // loaded machine.
  let root = "";
  let dataDir = "";
  beforeAll(async () => {
    root = await makeTempDir("wfh-closed-stdout-");
    dataDir = await troubledDataDir(root);
  });
  afterAll(async () => {
    await removeTempDir(root);
  });

  it.each([
    [["check"], 1],
    [["check", "--json"], 1],
    [["timers"], 1],
    [["timers", "--json"], 1],
    [["runs", "list", "-r", "dep"], 0],
    [["schedule", "list", "-r", "dep"], 0],
  ] as [string[], number][])("%j exits %i as with stdout open, without a stack trace", async (command, code) => {
    const args = [...command, "-d", dataDir];
    // The same command with stdout open says the same: the case is what the test claims.
    const open = await runCli(args);
    expect(open.code, open.stderr).toBe(code);
    const run = await runWithClosedStdout(args);
    expect({ code: run.code, signal: run.signal }).toEqual({ code, signal: null });
    expect(run.stderr).not.toMatch(/^\s+at /m);
    for (const line of run.stderr.split("\n").filter((l) => l !== "")) expect(line).toMatch(/^workflow-host: /);
  });
});
