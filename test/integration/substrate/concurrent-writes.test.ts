import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { allowAll } from "../../../src/substrate/allow-all.js";
import { createRepoStore } from "../../../src/substrate/repo-store.js";
import type { RepoId, RepoStore } from "../../../src/substrate/types.js";
import { appendNext, eventsPrefix, plainKind } from "../../helpers/append-merge.js";
import { runTsScript } from "../../helpers/child-process.js";
import { gitAt } from "../../helpers/git-cli.js";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { expectFsckClean, expectLinearHistory, gitRunSeqs } from "./fixtures/git-checks.js";
import { MIXED_RUNS, runMixedAppends, type MixedSummary } from "./fixtures/mixed-appends.js";

const tempDir = useTempDirs("wh-substrate-");
const REPO: RepoId = { kind: plainKind.kind, id: "dep-1" };
const here = fileURLToPath(new URL(".", import.meta.url));

function openStore(dataDir: string): RepoStore {
  return createRepoStore({ dataDir, kindHandlers: [plainKind], authorize: allowAll, watch: false });
}

const gitdirOf = (dataDir: string): string => join(dataDir, "deployments", "dep-1.git");

/** Seqs dense from 1 in every mixed run, and the total number of events. */
async function expectDenseRuns(gitdir: string): Promise<number> {
  let total = 0;
  for (const runId of MIXED_RUNS) {
    const seqs = await gitRunSeqs(gitdir, runId);
    expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => i + 1));
    total += seqs.length;
  }
  return total;
}

describe("concurrent writers on real disk", () => {
  it("F1: 20 rounds of two concurrent appends to one run make 41 linear commits with dense seqs", async () => {
    const dataDir = await tempDir();
    const a = openStore(dataDir);
    const b = openStore(dataDir); // a second store: contends through the ref lock, like another process
    await a.initRepo(null, REPO);
    for (let round = 0; round < 20; round++) {
      await Promise.all([
        a.writeTreePreservingPrefix(null, REPO, "main", appendNext("run-1", (seq) => ({ seq, type: "TimerSet", round }))),
        b.writeTreePreservingPrefix(null, REPO, "main", appendNext("run-1", (seq) => ({ seq, type: "SignalReceived", round }))),
      ]);
    }
    const gitdir = gitdirOf(dataDir);
    await expectLinearHistory(gitdir, 41);
    expect(await gitRunSeqs(gitdir, "run-1")).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
    const reads = await a.openCommittedReads(null, REPO, "main");
    const types: string[] = [];
    for (let seq = 1; seq <= 40; seq++) {
      const body = JSON.parse(Buffer.from((await reads.readBlob(`${eventsPrefix("run-1")}${seq}.json`)) as Uint8Array).toString("utf8")) as { seq: number; type: string };
      expect(body.seq).toBe(seq);
      types.push(body.type);
    }
    expect(types.filter((t) => t === "TimerSet")).toHaveLength(20);
    expect(types.filter((t) => t === "SignalReceived")).toHaveLength(20);
    // Background pack merges finish first: git's fsck reports packs deleted under it.
    await Promise.all([a.close(), b.close()]);
    await expectFsckClean(gitdir);
  });

  it("F2a: 1,000 appends while another reader resolves the ref and opens the commit each time", async () => {
    const dataDir = await tempDir();
    const writer = openStore(dataDir);
    const reader = openStore(dataDir);
    await writer.initRepo(null, REPO);
    // The reader starts one read as each append starts, so every read overlaps a write in flight
    // (the ref may move under it) and the number of reads is the same on any machine: a reader
    // spinning on its own made ~10 reads per append, a fifth of the test's CPU. Each append adds
    // one event file whose seq is known, so the 1,000th costs what the first does.
    let reads = 0;
    const readOnce = async (): Promise<void> => {
      const sha = await reader.resolveRef(null, REPO, "main");
      expect(sha).toMatch(/^[0-9a-f]{40}$/);
      const pinned = await reader.openCommittedReads(null, REPO, sha as string);
      expect(pinned.commitSha).toBe(sha);
      await pinned.listDir(eventsPrefix("r0"));
      reads++;
    };
    for (let i = 0; i < 1000; i++) {
      const runId = `r${i % 10}`;
      const seq = Math.floor(i / 10) + 1;
      await Promise.all([
        writer.writeTree(null, REPO, "main", { files: { [`${eventsPrefix(runId)}${seq}.json`]: JSON.stringify({ seq, i }) }, message: `append to ${runId}` }),
        readOnce(),
      ]);
    }
    expect(reads).toBe(1000);
    // Background pack merges finish first: git's fsck reports packs deleted under it.
    await Promise.all([writer.close(), reader.close()]);
    const gitdir = gitdirOf(dataDir);
    expect((await gitAt(gitdir, ["rev-list", "--count", "main"])).trim()).toBe("1001");
    for (let r = 0; r < 10; r++) expect(await gitRunSeqs(gitdir, `r${r}`)).toHaveLength(100);
    await expectFsckClean(gitdir);
  });

  it("1,000 mixed appends from two concurrent loops in one process stay linear, dense and fsck-clean", async () => {
    const dataDir = await tempDir();
    const store = openStore(dataDir);
    await store.initRepo(null, REPO);
    const summaries = await Promise.all([runMixedAppends(store, REPO, 500, "a"), runMixedAppends(store, REPO, 500, "b")]);
    expect(summaries.map((s) => s.commits)).toEqual([500, 500]);
    // Pack merging runs in the background; git's fsck, like during a `git gc`, reports packs
    // that vanish under it, so it runs once the store is closed (merges finished).
    await store.close();
    const gitdir = gitdirOf(dataDir);
    await expectFsckClean(gitdir);
    await expectLinearHistory(gitdir, 1001);
    const events = await expectDenseRuns(gitdir);
    const notes = (await gitAt(gitdir, ["ls-tree", "--name-only", "main", "notes/"])).split("\n").filter(Boolean);
    expect(events + notes.length).toBe(1000);
  });

  // Two child processes racing 500 commits each: on a shared machine under load this needs more
  // than the default 30 s (it asserts the history, never a duration).
  it("1,000 mixed appends from two child processes on one repo stay linear, dense and fsck-clean", { timeout: 120_000 }, async () => {
    const dataDir = await tempDir();
    const store = openStore(dataDir);
    await store.initRepo(null, REPO);
    const worker = join(here, "fixtures", "append-worker.ts");
    const results = await Promise.all(["p1", "p2"].map((name) => runTsScript(worker, [dataDir, REPO.id, "500", name], { timeoutMs: 60_000 })));
    for (const result of results) expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: "" });
    const summaries = results.map((r) => JSON.parse(r.stdout) as MixedSummary);
    expect(summaries.map((s) => s.commits)).toEqual([500, 500]);
    const gitdir = gitdirOf(dataDir);
    await expectFsckClean(gitdir);
    await expectLinearHistory(gitdir, 1001);
    const events = await expectDenseRuns(gitdir);
    const notes = (await gitAt(gitdir, ["ls-tree", "--name-only", "main", "notes/"])).split("\n").filter(Boolean);
    expect(events + notes.length).toBe(1000);
    // The two processes really raced: some writes needed more than one compare-and-swap.
    expect(summaries.reduce((n, s) => n + s.attempts, 0)).toBeGreaterThanOrEqual(1000);
    await store.close();
  });
});
