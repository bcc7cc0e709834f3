/**
 * Git tree objects: parsing, lookup and building; editing by splicing is tree-splice.ts.
 *
 * Git's tree order (base_name_compare in git's tree.c / fsck.c): entries sorted by name bytes,
 * where a tree's name compares as if it ended in "/". Modes are written without zero padding
 * ("40000" for trees, "100644" for blobs), as `git fsck --strict` requires.
 *
 * A big folder (runs/ with 10 000 entries) is rewritten on every commit that touches one run,
 * so editing never re-serialises unchanged entries: the new content is the old content with
 * the changed entries spliced in, and lookups are binary searches. Parsed entries are kept in
 * chunks of about {@link ENTRY_CHUNK}; an edit copies only the chunks it touches and shares the
 * others with the version it was made from. One array of 10 000 entries per version was most of
 * what a busy host allocated (~160 KB per commit, kept by the tree cache until evicted, so all
 * of it old-generation garbage: a full GC every ~0.8 s at 150 commits/s, each stalling the fire
 * loop 20–50 ms); shared chunks make that ~5 KB, and let a diff skip a shared chunk whole.
 */
import { WorkflowHostError } from "../errors.js";
import { codePointRank, compareCodePoints, type GitObject, hashObject } from "./git-object.js";
import { adler32, adler32Combine, knownAdler32, rememberAdler32 } from "./adler32.js";
import type { DeltaWriter } from "./git-delta.js";
import { countCopy, isCurrent, type OwnedContent, retire } from "./tree-buffers.js";
import { isRefusedEntryName } from "./repo-path.js";
import { treeOidBeside } from "./tree-hasher.js";
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
  /** Number of entries. */
  readonly count: number;
  /**
   * Entries in the order stored (git's tree order for every tree git or the store wrote), in
   * non-empty chunks; a chunk array is never changed and may be shared with other versions.
   */
  readonly chunks: readonly (readonly TreeEntry[])[];
  /** Index of the first entry of each chunk, then {@link count}. */
  readonly chunkStarts: Uint32Array;
  /**
   * All entries as one array, built on first use. Prefer {@link entryAt}, {@link findEntry} and
   * {@link forEachEntry}: this copies a pointer per entry.
   */
  readonly entries: readonly TreeEntry[];
  /**
   * The object's content. A version whose bytes the write engine owns (tree-buffers.ts) hands
   * out a copy here, made on the first ask: the owned bytes are reused once the version is old.
   */
  readonly content: Uint8Array;
  /** Byte offset of each entry in `content`, then `content.byteLength`. */
  readonly offsets: Uint32Array;
  /** False for a tree not in git order (a broken tool wrote it): lookups use {@link nameIndex}. */
  readonly sorted: boolean;
  /**
   * Set on a big tree made by {@link editTree}: a git delta that turns the tree it was edited
   * from (`oid`) into this one, written from the splice itself (no search), so a pack merge can
   * store this version as a few hundred bytes without diffing 400 KB folders.
   */
  readonly deltaBase?: DeltaBase | undefined;
  /** Name → entry, built on first lookup in an unsorted tree. */
  nameIndex?: Map<string, number>;
  /** Blob and tree entries sorted by name, built on first use (see {@link dirEntriesOf}). */
  dirEntries?: readonly DirEntry[];
  /**
   * Names of entries `git fsck` refuses (`..`, `.git`, …; see `isRefusedEntryName`), found when
   * the tree was parsed: a tree pushed by hand. An edit drops them (see tree-edit.ts), so they
   * are not carried into the trees the store writes. Absent when there are none.
   */
  readonly refusedNames?: readonly string[];
  /**
   * True when some name did not decode as UTF-8 (it holds U+FFFD): the content is then not what
   * its entries would be written as, so no version of it is kept in owned bytes (see
   * tree-buffers.ts), whose content may have to be written again from the entries.
   */
  readonly lossy?: boolean;
}

/** A delta from the tree `oid` (see {@link ParsedTree.deltaBase}). */
export interface DeltaBase {
  readonly oid: Oid;
  readonly delta: Buffer;
}

/**
 * Trees with at least this many entries are big: cached per repository as recent versions
 * (object-store.ts), and their edited versions kept in owned bytes (tree-buffers.ts).
 */
export const BIG_TREE_ENTRIES = 2_048;

/** Edited trees whose base is at least this big carry a {@link DeltaBase}. */
export const DELTA_BASE_MIN_BYTES = 16 * 1024;

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

/** `{mode}` for an entry that is not a plain file or a folder (100755, 120000, 160000), else nothing. */
export function unusualMode(entry: Pick<TreeEntry, "type" | "mode">): { mode?: string } {
  if (entry.type === "commit") return { mode: GITLINK_MODE };
  return entry.type === "blob" && entry.mode !== "100644" ? { mode: entry.mode } : {};
}

/** A gitlink's mode (a submodule's commit): never a file to read. */
export const GITLINK_MODE = "160000";

/**
 * Whether an entry with this mode (as in {@link DirEntry.mode}: absent for 100644) holds a
 * regular file's bytes: a plain or executable file. Symlinks and gitlinks do not.
 */
export function isRegularFileMode(mode: string | undefined): boolean {
  // 100644 and 100755, and the group-writable 100664 old gits wrote.
  return mode === undefined || /^100[0-7]{3}$/.test(mode);
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

/** Bytes of one entry in a tree's content. */
export function entrySize(entry: TreeEntry): number {
  return entry.mode.length + Buffer.byteLength(entry.name, "utf8") + 22;
}

/** Writes one entry at `at`; returns where the next one goes. */
export function writeEntry(out: Buffer, at: number, entry: TreeEntry): number {
  let pos = at + out.write(entry.mode, at, "latin1");
  out[pos++] = 0x20;
  pos += out.write(entry.name, pos, "utf8");
  out[pos++] = 0;
  pos += out.write(entry.oid, pos, "hex");
  return pos;
}

/** Entries per chunk of a parsed or built tree; an edited chunk past twice this is split. */
export const ENTRY_CHUNK = 128;

class Tree implements ParsedTree {
  readonly count: number;
  readonly chunkStarts: Uint32Array;
  refusedNames?: readonly string[];
  nameIndex?: Map<string, number>;
  dirEntries?: readonly DirEntry[];
  lossy?: boolean;
  #entries: readonly TreeEntry[] | undefined;
  #content: Uint8Array;
  /** The owned bytes #content is a view of (tree-buffers.ts), if any. */
  readonly #owned: OwnedContent | undefined;
  /** An owned version's content as handed out: a copy, made on the first ask. */
  #copy: Uint8Array | undefined;

  constructor(
    readonly oid: Oid,
    readonly chunks: readonly (readonly TreeEntry[])[],
    content: Uint8Array,
    readonly offsets: Uint32Array,
    readonly sorted: boolean,
    readonly deltaBase?: DeltaBase,
    owned?: OwnedContent,
  ) {
    this.#content = content;
    this.#owned = owned;
    const starts = new Uint32Array(chunks.length + 1);
    let n = 0;
    for (let c = 0; c < chunks.length; c++) {
      starts[c] = n;
      n += (chunks[c] as readonly TreeEntry[]).length;
    }
    starts[chunks.length] = n;
    this.chunkStarts = starts;
    this.count = n;
  }

  get entries(): readonly TreeEntry[] {
    this.#entries ??= this.chunks.flat();
    return this.#entries;
  }

  get content(): Uint8Array {
    const owned = this.#owned;
    if (owned === undefined) return this.#content;
    if (this.#copy === undefined) {
      const current = isCurrent(owned);
      countCopy(!current);
      this.#copy = current ? Buffer.from(owned.view) : contentFromEntries(this, owned.view.length);
    }
    return this.#copy;
  }

  /** The owned bytes while they hold this version, else undefined (see {@link editableContent}). */
  static ownedOf(tree: ParsedTree): OwnedContent | undefined {
    if (!(tree instanceof Tree)) return undefined;
    const owned = tree.#owned;
    return owned !== undefined && isCurrent(owned) ? owned : undefined;
  }
}

/**
 * A version's content written again from its entries (its owned bytes were reused): the same
 * bytes, as every owned version is made from a tree whose names decoded exactly (not
 * {@link ParsedTree.lossy}); checked against the oid all the same.
 * @throws `object_corrupt` when the bytes written are not the tree's (never expected)
 */
function contentFromEntries(tree: Tree, size: number): Buffer {
  const out = Buffer.allocUnsafe(size);
  let at = 0;
  for (const chunk of tree.chunks) for (const entry of chunk) at = writeEntry(out, at, entry);
  if (at !== size || hashObject("tree", out).oid !== tree.oid) throw corrupt(tree.oid, "its entries do not write its content again (owned bytes reused)");
  return out;
}

/**
 * The bytes an edit of `tree` copies from: the owned bytes while they hold this version (no copy
 * made), else {@link ParsedTree.content}. Only for a read that ends before the caller returns
 * or awaits (tree-splice.ts): owned bytes may be reused afterwards.
 */
export function editableContent(tree: ParsedTree): Uint8Array {
  return Tree.ownedOf(tree)?.view ?? tree.content;
}

/** The owned bytes of `tree` while they hold it (see tree-buffers.ts), else undefined. */
export function ownedContentOf(tree: ParsedTree): OwnedContent | undefined {
  return Tree.ownedOf(tree);
}

/** The object store keeps `tree` no longer among its recent big trees: its owned bytes may be reused once written. */
export function retireTree(tree: ParsedTree): void {
  const owned = Tree.ownedOf(tree);
  if (owned !== undefined) retire(owned);
}

/** Appends `entries` to `chunks` in pieces of {@link ENTRY_CHUNK} (none when empty). */
export function pushChunks(chunks: (readonly TreeEntry[])[], entries: readonly TreeEntry[]): void {
  if (entries.length === 0) return;
  if (entries.length <= 2 * ENTRY_CHUNK) {
    chunks.push(entries);
    return;
  }
  for (let i = 0; i < entries.length; i += ENTRY_CHUNK) chunks.push(entries.slice(i, i + ENTRY_CHUNK));
}

/** Adler-32 of each chunk's bytes (a function of its entries: see {@link treeAdler32}). */
const chunkAdler = new WeakMap<readonly TreeEntry[], number>();

/**
 * Adler-32 of a tree's content from its chunks' checksums. A chunk array is never changed and
 * a version edited from another copies the bytes of the chunks it shares, so a chunk's checksum
 * holds in every tree that holds the chunk: only chunks an edit made are read.
 */
function treeAdler32(chunks: readonly (readonly TreeEntry[])[], content: Uint8Array, offsets: Uint32Array): number {
  let value = 1;
  let entry = 0;
  for (const chunk of chunks) {
    const from = offsets[entry] as number;
    entry += chunk.length;
    const to = offsets[entry] as number;
    let sum = chunkAdler.get(chunk);
    if (sum === undefined) {
      sum = adler32(content.subarray(from, to));
      chunkAdler.set(chunk, sum);
    }
    value = adler32Combine(value, sum, to - from);
  }
  return value;
}

/**
 * The Adler-32 of a big tree's content: the remembered one, else assembled from its chunks'
 * (and then remembered).
 */
export function contentAdler32(tree: ParsedTree): number {
  const content = editableContent(tree);
  const known = knownAdler32(content);
  if (known !== undefined) return known;
  const value = treeAdler32(tree.chunks, content, tree.offsets);
  rememberAdler32(content, value);
  return value;
}

/**
 * Work to run on the calling thread while a big tree's oid is hashed on another (tree-hasher.ts):
 * a commit's pack hashes the bytes before the tree's entry and the entry itself meanwhile
 * (design notes §81). `run` gets the tree's content once, for the first tree of at least
 * {@link BESIDE_MIN_BYTES} the edit finishes; it must not change it.
 */
export interface BigTreeBeside {
  run(content: Buffer): void;
}

/**
 * Trees from this size (1 MiB: a `runs/` folder of ~25,000 runs) are hashed beside
 * {@link BigTreeBeside} work; smaller ones on the calling thread. Below it, handing the bytes to
 * the other thread and waiting for its answer costs more than the hash: on a 2-core VM whose CPU
 * hashes SHA-1 at ~2 GB/s, a 10,000-run folder (370 KB) hashes in ~0.2 ms while the caller
 * waited ~0.6–0.8 ms a commit for the answer (the woken thread waits for a core; design notes
 * §98). A 100,000-run folder (3.8 MB, ~2–4 ms a hash) still gains the overlap.
 */
export const BESIDE_MIN_BYTES = 1024 * 1024;

/**
 * Hashes built content and wraps it as a {@link ParsedTree} (with its delta from `deltaFrom`, if
 * any). `adler`: the content's Adler-32 when the caller knows it (else a big tree's is assembled
 * from its chunks'). `owned`: the owned bytes `content` is the view of (tree-buffers.ts): the
 * tree then hands out copies, and the object (for the commit's pack write only) the view.
 * `lossy`: see {@link ParsedTree.lossy} (an edit of a lossy tree is lossy). `beside`: work to
 * overlap with a big tree's hash (see {@link BigTreeBeside}).
 */
export function finishTree(chunks: (readonly TreeEntry[])[], content: Buffer, offsets: Uint32Array, sorted: boolean, deltaFrom?: { oid: Oid; writer: DeltaWriter }, adler?: number, owned?: OwnedContent, lossy?: boolean, beside?: BigTreeBeside): { tree: ParsedTree; object: GitObject } {
  // A big folder's zlib checksum (the pack writer stores it) from its chunks': see adler32.ts.
  // Remembered before the oid is hashed: work done beside the hash may lay out its pack entry.
  if (content.length >= DELTA_BASE_MIN_BYTES) rememberAdler32(content, adler ?? treeAdler32(chunks, content, offsets));
  const object: GitObject = beside !== undefined && content.length >= BESIDE_MIN_BYTES ? { oid: treeOidBeside(content, () => beside.run(content)), type: "tree", content } : hashObject("tree", content);
  // Written out now (a copy): the delta's inserts are views of `content`, which may be reused.
  const deltaBase = deltaFrom === undefined ? undefined : { oid: deltaFrom.oid, delta: deltaFrom.writer.finish() };
  const tree = new Tree(object.oid, chunks, content, offsets, sorted, deltaBase, owned);
  if (lossy === true) tree.lossy = true;
  return { tree, object };
}

/** Entry `i` of the tree (stored order), or undefined past the end. */
export function entryAt(tree: ParsedTree, i: number): TreeEntry | undefined {
  if (i < 0 || i >= tree.count) return undefined;
  const c = chunkOf(tree, i);
  return (tree.chunks[c] as readonly TreeEntry[])[i - (tree.chunkStarts[c] as number)];
}

/** The chunk holding entry `i` (0 ≤ i < count). */
function chunkOf(tree: ParsedTree, i: number): number {
  const starts = tree.chunkStarts;
  let lo = 0;
  let hi = tree.chunks.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >>> 1;
    if ((starts[mid] as number) <= i) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/** Calls `visit` with each entry in stored order. */
export function forEachEntry(tree: ParsedTree, visit: (entry: TreeEntry) => void): void {
  for (const chunk of tree.chunks) for (const entry of chunk) visit(entry);
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
  const chunks: (readonly TreeEntry[])[] = [];
  pushChunks(chunks, entries.slice());
  return finishTree(chunks, content, offsets, true);
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
  const chunks: TreeEntry[][] = [];
  let chunk: TreeEntry[] = [];
  let previous: TreeEntry | undefined;
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
    if (previous !== undefined && compareTreeEntries(previous, entry) >= 0) sorted = false;
    previous = entry;
    if (chunk.length === ENTRY_CHUNK) {
      chunks.push(chunk);
      chunk = [];
    }
    chunk.push(entry);
    starts.push(at);
    at = nul + 21;
  }
  if (chunk.length > 0) chunks.push(chunk);
  starts.push(buf.length);
  const tree = new Tree(oid, chunks, buf, Uint32Array.from(starts), sorted);
  for (const c of chunks) {
    for (const entry of c) {
      // Cheap first test: every refused name is empty or holds ".", "/", NUL or "~".
      // U+FFFD too: a name that was not UTF-8 (see ParsedTree.lossy).
      if (entry.name.length > 0 && !/[./\0~\uFFFD]/.test(entry.name)) continue;
      if (entry.name.includes("\uFFFD")) tree.lossy = true;
      if (isRefusedEntryName(entry.name)) tree.refusedNames = [...(tree.refusedNames ?? []), entry.name];
    }
  }
  return tree;
}

/** Index of the first entry not before `probe` in git order (the tree must be sorted). */
export function lowerBound(tree: ParsedTree, probe: Pick<TreeEntry, "name" | "type">): number {
  const chunks = tree.chunks;
  // The first chunk whose last entry is not before the probe, then within it.
  let lo = 0;
  let hi = chunks.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const chunk = chunks[mid] as readonly TreeEntry[];
    if (compareTreeEntries(chunk[chunk.length - 1] as TreeEntry, probe) < 0) lo = mid + 1;
    else hi = mid;
  }
  if (lo === chunks.length) return tree.count;
  const chunk = chunks[lo] as readonly TreeEntry[];
  let a = 0;
  let b = chunk.length;
  while (a < b) {
    const mid = (a + b) >>> 1;
    if (compareTreeEntries(chunk[mid] as TreeEntry, probe) < 0) a = mid + 1;
    else b = mid;
  }
  return (tree.chunkStarts[lo] as number) + a;
}

const BLOB_FIRST = ["blob", "tree"] as const;
const TREE_FIRST = ["tree", "blob"] as const;

/** Index of the entry called `name` (whatever its type), or -1. */
export function indexOfEntry(tree: ParsedTree, name: string): number {
  if (!tree.sorted) {
    if (tree.nameIndex === undefined) tree.nameIndex = new Map(tree.entries.map((e, i) => [e.name, i]));
    return tree.nameIndex.get(name) ?? -1;
  }
  // A name sorts in one of two places, as a blob ("a") or as a tree ("a/"): look in both, first
  // as the kind the folder starts with (runs/ holds folders, events/ files: one search each).
  for (const type of entryAt(tree, 0)?.type === "tree" ? TREE_FIRST : BLOB_FIRST) {
    const i = lowerBound(tree, { name, type });
    if (entryAt(tree, i)?.name === name) return i;
  }
  return -1;
}

/**
 * Finds names in one tree, each search starting where the last one ended: names asked in git's
 * order (a fire commit's runs are sorted, and so are its appends) cost a few comparisons each,
 * however big the tree, instead of a binary search over it (two, with the chunk's). A name before
 * the last one found, the first search, and a tree not in git order are searched as
 * {@link indexOfEntry} does; the answers are always its answers.
 */
export class TreeCursor {
  /** The chunk and the index in it where the next search starts; -1 before the first. */
  #chunk = -1;
  #at = 0;
  /** The entry the last {@link indexOf} found, undefined when it found none. */
  entry: TreeEntry | undefined = undefined;
  /** The probe compared against entries (one object for every search). */
  readonly #probe: { name: string; type: TreeEntry["type"] };

  constructor(readonly tree: ParsedTree) {
    this.#probe = { name: "", type: entryAt(tree, 0)?.type === "tree" ? "tree" : "blob" };
  }

  /** Index of the entry called `name` (whatever its type), or -1; the entry is then {@link entry}. */
  indexOf(name: string): number {
    const tree = this.tree;
    if (!tree.sorted || this.#chunk < 0) return this.#searched(name);
    const probe = this.#probe;
    probe.name = name;
    const chunks = tree.chunks;
    let c = this.#chunk;
    let chunk = chunks[c] as readonly TreeEntry[];
    if (compareTreeEntries(chunk[chunk.length - 1] as TreeEntry, probe) < 0) {
      // Later chunks, galloping: the first whose last entry is not before the probe.
      let lo = c;
      let step = 1;
      let hi = chunks.length;
      while (lo + step < chunks.length) {
        const next = chunks[lo + step] as readonly TreeEntry[];
        if (compareTreeEntries(next[next.length - 1] as TreeEntry, probe) >= 0) {
          hi = lo + step;
          break;
        }
        lo += step;
        step *= 2;
      }
      // The answer is in (lo, hi]; hi = chunks.length means past every entry.
      let a = lo + 1;
      let b = Math.min(hi, chunks.length);
      while (a < b) {
        const mid = (a + b) >>> 1;
        const m = chunks[mid] as readonly TreeEntry[];
        if (compareTreeEntries(m[m.length - 1] as TreeEntry, probe) < 0) a = mid + 1;
        else b = mid;
      }
      if (a >= chunks.length) return this.#searched(name);
      c = a;
      chunk = chunks[c] as readonly TreeEntry[];
      this.#chunk = c;
      this.#at = 0;
    }
    // In this chunk, galloping from where the last search ended: the first entry not before the probe.
    let lo = this.#at;
    let step = 1;
    let hi = chunk.length;
    if (compareTreeEntries(chunk[lo] as TreeEntry, probe) < 0) {
      while (lo + step < chunk.length) {
        if (compareTreeEntries(chunk[lo + step] as TreeEntry, probe) >= 0) {
          hi = lo + step;
          break;
        }
        lo += step;
        step *= 2;
      }
      let a = lo + 1;
      let b = hi;
      while (a < b) {
        const mid = (a + b) >>> 1;
        if (compareTreeEntries(chunk[mid] as TreeEntry, probe) < 0) a = mid + 1;
        else b = mid;
      }
      lo = a;
    }
    const found = chunk[lo] as TreeEntry;
    // Not there: a name before the last one found (the search found the entry it started at), or
    // another kind of entry by that name, which sorts elsewhere (a file "a" before "a-b", a folder "a" after it).
    if (found.name !== name) return this.#searched(name);
    this.#at = lo;
    this.entry = found;
    return (tree.chunkStarts[c] as number) + lo;
  }

  /** {@link indexOfEntry}'s search; a sorted tree's cursor then starts from what it found. */
  #searched(name: string): number {
    const tree = this.tree;
    const i = indexOfEntry(tree, name);
    this.entry = i < 0 ? undefined : entryAt(tree, i);
    if (i >= 0 && tree.sorted) {
      this.#chunk = chunkOf(tree, i);
      this.#at = i - (tree.chunkStarts[this.#chunk] as number);
    }
    return i;
  }
}

/** The entry called `name`, or undefined. */
export function findEntry(tree: ParsedTree, name: string): TreeEntry | undefined {
  const i = indexOfEntry(tree, name);
  return i < 0 ? undefined : entryAt(tree, i);
}

/**
 * The tree's entries as {@link DirEntry}s sorted by name, gitlinks included (type "commit",
 * mode 160000), so a reader can report what it does not accept; computed once.
 */
export function dirEntriesOf(tree: ParsedTree): readonly DirEntry[] {
  if (tree.dirEntries === undefined) {
    const list: DirEntry[] = [];
    forEachEntry(tree, (e) => {
      list.push(Object.freeze({ name: e.name, type: e.type, oid: e.oid, ...unusualMode(e) }));
    });
    list.sort((a, b) => compareCodePoints(a.name, b.name));
    tree.dirEntries = Object.freeze(list);
  }
  return tree.dirEntries;
}
