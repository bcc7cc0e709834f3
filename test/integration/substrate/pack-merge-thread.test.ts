/**
 * Merges computed on the merge thread (pack-merge-thread.ts) and placed by the store: the same
 * bytes as a merge on the store's own thread, and a merge cut short at any file-system step
 * leaves every object readable and `git fsck --strict` clean.
 */
import { cp, readdir } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { allowAll } from "../../../src/substrate/allow-all.js";
import { createBlockingFsAdapter, createFsAdapter, type FsAdapter } from "../../../src/substrate/fs-adapter.js";
import { ScopedLruCache } from "../../../src/substrate/lru-cache.js";
import { mergeOnThread } from "../../../src/substrate/pack-merge-thread.js";
import { createPackStore, type PackStore } from "../../../src/substrate/pack-store.js";
import { createRepoStore } from "../../../src/substrate/repo-store.js";
import type { RepoId } from "../../../src/substrate/types.js";
import { plainKind } from "../../helpers/append-merge.js";
import { gitAt } from "../../helpers/git-cli.js";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { expectFsckClean } from "./fixtures/git-checks.js";

const tempDir = useTempDirs("wh-merge-thread-");
const REPO: RepoId = { kind: plainKind.kind, id: "dep-1" };
const APPENDS = 14;
const gitdirOf = (dataDir: string): string => join(dataDir, "deployments", "dep-1.git");
const packDirOf = (dataDir: string): string => join(gitdirOf(dataDir), "objects", "pack");
const runOf = (k: number): string => `r${String((k * 37) % 300).padStart(4, "0")}`;

/** A deployment of 300 runs and 14 appends, one pack per commit, none merged yet. */
async function unmergedRepo(): Promise<string> {
  const dataDir = await tempDir();
  const store = createRepoStore({ dataDir, kindHandlers: [plainKind], authorize: allowAll, watch: false, packThreshold: 1, clock: () => new Date("2026-01-01T00:00:00Z") });
  await store.initRepo(null, REPO);
  const seed: Record<string, string> = {};
  for (let i = 0; i < 300; i++) seed[`runs/r${String(i).padStart(4, "0")}/events/1.json`] = `{"seq":1,"type":"Started","data":{"i":${i},"note":"the same text in every start event"}}`;
  await store.writeTree(null, REPO, "main", { files: seed, message: "seed" });
  for (let k = 0; k < APPENDS; k++) {
    await store.writeTree(null, REPO, "main", { files: { [`runs/${runOf(k)}/events/${k + 2}.json`]: `{"seq":${k + 2},"type":"Step","data":{"k":${k}}}` }, message: `append ${k}` });
  }
  await store.close();
  return dataDir;
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

function packStoreOn(dataDir: string, fs: FsAdapter, quickFs: FsAdapter, mergeOnThread: boolean): PackStore {
  return createPackStore({ fs, quickFs, gitdir: gitdirOf(dataDir), repoKey: dataDir, packBytes: new ScopedLruCache(64 << 20), durable: true, clock: () => new Date(), mergeOnThread });
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

describe("merging packs on the merge thread", () => {
  it("writes the same merged pack as a merge on the store's own thread", async () => {
    const here = await unmergedRepo();
    const there = await tempDir();
    await cp(here, there, { recursive: true });
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
