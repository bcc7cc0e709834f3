/**
 * Merging the packs of one bare repository (see pack-store.ts), so lookups stay cheap.
 *
 * Once more than {@link MAX_PACKS} packs exist, the smallest are merged geometrically (each kept
 * pack holds at least twice the objects of all smaller ones together) by copying their entries
 * byte for byte, in the background, then the merged packs are deleted, index first. Big folders
 * are stored as deltas in merged packs (see pack-merge.ts). Packs holding ref-deltas (a base
 * named by oid, possibly elsewhere) are left to git.
 */
import { webcrypto } from "node:crypto";
import type { FsAdapter } from "./fs-adapter.js";
import type { ScopedLruCache } from "./lru-cache.js";
import { type EncodedPack, packHasRefDeltas, type PackSource } from "./pack-file.js";
import { mergePacks } from "./pack-merge.js";
import { corrupt, type LoadedPack, type PackReader, PackGone } from "./pack-reader.js";
import type { PackWriter } from "./pack-writer.js";
import type { DeltaBase, ParsedTree } from "./tree-object.js";
import type { Oid } from "./types.js";

/** More packs than this and the smallest are merged. */
export const MAX_PACKS = 16;

export interface PackMaintenanceOptions {
  readonly fs: FsAdapter;
  /** `<gitdir>/objects/pack`. */
  readonly packDir: string;
  readonly repoKey: string;
  /** The whole-pack cache, whose entries of deleted packs are dropped. */
  readonly packBytes: ScopedLruCache<Buffer>;
  readonly reader: PackReader;
  readonly writer: PackWriter;
  /** A parsed tree by oid when one is cached (merging uses it instead of parsing big folders). */
  readonly cachedTree?: (oid: Oid) => ParsedTree | undefined;
  /** The delta a big tree was written with, when known (merging stores it as is). */
  readonly deltaBase?: (oid: Oid) => DeltaBase | undefined;
}

/** The merges of one repository's packs; see PackStore.maintain, compact and idle. */
export interface PackMaintenance {
  maintain(): void;
  compact(): Promise<void>;
  /** Resolves when no merge is running. */
  idle(): Promise<void>;
}

/** Creates the merging of the packs `reader` knows, placing merged packs through `writer`. */
export function createPackMaintenance(opts: PackMaintenanceOptions): PackMaintenance {
  const { fs, packDir, repoKey, packBytes, reader, writer } = opts;
  let merging: Promise<void> | null = null;

  /** Puts a merged pack in place, its name flushed before the packs it replaces are deleted. */
  function place(encoded: EncodedPack): Promise<LoadedPack> {
    return writer.stage(encoded, true).publish();
  }

  /**
   * Which packs to merge: the smallest by object count, until each kept pack holds at least
   * twice the objects of all smaller ones together. Counted in objects, not bytes: lookups and
   * merging cost per object, while a commit's pack is mostly bytes of one big folder (a
   * 10 000-run `runs/` tree) in a handful of objects; by bytes, every merge would also re-copy
   * a recovery-sized pack of 100 000 objects.
   */
  function mergeSet(): LoadedPack[] {
    const packs = reader.packs;
    const byCount = packs.filter((p) => p.mergeable).sort((a, b) => a.index.count - b.index.count);
    let below = 0;
    let upto = 1;
    byCount.forEach((pack, i) => {
      if (i > 0 && pack.index.count < 2 * below) upto = i;
      below += pack.index.count;
    });
    const chosen = byCount.slice(0, Math.max(2, upto + 1));
    // Oldest first (`packs` is newest first): consecutive versions of a big folder then meet
    // base before target, so each is stored as a delta against the one before.
    const age = new Map(packs.map((p, i) => [p.name, i]));
    return chosen.sort((a, b) => (age.get(b.name) ?? 0) - (age.get(a.name) ?? 0));
  }

  /**
   * The packs a quiet merge takes: every mergeable pack but the biggest (by objects) when they
   * hold fewer than half its objects together, else all of them; none when that is one pack.
   * Oldest first, as {@link mergeSet}.
   */
  function quietMergeSet(): LoadedPack[] {
    const packs = reader.packs;
    const byCount = packs.filter((p) => p.mergeable).sort((a, b) => a.index.count - b.index.count);
    const biggest = byCount.at(-1);
    if (biggest === undefined) return [];
    const rest = byCount.slice(0, -1);
    const restCount = rest.reduce((n, p) => n + p.index.count, 0);
    const chosen = 2 * restCount < biggest.index.count ? rest : byCount;
    if (chosen.length < 2) return [];
    const age = new Map(packs.map((p, i) => [p.name, i]));
    return chosen.sort((a, b) => (age.get(b.name) ?? 0) - (age.get(a.name) ?? 0));
  }

  /** Merges until at most {@link MAX_PACKS} packs are left (commits may add packs meanwhile). */
  async function mergeSmallPacks(): Promise<void> {
    while (reader.packs.length > MAX_PACKS) {
      if (!(await mergeOnce())) return;
    }
  }

  /**
   * A merge source reading only the entries the merge will copy: a big folder this store wrote
   * with a known delta (see ParsedTree.deltaBase) whose base comes earlier in the merge is stored
   * as that delta and never read, which for per-commit packs of a big deployment is ~99% of
   * their bytes. The rest is read in as few ranges as the entries' layout allows; an entry asked
   * for outside them is read on its own.
   * @param earlier oids of the sources before this one (this pack's are added)
   */
  async function mergeSource(pack: LoadedPack, earlier: Set<Oid>): Promise<PackSource> {
    const path = `${packDir}/${pack.name}.pack`;
    const index = pack.index;
    const order = Array.from({ length: index.count }, (_, i) => i).sort((a, b) => index.offsetAt(a) - index.offsetAt(b));
    const ranges: { start: number; end: number }[] = [];
    for (const i of order) {
      const oid = index.oidAt(i);
      const known = opts.deltaBase?.(oid);
      const skip = known !== undefined && earlier.has(known.oid);
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
      const bytes = await fs.readRange(path, range.start, range.end - range.start);
      if (bytes.byteLength !== range.end - range.start) throw new PackGone(pack.name);
      loaded.push({ ...range, bytes: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength) });
    }
    return {
      name: pack.name,
      index,
      async entry(start, end) {
        for (const range of loaded) {
          if (range.start <= start && end <= range.end) return range.bytes.subarray(start - range.start, end - range.start);
        }
        const bytes = await fs.readRange(path, start, end - start);
        if (bytes.byteLength !== end - start) throw new PackGone(pack.name);
        return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      },
    };
  }

  /** One merge of the {@link mergeSet} (or of `pick`). @returns whether another round may make progress */
  async function mergeOnce(pick: () => LoadedPack[] = mergeSet): Promise<boolean> {
    try {
      const chosen = pick();
      if (chosen.length < 2) return false;
      const sources: PackSource[] = [];
      const earlier = new Set<Oid>();
      for (const pack of chosen) sources.push(await mergeSource(pack, earlier));
      // The merged pack's checksum (megabytes of SHA-1) is computed off the event loop.
      const merged = await mergePacks(sources, async (body) => Buffer.from(await webcrypto.subtle.digest("SHA-1", body)), opts.cachedTree, opts.deltaBase, async (oid) => {
        const object = await reader.read(oid, false);
        if (object === null) throw corrupt(oid, "missing while merging packs");
        return object;
      });
      if (merged === null) {
        // A source holds ref-deltas (git's): find it and leave it to git from now on.
        for (const pack of chosen) {
          const raw = await fs.readFile(`${packDir}/${pack.name}.pack`);
          if (packHasRefDeltas(Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength), pack.index)) pack.mergeable = false;
        }
        return chosen.some((pack) => !pack.mergeable);
      }
      const placed = await place(merged);
      const gone = new Set(chosen.map((p) => p.name));
      gone.delete(placed.name);
      reader.adopt(placed, gone);
      for (const name of gone) {
        // Index first: without it nobody starts reading the pack; readers mid-way rescan.
        await fs.unlinkQuiet(`${packDir}/${name}.idx`);
        await fs.unlinkQuiet(`${packDir}/${name}.pack`);
        packBytes.delete(repoKey, name);
      }
      return true;
    } catch {
      // Merging is an optimisation: on any failure the packs stay as they were (a merged pack
      // already in place only duplicates objects, which git allows).
      return false;
    }
  }

  return {
    maintain() {
      if (merging !== null || reader.packs.length <= MAX_PACKS) return;
      merging = mergeSmallPacks().finally(() => {
        merging = null;
      });
    },
    async compact() {
      while (merging !== null) await merging;
      if (writer.closed) return;
      merging = mergeOnce(quietMergeSet)
        .then(() => undefined)
        .finally(() => {
          merging = null;
        });
      await merging;
    },
    async idle() {
      await merging;
    },
  };
}
