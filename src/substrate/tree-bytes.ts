/**
 * Looking one name up in a tree's stored bytes, without parsing the tree.
 *
 * Parsing a folder makes an object and three strings per entry: for the archive's `runs/` at
 * 100,000 archived runs (4 MB) that is a few hundred ms of CPU and tens of MB of heap, paid by
 * the first lookup of a cold start only to answer "does the archive hold this run id?" for the
 * 1,000 live runs. Here the entries' starts are found once (one pass, no strings: a Uint32Array
 * of 4 bytes an entry) and each lookup is a binary search comparing name bytes in git's order.
 */
import { isUtf8 } from "node:buffer";
import { WorkflowHostError } from "../errors.js";
import { compareCodePoints } from "./git-object.js";
import { GITLINK_MODE, type TreeEntry } from "./tree-object.js";
import type { DirEntry, Oid } from "./types.js";

/** A tree's content with where each entry starts, see {@link indexTreeBytes}. */
export interface TreeBytes {
  readonly content: Buffer;
  /** Start of each entry's mode. */
  readonly starts: Uint32Array;
  /** Start of each entry's name (after its mode and a space). */
  readonly names: Uint32Array;
  /** Byte offset of the NUL ending each entry's name (its oid follows). */
  readonly nuls: Uint32Array;
  /** 1 for an entry that is a folder. */
  readonly folders: Uint8Array;
  /** Whether the entries are in git's tree order (what git and this store write). */
  readonly sorted: boolean;
  /**
   * Whether every name is UTF-8. The parsed tree compares names decoded from UTF-8 (a byte that
   * is not becomes U+FFFD), so a folder holding such a name is looked up parsed, not here.
   */
  readonly utf8: boolean;
}

const SPACE = 0x20;
const TREE_FIRST = [true, false] as const;
const BLOB_FIRST = [false, true] as const;
const SLASH = 0x2f;

/** Whether the mode bytes [at, space) are a folder's ("40000", or "040000" as old tools wrote). */
function isFolderMode(content: Buffer, at: number, space: number): boolean {
  const n = space - at;
  if (n === 5) return content[at] === 0x34 && content[at + 1] === 0x30 && content[at + 2] === 0x30 && content[at + 3] === 0x30 && content[at + 4] === 0x30;
  return n === 6 && content[at] === 0x30 && isFolderMode(content, at + 1, space);
}

/**
 * Git's order (base_name_compare) of the name bytes [a, aEnd) (a folder when `aTree`) against
 * [b, bEnd) of `other`: bytes first, then a folder's name as if followed by "/".
 */
function compareNames(content: Buffer, a: number, aEnd: number, aTree: boolean, other: Buffer, b: number, bEnd: number, bTree: boolean): number {
  const n = Math.min(aEnd - a, bEnd - b);
  for (let i = 0; i < n; i++) {
    const x = content[a + i] as number;
    const y = other[b + i] as number;
    if (x !== y) return x - y;
  }
  const x = aEnd - a > n ? (content[a + n] as number) : aTree ? SLASH : 0;
  const y = bEnd - b > n ? (other[b + n] as number) : bTree ? SLASH : 0;
  return x - y;
}

/**
 * Finds where each entry of tree content starts, and whether they are in git's order.
 * @returns null for content that is not a well-formed tree (a truncated entry): the caller then
 *   reads the tree the ordinary way, which reports the damage
 */
export function indexTreeBytes(content: Uint8Array): TreeBytes | null {
  const buf = Buffer.from(content.buffer, content.byteOffset, content.byteLength);
  // An entry takes at least 22 bytes (a space, a NUL, the oid: a foreign tree may hold an empty
  // mode and an empty name, and this pass takes them; counting on more would drop later entries).
  const most = Math.ceil(buf.length / 22);
  const starts = new Uint32Array(most);
  const names = new Uint32Array(most);
  const nuls = new Uint32Array(most);
  const folders = new Uint8Array(most);
  let count = 0;
  let sorted = true;
  let utf8 = true;
  let prevName = -1;
  let prevNul = -1;
  let prevTree = false;
  let at = 0;
  while (at < buf.length) {
    const space = buf.indexOf(SPACE, at);
    const nul = space < 0 ? -1 : buf.indexOf(0, space + 1);
    if (space < 0 || nul < 0 || nul + 21 > buf.length) return null;
    const tree = isFolderMode(buf, at, space);
    if (utf8) {
      for (let i = space + 1; i < nul; i++) {
        if ((buf[i] as number) >= 0x80) {
          utf8 = isUtf8(buf.subarray(space + 1, nul));
          break;
        }
      }
    }
    if (sorted && prevName >= 0 && compareNames(buf, prevName, prevNul, prevTree, buf, space + 1, nul, tree) >= 0) sorted = false;
    prevName = space + 1;
    prevNul = nul;
    prevTree = tree;
    starts[count] = at;
    names[count] = space + 1;
    nuls[count] = nul;
    folders[count] = tree ? 1 : 0;
    count += 1;
    at = nul + 21;
  }
  return { content: buf, starts: starts.subarray(0, count), names: names.subarray(0, count), nuls: nuls.subarray(0, count), folders: folders.subarray(0, count), sorted, utf8 };
}

/** Mode text → entry type, as the tree parser reads it. */
function typeOf(mode: string): TreeEntry["type"] {
  if (mode === "40000" || mode === "040000") return "tree";
  if (mode === "160000") return "commit";
  return "blob";
}

/** A UTF-16 surrogate without its pair: no stored name decodes to one. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * The entry called `name` (whatever its type), as `findEntry` of the parsed tree answers. A
 * name a foreign writer put in a sorted folder twice, once as a file and once as a folder (git
 * orders "a" before "a-1" before "a/"), answers as the parser does: the kind of the folder's
 * first entry first.
 * @returns the entry, null when absent, or undefined for a tree not in git's order, one holding
 *   a name that is not UTF-8, or a `name` that is not well-formed UTF-16 (the caller then parses
 *   the tree, as the parser's own lookup does)
 */
export function findInTreeBytes(tree: TreeBytes, name: string): TreeEntry | null | undefined {
  if (!tree.sorted || !tree.utf8 || LONE_SURROGATE.test(name)) return undefined;
  const { content, starts, names, nuls, folders } = tree;
  const count = nuls.length;
  if (count === 0) return null;
  const probe = Buffer.from(name, "utf8");
  // A name sorts in one of two places, as a blob ("a") or as a folder ("a/"): look in both,
  // first as the kind the folder starts with (as the parser's indexOfEntry).
  for (const asTree of folders[0] === 1 ? TREE_FIRST : BLOB_FIRST) {
    let lo = 0;
    let hi = count;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (compareNames(content, names[mid] as number, nuls[mid] as number, folders[mid] === 1, probe, 0, probe.length, asTree) < 0) lo = mid + 1;
      else hi = mid;
    }
    if (lo >= count) continue;
    const start = names[lo] as number;
    const nul = nuls[lo] as number;
    if (nul - start !== probe.length || !content.subarray(start, nul).equals(probe)) continue;
    const mode = content.toString("latin1", starts[lo] as number, start - 1);
    return { name, mode, oid: content.toString("hex", nul + 1, nul + 21) as Oid, type: typeOf(mode) };
  }
  return null;
}

/** Entries a {@link walkTreeBytes} visits between two turns given back to the event loop. */
export const WALK_SLICE_ENTRIES = 8_192;

/**
 * Visits each entry of tree content in stored order, without making an object or a string per
 * entry: `visit(start, nameStart, nul)` gets the byte offsets of the entry's mode, its name and
 * the NUL ending the name (the 20-byte oid follows; the next entry starts at `nul + 21`). Every
 * `sliceEntries` entries (default {@link WALK_SLICE_ENTRIES}) it awaits `pause()` (default: one
 * macrotask), so a folder of a million entries never holds the event loop in one piece.
 * @returns false for content that is not a well-formed tree (a truncated entry): the caller then
 *   reads the tree the ordinary way, which reports the damage
 */
export async function walkTreeBytes(
  content: Uint8Array,
  visit: (start: number, nameStart: number, nul: number) => void,
  options: { readonly sliceEntries?: number; readonly pause?: () => Promise<void> } = {},
): Promise<boolean> {
  const buf = Buffer.from(content.buffer, content.byteOffset, content.byteLength);
  const slice = options.sliceEntries ?? WALK_SLICE_ENTRIES;
  const pause = options.pause ?? nextMacrotask;
  let inSlice = 0;
  let at = 0;
  while (at < buf.length) {
    // A mode is at most 6 digits and a name has no NUL: bytes compared in place, no native call.
    let space = at;
    while (space < buf.length && buf[space] !== SPACE && space - at < 8) space += 1;
    if (buf[space] !== SPACE) return false;
    const nul = buf.indexOf(0, space + 1);
    if (nul < 0 || nul + 21 > buf.length) return false;
    visit(at, space + 1, nul);
    at = nul + 21;
    inSlice += 1;
    if (inSlice === slice && at < buf.length) {
      inSlice = 0;
      await pause();
    }
  }
  return true;
}

function nextMacrotask(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** The entry of tree content that starts at byte `start` (as {@link walkTreeBytes} reports it), parsed. */
export function treeEntryAt(content: Uint8Array, start: number): TreeEntry {
  const buf = Buffer.from(content.buffer, content.byteOffset, content.byteLength);
  const space = buf.indexOf(SPACE, start);
  const nul = buf.indexOf(0, space + 1);
  const mode = buf.toString("latin1", start, space);
  return { name: buf.toString("utf8", space + 1, nul), mode, oid: buf.toString("hex", nul + 1, nul + 21) as Oid, type: typeOf(mode) };
}

/** Where the entry of tree content starting at byte `start` ends (the next one's start). */
export function treeEntryEnd(content: Uint8Array, start: number): number {
  const buf = Buffer.from(content.buffer, content.byteOffset, content.byteLength);
  return buf.indexOf(0, buf.indexOf(SPACE, start) + 1) + 21;
}

/** The plain file mode "100644" as bytes. */
const PLAIN_MODE = [0x31, 0x30, 0x30, 0x36, 0x34, 0x34] as const;

/**
 * A tree's entries as `dirEntriesOf(decodeTree(oid, content))` lists them (sorted by name, a mode
 * only on an entry that is not a plain file or a folder), straight from its stored bytes: one
 * object and two strings per entry, where parsing made an entry, its copy for the listing, a
 * chunk array, offsets and a mode string. For a walk that lists each small folder once (a
 * recovery: every run's folder and its `events/`). The list is the caller's (not frozen, not shared).
 * @throws `object_corrupt` naming `oid` for a truncated entry, as the parser does
 */
export function dirEntriesOfTreeBytes(oid: Oid, content: Uint8Array): DirEntry[] {
  const buf = Buffer.from(content.buffer, content.byteOffset, content.byteLength);
  const out: DirEntry[] = [];
  let inOrder = true;
  let previous: string | null = null;
  let at = 0;
  const end = buf.length;
  while (at < end) {
    let space = at;
    while (space < end && buf[space] !== SPACE) space++;
    let nul = space + 1;
    while (nul < end && buf[nul] !== 0) nul++;
    if (space >= end || nul >= end || nul + 21 > end) {
      throw new WorkflowHostError("object_corrupt", `git tree ${oid} is corrupt: truncated tree entry`, { oid, reason: "truncated tree entry" });
    }
    const name = buf.toString("utf8", space + 1, nul);
    const entryOid = buf.toString("hex", nul + 1, nul + 21);
    let entry: DirEntry;
    if (isPlainMode(buf, at, space)) entry = { name, type: "blob", oid: entryOid };
    else if (isFolderMode(buf, at, space)) entry = { name, type: "tree", oid: entryOid };
    else {
      const mode = buf.toString("latin1", at, space);
      const type = typeOf(mode);
      entry = type === "commit" ? { name, type, oid: entryOid, mode: GITLINK_MODE } : { name, type, oid: entryOid, mode };
    }
    if (previous !== null && inOrder && compareCodePoints(previous, name) > 0) inOrder = false;
    previous = name;
    out.push(entry);
    at = nul + 21;
  }
  // Stored in git's order, which differs from the listing's only where a folder's name is a
  // prefix of another name ("a" before "a-" as names, after it as "a/" in git's order).
  if (!inOrder) out.sort((a, b) => compareCodePoints(a.name, b.name));
  return out;
}

/** Whether the mode bytes [at, space) are "100644". */
function isPlainMode(content: Buffer, at: number, space: number): boolean {
  if (space - at !== 6) return false;
  for (let i = 0; i < 6; i++) if (content[at + i] !== PLAIN_MODE[i]) return false;
  return true;
}
