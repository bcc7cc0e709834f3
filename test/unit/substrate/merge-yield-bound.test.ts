/**
 * Which merges give way to commits in flight (pack-maintenance.ts → pack-merge-thread.ts): a
 * job posted while the repository holds at most YIELD_MAX_PACKS packs yields, one posted past
 * that (packs piled up) runs through. The thread is replaced by a stand-in that records the jobs
 * and fails them, so no merge shrinks the pack count between writes.
 */
import { describe, expect, it, vi } from "vitest";
import type { MergeJob } from "../../../src/substrate/pack-merge-job.js";

const posted: { sources: number; yieldToCommits: boolean | undefined }[] = [];
vi.mock("../../../src/substrate/pack-merge-thread.js", async (importOriginal) => {
  const actual = await importOriginal<typeof import("../../../src/substrate/pack-merge-thread.js")>();
  return {
    ...actual,
    mergeOnThread: async (job: MergeJob) => {
      posted.push({ sources: job.sources.length, yieldToCommits: job.yieldToCommits });
      throw new Error("no merge in this test");
    },
  };
});

const { createFsAdapter, createBlockingFsAdapter } = await import("../../../src/substrate/fs-adapter.js");
const { hashObject } = await import("../../../src/substrate/git-object.js");
const { ScopedLruCache } = await import("../../../src/substrate/lru-cache.js");
const { MAX_PACKS, YIELD_MAX_PACKS } = await import("../../../src/substrate/pack-maintenance.js");
const { createPackStore } = await import("../../../src/substrate/pack-store.js");
const { createMemFs } = await import("../../helpers/memfs.js");

describe("merges that give way to commits", () => {
  it("yield while packs are few and run through once more than YIELD_MAX_PACKS piled up", async () => {
    const mem = createMemFs();
    const gitdir = "/data/deployments/dep.git";
    mem.mkdirSync(`${gitdir}/objects/pack`, { recursive: true });
    const store = createPackStore({
      fs: createFsAdapter(mem),
      quickFs: createBlockingFsAdapter(mem),
      gitdir,
      repoKey: gitdir,
      packBytes: new ScopedLruCache(1 << 20),
      durable: false,
      clock: () => new Date("2026-01-01T00:00:00Z"),
      mergeOnThread: true,
    });
    for (let i = 0; i < YIELD_MAX_PACKS + 2; i++) {
      await store.write([hashObject("blob", Buffer.from(`object ${i}`))]);
      store.maintain();
      await store.idle();
    }
    await store.close();
    // One post per write past MAX_PACKS (each failed, so the packs stayed).
    expect(posted.length).toBe(YIELD_MAX_PACKS + 2 - MAX_PACKS);
    const byPacks = posted.map((job, k) => [MAX_PACKS + 1 + k, job.yieldToCommits]);
    expect(byPacks.filter(([packs]) => (packs as number) <= YIELD_MAX_PACKS).every(([, y]) => y === true)).toBe(true);
    expect(byPacks.filter(([packs]) => (packs as number) > YIELD_MAX_PACKS).map(([, y]) => y)).toEqual([false, false]);
  });
});
