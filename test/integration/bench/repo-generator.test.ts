/**
 * The benchmarks' generated deployments: how many packs a deployment is written as. A bench that
 * times commits on it wants one pack, as a deployment's packs are once merged; two of equal size
 * are merged whole by the first merge that follows, inside whatever the bench measures.
 */
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { fireCommitSpec } from "../../../bench/fire-commit.js";
import { generateRepo, type RepoSpec } from "../../../bench/repo-generator.js";
import { runGit } from "../../helpers/git-cli.js";
import { useTempDirs } from "../../helpers/temp-dir.js";

const tempDir = useTempDirs("repo-generator-");

/** 30 runs of 4 events: 120 event files. */
function spec(commitFiles?: number): RepoSpec {
  return { label: "gen", runs: 30, eventsPerRun: 4, pending: (run) => [Date.parse("2027-01-01T00:00:00Z") + run], ...(commitFiles === undefined ? {} : { commitFiles }) };
}

async function packsOf(gitdir: string): Promise<number> {
  return (await readdir(join(gitdir, "objects", "pack"))).filter((name) => name.endsWith(".pack")).length;
}

describe("generated bench deployments", () => {
  it("are written one pack per commitFiles event files, and git fsck --strict finds nothing wrong", async () => {
    const split = await generateRepo(await tempDir(), "bench", spec(50));
    expect(await packsOf(split.gitdir)).toBe(3);
    const whole = await generateRepo(await tempDir(), "bench", spec(120));
    expect(await packsOf(whole.gitdir)).toBe(1);
    for (const gitdir of [split.gitdir, whole.gitdir]) {
      const fsck = await runGit([`--git-dir=${gitdir}`, "fsck", "--strict", "--full", "--no-dangling"]);
      expect({ code: fsck.code, stderr: fsck.stderr }).toEqual({ code: 0, stderr: "" });
    }
  });

  it("put the fire-commit bench's 100,000-run deployment (400,000 files) in one commit, so one pack", async () => {
    const fire = fireCommitSpec(100_000, 11_250, 250);
    expect(fire.commitFiles ?? 0).toBeGreaterThanOrEqual(fire.runs * fire.eventsPerRun);
  });
});
