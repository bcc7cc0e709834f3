/**
 * A big folder spliced from one this store packed has its pack entry's CRC-32 patched, not read
 * again: the index must hold exactly the CRC-32 of the entry's bytes, whichever oids changed
 * (ones across a stored block's boundary included), version after version.
 */
import { createHash } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { knownTreeEntryCrc } from "../../../src/substrate/entry-crc.js";
import { crc32, encodePack, entryHeader, entryPayload, packParts, parsePackIndex } from "../../../src/substrate/pack-file.js";
import { CRC_PATCH_BYTES_PER_CHANGE, editTree } from "../../../src/substrate/tree-splice.js";
import { entryAt, makeTree, type ParsedTree, TREE_MODE, type TreeEntry } from "../../../src/substrate/tree-object.js";

const oidOf = (i: number, salt: number): string => createHash("sha1").update(`${salt}:${i}`).digest("hex");
const nameOf = (i: number): string => `run-${String(i).padStart(6, "0")}`;
const RUNS = 6_000; // ~240 KB: four stored blocks

/** The CRC-32 of the tree's pack entry, computed from its bytes. */
function entryCrc(tree: ParsedTree): number {
  return crc32(Buffer.concat([entryHeader(2, tree.content.byteLength), ...entryPayload("tree", tree.content)]));
}

/** The CRC-32 the index of a pack holding only `tree` records for it. */
function indexedCrc(tree: ParsedTree, object: Parameters<typeof encodePack>[0][number]): number {
  const encoded = encodePack([object]);
  const index = parsePackIndex("p", encoded.idx, Buffer.concat(packParts(encoded)).length);
  return index.crcAt(index.find(tree.oid));
}

/** Entries whose oid bytes straddle a stored block's boundary (every 65,535 bytes). */
function straddling(tree: ParsedTree): number[] {
  const out: number[] = [];
  for (let i = 0; i < tree.count; i++) {
    const end = tree.offsets[i + 1] as number;
    if (Math.floor((end - 20) / 65_535) !== Math.floor((end - 1) / 65_535)) out.push(i);
  }
  return out;
}

describe("a big folder's entry CRC-32", () => {
  it("is patched for a splice of new oids, and equals the CRC-32 of the entry's bytes", () => {
    const entries: TreeEntry[] = Array.from({ length: RUNS }, (_, i) => ({ name: nameOf(i), mode: TREE_MODE, oid: oidOf(i, 0), type: "tree" }));
    const base = makeTree(entries);
    expect(straddling(base.tree).length).toBeGreaterThan(0);
    fc.assert(
      fc.property(fc.array(fc.array(fc.integer({ min: 0, max: RUNS - 1 }), { minLength: 1, maxLength: 300 }), { minLength: 1, maxLength: 4 }), fc.integer(), (rounds, salt) => {
        let current = base;
        // Packed once: its entry's CRC-32 is then known.
        expect(indexedCrc(current.tree, current.object)).toBe(entryCrc(current.tree));
        for (const [r, picks] of rounds.entries()) {
          const changes = new Map<string, TreeEntry>();
          for (const i of [...picks, ...(r === 0 ? straddling(current.tree) : [])]) {
            const old = entryAt(current.tree, i) as TreeEntry;
            changes.set(old.name, { ...old, oid: oidOf(i, salt + r + 1) });
          }
          const next = editTree(current.tree, changes);
          // Patched when few entries change for the folder's size; otherwise the writer reads it.
          const few = changes.size * CRC_PATCH_BYTES_PER_CHANGE < next.tree.content.byteLength;
          // Remembered for the bytes the pack is written from (an owned version's tree.content is a copy).
          expect(knownTreeEntryCrc(next.object.content)).toBe(few ? entryCrc(next.tree) : undefined);
          expect(indexedCrc(next.tree, next.object)).toBe(entryCrc(next.tree));
          current = next;
        }
      }),
      { numRuns: 15 },
    );
  });
});

describe("a big folder's entry CRC-32 at the edges", () => {
  // Folders of exactly two stored blocks, of one block and one byte, of three blocks and one byte.
  for (const length of [2 * 65_535, 65_536, 3 * 65_535 + 1]) {
    it(`is patched right for a folder of ${length} bytes, its first and last entries changed, many commits in a row`, () => {
      // Entries of 37 bytes, the last one longer (28 bytes and its name) to reach `length`.
      const count = Math.floor((length - 28) / 37);
      const entries: TreeEntry[] = Array.from({ length: count }, (_, i) => ({ name: nameOf(i), mode: TREE_MODE, oid: oidOf(i, 0), type: "tree" }));
      entries.push({ name: "z".repeat(length - 37 * count - 27), mode: TREE_MODE, oid: oidOf(9_999, 0), type: "tree" });
      let current = makeTree(entries);
      expect(current.tree.content.byteLength).toBe(length);
      expect(indexedCrc(current.tree, current.object)).toBe(entryCrc(current.tree));
      for (let round = 1; round <= 30; round++) {
        const picks = [0, current.tree.count - 1, ...straddling(current.tree), (round * 97) % current.tree.count];
        const changes = new Map<string, TreeEntry>();
        for (const i of picks) {
          const old = entryAt(current.tree, i) as TreeEntry;
          changes.set(old.name, { ...old, oid: oidOf(i, round) });
        }
        const next = editTree(current.tree, changes);
        expect(knownTreeEntryCrc(next.object.content), `round ${round}`).toBe(entryCrc(next.tree));
        expect(indexedCrc(next.tree, next.object)).toBe(entryCrc(next.tree));
        current = next;
      }
    });
  }
});

describe("a big folder's entry CRC-32 around the patch threshold", () => {
  // A folder of exactly `blocks` × CRC_PATCH_BYTES_PER_CHANGE bytes: `blocks` changed entries is
  // the first count read again instead of patched.
  const folderOf = (length: number, salt: number): TreeEntry[] => {
    const count = Math.floor((length - 28) / 37);
    const entries: TreeEntry[] = Array.from({ length: count }, (_, i) => ({ name: nameOf(i), mode: TREE_MODE, oid: oidOf(i, salt), type: "tree" }));
    entries.push({ name: "z".repeat(length - 37 * count - 27), mode: TREE_MODE, oid: oidOf(9_999, salt), type: "tree" });
    return entries;
  };
  it("is right for changes just below, at and above it, all entries, first and last, and a folder growing or shrinking in between", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 17, max: 40 }),
        fc.array(fc.record({ delta: fc.integer({ min: -2, max: 1 }), resize: fc.constantFrom(0, 0, 1, -1), ends: fc.boolean(), all: fc.boolean() }), { minLength: 1, maxLength: 6 }),
        (blocks, rounds) => {
          const length = blocks * CRC_PATCH_BYTES_PER_CHANGE;
          let current = makeTree(folderOf(length, 0));
          expect(current.tree.content.byteLength).toBe(length);
          expect(indexedCrc(current.tree, current.object)).toBe(entryCrc(current.tree));
          for (const [r, round] of rounds.entries()) {
            const changes = new Map<string, TreeEntry | null>();
            const n = current.tree.count;
            if (round.resize === 1) changes.set(`new-${r}`, { name: `new-${r}`, mode: TREE_MODE, oid: oidOf(r, 777), type: "tree" });
            if (round.resize === -1) changes.set((entryAt(current.tree, Math.floor(n / 2)) as TreeEntry).name, null);
            // The count of changed oids: the threshold for this folder's size, give or take.
            const want = round.all ? n : Math.max(1, Math.floor(current.tree.content.byteLength / CRC_PATCH_BYTES_PER_CHANGE) + round.delta);
            const picks = round.all ? Array.from({ length: n }, (_, i) => i) : [...(round.ends ? [0, n - 1] : []), ...Array.from({ length: want }, (_, k) => (k * 7919 + r) % n)];
            for (const i of picks) {
              const old = entryAt(current.tree, i) as TreeEntry;
              if (!changes.has(old.name)) changes.set(old.name, { ...old, oid: oidOf(i, 1_000 + r) });
            }
            const next = editTree(current.tree, changes);
            const known = knownTreeEntryCrc(next.object.content);
            if (known !== undefined) expect(known, `round ${r}`).toBe(entryCrc(next.tree));
            if (round.resize === 0 && !round.all && changes.size * CRC_PATCH_BYTES_PER_CHANGE < next.tree.content.byteLength) expect(known).toBe(entryCrc(next.tree));
            if (round.resize === 0 && changes.size * CRC_PATCH_BYTES_PER_CHANGE >= next.tree.content.byteLength) expect(known).toBeUndefined();
            expect(indexedCrc(next.tree, next.object)).toBe(entryCrc(next.tree));
            current = next;
          }
        },
      ),
      { numRuns: 25 },
    );
  });
});
