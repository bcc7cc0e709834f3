/**
 * The host lock between real processes (cases D1, D3).
 */
import { existsSync, mkdirSync, readFileSync, utimesSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { gitAt } from "../../helpers/git-cli.js";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { cliInProcess, killAllChildren, lockLeft, pollUntil, runCliProcess, spawnCli, type RunningChild } from "./cli-child.js";
import { firesOf, gitRunLog } from "./git-log.js";

const tempDir = useTempDirs("wfh-lock-");

afterEach(() => {
  killAllChildren();
});

async function newDataDir(): Promise<string> {
  const dataDir = join(await tempDir(), "data");
  expect((await cliInProcess(["repo", "create", "--data-dir", dataDir, "--repo", "dep"])).code).toBe(0);
  return dataDir;
}

async function terminate(child: RunningChild): Promise<number | null> {
  child.kill("SIGTERM");
  return (await child.exited).code;
}

describe("host lock across processes", () => {
  it("refuses a second serve on the same data dir with host_locked naming the running one (D1)", async () => {
    const dataDir = await newDataDir();
    const first = spawnCli(["serve", "--data-dir", dataDir]);
    await first.waitFor(/^serving /);
    const second = await runCliProcess(["serve", "--data-dir", dataDir]);
    expect(second.code).toBe(1);
    expect(second.stderr).toMatch(new RegExp(`^workflow-host: host_locked: data dir .* is locked by pid ${first.pid} on \\S+ since \\S+`, "m"));
    expect(second.stdout).not.toMatch(/^serving /m);
    // The first host is untouched: still holding the lock, still serving.
    expect(JSON.parse(readFileSync(join(dataDir, "host.lock.json"), "utf8"))).toMatchObject({ pid: first.pid });
    expect(await terminate(first)).toBe(0);
    expect(lockLeft(dataDir)).toBe(false);
  });

  it("lets exactly one of two serves started together run; each due tick fires once (D1)", async () => {
    const dataDir = await newDataDir();
    expect((await cliInProcess(["timer", "set", "-d", dataDir, "-r", "dep", "--run", "r1", "-t", "tick", "--cron", "* * * * * *"])).code).toBe(0);
    const a = spawnCli(["serve", "--data-dir", dataDir, "--poll-ms", "200"]);
    const b = spawnCli(["serve", "--data-dir", dataDir, "--poll-ms", "200"]);
    const outcome = (child: RunningChild): Promise<"serving" | "refused"> =>
      Promise.race([child.waitFor(/^serving /, 30_000).then(() => "serving" as const), child.exited.then(() => "refused" as const)]);
    const [ra, rb] = await Promise.all([outcome(a), outcome(b)]);
    expect([ra, rb].sort()).toEqual(["refused", "serving"]);
    const [winner, loser] = ra === "serving" ? [a, b] : [b, a];
    expect((await loser.exited).code).toBe(1);
    expect(loser.stderr()).toMatch(/^workflow-host: host_locked: /m);
    // Wait for two ticks in the log (not for a time), then check none fired twice.
    await pollUntil(async () => (firesOf(await gitRunLog(join(dataDir, "deployments", "dep.git"), "r1"), "tick").length >= 2 ? true : undefined), 20_000, winner);
    expect(await terminate(winner)).toBe(0);
    const fired = firesOf(await gitRunLog(join(dataDir, "deployments", "dep.git"), "r1"), "tick");
    const ticks = fired.map((e) => String(e.data?.["scheduledFor"]));
    expect(new Set(ticks).size).toBe(ticks.length);
  });

  it("waits for the guard another host holds (host.lock.guard/, made while it takes or releases the lock) instead of exiting without a word", async () => {
    const dataDir = await newDataDir();
    const guard = join(dataDir, "host.lock.guard");
    // As another host holds it in the middle of an acquire: refreshed (its mtime set to now)
    // every 250 ms for the first 2.5 s, so it is fresh whenever the host looks at it then, however
    // long the host takes to start, and waited for; then left to go stale 2 s later (within the
    // host's 5 s wait for a guard), removed and the lock taken.
    mkdirSync(guard);
    const serve = spawnCli(["serve", "--data-dir", dataDir]);
    let refreshing = true;
    const refresher = setInterval(() => {
      const now = new Date();
      try {
        utimesSync(guard, now, now);
      } catch {
        // Removed once stale: nothing left to refresh.
      }
    }, 250);
    const stopRefreshing = setTimeout(() => {
      clearInterval(refresher);
      refreshing = false;
    }, 2_500);
    try {
      const outcome = await Promise.race([
        serve.waitFor(/^serving /, 30_000).then(() => (refreshing ? "serving while the guard was fresh" : "serving")),
        serve.exited.then((exit) => `exited ${exit.code} ${serve.stderr()}`),
      ]);
      expect(outcome).toBe("serving");
    } finally {
      clearInterval(refresher);
      clearTimeout(stopRefreshing);
    }
    expect(await terminate(serve)).toBe(0);
  });

  it("takes over the lock of a SIGKILLed host, logs the takeover, and fires its timers once (D3)", async () => {
    const dataDir = await newDataDir();
    const gitdir = join(dataDir, "deployments", "dep.git");
    // The timer is set once the first host serves, and that host is killed as soon as it says it
    // armed it: the 5 s before it is due are spent by the kill alone (not by the host's start-up,
    // which takes seconds under load), so the fire is left to the host that takes over.
    const crashed = spawnCli(["serve", "--data-dir", dataDir, "--poll-ms", "200"]);
    await crashed.waitFor(/^serving /);
    expect((await cliInProcess(["timer", "set", "-d", dataDir, "-r", "dep", "--run", "r1", "-t", "after-crash", "--delay-ms", "5000"])).code).toBe(0);
    await crashed.waitFor(/ armed +dep\/r1\/after-crash for /);
    crashed.kill("SIGKILL");
    expect((await crashed.exited).signal).toBe("SIGKILL");
    // A killed process releases nothing: its lock folder and holder file stay behind.
    expect(existsSync(join(dataDir, "host.lock"))).toBe(true);
    expect(JSON.parse(readFileSync(join(dataDir, "host.lock.json"), "utf8"))).toMatchObject({ pid: crashed.pid });

    const takeoverStartedMs = Date.now();
    const next = spawnCli(["serve", "--data-dir", dataDir]);
    await next.waitFor(/^serving /);
    const startupMs = Date.now() - takeoverStartedMs;
    expect(next.stderr()).toMatch(new RegExp(`taking over the host lock of .*its holder, pid ${crashed.pid}, is not running`));
    await pollUntil(async () => (firesOf(await gitRunLog(gitdir, "r1"), "after-crash").length > 0 ? true : undefined), 60_000, next);
    expect(await terminate(next)).toBe(0);
    expect(lockLeft(dataDir)).toBe(false);
    expect(firesOf(await gitRunLog(gitdir, "r1"), "after-crash")).toHaveLength(1);
    await gitAt(gitdir, ["fsck", "--strict", "--no-progress"]);
    console.info(`lock: host after a SIGKILLed one was serving ${startupMs} ms after start (takeover included)`);
  }, 120_000);
});
