/**
 * `diffTrees` over commits that add or remove many folders (a retention commit removes
 * thousands of run folders): it awaits the caller's pause between folders, so the event loop
 * is never held for the whole diff, and the result is the same with or without one.
 */
import { describe, expect, it } from "vitest";
import { diffTrees, type ReadTree } from "../../../src/substrate/tree-diff.js";
import { makeTree, type ParsedTree, type TreeEntry } from "../../../src/substrate/tree-object.js";

const blob = (name: string, n: number): TreeEntry => ({ name, mode: "100644", oid: n.toString(16).padStart(40, "0"), type: "blob" });
const folder = (name: string, tree: ParsedTree): TreeEntry => ({ name, mode: "40000", oid: tree.oid, type: "tree" });

/** A `runs/` tree of `count` run folders, each `runs/<id>/events/{1,2}.json`, and its reader. */
function runsTree(count: number, trees: Map<string, ParsedTree>): ParsedTree {
  const keep = (tree: ParsedTree): ParsedTree => {
    trees.set(tree.oid, tree);
    return tree;
  };
  const runs: TreeEntry[] = [];
  for (let i = 0; i < count; i++) {
    const events = keep(makeTree([blob("1.json", 2 * i + 1), blob("2.json", 2 * i + 2)]).tree);
    runs.push(folder(`run-${String(i).padStart(5, "0")}`, keep(makeTree([folder("events", events)]).tree)));
  }
  return keep(makeTree([folder("runs", keep(makeTree(runs).tree))]).tree);
}

describe("diffTrees", () => {
  it("awaits the pause before each changed folder it reads, and gives the same changes", async () => {
    const trees = new Map<string, ParsedTree>();
    const before = runsTree(300, trees);
    const after = runsTree(0, trees);
    const read: ReadTree = (oid) => {
      const tree = trees.get(oid);
      if (tree === undefined) throw new Error(`no tree ${oid}`);
      return Promise.resolve(tree);
    };
    let pauses = 0;
    const sliced = await diffTrees(read, before.oid, after.oid, "", () => {
      pauses += 1;
      return Promise.resolve();
    });
    const plain = await diffTrees(read, before.oid, after.oid);
    expect(sliced).toEqual(plain);
    expect(sliced).toHaveLength(600);
    expect(sliced.every((c) => c.status === "deleted")).toBe(true);
    // The root, runs/, and each removed run folder and its events/ folder.
    expect(pauses).toBeGreaterThanOrEqual(2 * 300);
  });

  it("compares equal entries of trees decoded apart as unchanged, and finds the one that changed", async () => {
    const trees = new Map<string, ParsedTree>();
    const a = runsTree(200, trees);
    const entries = [...(trees.get((a.entries[0] as TreeEntry).oid) as ParsedTree).entries].map((e) => ({ ...e }));
    const events = makeTree([blob("1.json", 1), blob("2.json", 2), blob("3.json", 999)]).tree;
    trees.set(events.oid, events);
    const run0 = makeTree([folder("events", events)]).tree;
    trees.set(run0.oid, run0);
    entries[0] = folder((entries[0] as TreeEntry).name, run0);
    const runs = makeTree(entries).tree;
    trees.set(runs.oid, runs);
    const b = makeTree([folder("runs", runs)]).tree;
    trees.set(b.oid, b);
    const read: ReadTree = (oid) => Promise.resolve(trees.get(oid) as ParsedTree);
    expect(await diffTrees(read, a.oid, b.oid)).toEqual([{ path: "runs/run-00000/events/3.json", oid: blob("", 999).oid, status: "added" }]);
  });
});
