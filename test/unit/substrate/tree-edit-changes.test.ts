/**
 * A write hands its own edit's changes to the subscribers of its commit instead of their
 * diffing the two trees (write-engine.ts `ownCommitChanges`). That is only right when the
 * changes are exactly the diff: checked here against `diffTrees` on many edits, and for the
 * edits that make the two differ (dropped names git refuses), that the edit says so.
 */
import { describe, expect, it } from "vitest";
import { createFsFromVolume, Volume } from "memfs";
import { diffTrees } from "../../../src/substrate/tree-diff.js";
import { applyTreeEdits, DEFERRED_CHANGES } from "../../../src/substrate/tree-edit.js";
import { decodeTree, makeTree, type ParsedTree, type TreeEntry } from "../../../src/substrate/tree-object.js";
import { hashObject } from "../../../src/substrate/git-object.js";
import { allowAll, createRepoStore } from "../../../src/substrate/index.js";
import type { Oid } from "../../../src/substrate/types.js";
import { ownAndDiffedChanges } from "../../helpers/own-and-diffed.js";
import { seededRandom } from "../../helpers/seeded-random.js";

function blobOid(text: string): Oid {
  return hashObject("blob", Buffer.from(text)).oid;
}

/** Trees by oid, built from nested objects (a string is a blob's text; `{mode, text}` sets a mode). */
function store(): { trees: Map<Oid, ParsedTree>; build: (spec: Spec) => Oid; read: (oid: Oid) => Promise<ParsedTree> } {
  const trees = new Map<Oid, ParsedTree>();
  const build = (spec: Spec): Oid => {
    const entries: TreeEntry[] = Object.entries(spec).map(([name, value]) => {
      if (typeof value === "string") return { name, mode: "100644", oid: blobOid(value), type: "blob" };
      if ("text" in value && typeof value.text === "string") return { name, mode: value.mode as string, oid: blobOid(value.text), type: "blob" };
      return { name, mode: "40000", oid: build(value as Spec), type: "tree" };
    });
    // Parsed back from its bytes, as a read from disk is (that is where refused names are found).
    const { tree: made } = makeTree(entries);
    const tree = decodeTree(made.oid, made.content);
    trees.set(tree.oid, tree);
    return tree.oid;
  };
  const read = async (oid: Oid): Promise<ParsedTree> => {
    const tree = trees.get(oid);
    if (tree === undefined) throw new Error(`no tree ${oid}`);
    return tree;
  };
  return { trees, build, read };
}
type Spec = { [name: string]: string | { mode: string; text: string } | Spec };

describe("a tree edit's changes", () => {
  it("are exactly the diff of the two trees, for random puts, deletes and clears", async () => {
    for (let seed = 1; seed <= 60; seed++) {
      const r = seededRandom(seed);
      const s = store();
      const base: Spec = {};
      for (let i = 0; i < 6; i++) {
        const run: Spec = { events: {} };
        for (let k = 1; k <= 1 + Math.floor(r() * 4); k++) (run["events"] as Spec)[`${k}.json`] = `e${seed}-${i}-${k}`;
        if (r() < 0.3) run["grants.json"] = r() < 0.5 ? "g" : { mode: "100755", text: "x" };
        base[`run-${i}`] = run;
      }
      base["top.txt"] = "t";
      const baseOid = s.build({ runs: base, "top.txt": "t" });
      const puts: { path: string[]; oid: Oid }[] = [];
      const deletes: string[][] = [];
      for (let n = 0; n < 5; n++) {
        const run = `run-${Math.floor(r() * 8)}`;
        const roll = r();
        if (roll < 0.5) puts.push({ path: ["runs", run, "events", `${1 + Math.floor(r() * 6)}.json`], oid: blobOid(`new${seed}-${n}`) });
        else if (roll < 0.65) puts.push({ path: ["runs", run, "grants.json"], oid: blobOid(`grant${n}`) });
        else if (roll < 0.8) deletes.push(["runs", run, "events", `${1 + Math.floor(r() * 4)}.json`]);
        else if (roll < 0.9) deletes.push(["runs", run]);
        else puts.push({ path: ["runs", run], oid: blobOid("a file where a folder was") });
      }
      const clear = r() < 0.2 ? ["runs", `run-${Math.floor(r() * 6)}`] : undefined;
      // A path both put and deleted, or put as a file and as a folder, is refused: skip those seeds.
      let edit;
      try {
        edit = await applyTreeEdits(s.read, baseOid, { ...(clear === undefined ? {} : { clear }), deletes, puts });
      } catch {
        continue;
      }
      for (const tree of edit.pending.values()) s.trees.set(tree.oid, tree);
      expect(edit.exact, `seed ${seed}`).toBe(true);
      expect(edit.changes, `seed ${seed}`).toEqual(await diffTrees(s.read, baseOid, edit.rootOid));
    }
  });

  it("name a kept executable mode on a modified file, as the diff does", async () => {
    const s = store();
    const baseOid = s.build({ runs: { r: { "grants.json": { mode: "100755", text: "old" } } } });
    const edit = await applyTreeEdits(s.read, baseOid, { puts: [{ path: ["runs", "r", "grants.json"], oid: blobOid("new") }] });
    for (const tree of edit.pending.values()) s.trees.set(tree.oid, tree);
    expect(edit.changes).toEqual([{ path: "runs/r/grants.json", oid: blobOid("new"), status: "modified", mode: "100755" }]);
    expect(edit.changes).toEqual(await diffTrees(s.read, baseOid, edit.rootOid));
  });

  it("are marked inexact when the edit drops a name git refuses (no change records it)", async () => {
    const s = store();
    const baseOid = s.build({ runs: { r: { "..": "pushed by hand", events: { "1.json": "e" } } } });
    const edit = await applyTreeEdits(s.read, baseOid, { puts: [{ path: ["runs", "r", "events", "2.json"], oid: blobOid("f") }] });
    expect(edit.exact).toBe(false);
  });
});

describe("a subscriber of this process's own commits", () => {
  it("sees the same changes as a subscriber in another process, which diffs", async () => {
    const { own, seen } = await ownAndDiffedChanges(async (writer, rid) => {
      await writer.writeTreeDelta(null, rid, "main", { message: "one", computeDelta: () => ({ puts: new Map([["a/1.json", "x"], ["a/2.json", "y"], ["b/1.json", "z"]]) }) });
      await writer.writeTreeDelta(null, rid, "main", { message: "two", computeDelta: () => ({ puts: new Map([["a/3.json", "w"], ["b/1.json", "z2"]]), deletes: ["a/1.json"] }) });
      await writer.writeTreeDelta(null, rid, "main", { message: "three", computeDelta: () => ({ deletes: ["b"] }) });
    }, 3);
    expect(own.length).toBe(3);
    expect(own).toEqual(seen);
  });
});

describe("trees an edit knows to be new", () => {
  it("lists the folders spliced from their old version, not those built from nothing", async () => {
    const { build, read } = store();
    const base = build({ runs: { a: { events: { "1.json": "a1" } }, b: { events: { "1.json": "b1" } } } });
    const edit = await applyTreeEdits(read, base, {
      puts: [
        { path: ["runs", "a", "events", "2.json"], oid: blobOid("a2") },
        // A folder copied whole to a new place: built from nothing, with the oid it already has.
        { path: ["archive", "b", "events", "1.json"], oid: blobOid("b1") },
      ],
    });
    const byPath = edit.folders;
    for (const path of ["runs", "runs/a", "runs/a/events"]) expect(edit.spliced.has(byPath.get(path) as Oid)).toBe(true);
    for (const path of ["archive", "archive/b", "archive/b/events"]) expect(edit.spliced.has(byPath.get(path) as Oid)).toBe(false);
    expect(edit.spliced.has(edit.rootOid)).toBe(true);
    expect(edit.spliced.size).toBe(4);
  });

  it("a commit still does not store again a folder its packs hold (copied whole elsewhere)", async () => {
    const vol = new Volume();
    const fs = createFsFromVolume(vol);
    const repo = { kind: "plain", id: "r" };
    const s = createRepoStore({ dataDir: "/d", fs, kindHandlers: [{ kind: "plain", directoryPrefix: "p" }], authorize: allowAll, watch: false, packThreshold: 3 });
    await s.initRepo(null, repo);
    await s.writeTree(null, repo, "main", { files: { "runs/b/events/1.json": "b1", "runs/b/events/2.json": "b2", "runs/c/events/1.json": "c1" }, message: "one" });
    const packDir = "/d/p/r.git/objects/pack";
    const before = new Set(fs.readdirSync(packDir) as string[]);
    await s.writeTree(null, repo, "main", { files: { "archive/b/events/1.json": "b1", "archive/b/events/2.json": "b2", "runs/c/events/2.json": "c2" }, message: "two" });
    const added = (fs.readdirSync(packDir) as string[]).filter((n) => !before.has(n) && n.endsWith(".pack"));
    expect(added.length).toBe(1);
    const pack = fs.readFileSync(`${packDir}/${added[0]}`) as Buffer;
    // The new pack: c2's blob, runs/c/events, runs/c, runs, archive, root, commit. Not archive/b and archive/b/events (runs/b's), nor b1 and b2.
    expect(pack.readUInt32BE(8)).toBe(7);
    await s.close();
  });
});

describe("folders the caller built, among other edits", () => {
  it("are put as built, in any mix with plain puts and deletes, and refused over a file or a gitlink", async () => {
    const s = store();
    const base: Spec = {};
    for (let i = 0; i < 8; i++) base[`run-${i}`] = { events: { "1.json": `e${i}` } };
    base["run-3"] = { events: { "1.json": "e3" }, "note.txt": "n" };
    const baseOid = s.build({ runs: base });
    // The caller's rebuilt folders of runs 1, 2, 5 and 6 (one unchanged), around plain edits of runs 3 and 4.
    const built = (i: number, text: string): Oid => s.build({ events: { "1.json": `e${i}`, "2.json": text } });
    const b1 = built(1, "f1");
    const b2 = built(2, "f2");
    const b6 = built(6, "f6");
    const unchanged = s.build({ events: { "1.json": "e5" } });
    const deferred = [{ path: "runs/run-6/events/2.json", oid: blobOid("f6"), status: "added" as const }];
    const result = await applyTreeEdits(s.read, baseOid, {
      puts: [
        { path: ["runs", "run-1"], oid: b1, within: [{ path: "runs/run-1/events/2.json", oid: blobOid("f1"), status: "added" }] },
        { path: ["runs", "run-2"], oid: b2, within: [{ path: "runs/run-2/events/2.json", oid: blobOid("f2"), status: "added" }] },
        { path: ["runs", "run-3", "note.txt"], oid: blobOid("m") },
        { path: ["runs", "run-5"], oid: unchanged, within: [] },
        { path: ["runs", "run-6"], oid: b6, within: DEFERRED_CHANGES },
      ],
      deletes: [["runs", "run-4"]],
      deferredChanges: () => deferred,
    });
    const after: Spec = {
      ...base,
      "run-1": { events: { "1.json": "e1", "2.json": "f1" } },
      "run-2": { events: { "1.json": "e2", "2.json": "f2" } },
      "run-3": { events: { "1.json": "e3" }, "note.txt": "m" },
      "run-6": { events: { "1.json": "e6", "2.json": "f6" } },
    };
    delete after["run-4"];
    const expected = s.build({ runs: after });
    expect(result.rootOid).toBe(expected);
    expect(result.folders.get("runs/run-1")).toBe(b1);
    expect(result.folders.get("runs/run-5")).toBe(unchanged);
    expect(result.changes.map((c) => `${c.status} ${c.path}`)).toEqual([
      "added runs/run-1/events/2.json",
      "added runs/run-2/events/2.json",
      "modified runs/run-3/note.txt",
      "deleted runs/run-4/events/1.json",
      "added runs/run-6/events/2.json",
    ]);
    // A built folder where the base has a file, or nothing, is refused; so is one over a gitlink.
    const withFile = s.build({ runs: { "run-0": { events: { "1.json": "e0" } }, "run-1": "a file" } });
    const over = (name: string) => ({ puts: [{ path: ["runs", "run-0"], oid: b1, within: [] }, { path: ["runs", name], oid: b1, within: [] }] });
    await expect(applyTreeEdits(s.read, withFile, over("run-1"))).rejects.toMatchObject({ code: "object_corrupt" });
    await expect(applyTreeEdits(s.read, withFile, over("run-9"))).rejects.toMatchObject({ code: "object_corrupt" });
    const link: TreeEntry = { name: "run-1", mode: "160000", oid: blobOid("sub"), type: "commit" };
    const { tree: runsWithLink } = makeTree([{ name: "run-0", mode: "40000", oid: s.build({ events: { "1.json": "e0" } }), type: "tree" }, link]);
    s.trees.set(runsWithLink.oid, decodeTree(runsWithLink.oid, runsWithLink.content));
    const { tree: root } = makeTree([{ name: "runs", mode: "40000", oid: runsWithLink.oid, type: "tree" }]);
    s.trees.set(root.oid, decodeTree(root.oid, root.content));
    await expect(applyTreeEdits(s.read, root.oid, over("run-1"))).rejects.toMatchObject({ code: "path_violation" });
  });
});

describe("folders the caller built, at random among plain edits", () => {
  it("give the tree built from the same edits made by hand, and changes that are exactly the diff", async () => {
    // Names that sort around each other ("run-1" < "run-1-" < "run-1.x" < "run-10"), so runs of
    // built folders are broken by plain edits at every place in the folder.
    const names = ["run-1", "run-1-", "run-1.x", "run-10", "run-2", "run-20", "run-3"];
    for (let seed = 1; seed <= 80; seed++) {
      const r = seededRandom(seed);
      const s = store();
      const base: Spec = {};
      for (const name of names) {
        if (r() < 0.2) continue;
        const events: Spec = {};
        for (let k = 1; k <= 1 + Math.floor(r() * 3); k++) events[`${k}.json`] = `e${seed}-${name}-${k}`;
        base[name] = { events };
      }
      const baseOid = s.build({ runs: base });
      const after: Spec = structuredClone(base);
      const puts: { path: string[]; oid: Oid; within?: readonly { path: string; oid: Oid; status: "added" }[] }[] = [];
      const deletes: string[][] = [];
      for (const name of names) {
        const run = base[name] as Spec | undefined;
        const roll = r();
        if (run !== undefined && roll < 0.5) {
          // Built by the caller: one event added, or the folder as it was.
          const events = { ...(run["events"] as Spec) };
          const within: { path: string; oid: Oid; status: "added" }[] = [];
          if (r() < 0.8) {
            const file = `${Object.keys(events).length + 1}.json`;
            events[file] = `new${seed}-${name}`;
            within.push({ path: `runs/${name}/events/${file}`, oid: blobOid(`new${seed}-${name}`), status: "added" });
          }
          puts.push({ path: ["runs", name], oid: s.build({ events }), within });
          after[name] = { events };
        } else if (roll < 0.7) {
          puts.push({ path: ["runs", name, "events", "9.json"], oid: blobOid(`put${seed}-${name}`) });
          after[name] = { events: { ...((after[name] as Spec | undefined)?.["events"] as Spec | undefined), "9.json": `put${seed}-${name}` } };
        } else if (run !== undefined && roll < 0.8) {
          deletes.push(["runs", name]);
          delete after[name];
        } else if (roll < 0.85) {
          // A file where the run's folder was.
          puts.push({ path: ["runs", name], oid: blobOid(`file${seed}`) });
          after[name] = `file${seed}`;
        }
      }
      // The puts in any order: the edit sorts them.
      puts.sort(() => r() - 0.5);
      const edit = await applyTreeEdits(s.read, baseOid, { puts, deletes });
      for (const tree of edit.pending.values()) s.trees.set(tree.oid, tree);
      expect(edit.rootOid, `seed ${seed}`).toBe(s.build({ runs: after }));
      expect(edit.changes, `seed ${seed}`).toEqual(await diffTrees(s.read, baseOid, edit.rootOid));
      for (const put of puts) if (put.within !== undefined) expect(edit.folders.get(put.path.join("/")), `seed ${seed}`).toBe(put.oid);
    }
  });
});
