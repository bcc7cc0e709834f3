/**
 * A reader that goes away early (`set -o pipefail; workflow-host check … | head -1`) must not
 * change what the exit code says: the rest of the output is dropped, the command ends with its
 * own code (1 when `check` found problems or a deployment could not be read), and nothing is
 * printed but the command's own error lines (never a stack trace).
 */
import { spawn } from "node:child_process";
import { appendFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { gitAt, pushFiles } from "../../helpers/git-cli.js";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { runCli } from "../../unit/cli/cli-io.js";
import { CLI_MAIN, REPO_ROOT } from "../host/cli-child.js";

const tempDir = useTempDirs("wfh-closed-stdout-");

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
async function troubledDataDir(): Promise<string> {
  const root = await tempDir();
  const dataDir = join(root, "data");
  for (const repo of ["broken", "dep"]) {
    expect((await runCli(["repo", "create", "-d", dataDir, "-r", repo])).code).toBe(0);
    for (let i = 0; i < 20; i++) {
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
  it("check, timers, runs list and schedule list exit as they would with stdout open, without a stack trace", async () => {
    const dataDir = await troubledDataDir();
    const cases: [string[], number][] = [
      [["check", "-d", dataDir], 1],
      [["check", "-d", dataDir, "--json"], 1],
      [["timers", "-d", dataDir], 1],
      [["timers", "-d", dataDir, "--json"], 1],
      [["runs", "list", "-d", dataDir, "-r", "dep"], 0],
      [["schedule", "list", "-d", dataDir, "-r", "dep"], 0],
    ];
    for (const [args, code] of cases) {
      // The same command with stdout open says the same: the case is what the test claims.
      expect((await runCli(args)).code, args.join(" ")).toBe(code);
      const run = await runWithClosedStdout(args);
      expect({ args: args.join(" "), code: run.code, signal: run.signal }).toEqual({ args: args.join(" "), code, signal: null });
      expect(run.stderr).not.toMatch(/^\s+at /m);
      for (const line of run.stderr.split("\n").filter((l) => l !== "")) expect(line).toMatch(/^workflow-host: /);
    }
  });
});
