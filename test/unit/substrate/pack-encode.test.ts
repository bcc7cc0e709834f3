/**
 * A commit's pack is laid out in one buffer (small objects written in place as a stored block).
 * Its bytes must be exactly git's pack format as the entry functions define it: header, each
 * distinct object's entry (type and size header, zlib payload) in order, the SHA-1 trailer.
 */
import { createHash } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { hashObject, type GitObject } from "../../../src/substrate/git-object.js";
import { crc32, encodePack, encodePackGently, entryHeader, entryPayload, inflateEntry, packParts, parseEntryHead, parsePackIndex } from "../../../src/substrate/pack-file.js";

function reference(objects: readonly GitObject[]): { pack: Buffer; crcs: Map<string, number> } {
  const parts: Buffer[] = [];
  const crcs = new Map<string, number>();
  const seen = new Set<string>();
  for (const o of objects) {
    if (seen.has(o.oid)) continue;
    seen.add(o.oid);
    const entry = Buffer.concat([entryHeader({ commit: 1, tree: 2, blob: 3, tag: 4 }[o.type], o.content.byteLength), ...entryPayload(o.type, o.content)]);
    crcs.set(o.oid, crc32(entry));
    parts.push(entry);
  }
  const head = Buffer.alloc(12);
  head.write("PACK", 0, "latin1");
  head.writeUInt32BE(2, 4);
  head.writeUInt32BE(seen.size, 8);
  const body = Buffer.concat([head, ...parts]);
  return { pack: Buffer.concat([body, createHash("sha1").update(body).digest()]), crcs };
}

const bytes = (n: number, seed: number): Buffer => Buffer.from(Array.from({ length: n }, (_, i) => (i * 31 + seed * 7) % 251));

describe("encodePack", () => {
  it("writes the same bytes as the entry functions, for every size class and duplicates", async () => {
    const objects: GitObject[] = [];
    for (const [i, n] of [0, 1, 15, 16, 127, 2047, 2048, 1024, 1025, 4000, 65_535, 65_536, 70_000, 200_000].entries()) {
      objects.push(hashObject("blob", bytes(n, i)));
      objects.push(hashObject("tree", bytes(n, i + 100)));
    }
    objects.push(objects[3] as GitObject, objects[0] as GitObject);
    objects.push(hashObject("commit", Buffer.from("tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\n\nm\n")));
    const expected = reference(objects);
    const encoded = encodePack(objects);
    expect(encoded.pack.equals(expected.pack)).toBe(true);
    const gently = await encodePackGently(objects, () => Promise.resolve());
    expect(gently.pack.equals(expected.pack)).toBe(true);
    expect(gently.idx.equals(encoded.idx)).toBe(true);
    // The index finds every object at an entry that decodes to it, with the entry's CRC-32.
    const index = parsePackIndex("p", encoded.idx, encoded.pack.length);
    expect(index.count).toBe(expected.crcs.size);
    for (const o of objects) {
      const at = index.find(o.oid);
      expect(at).toBeGreaterThanOrEqual(0);
      expect(index.crcAt(at)).toBe(expected.crcs.get(o.oid));
      const entry = encoded.pack.subarray(index.offsetAt(at));
      const head = parseEntryHead("p", entry);
      expect(Buffer.from(inflateEntry("p", entry, head)).equals(Buffer.from(o.content))).toBe(true);
    }
  });
});

describe("a pack holding big objects, as pieces", () => {
  it("is the same bytes, with each big object's content referenced, not copied", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(fc.constantFrom("blob", "tree", "commit"), fc.oneof(fc.integer({ min: 0, max: 3_000 }), fc.integer({ min: 65_000, max: 300_000 })), fc.integer()), { minLength: 1, maxLength: 12 }), async (specs) => {
        const objects = specs.map(([type, n, seed]) => hashObject(type as GitObject["type"], bytes(n, seed)));
        objects.push(objects[0] as GitObject);
        const expected = reference(objects);
        for (const encoded of [encodePack(objects), await encodePackGently(objects, () => Promise.resolve())]) {
          const parts = packParts(encoded);
          expect(Buffer.concat(parts).equals(expected.pack)).toBe(true);
          expect(encoded.pack.equals(expected.pack)).toBe(true);
          const index = parsePackIndex("p", encoded.idx, expected.pack.length);
          for (const o of objects) expect(index.crcAt(index.find(o.oid))).toBe(expected.crcs.get(o.oid));
          // A big stored object (a folder of a big deployment) goes to the file from its own bytes.
          for (const o of objects) {
            if (!(o.content.byteLength > 65_536 || (o.type === "tree" && o.content.byteLength > 65_535))) continue;
            expect(parts.some((p) => p.buffer === o.content.buffer && p.byteLength >= 60_000)).toBe(true);
          }
        }
      }),
      { numRuns: 40 },
    );
  });
});
