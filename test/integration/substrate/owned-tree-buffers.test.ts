/**
 * A big folder's versions written into owned bytes that are reused from commit to commit
 * (tree-buffers.ts, design notes §80): after many commits that re-oid runs/ entries (buffers
 * taken again from the pool), every older version still reads back byte for byte — bytes a
 * reader took before the later commits, bytes read again through the store, bytes git reads
 * from the packs — and packs merged while commits reuse buffers are valid.
 */
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { allowAll } from "../../../src/substrate/allow-all.js";
import { createRepoStore } from "../../../src/substrate/repo-store.js";
import { treeBufferStats } from "../../../src/substrate/tree-buffers.js";
import type { CommittedReads, RepoId, RepoStore } from "../../../src/substrate/types.js";
import { plainKind } from "../../helpers/append-merge.js";
import { createMemFs } from "../../helpers/memfs.js";
import { createMemStore, REPO as MEM_REPO } from "../../helpers/memfs-repo-store.js";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { expectFsckClean } from "./fixtures/git-checks.js";

const tempDir = useTempDirs("wh-owned-trees-");
const REPO: RepoId = { kind: plainKind.kind, id: "dep-1" };
/** Past BIG_TREE_ENTRIES (2,048): runs/ is a big folder. */
const RUNS = 2_500;
const runId = (i: number): string => `r${String(i).padStart(5, "0")}`;
const clock = (): Date => new Date("2026-01-01T00:00:00Z");

/** One version of runs/: its oid, and the bytes a reader took right after its commit. */
interface Version {
  readonly commit: string;
  readonly oid: string;
  readonly bytes: Uint8Array;
  /** A copy of `bytes` made at once: what `bytes` must still hold at the end. */
  readonly copy: Buffer;
}

const treeOidOf = (content: Uint8Array): string => createHash("sha1").update(`tree ${content.byteLength}\0`).update(content).digest("hex");

async function seed(store: RepoStore, repo: RepoId): Promise<void> {
  await store.initRepo(null, repo);
  const files: Record<string, string> = {};
  for (let i = 0; i < RUNS; i++) files[`runs/${runId(i)}/events/1.json`] = `{"seq":1,"i":${i}}`;
  await store.writeTree(null, repo, "main", { files, message: "seed" });
}

/** Commit `k`: a new event in five runs (each one's runs/ entry gets a new oid: the patch path). */
async function fire(store: RepoStore, repo: RepoId, k: number): Promise<Version> {
  const files: Record<string, string> = {};
  for (let j = 0; j < 5; j++) files[`runs/${runId((k * 97 + j * 501) % RUNS)}/events/${k + 2}.json`] = `{"seq":${k + 2}}`;
  const written = await store.writeTree(null, repo, "main", { files, message: `fire ${k}` });
  const reads = await store.openCommittedReads(null, repo, written.commitSha as string);
  return versionAt(reads, written.commitSha as string);
}

async function versionAt(reads: CommittedReads, commit: string): Promise<Version> {
  const oid = (await reads.treeOid("runs")) as string;
  const bytes = (await reads.readTreeBytes?.(oid)) as Uint8Array;
  expect(bytes).toBeInstanceOf(Uint8Array);
  return { commit, oid, bytes, copy: Buffer.from(bytes) };
}

/** Every version's bytes as the reader took them, and as read again at its commit, are its own. */
async function expectVersionsExact(store: RepoStore, repo: RepoId, versions: readonly Version[]): Promise<void> {
  for (const [i, v] of versions.entries()) {
    expect(Buffer.from(v.bytes).equals(v.copy), `version ${i}: bytes a reader took`).toBe(true);
    expect(treeOidOf(v.copy), `version ${i}: its oid`).toBe(v.oid);
    const again = await (await store.openCommittedReads(null, repo, v.commit)).readTreeBytes?.(v.oid);
    expect(Buffer.from(again as Uint8Array).equals(v.copy), `version ${i}: read again`).toBe(true);
    const listed = await (await store.openCommittedReads(null, repo, v.commit)).listDir("runs/");
    expect(listed).toHaveLength(RUNS);
  }
}

describe("a big folder's versions in reused owned bytes", () => {
  it("reads back byte for byte after buffers are reused: through the store, the bytes readers took, git's cat-file and fsck --strict, and after a merge", async () => {
    const dataDir = await tempDir();
    const gitdir = join(dataDir, "deployments", "dep-1.git");
    const store = createRepoStore({ dataDir, kindHandlers: [plainKind], authorize: allowAll, watch: false, packThreshold: 1, clock });
    await seed(store, REPO);
    const before = treeBufferStats();
    // A reader that took runs/ before the commits below.
    const first = await versionAt(await store.openCommittedReads(null, REPO, "main"), "main");
    const versions: Version[] = [];
    for (let k = 0; k < 40; k++) versions.push(await fire(store, REPO, k));
    const after = treeBufferStats();
    // The commits did reuse buffers (taken again from the pool, not allocated each time).
    expect(after.reused - before.reused).toBeGreaterThan(20);
    expect(after.allocated - before.allocated).toBeLessThan(20);
    expect(Buffer.from(first.bytes).equals(first.copy)).toBe(true);
    await expectVersionsExact(store, REPO, versions);
    // Merged into one pack (big folders as deltas), while this store's recent versions are cached.
    await store.compactPacks?.(null, REPO);
    for (let k = 40; k < 50; k++) versions.push(await fire(store, REPO, k));
    await expectVersionsExact(store, REPO, versions);
    // (Closed first: its background merges would replace packs under git's feet.)
    await store.close();
    for (const v of versions) expect(execFileSync("git", [`--git-dir=${gitdir}`, "cat-file", "tree", v.oid]).equals(v.copy)).toBe(true);
    await expectFsckClean(gitdir);
  }, 120_000);

  it("merges packs on the event loop (parsed big trees from the cache) while commits reuse buffers, and every version reads back from the merged packs", async () => {
    const fs = createMemFs();
    // Packs for every commit; merged on this thread (a memory file system has no merge thread),
    // where a merge takes big trees from the store's cache across its slices.
    const { store } = createMemStore({ fs, packThreshold: 1 });
    await seed(store, MEM_REPO);
    const versions: Version[] = [];
    const committing = (async () => {
      for (let k = 0; k < 60; k++) versions.push(await fire(store, MEM_REPO, k));
    })();
    const merging = (async () => {
      for (let m = 0; m < 12; m++) {
        await store.compactPacks?.(null, MEM_REPO);
        await new Promise((resolve) => setImmediate(resolve));
      }
    })();
    await Promise.all([committing, merging]);
    await store.compactPacks?.(null, MEM_REPO);
    await expectVersionsExact(store, MEM_REPO, versions);
    await store.close();
    // A fresh store reads every version from the merged packs alone.
    const { store: fresh } = createMemStore({ fs, packThreshold: 1 });
    await expectVersionsExact(fresh, MEM_REPO, versions);
    await fresh.close();
  }, 120_000);

  it("writes loose objects from owned bytes (no packs) and reads every version back", async () => {
    const fs = createMemFs();
    const { store } = createMemStore({ fs });
    await seed(store, MEM_REPO);
    const versions: Version[] = [];
    for (let k = 0; k < 30; k++) versions.push(await fire(store, MEM_REPO, k));
    await expectVersionsExact(store, MEM_REPO, versions);
    await store.close();
    const { store: fresh } = createMemStore({ fs });
    await expectVersionsExact(fresh, MEM_REPO, versions);
    await fresh.close();
  }, 120_000);
});
