/**
 * A fire commit's run folders are built by the caller and taken by their own loop in the tree
 * edit (tree-edit.ts putBuiltFolders), which shares the folder's walk with the general edit. Here
 * one commit mixes those appends with plain puts and deletes in the same folder, at names that
 * sort around each other, and a run folder replaced by a file: the real git must find each commit
 * clean, and a subscriber's change list must be git's diff.
 */
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { allowAll } from "../../../src/substrate/allow-all.js";
import { createRepoStore } from "../../../src/substrate/repo-store.js";
import type { CommitChange, FolderAppend, RepoId } from "../../../src/substrate/types.js";
import { plainKind } from "../../helpers/append-merge.js";
import { gitDiffTree, runGit } from "../../helpers/git-cli.js";
import { seededRandom } from "../../helpers/seeded-random.js";
import { useTempDirs } from "../../helpers/temp-dir.js";

const tempDir = useTempDirs("wh-fire-mixed-");
const REPO: RepoId = { kind: plainKind.kind, id: "dep-1" };
/** Run ids in git's order around each other ("a" < "a-" < "a.b" < "a/" < "a0" < "a_b"). */
const IDS = ["a", "a-", "a.b", "a0", "a_b", "b", "b-1", "b.1", "b1"];

describe("fire commits mixed with plain puts and deletes", () => {
  it("pass git fsck --strict, and each commit's change list is git's diff-tree", async () => {
    const dataDir = await tempDir();
    const gitdir = join(dataDir, "deployments", "dep-1.git");
    const store = createRepoStore({ dataDir, kindHandlers: [plainKind], authorize: allowAll, watch: false, packThreshold: 1, clock: () => new Date("2026-01-01T00:00:00Z") });
    await store.initRepo(null, REPO);
    const seed: Record<string, string> = {};
    for (const id of IDS) seed[`runs/${id}/events/1.json`] = `{"seq":1,"run":"${id}"}`;
    await store.writeTree(null, REPO, "main", { files: seed, message: "seed" });
    const reader = store.subscribe(null, REPO, "main")[Symbol.asyncIterator]();
    const r = seededRandom(7);
    // Which runs are still folders of events, and each one's next seq.
    const next = new Map(IDS.map((id) => [id, 2]));
    const ROUNDS = 30;
    let commits = 0;
    for (let round = 1; round <= ROUNDS; round++) {
      const appends: FolderAppend[] = [];
      const puts: Record<string, string> = {};
      const deletes: string[] = [];
      for (const id of IDS) {
        const roll = r();
        const seq = next.get(id);
        if (seq === undefined) {
          // Gone or a file: sometimes a run folder again.
          if (roll < 0.3) {
            deletes.push(`runs/${id}`);
            puts[`runs/${id}/events/1.json`] = `{"seq":1,"again":${round}}`;
            next.set(id, 2);
          }
          continue;
        }
        if (roll < 0.5) {
          appends.push({ folder: `runs/${id}`, sub: "events", files: [{ name: `${seq}.json`, content: Buffer.from(`{"seq":${seq},"run":"${id}"}`) }] });
          next.set(id, seq + 1);
        } else if (roll < 0.65) {
          // A plain file beside the run's events, or an event put plainly.
          puts[r() < 0.5 ? `runs/${id}/note.txt` : `runs/${id}/events/${seq}.json`] = `plain ${round}`;
          next.set(id, seq + 1);
        } else if (roll < 0.72) {
          deletes.push(`runs/${id}`);
          next.delete(id);
        } else if (roll < 0.78) {
          // The run folder replaced by a file.
          deletes.push(`runs/${id}`);
          puts[`runs/${id}`] = `a file ${round}`;
          next.delete(id);
        }
      }
      const result = await store.writeTreeDelta(null, REPO, "main", { message: `fire ${round}`, prevalidated: true, computeDelta: () => Promise.resolve({ appends, puts, deletes }) });
      if (!result.committed) continue;
      commits += 1;
      const seen = (await reader.next()).value as CommitChange;
      expect(seen.commitSha, `round ${round}`).toBe(result.commitSha);
      expect(seen.changes.map((c) => ({ path: c.path, oid: c.oid, status: c.status })), `round ${round}`).toEqual(await gitDiffTree(gitdir, seen.commitSha));
    }
    expect(commits).toBe(ROUNDS);
    await reader.return?.();
    await store.close();
    const fsck = await runGit([`--git-dir=${gitdir}`, "fsck", "--strict", "--full", "--no-dangling"]);
    expect({ code: fsck.code, stdout: fsck.stdout, stderr: fsck.stderr }).toEqual({ code: 0, stdout: "", stderr: "" });
  });
});
