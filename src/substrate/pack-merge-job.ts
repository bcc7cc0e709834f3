/**
 * One merge of pack files, from the files on disk to the merged pack's bytes: what a merge
 * thread runs (pack-merge-worker.ts), and what a store on another file system (memfs) runs in
 * its own thread. It writes nothing: the caller places the result (pack-maintenance.ts), so the
 * crash safety of a merge is the writer's (temp files, flush, rename, then the old packs go).
 *
 * Everything here reads only the source packs: an object whose delta chain would grow too deep
 * is resolved from the pack that holds it (an ofs-delta's base is always in the same pack), so
 * a merge needs neither the store's caches nor its pack list.
 */
import { createHash } from "node:crypto";
import { hashObject } from "./git-object.js";
import type { EncodedPack, PackSource } from "./pack-file.js";
import { applyDelta, inflateEntry, parseEntryHead, typeOfCode } from "./pack-file.js";
import type { PackIndex } from "./pack-index.js";
import { mergePacks } from "./pack-merge.js";
import { packOrder } from "./pack-rev-index.js";
import { corrupt, PackGone } from "./pack-reader.js";
import type { DeltaBase, ParsedTree } from "./tree-object.js";
import type { GitObject } from "./git-object.js";
import type { Oid } from "./types.js";

const OFS_DELTA = 6;
/** Resolved objects kept while a merge runs (consecutive versions of one folder share chains). */
const RESOLVED_KEPT = 16;

/** One pack of a merge, oldest first in {@link MergeJob.sources}. */
export interface MergeJobSource {
  /** `pack-<checksum>`, no extension. */
  readonly name: string;
  /** The pack file's size in bytes (its index needs it to find the last entry's end). */
  readonly size: number;
}

/** What a merge thread is given: plain data only (it crosses a thread boundary). */
export interface MergeJob {
  /** `<gitdir>/objects/pack`. */
  readonly packDir: string;
  readonly sources: readonly MergeJobSource[];
  /** Deltas big trees of the sources were written with (see ParsedTree.deltaBase). */
  readonly known: readonly (readonly [Oid, DeltaBase])[];
  /**
   * Whether the job gives way to the process's commits in flight (see pack-merge-thread.ts);
   * default false.
   */
  readonly yieldToCommits?: boolean;
}

/** How a merge reads the source packs: a byte range, and a whole file. */
export interface MergeJobIo {
  /** `length` bytes of `path` from `start` (fewer when the file is shorter). */
  readRange(path: string, start: number, length: number): Promise<Uint8Array>;
  /** The parsed index of a source (read from `<name>.idx` when the caller has none at hand). */
  index(source: MergeJobSource): Promise<PackIndex>;
}

/** Optional help from a caller that has the store's caches at hand (same thread only). */
export interface MergeJobHelp {
  readonly cachedTree?: (oid: Oid) => ParsedTree | undefined;
  /** The merged pack's SHA-1 (default: node's SHA-1 on this thread). */
  readonly hash?: (body: Buffer) => Promise<Buffer>;
  /** Called before each source entry is handed to the merge (a point where the job may wait). */
  readonly pause?: () => void;
}

function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/**
 * A merge source reading only the entries the merge will copy: a big folder this store wrote
 * with a known delta whose base comes earlier in the merge is stored as that delta and never
 * read, which for per-commit packs of a big deployment is ~99% of their bytes. The rest is read
 * in as few ranges as the entries' layout allows; an entry asked for outside them is read on
 * its own.
 * @param earlier oids of the sources before this one (this pack's are added)
 */
async function mergeSource(path: string, name: string, index: PackIndex, known: ReadonlyMap<Oid, DeltaBase>, earlier: Set<Oid>, io: MergeJobIo, pause?: () => void): Promise<PackSource> {
  const order = packOrder(index);
  const ranges: { start: number; end: number }[] = [];
  for (const i of order) {
    const oid = index.oidAt(i);
    const delta = known.get(oid);
    const skip = delta !== undefined && earlier.has(delta.oid);
    earlier.add(oid);
    if (skip) continue;
    const start = index.offsetAt(i);
    const end = index.endOf(start);
    const last = ranges[ranges.length - 1];
    if (last !== undefined && last.end === start) last.end = end;
    else ranges.push({ start, end });
  }
  const loaded: { start: number; end: number; bytes: Buffer }[] = [];
  for (const range of ranges) {
    const bytes = await io.readRange(path, range.start, range.end - range.start);
    if (bytes.byteLength !== range.end - range.start) throw new PackGone(name);
    loaded.push({ ...range, bytes: asBuffer(bytes) });
  }
  let hint = 0;
  return {
    name,
    index,
    async entry(start, end) {
      pause?.();
      // Entries are asked for in pack order: the range of the last hit is tried first.
      for (let k = 0; k < loaded.length; k++) {
        const at = (hint + k) % loaded.length;
        const range = loaded[at] as (typeof loaded)[number];
        if (range.start <= start && end <= range.end) {
          hint = at;
          return range.bytes.subarray(start - range.start, end - range.start);
        }
      }
      const bytes = await io.readRange(path, start, end - start);
      if (bytes.byteLength !== end - start) throw new PackGone(name);
      return asBuffer(bytes);
    },
  };
}

/**
 * Reads an object whole from the source pack holding it, following ofs-deltas within that pack,
 * and checks it against its oid.
 */
function objectResolver(sources: readonly PackSource[]): (oid: Oid) => Promise<GitObject> {
  const resolved = new Map<string, { typeCode: number; content: Buffer }>();
  async function at(source: PackSource, start: number, depth: number): Promise<{ typeCode: number; content: Buffer }> {
    const key = `${source.name}@${start}`;
    const hit = resolved.get(key);
    if (hit !== undefined) return hit;
    if (depth > 10_000) throw corrupt(`${source.name}@${start}`, "delta chain loops");
    const raw = await source.entry(start, source.index.endOf(start));
    const head = parseEntryHead(source.name, raw);
    let out: { typeCode: number; content: Buffer };
    if (head.typeCode === OFS_DELTA) {
      const base = await at(source, start - (head.baseDistance as number), depth + 1);
      out = { typeCode: base.typeCode, content: applyDelta(source.name, base.content, inflateEntry(source.name, raw, head)) };
    } else {
      out = { typeCode: head.typeCode, content: inflateEntry(source.name, raw, head) };
    }
    resolved.set(key, out);
    if (resolved.size > RESOLVED_KEPT) resolved.delete(resolved.keys().next().value as string);
    return out;
  }
  return async (oid) => {
    for (const source of sources) {
      const i = source.index.find(oid);
      if (i < 0) continue;
      const { typeCode, content } = await at(source, source.index.offsetAt(i), 0);
      const object = hashObject(typeOfCode(typeCode), content);
      if (object.oid !== oid) throw corrupt(oid, "hashes to another oid while merging packs");
      return object;
    }
    throw corrupt(oid, "missing while merging packs");
  };
}

/**
 * Merges the job's packs into one (see pack-merge.ts), reading them through `io`.
 * @returns the merged pack, or null when a source holds a ref-delta (git's; left to git)
 * @throws PackGone when a source vanished (another process merged it, or `git gc` ran);
 *   `object_corrupt` for a source that cannot be decoded
 */
export async function runMergeJob(job: MergeJob, io: MergeJobIo, help: MergeJobHelp = {}): Promise<EncodedPack | null> {
  const known = new Map(job.known);
  const earlier = new Set<Oid>();
  const sources: PackSource[] = [];
  for (const source of job.sources) {
    const index = await io.index(source);
    sources.push(await mergeSource(`${job.packDir}/${source.name}.pack`, source.name, index, known, earlier, io, help.pause));
  }
  const hash = help.hash ?? (async (body: Buffer) => createHash("sha1").update(body).digest());
  return mergePacks(sources, hash, help.cachedTree, (oid) => known.get(oid), objectResolver(sources));
}
