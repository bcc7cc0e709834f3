/**
 * A big folder made by a splice lives in shared memory, and the trailer of a pack holding it is
 * hashed on a helper thread: the pack must be the same bytes, and the hash the same SHA-1, as
 * when everything is hashed on the event loop.
 */
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { hashObject, type GitObject } from "../../../src/substrate/git-object.js";
import { encodePack, encodePackGently, packParts, parsePackIndex } from "../../../src/substrate/pack-file.js";
import { SHARED_HASH_MIN_BYTES, sha1OfParts, sharedBytes } from "../../../src/substrate/sha1-parts.js";
import { editTree } from "../../../src/substrate/tree-splice.js";
import { makeTree, TREE_MODE, type TreeEntry } from "../../../src/substrate/tree-object.js";

const oidOf = (i: number, salt: number): string => createHash("sha1").update(`${salt}:${i}`).digest("hex");

/** A `runs/`-like folder of `n` run folders. */
function runsFolder(n: number, salt: number) {
  const entries: TreeEntry[] = [];
  for (let i = 0; i < n; i++) entries.push({ name: `run-${String(i).padStart(6, "0")}`, mode: TREE_MODE, oid: oidOf(i, salt), type: "tree" });
  return makeTree(entries);
}

describe("sha1OfParts", () => {
  it("is the SHA-1 of the pieces laid end to end, shared or not, big or small", async () => {
    const big = sharedBytes(SHARED_HASH_MIN_BYTES + 12_345);
    for (let i = 0; i < big.length; i++) big[i] = (i * 7) % 253;
    expect(big.buffer).toBeInstanceOf(SharedArrayBuffer);
    const cases: Uint8Array[][] = [
      [Buffer.from("PACK"), big.subarray(0, 700_000), Buffer.alloc(0), Buffer.from([1, 2, 3]), big.subarray(700_000), Buffer.alloc(20, 9)],
      [big],
      [Buffer.from("small only")],
      [],
    ];
    for (const parts of cases) {
      const expected = createHash("sha1");
      for (const part of parts) expected.update(part);
      expect((await sha1OfParts(parts)).equals(expected.digest())).toBe(true);
    }
    // Several at once, answered each with its own digest.
    const many = await Promise.all([0, 1, 2, 3].map((k) => sha1OfParts([Buffer.from([k]), big])));
    for (const [k, digest] of many.entries()) expect(digest.equals(createHash("sha1").update(Buffer.from([k])).update(big).digest())).toBe(true);
  });
});

describe("a spliced big folder", () => {
  it("is made in shared memory, and its pack is the same bytes encoded either way", async () => {
    // ~40 bytes an entry: past the shared-memory size.
    const n = Math.ceil(SHARED_HASH_MIN_BYTES / 35);
    const base = runsFolder(n, 1).tree;
    const changes = new Map<string, TreeEntry>();
    for (let i = 0; i < n; i += Math.floor(n / 250)) {
      const name = `run-${String(i).padStart(6, "0")}`;
      changes.set(name, { name, mode: TREE_MODE, oid: oidOf(i, 2), type: "tree" });
    }
    const patched = editTree(base, changes);
    expect(patched.tree.content.buffer).toBeInstanceOf(SharedArrayBuffer);
    // An insert (the general splice) too.
    const added = editTree(base, new Map([["run-x", { name: "run-x", mode: TREE_MODE, oid: oidOf(0, 3), type: "tree" }]]));
    expect(added.tree.content.buffer).toBeInstanceOf(SharedArrayBuffer);
    const objects: GitObject[] = [hashObject("blob", Buffer.from("{}")), patched.object, hashObject("tree", Buffer.from("small")), added.object];
    const onLoop = encodePack(objects);
    const gently = await encodePackGently(objects, () => Promise.resolve());
    expect(Buffer.concat(packParts(gently)).equals(Buffer.concat(packParts(onLoop)))).toBe(true);
    expect(gently.checksum).toBe(onLoop.checksum);
    expect(gently.idx.equals(onLoop.idx)).toBe(true);
    const whole = Buffer.concat(packParts(gently));
    expect(createHash("sha1").update(whole.subarray(0, whole.length - 20)).digest("hex")).toBe(gently.checksum);
    const index = parsePackIndex("p", gently.idx, whole.length);
    for (const o of objects) expect(index.find(o.oid)).toBeGreaterThanOrEqual(0);
  });
});
