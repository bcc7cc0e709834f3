/**
 * The read and write commands on real disk. Most run `main()` in this process (fast, same code
 * path as the binary); exit codes that matter to scripts are also checked on a child process.
 */
import { spawn } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { git, gitAt, pushFiles } from "../../helpers/git-cli.js";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { runCli } from "../../unit/cli/cli-io.js";
import { CLI_MAIN, REPO_ROOT, runCliProcess } from "../host/cli-child.js";

const tempDir = useTempDirs("wfh-cli-");
const NOW = "2026-05-01T10:00:00.000Z";
const clock = (): Date => new Date(NOW);

async function cli(argv: readonly string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return runCli(argv, { clock });
}

async function json<T>(argv: readonly string[]): Promise<T> {
  const run = await cli([...argv, "--json"]);
  expect(run.stderr).toBe("");
  expect(run.code).toBe(0);
  return JSON.parse(run.stdout) as T;
}

interface TimersJson {
  now: string;
  timers: { repoId: string; runId: string; timerId: string; fireAt: string; dueInMs: number; lateMs: number; cron?: string; timezone?: string }[];
  badEvents: { path: string; seq: number | null; code: string }[];
}

describe("workflow-host commands on a data dir", () => {
  it("sets timers of every kind, lists them across deployments with their next fire time, cancels one", async () => {
    const dataDir = join(await tempDir(), "data");
    for (const repo of ["payments", "reports"]) expect((await cli(["repo", "create", "-d", dataDir, "-r", repo])).code).toBe(0);
    const set = await json<{ seq: number; path: string; fireAt: string }>(["timer", "set", "-d", dataDir, "-r", "payments", "--run", "order-17", "-t", "reminder", "--delay-ms", "60000"]);
    expect(set).toMatchObject({ seq: 1, path: "runs/order-17/events/1.json", fireAt: "2026-05-01T10:01:00.000Z" });
    expect((await cli(["timer", "set", "-d", dataDir, "-r", "payments", "--run", "order-17", "-t", "due", "--fire-at", "2026-05-01T09:00:00+02:00"])).stdout).toMatch(
      /^TimerSet seq 2 .* fires at 2026-05-01T07:00:00.000Z \(late 3 h 0 min\)/,
    );
    expect((await cli(["timer", "set", "-d", dataDir, "-r", "reports", "--run", "nightly", "-t", "tick", "--cron", "0 2 * * *", "--timezone", "Europe/Berlin", "--misfire", "latest"])).code).toBe(0);

    const listed = await json<TimersJson>(["timers", "-d", dataDir]);
    expect(listed.timers.map((t) => [t.repoId, t.runId, t.timerId, t.fireAt])).toEqual([
      ["payments", "order-17", "due", "2026-05-01T07:00:00.000Z"],
      ["payments", "order-17", "reminder", "2026-05-01T10:01:00.000Z"],
      ["reports", "nightly", "tick", "2026-05-02T00:00:00.000Z"],
    ]);
    expect(listed.now).toBe(NOW);
    // Exact ms in JSON, never negative: an overdue timer has lateMs, a future one dueInMs.
    expect(listed.timers.map((t) => [t.timerId, t.dueInMs, t.lateMs])).toEqual([
      ["due", 0, 3 * 3_600_000],
      ["reminder", 60_000, 0],
      ["tick", 14 * 3_600_000, 0],
    ]);
    expect(listed.timers[0]).not.toHaveProperty("overdueMs");
    expect(listed.timers[2]).toMatchObject({ cron: "0 2 * * *", timezone: "Europe/Berlin", misfire: "latest" });
    const human = await cli(["timers", "-d", dataDir, "--repo", "payments"]);
    expect(human.stdout).toMatch(/^REPO +RUN +TIMER +NEXT FIRE \(UTC\) +WHEN +KIND/);
    expect(human.stdout).toMatch(/payments +order-17 +due +2026-05-01T07:00:00.000Z +late 3 h 0 min +one-shot/);
    expect(human.stdout).toMatch(/payments +order-17 +reminder +2026-05-01T10:01:00.000Z +in 1 min 0 s +one-shot/);
    expect(human.stdout).not.toContain("nightly");

    expect(await json(["timer", "cancel", "-d", dataDir, "-r", "payments", "--run", "order-17", "-t", "reminder", "--reason", "paid"])).toMatchObject({ outcome: "cancelled" });
    expect(await json(["timer", "cancel", "-d", dataDir, "-r", "payments", "--run", "order-17", "-t", "reminder"])).toMatchObject({ outcome: "already_cancelled", commitSha: null });
    const unknown = await cli(["timer", "cancel", "-d", dataDir, "-r", "payments", "--run", "order-17", "-t", "nope"]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/^workflow-host: timer_not_found: /);
    expect((await json<TimersJson>(["timers", "-d", dataDir])).timers.map((t) => t.timerId)).toEqual(["due", "tick"]);

    const shown = await json<{ events: { seq: number; type: string }[]; state: { lastSeq: number; pendingTimers: { timerId: string }[] } }>([
      "runs", "show", "-d", dataDir, "-r", "payments", "--run", "order-17",
    ]);
    expect(shown.events.map((e) => e.type)).toEqual(["TimerSet", "TimerSet", "TimerCancelled"]);
    expect(shown.state.lastSeq).toBe(3);
    expect(shown.state.pendingTimers.map((t) => t.timerId)).toEqual(["due"]);
    expect((await cli(["runs", "show", "-d", dataDir, "-r", "payments", "--run", "order-17"])).stdout).toContain("TimerCancelled  reminder (paid)");
    // Every --json output is an object with a stable top-level shape.
    expect(await json(["runs", "list", "-d", dataDir, "-r", "payments"])).toEqual({
      repoId: "payments",
      ref: "refs/heads/main",
      commitSha: expect.stringMatching(/^[0-9a-f]{40}$/),
      archivedRuns: 0,
      runs: [{ runId: "order-17", lastSeq: 3, terminal: null, pendingTimers: 1, unconsumedSignals: 0, badEvents: 0, archived: false }],
      unreadableRuns: [],
      nextAfter: null,
    });
    expect(await json(["repo", "list", "-d", dataDir])).toEqual({
      dataDir,
      repos: [
        { repoId: "payments", gitdir: join(dataDir, "deployments", "payments.git") },
        { repoId: "reports", gitdir: join(dataDir, "deployments", "reports.git") },
      ],
      ignored: [],
      failedRepos: [],
    });
    for (const repo of ["payments", "reports"]) await gitAt(join(dataDir, "deployments", `${repo}.git`), ["fsck", "--strict", "--no-progress"]);
  });

  it("delivers a signal once per id, keeps it for a later waiter, and shows it as unconsumed", async () => {
    const dataDir = join(await tempDir(), "data");
    await cli(["repo", "create", "-d", dataDir, "-r", "dep"]);
    const first = await json<{ seq: number; duplicate: boolean }>(["signal", "send", "-d", dataDir, "-r", "dep", "--run", "r1", "-n", "approve", "-p", '{"by":"ana"}', "--id", "s-1"]);
    expect(first).toMatchObject({ seq: 1, duplicate: false });
    const retry = await cli(["signal", "send", "-d", dataDir, "-r", "dep", "--run", "r1", "-n", "approve", "--id", "s-1"]);
    expect(retry.stdout).toMatch(/^duplicate: signal s-1 was already delivered to r1 at seq 1; nothing written/);
    const shown = await json<{ state: { unconsumedSignals: { signalId: string; payload: unknown }[] } }>(["runs", "show", "-d", dataDir, "-r", "dep", "--run", "r1"]);
    expect(shown.state.unconsumedSignals).toMatchObject([{ signalId: "s-1", payload: { by: "ana" } }]);
    const missing = await cli(["signal", "send", "-d", dataDir, "-r", "ghost", "--run", "r1", "-n", "approve"]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/^workflow-host: repo_not_found: /);
  });

  it("`check` reports a hand-broken event committed with git by path and seq and exits 1; `timers` still lists the healthy timers", async () => {
    const root = await tempDir();
    const dataDir = join(root, "data");
    const gitdir = join(dataDir, "deployments", "dep.git");
    await cli(["repo", "create", "-d", dataDir, "-r", "dep"]);
    await cli(["timer", "set", "-d", dataDir, "-r", "dep", "--run", "run-c", "-t", "healthy", "--delay-ms", "5000"]);
    const clean = await runCliProcess(["check", "--data-dir", dataDir]);
    expect(clean.code).toBe(0);
    expect(clean.stdout).toMatch(/^ok +dep +main [0-9a-f]{7} +1 run, 1 event/m);

    const work = join(root, "work");
    await git(["clone", "--quiet", gitdir, work]);
    await mkdir(join(work, "runs/run-b/events"), { recursive: true });
    await writeFile(join(work, "runs/run-b/events/1.json"), JSON.stringify({ seq: 1, type: "TimerSet", data: { timerId: "x", fireAt: NOW } }));
    await writeFile(join(work, "runs/run-b/events/2.json"), '{"type":"TimerSet",');
    await writeFile(join(work, "runs/run-b/events/4.json"), JSON.stringify({ seq: 4, type: "Note" }));
    await git(["add", "runs"], { cwd: work });
    await git(["commit", "--quiet", "-m", "Hand-edited log"], { cwd: work });
    await git(["push", "--quiet", "origin", "HEAD:main"], { cwd: work });

    const broken = await runCliProcess(["check", "--data-dir", dataDir]);
    expect(broken.code).toBe(1);
    expect(broken.stdout).toMatch(/^PROBLEM +dep /m);
    expect(broken.stdout).toMatch(/^dep: runs\/run-b\/events\/2\.json \(seq 2\): event_invalid: .*not JSON/m);
    expect(broken.stdout).toMatch(/^dep: runs\/run-b\/events\/3\.json \(seq 3\): event_invalid: .*seq 3 is missing/m);
    expect(broken.stdout).toMatch(/1 deployment checked, 2 problems$/m);

    const asJson = await cli(["check", "-d", dataDir, "--json"]);
    expect(asJson.code).toBe(1);
    expect(JSON.parse(asJson.stdout)).toMatchObject({
      ok: false,
      problems: [
        { repoId: "dep", path: "runs/run-b/events/2.json", seq: 2, code: "event_invalid" },
        { repoId: "dep", path: "runs/run-b/events/3.json", seq: 3, code: "event_invalid" },
      ],
    });

    const timers = await json<TimersJson>(["timers", "-d", dataDir]);
    expect(timers.timers.map((t) => `${t.runId}/${t.timerId}`)).toEqual(["run-b/x", "run-c/healthy"]);
    expect(timers.badEvents).toMatchObject([{ path: "runs/run-b/events/2.json", seq: 2, code: "event_invalid" }]);
  });

  it("names the CLI command that creates a missing deployment, not an internal API", async () => {
    const dataDir = join(await tempDir(), "data");
    await cli(["repo", "create", "-d", dataDir, "-r", "dep"]);
    for (const argv of [["runs", "list", "-d", dataDir, "-r", "ghost"], ["timer", "set", "-d", dataDir, "-r", "ghost", "--run", "r1", "-t", "t", "--delay-ms", "5"]]) {
      const run = await cli(argv);
      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(/^workflow-host: repo_not_found: deployment ghost does not exist in /);
      expect(run.stderr).toContain(`workflow-host repo create --data-dir ${dataDir} --repo ghost`);
      expect(run.stderr).not.toContain("initRepo");
    }
  });

  it("ends quietly when stdout is closed early (`runs show … | head -1`)", async () => {
    const dataDir = join(await tempDir(), "data");
    await cli(["repo", "create", "-d", dataDir, "-r", "dep"]);
    for (let i = 0; i < 3; i++) await cli(["signal", "send", "-d", dataDir, "-r", "dep", "--run", "r1", "-n", "ping", "--id", `s-${i}`]);
    const exit = await new Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>((resolve, reject) => {
      const child = spawn(process.execPath, ["--import", "tsx", CLI_MAIN, "runs", "show", "-d", dataDir, "-r", "dep", "--run", "r1"], { cwd: REPO_ROOT, stdio: ["ignore", "pipe", "pipe"] });
      // The reader goes away before the command writes anything: every write meets EPIPE.
      child.stdout.destroy();
      let stderr = "";
      child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
      child.on("error", reject);
      child.on("close", (code, signal) => resolve({ code, signal, stderr }));
    });
    expect(exit).toEqual({ code: 0, signal: null, stderr: "" });
  });

  it("`check --acknowledge` records the problems in the repo without rewriting the log; check then passes until a new problem appears", async () => {
    const root = await tempDir();
    const dataDir = join(root, "data");
    const gitdir = join(dataDir, "deployments", "dep.git");
    await cli(["repo", "create", "-d", dataDir, "-r", "dep"]);
    const work = join(root, "work");
    await pushFiles(gitdir, work, { "runs/run-b/events/1.json": '{"type":"TimerSet",' }, "A bad event");
    const mainBefore = (await gitAt(gitdir, ["rev-parse", "refs/heads/main"])).trim();

    expect((await cli(["check", "-d", dataDir])).code).toBe(1);
    const acked = await cli(["check", "-d", dataDir, "--acknowledge", "--by", "ana", "--json"]);
    expect(acked.code).toBe(0);
    expect(JSON.parse(acked.stdout)).toMatchObject({
      ok: true,
      problems: [],
      acknowledged: [{ repoId: "dep", path: "runs/run-b/events/1.json", seq: 1, code: "event_invalid", by: "ana", oid: expect.stringMatching(/^[0-9a-f]{40}$/) }],
      newlyAcknowledged: 1,
    });
    // The log is untouched; the record is a commit on a ref of its own, readable with git.
    expect((await gitAt(gitdir, ["rev-parse", "refs/heads/main"])).trim()).toBe(mainBefore);
    const record = JSON.parse(await gitAt(gitdir, ["show", "refs/workflow-host/acknowledged:acknowledged.json"])) as { path: string; by: string }[];
    expect(record).toMatchObject([{ path: "runs/run-b/events/1.json", by: "ana" }]);
    await gitAt(gitdir, ["fsck", "--strict", "--no-progress"]);

    const again = await cli(["check", "-d", dataDir]);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/^dep: runs\/run-b\/events\/1\.json \(seq 1\): acknowledged by ana at /m);
    expect(JSON.parse((await cli(["check", "-d", dataDir, "--acknowledge", "--json"])).stdout)).toMatchObject({ newlyAcknowledged: 0 });

    await writeFile(join(work, "runs/run-b/events/2.json"), "not json");
    await git(["add", "runs"], { cwd: work });
    await git(["commit", "--quiet", "-m", "Another bad event"], { cwd: work });
    await git(["push", "--quiet", "origin", "HEAD:main"], { cwd: work });
    const fresh = JSON.parse((await cli(["check", "-d", dataDir, "--json"])).stdout) as { ok: boolean; problems: { path: string }[] };
    expect(fresh.ok).toBe(false);
    expect(fresh.problems.map((p) => p.path)).toEqual(["runs/run-b/events/2.json"]);
  });
});
