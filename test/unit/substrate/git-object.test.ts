import { describe, expect, it } from "vitest";
import { decodeCommit, encodeCommit, hashObject, unwrapObject, wrapObject } from "../../../src/substrate/git-object.js";
import {
  decodeTree,
  EMPTY_TREE_OID,
  findEntry,
  makeTree,
  type TreeEntry,
} from "../../../src/substrate/tree-object.js";
import { editTree } from "../../../src/substrate/tree-splice.js";
import { isWorkflowHostError } from "../../../src/errors.js";

const X_BLOB = "587be6b4c3f93f93c489c0111bba5596147a26cb"; // git hash-object of "x\n"
const SUB_TREE = "2b4c1d0c6f3c005f72eb2ecd2eb2a25edecf9a50"; // git mktree: one blob "b"

describe("git object encoding", () => {
  it("hashes blobs and the empty tree exactly as git hash-object does", () => {
    expect(hashObject("blob", Buffer.from("x\n")).oid).toBe(X_BLOB);
    expect(hashObject("tree", new Uint8Array()).oid).toBe(EMPTY_TREE_OID);
  });

  it("orders tree entries as git does (trees compared as name + '/', bytes not UTF-16)", () => {
    const blob = (name: string) => ({ name, mode: "100644", oid: X_BLOB, type: "blob" as const });
    const { tree, object } = makeTree([
      blob("ä"),
      { name: "a", mode: "40000", oid: SUB_TREE, type: "tree" },
      blob("a0"),
      blob("a.txt"),
      blob("A"),
      blob("a-b"),
    ]);
    // Oid computed with `git mktree` from the same entries.
    expect(tree.oid).toBe("9c30092fd5285ecdc0a7b7e83dba4983c566696a");
    expect(tree.entries.map((e) => e.name)).toEqual(["A", "a-b", "a.txt", "a", "a0", "ä"]);
    const decoded = decodeTree(tree.oid, object.content);
    expect(decoded.entries).toEqual(tree.entries);
    expect(makeTree([{ name: "b", mode: "100644", oid: X_BLOB, type: "blob" }]).tree.oid).toBe(SUB_TREE);
  });

  it("edits a tree by splicing, byte-identical to building it from scratch", () => {
    // Deterministic pseudo-random edits over a tree whose names collide in git order.
    let seed = 7;
    const random = (n: number): number => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const names = ["a", "a-b", "a.txt", "a0", "b", "b/", "c", "ä", "z", "run-1", "run-10", "run-2"].filter((n) => !n.includes("/"));
    const entryFor = (name: string): TreeEntry =>
      random(2) === 0 ? { name, mode: "100644", oid: X_BLOB, type: "blob" } : { name, mode: "40000", oid: SUB_TREE, type: "tree" };
    let current = makeTree(names.filter(() => random(2) === 0).map(entryFor)).tree;
    for (let round = 0; round < 300; round++) {
      const edits = new Map<string, TreeEntry | null>();
      for (let k = 0; k < 1 + random(4); k++) {
        const name = names[random(names.length)] as string;
        edits.set(name, random(3) === 0 ? null : entryFor(name));
      }
      const expected = new Map(current.entries.map((e) => [e.name, e]));
      for (const [name, entry] of edits) {
        if (entry === null) expected.delete(name);
        else expected.set(name, entry);
      }
      const edited = editTree(current, edits);
      const rebuilt = makeTree([...expected.values()]);
      expect(edited.tree.oid).toBe(rebuilt.tree.oid);
      expect(Buffer.from(edited.tree.content).equals(Buffer.from(rebuilt.tree.content))).toBe(true);
      expect([...edited.tree.offsets]).toEqual([...rebuilt.tree.offsets]);
      for (const name of names) expect(findEntry(edited.tree, name)).toEqual(expected.get(name));
      current = decodeTree(edited.tree.oid, edited.tree.content);
    }
  });

  it("encodes a commit byte-for-byte like git and parses it back", () => {
    const who = { name: "workflow-host", email: "workflow-host@localhost" };
    const commit = encodeCommit({ tree: EMPTY_TREE_OID, parents: [], author: who, committer: who, timestampSec: 1767225600, message: "genesis" });
    expect(commit.oid).toBe("166af211fca6ba192090d94c0a295076c319ab58");
    const parsed = decodeCommit(commit.oid, commit.content);
    expect(parsed).toMatchObject({ tree: EMPTY_TREE_OID, parents: [], message: "genesis\n" });
  });

  it("rejects a wrapped object whose content does not hash to its oid", () => {
    const blob = hashObject("blob", Buffer.from("x\n"));
    const wrapped = wrapObject(blob);
    expect(unwrapObject(blob.oid, wrapped).oid).toBe(blob.oid);
    wrapped[wrapped.length - 1] = 0x41;
    let error: unknown;
    try {
      unwrapObject(blob.oid, wrapped);
    } catch (e) {
      error = e;
    }
    expect(isWorkflowHostError(error, "object_corrupt")).toBe(true);
  });
});
