import { randomBytes } from "node:crypto";
import { deflateSync, inflateSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { adler32, adler32Combine, adler32Of, adler32Patch } from "../../../src/substrate/adler32.js";
import { hashObject } from "../../../src/substrate/git-object.js";
import { encodePack, storedZlib } from "../../../src/substrate/pack-file.js";
import { editTree } from "../../../src/substrate/tree-splice.js";
import { makeTree, TREE_MODE, type ParsedTree, type TreeEntry } from "../../../src/substrate/tree-object.js";

const zlibAdler = (bytes: Uint8Array): number => {
  const stream = deflateSync(bytes);
  return stream.readUInt32BE(stream.length - 4);
};

const oidOf = (i: number, salt: string): string => hashObject("blob", Buffer.from(`${salt}:${i}`)).oid;

function runsFolder(n: number): ParsedTree {
  const entries: TreeEntry[] = [];
  for (let i = 0; i < n; i++) entries.push({ name: `run-${String(i).padStart(6, "0")}`, mode: TREE_MODE, oid: oidOf(i, "a"), type: "tree" });
  return makeTree(entries).tree;
}

describe("adler32 pieces", () => {
  it("combines the checksums of two parts into the checksum of the whole", () => {
    for (const [x, y] of [[0, 0], [1, 0], [0, 7], [5_552, 70_000], [65_521, 65_521], [100_003, 3]] as const) {
      const a = randomBytes(x);
      const b = randomBytes(y);
      expect(adler32Combine(adler32(a), adler32(b), b.length)).toBe(zlibAdler(Buffer.concat([a, b])));
    }
  });

  it("continues from a given checksum", () => {
    const a = randomBytes(9_000);
    const b = randomBytes(20_000);
    expect(adler32(b, adler32(a))).toBe(zlibAdler(Buffer.concat([a, b])));
  });

  it("knows the checksum of every version of a big folder edited from another, as zlib computes it", () => {
    let tree = runsFolder(3_000);
    expect(adler32Of(tree.content)).toBe(zlibAdler(tree.content));
    for (let round = 0; round < 5; round++) {
      const changes = new Map<string, TreeEntry | null>();
      for (let k = 0; k < 40; k++) {
        const i = (round * 977 + k * 131) % 3_000;
        const name = `run-${String(i).padStart(6, "0")}`;
        changes.set(name, k % 13 === 0 ? null : { name, mode: TREE_MODE, oid: oidOf(i, `r${round}`), type: "tree" });
      }
      changes.set(`run-9${round}0000`, { name: `run-9${round}0000`, mode: TREE_MODE, oid: oidOf(round, "new"), type: "tree" });
      tree = editTree(tree, changes).tree;
      expect(adler32Of(tree.content)).toBe(zlibAdler(tree.content));
    }
  });

  it("patches a checksum for bytes replaced in place, as zlib computes the patched bytes", () => {
    for (const size of [1, 20, 5_553, 70_000, 200_003]) {
      const bytes = randomBytes(size);
      let value = adler32(bytes);
      for (let k = 0; k < 12; k++) {
        const at = Math.floor(Math.random() * size);
        const len = Math.min(size - at, 1 + Math.floor(Math.random() * 40));
        const before = Buffer.from(bytes.subarray(at, at + len));
        const after = k % 4 === 0 ? Buffer.alloc(len, 0xff) : k % 4 === 1 ? Buffer.alloc(len, 0) : randomBytes(len);
        after.copy(bytes, at);
        value = adler32Patch(value, size, at, before, after);
        expect(value).toBe(zlibAdler(bytes));
      }
    }
  });

  it("knows the checksum of a big folder whose entries only got new oids (a fire commit's runs/)", () => {
    let tree = runsFolder(3_000);
    for (let round = 0; round < 5; round++) {
      const changes = new Map<string, TreeEntry | null>();
      for (let k = 0; k < 60; k++) {
        const i = (round * 977 + k * 131) % 3_000;
        const name = `run-${String(i).padStart(6, "0")}`;
        changes.set(name, { name, mode: TREE_MODE, oid: oidOf(i, `s${round}`), type: "tree" });
      }
      tree = editTree(tree, changes).tree;
      expect(adler32Of(tree.content)).toBe(zlibAdler(tree.content));
    }
  });

  it("stores a folder over one zlib block so that zlib inflates it back", () => {
    const tree = runsFolder(3_000);
    expect(tree.content.length).toBeGreaterThan(65_535);
    expect(Buffer.compare(inflateSync(storedZlib(tree.content)), Buffer.from(tree.content))).toBe(0);
    const { pack } = encodePack([{ oid: tree.oid, type: "tree", content: tree.content }]);
    expect(pack.length).toBeGreaterThan(tree.content.length);
  });
});
