/**
 * The ownership rule of a big folder's owned bytes (tree-buffers.ts): a version's buffer is taken
 * again only once its pack write settled and the store dropped it from its recent versions;
 * never while a write reads it, never for the edit of its own version; a tree handed out never
 * exposes the owned bytes, and an old version's content reads back the same after its buffer
 * was reused.
 */
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { isCurrent, startWrite, treeBufferStats } from "../../../src/substrate/tree-buffers.js";
import { editTree } from "../../../src/substrate/tree-splice.js";
import { decodeTree, entryAt, makeTree, ownedContentOf, type ParsedTree, retireTree, TREE_MODE, type TreeEntry } from "../../../src/substrate/tree-object.js";
import type { GitObject } from "../../../src/substrate/git-object.js";

const RUNS = 3_000;
const oidOf = (i: number, salt: number): string => createHash("sha1").update(`${salt}:${i}`).digest("hex");
const nameOf = (i: number): string => `run-${String(i).padStart(6, "0")}`;

function baseTree(): ParsedTree {
  return makeTree(Array.from({ length: RUNS }, (_, i) => ({ name: nameOf(i), mode: TREE_MODE, oid: oidOf(i, 0), type: "tree" as const }))).tree;
}

/** `tree` with entries `picks` given new oids (the fire commit's edit: the patch path). */
function reOid(tree: ParsedTree, picks: readonly number[], salt: number): { tree: ParsedTree; object: GitObject } {
  const changes = new Map<string, TreeEntry>();
  for (const i of picks) {
    const old = entryAt(tree, i) as TreeEntry;
    changes.set(old.name, { ...old, oid: oidOf(i, salt) });
  }
  return editTree(tree, changes);
}

/** The bytes git would hold for `tree`: its entries written out in order. */
function expectedBytes(tree: ParsedTree): Buffer {
  return makeTree([...tree.entries]).object.content as Buffer;
}

/** As the object store does once a version's commit is written and it falls out of the recent versions. */
function writtenAndRetired(version: { tree: ParsedTree; object: GitObject }): void {
  startWrite(version.object.content)?.();
  retireTree(version.tree);
}

describe("owned bytes of a big folder's versions", () => {
  it("are taken again only once written and retired; an old version's content reads back the same", () => {
    const base = baseTree();
    const v1 = reOid(base, [1, 2, 3], 1);
    const owned = ownedContentOf(v1.tree);
    expect(owned).toBeDefined();
    const v1Bytes = Buffer.from(v1.object.content);

    // A write in flight: retired, but not reused while it runs.
    const end = startWrite(v1.object.content);
    expect(end).toBeDefined();
    retireTree(v1.tree);
    // (An edit of another version: an edit never takes its own base's bytes anyway.)
    const other = reOid(base, [4], 2);
    expect(ownedContentOf(other.tree)?.slot).not.toBe(owned?.slot);
    expect(isCurrent(owned as NonNullable<typeof owned>)).toBe(true);
    expect(Buffer.from(v1.object.content).equals(v1Bytes)).toBe(true);
    const v2 = reOid(v1.tree, [4], 2);
    end?.();
    // Written and retired: the next new version takes it.
    const reusedBefore = treeBufferStats().reused;
    const v3 = reOid(v2.tree, [5, 6], 3);
    expect(treeBufferStats().reused).toBe(reusedBefore + 1);
    expect(ownedContentOf(v3.tree)?.slot).toBe(owned?.slot);
    expect(isCurrent(owned as NonNullable<typeof owned>)).toBe(false);
    // v1's bytes are now v3's; v1's content is written again from its entries, the same bytes.
    const rebuiltBefore = treeBufferStats().rebuilt;
    const v1Again = v1.tree.content;
    expect(treeBufferStats().rebuilt).toBe(rebuiltBefore + 1);
    expect(Buffer.from(v1Again).equals(v1Bytes)).toBe(true);
    // The tree hands out a copy, never the owned bytes (the object, for the pack write, has them).
    expect(v3.tree.content).not.toBe(v3.object.content);
    expect(Buffer.from(v3.tree.content).equals(v3.object.content)).toBe(true);
    expect(Buffer.from(v3.tree.content).equals(expectedBytes(v3.tree))).toBe(true);
    expect(v3.object.oid).toBe(makeTree([...v3.tree.entries]).object.oid);
  });

  it("are not taken again while the store keeps the version among its recent ones, nor for the edit of the version itself", () => {
    const base = baseTree();
    const v1 = reOid(base, [10], 1);
    const owned = ownedContentOf(v1.tree);
    // Written, not retired: v1 is still the base of the next edit.
    startWrite(v1.object.content)?.();
    const v2 = reOid(base, [11], 2);
    expect(ownedContentOf(v2.tree)?.slot).not.toBe(owned?.slot);
    expect(isCurrent(owned as NonNullable<typeof owned>)).toBe(true);
    // Retired now (free), and edited again: the edit of v1 never writes into v1's own bytes.
    retireTree(v1.tree);
    const v1b = reOid(v1.tree, [12], 3);
    expect(ownedContentOf(v1b.tree)?.slot).not.toBe(owned?.slot);
    expect(Buffer.from(v1b.tree.content).equals(expectedBytes(v1b.tree))).toBe(true);
    // Every version still right, their pack bytes too.
    for (const v of [v1, v2, v1b]) {
      expect(Buffer.from(v.tree.content).equals(expectedBytes(v.tree))).toBe(true);
      expect(Buffer.from(v.object.content).equals(expectedBytes(v.tree))).toBe(true);
    }
  });

  it("a reader's content taken before the buffer is reused keeps its bytes; many versions in a row stay exact", () => {
    let current = reOid(baseTree(), [0], 1);
    const held: { bytes: Uint8Array; copy: Buffer; tree: ParsedTree }[] = [];
    const versions = [current];
    for (let k = 0; k < 30; k++) {
      const bytes = current.tree.content;
      held.push({ bytes, copy: Buffer.from(bytes), tree: current.tree });
      const next = reOid(current.tree, [k * 7, k * 13 + 1, RUNS - 1 - k], k + 2);
      versions.push(next);
      // The store keeps four recent versions; older ones are retired once written.
      startWrite(next.object.content)?.();
      if (versions.length > 4) writtenAndRetired(versions[versions.length - 5] as { tree: ParsedTree; object: GitObject });
      current = next;
    }
    for (const h of held) {
      expect(Buffer.from(h.bytes).equals(h.copy)).toBe(true);
      expect(Buffer.from(h.tree.content).equals(h.copy)).toBe(true);
    }
    for (const v of versions) expect(Buffer.from(v.tree.content).equals(expectedBytes(v.tree))).toBe(true);
  });

  it("are not used for a folder whose names did not decode as UTF-8", () => {
    const good = baseTree();
    // The last name with a byte that is not UTF-8 (still in order): decoded with U+FFFD, so not
    // what its entry writes.
    const content = Buffer.from(good.content);
    const at = (good.offsets[RUNS - 1] as number) + TREE_MODE.length + 1;
    content[at] = 0xff;
    const lossy = decodeTree(createHash("sha1").update(`tree ${content.length}\0`).update(content).digest("hex"), content);
    expect(lossy.lossy).toBe(true);
    const edited = reOid(lossy, [100], 9);
    expect(ownedContentOf(edited.tree)).toBeUndefined();
    expect(edited.tree.lossy).toBe(true);
    expect(Buffer.from(edited.tree.content)[at]).toBe(0xff);
  });
});
