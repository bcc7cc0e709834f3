/**
 * A process killed while its pack merge waits (for a commit in flight) in the middle of copying
 * the packs leaves a repository git finds clean, every committed file readable, and the next
 * process merges and commits on as usual.
 */
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { allowAll } from "../../../src/substrate/allow-all.js";
import { MAX_PACKS } from "../../../src/substrate/pack-maintenance.js";
import { createRepoStore } from "../../../src/substrate/repo-store.js";
import type { RepoId } from "../../../src/substrate/types.js";
import { plainKind } from "../../helpers/append-merge.js";
import { runTsScript } from "../../helpers/child-process.js";
import { gitAt } from "../../helpers/git-cli.js";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { expectFsckClean } from "./fixtures/git-checks.js";

const tempDir = useTempDirs("wh-merge-kill-");
const REPO: RepoId = { kind: plainKind.kind, id: "dep-1" };
const here = fileURLToPath(new URL(".", import.meta.url));

describe("a process killed during a yielding merge", () => {
  it("leaves the repository fsck-clean and readable, and the next process merges on", async () => {
    const dataDir = await tempDir();
    const gitdir = join(dataDir, "deployments", "dep-1.git");
    const init = createRepoStore({ dataDir, kindHandlers: [plainKind], authorize: allowAll, watch: false });
    await init.initRepo(null, REPO);
    await init.close();
    const commits = MAX_PACKS + 2;
    const killed = await runTsScript(join(here, "fixtures", "merge-kill-worker.ts"), [dataDir, REPO.id, String(commits)], { timeoutMs: 60_000 });
    expect(killed.signal).toBe("SIGKILL");
    expect(killed.stdout).toBe("written\n");
    await expectFsckClean(gitdir);
    const names = (await gitAt(gitdir, ["ls-tree", "-r", "--name-only", "main"])).split("\n").filter(Boolean);
    expect(names.length).toBe(commits);

    const store = createRepoStore({ dataDir, kindHandlers: [plainKind], authorize: allowAll, watch: false, packThreshold: 1 });
    const reads = await store.openCommittedReads(null, REPO, "main");
    for (let k = 0; k < commits; k++) expect(Buffer.from((await reads.readBlob(`runs/r${k % 4}/events/${k + 1}.json`)) ?? []).toString()).toBe(`{"seq":${k + 1}}`);
    await store.writeTree(null, REPO, "main", { files: { "runs/after/events/1.json": "{\"seq\":1}" }, message: "after" });
    await store.compactPacks?.(null, REPO);
    await store.close();
    const packs = (await readdir(join(gitdir, "objects", "pack"))).filter((n) => n.endsWith(".pack"));
    expect(packs.length).toBeLessThanOrEqual(MAX_PACKS);
    await expectFsckClean(gitdir);
    expect((await gitAt(gitdir, ["ls-tree", "-r", "--name-only", "main"])).split("\n").filter(Boolean).length).toBe(commits + 1);
  });
});
