/**
 * TreeCursor answers exactly as indexOfEntry, whatever order names are asked in: random folders
 * (files and folders, names that are prefixes of one another, so a file "a" and a folder "a"
 * sort apart), big enough to span many chunks, searched with names present and absent, in
 * sorted runs (what a fire commit asks) and in random order (the cursor's fallback).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ENTRY_CHUNK, decodeTree, indexOfEntry, makeTree, TreeCursor, type TreeEntry } from "../../../src/substrate/tree-object.js";

const OID = "a".repeat(40);

/** Short names over a small alphabet: many share prefixes ("a", "a-", "a0", "a/"-order cases). */
const nameArb = fc.stringMatching(/^[a-c0\-.]{1,4}$/).filter((n) => n !== "." && n !== "..");

const folderArb = fc.uniqueArray(fc.record({ name: nameArb, folder: fc.boolean() }), { selector: (e) => e.name, minLength: 1, maxLength: 3 * ENTRY_CHUNK + 40 }).map((list) =>
  list.map((e): TreeEntry => (e.folder ? { name: e.name, mode: "40000", type: "tree", oid: OID } : { name: e.name, mode: "100644", type: "blob", oid: OID })),
);

describe("TreeCursor", () => {
  it("finds what indexOfEntry finds, and the same entry, for names asked in any order", () => {
    fc.assert(
      fc.property(folderArb, fc.array(nameArb, { maxLength: 60 }), fc.boolean(), (entries, extra, sortAsked) => {
        const { tree } = makeTree(entries);
        // Every name once (present ones) plus some that may be absent.
        const asked = [...entries.map((e) => e.name), ...extra];
        if (sortAsked) asked.sort();
        const cursor = new TreeCursor(tree);
        for (const name of asked) {
          const want = indexOfEntry(tree, name);
          const got = cursor.indexOf(name);
          expect(got).toBe(want);
          if (got >= 0) expect(cursor.entry?.name).toBe(name);
          else expect(cursor.entry).toBeUndefined();
        }
      }),
      { numRuns: 300 },
    );
  });

  it("finds every entry of a folder of 20,000 subfolders asked in order, and none of the names between them", () => {
    const names = Array.from({ length: 20_000 }, (_, i) => `run-${String(i).padStart(6, "0")}`);
    const { tree } = makeTree(names.map((name): TreeEntry => ({ name, mode: "40000", type: "tree", oid: OID })));
    const cursor = new TreeCursor(tree);
    for (let i = 0; i < names.length; i += 7) {
      expect(cursor.indexOf(names[i] as string)).toBe(i);
      expect(cursor.indexOf(`${names[i] as string}x`)).toBe(-1);
    }
  });

  it("answers as indexOfEntry in a folder not in git order", () => {
    // Written by hand out of order: "b" before "a".
    const content = Buffer.concat([Buffer.from("100644 b\0"), Buffer.alloc(20, 1), Buffer.from("100644 a\0"), Buffer.alloc(20, 2)]);
    const tree = decodeTree("c".repeat(40), content);
    expect(tree.sorted).toBe(false);
    const cursor = new TreeCursor(tree);
    expect(cursor.indexOf("a")).toBe(1);
    expect(cursor.indexOf("b")).toBe(0);
    expect(cursor.indexOf("z")).toBe(-1);
  });
});
