/**
 * `check` is how an operator finds what is broken: a deployment whose ref store cannot be read
 * (a garbage line in packed-refs) is one of its findings, beside the other deployments, never
 * the end of the check.
 */
import { appendFile, mkdir, writeFile } from "node:fs/promises";
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
