/**
 * A fire commit's pack trailer is started before the pack is laid out (pack-file.ts PackPrefix)
 * while the big folder's oid is hashed on the hasher thread (tree-hasher.ts; design notes §81).
 * The pack must come out byte for byte as without the prefix, and a prefix whose bytes are not
 * the pack's start (another count, another first entry) must not be used.
 */
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { hashObject, type GitObject } from "../../../src/substrate/git-object.js";
import { encodePack, encodePackGently, packParts, PackPrefix, packPrefixesUsed } from "../../../src/substrate/pack-file.js";
import { PackedObjects } from "../../../src/substrate/packed-objects.js";
import { treeHasherReady, treeOidBeside, treeOidsHashedBeside } from "../../../src/substrate/tree-hasher.js";

const events = Array.from({ length: 40 }, (_, i) => hashObject("blob", Buffer.from(`{"seq":${i},"type":"TimerFired"}`)));
const folder = hashObject("tree", Buffer.concat([Buffer.from("100644 1.json\0", "latin1"), Buffer.from((events[0] as GitObject).oid, "hex")]));
/** A 300 KB "runs/" folder (its bytes need not parse for the pack), the root and the commit. */
const big = hashObject("tree", randomBytes(300 * 1024));
const root = hashObject("tree", Buffer.concat([Buffer.from("40000 runs\0", "latin1"), Buffer.from(big.oid, "hex")]));
const commit = hashObject("commit", Buffer.from(`tree ${root.oid}\n\nfire\n`));

function built(): PackedObjects {
  const packed = new PackedObjects(64, 8_192);
  for (const o of [...events, folder]) {
    const at = packed.begin(o.content.byteLength);
    packed.buffer.set(o.content, at);
    packed.finish(o.type === "tree");
  }
  return packed;
}

const bytesOf = (parts: readonly Uint8Array[]): Buffer => Buffer.concat(parts);

describe("a pack trailer started ahead (PackPrefix)", () => {
  it.each([false, true])("gives the very pack encoded without it, and is used once (gently %s)", async (gently) => {
    const objects = [big, root, commit];
    const encode = (packed: PackedObjects) => (gently ? encodePackGently(objects, () => Promise.resolve(), packed) : Promise.resolve(encodePack(objects, packed)));
    const plain = await encode(built());
    const packed = built();
    const prefix = new PackPrefix(packed, packed.count + objects.length, big.content);
    packed.prefix = prefix;
    const before = packPrefixesUsed();
    const ahead = await encode(packed);
    expect(packPrefixesUsed()).toBe(before + 1);
    expect(prefix.used).toBe(true);
    expect(ahead.checksum).toBe(plain.checksum);
    expect(bytesOf(packParts(ahead)).equals(bytesOf(packParts(plain)))).toBe(true);
    expect(ahead.idx.equals(plain.idx)).toBe(true);
    // Used once: a second encoding of the same entries hashes the whole pack.
    const again = await encode(packed);
    expect(packPrefixesUsed()).toBe(before + 1);
    expect(again.checksum).toBe(plain.checksum);
  });

  it("is not used when the pack does not start with its bytes: another count, another first entry, the tree not referenced", () => {
    const cases: { objects: GitObject[]; count: (p: PackedObjects) => number; tree: Uint8Array }[] = [
      // One object fewer than predicted (a folder that came out unchanged).
      { objects: [big, commit], count: (p) => p.count + 3, tree: big.content },
      // The big folder is not the first entry after the built ones.
      { objects: [root, big, commit], count: (p) => p.count + 3, tree: big.content },
      // A copy of the folder's bytes, not the folder laid out.
      { objects: [big, root, commit], count: (p) => p.count + 3, tree: Buffer.from(big.content) },
    ];
    for (const [i, c] of cases.entries()) {
      const plain = encodePack(c.objects, built());
      const packed = built();
      packed.prefix = new PackPrefix(packed, c.count(packed), c.tree);
      const before = packPrefixesUsed();
      const encoded = encodePack(c.objects, packed);
      expect(packPrefixesUsed(), `case ${i}`).toBe(before);
      expect(encoded.checksum, `case ${i}`).toBe(plain.checksum);
      expect(bytesOf(packParts(encoded)).equals(bytesOf(packParts(plain))), `case ${i}`).toBe(true);
    }
  });
});

describe("a big tree's oid hashed on the hasher thread (treeOidBeside)", () => {
  it("is git's oid, computed there while the work beside runs once; a failing work beside leaves the thread usable", async () => {
    expect(await treeHasherReady()).toBe(true);
    const before = treeOidsHashedBeside();
    for (const size of [0, 1, 300 * 1024, 700 * 1024, 400 * 1024]) {
      const content = randomBytes(size);
      let ran = 0;
      expect(treeOidBeside(content, () => ran++)).toBe(hashObject("tree", content).oid);
      expect(ran).toBe(1);
    }
    // Content that lies in a shared buffer already (at an offset) is read where it is.
    const shared = new Uint8Array(new SharedArrayBuffer(400 * 1024));
    shared.set(randomBytes(shared.length));
    for (const view of [shared.subarray(1_000, 300 * 1024), shared.subarray(0, 5)]) {
      expect(treeOidBeside(view, () => undefined)).toBe(hashObject("tree", Buffer.from(view)).oid);
    }
    expect(treeOidsHashedBeside()).toBe(before + 7);
    const content = randomBytes(1_000);
    expect(() =>
      treeOidBeside(content, () => {
        throw new Error("beside failed");
      }),
    ).toThrow("beside failed");
    expect(treeOidBeside(content, () => undefined)).toBe(hashObject("tree", content).oid);
    expect(treeOidsHashedBeside()).toBe(before + 8);
  });
});
