/**
 * `timers` across deployments: one deployment whose ref store cannot be read does not hide the
 * timers of the others. It is named (stderr; `failedRepos` in JSON) and the exit code is 1.
 */
import { appendFile } from "node:fs/promises";
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
});
