/**
 * Appending files to a folder's subfolder (`runs/<id>/events/`) by working on the two trees'
 * stored bytes: the subfolder's entries with the new ones spliced in at their places, and the
 * folder's entry for the subfolder given its new oid (same length, so a copy with 20 bytes
 * changed). No entry is parsed into an object, no path is split, nothing is awaited: a fire
 * commit of thousands of runs does this once per run, where the generic tree edit
 * (tree-edit.ts) parses both trees, builds a trie and re-serialises through an async step per
 * folder.
 *
 * The result is byte for byte what the generic edit gives (same oids; a test checks it on
 * random folders) whenever the direct build accepts the input. It declines (returns null, the
 * caller then uses the generic edit) whatever that edit would treat specially: a tree not in
 * git's order, a name outside plain printable ASCII or one `git fsck` could refuse, a mode the
 * edit would rewrite (`040000`), a new name already present.
 *
 * Given a pause (a time slicer), a subfolder of {@link GENTLE_SUB_BYTES} or more is worked on in
 * steps (its entries checked, its SHA-1 and Adler-32 taken, a slice at a time): a validated
 * append to a run of 200,000 events holds the event loop for a slice, not for the whole folder.
 *
 * Given a {@link PackedObjects}, `planAppends` writes each run's new files and two folders
 * straight into it as pack entries (packed-objects.ts) instead of returning them as objects, and
 * leaves the list of their changes to be made when asked (`AppendPlan.deferredChanges`).
 */
import * as nodeCrypto from "node:crypto";
import { createHash } from "node:crypto";
import { adler32, rememberAdler32 } from "./adler32.js";
import { hashObject, type GitObject } from "./git-object.js";
import { assertEntryName, parseRepoPath } from "./repo-path.js";
import { findEntry, type ParsedTree, TreeCursor } from "./tree-object.js";
import { DEFERRED_CHANGES, type EntryPosition } from "./tree-edit.js";
import { copyBytes, writeAsciiChars } from "./byte-copy.js";
import { writeHexOid } from "./hex-oid.js";
import { PACKED_BLOB_MAX_BYTES, PACKED_MAX_BYTES, type PackedObjects } from "./packed-objects.js";
import type { AppendedFolder, FolderAppend, Oid, PathChange } from "./types.js";

/** A file to add: its name in the subfolder and its blob's oid. */
export interface AppendedFile {
  readonly name: string;
  readonly oid: Oid;
}

/** The two new trees of an append. */
export interface AppendedFolders {
  readonly folder: GitObject;
  readonly sub: GitObject;
}

const SPACE = 0x20;
const SLASH = 0x2f;
const OID_BYTES = 20;
/** "40000 " then the name: how the folder's entry for the subfolder starts. */
const TREE_MODE_BYTES = Buffer.from("40000", "latin1");
const BLOB_PREFIX = Buffer.from("100644 ", "latin1");

/**
 * Steps through a tree's entries in place, checking each as it goes: well formed, named in plain
 * printable ASCII that git cannot read as `.git` (see {@link plainName}), and after the one
 * before in git's order. One per tree walked; nothing is allocated per entry.
 */
class EntryCursor {
  /** Start of the current entry, its name's bounds, whether it is a folder. */
  at = 0;
  nameFrom = 0;
  nameTo = 0;
  tree = false;
  /** Where the next entry starts. */
  next = 0;
  constructor(readonly content: Uint8Array) {}

  /** Moves to the next entry: 1 when there is one, 0 at the end, -1 for a tree the direct build declines. */
  step(): number {
    const b = this.content;
    const n = b.length;
    const at = this.next;
    if (at >= n) return 0;
    let space = at;
    while (space < n && b[space] !== SPACE) space++;
    let nul = space + 1;
    while (nul < n && b[nul] !== 0) nul++;
    if (space >= n || nul >= n || nul + 1 + OID_BYTES > n || space === at) return -1;
    if (!plainName(b, space + 1, nul)) return -1;
    const tree = isTreeMode(b, at, space);
    if (at > 0 && compareNames(b, this.nameFrom, this.nameTo, this.tree, b, space + 1, nul, tree) >= 0) return -1;
    this.at = at;
    this.nameFrom = space + 1;
    this.nameTo = nul;
    this.tree = tree;
    this.next = nul + 1 + OID_BYTES;
    return 1;
  }
}

/** "40000" or "040000": a folder (what tree-object.ts reads as one). */
function isTreeMode(b: Uint8Array, from: number, to: number): boolean {
  if (to - from === 6 && b[from] === 0x30) from += 1;
  if (to - from !== 5) return false;
  for (let i = 0; i < 5; i++) if (b[from + i] !== TREE_MODE_BYTES[i]) return false;
  return true;
}

/**
 * A name the generic edit carries over as it is: printable ASCII (space to "~"), no "/", not
 * "." or "..", and without "git" in any case (the only way a plain ASCII name can fold to `.git`).
 */
function plainName(b: Uint8Array, from: number, to: number): boolean {
  if (to === from) return false;
  if (b[from] === 0x2e && (to - from === 1 || (to - from === 2 && b[from + 1] === 0x2e))) return false;
  for (let i = from; i < to; i++) {
    const c = b[i] as number;
    if (c < 0x20 || c > 0x7e || c === SLASH) return false;
    if ((c | 0x20) === 0x67 && i + 2 < to && ((b[i + 1] as number) | 0x20) === 0x69 && ((b[i + 2] as number) | 0x20) === 0x74) return false;
  }
  return true;
}

/** Git's tree order on raw names: bytes, a folder's name compared as if followed by "/". */
function compareNames(a: Uint8Array, aFrom: number, aTo: number, aTree: boolean, b: Uint8Array, bFrom: number, bTo: number, bTree: boolean): number {
  const la = aTo - aFrom;
  const lb = bTo - bFrom;
  const len = Math.min(la, lb);
  for (let i = 0; i < len; i++) {
    const d = (a[aFrom + i] as number) - (b[bFrom + i] as number);
    if (d !== 0) return d;
  }
  const x = la > len ? (a[aFrom + len] as number) : aTree ? SLASH : 0;
  const y = lb > len ? (b[bFrom + len] as number) : bTree ? SLASH : 0;
  return x - y;
}

/** Equal names (the raw bytes against a string of printable ASCII). */
function sameName(content: Uint8Array, from: number, to: number, name: string): boolean {
  if (to - from !== name.length) return false;
  for (let i = 0; i < name.length; i++) if (content[from + i] !== name.charCodeAt(i)) return false;
  return true;
}

/**
 * The oid of the folder entry `sub` in the tree `folder` (its content), when the direct build
 * can take this folder: `sub` is there as a folder with mode `40000` and the tree is clean (see
 * the module comment). Otherwise null.
 */
export function subfolderOid(folder: Uint8Array, sub: string): Oid | null {
  const at = subEntry(folder, sub);
  return at < 0 ? null : Buffer.from(folder.buffer, folder.byteOffset, folder.byteLength).toString("hex", at, at + OID_BYTES);
}

/** Offset of the oid of the entry `sub` (a `40000` folder) in a clean tree, else -1. */
function subEntry(folder: Uint8Array, sub: string): number {
  const cursor = new EntryCursor(folder);
  let found = -1;
  for (let step = cursor.step(); step !== 0; step = cursor.step()) {
    if (step < 0) return -1;
    if (!sameName(folder, cursor.nameFrom, cursor.nameTo, sub)) continue;
    if (cursor.nameFrom - 1 - cursor.at !== 5 || !cursor.tree) return -1;
    found = cursor.nameTo + 1;
  }
  return found;
}

/**
 * The folder `folder` (its content) with `files` added to its subfolder `sub` (content
 * `subContent`, which must be the tree the folder's entry names), as the generic edit writes
 * them (plain files, mode 100644), or null when the direct build declines (see the module
 * comment). Neither input is changed.
 */
export function appendToSubfolder(folder: Uint8Array, sub: string, subContent: Uint8Array, files: readonly AppendedFile[]): AppendedFolders | null {
  const oidAt = subEntry(folder, sub);
  return oidAt < 0 ? null : appendAt(folder, oidAt, subContent, files);
}

/**
 * Where {@link writeMerge} puts new file entries into a subfolder's bytes: the new names (plain,
 * in git order, none twice, none already there) and, per name in that order, the offset in the
 * old content before which it goes.
 */
interface MergePlan {
  readonly names: readonly Buffer[];
  /** Indexes into the files, in git order of their names. */
  readonly order: readonly number[];
  /** Per entry of {@link order}: where in the old content it is inserted. */
  readonly at: readonly number[];
  /** Bytes the new entries add. */
  readonly added: number;
}

/**
 * Checks the old subfolder's entries (see EntryCursor) and the new names, and finds where each
 * new entry goes; null when the direct build declines (see the module comment).
 */
function planMerge(subContent: Uint8Array, files: readonly { readonly name: string }[]): MergePlan | null {
  const steps = planMergeSteps(subContent, files);
  for (;;) {
    const step = steps.next();
    if (step.done === true) return step.value;
  }
}

/** Old entries {@link planMergeSteps} checks between two of its yields. */
const MERGE_STEP_ENTRIES = 16_384;

/**
 * {@link planMerge} as steps: yields after every {@link MERGE_STEP_ENTRIES} old entries (a long
 * run's `events/` has hundreds of thousands), returns the plan.
 */
function* planMergeSteps(subContent: Uint8Array, files: readonly { readonly name: string }[]): Generator<void, MergePlan | null> {
  if (files.length === 0) return null;
  const names: Buffer[] = [];
  for (const file of files) {
    const name = Buffer.from(file.name, "latin1");
    if (name.length !== file.name.length || !plainName(name, 0, name.length)) return null;
    names.push(name);
  }
  const order = files.length === 1 ? [0] : files.map((_, i) => i).sort((x, y) => compareNames(names[x] as Buffer, 0, (names[x] as Buffer).length, false, names[y] as Buffer, 0, (names[y] as Buffer).length, false));
  let added = 0;
  for (let k = 0; k < order.length; k++) {
    const name = names[order[k] as number] as Buffer;
    if (k > 0) {
      const prev = names[order[k - 1] as number] as Buffer;
      if (compareNames(prev, 0, prev.length, false, name, 0, name.length, false) === 0) return null;
    }
    added += BLOB_PREFIX.length + name.length + 1 + OID_BYTES;
  }
  // Each new name goes before the first old entry that sorts after it; the old entries are
  // checked on the way.
  const at: number[] = [];
  let k = 0;
  const cursor = new EntryCursor(subContent);
  let walked = 0;
  for (let step = cursor.step(); step !== 0; step = cursor.step()) {
    if (step < 0) return null;
    if (++walked === MERGE_STEP_ENTRIES) {
      walked = 0;
      yield;
    }
    while (k < order.length) {
      const name = names[order[k] as number] as Buffer;
      // A new name equal to an old one (as a file or as a folder): declined, as the edit would replace it.
      if (sameBytes(subContent, cursor.nameFrom, cursor.nameTo, name)) return null;
      if (compareNames(name, 0, name.length, false, subContent, cursor.nameFrom, cursor.nameTo, cursor.tree) > 0) break;
      at.push(cursor.at);
      k += 1;
    }
  }
  while (at.length < order.length) at.push(subContent.length);
  return { names, order, at, added };
}

/**
 * Writes the subfolder `subContent` with the entries of `plan` merged in at `out[outAt…]`; file
 * `i`'s oid is the 20 bytes at `oids[rows[i] * 20]`.
 * @returns where the written content ends
 */
function writeMerge(out: Buffer, outAt: number, subContent: Uint8Array, plan: MergePlan, oids: Buffer, rows: readonly number[]): number {
  let at = outAt;
  let copied = 0;
  for (let k = 0; k < plan.order.length; k++) {
    const from = plan.at[k] as number;
    if (from > copied) at += copyBytes(subContent, copied, from, out, at);
    copied = from;
    const file = plan.order[k] as number;
    at += BLOB_PREFIX.copy(out, at);
    at += (plan.names[file] as Buffer).copy(out, at);
    out[at++] = 0;
    const row = rows[file] as number;
    at += copyBytes(oids, row * OID_BYTES, row * OID_BYTES + OID_BYTES, out, at);
  }
  if (subContent.length > copied) at += copyBytes(subContent, copied, subContent.length, out, at);
  return at;
}

/**
 * {@link appendToSubfolder} for a clean folder whose subfolder's oid is at `oidAt` (known:
 * see {@link onlySubfolder}).
 */
function appendAt(folder: Uint8Array, oidAt: number, subContent: Uint8Array, files: readonly AppendedFile[]): AppendedFolders | null {
  for (const file of files) if (!isOid(file.oid)) return null;
  const plan = planMerge(subContent, files);
  if (plan === null) return null;
  const { whole: subWhole, head } = mergedSubfolder(subContent, files, plan);
  const subObject: GitObject = { oid: sha1Hex(subWhole), type: "tree", content: subWhole.subarray(head) };
  return { folder: withSubfolderOid(folder, oidAt, subObject.oid), sub: subObject };
}

/**
 * The subfolder's new object bytes, git header first (`tree <length>\0`), with `files` merged
 * in by `plan`. @returns the bytes and where the content starts (after the header)
 */
function mergedSubfolder(subContent: Uint8Array, files: readonly AppendedFile[], plan: MergePlan): { whole: Buffer; head: number } {
  const subLength = subContent.length + plan.added;
  const subHead = `tree ${subLength}\0`;
  const whole = Buffer.allocUnsafe(subHead.length + subLength);
  const head = whole.write(subHead, 0, "latin1");
  const oids = Buffer.from(files.map((f) => f.oid).join(""), "hex");
  writeMerge(whole, head, subContent, plan, oids, files.map((_, i) => i));
  return { whole, head };
}

/** A subfolder at least this big (bytes) is appended to in steps when the caller gives a pause. */
export const GENTLE_SUB_BYTES = 256 * 1_024;
/** Bytes hashed or summed between two pauses of {@link appendAtGently}. */
const GENTLE_SLICE_BYTES = 1_024 * 1_024;

/**
 * {@link appendAt} that awaits `pause` between steps (the entries' check, the hashing), for a
 * big subfolder. Same objects. The subfolder's Adler-32, which the pack writer stores its bytes
 * under, is summed here in steps too and remembered (rememberAdler32).
 */
async function appendAtGently(folder: Uint8Array, oidAt: number, subContent: Uint8Array, files: readonly AppendedFile[], pause: () => Promise<void>): Promise<AppendedFolders | null> {
  for (const file of files) if (!isOid(file.oid)) return null;
  const steps = planMergeSteps(subContent, files);
  let step = steps.next();
  while (step.done !== true) {
    await pause();
    step = steps.next();
  }
  const plan = step.value;
  if (plan === null) return null;
  const { whole: subWhole, head } = mergedSubfolder(subContent, files, plan);
  await pause();
  const hash = createHash("sha1");
  for (let at = 0; at < subWhole.length; at += GENTLE_SLICE_BYTES) {
    hash.update(subWhole.subarray(at, Math.min(subWhole.length, at + GENTLE_SLICE_BYTES)));
    await pause();
  }
  const content = subWhole.subarray(head);
  let sum = 1;
  for (let at = 0; at < content.length; at += GENTLE_SLICE_BYTES) {
    sum = adler32(content.subarray(at, Math.min(content.length, at + GENTLE_SLICE_BYTES)), sum);
    await pause();
  }
  rememberAdler32(content, sum);
  const subObject: GitObject = { oid: hash.digest("hex"), type: "tree", content };
  return { folder: withSubfolderOid(folder, oidAt, subObject.oid), sub: subObject };
}

/** The folder object: the same bytes with the subfolder's oid (at `oidAt`) replaced by `subOid`. */
function withSubfolderOid(folder: Uint8Array, oidAt: number, subOid: string): GitObject {
  const folderHead = `tree ${folder.length}\0`;
  const folderWhole = Buffer.allocUnsafe(folderHead.length + folder.length);
  const folderAt = folderWhole.write(folderHead, 0, "latin1");
  folderWhole.set(folder, folderAt);
  folderWhole.write(subOid, folderAt + oidAt, "hex");
  return { oid: sha1Hex(folderWhole), type: "tree", content: folderWhole.subarray(folderAt) };
}

/** 40 lowercase hex digits (what every oid here is; checked without a regular expression per file). */
function isOid(oid: string): boolean {
  if (oid.length !== 40) return false;
  for (let i = 0; i < 40; i++) {
    const c = oid.charCodeAt(i);
    if (!((c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66))) return false;
  }
  return true;
}

function sameBytes(content: Uint8Array, from: number, to: number, name: Buffer): boolean {
  if (to - from !== name.length) return false;
  for (let i = 0; i < name.length; i++) if (content[from + i] !== name[i]) return false;
  return true;
}

/** Where {@link planAppends} reads the folders it edits. */
export interface AppendSource {
  /** A parsed tree (the folders above the appended ones: `runs/`, the root). */
  readTree(oid: Oid): Promise<ParsedTree>;
  /** An object's stored bytes, synchronously when at hand. */
  readRaw(oid: Oid): GitObject | Promise<GitObject>;
}

/** What {@link planAppends} made of a write's appends. */
export interface AppendPlan {
  /** Folder puts for the tree edit (TreeEdits.puts with `within`). */
  readonly folders: { readonly path: readonly string[]; readonly oid: Oid; readonly within: readonly PathChange[]; readonly at?: EntryPosition }[];
  /**
   * The new blobs and trees to store that were not built into pack entries (all of them when no
   * PackedObjects was given; two runs can get the same bytes: the pack writer stores an object once).
   */
  readonly objects: GitObject[];
  /**
   * Per append, in the order given: the new oids of the folder and subfolder built, or undefined
   * for an append declined (its files are in `puts`). By position, so nobody builds a path string
   * or hashes one to find them.
   */
  readonly built: (AppendedFolder | undefined)[];
  /** The appends it declined, as plain puts (path and bytes), for the generic edit. */
  readonly puts: [string, Uint8Array][];
  /**
   * The blob changes of the folders built into pack entries (whose `within` is
   * DEFERRED_CHANGES), made when called (see TreeEdits.deferredChanges); undefined when none was.
   */
  deferredChanges?: () => PathChange[];
}

/**
 * Builds the folders of `appends` against the tree `rootOid` (see the module comment); what it
 * declines (a folder or subfolder missing or not clean, a bad name) comes back as plain puts,
 * so the caller's generic edit applies or refuses those as it would any put.
 * @param pause awaited every few folders, and between steps inside a big subfolder (see the
 *   module comment; a caller's time slicer); default none
 * @param packed when given, each built run's objects (its new files, subfolder and folder) are
 *   written into it as pack entries instead of listed in `objects` (see packed-objects.ts); a
 *   run with a file over {@link PACKED_BLOB_MAX_BYTES} or a folder over {@link PACKED_MAX_BYTES}
 *   is built as objects all the same. Same oids either way.
 * @throws `path_violation` for a folder path the store refuses; `object_corrupt` from reads
 */
export async function planAppends(source: AppendSource, rootOid: Oid | null, appends: readonly FolderAppend[], pause?: () => Promise<void>, packed?: PackedObjects): Promise<AppendPlan> {
  const plan: AppendPlan = { folders: [], objects: [], built: new Array<AppendedFolder | undefined>(appends.length).fill(undefined), puts: [] };
  /** Parent folders by path ("" the root), read once per write: every run's is `runs/`. */
  const parents = new Map<string, ParsedTree | null>();
  // Below, everything is synchronous when the objects are in memory (a fire commit's usual
  // case): no promise per folder. No closures are made per call either: the loop's optimised
  // code calls the same function each commit (a new closure each time was a "wrong call
  // target" that undid it, design notes §58).
  // The last parent folder seen (every fire's is `runs`): a folder below it is checked as one
  // more name, without splitting and checking its whole path again.
  let lastParent: string | null = null;
  let lastParentSegments: readonly string[] = [];
  let lastParentTree: ParsedTree | null = null;
  // The appends built into `packed`, in order, and their files' blob oids one after another:
  // what their changes are made of, if asked (the appends' names only are kept for it).
  const packedAppends: FolderAppend[] = [];
  // Rows, not oids: small integers, which an empty `[]` is made for (pushing strings into a new
  // one each commit undid the optimised packOne, "wrong map", design notes §58).
  const blobRows: number[] = [];
  // The last subfolder name checked for the direct build (every fire's is `events`).
  let lastSub: string | null = null;
  let lastSubPlain = false;
  // Where the last append's folder was found in its parent (see TreeCursor).
  let found: TreeCursor | null = null;
  for (let index = 0; index < appends.length; index++) {
    const append = appends[index] as FolderAppend;
    if (pause !== undefined && index % 64 === 63) await pause();
    const folderPath = append.folder;
    let segments: string[];
    let parent: ParsedTree | null;
    const cut = lastParent === null ? -1 : lastParent.length;
    if (lastParent !== null && folderPath.length > cut + 1 && folderPath.charCodeAt(cut) === SLASH && folderPath.startsWith(lastParent) && folderPath.indexOf("/", cut + 1) < 0) {
      const name = folderPath.slice(cut + 1);
      assertEntryName(name, folderPath);
      segments = [...lastParentSegments, name];
      parent = lastParentTree;
    } else {
      segments = parseRepoPath(folderPath);
      parent = parents.get(folderPath.slice(0, Math.max(0, folderPath.lastIndexOf("/")))) ?? (await parentTree(source, rootOid, parents, segments, segments.length - 1));
      if (segments.length > 1) {
        lastParentSegments = segments.slice(0, -1);
        lastParent = lastParentSegments.join("/");
        lastParentTree = parent;
      }
    }
    const last = segments.length - 1;
    // Found once: the tree edit of the folder above takes the position instead of searching again.
    // Appends come in name order (a fire commit's runs are sorted): each is found from where the
    // one before it was, in a few comparisons instead of a search of the whole folder.
    if (parent !== null && found?.tree !== parent) found = new TreeCursor(parent);
    const position = parent === null ? -1 : (found as TreeCursor).indexOf(segments[last] as string);
    const entry = position < 0 ? undefined : (found as TreeCursor).entry;
    if (entry?.type !== "tree" || append.files.length === 0) {
      declined(plan, append);
      continue;
    }
    if (append.sub !== lastSub) {
      lastSub = append.sub;
      lastSubPlain = plainString(append.sub);
    }
    // A folder that holds only the subfolder the caller named is not read: its bytes follow
    // from that oid (checked: they must hash to the folder's oid). Its one entry's oid is then
    // its last 20 bytes.
    let folderObject = append.subOid === undefined || !lastSubPlain ? null : onlySubfolder(append.sub, append.subOid, entry.oid);
    const fromScratch = folderObject !== null;
    let subOid: Oid | null;
    let oidAt = -1;
    if (folderObject !== null) {
      subOid = append.subOid as Oid;
      oidAt = folderObject.content.length - OID_BYTES;
    } else {
      const folder = source.readRaw(entry.oid);
      folderObject = folder instanceof Promise ? await folder : folder;
      oidAt = folderObject.type === "tree" ? subEntry(folderObject.content, append.sub) : -1;
      subOid = oidAt < 0 ? null : Buffer.from(folderObject.content.buffer, folderObject.content.byteOffset, folderObject.content.byteLength).toString("hex", oidAt, oidAt + OID_BYTES);
    }
    const sub = subOid === null ? null : source.readRaw(subOid);
    // A folder laid out by onlySubfolder is a view of its scratch buffer: kept across an await.
    if (sub instanceof Promise && fromScratch) folderObject = { ...folderObject, content: Buffer.from(folderObject.content) };
    const subObject = sub instanceof Promise ? await sub : sub;
    if (packed !== undefined && subObject !== null && subObject.type === "tree") {
      const built = packAppend(packed, append, folderObject.content, oidAt, subObject.content, blobRows);
      if (built === null) {
        declined(plan, append);
        continue;
      }
      if (built !== undefined) {
        // Its changes are listed only if asked (see AppendPlan.deferredChanges).
        plan.folders.push((parent as ParsedTree).sorted ? { path: segments, oid: built.folder, within: DEFERRED_CHANGES, at: { tree: (parent as ParsedTree).oid, index: position } } : { path: segments, oid: built.folder, within: DEFERRED_CHANGES });
        // The pair packAppend made, as it is (same shape): no second object per run.
        plan.built[index] = built;
        packedAppends.push(append);
        continue;
      }
    }
    const blobs: GitObject[] = [];
    const files: AppendedFile[] = [];
    for (const file of append.files) {
      const blob = hashObject("blob", file.content);
      blobs.push(blob);
      files.push({ name: file.name, oid: blob.oid });
    }
    let built: AppendedFolders | null = null;
    if (subObject !== null && subObject.type === "tree" && oidAt >= 0) {
      if (pause !== undefined && subObject.content.length >= GENTLE_SUB_BYTES) {
        // Awaited in steps: a folder laid out by onlySubfolder is copied out of its scratch buffer first.
        const folderBytes = fromScratch ? Buffer.from(folderObject.content) : folderObject.content;
        built = await appendAtGently(folderBytes, oidAt, subObject.content, files, pause);
      } else built = appendAt(folderObject.content, oidAt, subObject.content, files);
    }
    if (built === null) {
      declined(plan, append);
      continue;
    }
    const subPath = `${append.folder}/${append.sub}`;
    const within: PathChange[] = [];
    for (let i = 0; i < blobs.length; i++) {
      const blob = blobs[i] as GitObject;
      within.push({ path: `${subPath}/${(append.files[i] as { name: string }).name}`, oid: blob.oid, status: "added" });
      plan.objects.push(blob);
    }
    plan.objects.push(built.sub, built.folder);
    plan.folders.push((parent as ParsedTree).sorted ? { path: segments, oid: built.folder.oid, within, at: { tree: (parent as ParsedTree).oid, index: position } } : { path: segments, oid: built.folder.oid, within });
    plan.built[index] = { folder: built.folder.oid, sub: built.sub.oid, last: (files[files.length - 1] as AppendedFile).oid };
  }
  if (packedAppends.length > 0) withDeferredChanges(plan, packedAppends, blobRows, packed as PackedObjects);
  return plan;
}

/**
 * Sets `plan.deferredChanges`. A function of its own: V8 may optimise planAppends during the
 * first commit's loop (resumed after a pause), before this store at its end ever ran; a store
 * without feedback there undid that code at the end of each such commit (design notes §67).
 */
function withDeferredChanges(plan: AppendPlan, packedAppends: readonly FolderAppend[], blobRows: readonly number[], packed: PackedObjects): void {
  plan.deferredChanges = deferredChangesOf(packedAppends, blobRows, packed);
}

/** The tree at the path of `segments`' first `upto` names, or null when there is none; read once per write and kept in `parents` (by path, "" the root). */
async function parentTree(source: AppendSource, rootOid: Oid | null, parents: Map<string, ParsedTree | null>, segments: readonly string[], upto: number): Promise<ParsedTree | null> {
  const key = segments.slice(0, upto).join("/");
  let tree = parents.get(key);
  if (tree !== undefined) return tree;
  if (upto === 0) tree = rootOid === null ? null : await source.readTree(rootOid);
  else {
    const above = await parentTree(source, rootOid, parents, segments, upto - 1);
    const entry = above === null ? undefined : findEntry(above, segments[upto - 1] as string);
    tree = entry?.type === "tree" ? await source.readTree(entry.oid) : null;
  }
  parents.set(key, tree);
  return tree;
}

/** An append planAppends declines, as plain puts in `plan` (path and bytes). */
function declined(plan: AppendPlan, append: FolderAppend): void {
  for (const file of append.files) plan.puts.push([`${append.folder}/${append.sub}/${file.name}`, file.content]);
}

/**
 * The blob changes of appends built into pack entries (`blobRows`: their files' rows in
 * `packed`, in order).
 */
function deferredChangesOf(appends: readonly FolderAppend[], blobRows: readonly number[], packed: PackedObjects): () => PathChange[] {
  // Names and binary oids only: the files' bytes (and the pack's chunks) are not kept alive by a
  // list nobody may ask for. The rows are final: later objects only add rows (a growth copies).
  const oids = packed.oids;
  const folders: string[] = [];
  const subs: string[] = [];
  const counts: number[] = [];
  const names: string[] = [];
  // Indexed loops: a for-of makes an iterator result per step until V8 optimises it.
  for (let k = 0; k < appends.length; k++) {
    const append = appends[k] as FolderAppend;
    folders.push(append.folder);
    subs.push(append.sub);
    counts.push(append.files.length);
    for (let i = 0; i < append.files.length; i++) names.push((append.files[i] as { readonly name: string }).name);
  }
  return () => {
    const changes: PathChange[] = [];
    let j = 0;
    for (let k = 0; k < folders.length; k++) {
      const prefix = `${folders[k] as string}/${subs[k] as string}/`;
      for (let i = 0; i < (counts[k] as number); i++, j++) {
        const row = blobRows[j] as number;
        changes.push({ path: prefix + (names[j] as string), oid: oids.toString("hex", row * OID_BYTES, row * OID_BYTES + OID_BYTES), status: "added" });
      }
    }
    return changes;
  };
}

/**
 * One run's append written into `packed` as pack entries: each new file, the subfolder with
 * their entries merged in, the folder with the subfolder's new oid (`oidAt`: where the folder's
 * bytes hold it). Null when the direct build declines (see the module comment); undefined when
 * an object is too big for an entry here (the caller builds the run as objects).
 */
function packAppend(packed: PackedObjects, append: FolderAppend, folder: Uint8Array, oidAt: number, subContent: Uint8Array, blobRows: number[]): AppendedFolder | null | undefined {
  if (oidAt < 0) return null;
  if (append.files.length === 1) return packOne(packed, append, folder, oidAt, subContent, blobRows);
  const plan = planMerge(subContent, append.files);
  if (plan === null) return null;
  const subLength = subContent.length + plan.added;
  if (subLength > PACKED_MAX_BYTES || folder.length > PACKED_MAX_BYTES) return undefined;
  for (const file of append.files) if (file.content.byteLength > PACKED_BLOB_MAX_BYTES) return undefined;
  const rows: number[] = [];
  for (const file of append.files) {
    const at = packed.begin(file.content.byteLength);
    packed.buffer.set(file.content, at);
    const row = packed.finish(false);
    rows.push(row);
    blobRows.push(row);
  }
  const last = packed.lastOid;
  // begin() first: it may move to a new chunk, which `buffer` then names.
  const subAt = packed.begin(subLength);
  writeMerge(packed.buffer, subAt, subContent, plan, packed.oids, rows);
  const subRow = packed.finish(true);
  const sub = packed.lastOid;
  const at = packed.begin(folder.length);
  const out = packed.buffer;
  out.set(folder, at);
  copyBytes(packed.oids, subRow * OID_BYTES, subRow * OID_BYTES + OID_BYTES, out, at + oidAt);
  packed.finish(true);
  return { folder: packed.lastOid, sub, last };
}

/**
 * {@link packAppend} of one file (a fire commit's usual run: one event), with no names, order
 * or offsets arrays: the name is checked as a string and its place found in the same pass that
 * checks the old subfolder.
 */
function packOne(packed: PackedObjects, append: FolderAppend, folder: Uint8Array, oidAt: number, subContent: Uint8Array, blobRows: number[]): AppendedFolder | null | undefined {
  const file = append.files[0] as { readonly name: string; readonly content: Uint8Array };
  const name = file.name;
  if (!plainString(name)) return null;
  // Where the new entry goes: before the first old entry that sorts after it.
  let insertAt = -1;
  const cursor = new EntryCursor(subContent);
  for (let step = cursor.step(); step !== 0; step = cursor.step()) {
    if (step < 0) return null;
    if (insertAt >= 0) continue;
    const order = compareWithString(name, subContent, cursor.nameFrom, cursor.nameTo, cursor.tree);
    // A name already present, as a file or as a folder (a folder compares as its name and "/").
    if (order === 0 || (cursor.tree && compareWithString(name, subContent, cursor.nameFrom, cursor.nameTo, false) === 0)) return null;
    if (order < 0) insertAt = cursor.at;
  }
  if (insertAt < 0) insertAt = subContent.length;
  const entryLength = BLOB_PREFIX.length + name.length + 1 + OID_BYTES;
  const subLength = subContent.length + entryLength;
  if (subLength > PACKED_MAX_BYTES || folder.length > PACKED_MAX_BYTES || file.content.byteLength > PACKED_BLOB_MAX_BYTES) return undefined;
  let at = packed.begin(file.content.byteLength);
  packed.buffer.set(file.content, at);
  const row = packed.finish(false);
  const last = packed.lastOid;
  blobRows.push(row);
  at = packed.begin(subLength);
  let out = packed.buffer;
  if (insertAt > 0) copyBytes(subContent, 0, insertAt, out, at);
  at += insertAt;
  at += copyBytes(BLOB_PREFIX, 0, BLOB_PREFIX.length, out, at);
  // ASCII (plainString above): a byte a char.
  at += writeAsciiChars(name, out, at);
  out[at++] = 0;
  at += copyBytes(packed.oids, row * OID_BYTES, row * OID_BYTES + OID_BYTES, out, at);
  if (subContent.length > insertAt) copyBytes(subContent, insertAt, subContent.length, out, at);
  const subRow = packed.finish(true);
  const sub = packed.lastOid;
  at = packed.begin(folder.length);
  out = packed.buffer;
  out.set(folder, at);
  copyBytes(packed.oids, subRow * OID_BYTES, subRow * OID_BYTES + OID_BYTES, out, at + oidAt);
  packed.finish(true);
  return { folder: packed.lastOid, sub, last };
}

/** {@link compareNames} of a file name given as a string of plain ASCII against an entry's raw name. */
function compareWithString(name: string, b: Uint8Array, from: number, to: number, tree: boolean): number {
  const lb = to - from;
  const len = Math.min(name.length, lb);
  for (let i = 0; i < len; i++) {
    const d = name.charCodeAt(i) - (b[from + i] as number);
    if (d !== 0) return d;
  }
  const x = name.length > len ? name.charCodeAt(len) : 0;
  const y = lb > len ? (b[from + len] as number) : tree ? SLASH : 0;
  return x - y;
}

/**
 * The last folder shape {@link onlySubfolder} laid out (a fire commit asks for the same `sub`,
 * `events`, once per run): header, mode and name stay, only the oid is written per call.
 */
let onlyScratch: { readonly sub: string; readonly whole: Buffer; readonly content: Buffer; readonly oidAt: number } | null = null;

/**
 * The tree holding nothing but the folder `sub` (oid `subOid`), when its oid is `folderOid`; else
 * null. Its content is a view of a buffer the next call reuses: a caller that awaits before it is
 * done with it copies it first.
 */
function onlySubfolder(sub: string, subOid: Oid, folderOid: Oid): GitObject | null {
  if (subOid.length !== 40) return null;
  let scratch = onlyScratch;
  if (scratch === null || scratch.sub !== sub) {
    const length = TREE_MODE_BYTES.length + 1 + sub.length + 1 + OID_BYTES;
    const head = `tree ${length}\0`;
    const whole = Buffer.alloc(head.length + length);
    let at = whole.write(head, 0, "latin1");
    at += TREE_MODE_BYTES.copy(whole, at);
    whole[at++] = SPACE;
    at += whole.write(sub, at, "latin1");
    whole[at++] = 0;
    scratch = { sub, whole, content: whole.subarray(head.length), oidAt: at };
    onlyScratch = scratch;
  }
  // The oid's check (40 lowercase hex digits) and its bytes in one pass.
  if (!writeHexOid(subOid, scratch.whole, scratch.oidAt)) return null;
  return sha1Hex(scratch.whole) === folderOid ? { oid: folderOid, type: "tree", content: scratch.content } : null;
}

/** A name the direct build takes as it is (see {@link plainName}), given as a string. */
function plainString(name: string): boolean {
  const n = name.length;
  if (n === 0 || name === "." || name === "..") return false;
  for (let i = 0; i < n; i++) {
    const c = name.charCodeAt(i);
    if (c < 0x20 || c > 0x7e || c === SLASH) return false;
    if ((c | 0x20) === 0x67 && i + 2 < n && (name.charCodeAt(i + 1) | 0x20) === 0x69 && (name.charCodeAt(i + 2) | 0x20) === 0x74) return false;
  }
  return true;
}

/** node's one-shot `crypto.hash` (node ≥ 20.12), or undefined on an older node. */
const oneShotHash = (nodeCrypto as { hash?: (algorithm: string, data: Uint8Array, encoding: "hex") => string }).hash;

/** SHA-1 of header and content, already in one buffer. */
function sha1Hex(whole: Buffer): Oid {
  return oneShotHash !== undefined ? oneShotHash("sha1", whole, "hex") : createHash("sha1").update(whole).digest("hex");
}
