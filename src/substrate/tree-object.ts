/**
 * Git tree objects: parsing, lookup, building, and editing by splicing.
 *
 * Git's tree order (base_name_compare in git's tree.c / fsck.c): entries sorted by name bytes,
 * where a tree's name compares as if it ended in "/". Modes are written without zero padding
 * ("40000" for trees, "100644" for blobs), as `git fsck --strict` requires.
 *
 * A big folder (runs/ with 10 000 entries) is rewritten on every commit that touches one run,
 * so editing never re-serialises unchanged entries: the new content is the old content with
 * the changed entries spliced in, lookups are binary searches, and nothing is copied per entry
 * beyond the entry array itself.
 */
import { WorkflowHostError } from "../errors.js";
import { codePointRank, compareCodePoints, type GitObject, hashObject } from "./git-object.js";
import type { DirEntry, Oid } from "./types.js";

/** A tree entry as stored. `mode` keeps git's text ("40000", "100644", "100755", ...). */
export interface TreeEntry {
  readonly name: string;
  readonly mode: string;
  readonly oid: Oid;
  /** "commit" is a submodule link (mode 160000); the store never writes one. */
  readonly type: "blob" | "tree" | "commit";
}

/** A parsed tree. Immutable (apart from lazily built indexes): cached by oid and shared. */
export interface ParsedTree {
  readonly oid: Oid;
  /** Entries in the order stored (git's tree order for every tree git or the store wrote). */
  readonly entries: readonly TreeEntry[];
  /** The object's content. */
  readonly content: Uint8Array;
  /** Byte offset of each entry in `content`, then `content.byteLength`. */
  readonly offsets: Uint32Array;
  /** False for a tree not in git order (a broken tool wrote it): lookups use {@link nameIndex}. */
  readonly sorted: boolean;
  /** Name → entry, built on first lookup in an unsorted tree. */
  nameIndex?: Map<string, number>;
  /** Blob and tree entries sorted by name, built on first use (see {@link dirEntriesOf}). */
  dirEntries?: readonly DirEntry[];
}

/** Modes git writes: trees "40000" (no zero padding, or fsck --strict warns), blobs "100644". */
export const TREE_MODE = "40000";
export const BLOB_MODE = "100644";

/** The oid of the empty tree, the root of every genesis commit. */
export const EMPTY_TREE_OID = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";

/** Git's tree order: by name, a tree's name compared as if followed by "/". */
export function compareTreeEntries(a: Pick<TreeEntry, "name" | "type">, b: Pick<TreeEntry, "name" | "type">): number {
  const an = a.name;
  const bn = b.name;
  const n = Math.min(an.length, bn.length);
  for (let i = 0; i < n; i++) {
    const x = an.charCodeAt(i);
    const y = bn.charCodeAt(i);
    if (x !== y) return codePointRank(x) - codePointRank(y);
  }
  const x = an.length > n ? an.charCodeAt(n) : a.type === "tree" ? 0x2f : 0;
  const y = bn.length > n ? bn.charCodeAt(n) : b.type === "tree" ? 0x2f : 0;
  return codePointRank(x) - codePointRank(y);
}

/** `{mode}` for a blob that is not a plain file (100755, 120000), else nothing. */
export function unusualMode(entry: Pick<TreeEntry, "type" | "mode">): { mode?: string } {
  return entry.type === "blob" && entry.mode !== "100644" ? { mode: entry.mode } : {};
}

/** Whether a blob entry's mode is a symlink (120000): its content is a link target, not a file. */
export function isSymlinkMode(mode: string | undefined): boolean {
  return mode === "120000";
}

function typeOfMode(mode: string): TreeEntry["type"] {
  if (mode === "40000" || mode === "040000") return "tree";
  if (mode === "160000") return "commit";
  return "blob";
}

function entrySize(entry: TreeEntry): number {
  return entry.mode.length + Buffer.byteLength(entry.name, "utf8") + 22;
}

function writeEntry(out: Buffer, at: number, entry: TreeEntry): number {
  let pos = at + out.write(entry.mode, at, "latin1");
  out[pos++] = 0x20;
  pos += out.write(entry.name, pos, "utf8");
  out[pos++] = 0;
  pos += out.write(entry.oid, pos, "hex");
  return pos;
}

function finish(entries: TreeEntry[], content: Buffer, offsets: Uint32Array, sorted: boolean): { tree: ParsedTree; object: GitObject } {
  const object = hashObject("tree", content);
  return { tree: { oid: object.oid, entries, content, offsets, sorted }, object };
}

/** Builds a tree from entries in any order (sorted here into git order). */
export function makeTree(entries: TreeEntry[]): { tree: ParsedTree; object: GitObject } {
  entries.sort(compareTreeEntries);
  let size = 0;
  for (const entry of entries) size += entrySize(entry);
  const content = Buffer.allocUnsafe(size);
  const offsets = new Uint32Array(entries.length + 1);
  let at = 0;
  entries.forEach((entry, i) => {
    offsets[i] = at;
    at = writeEntry(content, at, entry);
  });
  offsets[entries.length] = at;
  return finish(entries, content, offsets, true);
}

function corrupt(oid: string, reason: string): WorkflowHostError {
  return new WorkflowHostError("object_corrupt", `git tree ${oid} is corrupt: ${reason}`, { oid, reason });
}

/**
 * Parses tree content.
 * @throws `object_corrupt` naming `oid` when an entry is truncated.
 */
export function decodeTree(oid: Oid, content: Uint8Array): ParsedTree {
  const buf = Buffer.from(content.buffer, content.byteOffset, content.byteLength);
  const entries: TreeEntry[] = [];
  const starts: number[] = [];
  let sorted = true;
  let at = 0;
  while (at < buf.length) {
    const space = buf.indexOf(0x20, at);
    const nul = space < 0 ? -1 : buf.indexOf(0, space + 1);
    if (space < 0 || nul < 0 || nul + 21 > buf.length) throw corrupt(oid, "truncated tree entry");
    const mode = buf.toString("latin1", at, space);
    const entry: TreeEntry = {
      name: buf.toString("utf8", space + 1, nul),
      mode,
      oid: buf.toString("hex", nul + 1, nul + 21),
      type: typeOfMode(mode),
    };
    const previous = entries[entries.length - 1];
    if (previous !== undefined && compareTreeEntries(previous, entry) >= 0) sorted = false;
    entries.push(entry);
    starts.push(at);
    at = nul + 21;
  }
  starts.push(buf.length);
  return { oid, entries, content: buf, offsets: Uint32Array.from(starts), sorted };
}

/** Index of the first entry not before `probe` in git order. */
function lowerBound(entries: readonly TreeEntry[], probe: Pick<TreeEntry, "name" | "type">): number {
  let lo = 0;
  let hi = entries.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compareTreeEntries(entries[mid] as TreeEntry, probe) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Index of the entry called `name` (whatever its type), or -1. */
export function indexOfEntry(tree: ParsedTree, name: string): number {
  if (!tree.sorted) {
    if (tree.nameIndex === undefined) tree.nameIndex = new Map(tree.entries.map((e, i) => [e.name, i]));
    return tree.nameIndex.get(name) ?? -1;
  }
  // A name sorts in one of two places, as a blob ("a") or as a tree ("a/"): look in both.
  for (const type of ["blob", "tree"] as const) {
    const i = lowerBound(tree.entries, { name, type });
    if (tree.entries[i]?.name === name) return i;
  }
  return -1;
}

/** The entry called `name`, or undefined. */
export function findEntry(tree: ParsedTree, name: string): TreeEntry | undefined {
  const i = indexOfEntry(tree, name);
  return i < 0 ? undefined : tree.entries[i];
}

/**
 * A copy of `base` with the entries in `changes` replaced, added (name not in base) or removed
 * (value null). Unchanged entries keep their bytes: the content is spliced, not re-encoded.
 */
export function editTree(base: ParsedTree, changes: ReadonlyMap<string, TreeEntry | null>): { tree: ParsedTree; object: GitObject } {
  if (!base.sorted) {
    const merged = new Map(base.entries.map((e) => [e.name, e]));
    for (const [name, entry] of changes) {
      if (entry === null) merged.delete(name);
      else merged.set(name, entry);
    }
    return makeTree([...merged.values()]);
  }
  // Edits as (position in base, kind): an insert at p goes before base[p]; a removal drops base[p].
  const events: { at: number; insert?: TreeEntry }[] = [];
  for (const [name, entry] of changes) {
    const old = indexOfEntry(base, name);
    if (old >= 0) events.push({ at: old });
    if (entry !== null) events.push({ at: lowerBound(base.entries, entry), insert: entry });
  }
  events.sort((x, y) => x.at - y.at || (x.insert === undefined ? 1 : 0) - (y.insert === undefined ? 1 : 0) || (x.insert !== undefined && y.insert !== undefined ? compareTreeEntries(x.insert, y.insert) : 0));

  const spans: [number, number][] = [];
  let size = 0;
  let count = 0;
  let next = 0;
  for (const event of events) {
    if (event.at > next) {
      spans.push([next, event.at]);
      size += (base.offsets[event.at] as number) - (base.offsets[next] as number);
      count += event.at - next;
    }
    next = Math.max(next, event.at);
    if (event.insert !== undefined) {
      size += entrySize(event.insert);
      count++;
    } else {
      next = event.at + 1;
    }
  }
  const n = base.entries.length;
  const content = Buffer.allocUnsafe(size + ((base.offsets[n] as number) - (base.offsets[Math.min(next, n)] as number)));
  const offsets = new Uint32Array(count + (n - Math.min(next, n)) + 1);
  const entries: TreeEntry[] = [];
  const source = Buffer.from(base.content.buffer, base.content.byteOffset, base.content.byteLength);
  let at = 0;
  let k = 0;
  const copySpan = (from: number, to: number): void => {
    const start = base.offsets[from] as number;
    for (let i = from; i < to; i++) {
      offsets[k++] = at + (base.offsets[i] as number) - start;
      entries.push(base.entries[i] as TreeEntry);
    }
    at += source.copy(content, at, start, base.offsets[to] as number);
  };
  next = 0;
  for (const event of events) {
    if (event.at > next) copySpan(next, event.at);
    next = Math.max(next, event.at);
    if (event.insert !== undefined) {
      offsets[k++] = at;
      entries.push(event.insert);
      at = writeEntry(content, at, event.insert);
    } else {
      next = event.at + 1;
    }
  }
  if (next < n) copySpan(next, n);
  offsets[k] = at;
  return finish(entries, content, offsets, true);
}

/** The tree's blob and tree entries as {@link DirEntry}s sorted by name; computed once. */
export function dirEntriesOf(tree: ParsedTree): readonly DirEntry[] {
  if (tree.dirEntries === undefined) {
    const list: DirEntry[] = [];
    for (const e of tree.entries) {
      if (e.type !== "commit") list.push(Object.freeze({ name: e.name, type: e.type, oid: e.oid, ...unusualMode(e) }));
    }
    list.sort((a, b) => compareCodePoints(a.name, b.name));
    tree.dirEntries = Object.freeze(list);
  }
  return tree.dirEntries;
}
