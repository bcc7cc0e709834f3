/**
 * Merges computed on the merge thread (pack-merge-thread.ts) and placed by the store: the same
 * bytes as a merge on the store's own thread, and a merge cut short at any file-system step
 * leaves every object readable and `git fsck --strict` clean.
 */
import { readFileSync } from "node:fs";
import { cp, readdir, stat, utimes } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allowAll } from "../../../src/substrate/allow-all.js";
import { createBlockingFsAdapter, createFsAdapter, type FsAdapter } from "../../../src/substrate/fs-adapter.js";
import { ScopedLruCache } from "../../../src/substrate/lru-cache.js";
import { hashObject, type GitObject } from "../../../src/substrate/git-object.js";
import { shapeOfContent, treeDelta } from "../../../src/substrate/pack-merge.js";
import { holdMerges, MERGE_THREAD_NICE, mergeOnThread, mergeYields } from "../../../src/substrate/pack-merge-thread.js";
import { createPackStore, type PackStore } from "../../../src/substrate/pack-store.js";
import { createRepoStore } from "../../../src/substrate/repo-store.js";
import type { DeltaBase } from "../../../src/substrate/tree-object.js";
import type { Oid, RepoId } from "../../../src/substrate/types.js";
import { plainKind } from "../../helpers/append-merge.js";
import { git, gitAt } from "../../helpers/git-cli.js";
import { makeTempDir, removeTempDir, useTempDirs } from "../../helpers/temp-dir.js";
import { expectFsckClean } from "./fixtures/git-checks.js";

const tempDir = useTempDirs("wh-merge-thread-");
const REPO: RepoId = { kind: plainKind.kind, id: "dep-1" };
const APPENDS = 14;
const gitdirOf = (dataDir: string): string => join(dataDir, "deployments", "dep-1.git");
const packDirOf = (dataDir: string): string => join(gitdirOf(dataDir), "objects", "pack");
const runOf = (k: number): string => `r${String((k * 37) % 300).padStart(4, "0")}`;

/** Writes into `dataDir` a deployment of 300 runs and 14 appends, one pack per commit, none merged yet. */
async function writeUnmergedRepo(dataDir: string): Promise<void> {
  const store = createRepoStore({ dataDir, kindHandlers: [plainKind], authorize: allowAll, watch: false, packThreshold: 1, clock: () => new Date("2026-01-01T00:00:00Z") });
  await store.initRepo(null, REPO);
  const seed: Record<string, string> = {};
  for (let i = 0; i < 300; i++) seed[`runs/r${String(i).padStart(4, "0")}/events/1.json`] = `{"seq":1,"type":"Started","data":{"i":${i},"note":"the same text in every start event"}}`;
  await store.writeTree(null, REPO, "main", { files: seed, message: "seed" });
  for (let k = 0; k < APPENDS; k++) {
    await store.writeTree(null, REPO, "main", { files: { [`runs/${runOf(k)}/events/${k + 2}.json`]: `{"seq":${k + 2},"type":"Step","data":{"k":${k}}}` }, message: `append ${k}` });
  }
  await store.close();
}

// Every test that starts from the unmerged deployment gets a copy of one written once for the
// file (its packs' mtimes kept): the same bytes as writing it for each test, without 15 commits of a pack each per test.
let pristineUnmerged = "";
beforeAll(async () => {
  pristineUnmerged = await makeTempDir("wh-merge-thread-pristine-");
  await writeUnmergedRepo(pristineUnmerged);
});
afterAll(async () => {
  if (pristineUnmerged !== "") await removeTempDir(pristineUnmerged);
});

/** A copy, in a folder of its own, of a deployment of 300 runs and 14 appends, one pack per commit, none merged yet. */
async function unmergedRepo(): Promise<string> {
  const dataDir = await tempDir();
  await cp(pristineUnmerged, dataDir, { recursive: true, preserveTimestamps: true });
  return dataDir;
}

/** Gives each pack (and its index) an mtime of its own whole second, keeping their order by (mtime, name). */
async function spreadPackTimes(dataDir: string): Promise<void> {
  const dir = packDirOf(dataDir);
  const names = (await packNames(dataDir)).map((idx) => idx.slice(0, -4));
  const mtimes = new Map(await Promise.all(names.map(async (name) => [name, (await stat(join(dir, `${name}.pack`))).mtimeMs] as const)));
  names.sort((a, b) => (mtimes.get(a) as number) - (mtimes.get(b) as number) || (a < b ? -1 : 1));
  const base = Math.floor(Date.now() / 1_000) - names.length - 60;
  for (const [i, name] of names.entries()) {
    for (const ext of [".pack", ".idx"]) await utimes(join(dir, `${name}${ext}`), base + i, base + i);
  }
}

async function packNames(dataDir: string): Promise<string[]> {
  return (await readdir(packDirOf(dataDir))).filter((n) => n.endsWith(".idx")).sort();
}

/** The file-system calls that change what is on disk; the ones a crash can cut short. */
const CHANGES = new Set(["writeNewFile", "open", "rename", "unlinkQuiet", "mkdirp", "fsyncDir"]);

/** `inner`, where every changing call after the first `budget.left` fails (as after a crash). */
function cutShort(inner: FsAdapter, budget: { left: number; made: number }): FsAdapter {
  return new Proxy(inner, {
    get(target, key, receiver) {
      const value: unknown = Reflect.get(target, key, receiver);
      if (typeof value !== "function" || !CHANGES.has(String(key))) return value;
      return (...args: unknown[]) => {
        if (budget.left <= 0) return Promise.reject(Object.assign(new Error("the process was killed here"), { code: "EIO" }));
        budget.left -= 1;
        budget.made += 1;
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

function packStoreOn(dataDir: string, fs: FsAdapter, quickFs: FsAdapter, mergeOnThread: boolean, known?: ReadonlyMap<Oid, DeltaBase>): PackStore {
  return createPackStore({ fs, quickFs, gitdir: gitdirOf(dataDir), repoKey: dataDir, packBytes: new ScopedLruCache(64 << 20), durable: true, clock: () => new Date(), mergeOnThread, ...(known === undefined ? {} : { knownDeltas: () => known }) });
}

/** A tree of one blob entry per name (names given in git's order). */
function treeOf(entries: readonly (readonly [string, Oid])[]): GitObject {
  return hashObject("tree", Buffer.concat(entries.map(([name, oid]) => Buffer.concat([Buffer.from(`100644 ${name}\0`), Buffer.from(oid, "hex")]))));
}

/**
 * Two packs of 4,201 objects each (more than a commit's pack): 4,200 small blobs each, then
 * a 600-entry folder in the older one and its next version in the newer one, stored whole.
 * The next version lost the folder's first entry (as `runs/` does when retention moves the
 * oldest run out), so it is not recognised as a version of the same folder by its first name;
 * the store knows it as a delta from the older one, as an edit writes it.
 */
async function twoBigPacks(): Promise<{ dataDir: string; known: Map<Oid, DeltaBase>; next: Oid }> {
  const dataDir = await tempDir();
  await git(["init", "--quiet", "--bare", gitdirOf(dataDir)]);
  const blobs = (tag: string): GitObject[] => Array.from({ length: 4_200 }, (_, i) => hashObject("blob", Buffer.from(`{"pack":"${tag}","i":${i}}`)));
  const names = Array.from({ length: 601 }, (_, i) => `run-${String(i).padStart(5, "0")}`);
  const older = blobs("older");
  const folder = treeOf(names.slice(0, 600).map((name, i) => [name, (older[i] as GitObject).oid]));
  const newer = blobs("newer");
  const next = treeOf(names.slice(1).map((name, i) => [name, i === 300 ? (newer[0] as GitObject).oid : (older[i + 1] as GitObject).oid]));
  const delta = treeDelta(shapeOfContent(Buffer.from(folder.content)) as NonNullable<ReturnType<typeof shapeOfContent>>, shapeOfContent(Buffer.from(next.content)) as NonNullable<ReturnType<typeof shapeOfContent>>);
  const packs = packStoreOn(dataDir, createFsAdapter(), createBlockingFsAdapter(), false);
  await packs.write([...older, folder]);
  await packs.write([...newer, next]);
  await packs.close();
  return { dataDir, known: new Map([[next.oid, { oid: folder.oid, delta }]]), next: next.oid };
}

/** Scans the packs (a lookup that misses), then runs a quiet merge of all of them. */
async function compact(packs: PackStore): Promise<void> {
  await packs.read("0".repeat(40), true);
  await packs.compact();
  await packs.close();
}

async function expectEveryCommitReadable(dataDir: string): Promise<void> {
  await expectFsckClean(gitdirOf(dataDir));
  const shas = (await gitAt(gitdirOf(dataDir), ["rev-list", "main"])).trim().split("\n");
  expect(shas).toHaveLength(APPENDS + 2);
  const store = createRepoStore({ dataDir, kindHandlers: [plainKind], authorize: allowAll, watch: false });
  try {
    for (let k = 0; k < APPENDS; k++) {
      const reads = await store.openCommittedReads(null, REPO, shas[APPENDS - 1 - k] as string);
      expect(Buffer.from((await reads.readBlob(`runs/${runOf(k)}/events/${k + 2}.json`)) as Uint8Array).toString()).toContain(`"k":${k}`);
      expect(await reads.listDir("runs")).toHaveLength(300);
    }
  } finally {
    await store.close();
  }
}

/** A thread's nice value: field 19 of `/proc/<which>/stat` (after the command name in parentheses). */
function threadNice(which: string): number {
  const stat = readFileSync(`/proc/${which}/stat`, "utf8");
  return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[16]);
}

describe("merging packs on the merge thread", () => {
  it("writes the same merged pack as a merge on the store's own thread", async () => {
    const here = await unmergedRepo();
    const there = await tempDir();
    // A merge takes its sources oldest first by their packs' mtimes (ties by name). A copy keeps
    // mtimes to the millisecond only, which can tie two packs written within one (and the name
    // then orders them differently): each pack gets its own whole second first, in the order
    // the merge reads here, and the copy keeps that.
    await spreadPackTimes(here);
    await cp(here, there, { recursive: true, preserveTimestamps: true });
    const before = await packNames(here);
    expect(before.length).toBe(APPENDS + 2);

    // The thread itself answers (no fallback): the merged pack of every pack but the biggest.
    const packDir = packDirOf(there);
    const { statSync } = await import("node:fs");
    const sources = before.map((idx) => idx.slice(0, -4)).map((name) => ({ name, size: statSync(join(packDir, `${name}.pack`)).size }));
    const direct = await mergeOnThread({ packDir, sources, known: [] });
    expect(direct?.count).toBeGreaterThan(300);

    await compact(packStoreOn(here, createFsAdapter(), createBlockingFsAdapter(), false));
    await compact(packStoreOn(there, createFsAdapter(), createBlockingFsAdapter(), true));
    const mergedHere = await packNames(here);
    expect(mergedHere.length).toBeLessThan(before.length);
    // Pack names are their content's checksum: the same bytes on both threads.
    expect(await packNames(there)).toEqual(mergedHere);
    await expectEveryCommitReadable(there);
    const verified = await gitAt(gitdirOf(there), ["verify-pack", "-v", join(packDirOf(there), mergedHere.find((n) => !before.includes(n)) as string)]);
    expect(verified).toMatch(/chain length = [1-9]/);
  });

  // Run at a nice value of 10 or more (e.g. `nice -n 19 npm test`), every thread is as low already.
  it.runIf(process.platform === "linux" && threadNice("thread-self") < 10)("runs at a lower CPU priority (nice 10) than the thread that posts it, which keeps its own", async () => {
    const { readdirSync, readlinkSync, statSync } = await import("node:fs");
    const ownTid = readlinkSync("/proc/thread-self").split("/").pop() as string;
    const ownNice = threadNice("thread-self");
    const here = await unmergedRepo();
    const packDir = packDirOf(here);
    const sources = (await packNames(here)).map((idx) => idx.slice(0, -4)).map((name) => ({ name, size: statSync(join(packDir, `${name}.pack`)).size }));
    expect((await mergeOnThread({ packDir, sources, known: [] }))?.count).toBeGreaterThan(300);
    const niceByTid = new Map(readdirSync("/proc/self/task").map((tid) => [tid, threadNice(`self/task/${tid}`)]));
    // The merge thread (started by the first job in this process, or earlier) sits at nice 10.
    expect([...niceByTid.values()].filter((nice) => nice === MERGE_THREAD_NICE).length).toBeGreaterThanOrEqual(1);
    expect(niceByTid.get(ownTid)).toBe(ownNice);
  });

  it("a job that yields to commits waits while one is in flight and merges the same bytes; other jobs and free moments do not wait", async () => {
    const dataDir = await unmergedRepo();
    const packDir = packDirOf(dataDir);
    const { statSync } = await import("node:fs");
    const sources = (await packNames(dataDir)).map((idx) => idx.slice(0, -4)).map((name) => ({ name, size: statSync(join(packDir, `${name}.pack`)).size }));
    const job = { packDir, sources, known: [] };

    // No commit in flight: no wait, whichever the job.
    const before = mergeYields();
    const free = await mergeOnThread({ ...job, yieldToCommits: true });
    expect(mergeYields()).toBe(before);

    const release = holdMerges();
    try {
      // A commit in flight: a job posted without yieldToCommits runs through...
      const through = await mergeOnThread(job);
      expect(mergeYields()).toBe(before);
      // ...one posted with it waits at its entries (each wait bounded), then merges the same pack.
      const yielded = await mergeOnThread({ ...job, yieldToCommits: true });
      expect(mergeYields()).toBeGreaterThan(before);
      expect(yielded?.checksum).toBe(free?.checksum);
      expect(through?.checksum).toBe(free?.checksum);
    } finally {
      release();
    }
  });

  it("stores a folder the store knows as a delta as that delta, whatever the size of the pack holding it, as a merge on the store's own thread does", async () => {
    const here = await twoBigPacks();
    const there = await tempDir();
    await cp(here.dataDir, there, { recursive: true, preserveTimestamps: true });
    const before = await packNames(here.dataDir);
    expect(before).toHaveLength(2);

    await compact(packStoreOn(here.dataDir, createFsAdapter(), createBlockingFsAdapter(), false, here.known));
    await compact(packStoreOn(there, createFsAdapter(), createBlockingFsAdapter(), true, here.known));
    const mergedHere = await packNames(here.dataDir);
    expect(mergedHere).toHaveLength(1);
    expect(mergedHere).not.toEqual(before);
    // Same bytes on both threads (a pack's name is its checksum), so the same size and deltas.
    expect(await packNames(there)).toEqual(mergedHere);
    for (const dataDir of [here.dataDir, there]) {
      // verify-pack checks every object of the pack against its oid (nothing refers to them, so no fsck).
      const verified = await gitAt(gitdirOf(dataDir), ["verify-pack", "-v", join(packDirOf(dataDir), mergedHere[0] as string)]);
      // The newer folder (~23 KB): a tree stored as a delta (chain depth 1) of a few hundred bytes.
      const line = verified.split("\n").find((l) => l.startsWith(`${here.next} `)) as string;
      const [, type, , packed, , depth] = line.trim().split(/\s+/);
      expect(type).toBe("tree");
      expect(depth).toBe("1");
      expect(Number(packed)).toBeLessThan(1_000);
    }
  });

  it("takes the packs oldest first however lookups reordered them, so a known delta's base comes before it", async () => {
    for (const onThread of [false, true]) {
      const dataDir = await tempDir();
      await git(["init", "--quiet", "--bare", gitdirOf(dataDir)]);
      const names = Array.from({ length: 600 }, (_, i) => `run-${String(i).padStart(5, "0")}`);
      const blobs = names.map((name) => hashObject("blob", Buffer.from(`{"run":"${name}"}`)));
      const folder = treeOf(names.map((name, i) => [name, (blobs[i] as GitObject).oid]));
      const changed = hashObject("blob", Buffer.from(`{"changed":${String(onThread)}}`));
      const next = treeOf(names.slice(1).map((name, i) => [name, i === 300 ? changed.oid : (blobs[i + 1] as GitObject).oid]));
      const shape = (tree: GitObject): NonNullable<ReturnType<typeof shapeOfContent>> => shapeOfContent(Buffer.from(tree.content)) as NonNullable<ReturnType<typeof shapeOfContent>>;
      const known = new Map([[next.oid, { oid: folder.oid, delta: treeDelta(shape(folder), shape(next)) }]]);
      const packs = packStoreOn(dataDir, createFsAdapter(), createBlockingFsAdapter(), onThread, known);
      await packs.write([...blobs, folder]);
      // As many objects again in the newer pack, so a quiet merge takes both packs.
      const more = Array.from({ length: 600 }, (_, i) => hashObject("blob", Buffer.from(`{"more":${i}}`)));
      await packs.write([...more, changed, next]);
      // A read from the older pack moves it to the front of the reader's list.
      expect((await packs.read(folder.oid, false))?.type).toBe("tree");
      await packs.compact();
      await packs.close();
      const merged = await packNames(dataDir);
      expect(merged).toHaveLength(1);
      const verified = await gitAt(gitdirOf(dataDir), ["verify-pack", "-v", join(packDirOf(dataDir), merged[0] as string)]);
      const line = verified.split("\n").find((l) => l.startsWith(`${next.oid} `)) as string;
      expect(line.trim().split(/\s+/)[5]).toBe("1");
    }
  });

  it("leaves every object readable and git fsck clean when cut short at any step of placing the merge", async () => {
    const pristine = await unmergedRepo();
    // How many changing calls a whole merge makes.
    const whole = await tempDir();
    await cp(pristine, whole, { recursive: true });
    const count = { left: Number.POSITIVE_INFINITY, made: 0 };
    await compact(packStoreOn(whole, cutShort(createFsAdapter(), count), cutShort(createBlockingFsAdapter(), count), true));
    expect((await packNames(whole)).length).toBeLessThan(APPENDS + 2);
    expect(count.made).toBeGreaterThan(4);

    for (let step = 0; step < count.made; step++) {
      const dataDir = await tempDir();
      await cp(pristine, dataDir, { recursive: true });
      const budget = { left: step, made: 0 };
      await compact(packStoreOn(dataDir, cutShort(createFsAdapter(), budget), cutShort(createBlockingFsAdapter(), budget), true));
      await expectEveryCommitReadable(dataDir);
    }
  }, 180_000);
});
