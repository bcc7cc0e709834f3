import { describe, expect, it } from "vitest";
import type { CommitChange, RepoStore } from "../../../src/substrate/types.js";
import { appendNext } from "../../helpers/append-merge.js";
import { createManualTimers } from "../../helpers/manual-timers.js";
import { createMemStore, GITDIR, REPO } from "../../helpers/memfs-repo-store.js";

/** Pulls `count` items from an iterator. */
async function take(iterator: AsyncIterator<CommitChange>, count: number): Promise<CommitChange[]> {
  const out: CommitChange[] = [];
  while (out.length < count) {
    const next = await iterator.next();
    if (next.done === true) break;
    out.push(next.value);
  }
  return out;
}

async function append(store: RepoStore, runId = "r1"): Promise<string> {
  const result = await store.writeTreePreservingPrefix(null, REPO, "main", appendNext(runId, (seq) => ({ seq })));
  return result.commitSha as string;
}

describe("subscribe", () => {
  it("from head yields each later commit once, oldest first, with its blob changes", async () => {
    const { store } = createMemStore();
    await store.initRepo(null, REPO);
    await store.writeTree(null, REPO, "main", { files: { "runs/r1/events/1.json": "a", "keep": "k", "gone": "g" }, message: "seed" });
    const it = store.subscribe(null, REPO, "main", { from: "head" })[Symbol.asyncIterator]();
    const c1 = await store.writeTree(null, REPO, "main", { files: { "runs/r1/events/2.json": "b", "keep": "k2" }, message: "one" });
    const c2 = await store.writeTreeDelta(null, REPO, "main", { message: "two", computeDelta: () => ({ deletes: ["gone"] }) });
    const got = await take(it, 2);
    expect(got.map((c) => c.commitSha)).toEqual([c1.commitSha, c2.commitSha]);
    expect(got[0]?.parentSha).toBe(c1.parentSha);
    expect(got[0]?.changes.map((c) => [c.path, c.status])).toEqual([
      ["keep", "modified"],
      ["runs/r1/events/2.json", "added"],
    ]);
    expect(got[1]?.changes.map((c) => [c.path, c.status])).toEqual([["gone", "deleted"]]);
    await it.return?.();
  });

  it("from genesis yields the root commit and everything after it", async () => {
    const { store } = createMemStore();
    const { commitSha: genesis } = await store.initRepo(null, REPO);
    const shas = [await append(store), await append(store)];
    const got = await take(store.subscribe(null, REPO, "main", { from: "genesis" })[Symbol.asyncIterator](), 3);
    expect(got.map((c) => c.commitSha)).toEqual([genesis, ...shas]);
    expect(got[0]).toEqual({ commitSha: genesis, parentSha: null, changes: [] });
    expect(got[1]?.changes).toEqual([{ path: "runs/r1/events/1.json", oid: expect.stringMatching(/^[0-9a-f]{40}$/), status: "added" }]);
  });

  it("from a sha yields exactly the commits after it, with no gap or duplicate under concurrent writes", async () => {
    const { store } = createMemStore();
    await store.initRepo(null, REPO);
    const start = await append(store);
    const iterator = store.subscribe(null, REPO, "main", { from: start })[Symbol.asyncIterator]();
    const writes = Promise.all(Array.from({ length: 30 }, (_, i) => append(store, `r${i % 3}`)));
    const got = await take(iterator, 30);
    const written = await writes;
    expect(got.map((c) => c.commitSha).sort()).toEqual([...written].sort());
    // Linear: each yielded commit's parent is the one yielded before it.
    expect(got[0]?.parentSha).toBe(start);
    for (let i = 1; i < got.length; i++) expect(got[i]?.parentSha).toBe(got[i - 1]?.commitSha);
    await iterator.return?.();
  });

  it("fixes the starting point when subscribe is called, not at the first next()", async () => {
    const { store } = createMemStore();
    await store.initRepo(null, REPO);
    const iterable = store.subscribe(null, REPO, "main");
    await Promise.resolve();
    const later = await append(store);
    const got = await take(iterable[Symbol.asyncIterator](), 1);
    expect(got[0]?.commitSha).toBe(later);
  });

  it("ends the iteration cleanly when the AbortSignal fires, waiting or not", async () => {
    const { store } = createMemStore();
    await store.initRepo(null, REPO);
    const controller = new AbortController();
    const seen: string[] = [];
    const loop = (async () => {
      for await (const change of store.subscribe(null, REPO, "main", { signal: controller.signal })) seen.push(change.commitSha);
      return "ended";
    })();
    const sha = await append(store);
    while (seen.length < 1) await new Promise((r) => setImmediate(r));
    controller.abort();
    await expect(loop).resolves.toBe("ended");
    expect(seen).toEqual([sha]);
    const already = AbortSignal.abort();
    expect(await store.subscribe(null, REPO, "main", { signal: already })[Symbol.asyncIterator]().next()).toEqual({ done: true, value: undefined });
  });

  it("ends every subscription on close()", async () => {
    const { store } = createMemStore();
    await store.initRepo(null, REPO);
    const loops = [0, 1].map(async () => {
      let n = 0;
      for await (const _ of store.subscribe(null, REPO, "main")) n++;
      return n;
    });
    await new Promise((r) => setImmediate(r));
    await store.close();
    await expect(Promise.all(loops)).resolves.toEqual([0, 0]);
  });

  it("sees commits made by another process when poked, and on the poll timer", async () => {
    const timers = createManualTimers();
    const { store, fs } = createMemStore({ watch: { pollMs: 1000, chokidar: false }, timers });
    const { store: other } = createMemStore({ fs });
    await store.initRepo(null, REPO);
    const iterator = store.subscribe(null, REPO, "main")[Symbol.asyncIterator]();
    const first = iterator.next();
    // The subscription reads the ref, then arms its poll timer (a few turns of the event loop).
    for (let turn = 0; turn < 20 && timers.pending === 0; turn++) await new Promise((r) => setImmediate(r));
    expect(timers.pending).toBe(1);
    const a = await append(other);
    timers.fireAll();
    expect((await first).value?.commitSha).toBe(a);
    const second = iterator.next();
    const b = await append(other);
    store.poke(REPO);
    expect((await second).value?.commitSha).toBe(b);
    await iterator.return?.();
    // The last subscriber gone, the shared watcher and its timer are released.
    expect(timers.pending).toBe(0);
  });

  it("reports a force push through onRewrite and yields one synthetic change set, never a gap", async () => {
    const { store, fs } = createMemStore();
    await store.initRepo(null, REPO);
    await store.writeTree(null, REPO, "main", { files: { "a": "1", "b": "1" }, message: "base" });
    const base = (await store.resolveRef(null, REPO, "main")) as string;
    const rewrites: unknown[] = [];
    const iterator = store.subscribe(null, REPO, "main", { onRewrite: (info) => rewrites.push(info) })[Symbol.asyncIterator]();
    const lost = await store.writeTree(null, REPO, "main", { files: { "a": "2" }, message: "to be dropped" });
    expect((await iterator.next()).value?.commitSha).toBe(lost.commitSha);
    // Force the ref back to `base`, then commit a different change on top of it.
    fs.writeFileSync(`${GITDIR}/refs/heads/main`, `${base}\n`);
    const next = iterator.next();
    const replacement = await store.writeTree(null, REPO, "main", { files: { "c": "3" }, message: "replacement" });
    const synthetic = (await next).value as CommitChange;
    expect(rewrites).toEqual([{ from: lost.commitSha, to: replacement.commitSha }]);
    expect(synthetic.commitSha).toBe(replacement.commitSha);
    expect(synthetic.parentSha).toBe(lost.commitSha);
    expect(synthetic.changes.map((c) => [c.path, c.status])).toEqual([
      ["a", "modified"],
      ["c", "added"],
    ]);
    await iterator.return?.();
  });

  it("starts from a sha that is unknown with object_corrupt", async () => {
    const { store } = createMemStore();
    await store.initRepo(null, REPO);
    await expect(store.subscribe(null, REPO, "main", { from: "f".repeat(40) })[Symbol.asyncIterator]().next()).rejects.toMatchObject({ code: "object_corrupt" });
  });
});
