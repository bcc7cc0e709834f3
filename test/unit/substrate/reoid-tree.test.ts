/**
 * A fire commit's `runs/` edit (every change a new oid for an existing run folder) is handed to
 * the splice as indices and entries (tree-splice.ts `reOidTree`, tree-edit.ts `takeReOids`): the
 * same bytes, oid, entries and chunks as the general splice from a map of the changes, and it
 * declines anything else. At the tree edit's level: the same trees with the position hints, with
 * stale hints, out of run order and mixed with other edits of the folder.
 */
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { applyTreeEdits, DEFERRED_CHANGES } from "../../../src/substrate/tree-edit.js";
import { editTree, reOidTree } from "../../../src/substrate/tree-splice.js";
import { BLOB_MODE, entryAt, makeTree, type ParsedTree, TREE_MODE, type TreeEntry } from "../../../src/substrate/tree-object.js";
import type { GitObject } from "../../../src/substrate/git-object.js";
import type { Oid } from "../../../src/substrate/types.js";
import { seededRandom } from "../../helpers/seeded-random.js";

const RUNS = 3_000;
const oidOf = (i: number, salt: number): string => createHash("sha1").update(`${salt}:${i}`).digest("hex");
const nameOf = (i: number): string => `run-${String(i).padStart(6, "0")}`;

function runsTree(count = RUNS): ParsedTree {
  return makeTree(Array.from({ length: count }, (_, i) => ({ name: nameOf(i), mode: TREE_MODE, oid: oidOf(i, 0), type: "tree" as const }))).tree;
}

/** What is compared of a version, copied at once (a big folder's bytes are reused by a later edit). */
function snapshot(version: { tree: ParsedTree; object: GitObject }): { oid: string; content: string; entries: string[]; chunks: number[] } {
  const { tree } = version;
  const entries: string[] = [];
  for (let i = 0; i < tree.count; i++) {
    const e = entryAt(tree, i) as TreeEntry;
    entries.push(`${e.mode} ${e.type} ${e.name} ${e.oid}`);
  }
  return { oid: version.object.oid, content: Buffer.from(version.object.content).toString("hex"), entries, chunks: tree.chunks.map((c) => c.length) };
}

function picks(random: () => number, count: number, of: number): number[] {
  const set = new Set<number>();
  while (set.size < count) set.add(Math.floor(random() * of));
  return [...set].sort((a, b) => a - b);
}

/** `base` with `entries` in place of the ones at `ats`, made from its entries (no splice): oid, bytes, entries; the chunks as the base's. */
function expected(base: ParsedTree, ats: readonly number[], entries: readonly TreeEntry[]): ReturnType<typeof snapshot> {
  const all = [...base.entries];
  ats.forEach((at, k) => (all[at] = entries[k] as TreeEntry));
  return { ...snapshot(makeTree(all)), chunks: base.chunks.map((c) => c.length) };
}

describe("reOidTree", () => {
  it("makes what writing the entries out makes, the chunks kept, as the splice from a map does", () => {
    const random = seededRandom(17);
    for (const count of [1, 2, 7, 130, 600, RUNS]) {
      const base = runsTree();
      const ats = picks(random, count, RUNS);
      const entries = ats.map((at, k) => ({ ...(entryAt(base, at) as TreeEntry), oid: oidOf(at, count + k) }));
      const want = expected(base, ats, entries);
      expect(snapshot(editTree(base, new Map([...entries].reverse().map((e) => [e.name, e]))))).toEqual(want);
      const fast = reOidTree(base, ats, entries);
      expect(fast).toBeDefined();
      expect(snapshot(fast as NonNullable<typeof fast>)).toEqual(want);
      expect((fast as NonNullable<typeof fast>).tree.deltaBase?.oid).toBe(base.oid);
    }
    // A small folder (no delta, no owned bytes).
    const small = runsTree(40);
    const entries = [3, 9, 39].map((at) => ({ ...(entryAt(small, at) as TreeEntry), oid: oidOf(at, 5) }));
    expect(snapshot(reOidTree(small, [3, 9, 39], entries) as NonNullable<ReturnType<typeof reOidTree>>)).toEqual(expected(small, [3, 9, 39], entries));
  });

  it("declines indices out of order and entries that are not the one there with a new oid", () => {
    const base = runsTree();
    const at = (i: number, salt = 9): TreeEntry => ({ ...(entryAt(base, i) as TreeEntry), oid: oidOf(i, salt) });
    expect(reOidTree(base, [5, 4], [at(5), at(4)])).toBeUndefined();
    expect(reOidTree(base, [5, 5], [at(5), at(5, 8)])).toBeUndefined();
    expect(reOidTree(base, [4, 5], [at(4), { ...at(5), name: nameOf(6) }])).toBeUndefined();
    expect(reOidTree(base, [4], [{ ...at(4), mode: "040000" }])).toBeUndefined();
    expect(reOidTree(base, [4], [{ ...at(4), mode: BLOB_MODE, type: "blob" }])).toBeUndefined();
    expect(reOidTree(base, [RUNS], [{ name: nameOf(RUNS), mode: TREE_MODE, oid: oidOf(RUNS, 1), type: "tree" }])).toBeUndefined();
    expect(reOidTree(base, [4, 5], [at(4)])).toBeUndefined();
    expect(reOidTree(base, [4.5], [at(4)])).toBeUndefined();
    expect(reOidTree(base, [-1], [at(0)])).toBeUndefined();
  });
});

describe("a fire commit's runs/ edit", () => {
  const base = runsTree();
  const runsOid = base.oid;
  const root = makeTree([{ name: "runs", mode: TREE_MODE, oid: runsOid, type: "tree" }]).tree;
  const trees = new Map<Oid, ParsedTree>([[runsOid, base], [root.oid, root]]);
  const read = async (oid: Oid): Promise<ParsedTree> => {
    const tree = trees.get(oid);
    if (tree === undefined) throw new Error(`no tree ${oid}`);
    return tree;
  };
  type Put = { path: string[]; oid: Oid; within?: typeof DEFERRED_CHANGES; at?: { tree: Oid; index: number } };
  const built = (i: number, salt: number, hint: "right" | "none" | "stale" = "right"): Put => ({
    path: ["runs", nameOf(i)],
    oid: oidOf(i, salt),
    within: DEFERRED_CHANGES,
    ...(hint === "none" ? {} : { at: { tree: runsOid, index: hint === "right" ? i : i + 1 } }),
  });
  const edit = async (puts: Put[]): Promise<{ rootOid: Oid; trees: string[] }> => {
    const result = await applyTreeEdits(read, root.oid, { puts, deferredChanges: () => [] });
    return { rootOid: result.rootOid, trees: result.newTrees.map((t) => `${t.oid} ${Buffer.from(t.content).toString("hex")}`) };
  };

  it("is the same with right, stale and no position hints, out of run order, and mixed with other edits", async () => {
    const random = seededRandom(5);
    const ats = picks(random, 900, RUNS);
    const plain = await edit(ats.map((i) => built(i, 1, "none")));
    expect(await edit(ats.map((i) => built(i, 1)))).toEqual(plain);
    expect(await edit(ats.map((i, k) => built(i, 1, k % 3 === 0 ? "stale" : "right")))).toEqual(plain);
    expect(await edit([...ats].reverse().map((i) => built(i, 1)))).toEqual(plain);
    // A file put beside the built folders and a new run folder: the general splice.
    const extra: Put[] = [{ path: ["runs", "a-file"], oid: oidOf(1, 77) }, { path: ["runs", "run-zz", "x"], oid: oidOf(2, 77) }];
    expect(await edit([...ats.map((i) => built(i, 1)), ...extra])).toEqual(await edit([...ats.map((i) => built(i, 1, "none")), ...extra]));
    // Nothing changed: the same root.
    expect((await edit(ats.map((i) => built(i, 0)))).rootOid).toBe(root.oid);
  });
});
