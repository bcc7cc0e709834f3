import { deflateSync, inflateSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { hashObject, type GitObject } from "../../../src/substrate/git-object.js";
import {
  adler32,
  applyDelta,
  crc32,
  encodePack,
  inflateEntry,
  parseEntryHead,
  parsePackIndex,
  storedZlib,
  typeOfCode,
} from "../../../src/substrate/pack-file.js";
import { shapeOfContent, treeDelta } from "../../../src/substrate/pack-merge.js";
import { makeTree, TREE_MODE, BLOB_MODE, type TreeEntry } from "../../../src/substrate/tree-object.js";

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
