/**
 * `timers` across deployments: one deployment whose ref store cannot be read does not hide the
 * timers of the others. It is named (stderr; `failedRepos` in JSON) and the exit code is 1.
 */
import { appendFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { gitAt } from "../../helpers/git-cli.js";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { runCli } from "../../unit/cli/cli-io.js";

const tempDir = useTempDirs("wfh-cli-timers-ref-");
const clock = (): Date => new Date("2026-05-01T10:00:00.000Z");

async function dataDirWithOneDamagedRepo(): Promise<string> {
  const dataDir = join(await tempDir(), "data");
  for (const repo of ["broken", "healthy"]) {
    expect((await runCli(["repo", "create", "-d", dataDir, "-r", repo], { clock })).code).toBe(0);
    expect((await runCli(["timer", "set", "-d", dataDir, "-r", repo, "--run", "r1", "--timer", "t1", "--fire-at", "2026-05-02T00:00:00Z"], { clock })).code).toBe(0);
  }
  const gitdir = join(dataDir, "deployments", "broken.git");
  await gitAt(gitdir, ["pack-refs", "--all"]);
  await appendFile(join(gitdir, "packed-refs"), "garbage line\n");
  return dataDir;
}

describe("timers when one deployment's packed-refs holds a garbage line", () => {
  it("lists the other deployments' timers and names the damaged one, exit 1 (JSON)", async () => {
    const dataDir = await dataDirWithOneDamagedRepo();
    const run = await runCli(["timers", "-d", dataDir, "--json"], { clock });
    expect(run.code).toBe(1);
    const report = JSON.parse(run.stdout) as { timers: { repoId: string }[]; failedRepos: { repoId: string; code: string }[] };
    expect(report.timers.map((t) => t.repoId)).toEqual(["healthy"]);
    expect(report.failedRepos.map((f) => [f.repoId, f.code])).toEqual([["broken", "ref_corrupt"]]);
  });

  it("lists the other deployments' timers and names the damaged one on stderr, exit 1 (text)", async () => {
    const dataDir = await dataDirWithOneDamagedRepo();
    const run = await runCli(["timers", "-d", dataDir], { clock });
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/^healthy\s+r1\s+t1\s/m);
    expect(run.stderr).toMatch(/^workflow-host: ref_corrupt: /);
  });

  it("with --repo naming the damaged deployment: ref_corrupt, exit 1", async () => {
    const dataDir = await dataDirWithOneDamagedRepo();
    const run = await runCli(["timers", "-d", dataDir, "--repo", "broken"], { clock });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^workflow-host: ref_corrupt: /);
  });

  it("names the failure, never \"no pending timers\", when the only deployment cannot be read", async () => {
    const dataDir = join(await tempDir(), "data");
    expect((await runCli(["repo", "create", "-d", dataDir, "-r", "only"], { clock })).code).toBe(0);
    expect((await runCli(["timer", "set", "-d", dataDir, "-r", "only", "--run", "r1", "--timer", "t1", "--fire-at", "2026-05-02T00:00:00Z"], { clock })).code).toBe(0);
    // The ref names a commit whose object is gone: the deployment cannot be read at all.
    await rm(join(dataDir, "deployments", "only.git", "objects"), { recursive: true });
    await gitAt(join(dataDir, "deployments", "only.git"), ["init", "--bare", "--quiet"]);
    const run = await runCli(["timers", "-d", dataDir], { clock });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^workflow-host: ref_corrupt: /);
    expect(run.stdout).not.toMatch(/no pending timers/);
    expect(run.stdout).toMatch(/1 deployment could not be read: only/);
  });

  it("says how many deployments were read when some could not be", async () => {
    const dataDir = await dataDirWithOneDamagedRepo();
    const run = await runCli(["timers", "-d", dataDir], { clock });
    expect(run.stdout).toMatch(/^1 pending timer in 1 of 2 deployments, 1 run; 1 deployment could not be read: broken/m);
  });

  it("says \"no pending timers\" on a data dir without deployments, exit 0", async () => {
    const dataDir = await tempDir();
    const run = await runCli(["timers", "-d", dataDir], { clock });
    expect(run.code).toBe(0);
    expect(run.stdout).toBe("no pending timers (0 deployments, 0 runs)\n");
  });
});
