/**
 * `check` is how an operator finds what is broken: a deployment whose ref store cannot be read
 * (a garbage line in packed-refs) is one of its findings, beside the other deployments, never
 * the end of the check.
 */
import { appendFile, chmod, mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { git, gitAt } from "../../helpers/git-cli.js";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { runCli } from "../../unit/cli/cli-io.js";

const tempDir = useTempDirs("wfh-cli-check-ref-");
const clock = (): Date => new Date("2026-05-01T10:00:00.000Z");

interface CheckJson {
  ok: boolean;
  repos: { repoId: string; commitSha: string | null; problems: number }[];
  problems: { repoId: string; path: string; code: string }[];
}

async function dataDirWithOneDamagedRepo(): Promise<string> {
  const dataDir = join(await tempDir(), "data");
  for (const repo of ["broken", "healthy"]) expect((await runCli(["repo", "create", "-d", dataDir, "-r", repo], { clock })).code).toBe(0);
  const gitdir = join(dataDir, "deployments", "broken.git");
  await gitAt(gitdir, ["pack-refs", "--all"]);
  await appendFile(join(gitdir, "packed-refs"), "garbage line\n");
  return dataDir;
}

describe("check on a data dir where one deployment's packed-refs holds a garbage line", () => {
  it("reports ref_corrupt for that deployment, checks the others, exit 1", async () => {
    const dataDir = await dataDirWithOneDamagedRepo();
    const run = await runCli(["check", "-d", dataDir, "--json"], { clock });
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 1, stderr: "" });
    const report = JSON.parse(run.stdout) as CheckJson;
    expect(report.ok).toBe(false);
    expect(report.repos.map((r) => [r.repoId, r.problems])).toEqual([
      ["broken", 1],
      ["healthy", 0],
    ]);
    expect(report.problems.map((p) => [p.repoId, p.code])).toEqual([["broken", "ref_corrupt"]]);
  });

  it("with --acknowledge: still reported (nothing can be recorded in that repo), the others acknowledged as usual, exit 1", async () => {
    const dataDir = await dataDirWithOneDamagedRepo();
    const run = await runCli(["check", "-d", dataDir, "--acknowledge", "--json"], { clock });
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 1, stderr: "" });
    expect((JSON.parse(run.stdout) as CheckJson).problems.map((p) => [p.repoId, p.code])).toEqual([["broken", "ref_corrupt"]]);
  });
});

describe("check on a deployment whose acknowledgements ref is torn", () => {
  it("reports its problems and the torn ref (ref_corrupt), with or without --acknowledge, exit 1", async () => {
    const root = await tempDir();
    const dataDir = join(root, "data");
    const gitdir = join(dataDir, "deployments", "dep.git");
    expect((await runCli(["repo", "create", "-d", dataDir, "-r", "dep"], { clock })).code).toBe(0);
    const work = join(root, "work");
    await git(["clone", "--quiet", gitdir, work]);
    await mkdir(join(work, "runs/run-b/events"), { recursive: true });
    await writeFile(join(work, "runs/run-b/events/1.json"), "not json");
    await git(["add", "runs"], { cwd: work });
    await git(["commit", "--quiet", "-m", "A bad event"], { cwd: work });
    await git(["push", "--quiet", "origin", "HEAD:main"], { cwd: work });
    await mkdir(join(gitdir, "refs/workflow-host"), { recursive: true });
    await writeFile(join(gitdir, "refs/workflow-host/acknowledged"), "torn");

    for (const extra of [[], ["--acknowledge"]]) {
      const run = await runCli(["check", "-d", dataDir, "--json", ...extra], { clock });
      expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 1, stderr: "" });
      const report = JSON.parse(run.stdout) as CheckJson;
      expect(report.problems.map((p) => [p.path, p.code])).toEqual([
        ["runs/run-b/events/1.json", "event_invalid"],
        ["refs/workflow-host/acknowledged", "ref_corrupt"],
      ]);
    }
  });
});

describe("check on a deployment whose HEAD is damaged", () => {
  it("reports HEAD as ref_corrupt (git itself no longer takes the folder for a repo), checks main as usual, exit 1", async () => {
    const dataDir = join(await tempDir(), "data");
    for (const repo of ["broken", "healthy"]) expect((await runCli(["repo", "create", "-d", dataDir, "-r", repo], { clock })).code).toBe(0);
    const gitdir = join(dataDir, "deployments", "broken.git");
    await writeFile(join(gitdir, "HEAD"), "garbage\n");
    await expect(gitAt(gitdir, ["rev-parse", "main"])).rejects.toThrow();

    const run = await runCli(["check", "-d", dataDir, "--json"], { clock });
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 1, stderr: "" });
    const report = JSON.parse(run.stdout) as CheckJson;
    expect(report.repos.map((r) => [r.repoId, r.commitSha !== null, r.problems])).toEqual([
      ["broken", true, 1],
      ["healthy", true, 0],
    ]);
    expect(report.problems.map((p) => [p.repoId, p.path, p.code])).toEqual([["broken", "HEAD", "ref_corrupt"]]);
  });

  it("a HEAD naming another branch, or detached at main's commit, is no problem", async () => {
    const dataDir = join(await tempDir(), "data");
    expect((await runCli(["repo", "create", "-d", dataDir, "-r", "dep"], { clock })).code).toBe(0);
    const gitdir = join(dataDir, "deployments", "dep.git");
    const main = (await gitAt(gitdir, ["rev-parse", "main"])).trim();
    for (const head of ["ref: refs/heads/other\n", `${main}\n`]) {
      await writeFile(join(gitdir, "HEAD"), head);
      const run = await runCli(["check", "-d", dataDir, "--json"], { clock });
      expect({ code: run.code, problems: (JSON.parse(run.stdout) as CheckJson).problems }).toEqual({ code: 0, problems: [] });
    }
  });
});

describe("check's closing advice when a problem cannot be acknowledged", () => {
  it("a deployment whose ref store cannot be read: no --acknowledge advice (it records nothing there), exit 1 with or without it", async () => {
    const dataDir = await dataDirWithOneDamagedRepo();
    for (const extra of [[], ["--acknowledge"]]) {
      const run = await runCli(["check", "-d", dataDir, ...extra], { clock });
      expect(run.code).toBe(1);
      expect(run.stdout).not.toContain("--acknowledge");
    }
  });

  it("a bad event beside it: the advice names --acknowledge, which records that one", async () => {
    const dataDir = await dataDirWithOneDamagedRepo();
    const signal = await runCli(["signal", "send", "-d", dataDir, "-r", "healthy", "--run", "r1", "--name", "go"], { clock });
    expect(signal.code).toBe(0);
    const root = await tempDir();
    const work = join(root, "work");
    await git(["clone", "--quiet", join(dataDir, "deployments", "healthy.git"), work]);
    await writeFile(join(work, "runs/r1/events/2.json"), "not json");
    await git(["add", "runs"], { cwd: work });
    await git(["commit", "--quiet", "-m", "A bad event"], { cwd: work });
    await git(["push", "--quiet", "origin", "HEAD:main"], { cwd: work });
    const run = await runCli(["check", "-d", dataDir], { clock });
    expect(run.code).toBe(1);
    expect(run.stdout).toContain("--acknowledge");
  });
});

describe("check on a deployment whose main cannot be read: its runs/ folder's loose object is torn", () => {
  /**
   * `broken`: its `runs/` folder, pushed with git (a loose object), truncated to 10 bytes (a torn
   * event object is that run's bad event, see corrupt-objects.test.ts); `healthy` beside it holds a bad event.
   */
  async function dataDirWithATornObject(): Promise<{ dataDir: string; torn: string }> {
    const root = await tempDir();
    const dataDir = join(root, "data");
    for (const repo of ["broken", "healthy"]) expect((await runCli(["repo", "create", "-d", dataDir, "-r", repo], { clock })).code).toBe(0);
    for (const [repo, body] of [
      ["broken", '{"seq":1,"type":"TimerSet","data":{"timerId":"t1","fireAt":"2026-05-02T10:00:00Z"}}'],
      ["healthy", "not json"],
    ] as const) {
      const work = join(root, `work-${repo}`);
      await git(["clone", "--quiet", join(dataDir, "deployments", `${repo}.git`), work]);
      await mkdir(join(work, "runs/r1/events"), { recursive: true });
      await writeFile(join(work, "runs/r1/events/1.json"), body);
      await git(["add", "runs"], { cwd: work });
      await git(["commit", "--quiet", "-m", "An event"], { cwd: work });
      await git(["push", "--quiet", "origin", "HEAD:main"], { cwd: work });
    }
    const gitdir = join(dataDir, "deployments", "broken.git");
    const oid = (await gitAt(gitdir, ["rev-parse", "main:runs"])).trim();
    const torn = join(gitdir, "objects", oid.slice(0, 2), oid.slice(2));
    const bytes = await readFile(torn);
    await chmod(torn, 0o644);
    await writeFile(torn, bytes.subarray(0, 10));
    return { dataDir, torn };
  }

  it("reports object_corrupt, exit 1, advises no --acknowledge for it; --acknowledge records only the other deployment's bad event", async () => {
    const { dataDir } = await dataDirWithATornObject();
    const before = await runCli(["check", "-d", dataDir, "--json"], { clock });
    expect(before.code).toBe(1);
    const problems = (JSON.parse(before.stdout) as CheckJson).problems.map((p) => [p.repoId, p.code]);
    expect(problems).toEqual([
      ["broken", "object_corrupt"],
      ["healthy", "event_invalid"],
    ]);
    const text = await runCli(["check", "-d", dataDir], { clock });
    expect(text.stdout).toContain("1 problem cannot be acknowledged");

    const acked = await runCli(["check", "-d", dataDir, "--acknowledge", "--json"], { clock });
    expect(acked.code).toBe(1);
    const report = JSON.parse(acked.stdout) as CheckJson & { acknowledged: { repoId: string }[] };
    expect(report.problems.map((p) => [p.repoId, p.code])).toEqual([["broken", "object_corrupt"]]);
    expect(report.acknowledged.map((a) => a.repoId)).toEqual(["healthy"]);
    // Nothing recorded in the unreadable deployment.
    await expect(gitAt(join(dataDir, "deployments", "broken.git"), ["rev-parse", "--verify", "--quiet", "refs/workflow-host/acknowledged"])).rejects.toThrow();

    const after = await runCli(["check", "-d", dataDir], { clock });
    expect(after.code).toBe(1);
    expect(after.stdout).toMatch(/^PROBLEM {2}broken/m);
  });
});
