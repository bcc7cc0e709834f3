/**
 * Damage to a repository's ref store, made from outside with the real `git` CLI and plain file
 * writes: a garbage line in `packed-refs`, a symbolic ref climbing out of the repository, a ref
 * lock stamped in the future. None may lose history, write outside the data dir or stall writes.
 */
import { existsSync } from "node:fs";
import { appendFile, readFile, utimes, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { openWorkflowStore } from "../../../src/host/open-workflow-store.js";
import type { RepoStore } from "../../../src/substrate/types.js";
import { readRunLog } from "../../../src/workflow/run-log.js";
import { appendRunEvents } from "../../../src/workflow/run-log-append.js";
import { WORKFLOW_RUN_KIND } from "../../../src/workflow/workflow-run-kind.js";
import { runTsScript } from "../../helpers/child-process.js";
import { gitAt } from "../../helpers/git-cli.js";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { errorCodeOf, runCliInProcess } from "../reliability/cli-in-process.js";
import { expectFsckClean } from "./fixtures/git-checks.js";
import { settledCode } from "../../helpers/expect-code.js";

const tempDir = useTempDirs("wh-refstore-");
const here = fileURLToPath(new URL(".", import.meta.url));
const REPO = "dep-1";
const RID = { kind: WORKFLOW_RUN_KIND, id: REPO };
const gitdirOf = (dataDir: string): string => join(dataDir, "deployments", `${REPO}.git`);


async function setTimer(store: RepoStore, runId: string, timerId: string): Promise<unknown> {
  return appendRunEvents({
    store,
    principal: null,
    repoId: REPO,
    runId,
    message: `set ${timerId}`,
    decide: () => ({ append: [{ type: "TimerSet", data: { timerId, fireAt: "2099-01-01T00:00:00Z" } }], result: undefined }),
  });
}

describe("a damaged packed-refs", () => {
  it("makes every read and write ref_corrupt naming the file and line, commits nothing, and the history is intact once repaired", async () => {
    const dataDir = await tempDir();
    const gitdir = gitdirOf(dataDir);
    const store = openWorkflowStore({ dataDir, watch: false });
    await store.initRepo(null, RID);
    for (const timerId of ["t1", "t2", "t3"]) await setTimer(store, "r1", timerId);
    const tip = await store.resolveRef(null, RID, "main");
    await store.close();

    // As `git gc` does: main moves into packed-refs and its loose file goes.
    await gitAt(gitdir, ["pack-refs", "--all"]);
    expect(existsSync(join(gitdir, "refs", "heads", "main"))).toBe(false);
    const healthy = await readFile(join(gitdir, "packed-refs"), "utf8");
    expect(healthy).toContain(`${tip} refs/heads/main`);
    await appendFile(join(gitdir, "packed-refs"), "garbage that is not a ref line\n");
    const garbageLine = healthy.split("\n").length;

    const damaged = openWorkflowStore({ dataDir, watch: false });
    const attempts: Record<string, () => Promise<unknown>> = {
      resolveRef: () => damaged.resolveRef(null, RID, "main"),
      openCommittedReads: () => damaged.openCommittedReads(null, RID, "main"),
      writeTree: () => damaged.writeTree(null, RID, "main", { files: { "runs/r2/events/1.json": '{"seq":1,"type":"Step"}' }, message: "x" }),
      append: () => setTimer(damaged, "r1", "t4"),
      initRepo: () => damaged.initRepo(null, RID),
    };
    for (const [name, work] of Object.entries(attempts)) expect(`${name}: ${await settledCode(work)}`).toBe(`${name}: ref_corrupt`);
    const error = await damaged.resolveRef(null, RID, "main").catch((e: unknown) => e as { data: Record<string, unknown> });
    expect(error).toMatchObject({ data: { file: join(gitdir, "packed-refs"), line: garbageLine } });
    // Nothing was written: no loose main, no second root.
    expect(existsSync(join(gitdir, "refs", "heads", "main"))).toBe(false);
    await damaged.close();

    // The CLI says the same, typed.
    const cli = await runCliInProcess(["timer", "set", "--data-dir", dataDir, "--repo", REPO, "--run", "r1", "--timer", "t5", "--delay-ms", "60000"]);
    expect({ code: cli.code, error: errorCodeOf(cli.stderr) }).toEqual({ code: 1, error: "ref_corrupt" });
    expect(existsSync(join(gitdir, "refs", "heads", "main"))).toBe(false);

    // Repaired: the same tip, every event, and writes go on top of it.
    await writeFile(join(gitdir, "packed-refs"), healthy);
    const repaired = openWorkflowStore({ dataDir, watch: false });
    expect(await repaired.resolveRef(null, RID, "main")).toBe(tip);
    const log = await readRunLog(await repaired.openCommittedReads(null, RID, "main"), "r1");
    expect(log.events.map((e) => e.seq)).toEqual([1, 2, 3]);
    expect([...log.state.pendingTimers.keys()].sort()).toEqual(["t1", "t2", "t3"]);
    const next = (await setTimer(repaired, "r1", "t4")) as { parentSha: string };
    expect(next.parentSha).toBe(tip);
    await repaired.close();
    expect((await gitAt(gitdir, ["rev-list", "--count", "main"])).trim()).toBe("5");
    await expectFsckClean(gitdir);
  });

  it("never starts a second root when main is missing from a repository that holds commits", async () => {
    const dataDir = await tempDir();
    const gitdir = gitdirOf(dataDir);
    const store = openWorkflowStore({ dataDir, watch: false });
    await store.initRepo(null, RID);
    await setTimer(store, "r1", "t1");
    await store.close();
    await gitAt(gitdir, ["pack-refs", "--all"]);
    // The ref store lost main altogether (an empty packed-refs), the objects are all there.
    await writeFile(join(gitdir, "packed-refs"), "");

    const damaged = openWorkflowStore({ dataDir, watch: false });
    expect(await settledCode(() => damaged.resolveRef(null, RID, "main"))).toBe("ref_corrupt");
    expect(await settledCode(() => setTimer(damaged, "r1", "t2"))).toBe("ref_corrupt");
    expect(await settledCode(() => damaged.initRepo(null, RID))).toBe("ref_corrupt");
    await damaged.close();
    expect(existsSync(join(gitdir, "refs", "heads", "main"))).toBe(false);
  });
});

describe("a symbolic ref pointing out of the repository", () => {
  it("is refused by timer set with a typed code and nothing is created outside the data dir", async () => {
    const root = await tempDir();
    const dataDir = join(root, "data");
    const gitdir = gitdirOf(dataDir);
    expect((await runCliInProcess(["repo", "create", "--data-dir", dataDir, "--repo", REPO])).code).toBe(0);
    // refs/heads/main → ../../../../../outside/x: from the git dir that is <root>/outside/x.
    await writeFile(join(gitdir, "refs", "heads", "main"), "ref: refs/heads/../../../../../outside/x\n");
    const outside = join(root, "outside");

    const cli = await runCliInProcess(["timer", "set", "--data-dir", dataDir, "--repo", REPO, "--run", "r1", "--timer", "t1", "--delay-ms", "60000"]);
    expect({ code: cli.code, error: errorCodeOf(cli.stderr) }).toEqual({ code: 1, error: "ref_corrupt" });
    expect(existsSync(outside)).toBe(false);

    const store = openWorkflowStore({ dataDir, watch: false });
    expect(await settledCode(() => store.resolveRef(null, RID, "main"))).toBe("ref_corrupt");
    expect(await settledCode(() => setTimer(store, "r1", "t1"))).toBe("ref_corrupt");
    expect(await settledCode(() => store.writeTree(null, RID, "HEAD", { files: { a: "1" }, message: "x" }))).toBe("ref_corrupt");
    await store.close();
    expect(existsSync(outside)).toBe(false);
  });
});

describe("a ref lock stamped in the future", () => {
  it("is broken after staleLockMs of this process's monotonic time, and the write commits", async () => {
    const dataDir = await tempDir();
    const gitdir = gitdirOf(dataDir);
    const store = openWorkflowStore({ dataDir, watch: false, staleLockMs: 400, lockTimeoutMs: 60_000 });
    const { commitSha: genesis } = await store.initRepo(null, RID);
    const lockPath = join(gitdir, "refs", "heads", "main.lock");
    await writeFile(lockPath, "");
    // A crash, then the clock was set back a day (or an NFS server's clock runs ahead).
    const tomorrow = new Date(Date.now() + 86_400_000);
    await utimes(lockPath, tomorrow, tomorrow);

    const result = await store.writeTree(null, RID, "main", { files: { "runs/r1/events/1.json": '{"seq":1,"type":"Step"}' }, message: "after a future lock" });
    expect(result).toMatchObject({ committed: true, parentSha: genesis });
    expect(existsSync(lockPath)).toBe(false);
    await store.close();
    await expectFsckClean(gitdir);
  });
});

describe("a ref lock whose holder died", () => {
  it("is broken at once by a writer on the same machine, from the holder's record beside the lock", async () => {
    const dataDir = await tempDir();
    const gitdir = gitdirOf(dataDir);
    const setup = openWorkflowStore({ dataDir, watch: false });
    const { commitSha: genesis } = await setup.initRepo(null, RID);
    await setup.close();
    const crashed = await runTsScript(join(here, "fixtures", "lock-holder-worker.ts"), [gitdir], { timeoutMs: 30_000 });
    expect(crashed.signal).toBe("SIGKILL");
    const lockPath = join(gitdir, "refs", "heads", "main.lock");
    expect(existsSync(lockPath)).toBe(true);
    // Neither rule of time applies: the lock is young and staleLockMs is a minute.
    const store = openWorkflowStore({ dataDir, watch: false, staleLockMs: 60_000, lockTimeoutMs: 5_000 });
    const result = await store.writeTree(null, RID, "main", { files: { "runs/r1/events/1.json": '{"seq":1,"type":"Step"}' }, message: "after a dead holder" });
    expect(result).toMatchObject({ committed: true, parentSha: genesis });
    expect(existsSync(lockPath)).toBe(false);
    // A record describes a held lock only.
    expect((await readFile(join(gitdir, "workflow-host", "ref-locks", "refs", "heads", "main.owner"), "utf8")).trim()).toBe("released");
    await store.close();
    await expectFsckClean(gitdir);
  });
});
