/** Git folders built in memory, bottom-up, for readers given an object source of their own. */
import { type GitObject, hashObject } from "../../src/substrate/git-object.js";
import { makeTree, type TreeEntry } from "../../src/substrate/tree-object.js";
import type { Oid } from "../../src/substrate/types.js";

/** UTF-8 bytes of a string, or of a value's JSON. */
export const encode = (value: unknown): Uint8Array => new TextEncoder().encode(typeof value === "string" ? value : JSON.stringify(value));

/**
 * Builds a tree into `objects`: each entry a file (bytes, stored as a blob) or a folder (an oid
 * of a tree already built). @returns the tree's oid
 */
export function folder(objects: Map<Oid, GitObject>, entries: Record<string, Uint8Array | Oid>): Oid {
  const list: TreeEntry[] = Object.entries(entries).map(([name, value]) => {
    if (typeof value === "string") return { name, mode: "40000", oid: value, type: "tree" };
    const blob = hashObject("blob", value);
    objects.set(blob.oid, blob);
    return { name, mode: "100644", oid: blob.oid, type: "blob" };
  });
  const { object } = makeTree(list);
  objects.set(object.oid, object);
  return object.oid;
}
