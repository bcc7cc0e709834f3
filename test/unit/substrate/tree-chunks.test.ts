/**
 * Property tests of chunked trees: random folders edited step by step with `editTree`, each
 * version checked against a folder built from scratch (an independent encoder and `makeTree`),
 * the chunk layout against a model of which chunks an edit touches, the splice delta against
 * `applyDelta`, and `diffTrees` between the versions against a diff of the flattened models.
 */
import { createHash } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { adler32, adler32Of } from "../../../src/substrate/adler32.js";
import { applyDelta } from "../../../src/substrate/pack-file.js";
import { diffTrees } from "../../../src/substrate/tree-diff.js";
import {
  DELTA_BASE_MIN_BYTES,
  ENTRY_CHUNK,
  decodeTree,
  dirEntriesOf,
  entryAt,
  findEntry,
  forEachEntry,
  indexOfEntry,
  makeTree,
  type ParsedTree,
  type TreeEntry,
} from "../../../src/substrate/tree-object.js";
import { editTree } from "../../../src/substrate/tree-splice.js";
import type { PathChange } from "../../../src/substrate/types.js";

// ---------------------------------------------------------------------------------------------
// An independent model of a git tree: order, bytes, oid.

/** Git's order key: the name's UTF-8 bytes, a folder's followed by "/". */
function orderKey(entry: Pick<TreeEntry, "name" | "type">): Buffer {
  return Buffer.from(entry.type === "tree" ? `${entry.name}/` : entry.name, "utf8");
}

function byGitOrder(a: TreeEntry, b: TreeEntry): number {
  return Buffer.compare(orderKey(a), orderKey(b));
}

function encodeModel(sorted: readonly TreeEntry[]): Buffer {
  return Buffer.concat(sorted.map((e) => Buffer.concat([Buffer.from(`${e.mode} ${e.name}\0`, "utf8"), Buffer.from(e.oid, "hex")])));
}

function oidOfTree(content: Uint8Array): string {
  return createHash("sha1").update(`tree ${content.byteLength}\0`).update(content).digest("hex");
}

type Model = Map<string, TreeEntry>;

function sortedModel(model: Model): TreeEntry[] {
  return [...model.values()].sort(byGitOrder);
}

// ---------------------------------------------------------------------------------------------
// Random folders and edits.

/** A small deterministic generator, so big folders cost one seed instead of 1 500 arbitraries. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function hex40(next: () => number): string {
  let out = "";
  for (let i = 0; i < 5; i++) out += Math.floor(next() * 0x100000000).toString(16).padStart(8, "0");
  return out;
}

/**
 * Suffixes chosen to sort on both sides of "/" ("." and "-" before it, "0" and "_" after), and
 * non-ASCII ones whose UTF-16 order differs from git's byte order (U+FF5E sorts above a
 * surrogate pair in UTF-16, below U+1F600 in UTF-8).
 */
const SUFFIXES = ["", "", "", ".log", "-a", "0", "_x", "\u00e9", "\uff5e", "\u{1f600}"] as const;

/** Sub-folders a tree entry points at, readable by `diffTrees`. */
const SUBTREES: readonly ParsedTree[] = [
  makeTree([]).tree,
  makeTree([{ name: "x", mode: "100644", oid: "1".repeat(40), type: "blob" }]).tree,
  makeTree([
    { name: "x", mode: "100644", oid: "2".repeat(40), type: "blob" },
    { name: "y", mode: "100644", oid: "3".repeat(40), type: "blob" },
  ]).tree,
  makeTree([
    { name: "x", mode: "100644", oid: "1".repeat(40), type: "blob" },
    { name: "z", mode: "100644", oid: "4".repeat(40), type: "blob" },
  ]).tree,
];

function makeEntry(name: string, folder: boolean, next: () => number): TreeEntry {
  if (folder) return { name, mode: "40000", oid: (SUBTREES[Math.floor(next() * SUBTREES.length)] as ParsedTree).oid, type: "tree" };
  return { name, mode: "100644", oid: hex40(next), type: "blob" };
}

function randomName(next: () => number): string {
  return `run-${Math.floor(next() * 4000)}${SUFFIXES[Math.floor(next() * SUFFIXES.length)] as string}`;
}

function initialModel(size: number, seed: number): Model {
  const next = prng(seed);
  const model: Model = new Map();
  while (model.size < size) {
    const name = randomName(next);
    if (!model.has(name)) model.set(name, makeEntry(name, next() < 0.25, next));
  }
  return model;
}

/** Where an edit lands among the current names: an end, or a fraction of the way. */
type Where = "first" | "last" | number;
type Op =
  | { readonly kind: "insert"; readonly folder: boolean }
  | { readonly kind: "replace"; readonly at: Where; readonly folder: boolean }
  | { readonly kind: "delete"; readonly at: Where }
  | { readonly kind: "deleteAbsent" };
type Step =
  | { readonly kind: "ops"; readonly ops: readonly Op[]; readonly reparse: boolean; readonly seed: number }
  | { readonly kind: "deleteAll" }
  | { readonly kind: "bulkInsert"; readonly count: number; readonly at: Where; readonly seed: number }
  /** Existing entries given new oids, name, type and mode kept (a fire commit's runs/: same-size entries). */
  | { readonly kind: "reoid"; readonly count: number; readonly reparse: boolean; readonly seed: number };

const where: fc.Arbitrary<Where> = fc.oneof(fc.constantFrom<Where>("first", "last"), fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }));
const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("insert" as const), folder: fc.boolean() }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("replace" as const), at: where, folder: fc.boolean() }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("delete" as const), at: where }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("deleteAbsent" as const) }) },
);
const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 8, arbitrary: fc.record({ kind: fc.constant("ops" as const), ops: fc.array(op, { minLength: 1, maxLength: 6 }), reparse: fc.boolean(), seed: fc.integer() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("deleteAll" as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("bulkInsert" as const), count: fc.integer({ min: 1, max: 400 }), at: where, seed: fc.integer() }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant("reoid" as const), count: fc.integer({ min: 1, max: 300 }), reparse: fc.boolean(), seed: fc.integer() }) },
);
const initialSize = fc.oneof(fc.integer({ min: 0, max: 3 }), fc.integer({ min: 0, max: 300 }), fc.integer({ min: 300, max: 1500 }));

function pick(sorted: readonly TreeEntry[], at: Where): TreeEntry | undefined {
  if (sorted.length === 0) return undefined;
  const i = at === "first" ? 0 : at === "last" ? sorted.length - 1 : Math.floor(at * sorted.length);
  return sorted[i];
}

/** The changes map of a step, resolved against the current folder. */
function changesOf(s: Step, model: Model): Map<string, TreeEntry | null> {
  const sorted = sortedModel(model);
  const changes = new Map<string, TreeEntry | null>();
  if (s.kind === "deleteAll") {
    for (const name of model.keys()) changes.set(name, null);
    return changes;
  }
  const next = prng(s.seed);
  if (s.kind === "reoid") {
    for (let i = 0; i < s.count && sorted.length > 0; i++) {
      const old = sorted[Math.floor(next() * sorted.length)] as TreeEntry;
      // A folder gets one of the sub-folders (maybe the one it has: an unchanged entry), a file a fresh oid.
      changes.set(old.name, { ...old, oid: old.type === "tree" ? (SUBTREES[Math.floor(next() * SUBTREES.length)] as ParsedTree).oid : hex40(next) });
    }
    return changes;
  }
  if (s.kind === "bulkInsert") {
    // Names that sort next to each other, so one chunk takes them all and must be split.
    const anchor = pick(sorted, s.at)?.name ?? "run-0";
    for (let i = 0; i < s.count; i++) {
      const name = `${anchor}.b${String(i).padStart(3, "0")}`;
      changes.set(name, makeEntry(name, next() < 0.2, next));
    }
    return changes;
  }
  for (const o of s.ops) {
    if (o.kind === "insert") {
      let name = randomName(next);
      while (model.has(name)) name = randomName(next);
      changes.set(name, makeEntry(name, o.folder, next));
    } else if (o.kind === "replace") {
      const old = pick(sorted, o.at);
      if (old !== undefined) changes.set(old.name, makeEntry(old.name, o.folder, next));
    } else if (o.kind === "delete") {
      const old = pick(sorted, o.at);
      if (old !== undefined) changes.set(old.name, null);
    } else {
      let name = randomName(next);
      while (model.has(name)) name = randomName(next);
      changes.set(name, null);
    }
  }
  return changes;
}

// ---------------------------------------------------------------------------------------------
// Checks.

function checkChunkInvariants(tree: ParsedTree): void {
  expect(tree.chunkStarts.length).toBe(tree.chunks.length + 1);
  let sum = 0;
  tree.chunks.forEach((chunk, c) => {
    expect(tree.chunkStarts[c]).toBe(sum);
    expect(chunk.length).toBeGreaterThan(0);
    expect(chunk.length).toBeLessThanOrEqual(2 * ENTRY_CHUNK);
    sum += chunk.length;
  });
  expect(tree.chunkStarts[tree.chunks.length]).toBe(sum);
  expect(tree.count).toBe(sum);
}

/** Every way of reading `tree` agrees with the model folder. */
function checkAgainstModel(tree: ParsedTree, model: Model, absent: readonly string[]): void {
  const sorted = sortedModel(model);
  const content = encodeModel(sorted);
  expect(tree.oid).toBe(oidOfTree(content));
  expect(Buffer.from(tree.content).equals(content)).toBe(true);
  expect(tree.offsets.length).toBe(sorted.length + 1);
  expect(tree.offsets[sorted.length]).toBe(content.length);
  expect(tree.count).toBe(sorted.length);
  expect(tree.entries).toEqual(sorted);
  checkChunkInvariants(tree);

  const built = makeTree([...model.values()]).tree;
  expect(built.oid).toBe(tree.oid);
  expect(Buffer.from(built.content).equals(content)).toBe(true);

  for (let i = 0; i < sorted.length; i++) {
    const got = entryAt(tree, i);
    const want = sorted[i] as TreeEntry;
    if (got?.name !== want.name || got.oid !== want.oid || got.type !== want.type || got.mode !== want.mode) {
      expect({ i, got }).toEqual({ i, got: want });
    }
  }
  expect(entryAt(tree, sorted.length)).toBeUndefined();
  expect(entryAt(tree, -1)).toBeUndefined();

  const visited: TreeEntry[] = [];
  forEachEntry(tree, (e) => visited.push(e));
  expect(visited).toEqual(sorted);

  sorted.forEach((want, i) => {
    const found = findEntry(tree, want.name);
    if (found?.oid !== want.oid || found.type !== want.type) expect(found).toEqual(want);
    const index = indexOfEntry(tree, want.name);
    if (index !== i) expect({ name: want.name, index }).toEqual({ name: want.name, index: i });
  });
  for (const name of absent) {
    if (model.has(name)) continue;
    expect(findEntry(tree, name)).toBeUndefined();
    expect(indexOfEntry(tree, name)).toBe(-1);
  }

  const decoded = decodeTree(tree.oid, tree.content);
  expect(decoded.sorted).toBe(true);
  expect(decoded.entries).toEqual(sorted);
  checkChunkInvariants(decoded);

  const dir = dirEntriesOf(tree);
  const wantDir = sorted
    .map((e) => ({ name: e.name, type: e.type, oid: e.oid }))
    .sort((a, b) => Buffer.compare(Buffer.from(a.name, "utf8"), Buffer.from(b.name, "utf8")));
  expect(dir).toEqual(wantDir);
}

/**
 * The chunks `editTree(base, changes)` must produce: a base chunk no change falls in is kept
 * as the same array; a touched one is rebuilt from its entries (an insert belongs to the chunk
 * holding the entry it goes before, or to the last chunk at the very end), split only when it
 * grew past twice ENTRY_CHUNK and dropped when emptied.
 */
function checkChunksAgainstBase(base: ParsedTree, baseModel: Model, changes: ReadonlyMap<string, TreeEntry | null>, tree: ParsedTree): void {
  const baseSorted = sortedModel(baseModel);
  const keys = baseSorted.map(orderKey);
  const chunkOfIndex = (p: number): number => {
    let c = 0;
    while (c + 1 < base.chunks.length && (base.chunkStarts[c + 1] as number) <= p) c++;
    return c;
  };
  const removed = new Set<string>();
  const inserts = new Map<number, TreeEntry[]>();
  for (const [name, entry] of changes) {
    if (baseModel.has(name)) removed.add(name);
    if (entry === null) continue;
    // Position among the base entries (the one it replaces included).
    const key = orderKey(entry);
    let lo = 0;
    let hi = keys.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (Buffer.compare(keys[mid] as Buffer, key) < 0) lo = mid + 1;
      else hi = mid;
    }
    const c = base.chunks.length === 0 ? -1 : chunkOfIndex(lo);
    const list = inserts.get(c) ?? [];
    list.push(entry);
    inserts.set(c, list);
  }
  const baseChunks = new Set(base.chunks);
  let k = 0;
  const takeRebuilt = (want: TreeEntry[]): void => {
    if (want.length === 0) return;
    const got: TreeEntry[] = [];
    let pieces = 0;
    while (got.length < want.length) {
      const chunk = tree.chunks[k++];
      expect(chunk).toBeDefined();
      if (chunk === undefined) return;
      expect(baseChunks.has(chunk)).toBe(false);
      got.push(...chunk);
      pieces++;
    }
    expect(got).toEqual(want);
    if (want.length <= 2 * ENTRY_CHUNK) expect(pieces).toBe(1);
  };
  if (base.chunks.length === 0) {
    takeRebuilt((inserts.get(-1) ?? []).sort(byGitOrder));
  }
  base.chunks.forEach((chunk, c) => {
    const touched = inserts.has(c) || chunk.some((e) => removed.has(e.name));
    if (!touched) {
      expect(tree.chunks[k++]).toBe(chunk);
      return;
    }
    const want = [...chunk.filter((e) => !removed.has(e.name)), ...(inserts.get(c) ?? [])].sort(byGitOrder);
    takeRebuilt(want);
  });
  expect(k).toBe(tree.chunks.length);
}

function expectedDiff(from: Model, to: Model): PathChange[] {
  const flatten = (model: Model): Map<string, string> => {
    const out = new Map<string, string>();
    for (const e of model.values()) {
      if (e.type === "blob") {
        out.set(e.name, e.oid);
        continue;
      }
      const sub = SUBTREES.find((t) => t.oid === e.oid) as ParsedTree;
      for (const inner of sub.entries) out.set(`${e.name}/${inner.name}`, inner.oid);
    }
    return out;
  };
  const a = flatten(from);
  const b = flatten(to);
  const out: PathChange[] = [];
  for (const [path, oid] of a) {
    const now = b.get(path);
    if (now === undefined) out.push({ path, oid, status: "deleted" });
    else if (now !== oid) out.push({ path, oid: now, status: "modified" });
  }
  for (const [path, oid] of b) if (!a.has(path)) out.push({ path, oid, status: "added" });
  // Sorted by path in git's byte order (UTF-8), not JavaScript's UTF-16 order.
  return out.sort((x, y) => Buffer.compare(Buffer.from(x.path, "utf8"), Buffer.from(y.path, "utf8")));
}

// ---------------------------------------------------------------------------------------------

describe("editTree on chunked trees", () => {
  // A property run of many random trees: on a shared 2-core machine under load it needs more than
  // the default 30 s (it asserts results, never durations).
  it("agrees with a tree built from scratch after every step of random edits", { timeout: 180_000 }, async () => {
    await fc.assert(
      fc.asyncProperty(initialSize, fc.integer(), fc.array(step, { minLength: 1, maxLength: 5 }), fc.array(fc.integer(), { maxLength: 4 }), async (size, seed, steps, absentSeeds) => {
        const model = initialModel(size, seed);
        const absent = absentSeeds.map((s) => randomName(prng(s)));
        let tree = makeTree([...model.values()]).tree;
        checkAgainstModel(tree, model, absent);
        const trees = new Map<string, ParsedTree>(SUBTREES.map((t) => [t.oid, t]));
        trees.set(tree.oid, tree);
        const read = async (oid: string): Promise<ParsedTree> => {
          const t = trees.get(oid);
          if (t === undefined) throw new Error(`no tree ${oid}`);
          return t;
        };

        for (const s of steps) {
          const base = (s.kind === "ops" || s.kind === "reoid") && s.reparse ? decodeTree(tree.oid, tree.content) : tree;
          const baseModel = new Map(model);
          const changes = changesOf(s, model);
          const { tree: next, object } = editTree(base, changes);
          for (const [name, entry] of changes) {
            if (entry === null) model.delete(name);
            else model.set(name, entry);
          }

          expect(object.oid).toBe(next.oid);
          if (next.content.byteLength >= DELTA_BASE_MIN_BYTES) expect(adler32Of(next.content)).toBe(adler32(next.content));
          expect(object.type).toBe("tree");
          expect(Buffer.from(object.content).equals(Buffer.from(next.content))).toBe(true);
          checkAgainstModel(next, model, [...absent, ...changes.keys()]);
          checkChunksAgainstBase(base, baseModel, changes, next);

          if (base.content.byteLength >= DELTA_BASE_MIN_BYTES) {
            const deltaBase = next.deltaBase;
            expect(deltaBase).toBeDefined();
            if (deltaBase !== undefined) {
              expect(deltaBase.oid).toBe(base.oid);
              expect(applyDelta("t", base.content, deltaBase.delta).equals(Buffer.from(next.content))).toBe(true);
              if (s.kind === "ops" || s.kind === "reoid") {
                // A few spliced entries: a few copies and inserts, nothing like the folder's size.
                expect(deltaBase.delta.length).toBeLessThanOrEqual(32 + 80 * changes.size);
                if (s.kind === "ops") expect(deltaBase.delta.length * 20).toBeLessThan(Math.max(next.content.byteLength, DELTA_BASE_MIN_BYTES));
              }
            }
          } else {
            expect(next.deltaBase).toBeUndefined();
          }

          trees.set(base.oid, base);
          trees.set(next.oid, next);
          const want = expectedDiff(baseModel, model);
          expect(await diffTrees(read, base.oid, next.oid)).toEqual(want);
          const back = expectedDiff(model, baseModel);
          expect(await diffTrees(read, next.oid, base.oid, "")).toEqual(back);
          tree = next;
        }
      }),
      { numRuns: 200 },
    );
    // 200 random edit sequences of folders up to 1,500 entries: ~10 s of CPU, more on a shared machine.
  });

  it("shares every untouched chunk of a big folder and deltas a one-entry edit in a few bytes", () => {
    const model = initialModel(1500, 7);
    const base = makeTree([...model.values()]).tree;
    expect(base.chunks.length).toBeGreaterThan(10);
    expect(base.content.byteLength).toBeGreaterThanOrEqual(DELTA_BASE_MIN_BYTES);
    const victim = entryAt(base, 700) as TreeEntry;
    const replaced: TreeEntry = { ...victim, oid: "f".repeat(40) };
    const { tree } = editTree(base, new Map([[victim.name, replaced]]));
    const shared = tree.chunks.filter((chunk, c) => chunk === base.chunks[c]).length;
    expect(shared).toBe(base.chunks.length - 1);
    expect(tree.chunks.length).toBe(base.chunks.length);
    const delta = tree.deltaBase?.delta;
    expect(delta).toBeDefined();
    expect((delta as Buffer).length).toBeLessThan(100);
    expect(applyDelta("t", base.content, delta as Buffer).equals(Buffer.from(tree.content))).toBe(true);
    model.set(victim.name, replaced);
    checkAgainstModel(tree, model, []);
  });

  it("orders a folder as if its name ended in '/'", () => {
    const oid = "a".repeat(40);
    const base = makeTree([
      { name: "a", mode: "100644", oid, type: "blob" },
      { name: "a-b", mode: "100644", oid, type: "blob" },
      { name: "a0", mode: "100644", oid, type: "blob" },
    ]).tree;
    // "a" becomes a folder: it moves between "a-b" ("-" < "/") and "a0" ("0" > "/").
    const { tree } = editTree(base, new Map([["a", { name: "a", mode: "40000", oid, type: "tree" }]]));
    expect(tree.entries.map((e) => `${e.name}:${e.type}`)).toEqual(["a-b:blob", "a:tree", "a0:blob"]);
    expect(findEntry(tree, "a")?.type).toBe("tree");
    expect(indexOfEntry(tree, "a")).toBe(1);
    // And back to a file.
    const { tree: back } = editTree(tree, new Map([["a", { name: "a", mode: "100644", oid, type: "blob" }]]));
    expect(back.oid).toBe(base.oid);
    expect(back.entries.map((e) => e.name)).toEqual(["a", "a-b", "a0"]);
  });
});
