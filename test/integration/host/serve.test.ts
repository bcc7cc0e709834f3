/**
 * `workflow-host serve` end to end: real disk, real `git`, the host in a child process.
 */
import { spawn } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { git, gitAt, hasGitCli, pushFiles } from "../../helpers/git-cli.js";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { CLI_MAIN, cliInProcess, killAllChildren, lockLeft, pollUntil, REPO_ROOT, spawnCli } from "./cli-child.js";
import { createWorkflowHost } from "../../../src/host/host.js";
import { firesOf, gitRunLog } from "./git-log.js";

const tempDir = useTempDirs("wfh-serve-");

beforeAll(async () => {
  expect(await hasGitCli()).toBe(true);
});

afterEach(() => {
  killAllChildren();
});

describe("workflow-host serve", () => {
  // Each test starts one host child: a start-up (tsx loading the host's modules) costs seconds
  // under load, and the test's budget should not hold two of them plus fixed sleeps.
  it("fires a TimerSet pushed with git while serving, and stops on SIGTERM with exit 0 and no lock left", async () => {
    const root = await tempDir();
    const dataDir = join(root, "data");
    const gitdir = join(dataDir, "deployments", "dep.git");
    expect((await cliInProcess(["repo", "create", "--data-dir", dataDir, "--repo", "dep"])).code).toBe(0);

    const serve = spawnCli(["serve", "--data-dir", dataDir, "--poll-ms", "200"]);
    // A workflow runtime elsewhere: clone and commit while the host starts; push once it serves.
    const work = join(root, "work");
    await git(["clone", "--quiet", gitdir, work]);
    await mkdir(join(work, "runs", "r1", "events"), { recursive: true });
    await serve.waitFor(/^serving /);
    const dueNow = new Date().toISOString();
    const inASecond = new Date(Date.now() + 1_000).toISOString();
    await writeFile(join(work, "runs/r1/events/1.json"), JSON.stringify({ seq: 1, type: "TimerSet", data: { timerId: "t-now", fireAt: dueNow } }));
    await writeFile(join(work, "runs/r1/events/2.json"), JSON.stringify({ seq: 2, type: "TimerSet", data: { timerId: "t-soon", fireAt: inASecond } }));
    await git(["add", "runs"], { cwd: work });
    await git(["commit", "--quiet", "-m", "Set two timers"], { cwd: work });
    await git(["push", "--quiet", "origin", "HEAD:main"], { cwd: work });
    const firedNow = await pollUntil(async () => {
      const fired = firesOf(await gitRunLog(gitdir, "r1"), "t-now");
      return fired.length > 0 ? fired : undefined;
    }, 15_000, serve);
    expect(firedNow[0]?.data).toMatchObject({ scheduledFor: new Date(dueNow).toISOString() });

    const firedSoon = await pollUntil(async () => {
      const fired = firesOf(await gitRunLog(gitdir, "r1"), "t-soon");
      return fired.length > 0 ? fired : undefined;
    }, 20_000, serve);
    // Never before its fireAt.
    expect(Date.parse(String(firedSoon[0]?.data?.["firedAt"]))).toBeGreaterThanOrEqual(Date.parse(inASecond));
    expect(serve.stdout()).toMatch(/fired +dep\/r1\/t-now scheduledFor/);

    serve.kill("SIGTERM");
    expect(await serve.exited).toEqual({ code: 0, signal: null });
    expect(serve.stdout()).toMatch(/stopped on SIGTERM: 2 fired/);
    expect(lockLeft(dataDir)).toBe(false);

    const log = await gitRunLog(gitdir, "r1");
    expect(firesOf(log, "t-now")).toHaveLength(1);
    expect(firesOf(log, "t-soon")).toHaveLength(1);
    expect(log.map((e) => e.seq)).toEqual([1, 2, 3, 4]);
    await gitAt(gitdir, ["fsck", "--strict", "--no-progress"]);
    // The clone follows with a plain fast-forward pull.
    await git(["pull", "--quiet", "--ff-only", "origin", "main"], { cwd: work });
  });

  it("fires nothing twice after a restart: recovery finds every timer fired and arms none", async () => {
    const root = await tempDir();
    const dataDir = join(root, "data");
    const gitdir = join(dataDir, "deployments", "dep.git");
    expect((await cliInProcess(["repo", "create", "--data-dir", dataDir, "--repo", "dep"])).code).toBe(0);
    for (const timer of ["t-now", "t-soon"]) {
      expect((await cliInProcess(["timer", "set", "-d", dataDir, "-r", "dep", "--run", "r1", "-t", timer, "--fire-at", new Date().toISOString()])).code).toBe(0);
    }
    // The first host, stopped as SIGTERM stops serve, once both timers fired.
    const fired = new Set<string>();
    let bothFired: () => void = () => undefined;
    const both = new Promise<void>((resolve) => (bothFired = resolve));
    const first = createWorkflowHost({
      dataDir,
      watch: false,
      onEvent: (event) => {
        if (event.type === "fired") fired.add(event.timerId);
        if (fired.size === 2) bothFired();
      },
    });
    await first.start();
    try {
      await both;
    } finally {
      await first.stop();
    }
    expect(lockLeft(dataDir)).toBe(false);

    const again = spawnCli(["serve", "--data-dir", dataDir, "--poll-ms", "200"]);
    // Recovery arms nothing, so nothing can fire: no wait for a fire that should not come.
    await again.waitFor(/^serving .*0 timers armed/);
    again.kill("SIGTERM");
    expect((await again.exited).code).toBe(0);
    expect(again.stdout()).not.toMatch(/ fired /);
    expect(lockLeft(dataDir)).toBe(false);

    const log = await gitRunLog(gitdir, "r1");
    expect(firesOf(log, "t-now")).toHaveLength(1);
    expect(firesOf(log, "t-soon")).toHaveLength(1);
    expect(log.map((e) => e.seq)).toEqual([1, 2, 3, 4]);
    await gitAt(gitdir, ["fsck", "--strict", "--no-progress"]);
  });

  it("reports a bad event pushed with git on one line and keeps firing the healthy run", async () => {
    const root = await tempDir();
    const dataDir = join(root, "data");
    const gitdir = join(dataDir, "deployments", "dep.git");
    expect((await cliInProcess(["repo", "create", "--data-dir", dataDir, "--repo", "dep"])).code).toBe(0);
    const serve = spawnCli(["serve", "--data-dir", dataDir, "--poll-ms", "200", "--json"]);
    await serve.waitFor(/"event":"serving"/);
    const work = join(root, "work");
    await git(["clone", "--quiet", gitdir, work]);
    await mkdir(join(work, "runs/run-b/events"), { recursive: true });
    await mkdir(join(work, "runs/run-c/events"), { recursive: true });
    await writeFile(join(work, "runs/run-b/events/1.json"), '{"type":"TimerSet",');
    await writeFile(join(work, "runs/run-c/events/1.json"), JSON.stringify({ seq: 1, type: "TimerSet", data: { timerId: "ok", fireAt: new Date().toISOString() } }));
    await git(["add", "runs"], { cwd: work });
    await git(["commit", "--quiet", "-m", "One bad, one good"], { cwd: work });
    await git(["push", "--quiet", "origin", "HEAD:main"], { cwd: work });
    const bad = JSON.parse(await serve.waitFor(/"event":"bad-event"/)) as Record<string, unknown>;
    expect(bad).toMatchObject({ repoId: "dep", runId: "run-b", path: "runs/run-b/events/1.json", seq: 1, error: { code: "event_invalid" } });
    await pollUntil(async () => (firesOf(await gitRunLog(gitdir, "run-c"), "ok").length === 1 ? true : undefined), 20_000, serve);
    serve.kill("SIGINT");
    expect((await serve.exited).code).toBe(0);
  });

  it("reports a cancellation written by another process, once", async () => {
    const root = await tempDir();
    const dataDir = join(root, "data");
    expect((await cliInProcess(["repo", "create", "--data-dir", dataDir, "--repo", "dep"])).code).toBe(0);
    expect((await cliInProcess(["timer", "set", "-d", dataDir, "-r", "dep", "--run", "order-17", "-t", "due", "--delay-ms", "3600000"])).code).toBe(0);
    const serve = spawnCli(["serve", "--data-dir", dataDir, "--poll-ms", "200", "--json"]);
    await serve.waitFor(/"event":"serving"/);
    expect((await cliInProcess(["timer", "cancel", "-d", dataDir, "-r", "dep", "--run", "order-17", "-t", "due", "--reason", "paid"])).code).toBe(0);
    const line = JSON.parse(await serve.waitFor(/"event":"cancelled"/)) as Record<string, unknown>;
    expect(line).toMatchObject({ repoId: "dep", runId: "order-17", timerId: "due", commitSha: expect.stringMatching(/^[0-9a-f]{40}$/) });
    serve.kill("SIGINT");
    expect((await serve.exited).code).toBe(0);
    expect(serve.stdout().split("\n").filter((l) => l.includes('"event":"cancelled"'))).toHaveLength(1);
  });

  it("stops as on SIGTERM, exit 0 and the lock released, when its stdout reader goes away (`serve --json | head -1`)", async () => {
    const root = await tempDir();
    const dataDir = join(root, "data");
    expect((await cliInProcess(["repo", "create", "--data-dir", dataDir, "--repo", "dep"])).code).toBe(0);
    const exit = await new Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>((resolve, reject) => {
      const child = spawn(process.execPath, ["--import", "tsx", CLI_MAIN, "serve", "--data-dir", dataDir, "--poll-ms", "200", "--json"], { cwd: REPO_ROOT, stdio: ["ignore", "pipe", "pipe"] });
      let stderr = "";
      child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
      // Like head -1: read one line, then close the pipe; the next report meets EPIPE.
      let stdout = "";
      child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
        stdout += chunk;
        if (!stdout.includes("\n") || child.stdout.destroyed) return;
        child.stdout.destroy();
        void cliInProcess(["timer", "set", "-d", dataDir, "-r", "dep", "--run", "r1", "-t", "t1", "--delay-ms", "3600000"]).catch(reject);
      });
      const guard = setTimeout(() => child.kill("SIGKILL"), 30_000);
      child.on("error", reject);
      child.on("close", (code, signal) => {
        clearTimeout(guard);
        resolve({ code, signal, stderr });
      });
    });
    expect({ code: exit.code, signal: exit.signal }).toEqual({ code: 0, signal: null });
    // Released, not left for the next start to take over.
    expect(lockLeft(dataDir)).toBe(false);
    expect(exit.stderr).not.toContain("taking over");
  });

  it("reports a pushed bad event once per start, on stdout only, and not at all once acknowledged", async () => {
    const root = await tempDir();
    const dataDir = join(root, "data");
    const gitdir = join(dataDir, "deployments", "dep.git");
    expect((await cliInProcess(["repo", "create", "--data-dir", dataDir, "--repo", "dep"])).code).toBe(0);
    const work = join(root, "work");
    await pushFiles(gitdir, work, { "runs/run-b/events/1.json": '{"type":"TimerSet",' }, "A bad event");
    const badLines = (text: string): string[] => text.split("\n").filter((l) => l.includes("bad-event") || l.includes("bad event"));

    const first = spawnCli(["serve", "--data-dir", dataDir, "--poll-ms", "200", "--json"]);
    await first.waitFor(/"event":"bad-event"/);
    await first.waitFor(/"event":"serving"/);
    // A later commit to the same run makes the host read it again: still one report.
    await pushFiles(gitdir, work, { "runs/run-b/events/2.json": JSON.stringify({ seq: 2, type: "TimerSet", data: { timerId: "later", fireAt: "2099-01-01T00:00:00Z" } }) }, "Another event in the same run");
    await first.waitFor(/"event":"armed".*"timerId":"later"/);
    first.kill("SIGINT");
    expect((await first.exited).code).toBe(0);
    expect(badLines(first.stdout())).toHaveLength(1);
    expect(badLines(first.stderr())).toEqual([]);

    expect((await cliInProcess(["check", "--data-dir", dataDir, "--acknowledge", "--by", "ops"])).code).toBe(0);
    const second = spawnCli(["serve", "--data-dir", dataDir, "--poll-ms", "200", "--json"]);
    await second.waitFor(/"event":"serving"/);
    second.kill("SIGINT");
    expect((await second.exited).code).toBe(0);
    expect(badLines(second.stdout())).toEqual([]);
    expect(badLines(second.stderr())).toEqual([]);
  });

  it("keeps serving when the acknowledgements ref is torn: the bad event is reported, nothing crashes", async () => {
    const root = await tempDir();
    const dataDir = join(root, "data");
    const gitdir = join(dataDir, "deployments", "dep.git");
    expect((await cliInProcess(["repo", "create", "--data-dir", dataDir, "--repo", "dep"])).code).toBe(0);
    const work = join(root, "work");
    await pushFiles(gitdir, work, { "runs/run-b/events/1.json": '{"type":"TimerSet",' }, "A bad event");
    // A writer of the acknowledgements ref that died mid-write (or a damaged disk).
    await mkdir(join(gitdir, "refs/workflow-host"), { recursive: true });
    await writeFile(join(gitdir, "refs/workflow-host/acknowledged"), "torn");

    const serve = spawnCli(["serve", "--data-dir", dataDir, "--poll-ms", "200", "--json"]);
    await serve.waitFor(/"event":"bad-event"/);
    await serve.waitFor(/"event":"serving"/);
    serve.kill("SIGINT");
    expect((await serve.exited).code).toBe(0);
    expect(serve.stderr()).not.toContain("WorkflowHostError");
  });
});
