/**
 * A data dir that turns read-only for 20 s under a running `serve` (issue 19, fault 7): a real
 * read-only bind mount in the server's own mount namespace (`unshare -m`, then `nsenter` to
 * remount), so every write the host makes fails with EROFS, even as root. The host must keep
 * running, say what failed (the errno), and catch up by itself once the disk takes writes:
 * every timer that came due meanwhile fires exactly once.
 */
import { execFileSync, spawn } from "node:child_process";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { readDeploymentLog } from "../reliability/deployment-log.js";
import { CLI_MAIN, REPO_ROOT, pollFor, sleep } from "../reliability/serve-process.js";
import { cliInProcess } from "./cli-child.js";

const tempDir = useTempDirs("wfh-readonly-");
const running = new Set<ReturnType<typeof spawn>>();

afterEach(() => {
  for (const child of running) child.kill("SIGKILL");
  running.clear();
});

/** Runs `mount` inside the mount namespace of process `pid`. */
function mountIn(pid: number, args: readonly string[]): void {
  execFileSync("nsenter", ["-t", String(pid), "-m", "mount", ...args]);
}

describe("read-only data dir", () => {
  it("keeps serving through 20 s of a read-only data dir, names the errno, and fires what came due meanwhile once", async () => {
    const dataDir = join(await tempDir(), "data");
    expect((await cliInProcess(["repo", "create", "--data-dir", dataDir, "--repo", "dep"])).code).toBe(0);
    const startMs = Date.now();
    const dueAt = [4_000, 9_000, 14_000, 19_000, 30_000].map((ms) => new Date(startMs + ms).toISOString());
    for (const [i, fireAt] of dueAt.entries()) {
      expect((await cliInProcess(["timer", "set", "--data-dir", dataDir, "--repo", "dep", "--run", "r1", "--timer", `t${i}`, "--fire-at", fireAt])).code).toBe(0);
    }

    const child = spawn("unshare", ["-m", "--propagation", "private", process.execPath, "--import", "tsx", CLI_MAIN, "serve", "--data-dir", dataDir, "--json", "--lock-stale-ms", "4000", "--poll-ms", "200"], {
      cwd: REPO_ROOT,
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, WORKFLOW_HOST_DATA_DIR: "" },
    });
    running.add(child);
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")));
    let exitCode: number | null | undefined;
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve((exitCode = code))));
    await pollFor(() => (output.includes('"event":"serving"') ? true : undefined), 60_000, 50, "serving");
    const pid = child.pid as number;

    mountIn(pid, ["--bind", dataDir, dataDir]);
    mountIn(pid, ["-o", "remount,ro,bind", dataDir]);
    await sleep(20_000);
    expect(exitCode).toBeUndefined();
    mountIn(pid, ["-o", "remount,rw,bind", dataDir]);

    await pollFor(
      async () => {
        const log = await readDeploymentLog(dataDir, "dep");
        const fired = (log.runs.get("r1")?.events ?? []).filter((e) => e.type === "TimerFired").length;
        return fired >= dueAt.length ? log : undefined;
      },
      60_000,
      250,
      "every timer fired",
    );
    const log = await readDeploymentLog(dataDir, "dep");
    for (let i = 0; i < dueAt.length; i++) {
      const fires = (log.runs.get("r1")?.events ?? []).filter((e) => e.type === "TimerFired" && (e as unknown as { data: { timerId: string } }).data.timerId === `t${i}`);
      expect(fires, `t${i}`).toHaveLength(1);
    }
    // Still the same host, and it said what failed.
    expect(exitCode).toBeUndefined();
    expect(output).toContain("EROFS");
    expect(output).not.toMatch(/lock was lost/);
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
  }, 150_000);
});
