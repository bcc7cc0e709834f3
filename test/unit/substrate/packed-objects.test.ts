/**
 * A fire commit writes each run's new objects (its event files, its events folder, its folder)
 * straight into pack entries (packed-objects.ts) instead of as objects the pack encoder copies.
 * The pack must come out byte for byte as the encoder makes it from the same objects (the slow
 * path): same oids, same entries, same index; and a run's folders built into entries must be the
 * ones built as objects, on random folders.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { hashObject, type GitObject } from "../../../src/substrate/git-object.js";
import { planAppends, type AppendSource } from "../../../src/substrate/folder-append.js";
import { encodePack, encodePackGently, inflateEntry, packParts, parseEntryHead, parsePackIndex } from "../../../src/substrate/pack-file.js";
import { PackedObjects } from "../../../src/substrate/packed-objects.js";
import { DEFERRED_CHANGES } from "../../../src/substrate/tree-edit.js";
import { decodeTree, makeTree, type ParsedTree, type TreeEntry } from "../../../src/substrate/tree-object.js";
import type { FolderAppend, Oid } from "../../../src/substrate/types.js";
import { seededRandom } from "../../helpers/seeded-random.js";

/** Builds `objects` into a PackedObjects as a caller does (begin, write the content, finish). */
function build(objects: readonly GitObject[], rows?: number, bytes?: number): { packed: PackedObjects; oids: Oid[]; rowOf: number[] } {
  const packed = new PackedObjects(rows, bytes);
  const oids: Oid[] = [];
  const rowOf: number[] = [];
  for (const o of objects) {
    const at = packed.begin(o.content.byteLength);
    packed.buffer.set(o.content, at);
    rowOf.push(packed.finish(o.type === "tree"));
    oids.push(packed.lastOid);
  }
  return { packed, oids, rowOf };
}

const objectArb = fc.oneof(
  fc.record({ type: fc.constant("blob" as const), content: fc.uint8Array({ maxLength: 1_024 }) }),
  fc.record({ type: fc.constant("tree" as const), content: fc.uint8Array({ maxLength: 3_000 }) }),
  // Sizes where the entry header, the git header's digits or the stored block's length change.
  fc.record({ type: fc.constantFrom("blob" as const, "tree" as const), content: fc.constantFrom(0, 9, 10, 15, 16, 99, 100, 127, 128, 999, 1_000, 1_023, 1_024).map((n) => new Uint8Array(n).fill(n & 0xff)) }),
  fc.record({ type: fc.constant("tree" as const), content: fc.constantFrom(2_047, 2_048, 9_999, 10_000, 65_535).map((n) => new Uint8Array(n).fill(7)) }),
);

describe("objects built as pack entries (packed-objects.ts)", () => {
  it("make the pack the encoder makes of the same objects: oids, bytes, index; twice-built objects kept once", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(objectArb, { maxLength: 60 }), fc.array(fc.nat(59), { maxLength: 6 }), fc.integer({ min: 1, max: 64 }), async (raw, repeats, rows) => {
        const objects: GitObject[] = raw.map((o) => hashObject(o.type, o.content));
        // Some built twice (a second run whose event has the same bytes).
        for (const i of repeats) if (i < objects.length) objects.push(objects[i] as GitObject);
        // A small first chunk (4 KiB) now and then: entries then spill into further chunks.
        const { packed, oids, rowOf } = build(objects, rows, rows % 2 === 0 ? 0 : undefined);
        expect(oids).toEqual(objects.map((o) => o.oid));
        const distinct = [...new Map(objects.map((o) => [o.oid, o])).values()];
        expect(packed.count).toBe(distinct.length);
        for (let i = 0; i < objects.length; i++) expect(rowOf[i]).toBe(distinct.findIndex((o) => o.oid === objects[i]?.oid));
        // Beside them, objects the encoder lays out itself (the commit, `runs/`, the root), one
        // of them also built above: stored once.
        const commitLike = hashObject("commit", Buffer.from(`tree ${"0".repeat(40)}\n\nFire\n`));
        const rest = [hashObject("tree", Buffer.from("100644 x\0" + "a".repeat(20), "latin1")), ...(distinct.length > 0 ? [distinct[0] as GitObject] : []), commitLike];
        const slow = encodePack([...distinct, ...rest]);
        const fast = encodePack(rest, packed);
        const gently = await encodePackGently(rest, () => Promise.resolve(), packed);
        // Compared with equals(): a deep comparison of megabytes byte by byte takes seconds.
        expect(Buffer.concat(packParts(fast)).equals(slow.pack)).toBe(true);
        expect(fast.idx.equals(slow.idx)).toBe(true);
        expect(Buffer.concat(packParts(gently)).equals(slow.pack)).toBe(true);
        expect(gently.idx.equals(slow.idx)).toBe(true);
        expect(fast.checksum).toBe(slow.checksum);
        // And each object reads back from the index and the entry bytes.
        const index = parsePackIndex("p", fast.idx, slow.pack.length);
        for (const o of distinct) {
          const at = index.find(o.oid);
          expect(at).toBeGreaterThanOrEqual(0);
          const offset = index.offsetAt(at);
          const bytes = slow.pack.subarray(offset, index.endOf(offset));
          expect(Buffer.from(inflateEntry("p", bytes, parseEntryHead("p", bytes))).equals(o.content)).toBe(true);
        }
        // As objects again (a store that writes loose ones).
        const again = packed.objects();
        expect(again.map((o) => [o.oid, o.type])).toEqual(distinct.map((o) => [o.oid, o.type]));
        for (let i = 0; i < again.length; i++) expect(Buffer.from((again[i] as GitObject).content).equals((distinct[i] as GitObject).content)).toBe(true);
      }),
      { numRuns: 100 },
    );
  });

  it("spread over chunks: entries never split, offsets continue across them", () => {
    // 65 KB trees: three to a 256 KiB chunk, so a run of them fills several chunks.
    const objects = Array.from({ length: 24 }, (_, i) => hashObject(i % 3 === 0 ? "blob" : "tree", new Uint8Array(i % 3 === 0 ? 900 : 65_000 + i).fill(i)));
    const { packed } = build(objects);
    expect(packed.parts().length).toBeGreaterThan(3);
    const slow = encodePack(objects);
    const fast = encodePack([], packed);
    expect(Buffer.concat(packParts(fast)).equals(slow.pack)).toBe(true);
    expect(fast.idx.equals(slow.idx)).toBe(true);
  });
});

/** A run's folder (`events/` and maybe more) and its events folder, as a store holds them. */
function randomRun(r: () => number, n: number, trees: Map<Oid, ParsedTree>, raw: Map<Oid, GitObject>): { entry: TreeEntry; append: FolderAppend } {
  const keep = (object: GitObject): Oid => {
    raw.set(object.oid, object);
    if (object.type === "tree") trees.set(object.oid, decodeTree(object.oid, object.content));
    return object.oid;
  };
  const count = Math.floor(r() * 30);
  const events: TreeEntry[] = [];
  for (let seq = 1; seq <= count; seq++) events.push({ name: `${seq}.json`, mode: "100644", oid: keep(hashObject("blob", Buffer.from(`e${n}-${seq}`))), type: "blob" });
  // Some folders hold one event so many, some a name the direct build declines.
  if (r() < 0.05) events.push({ name: "n\u00e9.json", mode: "100644", oid: keep(hashObject("blob", Buffer.from("u"))), type: "blob" });
  const eventsTree = makeTree(events).object;
  const run: TreeEntry[] = [{ name: "events", mode: "40000", oid: keep(eventsTree), type: "tree" }];
  if (r() < 0.3) run.push({ name: "blobs", mode: "40000", oid: keep(makeTree([{ name: "c", mode: "100644", oid: keep(hashObject("blob", Buffer.from("c"))), type: "blob" }]).object), type: "tree" });
  if (r() < 0.2) run.push({ name: "events.json", mode: "100644", oid: keep(hashObject("blob", Buffer.from("beside"))), type: "blob" });
  const runTree = makeTree(run).object;
  keep(runTree);
  const files: { name: string; content: Uint8Array }[] = [];
  // Names the direct build declines: one already there, one git could read as `.git`, one not ASCII.
  const odd = r();
  if (odd < 0.04 && count > 0) files.push({ name: "1.json", content: Buffer.from("again") });
  else if (odd < 0.06) files.push({ name: ".GIT", content: Buffer.from("dot") });
  else if (odd < 0.08) files.push({ name: "\u00e9.json", content: Buffer.from("e") });
  const adding = files.length > 0 && r() < 0.5 ? 0 : 1 + Math.floor(r() * 3);
  for (let k = 0; k < adding; k++) {
    // Mostly small events; sometimes one the encoder deflates (over 1 KiB), or one whose bytes another run has too.
    const size = r() < 0.05 ? 1_500 : 40 + Math.floor(r() * 300);
    const content = r() < 0.1 ? Buffer.from(`{"same":${k}}`) : Buffer.from(`{"run":${n},"seq":${count + 1 + k},"pad":"${"x".repeat(size)}"}`);
    files.push({ name: `${count + 1 + k}.json`, content });
  }
  const hint = r() < 0.7 ? { subOid: r() < 0.9 ? eventsTree.oid : hashObject("blob", Buffer.from("wrong")).oid } : {};
  return { entry: { name: `run-${String(n).padStart(4, "0")}`, mode: "40000", oid: runTree.oid, type: "tree" }, append: { folder: `runs/run-${String(n).padStart(4, "0")}`, sub: "events", files, ...hint } };
}

describe("a fire commit's runs built as pack entries (planAppends with packed objects)", () => {
  it("are the folders, files and changes built as objects, on random runs", async () => {
    for (let seed = 1; seed <= 40; seed++) {
      const r = seededRandom(seed);
      const trees = new Map<Oid, ParsedTree>();
      const raw = new Map<Oid, GitObject>();
      const runs = Array.from({ length: 1 + Math.floor(r() * 40) }, (_, n) => randomRun(r, n, trees, raw));
      const runsTree = makeTree(runs.map((x) => x.entry)).object;
      trees.set(runsTree.oid, decodeTree(runsTree.oid, runsTree.content));
      const root = makeTree([{ name: "runs", mode: "40000", oid: runsTree.oid, type: "tree" }]).object;
      trees.set(root.oid, decodeTree(root.oid, root.content));
      const source: AppendSource = {
        readTree: (oid) => Promise.resolve(trees.get(oid) as ParsedTree),
        readRaw: (oid) => raw.get(oid) ?? Promise.reject(new Error(`no ${oid}`)),
      };
      const appends = runs.map((x) => x.append);
      const slow = await planAppends(source, root.oid, appends);
      const packed = new PackedObjects(4, 0);
      const fast = await planAppends(source, root.oid, appends, undefined, packed);
      expect(fast.built, `seed ${seed}`).toEqual(slow.built);
      // Same folder puts; their blob changes listed only when asked (deferred), the same ones.
      expect(fast.folders.map(({ within: _, ...put }) => put), `seed ${seed}`).toEqual(slow.folders.map(({ within: _, ...put }) => put));
      const listed = [...fast.folders.flatMap((f) => (f.within === DEFERRED_CHANGES ? [] : f.within)), ...(fast.deferredChanges?.() ?? [])];
      const byPath = (x: { path: string }, y: { path: string }): number => (x.path < y.path ? -1 : x.path > y.path ? 1 : 0);
      expect(listed.sort(byPath), `seed ${seed}`).toEqual(slow.folders.flatMap((f) => f.within ?? []).sort(byPath));
      expect(fast.puts, `seed ${seed}`).toEqual(slow.puts);
      // Every object built as objects is in the entries or, for a run with a big file, still an object.
      const built = new Map([...packed.objects(), ...fast.objects].map((o) => [o.oid, o]));
      expect(new Set(built.keys()), `seed ${seed}`).toEqual(new Set(slow.objects.map((o) => o.oid)));
      for (const o of slow.objects) expect(Buffer.from((built.get(o.oid) as GitObject).content).equals(o.content), `seed ${seed} ${o.oid}`).toBe(true);
      // Both encode to the same pack (the runs with big files' objects laid out by the encoder after the entries).
      // Two at once, every read answered later (a pack not in memory): each one's folders are its own.
      const later: AppendSource = { readTree: source.readTree, readRaw: (oid) => Promise.resolve().then(() => source.readRaw(oid)) };
      const both = await Promise.all([planAppends(later, root.oid, appends, undefined, new PackedObjects()), planAppends(later, root.oid, appends.slice().reverse(), undefined, new PackedObjects())]);
      expect(both[0].built, `seed ${seed}`).toEqual(slow.built);
      expect(both[1].built.slice().reverse(), `seed ${seed}`).toEqual(slow.built);
      const slowPack = encodePack([...packed.objects(), ...fast.objects]);
      const fastPack = encodePack(fast.objects, packed);
      expect(Buffer.concat(packParts(fastPack)).equals(slowPack.pack), `seed ${seed}`).toBe(true);
      expect(fastPack.idx.equals(slowPack.idx), `seed ${seed}`).toBe(true);
    }
  });
});
