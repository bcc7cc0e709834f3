import { deflateSync, inflateSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { hashObject, type GitObject } from "../../../src/substrate/git-object.js";
import {
  adler32,
  applyDelta,
  crc32,
  encodePack,
  encodePackGently,
  inflateEntry,
  packSourceOf,
  parseEntryHead,
  parsePackIndex,
  storedZlib,
  typeOfCode,
} from "../../../src/substrate/pack-file.js";
import { mergePacks, shapeOfContent, treeDelta } from "../../../src/substrate/pack-merge.js";
import { editTree } from "../../../src/substrate/tree-splice.js";
import { makeTree, TREE_MODE, BLOB_MODE, type DeltaBase, type TreeEntry } from "../../../src/substrate/tree-object.js";

/** Decodes every object of a pack through its index, as a reader does. */
function unpack(pack: Buffer, idx: Buffer): Map<string, { type: string; content: Buffer }> {
  const index = parsePackIndex("test", idx, pack.length);
  const out = new Map<string, { type: string; content: Buffer }>();
  for (let i = 0; i < index.count; i++) {
    const offset = index.offsetAt(i);
    const bytes = pack.subarray(offset, index.endOf(offset));
    const head = parseEntryHead("test", bytes);
    expect(crc32(bytes)).toBe(index.crcAt(i));
    out.set(index.oidAt(i), { type: typeOfCode(head.typeCode), content: inflateEntry("test", bytes, head) });
  }
  return out;
}

function bigFolder(count: number, tag: (i: number) => string): { tree: ReturnType<typeof makeTree>["tree"]; object: GitObject } {
  const entries: TreeEntry[] = [];
  for (let i = 0; i < count; i++) {
    const blob = hashObject("blob", Buffer.from(tag(i)));
    entries.push({ name: `run-${String(i).padStart(6, "0")}`, mode: i % 3 === 0 ? BLOB_MODE : TREE_MODE, oid: blob.oid, type: i % 3 === 0 ? "blob" : "tree" });
  }
  return makeTree(entries);
}

describe("pack format", () => {
  it("encodes a big commit's pack in slices, byte for byte as in one step", async () => {
    const objects: GitObject[] = [];
    for (let i = 0; i < 2_000; i += 1) objects.push(hashObject("blob", Buffer.from(`{"seq":${i},"type":"TimerFired"}`)));
    objects.push(bigFolder(3_000, (i) => `v${i}`).object, objects[5] as GitObject);
    let pauses = 0;
    const sliced = await encodePackGently(objects, () => {
      pauses += 1;
      return Promise.resolve();
    });
    const whole = encodePack(objects);
    expect(sliced.pack.equals(whole.pack)).toBe(true);
    expect(sliced.idx.equals(whole.idx)).toBe(true);
    expect(sliced.count).toBe(2_001);
    // Every 256 objects, and between the steps after them.
    expect(pauses).toBeGreaterThanOrEqual(7);
  });

  it("round-trips small, medium and big objects through a pack and its index", () => {
    const objects: GitObject[] = [
      hashObject("blob", Buffer.from('{"seq":1,"type":"TimerSet"}')),
      hashObject("blob", Buffer.alloc(8_000, 0x61)),
      hashObject("blob", Buffer.alloc(0)),
      bigFolder(3_000, (i) => `v${i}`).object,
    ];
    objects.push(objects[0] as GitObject);
    const encoded = encodePack(objects);
    expect(encoded.count).toBe(4);
    expect(encoded.pack.subarray(0, 4).toString("latin1")).toBe("PACK");
    const read = unpack(encoded.pack, encoded.idx);
    for (const object of objects) {
      expect(read.get(object.oid)?.type).toBe(object.type);
      expect(Buffer.compare(read.get(object.oid)?.content as Buffer, Buffer.from(object.content))).toBe(0);
    }
    expect(parsePackIndex("test", encoded.idx, encoded.pack.length).find(objects[1]?.oid as string)).toBeGreaterThanOrEqual(0);
    expect(parsePackIndex("test", encoded.idx, encoded.pack.length).find("0".repeat(40))).toBe(-1);
  });

  it("writes stored zlib streams that zlib itself inflates, with zlib's Adler-32", () => {
    for (const size of [0, 1, 65_535, 65_536, 200_000]) {
      const content = Buffer.alloc(size);
      for (let i = 0; i < size; i++) content[i] = (i * 31) & 0xff;
      expect(Buffer.compare(inflateSync(storedZlib(content)), content)).toBe(0);
      expect(adler32(content)).toBe(deflateSync(content).readUInt32BE(deflateSync(content).length - 4));
    }
  });

  it("finds where each entry ends, for the first lookups (one pass) as for later ones (sorted starts)", () => {
    const objects = Array.from({ length: 40 }, (_, i) => hashObject("blob", Buffer.from(`event ${i} `.repeat(i + 1))));
    const encoded = encodePack(objects);
    const starts = [...Array(encoded.count).keys()].map((i) => parsePackIndex("test", encoded.idx, encoded.pack.length).offsetAt(i)).sort((a, b) => a - b);
    const expected = new Map(starts.map((start, i) => [start, starts[i + 1] ?? encoded.pack.length - 20]));
    for (const order of [starts, [...starts].reverse()]) {
      const index = parsePackIndex("test", encoded.idx, encoded.pack.length);
      for (const start of order) expect(index.endOf(start)).toBe(expected.get(start));
    }
  });

  it("finds every oid and misses others, for the first lookups and once lookups are many", () => {
    const objects = Array.from({ length: 300 }, (_, i) => hashObject("blob", Buffer.from(`blob ${i}`)));
    const encoded = encodePack(objects);
    const index = parsePackIndex("test", encoded.idx, encoded.pack.length);
    for (let round = 0; round < 2; round++) {
      for (const object of objects) {
        expect(index.oidAt(index.find(object.oid))).toBe(object.oid);
        // Same first 32 bits, another oid: compared past the first word.
        const twin = `${object.oid.slice(0, 8)}${object.oid.slice(8).replace(/./g, (c) => (c === "0" ? "1" : "0"))}`;
        expect(index.find(twin)).toBe(-1);
      }
      expect(index.find("f".repeat(40))).toBe(-1);
      expect(index.find("0".repeat(40))).toBe(-1);
    }
  });

  it("refuses an index whose checksum does not match", () => {
    const encoded = encodePack([hashObject("blob", Buffer.from("x"))]);
    const torn = Buffer.from(encoded.idx);
    torn[8 + 1024] = (torn[8 + 1024] as number) ^ 0xff;
    expect(() => parsePackIndex("torn", torn, encoded.pack.length)).toThrow(expect.objectContaining({ code: "object_corrupt" }));
  });
});

describe("tree deltas", () => {
  it("turns one version of a big folder into the next with inserts, removals and changes", () => {
    const before = bigFolder(10_000, (i) => `v1-${i}`).tree;
    const after = bigFolder(10_050, (i) => (i % 997 === 0 ? `v2-${i}` : `v1-${i}`)).tree;
    const removed = makeTree(after.entries.filter((_, i) => i % 1_500 !== 7).map((e) => ({ ...e }))).tree;
    for (const [base, target] of [
      [before, after],
      [after, removed],
      [removed, before],
    ] as const) {
      const delta = treeDelta(shapeOfContent(Buffer.from(base.content))!, shapeOfContent(Buffer.from(target.content))!);
      expect(delta.length).toBeLessThan(target.content.byteLength / 10);
      expect(Buffer.compare(applyDelta("test", base.content, delta), Buffer.from(target.content))).toBe(0);
    }
  });

  it("refuses a delta that does not fit its base", () => {
    const base = bigFolder(100, (i) => `a${i}`).tree;
    const target = bigFolder(101, (i) => `a${i}`).tree;
    const delta = treeDelta(shapeOfContent(Buffer.from(base.content))!, shapeOfContent(Buffer.from(target.content))!);
    expect(() => applyDelta("test", Buffer.alloc(3), delta)).toThrow(expect.objectContaining({ code: "object_corrupt" }));
  });
});

describe("merging with the deltas edits were written with", () => {
  const sha1 = async (body: Buffer): Promise<Buffer> => (await import("node:crypto")).createHash("sha1").update(body).digest();
  const source = (name: string, objects: GitObject[]) => {
    const encoded = encodePack(objects);
    return packSourceOf(name, encoded.pack, parsePackIndex(name, encoded.idx, encoded.pack.length));
  };
  /** Every object of a pack, ofs-deltas resolved through their bases, checked against its oid. */
  const unpackResolved = (pack: Buffer, idx: Buffer): Map<string, Buffer> => {
    const index = parsePackIndex("merged", idx, pack.length);
    const at = (offset: number): { type: string; content: Buffer } => {
      const bytes = pack.subarray(offset, index.endOf(offset));
      const head = parseEntryHead("merged", bytes);
      const payload = inflateEntry("merged", bytes, head);
      if (head.typeCode !== 6) return { type: typeOfCode(head.typeCode), content: payload };
      const base = at(offset - (head.baseDistance as number));
      return { type: base.type, content: applyDelta("merged", base.content, payload) };
    };
    const out = new Map<string, Buffer>();
    for (let i = 0; i < index.count; i++) {
      const object = at(index.offsetAt(i));
      expect(hashObject(object.type as GitObject["type"], object.content).oid).toBe(index.oidAt(i));
      out.set(index.oidAt(i), object.content);
    }
    return out;
  };
  /** The oids stored as ofs-delta entries (type 6). */
  const deltaEntries = (pack: Buffer, idx: Buffer): Set<string> => {
    const index = parsePackIndex("merged", idx, pack.length);
    const out = new Set<string>();
    for (let i = 0; i < index.count; i++) {
      const offset = index.offsetAt(i);
      if (parseEntryHead("merged", pack.subarray(offset, index.endOf(offset))).typeCode === 6) out.add(index.oidAt(i));
    }
    return out;
  };

  it("stores each version of a big folder as the delta its edit produced, and every version reads back whole", async () => {
    const v1 = bigFolder(2_000, (i) => `v1-${i}`);
    const versions = [v1];
    for (let k = 0; k < 5; k++) {
      const base = (versions.at(-1) as typeof v1).tree;
      const changes = new Map<string, TreeEntry | null>([
        [`run-${String(k * 311).padStart(6, "0")}`, { name: `run-${String(k * 311).padStart(6, "0")}`, mode: BLOB_MODE, oid: hashObject("blob", Buffer.from(`edit ${k}`)).oid, type: "blob" }],
        [`run-${String(k * 97 + 5).padStart(6, "0")}`, null],
        [`run-new-${k}`, { name: `run-new-${k}`, mode: TREE_MODE, oid: hashObject("blob", Buffer.from(`new ${k}`)).oid, type: "tree" }],
      ]);
      versions.push(editTree(base, changes));
    }
    const hints = new Map<string, DeltaBase>();
    for (const v of versions.slice(1)) hints.set(v.tree.oid, v.tree.deltaBase as DeltaBase);
    expect(hints.size).toBe(5);
    // One pack per commit, oldest first, as the store writes and merges them.
    const sources = versions.map((v, k) => source(`p${k}`, [v.object]));
    // Folders the merge has to diff are looked up here first: with the edits' deltas, only the
    // first version (whose base is in no source) is.
    const diffed: string[] = [];
    const merged = await mergePacks(sources, sha1, (oid) => (diffed.push(oid), undefined), (oid) => hints.get(oid));
    expect(merged).not.toBeNull();
    expect(diffed).toEqual([v1.object.oid]);
    const read = unpackResolved(merged!.pack, merged!.idx);
    for (const v of versions) expect(Buffer.compare(read.get(v.object.oid) ?? Buffer.alloc(0), Buffer.from(v.object.content))).toBe(0);
    expect(deltaEntries(merged!.pack, merged!.idx)).toEqual(new Set(versions.slice(1).map((v) => v.object.oid)));
    // Each delta stored is the edit's own, byte for byte (nothing was diffed).
    for (const v of versions.slice(1)) {
      const index = parsePackIndex("merged", merged!.idx, merged!.pack.length);
      const offset = index.offsetAt(index.find(v.object.oid));
      const bytes = merged!.pack.subarray(offset, index.endOf(offset));
      const head = parseEntryHead("merged", bytes);
      expect(Buffer.compare(inflateSync(bytes.subarray(head.dataAt)), (v.tree.deltaBase as DeltaBase).delta)).toBe(0);
    }
  });

  it("ignores a delta whose sizes do not match the objects, and still merges correctly", async () => {
    const v1 = bigFolder(2_000, (i) => `a-${i}`);
    const v2 = editTree(v1.tree, new Map([["run-000010", null]]));
    const wrong: DeltaBase = { oid: v1.object.oid, delta: Buffer.from([1, 2, 0x81, 0]) };
    const merged = await mergePacks([source("p0", [v1.object]), source("p1", [v2.object])], sha1, () => undefined, () => wrong);
    const read = unpackResolved(merged!.pack, merged!.idx);
    expect(Buffer.compare(read.get(v2.object.oid) ?? Buffer.alloc(0), Buffer.from(v2.object.content))).toBe(0);
  });
});
