/**
 * Output that cannot be written (stdout on a full disk: /dev/full) is one typed line on stderr,
 * `workflow-host: io_failed: …`, and exit 1; never an uncaught exception with a stack trace.
 * `serve` stops as on a closed pipe (its lock released) and exits 1.
 */
import { spawn } from "node:child_process";
import { existsSync, openSync, closeSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { runCli } from "../../unit/cli/cli-io.js";

const tempDir = useTempDirs("wfh-full-stdout-");
const cliMain = fileURLToPath(new URL("../../../src/cli/main.ts", import.meta.url));

function runWithStdoutOnDevFull(args: readonly string[]): Promise<{ code: number | null; stderr: string }> {
  const full = openSync("/dev/full", "w");
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", cliMain, ...args], { stdio: ["ignore", full, "pipe"] });
    closeSync(full);
    let stderr = "";
    child.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
    const killer = setTimeout(() => child.kill("SIGKILL"), 60_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(killer);
      resolve({ code, stderr });
    });
  });
}

describe.skipIf(!existsSync("/dev/full"))("stdout on a full disk", () => {
  it("repo list: one io_failed line on stderr, exit 1", async () => {
    const dataDir = join(await tempDir(), "data");
    expect((await runCli(["repo", "create", "-d", dataDir, "-r", "dep"])).code).toBe(0);
    const run = await runWithStdoutOnDevFull(["repo", "list", "-d", dataDir]);
    expect(run.code).toBe(1);
    expect(run.stderr.trim().split("\n")).toHaveLength(1);
    expect(run.stderr).toMatch(/^workflow-host: io_failed: /);
  });

  it("serve: stops, releases its lock and exits 1", async () => {
    const dataDir = join(await tempDir(), "data");
    expect((await runCli(["repo", "create", "-d", dataDir, "-r", "dep"])).code).toBe(0);
    const run = await runWithStdoutOnDevFull(["serve", "-d", dataDir]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^workflow-host: io_failed: /m);
    expect(existsSync(join(dataDir, "host.lock"))).toBe(false);
  });
});
