/**
 * Editing a git tree by splicing (see tree-object.ts for why): the new content is the old
 * content with the changed entries spliced in, unchanged entries keep their bytes, and the
 * parsed entries' chunks an edit does not touch are shared with the version it was made from.
 * A big folder's edit also records the git delta from its base, written from the splice itself.
 * A big folder's new version is written into bytes the write engine owns and reuses
 * (tree-buffers.ts: who may hold them, and when they are reused), not into a new buffer.
 */
import type { GitObject } from "./git-object.js";
import { adler32Patch } from "./adler32.js";
import { writeHexOid } from "./hex-oid.js";
import { DeltaWriter } from "./git-delta.js";
import { knownTreeEntryCrc, rememberTreeEntryCrc, StoredEntryCrcPatch } from "./entry-crc.js";
import { type OwnedContent, takeTreeBuffer } from "./tree-buffers.js";
import {
  BIG_TREE_ENTRIES,
  compareTreeEntries,
  contentAdler32,
  DELTA_BASE_MIN_BYTES,
  editableContent,
  ENTRY_CHUNK,
  entryAt,
  entrySize,
  finishTree,
  indexOfEntry,
  lowerBound,
  makeTree,
  ownedContentOf,
  pushChunks,
  writeEntry,
  type BigTreeBeside,
  type ParsedTree,
  type TreeEntry,
} from "./tree-object.js";

/**
 * A copy of `base` with the entries in `changes` replaced, added (name not in base) or removed
 * (value null). Unchanged entries keep their bytes: the content is spliced, not re-encoded.
 * @param positions where names of `changes` are in `base` (index, or -1: absent), when the caller
 *   looked them up already; others are searched for
 * @param beside work to run while a big result's oid is hashed (tree-object.ts BigTreeBeside)
 */
export function editTree(base: ParsedTree, changes: ReadonlyMap<string, TreeEntry | null>, positions?: ReadonlyMap<string, number>, beside?: BigTreeBeside): { tree: ParsedTree; object: GitObject } {
  if (!base.sorted) {
    const merged = new Map(base.entries.map((e) => [e.name, e]));
    for (const [name, entry] of changes) {
      if (entry === null) merged.delete(name);
      else merged.set(name, entry);
    }
    return makeTree([...merged.values()]);
  }
  const at = (name: string): number => positions?.get(name) ?? indexOfEntry(base, name);
  const patched = patchTree(base, changes, at, beside);
  if (patched !== undefined) return patched;
  // Edits as (position in base, kind): an insert at p goes before base[p]; a removal drops base[p].
  const events: { at: number; insert?: TreeEntry }[] = [];
  for (const [name, entry] of changes) {
    const old = at(name);
    if (old >= 0) events.push({ at: old });
    if (entry !== null) events.push({ at: lowerBound(base, entry), insert: entry });
  }
  if (events.length > 1) events.sort(compareEdits);

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
  const n = base.count;
  const total = size + ((base.offsets[n] as number) - (base.offsets[Math.min(next, n)] as number));
  const owned = ownedVersion(base, count + (n - Math.min(next, n)), total);
  const content = owned?.view ?? Buffer.allocUnsafe(total);
  const offsets = new Uint32Array(count + (n - Math.min(next, n)) + 1);
  const baseContent = editableContent(base);
  const source = Buffer.from(baseContent.buffer, baseContent.byteOffset, baseContent.byteLength);
  // The splice is a delta already: copies of the base's spans, inserts of the new entries.
  const delta = source.length >= DELTA_BASE_MIN_BYTES ? new DeltaWriter(source.length, content) : undefined;
  // No closures here: each one made per call costs more than a small folder's whole splice
  // (the build names every function it makes).
  const out: SpliceOut = { content, offsets, source, delta, at: 0, k: 0 };
  next = 0;
  for (const event of events) {
    if (event.at > next) copySpan(base, out, next, event.at);
    next = Math.max(next, event.at);
    if (event.insert !== undefined) {
      offsets[out.k++] = out.at;
      const start = out.at;
      out.at = writeEntry(content, out.at, event.insert);
      delta?.insert(start, out.at);
    } else {
      next = event.at + 1;
    }
  }
  if (next < n) copySpan(base, out, next, n);
  offsets[out.k] = out.at;
  return finishTree(editChunks(base, events), content, offsets, true, delta === undefined ? undefined : { oid: base.oid, writer: delta }, undefined, owned, base.lossy, beside);
}

/**
 * Owned bytes (tree-buffers.ts) for an edit of `base` into a version of `count` entries and
 * `size` bytes: for a big folder whose names decoded exactly; undefined otherwise (a buffer of
 * its own, as before). Taken before the base's bytes are read, never the base's own.
 */
function ownedVersion(base: ParsedTree, count: number, size: number): OwnedContent | undefined {
  if (count < BIG_TREE_ENTRIES || base.lossy === true) return undefined;
  return takeTreeBuffer(size, ownedContentOf(base));
}

/**
 * {@link editTree} when every change gives an existing entry a new oid, name, type and mode
 * kept (a fire commit's `runs/`: each run's folder changed): see {@link reOidTree}. Undefined
 * when some change is anything else.
 */
function patchTree(base: ParsedTree, changes: ReadonlyMap<string, TreeEntry | null>, position: (name: string) => number, beside?: BigTreeBeside): { tree: ParsedTree; object: GitObject } | undefined {
  const ats: number[] = [];
  const inserts: TreeEntry[] = [];
  if (!reOidEdits(base, changes, position, ats, inserts)) return undefined;
  return reOidSorted(base, ats, inserts, beside);
}

/**
 * {@link editTree} of a tree in git order when every change gives an existing entry a new oid,
 * its name, type and mode kept: `inserts[i]` replaces the entry at index `ats[i]`, the indices
 * strictly ascending (a fire commit's `runs/`, one changed run folder each, given in run order by
 * the tree edit: no map of the changes, no search, no sort). Every entry keeps its size and
 * place, so the content is the base's with 20-byte oids overwritten, the offsets are the base's
 * (shared), and a big folder's Adler-32 is patched for the bytes that changed instead of read
 * again (see adler32Patch). Same bytes, oid, chunks and delta as the general splice.
 * @returns undefined, having changed nothing, when the changes are not that (then {@link editTree})
 */
export function reOidTree(base: ParsedTree, ats: readonly number[], inserts: readonly TreeEntry[], beside?: BigTreeBeside): { tree: ParsedTree; object: GitObject } | undefined {
  if (!base.sorted || ats.length !== inserts.length || !reOidsFit(base, ats, inserts)) return undefined;
  return reOidSorted(base, ats, inserts, beside);
}

/** Whether each insert replaces the entry at its index, name, type and mode kept, the indices strictly ascending. */
function reOidsFit(base: ParsedTree, ats: readonly number[], inserts: readonly TreeEntry[]): boolean {
  let last = -1;
  for (let i = 0; i < ats.length; i++) {
    const at = ats[i] as number;
    if (!(at > last)) return false;
    last = at;
    const entry = inserts[i] as TreeEntry;
    const old = entryAt(base, at);
    if (old === undefined || old.type !== entry.type || old.mode !== entry.mode || old.name !== entry.name) return false;
  }
  return true;
}

function reOidSorted(base: ParsedTree, ats: readonly number[], inserts: readonly TreeEntry[], beside?: BigTreeBeside): { tree: ParsedTree; object: GitObject } {
  const n = base.count;
  const offsets = base.offsets;
  const size = offsets[n] as number;
  const owned = ownedVersion(base, n, size);
  const baseContent = editableContent(base);
  const source = Buffer.from(baseContent.buffer, baseContent.byteOffset, baseContent.byteLength);
  const content = owned?.view ?? Buffer.allocUnsafe(source.length);
  source.copy(content);
  const big = source.length >= DELTA_BASE_MIN_BYTES;
  const delta = big ? new DeltaWriter(source.length, content) : undefined;
  let adler = big ? contentAdler32(base) : undefined;
  // A folder past one stored block whose pack entry's CRC-32 is known: the new one is patched too,
  // when few of its entries change. Each changed oid costs the patch a shift of its remainder
  // past the rest of the folder (~1–2 µs), where node's CRC-32 of the whole entry reads a few
  // KB in that time: a burst that re-oids 8,000 of 20,000 runs' entries (900 KB) patched for
  // 15 ms what the pack writer reads in well under 1.
  const few = ats.length * CRC_PATCH_BYTES_PER_CHANGE < source.length;
  const baseCrc = big && few && source.length > 65_535 ? knownTreeEntryCrc(baseContent) : undefined;
  const crc = baseCrc === undefined ? undefined : new StoredEntryCrcPatch(baseCrc, source.length);
  adler = reOid(ats, inserts, offsets, source, content, delta, adler, crc);
  const next = ats.length === 0 ? 0 : (ats[ats.length - 1] as number) + 1;
  if (next < n) delta?.copy(offsets[next] as number, offsets[n] as number);
  if (crc !== undefined && adler !== undefined) rememberTreeEntryCrc(content, crc.finish(contentAdler32(base), adler));
  return finishTree(reOidChunks(base, ats, inserts), content, offsets, true, delta === undefined ? undefined : { oid: base.oid, writer: delta }, adler, owned, base.lossy, beside);
}

/**
 * patchTree's edits into `ats` and `inserts` (sorted by index); false when some change is not a
 * new oid for an existing entry with its name, type and mode. The loops of patchTree are
 * functions of their own: patchTree runs once per commit, its loops once per changed run, and
 * only they are compiled by the optimiser (see design notes §58).
 */
function reOidEdits(base: ParsedTree, changes: ReadonlyMap<string, TreeEntry | null>, position: (name: string) => number, ats: number[], inserts: TreeEntry[]): boolean {
  let ascending = true;
  for (const [name, entry] of changes) {
    if (entry === null) return false;
    const at = position(name);
    const old = at < 0 ? undefined : entryAt(base, at);
    if (old === undefined || old.type !== entry.type || old.mode !== entry.mode || old.name !== entry.name) return false;
    if (ats.length > 0 && at < (ats[ats.length - 1] as number)) ascending = false;
    ats.push(at);
    inserts.push(entry);
  }
  if (!ascending) {
    // Names are unique in a tree, so are their indices: a sort by index is the splice's order.
    const order = ats.map((_, i) => i).sort((x, y) => (ats[x] as number) - (ats[y] as number));
    const sortedAts = order.map((i) => ats[i] as number);
    const sortedInserts = order.map((i) => inserts[i] as TreeEntry);
    for (let i = 0; i < order.length; i++) {
      ats[i] = sortedAts[i] as number;
      inserts[i] = sortedInserts[i] as TreeEntry;
    }
  }
  return true;
}

/**
 * Writes each re-oided entry's new oid over its entry's in `content` (a copy of `source`),
 * noting the unchanged spans before each and the entry in `delta`, patching `adler` and `crc`.
 * @returns the patched Adler-32 (undefined when not given one)
 */
function reOid(
  ats: readonly number[],
  inserts: readonly TreeEntry[],
  offsets: Uint32Array,
  source: Buffer,
  content: Buffer,
  delta: DeltaWriter | undefined,
  adler: number | undefined,
  crc: StoredEntryCrcPatch | undefined,
): number | undefined {
  let next = 0;
  for (let e = 0; e < ats.length; e++) {
    const at = ats[e] as number;
    const start = offsets[at] as number;
    const end = offsets[at + 1] as number;
    if (at > next) delta?.copy(offsets[next] as number, start);
    // The oid is the entry's last 20 bytes; name and mode are the base's, byte for byte.
    const oid = (inserts[e] as TreeEntry).oid;
    if (!writeHexOid(oid, content, end - 20)) content.write(oid, end - 20, "hex");
    // The whole old and new contents, read at the oid's place: no views per entry.
    if (adler !== undefined) adler = adler32Patch(adler, source.length, end - 20, source, content, 20, end - 20);
    crc?.replaced(end - 20, source, content, 20, end - 20);
    delta?.insert(start, end);
    next = at + 1;
  }
  return adler;
}

/**
 * The chunks of `base` with the entries at `ats` (ascending) replaced by `inserts`: what
 * {@link editChunks} makes of the same edits (an insert and a removal at each index).
 */
function reOidChunks(base: ParsedTree, ats: readonly number[], inserts: readonly TreeEntry[]): (readonly TreeEntry[])[] {
  const chunks: (readonly TreeEntry[])[] = [];
  const last = base.chunks.length - 1;
  let e = 0;
  for (let c = 0; c <= last; c++) {
    const chunk = base.chunks[c] as readonly TreeEntry[];
    const start = base.chunkStarts[c] as number;
    const end = base.chunkStarts[c + 1] as number;
    if (e >= ats.length || (ats[e] as number) >= end) {
      chunks.push(chunk);
      continue;
    }
    const out = chunk.slice();
    while (e < ats.length && (ats[e] as number) < end) {
      out[(ats[e] as number) - start] = inserts[e] as TreeEntry;
      e++;
    }
    pushChunks(chunks, out);
  }
  return chunks;
}

/**
 * Folder bytes per changed entry below which a big folder's entry CRC-32 is read again by the
 * pack writer instead of patched (see patchTree).
 */
export const CRC_PATCH_BYTES_PER_CHANGE = 4_096;

/** Edits by position; at one position inserts before the removal, inserts in tree order. */
function compareEdits(x: { at: number; insert?: TreeEntry }, y: { at: number; insert?: TreeEntry }): number {
  return x.at - y.at || (x.insert === undefined ? 1 : 0) - (y.insert === undefined ? 1 : 0) || (x.insert !== undefined && y.insert !== undefined ? compareTreeEntries(x.insert, y.insert) : 0);
}

/** Whether an edit at `at` falls in the chunk ending at `end` (an insert at the very end goes to the last chunk). */
function inChunk(at: number, end: number, isLast: boolean): boolean {
  return at < end || (isLast && at === end);
}

/** Where {@link editTree} writes: the new content and offsets, and how far it got. */
interface SpliceOut {
  readonly content: Buffer;
  readonly offsets: Uint32Array;
  readonly source: Buffer;
  readonly delta: DeltaWriter | undefined;
  at: number;
  k: number;
}

/** Copies entries `from` … `to` - 1 of `base` to `out` unchanged. */
function copySpan(base: ParsedTree, out: SpliceOut, from: number, to: number): void {
  const start = base.offsets[from] as number;
  for (let i = from; i < to; i++) out.offsets[out.k++] = out.at + (base.offsets[i] as number) - start;
  out.delta?.copy(start, base.offsets[to] as number);
  out.at += out.source.copy(out.content, out.at, start, base.offsets[to] as number);
}

/**
 * The chunks of `base` with `events` (sorted as in {@link editTree}) applied: chunks without an
 * event are shared as they are; an edited one is copied, split when it grew past twice
 * {@link ENTRY_CHUNK}, dropped when emptied. An insert at the very end goes to the last chunk.
 */
function editChunks(base: ParsedTree, events: readonly { at: number; insert?: TreeEntry }[]): (readonly TreeEntry[])[] {
  const chunks: (readonly TreeEntry[])[] = [];
  const last = base.chunks.length - 1;
  let e = 0;
  if (last < 0) {
    pushChunks(chunks, events.flatMap((event) => (event.insert === undefined ? [] : [event.insert])));
    return chunks;
  }
  for (let c = 0; c <= last; c++) {
    const chunk = base.chunks[c] as readonly TreeEntry[];
    const start = base.chunkStarts[c] as number;
    const end = base.chunkStarts[c + 1] as number;
    if (e >= events.length || !inChunk((events[e] as { at: number }).at, end, c === last)) {
      chunks.push(chunk);
      continue;
    }
    const out: TreeEntry[] = [];
    let pos = start;
    while (e < events.length && inChunk((events[e] as { at: number }).at, end, c === last)) {
      const event = events[e++] as { at: number; insert?: TreeEntry };
      while (pos < event.at) out.push(chunk[pos++ - start] as TreeEntry);
      if (event.insert !== undefined) out.push(event.insert);
      else pos = event.at + 1;
    }
    while (pos < end) out.push(chunk[pos++ - start] as TreeEntry);
    pushChunks(chunks, out);
  }
  return chunks;
}
