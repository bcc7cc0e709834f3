/**
 * Merging packs into one, with big folders stored as deltas.
 *
 * Why deltas: every commit that touches one run rewrites `runs/`, a 10 000-entry folder of
 * ~400 KB, so each commit's pack is mostly one new version of that tree. Copied as they are,
 * merged packs grow by 400 KB a commit (12 MB/s at 30 commits/s) and every merge re-copies
 * them. Git stores such versions as deltas against each other (`git gc`); a merge here does the
 * same for trees over {@link DELTA_MIN_BYTES}: each is stored as an ofs-delta against the
 * previous version of the same folder in the merged pack (matched by its first entry's name),
 * which is a few hundred bytes of copy and insert instructions when a commit changed a few
 * entries. Smaller trees (a run's `events/` folder, rewritten by every event appended to it)
 * are stored as deltas against the tree with the same first entry, name and oid: the previous
 * version of that folder; a delta is kept only when it is under half the tree's size. Event
 * blobs are stored as deltas against the previous blob starting with the same bytes (the same
 * seq and type), as git's packing finds similar files; blobs and small trees get one only in
 * a commit's own pack (see {@link SMALL_DELTA_SOURCE_MAX}). Chains stop at {@link MAX_CHAIN} deltas, as git's default depth does, so a read
 * never resolves more than that. Every delta is checked by applying it before it is used.
 *
 * Entries that are already ofs-deltas (from an earlier merge, or `git gc`) are re-linked: the
 * same compressed delta with the distance to its base's new position. Bases always precede
 * their deltas (entries are taken in pack order). A full entry of an earlier merge may become
 * a delta in this one, which deepens the chains hanging from it: a re-linked delta that would
 * end deeper than {@link MAX_CHAIN} is written whole instead (read through `readObject`), so
 * no chain ever exceeds it, however many merges an object goes through. A ref-delta (a base named by oid, which can
 * live elsewhere) makes the pack unmergeable here.
 */
import { WorkflowHostError } from "../errors.js";
import { systemMonotonicNow } from "../time/clock.js";
import type { GitObject } from "./git-object.js";
import { applyDelta, crc32, entryHeader, entryPayload, inflateEntry, TYPE_CODES, type EncodedPack, type EntryRecord, layoutPack, type PackSource, parseEntryHead, sealPackGently, storedZlib } from "./pack-file.js";
import { compareTreeEntries, type DeltaBase, entryAt, type ParsedTree, type TreeEntry } from "./tree-object.js";
import { byteDelta, deltaSizes, DeltaWriter } from "./git-delta.js";
import { packOrder } from "./pack-rev-index.js";
import type { Oid } from "./types.js";

/**
 * Trees at least this big are stored as deltas against the previous version of the same folder,
 * matched by their first entry's name (a `runs/` folder of ~25 runs or more).
 */
export const DELTA_MIN_BYTES = 1024;
/**
 * Smaller trees, down to this size, are stored as deltas against the previous tree whose first
 * entry is the same, name and oid: the earlier version of an append-only folder (a run's
 * `events/`, whose first event never changes). Below it a delta saves nothing.
 */
export const SMALL_DELTA_MIN_BYTES = 64;
/**
 * Blobs from {@link SMALL_DELTA_MIN_BYTES} up to this size (event files) are stored as deltas
 * against the previous blob that starts with the same {@link BLOB_KEY_BYTES} bytes (for an
 * event: its seq and type), when the delta is under half the blob.
 */
export const BLOB_DELTA_MAX_BYTES = 4 * 1024;
const BLOB_KEY_BYTES = 24;
const BLOB = 3;
/** Longest delta chain written (git's default `pack.depth`). */
export const MAX_CHAIN = 50;
/**
 * Event blobs and small trees are given a delta only when they come from a source of at most
 * this many objects: a commit's pack. A bigger source is a pack merged before (whose entries had
 * their chance then) or one bulk import; trying every one of its objects again cost seconds per
 * merge (a 100 000-run deployment's 600 000 objects) to save little. Big folders always get one.
 */
export const SMALL_DELTA_SOURCE_MAX = 4096;
/** Longest stretch of merging (ms) before the event loop is given back. */
const SLICE_MS = 2;

const TREE = 2;
const OFS_DELTA = 6;
const REF_DELTA = 7;

/** A tree's content with its entry boundaries, and names/types on demand (for ordering). */
export interface TreeShape {
  readonly content: Buffer;
  /** Start of each entry, then the content's length. */
  readonly offsets: Uint32Array;
  readonly count: number;
  entry(i: number): Pick<TreeEntry, "name" | "type">;
}

/**
 * The shape of a parsed tree (from the object cache: nothing to parse), over `content`: the
 * same tree's bytes as read from its pack (the parsed tree's own `content` may be a copy made
 * on the ask, tree-buffers.ts), or by default the tree's.
 */
export function shapeOfParsed(tree: ParsedTree, content?: Buffer): TreeShape {
  const bytes = content ?? Buffer.from(tree.content.buffer, tree.content.byteOffset, tree.content.byteLength);
  return { content: bytes, offsets: tree.offsets, count: tree.count, entry: (i) => entryAt(tree, i) as TreeEntry };
}

/** The shape of raw tree content: entry starts found with two byte searches per entry. */
export function shapeOfContent(content: Buffer): TreeShape | null {
  const starts: number[] = [];
  let at = 0;
  while (at < content.length) {
    const space = content.indexOf(0x20, at);
    const nul = space < 0 ? -1 : content.indexOf(0, space + 1);
    if (space < 0 || nul < 0 || nul + 21 > content.length) return null;
    starts.push(at);
    at = nul + 21;
  }
  starts.push(content.length);
  const offsets = Uint32Array.from(starts);
  return {
    content,
    offsets,
    count: starts.length - 1,
    entry(i) {
      const s = offsets[i] as number;
      const space = content.indexOf(0x20, s);
      const nul = content.indexOf(0, space + 1);
      const mode = content.toString("latin1", s, space);
      return { name: content.toString("utf8", space + 1, nul), type: mode === "40000" || mode === "040000" ? "tree" : "blob" };
    },
  };
}

/** The first entry's name: which folder a big tree is a version of. */
function folderKey(shape: TreeShape): string | null {
  return shape.count === 0 ? null : shape.entry(0).name;
}

/**
 * A git delta turning tree `base` into tree `target`: copies of the runs of entries they share
 * byte for byte, inserts of the rest. Runs are found by galloping block compares (a 10 000-entry
 * folder with 20 changes costs a few hundred buffer compares), and names are only looked at
 * where the two differ.
 */
export function treeDelta(base: TreeShape, target: TreeShape): Buffer {
  const b = base.content;
  const t = target.content;
  const ob = base.offsets;
  const ot = target.offsets;
  const writer = new DeltaWriter(b.length, t);
  /** Whether entries i..i+n of base equal entries j..j+n of target, byte for byte. */
  const same = (i: number, j: number, n: number): boolean => {
    const bs = ob[i] as number;
    const be = ob[i + n] as number;
    const ts = ot[j] as number;
    const te = ot[j + n] as number;
    return be - bs === te - ts && b.compare(t, ts, te, bs, be) === 0;
  };
  let i = 0;
  let j = 0;
  while (j < target.count) {
    if (i < base.count) {
      // Gallop: the longest run of equal entries from (i, j).
      let run = 0;
      let step = 1;
      const most = Math.min(base.count - i, target.count - j);
      while (run + step <= most && same(i + run, j + run, step)) {
        run += step;
        step *= 2;
      }
      for (step = Math.floor(step / 2); step >= 1; step = Math.floor(step / 2)) {
        if (run + step <= most && same(i + run, j + run, step)) run += step;
      }
      if (run > 0) {
        writer.copy(ob[i] as number, ob[i + run] as number);
        i += run;
        j += run;
        continue;
      }
      const order = compareTreeEntries(base.entry(i), target.entry(j));
      if (order < 0) {
        i++; // gone from the target
        continue;
      }
      if (order === 0) i++; // changed in place
    }
    writer.insert(ot[j] as number, ot[j + 1] as number);
    j++;
  }
  return writer.finish();
}

/** The bytes of an ofs-delta entry: header, distance back to the base, the zlib stream. */
function ofsDeltaEntry(deltaSize: number, distance: number, stream: Uint8Array): Buffer {
  // Git's offset encoding: 7 bits a byte, most significant first, each continuation adding 1.
  const bytes: number[] = [distance & 0x7f];
  let rest = Math.floor(distance / 128);
  while (rest > 0) {
    rest -= 1;
    bytes.unshift(0x80 | (rest & 0x7f));
    rest = Math.floor(rest / 128);
  }
  return Buffer.concat([entryHeader(OFS_DELTA, deltaSize), Buffer.from(bytes), stream]);
}

interface Written {
  readonly offset: number;
  readonly depth: number;
  /** The object's size, or NaN when not known here (an entry re-linked as a delta). */
  readonly size: number;
}

interface BigTree {
  readonly offset: number;
  readonly depth: number;
  readonly shape: TreeShape;
}

/**
 * One pack holding every object of `sources` once (see the module comment).
 * @param hash SHA-1 of the merged body (the caller may run it off the event loop)
 * @param cachedTree a parsed tree by oid if one is at hand (saves parsing big folders)
 * @param deltaBase the delta a big tree was written with, if known: when its base is already in
 *   the merged pack, the tree is stored as that delta, with nothing to parse or compare
 * @param readObject an object's full content by oid (for a delta whose chain would grow too
 *   deep); without it, such a merge gives up (null), leaving the packs as they were
 * @returns the merged pack, or null when a source holds a ref-delta
 */
export async function mergePacks(
  sources: readonly PackSource[],
  hash: (body: Buffer) => Promise<Buffer>,
  cachedTree: (oid: Oid) => ParsedTree | undefined = () => undefined,
  deltaBase: (oid: Oid) => DeltaBase | undefined = () => undefined,
  readObject?: (oid: Oid) => Promise<GitObject>,
): Promise<EncodedPack | null> {
  const parts: Buffer[] = [Buffer.alloc(0)];
  const entries: EntryRecord[] = [];
  const written = new Map<Oid, Written>();
  /** Latest version of each big folder, by its first entry's name, with its content. */
  const bigTrees = new Map<string, BigTree>();
  /** Latest small tree by its first entry's bytes (mode, name and oid). */
  const smallTrees = new Map<string, BigTree>();
  /** Latest small blob by its first bytes. */
  const smallBlobs = new Map<string, { readonly offset: number; readonly depth: number; readonly content: Buffer }>();
  let offset = 12;
  const emit = (oid: Oid, bytes: Buffer, crc: number, depth: number, size = Number.NaN): number => {
    const at = offset;
    written.set(oid, { offset: at, depth, size });
    entries.push({ oid, offset: at, crc });
    parts.push(bytes);
    offset += bytes.length;
    return at;
  };
  const shapeOf = (oid: Oid, content: Buffer): TreeShape | null => {
    const cached = cachedTree(oid);
    // The pack's bytes of the same oid: the parsed tree gives only the entries' places and names.
    return cached !== undefined && cached.offsets[cached.count] === content.length ? shapeOfParsed(cached, content) : shapeOfContent(content);
  };
  const rememberBig = (at: number, depth: number, shape: TreeShape | null): void => {
    const key = shape === null ? null : folderKey(shape);
    if (shape === null || key === null) return;
    bigTrees.set(key, { offset: at, depth, shape });
  };
  let sliceStart = systemMonotonicNow();
  for (const source of sources) {
    const order = packOrder(source.index);
    const fresh = source.index.count <= SMALL_DELTA_SOURCE_MAX;
    /** Entry position by offset, for an ofs-delta's base (its oid read only then). */
    const atOffset = new Map<number, number>();
    for (const i of order) atOffset.set(source.index.offsetAt(i), i);
    for (const i of order) {
      if (systemMonotonicNow() - sliceStart >= SLICE_MS) {
        // A merge runs beside live commits: give the event loop back every {@link SLICE_MS}, so
        // a merge is many short slices, not one long stall (an entry count is no measure: one
        // big folder costs as much as thousands of small objects).
        await new Promise((resolve) => setImmediate(resolve));
        sliceStart = systemMonotonicNow();
      }
      const oid = source.index.oidAt(i);
      if (written.has(oid)) continue;
      const start = source.index.offsetAt(i);
      // A big tree written with a known delta whose base is already in: stored as that delta,
      // without reading the 400 KB entry at all (the caller may not even have loaded it).
      const known = deltaBase(oid);
      const knownBase = known === undefined ? undefined : written.get(known.oid);
      if (known !== undefined && knownBase !== undefined && knownBase.depth < MAX_CHAIN) {
        const sizes = deltaSizes(known.delta);
        if (sizes.baseSize === knownBase.size && sizes.targetSize >= DELTA_MIN_BYTES && known.delta.length < sizes.targetSize / 2) {
          const bytes = ofsDeltaEntry(known.delta.length, offset - knownBase.offset, storedZlib(known.delta));
          emit(oid, bytes, crc32(bytes), knownBase.depth + 1, sizes.targetSize);
          continue;
        }
      }
      const raw = await source.entry(start, source.index.endOf(start));
      // An entry is copied as it is stored: one whose bytes are not what its index recorded (a
      // damaged pack) would be sealed under the merged pack's fresh checksum as if whole.
      if (crc32(raw) !== source.index.crcAt(i)) {
        throw new WorkflowHostError("object_corrupt", `pack ${source.name} is corrupt: the entry of ${oid} does not match the CRC-32 its index records; not merged`, { pack: source.name, oid, reason: "entry CRC-32 mismatch", damagedSource: true });
      }
      const head = parseEntryHead(source.name, raw);
      if (head.typeCode === REF_DELTA) return null;
      if (head.typeCode === OFS_DELTA) {
        const baseAt = atOffset.get(start - (head.baseDistance as number));
        const baseOid = baseAt === undefined ? undefined : source.index.oidAt(baseAt);
        const base = baseOid === undefined ? undefined : written.get(baseOid);
        if (baseOid === undefined || base === undefined) return null;
        if (base.depth + 1 > MAX_CHAIN) {
          if (readObject === undefined) return null;
          const whole = await readObject(oid);
          const bytes = Buffer.concat([entryHeader(TYPE_CODES[whole.type], whole.content.byteLength), ...entryPayload(whole.type, whole.content)]);
          emit(oid, bytes, crc32(bytes), 0, whole.content.byteLength);
          continue;
        }
        // Re-linked as is, content unresolved: new deltas are taken against versions whose
        // content this merge already holds (a version some commits apart is still a small delta).
        const bytes = ofsDeltaEntry(head.size, offset - base.offset, raw.subarray(head.dataAt));
        emit(oid, bytes, crc32(bytes), base.depth + 1);
        continue;
      }
      if (fresh && head.typeCode === BLOB && head.size >= SMALL_DELTA_MIN_BYTES && head.size <= BLOB_DELTA_MAX_BYTES) {
        const content = inflateEntry(source.name, raw, head);
        const key = content.toString("latin1", 0, BLOB_KEY_BYTES);
        const previous = smallBlobs.get(key);
        if (previous !== undefined && previous.depth < MAX_CHAIN) {
          const delta = byteDelta(previous.content, content);
          if (delta.length < content.length / 2 && applyDelta(source.name, previous.content, delta).equals(content)) {
            const bytes = ofsDeltaEntry(delta.length, offset - previous.offset, storedZlib(delta));
            const at = emit(oid, bytes, crc32(bytes), previous.depth + 1, head.size);
            smallBlobs.set(key, { offset: at, depth: previous.depth + 1, content });
            continue;
          }
        }
        const at = emit(oid, raw, source.index.crcAt(i), 0, head.size);
        smallBlobs.set(key, { offset: at, depth: 0, content });
        continue;
      }
      if (fresh && head.typeCode === TREE && head.size >= SMALL_DELTA_MIN_BYTES && head.size < DELTA_MIN_BYTES) {
        const content = inflateEntry(source.name, raw, head);
        const shape = shapeOfContent(content);
        const key = shape === null || shape.count === 0 ? null : content.toString("latin1", shape.offsets[0] as number, shape.offsets[1] as number);
        const previous = key === null ? undefined : smallTrees.get(key);
        if (shape !== null && previous !== undefined && previous.depth < MAX_CHAIN) {
          const delta = treeDelta(previous.shape, shape);
          if (delta.length < content.length / 2 && applyDelta(source.name, previous.shape.content, delta).equals(content)) {
            const bytes = ofsDeltaEntry(delta.length, offset - previous.offset, storedZlib(delta));
            const at = emit(oid, bytes, crc32(bytes), previous.depth + 1, head.size);
            if (key !== null) smallTrees.set(key, { offset: at, depth: previous.depth + 1, shape });
            continue;
          }
        }
        const at = emit(oid, raw, source.index.crcAt(i), 0, head.size);
        if (shape !== null && key !== null) smallTrees.set(key, { offset: at, depth: 0, shape });
        continue;
      }
      if (head.typeCode === TREE && head.size >= DELTA_MIN_BYTES) {
        const content = inflateEntry(source.name, raw, head);
        const shape = shapeOf(oid, content);
        const key = shape === null ? null : folderKey(shape);
        const previous = key === null ? undefined : bigTrees.get(key);
        if (shape !== null && previous !== undefined && previous.depth < MAX_CHAIN) {
          const delta = treeDelta(previous.shape, shape);
          if (delta.length < content.length / 2 && applyDelta(source.name, previous.shape.content, delta).equals(content)) {
            const bytes = ofsDeltaEntry(delta.length, offset - previous.offset, storedZlib(delta));
            const at = emit(oid, bytes, crc32(bytes), previous.depth + 1, head.size);
            rememberBig(at, previous.depth + 1, shape);
            continue;
          }
        }
        const at = emit(oid, raw, source.index.crcAt(i), 0, head.size);
        rememberBig(at, 0, shape);
        continue;
      }
      emit(oid, raw, source.index.crcAt(i), 0, head.size);
    }
  }
  await new Promise((resolve) => setImmediate(resolve));
  const { pack, size } = layoutPack(parts, entries.length);
  const trailer = await hash(pack.subarray(0, size));
  return sealPackGently(pack, size, trailer, entries);
}
