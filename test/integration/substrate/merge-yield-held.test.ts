/**
 * Merges give way to this process's commits in flight (pack-merge-thread.ts), and the hold is
 * process-wide: a commit of one deployment that never ends (a hung disk under it) holds back the
 * merges of every other. The waits are bounded, so another deployment's packs are still merged,
 * its store still closes, and what it wrote stays `git fsck --strict` clean.
 */
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { allowAll } from "../../../src/substrate/allow-all.js";
import { MAX_PACKS } from "../../../src/substrate/pack-maintenance.js";
import { commitsInFlight, holdMerges, mergeYields } from "../../../src/substrate/pack-merge-thread.js";
import { createRepoStore } from "../../../src/substrate/repo-store.js";
import type { RepoId } from "../../../src/substrate/types.js";
import { plainKind } from "../../helpers/append-merge.js";
import { gitAt } from "../../helpers/git-cli.js";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { expectFsckClean } from "./fixtures/git-checks.js";

const tempDir = useTempDirs("wh-merge-held-");
const REPO: RepoId = { kind: plainKind.kind, id: "dep-busy-neighbour" };

describe("merges beside a commit that never ends", () => {
  it("still run (each wait bounded), bring the packs back to MAX_PACKS, and the store closes clean", async () => {
    const dataDir = await tempDir();
    const gitdir = join(dataDir, "deployments", `${REPO.id}.git`);
    const packDir = join(gitdir, "objects", "pack");
    const store = createRepoStore({ dataDir, kindHandlers: [plainKind], authorize: allowAll, watch: false, packThreshold: 1, clock: () => new Date("2026-01-01T00:00:00Z") });
    await store.initRepo(null, REPO);
    // Another deployment's commit, in flight for the whole test.
    const release = holdMerges();
    const yieldsBefore = mergeYields();
    try {
      const commits = MAX_PACKS + 6;
      for (let k = 0; k < commits; k++) {
        await store.writeTree(null, REPO, "main", { files: { [`runs/r${k % 5}/events/${k + 1}.json`]: `{"seq":${k + 1},"type":"Step"}` }, message: `append ${k}` });
      }
      // close() waits for the merge running; it ends although the hold is never let go.
      await store.close();
      expect(commitsInFlight()).toBe(1);
      // The merges gave way (so they saw the hold) and still finished.
      expect(mergeYields()).toBeGreaterThan(yieldsBefore);
      const packs = (await readdir(packDir)).filter((n) => n.endsWith(".pack"));
      expect(packs.length).toBeLessThanOrEqual(MAX_PACKS);
      await expectFsckClean(gitdir);
      const files = (await gitAt(gitdir, ["ls-tree", "-r", "--name-only", "main"])).trim().split("\n");
      expect(files.length).toBe(commits);
    } finally {
      release();
    }
  });
});
