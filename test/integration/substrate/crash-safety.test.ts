import { existsSync, readFileSync } from "node:fs";
import { utimes, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { allowAll } from "../../../src/substrate/allow-all.js";
import { createRepoStore } from "../../../src/substrate/repo-store.js";
import type { RepoId, RepoStore, RepoStoreOptions } from "../../../src/substrate/types.js";
import { plainKind } from "../../helpers/append-merge.js";
import { runTsScript } from "../../helpers/child-process.js";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { expectFsckClean, fsckStrict } from "./fixtures/git-checks.js";

const tempDir = useTempDirs("wh-crash-");
const REPO: RepoId = { kind: plainKind.kind, id: "dep-1" };
const here = fileURLToPath(new URL(".", import.meta.url));
const gitdirOf = (dataDir: string): string => join(dataDir, "deployments", "dep-1.git");

function openStore(dataDir: string, extra: Partial<RepoStoreOptions> = {}): RepoStore {
  return createRepoStore({ dataDir, kindHandlers: [plainKind], authorize: allowAll, watch: false, ...extra });
}

describe("crash safety on real disk", () => {
  it("a crash between the object writes and the ref move leaves the repo readable and fsck-clean", async () => {
    const dataDir = await tempDir();
    const store = openStore(dataDir, { staleLockMs: 300, lockTimeoutMs: 5_000 });
    const { commitSha: genesis } = await store.initRepo(null, REPO);
    const crashed = await runTsScript(join(here, "fixtures", "crash-worker.ts"), [dataDir, REPO.id], { timeoutMs: 30_000 });
    expect(crashed.signal).toBe("SIGKILL");
    expect(crashed.stdout).toBe("");

    const gitdir = gitdirOf(dataDir);
    const lockPath = join(gitdir, "refs", "heads", "main.lock");
    // The dead writer left its lock (holding the new value) and its objects, but main is untouched.
    expect(existsSync(lockPath)).toBe(true);
    expect(readFileSync(join(gitdir, "refs", "heads", "main"), "utf8")).toBe(`${genesis}\n`);
    expect(await store.resolveRef(null, REPO, "main")).toBe(genesis);
    expect(await (await store.openCommittedReads(null, REPO, "main")).listDir("")).toEqual([]);
    // fsck: no errors; the orphaned commit is only reported as dangling (git's default listing).
    const fsck = await fsckStrict(gitdir);
    expect(fsck.code).toBe(0);
    expect(fsck.stderr).toBe("");
    expect(fsck.stdout).toMatch(/^(dangling commit [0-9a-f]{40}\n)$/);
    expect((await fsckStrict(gitdir, ["--no-dangling"])).stdout).toBe("");

    // The next writer waits out staleLockMs, breaks the dead lock and commits on the old tip.
    const next = await store.writeTree(null, REPO, "main", { files: { "runs/r1/events/1.json": "{\"seq\":1}" }, message: "after crash" });
    expect(next).toMatchObject({ committed: true, parentSha: genesis });
    expect(existsSync(lockPath)).toBe(false);
    expect((await fsckStrict(gitdir, ["--no-dangling"])).stdout).toBe("");
    await store.close();
  });

  it("by default the first write after a crashed writer outwaits its lock instead of failing", async () => {
    const dataDir = await tempDir();
    // lockTimeoutMs left to its default, which must outlast staleLockMs (a fixed 5 s would not).
    const store = openStore(dataDir, { staleLockMs: 6_000 });
    const { commitSha: genesis } = await store.initRepo(null, REPO);
    const lockPath = join(gitdirOf(dataDir), "refs", "heads", "main.lock");
    await writeFile(lockPath, "");
    const result = await store.writeTree(null, REPO, "main", { files: { a: "1" }, message: "after a dead writer" });
    expect(result).toMatchObject({ committed: true, parentSha: genesis });
    expect(existsSync(lockPath)).toBe(false);
    await store.close();
  });

  it("breaks a lock older than staleLockMs at once and waits for a fresh one", async () => {
    const dataDir = await tempDir();
    const store = openStore(dataDir, { staleLockMs: 10_000, lockTimeoutMs: 200 });
    const { commitSha: genesis } = await store.initRepo(null, REPO);
    const lockPath = join(gitdirOf(dataDir), "refs", "heads", "main.lock");

    await writeFile(lockPath, "");
    await expect(store.writeTree(null, REPO, "main", { files: { a: "1" }, message: "blocked" })).rejects.toMatchObject({ code: "ref_locked" });
    expect(existsSync(lockPath)).toBe(true);
    expect(await store.resolveRef(null, REPO, "main")).toBe(genesis);

    const longAgo = new Date(Date.now() - 60_000);
    await utimes(lockPath, longAgo, longAgo);
    const result = await store.writeTree(null, REPO, "main", { files: { a: "1" }, message: "after stale lock" });
    expect(result).toMatchObject({ committed: true, parentSha: genesis });
    expect(existsSync(lockPath)).toBe(false);
    await expectFsckClean(gitdirOf(dataDir));
    await store.close();
  });
});
