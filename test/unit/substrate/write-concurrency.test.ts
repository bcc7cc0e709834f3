import { inflateSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { WorkflowHostError } from "../../../src/errors.js";
import type { KindHandler, PushContext, RepoStore } from "../../../src/substrate/types.js";
import { appendNext, eventsPrefix, plainKind, seqsOf } from "../../helpers/append-merge.js";
import { createMemStore, GITDIR, looseObjects, REPO } from "../../helpers/memfs-repo-store.js";
import type { MemFs } from "../../helpers/memfs.js";

async function codeOf(promise: Promise<unknown>): Promise<string | undefined> {
  try {
    await promise;
  } catch (error) {
    return (error as { code?: string }).code;
  }
  return undefined;
}

/**
 * First-parent chain from the tip to the root, newest first; asserts no commit has two parents.
 */
async function firstParentChain(store: RepoStore, fs: MemFs): Promise<string[]> {
  const chain: string[] = [];
  let at = await store.resolveRef(null, REPO, "main");
  while (at !== null) {
    chain.push(at);
    const raw = inflateSync(fs.readFileSync(`${GITDIR}/objects/${at.slice(0, 2)}/${at.slice(2)}`) as Buffer).toString("utf8");
    const parents = [...raw.matchAll(/^parent ([0-9a-f]{40})$/gm)].map((m) => m[1] as string);
    expect(parents.length).toBeLessThanOrEqual(1);
    at = parents[0] ?? null;
  }
  return chain;
}

async function runSeqs(store: RepoStore, runId: string): Promise<number[]> {
  const reads = await store.openCommittedReads(null, REPO, "main");
  return seqsOf((await reads.listDir(eventsPrefix(runId))).map((e) => e.name));
}

describe("concurrent writers", () => {
  it("queues writes per ref: a write to another ref of the repository does not wait for a slow write to main", async () => {
    // A dispatch checkpoint (refs/consumers/<name>) must not queue behind fire commits on main.
    const { store } = createMemStore();
    await store.initRepo(null, REPO);
    const order: string[] = [];
    let openGate: () => void = () => {};
    const gate = new Promise<void>((resolve) => (openGate = resolve));
    const slowMain = store.writeTreeDelta(null, REPO, "main", {
      message: "slow",
      computeDelta: async () => {
        await gate;
        return { puts: new Map([["notes/a.txt", "a"]]) };
      },
    }).then(() => order.push("main"));
    const checkpoint = store.writeTree(null, REPO, "refs/consumers/c1", { files: { "consumer.json": "{}" }, message: "checkpoint" }).then(() => order.push("consumer"));
    // The checkpoint gets many turns of the event loop to finish on its own; then main goes.
    for (let i = 0; i < 500 && order.length === 0; i++) await new Promise((resolve) => setImmediate(resolve));
    openGate();
    await Promise.all([slowMain, checkpoint]);
    expect(order).toEqual(["consumer", "main"]);
  });

  it("serialises concurrent appends in one process into a linear history", async () => {
    const { store, fs } = createMemStore();
    await store.initRepo(null, REPO);
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => store.writeTreePreservingPrefix(null, REPO, "main", appendNext("r1", (seq) => ({ seq, i })))));
    expect(results.every((r) => r.committed && r.attempts === 1)).toBe(true);
    expect(await runSeqs(store, "r1")).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    expect(await firstParentChain(store, fs)).toHaveLength(21);
  });

  it("re-runs the merge against the new tip after another writer moved the ref (lost CAS)", async () => {
    const { store, fs } = createMemStore();
    const { store: other } = createMemStore({ fs });
    await store.initRepo(null, REPO);
    const parents: (string | null)[] = [];
    const result = await store.writeTreePreservingPrefix(null, REPO, "main", {
      preservePrefix: "runs/r1/events/",
      message: "mine",
      merge: async (existing, parentSha) => {
        parents.push(parentSha);
        if (parents.length === 1) {
          // Another process commits between our read of the tip and our compare-and-swap.
          await other.writeTreePreservingPrefix(null, REPO, "main", appendNext("r1", (seq) => ({ seq, who: "other" })));
        }
        const files = new Map<string, Uint8Array | string>(existing);
        files.set(`${existing.size + 1}.json`, JSON.stringify({ who: "mine" }));
        return { files, result: existing.size + 1 };
      },
    });
    expect(parents).toHaveLength(2);
    expect(parents[1]).not.toBe(parents[0]);
    expect(result).toMatchObject({ committed: true, attempts: 2, result: 2, parentSha: parents[1] });
    expect(await runSeqs(store, "r1")).toEqual([1, 2]);
    expect(await firstParentChain(store, fs)).toHaveLength(3);
  });

  it("retries a lost race under the ref lock, so the retry cannot be overtaken", async () => {
    const { store, fs } = createMemStore();
    const { store: other } = createMemStore({ fs });
    await store.initRepo(null, REPO);
    const lockHeld: boolean[] = [];
    const result = await store.writeTreeDelta(null, REPO, "main", {
      message: "mine",
      computeDelta: async () => {
        lockHeld.push(fs.existsSync(`${GITDIR}/refs/heads/main.lock`));
        if (lockHeld.length === 1) await other.writeTree(null, REPO, "main", { files: { theirs: "x" }, message: "other" });
        return { puts: { mine: "x" } };
      },
    });
    expect(lockHeld).toEqual([false, true]);
    expect(result).toMatchObject({ committed: true, attempts: 2 });
    expect(fs.existsSync(`${GITDIR}/refs/heads/main.lock`)).toBe(false);
    const reads = await store.openCommittedReads(null, REPO, "main");
    expect((await reads.listDir("")).map((e) => e.name)).toEqual(["mine", "theirs"]);
  });

  it("gives up with ref_conflict after maxWriteAttempts, leaving the other writers' commits", async () => {
    const { store, fs } = createMemStore({ maxWriteAttempts: 3 });
    const { store: other } = createMemStore({ fs });
    await store.initRepo(null, REPO);
    let runs = 0;
    const code = await codeOf(
      store.writeTreeDelta(null, REPO, "main", {
        message: "never lands",
        computeDelta: async () => {
          runs++;
          // Attempt 1 loses the compare-and-swap; later (locked) attempts have their lock
          // broken as stale by another writer, which then commits.
          if (runs > 1) fs.unlinkSync(`${GITDIR}/refs/heads/main.lock`);
          await other.writeTree(null, REPO, "main", { files: { [`other/${runs}`]: "x" }, message: "other" });
          return { puts: { mine: "x" } };
        },
      }),
    );
    expect(code).toBe("ref_conflict");
    expect(runs).toBe(3);
    const reads = await store.openCommittedReads(null, REPO, "main");
    expect(await reads.readBlob("mine")).toBeNull();
    expect((await reads.listDir("other")).map((e) => e.name)).toEqual(["1", "2", "3"]);
    expect(fs.existsSync(`${GITDIR}/refs/heads/main.lock`)).toBe(false);
  });
});

describe("validatePush", () => {
  function guardedStore(seen: PushContext[]): ReturnType<typeof createMemStore> {
    const handler: KindHandler = {
      ...plainKind,
      async validatePush(ctx) {
        seen.push(ctx);
        for (const change of ctx.changes) {
          if (change.path.includes("bad")) {
            throw new WorkflowHostError("event_invalid", `refused ${change.path}`, { path: change.path });
          }
        }
        // Readers must show the before and after states of a changed path.
        const path = ctx.changes[0]?.path as string;
        expect(ctx.prior === null ? null : await ctx.prior.readBlob(path)).toBeNull();
        expect(await ctx.prospective.readBlob(path)).not.toBeNull();
        expect(ctx.prospective.commitSha).toBeNull();
      },
    };
    return createMemStore({ kindHandlers: [handler] });
  }

  it("sees only the changed paths and their parent folders", async () => {
    const seen: PushContext[] = [];
    const { store } = guardedStore(seen);
    await store.initRepo(null, REPO);
    const seed: Record<string, string> = {};
    for (let i = 0; i < 50; i++) seed[`runs/r${i}/events/1.json`] = "{}";
    await store.writeTree(null, REPO, "main", { files: seed, message: "seed" });
    seen.length = 0;
    await store.writeTreeDelta(null, REPO, "main", {
      message: "two runs",
      computeDelta: () => ({ puts: { "runs/r3/events/2.json": "{}", "runs/r9/events/2.json": "{}", "top.json": "{}" } }),
    });
    expect(seen).toHaveLength(1);
    const ctx = seen[0] as PushContext;
    expect(ctx.ref).toBe("refs/heads/main");
    expect(ctx.repoId).toEqual(REPO);
    expect(ctx.changes.map((c) => [c.path, c.status])).toEqual([
      ["runs/r3/events/2.json", "added"],
      ["runs/r9/events/2.json", "added"],
      ["top.json", "added"],
    ]);
    expect(ctx.changedPathPrefixes).toEqual(["", "runs/r3/events/", "runs/r9/events/"]);
  });

  it("a refusal leaves the ref unmoved and writes no objects", async () => {
    const seen: PushContext[] = [];
    const { store, fs } = guardedStore(seen);
    const { commitSha } = await store.initRepo(null, REPO);
    const before = looseObjects(fs);
    await expect(store.writeTree(null, REPO, "main", { files: { "runs/bad/events/1.json": "{}" }, message: "m" })).rejects.toMatchObject({ code: "event_invalid" });
    expect(await store.resolveRef(null, REPO, "main")).toBe(commitSha);
    expect(looseObjects(fs)).toEqual(before);
    expect(fs.existsSync(`${GITDIR}/refs/heads/main.lock`)).toBe(false);
  });

  it("is not called for a no-op write", async () => {
    const seen: PushContext[] = [];
    const { store } = guardedStore(seen);
    await store.initRepo(null, REPO);
    await store.writeTree(null, REPO, "main", { files: { "a.json": "1" }, message: "m" });
    seen.length = 0;
    expect((await store.writeTree(null, REPO, "main", { files: { "a.json": "1" }, message: "m" })).committed).toBe(false);
    expect(seen).toHaveLength(0);
  });
});

describe("ref locks", () => {
  it("waits for a live writer's lock, then fails with ref_locked and leaves the lock alone", async () => {
    const { store, fs } = createMemStore({ lockTimeoutMs: 40 });
    const { commitSha } = await store.initRepo(null, REPO);
    fs.writeFileSync(`${GITDIR}/refs/heads/main.lock`, "");
    expect(await codeOf(store.writeTree(null, REPO, "main", { files: { a: "1" }, message: "m" }))).toBe("ref_locked");
    expect(fs.existsSync(`${GITDIR}/refs/heads/main.lock`)).toBe(true);
    expect(await store.resolveRef(null, REPO, "main")).toBe(commitSha);
  });

  it("breaks a lock older than staleLockMs (a crashed writer's) and commits", async () => {
    const { store, fs } = createMemStore({ lockTimeoutMs: 40, staleLockMs: 60_000 });
    await store.initRepo(null, REPO);
    fs.writeFileSync(`${GITDIR}/refs/heads/main.lock`, "");
    const old = (Date.now() - 120_000) / 1000;
    fs.utimesSync(`${GITDIR}/refs/heads/main.lock`, old, old);
    const result = await store.writeTree(null, REPO, "main", { files: { a: "1" }, message: "m" });
    expect(result.committed).toBe(true);
    expect(fs.existsSync(`${GITDIR}/refs/heads/main.lock`)).toBe(false);
    expect(fs.readFileSync(`${GITDIR}/refs/heads/main`, "utf8")).toBe(`${result.commitSha}\n`);
  });
});
