/**
 * A run's `events/` folder in seq order, for readers that take a few entries of a big log at a
 * time (a page, a summary folding only what was appended).
 *
 * Where the reads give a tree's stored bytes (`CommittedReads.readTreeBytes`), the folder is
 * indexed from them in slices that give the event loop a turn (tree-bytes.ts `walkTreeBytes`):
 * per entry 12 bytes of typed arrays (its seq and where it starts), no object and no string, and
 * an entry is parsed only when a reader asks for it. Listing a 200,000-entry folder the ordinary
 * way (`listDir`: an object and three strings per entry, sorted by name) held the event loop
 * 340–500 ms in one piece, and did so again for each new version of a growing run. Without
 * those reads the listing is used (the same answers).
 *
 * Indexed folders are kept by tree oid (at most {@link FOLDER_CACHE_BYTES} of bytes and
 * indexes), so paging through one version of a log indexes it once.
 */
import { createHash } from "node:crypto";
import { compareCodePoints } from "../substrate/git-object.js";
import { LruCache } from "../substrate/lru-cache.js";
import { treeEntryAt, treeEntryEnd, walkTreeBytes } from "../substrate/tree-bytes.js";
import { BLOB_MODE, compareTreeEntries, TREE_MODE, unusualMode } from "../substrate/tree-object.js";
import type { CommittedReads, DirEntry, Oid } from "../substrate/types.js";
import { parseEventPathName } from "./paths.js";

/** A run's `events/` folder, its `<seq>.json` entries in numeric seq order (see the module comment). */
export interface EventsFolder {
  /** Entries in the folder. */
  readonly size: number;
  /** The seqs of the `<seq>.json` names, ascending. */
  readonly seqs: Float64Array;
  /** `at[k]`: the handle of the entry of `seqs[k]` (for {@link entry}). */
  readonly at: ArrayLike<number>;
  /** Handles of the entries whose names are not `<seq>.json`, in name order (as `listDir` gives them). */
  readonly others: readonly number[];
  /** The entry of a handle, as `listDir` gives it. */
  entry(handle: number): DirEntry;
  /**
   * Whether this folder, less its `<seq>.json` entries above `maxSeq`, is the tree `oid`: the
   * folder it was then only gained names above `maxSeq`. Hashes that folder's bytes; reads nothing.
   */
  onlyAddedAbove(maxSeq: number, oid: Oid): Promise<boolean>;
}

/** Bytes of folders and indexes kept (see {@link openEventsFolder}). */
const FOLDER_CACHE_BYTES = 64 * 1024 * 1024;
const folders = new LruCache<EventsFolder>(FOLDER_CACHE_BYTES);

/**
 * The folder `runs/<runId>/events` (tree `oid`, as its run folder lists it) of `reads`, indexed
 * by seq: from its stored bytes when the reads give them (in slices; kept by oid), else from its
 * listing at `path`.
 */
export async function openEventsFolder(reads: CommittedReads, path: string, oid: Oid | null): Promise<EventsFolder> {
  if (oid === null) return fromEntries([]);
  if (reads.readTreeBytes !== undefined) {
    const kept = folders.get(oid);
    if (kept !== undefined) return kept;
    const content = await reads.readTreeBytes(oid);
    const folder = content === null ? null : await indexEventsFolder(oid, content);
    if (folder !== null) return folder;
  }
  return fromEntries(await reads.listDir(path));
}

/**
 * The folder whose stored bytes (tree `oid`) are `content`, indexed by seq in slices (see the
 * module comment) and kept by oid; null when the bytes are not a well-formed tree.
 */
export async function indexEventsFolder(oid: Oid, content: Uint8Array): Promise<EventsFolder | null> {
  const kept = folders.get(oid);
  if (kept !== undefined) return kept;
  const folder = await fromBytes(content);
  if (folder !== null) folders.set(oid, folder, content.byteLength + 12 * folder.size);
  return folder;
}

/** The seq index of a listing (`listDir` of `events/`): the listing's own positions are the handles. */
export function fromEntries(entries: readonly DirEntry[]): EventsFolder {
  const seqOf = new Float64Array(entries.length);
  const others: number[] = [];
  for (let i = 0; i < entries.length; i += 1) {
    const seq = parseEventPathName((entries[i] as DirEntry).name);
    seqOf[i] = seq ?? -1;
    if (seq === null) others.push(i);
  }
  const { seqs, at } = seqOrder(seqOf);
  return {
    size: entries.length,
    seqs,
    at,
    others,
    entry: (handle) => entries[handle] as DirEntry,
    onlyAddedAbove: async (maxSeq, oid) => entriesOnlyAddedAbove(entries, seqs, at, maxSeq, oid),
  };
}

/** The folder indexed from its stored bytes; null when they are not a well-formed tree. */
async function fromBytes(content: Uint8Array): Promise<EventsFolder | null> {
  // An entry takes at least 22 bytes (a space, a NUL, the oid: a foreign tree may hold an empty
  // mode and an empty name, and the walk takes them; counting on more would drop later entries).
  const most = Math.ceil(content.byteLength / 22);
  const starts = new Uint32Array(most);
  const seqOf = new Float64Array(most);
  const others: number[] = [];
  let count = 0;
  const walked = await walkTreeBytes(content, (start, name, nul) => {
    const seq = seqOfName(content, name, nul);
    starts[count] = start;
    seqOf[count] = seq;
    if (seq < 0) others.push(start);
    count += 1;
  });
  if (!walked) return null;
  // As a listing gives them (by name), whatever order the tree stores them in.
  if (others.length > 1) {
    const named = others.map((start) => ({ start, name: treeEntryAt(content, start).name }));
    named.sort((a, b) => compareCodePoints(a.name, b.name));
    for (let i = 0; i < named.length; i += 1) others[i] = (named[i] as { start: number }).start;
  }
  // Ordered and mapped to entry starts a slice at a time: for 200,000 entries that is some tens
  // of ms of work, which the walk above already gives the event loop turns around.
  const order = await runInSlices(seqOrderSteps(seqOf.subarray(0, count)));
  const at = new Uint32Array(order.at.length);
  for (let k = 0; k < at.length; k += 1) {
    if (k > 0 && k % ORDER_SLICE_ENTRIES === 0) await nextTurn();
    at[k] = starts[order.at[k] as number] as number;
  }
  return {
    size: count,
    seqs: order.seqs,
    at,
    others,
    entry(handle) {
      const e = treeEntryAt(content, handle);
      return { name: e.name, type: e.type, oid: e.oid, ...unusualMode(e) };
    },
    onlyAddedAbove: (maxSeq, oid) => bytesOnlyAddedAbove(content, order.seqs, at, maxSeq, oid),
  };
}

/**
 * The seq of a name given as bytes [from, to), as `parseEventPathName` reads it
 * (`^(0|[1-9][0-9]{0,15})\.json$`, a safe integer), or -1.
 */
function seqOfName(content: Uint8Array, from: number, to: number): number {
  const digits = to - from - 5;
  if (digits < 1 || digits > 16) return -1;
  // ".json"
  if (content[to - 5] !== 0x2e || content[to - 4] !== 0x6a || content[to - 3] !== 0x73 || content[to - 2] !== 0x6f || content[to - 1] !== 0x6e) return -1;
  if (digits > 1 && content[from] === 0x30) return -1;
  let seq = 0;
  for (let i = from; i < from + digits; i += 1) {
    const d = (content[i] as number) - 0x30;
    if (d < 0 || d > 9) return -1;
    seq = seq * 10 + d;
  }
  return Number.isSafeInteger(seq) ? seq : -1;
}

/**
 * Positions sorted by seq, given each position's seq (-1: not a seq name). Seqs the host writes
 * are dense, so they are placed by value in one pass; seqs spread over more than twice their
 * number (a pushed log with big gaps) are sorted instead.
 * @internal shared with run-log.ts
 */
export function seqOrder(seqOf: Float64Array): { seqs: Float64Array; at: Int32Array } {
  const steps = seqOrderSteps(seqOf);
  for (;;) {
    const step = steps.next();
    if (step.done === true) return step.value;
  }
}

/** Entries ordered (or mapped) between two turns of the event loop in {@link fromBytes}. */
const ORDER_SLICE_ENTRIES = 32_768;

function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** Runs `steps` to its end, giving the event loop a turn at each step it yields. */
async function runInSlices<T>(steps: Generator<void, T>): Promise<T> {
  for (;;) {
    const step = steps.next();
    if (step.done === true) return step.value;
    await nextTurn();
  }
}

/**
 * {@link seqOrder} as steps: yields after each {@link ORDER_SLICE_ENTRIES} positions of each pass,
 * returns the order.
 */
function* seqOrderSteps(seqOf: Float64Array): Generator<void, { seqs: Float64Array; at: Int32Array }> {
  let count = 0;
  let min = Number.POSITIVE_INFINITY;
  let max = -1;
  for (let i = 0; i < seqOf.length; i += 1) {
    if (i > 0 && i % ORDER_SLICE_ENTRIES === 0) yield;
    const seq = seqOf[i] as number;
    if (seq < 0) continue;
    count += 1;
    if (seq < min) min = seq;
    if (seq > max) max = seq;
  }
  const seqs = new Float64Array(count);
  const at = new Int32Array(count);
  let k = 0;
  let placed = false;
  if (count > 0 && max - min < 2 * count + 16) {
    const slots = new Int32Array(max - min + 1).fill(-1);
    placed = true;
    for (let i = 0; i < seqOf.length && placed; i += 1) {
      if (i > 0 && i % ORDER_SLICE_ENTRIES === 0) yield;
      const seq = seqOf[i] as number;
      if (seq < 0) continue;
      // A name stored twice (only a foreign writer makes such a tree): sorted below, so it takes
      // its two places as in the listing and as readRunLog reads it, whatever the seqs' spread.
      if ((slots[seq - min] as number) >= 0) placed = false;
      else slots[seq - min] = i;
    }
    for (let s = 0; placed && s < slots.length; s += 1) {
      if (s > 0 && s % ORDER_SLICE_ENTRIES === 0) yield;
      if ((slots[s] as number) < 0) continue;
      seqs[k] = min + s;
      at[k] = slots[s] as number;
      k += 1;
    }
  }
  if (!placed && count > 0) {
    const order: number[] = [];
    for (let i = 0; i < seqOf.length; i += 1) if ((seqOf[i] as number) >= 0) order.push(i);
    order.sort((x, y) => (seqOf[x] as number) - (seqOf[y] as number));
    for (const i of order) {
      seqs[k] = seqOf[i] as number;
      at[k] = i;
      k += 1;
    }
  }
  return { seqs, at };
}

/** The position of the first seq above `after` in ascending `seqs` (its length when none). */
export function firstAbove(seqs: Float64Array, after: number): number {
  let lo = 0;
  let hi = seqs.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((seqs[mid] as number) <= after) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Bytes hashed between two turns given back to the event loop. */
const HASH_SLICE_BYTES = 1024 * 1024;

/** {@link EventsFolder.onlyAddedAbove} of a folder read as bytes: its bytes less the new entries, hashed in slices. */
async function bytesOnlyAddedAbove(content: Uint8Array, seqs: Float64Array, at: Uint32Array, maxSeq: number, oid: Oid): Promise<boolean> {
  const cut: [number, number][] = [];
  let length = content.byteLength;
  for (let k = firstAbove(seqs, maxSeq); k < seqs.length; k += 1) {
    const start = at[k] as number;
    const end = treeEntryEnd(content, start);
    cut.push([start, end]);
    length -= end - start;
  }
  cut.sort((a, b) => a[0] - b[0]);
  const hash = createHash("sha1");
  hash.update(`tree ${length}\0`);
  let from = 0;
  let sinceTurn = 0;
  const feed = async (to: number): Promise<void> => {
    while (from < to) {
      const step = Math.min(to, from + HASH_SLICE_BYTES - sinceTurn);
      hash.update(content.subarray(from, step));
      sinceTurn += step - from;
      from = step;
      if (sinceTurn >= HASH_SLICE_BYTES) {
        sinceTurn = 0;
        await new Promise((resolve) => setImmediate(resolve));
      }
    }
  };
  for (const [start, end] of cut) {
    await feed(start);
    from = end;
  }
  await feed(content.byteLength);
  return hash.digest("hex") === oid;
}

/**
 * {@link EventsFolder.onlyAddedAbove} of a listing: the folder it would be without those names,
 * written from the entries (re-sorted as git sorts a folder: as if its name ended in "/") and hashed.
 */
function entriesOnlyAddedAbove(entries: readonly DirEntry[], seqs: Float64Array, at: Int32Array, maxSeq: number, oid: Oid): boolean {
  const above = new Set<number>();
  for (let k = firstAbove(seqs, maxSeq); k < seqs.length; k += 1) above.add(at[k] as number);
  const kept: DirEntry[] = [];
  let hasFolders = false;
  let room = 0;
  for (let i = 0; i < entries.length; i += 1) {
    if (above.has(i)) continue;
    const entry = entries[i] as DirEntry;
    if (entry.type === "tree") hasFolders = true;
    kept.push(entry);
    // At most 3 bytes of UTF-8 per UTF-16 unit; mode, space, NUL and the 20-byte oid.
    room += 3 * entry.name.length + 28;
  }
  if (hasFolders) kept.sort((a, b) => compareTreeEntries(a, b));
  const content = Buffer.allocUnsafe(room);
  let pos = 0;
  for (const entry of kept) {
    pos += content.write(entry.mode ?? (entry.type === "tree" ? TREE_MODE : BLOB_MODE), pos, "latin1");
    content[pos++] = 0x20;
    pos += content.write(entry.name, pos, "utf8");
    content[pos++] = 0;
    if (!/^[0-9a-f]{40}$/.test(entry.oid)) return false;
    pos += content.write(entry.oid, pos, "hex");
  }
  const hash = createHash("sha1");
  hash.update(`tree ${pos}\0`);
  hash.update(content.subarray(0, pos));
  return hash.digest("hex") === oid;
}
