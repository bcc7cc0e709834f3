import { describe, expect, it, vi } from "vitest";
import { allowAll } from "../../../src/substrate/allow-all.js";
import { createRepoStore } from "../../../src/substrate/repo-store.js";
import type { Authorize, RepoStore } from "../../../src/substrate/types.js";
import { appendNext, eventsPrefix, plainKind } from "../../helpers/append-merge.js";
import { createMemStore, DATA_DIR, GITDIR, looseObjects, REPO } from "../../helpers/memfs-repo-store.js";

const text = (bytes: Uint8Array | null): string | null => (bytes === null ? null : Buffer.from(bytes).toString("utf8"));

async function codeOf(promise: Promise<unknown>): Promise<string | undefined> {
  try {
    await promise;
  } catch (error) {
    return (error as { code?: string }).code;
  }
  return undefined;
}

async function initialised(): Promise<ReturnType<typeof createMemStore> & { genesis: string }> {
  const made = createMemStore();
  const { commitSha } = await made.store.initRepo(null, REPO);
  return { ...made, genesis: commitSha };
}

describe("initRepo", () => {
  it("creates a bare repository with a genesis commit on refs/heads/main", async () => {
    const { store, fs } = createMemStore();
    const result = await store.initRepo(null, REPO);
    expect(result.created).toBe(true);
    expect(fs.readFileSync(`${GITDIR}/HEAD`, "utf8")).toBe("ref: refs/heads/main\n");
    expect(fs.readFileSync(`${GITDIR}/config`, "utf8")).toMatch(/bare = true/);
    expect(fs.readFileSync(`${GITDIR}/refs/heads/main`, "utf8")).toBe(`${result.commitSha}\n`);
    expect(fs.existsSync(`${GITDIR}/refs/tags`)).toBe(true);
    const reads = await store.openCommittedReads(null, REPO, "main");
    expect(reads.commitSha).toBe(result.commitSha);
    expect(await reads.listDir("")).toEqual([]);
    expect(await reads.treeOid("")).toBe("4b825dc642cb6eb9a060e54bf8d69288fbee4904");
  });

  it("is idempotent, also for two stores racing on one file system", async () => {
    const { store, fs } = createMemStore();
    const { store: other } = createMemStore({ fs });
    const results = await Promise.all([store.initRepo(null, REPO), other.initRepo(null, REPO), store.initRepo(null, REPO)]);
    expect(results.filter((r) => r.created)).toHaveLength(1);
    expect(new Set(results.map((r) => r.commitSha)).size).toBe(1);
    const again = await store.initRepo(null, REPO);
    expect(again).toEqual({ created: false, commitSha: results[0]?.commitSha });
    // The losing genesis was never written: one empty tree and one commit.
    expect(looseObjects(fs)).toHaveLength(2);
  });

  it("checks the repo id and kind before touching the file system", async () => {
    const touched = vi.fn();
    const trap = new Proxy({}, { get: () => touched });
    const store = createRepoStore({ dataDir: DATA_DIR, fs: { promises: trap }, kindHandlers: [plainKind], authorize: allowAll, watch: false });
    for (const id of ["../x", "a/b", "", "a".repeat(129), ".hidden", "a\\b"]) {
      expect(await codeOf(store.initRepo(null, { kind: plainKind.kind, id }))).toBe("repo_id_invalid");
      expect(await codeOf(store.writeTree(null, { kind: plainKind.kind, id }, "main", { files: {}, message: "m" }))).toBe("repo_id_invalid");
    }
    expect(await codeOf(store.resolveRef(null, { kind: "nope", id: "ok" }, "main"))).toBe("kind_unknown");
    expect(await codeOf(store.listRepos(null, "nope"))).toBe("kind_unknown");
    expect(touched).not.toHaveBeenCalled();
  });
});

describe("listRepos and resolveRef", () => {
  it("lists existing repositories of a kind, sorted", async () => {
    const { store, fs } = createMemStore();
    expect(await store.listRepos(null, plainKind.kind)).toEqual([]);
    await store.initRepo(null, { kind: plainKind.kind, id: "zeta" });
    await store.initRepo(null, { kind: plainKind.kind, id: "alpha" });
    fs.mkdirSync(`${DATA_DIR}/deployments/not-a-repo.git`, { recursive: true });
    fs.writeFileSync(`${DATA_DIR}/deployments/stray.txt`, "x");
    expect(await store.listRepos(null, plainKind.kind)).toEqual(["alpha", "zeta"]);
  });

  it("resolves main, refs/heads/main and HEAD alike; an absent branch is null", async () => {
    const { store, genesis } = await initialised();
    expect(await store.resolveRef(null, REPO, "main")).toBe(genesis);
    expect(await store.resolveRef(null, REPO, "refs/heads/main")).toBe(genesis);
    expect(await store.resolveRef(null, REPO, "HEAD")).toBe(genesis);
    expect(await store.resolveRef(null, REPO, "other")).toBeNull();
    expect(await codeOf(store.resolveRef(null, REPO, "../../x"))).toBe("path_violation");
  });

  it("reports repo_not_found for a repository that was never created", async () => {
    const { store } = createMemStore();
    expect(await codeOf(store.resolveRef(null, REPO, "main"))).toBe("repo_not_found");
    expect(await codeOf(store.openCommittedReads(null, REPO, "main"))).toBe("repo_not_found");
    expect(await codeOf(store.writeTree(null, REPO, "main", { files: { a: "1" }, message: "m" }))).toBe("repo_not_found");
  });

  it("reads a ref that only exists in packed-refs, and moves it with a loose ref", async () => {
    const { store, fs, genesis } = await initialised();
    fs.unlinkSync(`${GITDIR}/refs/heads/main`);
    fs.writeFileSync(`${GITDIR}/packed-refs`, `# pack-refs with: peeled fully-peeled sorted \n${genesis} refs/heads/main\n`);
    expect(await store.resolveRef(null, REPO, "main")).toBe(genesis);
    const written = await store.writeTree(null, REPO, "main", { files: { a: "1" }, message: "after pack" });
    expect(written.parentSha).toBe(genesis);
    expect(fs.readFileSync(`${GITDIR}/refs/heads/main`, "utf8")).toBe(`${written.commitSha}\n`);
  });
});

describe("openCommittedReads", () => {
  it("reads are pinned to one commit whatever moves the ref", async () => {
    const { store } = await initialised();
    const first = await store.writeTree(null, REPO, "main", { files: { "runs/r1/events/1.json": "{\"seq\":1}", "README": "hi" }, message: "one" });
    const pinned = await store.openCommittedReads(null, REPO, "main");
    await store.writeTree(null, REPO, "main", { files: { "runs/r1/events/2.json": "{\"seq\":2}", "README": "changed" }, message: "two" });
    expect(pinned.commitSha).toBe(first.commitSha);
    expect((await pinned.listDir("runs/r1/events")).map((e) => e.name)).toEqual(["1.json"]);
    expect(text(await pinned.readBlob("README"))).toBe("hi");
    const bySha = await store.openCommittedReads(null, REPO, first.commitSha as string);
    expect(await bySha.treeOid("runs")).toBe(await pinned.treeOid("runs/"));
    const latest = await store.openCommittedReads(null, REPO, "HEAD");
    expect((await latest.listDir("runs/r1/events/")).map((e) => e.name)).toEqual(["1.json", "2.json"]);
  });

  it("lists folders sorted by name with types and oids, and reads blobs by path and oid", async () => {
    const { store } = await initialised();
    await store.writeTree(null, REPO, "main", { files: { "a/x": "1", "a-b": "2", "a.txt": "3", b: new Uint8Array([0, 1, 2]) }, message: "m" });
    const reads = await store.openCommittedReads(null, REPO, "main");
    const root = await reads.listDir("");
    expect(root.map((e) => [e.name, e.type])).toEqual([["a", "tree"], ["a-b", "blob"], ["a.txt", "blob"], ["b", "blob"]]);
    const b = root.find((e) => e.name === "b");
    expect([...(await reads.readBlobByOid(b?.oid as string))]).toEqual([0, 1, 2]);
    expect(await reads.readBlob("a")).toBeNull();
    expect(await reads.readBlob("missing/file")).toBeNull();
    expect(await reads.listDir("a-b")).toEqual([]);
    expect(await reads.listDir("nope")).toEqual([]);
    expect(await reads.treeOid("nope")).toBeNull();
    expect(await reads.treeOid("a/x")).toBe((await reads.listDir("a"))[0]?.oid);
    expect(await codeOf(reads.readBlobByOid((await reads.treeOid("a")) as string))).toBe("object_corrupt");
    expect(await codeOf(reads.readBlobByOid("0".repeat(40)))).toBe("object_corrupt");
    expect(await codeOf(reads.readBlob("../etc/passwd"))).toBe("path_violation");
  });

  it("gives empty reads for an unborn ref and object_corrupt for an unknown sha", async () => {
    const { store } = await initialised();
    const unborn = await store.openCommittedReads(null, REPO, "refs/heads/unborn");
    expect(unborn.commitSha).toBeNull();
    expect(await unborn.listDir("")).toEqual([]);
    expect(await unborn.treeOid("")).toBeNull();
    expect(await codeOf(store.openCommittedReads(null, REPO, "1".repeat(40)))).toBe("object_corrupt");
  });
});

describe("writes", () => {
  it("writeTree adds files on top of the tip and records the parent", async () => {
    const { store, genesis } = await initialised();
    const one = await store.writeTree(null, REPO, "main", { files: new Map([["runs/r1/events/1.json", "a"]]), message: "one" });
    expect(one).toMatchObject({ committed: true, parentSha: genesis, attempts: 1 });
    const two = await store.writeTree(null, REPO, "main", { files: { "runs/r2/events/1.json": "b" }, message: "two" });
    expect(two.parentSha).toBe(one.commitSha);
    const reads = await store.openCommittedReads(null, REPO, "main");
    expect((await reads.listDir("runs")).map((e) => e.name)).toEqual(["r1", "r2"]);
  });

  it("writes through HEAD to main, and starts an unborn branch with a root commit", async () => {
    const { store, genesis } = await initialised();
    const viaHead = await store.writeTree(null, REPO, "HEAD", { files: { a: "1" }, message: "via HEAD" });
    expect(viaHead.parentSha).toBe(genesis);
    expect(await store.resolveRef(null, REPO, "refs/heads/main")).toBe(viaHead.commitSha);
    const branch = await store.writeTree(null, REPO, "feature", { files: { b: "2" }, message: "root of feature" });
    expect(branch).toMatchObject({ committed: true, parentSha: null });
    expect(await store.resolveRef(null, REPO, "refs/heads/feature")).toBe(branch.commitSha);
    const reads = await store.openCommittedReads(null, REPO, "feature");
    expect((await reads.listDir("")).map((e) => e.name)).toEqual(["b"]);
    expect((await store.writeTree(null, REPO, "other", { files: {}, message: "empty" })).committed).toBe(false);
    expect(await store.resolveRef(null, REPO, "other")).toBeNull();
  });

  it("writeTree with clearPrefix replaces that folder only", async () => {
    const { store } = await initialised();
    await store.writeTree(null, REPO, "main", { files: { "runs/r1/a": "1", "runs/r1/sub/b": "2", "runs/r2/c": "3" }, message: "seed" });
    const result = await store.writeTree(null, REPO, "main", { files: { "runs/r1/a": "1", "runs/r1/d": "4", "top": "5" }, clearPrefix: "runs/r1/", message: "replace" });
    expect(result.committed).toBe(true);
    const reads = await store.openCommittedReads(null, REPO, "main");
    expect((await reads.listDir("runs/r1")).map((e) => e.name)).toEqual(["a", "d"]);
    expect(text(await reads.readBlob("runs/r2/c"))).toBe("3");
    expect(text(await reads.readBlob("top"))).toBe("5");
  });

  it("commits nothing for a write that leaves the tree as it is", async () => {
    const { store, fs } = await initialised();
    const first = await store.writeTree(null, REPO, "main", { files: { "runs/r1/events/1.json": "a" }, message: "one" });
    const before = looseObjects(fs);
    const same = await store.writeTree(null, REPO, "main", { files: { "runs/r1/events/1.json": "a" }, message: "again" });
    expect(same).toEqual({ committed: false, commitSha: first.commitSha, parentSha: first.commitSha, attempts: 1, result: undefined });
    const merged = await store.writeTreePreservingPrefix(null, REPO, "main", {
      preservePrefix: "runs/r1/events/",
      message: "noop merge",
      merge: (existing) => ({ files: existing, result: "kept" }),
    });
    expect(merged).toMatchObject({ committed: false, commitSha: first.commitSha, result: "kept" });
    const nullDelta = await store.writeTreeDelta(null, REPO, "main", { message: "noop", computeDelta: () => null });
    expect(nullDelta.committed).toBe(false);
    const emptyDelta = await store.writeTreeDelta(null, REPO, "main", { message: "noop", computeDelta: () => ({ puts: {}, deletes: ["not/there"], result: 7 }) });
    expect(emptyDelta).toMatchObject({ committed: false, result: 7 });
    expect(looseObjects(fs)).toEqual(before);
    expect(await store.resolveRef(null, REPO, "main")).toBe(first.commitSha);
  });

  it("writeTreePreservingPrefix merges the blobs directly under the prefix and replaces them", async () => {
    const { store } = await initialised();
    await store.writeTree(null, REPO, "main", { files: { "runs/r1/events/1.json": "a", "runs/r1/events/2.json": "b", "runs/r1/events/sub/x": "keep", "runs/r1/other": "keep" }, message: "seed" });
    const seen: string[][] = [];
    const result = await store.writeTreePreservingPrefix(null, REPO, "main", {
      preservePrefix: "runs/r1/events/",
      message: "rewrite",
      merge: (existing, parentSha) => {
        seen.push([...existing.keys()], [String(parentSha?.length)]);
        const files = new Map<string, string | Uint8Array>([["1.json", existing.get("1.json") as Uint8Array], ["runs/r1/events/3.json", "c"]]);
        return { files, result: existing.size };
      },
    });
    expect(seen).toEqual([["1.json", "2.json"], ["40"]]);
    expect(result).toMatchObject({ committed: true, result: 2 });
    const reads = await store.openCommittedReads(null, REPO, "main");
    expect((await reads.listDir("runs/r1/events")).map((e) => e.name)).toEqual(["1.json", "3.json", "sub"]);
    expect(text(await reads.readBlob("runs/r1/other"))).toBe("keep");
  });

  it("writeTreePreservingPrefix rejects result paths outside the prefix and commits nothing", async () => {
    const { store, genesis } = await initialised();
    for (const bad of ["runs/r2/events/1.json", "../x", "sub/1.json", ".git", "", "runs/r1/events/a/b"]) {
      const code = await codeOf(
        store.writeTreePreservingPrefix(null, REPO, "main", {
          preservePrefix: "runs/r1/events/",
          message: "bad",
          merge: () => ({ files: new Map([[bad, "x"]]) }),
        }),
      );
      expect(code, bad).toBe("path_violation");
    }
    expect(await codeOf(store.writeTreePreservingPrefix(null, REPO, "main", { preservePrefix: "runs/r1/events", message: "m", merge: (e) => ({ files: e }) }))).toBe("path_violation");
    expect(await store.resolveRef(null, REPO, "main")).toBe(genesis);
  });

  it("writeTree refuses a file whose content is neither bytes nor a string (content_invalid, naming it) and commits nothing", async () => {
    const { store, genesis, fs } = await initialised();
    const objectsBefore = looseObjects(fs).length;
    for (const content of [null, undefined, 5, { text: "x" }, [1, 2]]) {
      const files = { "runs/r1/events/1.json": "fine", "runs/r1/events/2.json": content } as unknown as Record<string, string>;
      const refused = await store.writeTree(null, REPO, "main", { files, message: "bad" }).then(
        () => null,
        (error: unknown) => error as { code?: string; data?: { path?: string } },
      );
      expect({ content, code: refused?.code, path: refused?.data?.path }).toEqual({ content, code: "content_invalid", path: "runs/r1/events/2.json" });
    }
    expect(await store.resolveRef(null, REPO, "main")).toBe(genesis);
    expect(looseObjects(fs).length).toBe(objectsBefore);
  });

  it("writeTreeDelta applies puts and deletes in one commit and returns the result", async () => {
    const { store } = await initialised();
    await store.writeTree(null, REPO, "main", { files: { "runs/r1/events/1.json": "a", "runs/old/events/1.json": "z" }, message: "seed" });
    const tip = await store.resolveRef(null, REPO, "main");
    const result = await store.writeTreeDelta(null, REPO, "main", {
      message: "group",
      computeDelta: async (parentSha, reads) => {
        expect(parentSha).toBe(tip);
        expect(reads.commitSha).toBe(tip);
        const n = (await reads.listDir("runs/r1/events")).length;
        return { puts: new Map([["runs/r1/events/2.json", "b"], ["runs/r3/events/1.json", "c"]]), deletes: ["runs/old"], result: n };
      },
    });
    expect(result).toMatchObject({ committed: true, parentSha: tip, result: 1 });
    const reads = await store.openCommittedReads(null, REPO, "main");
    expect((await reads.listDir("runs")).map((e) => e.name)).toEqual(["r1", "r3"]);
  });

  it("rejects bad paths with path_violation before anything is written", async () => {
    const { store, fs, genesis } = await initialised();
    const before = looseObjects(fs);
    for (const path of ["/abs", "a//b", "a/../b", ".git/config", "x/.GIT/y", "a\\b", "a\u0000b", "trailing/"]) {
      expect(await codeOf(store.writeTree(null, REPO, "main", { files: { [path]: "x" }, message: "m" })), path).toBe("path_violation");
      expect(await codeOf(store.writeTreeDelta(null, REPO, "main", { message: "m", computeDelta: () => ({ deletes: [path] }) })), path).toBe("path_violation");
    }
    expect(await codeOf(store.writeTree(null, REPO, "main", { files: { a: "1", "a/b": "2" }, message: "m" }))).toBe("path_violation");
    expect(await codeOf(store.writeTree(null, REPO, "main", { files: {}, clearPrefix: "../", message: "m" }))).toBe("path_violation");
    expect(await store.resolveRef(null, REPO, "main")).toBe(genesis);
    expect(looseObjects(fs)).toEqual(before);
  });

  it("rewrites only the trees on the changed path (one blob, four trees, one commit)", async () => {
    const { store, fs } = await initialised();
    const files: Record<string, string> = {};
    for (let i = 0; i < 200; i++) files[`runs/r${i}/events/1.json`] = `{"seq":1,"i":${i}}`;
    await store.writeTree(null, REPO, "main", { files, message: "seed" });
    const reads = await store.openCommittedReads(null, REPO, "main");
    const untouched = await reads.treeOid("runs/r7");
    const before = new Set(looseObjects(fs));
    await store.writeTreePreservingPrefix(null, REPO, "main", appendNext("r3", (seq) => ({ seq })));
    const added = looseObjects(fs).filter((oid) => !before.has(oid));
    expect(added).toHaveLength(6);
    const after = await store.openCommittedReads(null, REPO, "main");
    expect(await after.treeOid("runs/r7")).toBe(untouched);
  });
});

describe("authorize", () => {
  it("gates every operation with the principal, repo, ref and action", async () => {
    const calls: unknown[][] = [];
    const deny: Authorize = (...args) => {
      calls.push(args);
      return false;
    };
    const { store, fs } = await initialised();
    const denied = createRepoStore({ dataDir: DATA_DIR, fs, kindHandlers: [plainKind], authorize: deny, watch: false });
    const attempts: [string, Promise<unknown>][] = [
      ["init", denied.initRepo("p", REPO)],
      ["list", denied.listRepos("p", plainKind.kind)],
      ["read", denied.resolveRef("p", REPO, "main")],
      ["read", denied.openCommittedReads("p", REPO, "main")],
      ["write", denied.writeTree("p", REPO, "main", { files: { a: "1" }, message: "m" })],
      ["write", denied.writeTreePreservingPrefix("p", REPO, "main", appendNext("r1", () => ({})))],
      ["write", denied.writeTreeDelta("p", REPO, "main", { message: "m", computeDelta: () => ({ puts: { a: "1" } }) })],
      ["subscribe", denied.subscribe("p", REPO, "main")[Symbol.asyncIterator]().next()],
    ];
    for (const [, attempt] of attempts) expect(await codeOf(attempt)).toBe("authorize_denied");
    expect(calls.map((c) => c[3])).toEqual(attempts.map(([action]) => action));
    expect(calls[2]).toEqual(["p", REPO, "refs/heads/main", "read"]);
    expect(calls[1]).toEqual(["p", { kind: plainKind.kind, id: "*" }, null, "list"]);
    expect(looseObjects(fs)).toHaveLength(2);
  });
});

describe("close", () => {
  it("makes later calls fail with store_stopped", async () => {
    const { store } = await initialised();
    await store.close();
    expect(await codeOf(store.resolveRef(null, REPO, "main"))).toBe("store_stopped");
    expect(await codeOf(store.writeTree(null, REPO, "main", { files: { a: "1" }, message: "m" }))).toBe("store_stopped");
    expect(() => store.subscribe(null, REPO, "main")).toThrow(expect.objectContaining({ code: "store_stopped" }));
  });
});

describe("tree cache", () => {
  it("parses each tree once and serves repeated reads from memory", async () => {
    const { store, fs } = await initialised();
    const files: Record<string, string> = {};
    for (let i = 0; i < 300; i++) files[`runs/r${i}/events/1.json`] = String(i);
    await store.writeTree(null, REPO, "main", { files, message: "seed" });
    const fresh: RepoStore = createRepoStore({ dataDir: DATA_DIR, fs, kindHandlers: [plainKind], authorize: allowAll, watch: false });
    // Small files are read synchronously (refs, a commit's pack), bigger ones through promises;
    // a file from the data dir whose kind is not trusted (a ref) is opened and read from its descriptor.
    const spies = [vi.spyOn(fs.promises, "readFile"), vi.spyOn(fs, "readFileSync"), vi.spyOn(fs.promises, "open"), vi.spyOn(fs, "openSync")];
    const fileReads = (): number => spies.reduce((sum, spy) => sum + spy.mock.calls.length, 0);
    const reads = await fresh.openCommittedReads(null, REPO, "main");
    expect(await reads.listDir("runs")).toHaveLength(300);
    const firstPass = fileReads();
    expect(firstPass).toBeGreaterThan(0);
    const again = await fresh.openCommittedReads(null, REPO, "main");
    expect(await again.listDir("runs")).toHaveLength(300);
    expect(await again.listDir("runs/r5/events")).toHaveLength(1);
    // Second pass: the ref file and at most r5's two small trees (none when the seed commit
    // went into a pack, which is read once); no root or runs/ tree re-read.
    expect(fileReads() - firstPass).toBeGreaterThanOrEqual(1);
    expect(fileReads() - firstPass).toBeLessThanOrEqual(3);
    for (const spy of spies) spy.mockRestore();
  });
});

describe("eventsPrefix helper", () => {
  it("is the run's events folder", () => {
    expect(eventsPrefix("r1")).toBe("runs/r1/events/");
  });
});
