/**
 * Merging the packs of one bare repository (see pack-store.ts), so lookups stay cheap.
 *
 * Once more than {@link MAX_PACKS} packs exist, the smallest are merged geometrically (each kept
 * pack holds at least twice the objects of all smaller ones together) by copying their entries
 * byte for byte, in the background, then the merged packs are deleted, index first. Big folders
 * are stored as deltas in merged packs (see pack-merge.ts). Packs holding ref-deltas (a base
 * named by oid, possibly elsewhere) are left to git.
 *
 * Where the work runs: the merged pack's bytes are computed on the merge thread
 * (pack-merge-thread.ts) when the store is on node:fs, else here in slices. Either way this
 * thread places the result: the merged pack and its index written to temp files and flushed,
 * renamed pack first and index last, the folder flushed, then the replaced packs deleted, index
 * first. A crash at any step leaves every object in some whole, indexed pack (at worst twice,
 * which git allows); readers that loaded a deleted pack rescan (see pack-reader.ts).
 */
import { webcrypto } from "node:crypto";
import { WorkflowHostError } from "../errors.js";
import type { FsAdapter } from "./fs-adapter.js";
import type { ScopedLruCache } from "./lru-cache.js";
import { type EncodedPack, packHasRefDeltas } from "./pack-file.js";
import type { PackIndex } from "./pack-index.js";
import { type MergeJob, runMergeJob } from "./pack-merge-job.js";
import { MergeThreadUnavailable, mergeOnThread } from "./pack-merge-thread.js";
import { type LoadedPack, type PackReader, REVERSE_INDEX_MIN_OBJECTS, writeReverseIndex } from "./pack-reader.js";
import { encodeReverseIndex, packOrder, parseReverseIndex } from "./pack-rev-index.js";
import type { PackWriter } from "./pack-writer.js";
import type { DeltaBase, ParsedTree } from "./tree-object.js";
import type { Oid } from "./types.js";

/** More packs than this and the smallest are merged. */
export const MAX_PACKS = 16;
/**
 * Up to this many packs a merge on the merge thread gives way to the process's commits in
 * flight (pack-merge-thread.ts); with more (a merge slowed that way while commits keep adding
 * packs), it runs through. Below git's `gc.autoPackLimit` (50), past which a `git push` into the
 * repository starts `git gc --auto`.
 */
export const YIELD_MAX_PACKS = 2 * MAX_PACKS;

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
  /**
   * The deltas big trees were written with, by tree oid (a bounded set of recent ones: see
   * object-store.ts): a merge stores such a tree as its delta when the base comes before it.
   */
  readonly knownDeltas?: () => Iterable<readonly [Oid, DeltaBase]>;
  /**
   * Whether merges run on the process's merge thread (pack-merge-thread.ts), which reads the
   * packs with node:fs itself; default: when `fs` is node:fs. Otherwise (memfs) they run here,
   * in slices.
   */
  readonly mergeOnThread?: boolean;
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
  const onThread = opts.mergeOnThread ?? fs.isNodeFs;
  let merging: Promise<void> | null = null;

  /**
   * Puts a merged pack in place, its name flushed before the packs it replaces are deleted, then
   * its reverse index (`.rev`, see pack-rev-index.ts): computed on the merge thread when it ran
   * there (`rev`), checked here before it is written. Without it (a crash before, a write that
   * failed) readers sort the offsets and write one themselves.
   */
  async function place(encoded: EncodedPack & { readonly rev?: Buffer }): Promise<LoadedPack> {
    const placed = await writer.stage(encoded, true).publish();
    if (placed.index.count >= REVERSE_INDEX_MIN_OBJECTS) {
      const bytes = encoded.rev ?? encodeReverseIndex(placed.index, packOrder(placed.index));
      const starts = parseReverseIndex(bytes, placed.index);
      if (starts !== null) {
        placed.index.useReverseIndex(starts);
        await writeReverseIndex(fs, packDir, placed.name, bytes);
      }
    }
    return placed;
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
    return oldestFirst(byCount.slice(0, Math.max(2, upto + 1)));
  }

  /**
   * `chosen` oldest first by their objects' age (PackReader.ageOf; not the reader's list,
   * whose order follows lookups): consecutive versions of a big folder then meet base before
   * target, so each is stored as a delta against the one before.
   */
  function oldestFirst(chosen: LoadedPack[]): LoadedPack[] {
    const age = new Map(chosen.map((p) => [p.name, reader.ageOf(p)]));
    return chosen.sort((a, b) => (age.get(a.name) as number) - (age.get(b.name) as number) || (a.name < b.name ? -1 : 1));
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
    return oldestFirst(chosen);
  }

  /** Merges until at most {@link MAX_PACKS} packs are left (commits may add packs meanwhile). */
  async function mergeSmallPacks(): Promise<void> {
    while (reader.packs.length > MAX_PACKS) {
      if (!(await mergeOnce())) return;
    }
  }

  /**
   * The known deltas (see {@link PackMaintenanceOptions.knownDeltas}) of trees in `chosen`,
   * whatever their size: a tree first merged without its base (stored whole, or as a delta of an
   * older version) gets its delta when a later merge holds both. Found by looking the few
   * hundred known oids up in the chosen packs' indexes, not the packs' objects up among the
   * known (a merged pack holds hundreds of thousands): cheap enough for the event loop, which
   * must hand them to the thread (it cannot call back).
   */
  function knownDeltas(chosen: readonly LoadedPack[]): [Oid, DeltaBase][] {
    const known: [Oid, DeltaBase][] = [];
    if (opts.knownDeltas === undefined) return known;
    for (const [oid, delta] of opts.knownDeltas()) {
      if (chosen.some((pack) => pack.index.find(oid) >= 0)) known.push([oid, delta]);
    }
    return known;
  }

  /** The merge on this thread: reads through `fs`, helped by the store's caches. */
  function mergeHere(chosen: readonly LoadedPack[]): Promise<EncodedPack | null> {
    const indexes = new Map(chosen.map((p) => [p.name, p.index]));
    const job: MergeJob = { packDir, sources: chosen.map((p) => ({ name: p.name, size: p.size })), known: knownDeltas(chosen) };
    return runMergeJob(
      job,
      { readRange: (path, start, length) => fs.readRange(path, start, length), index: async (source) => indexes.get(source.name) as PackIndex },
      {
        ...(opts.cachedTree === undefined ? {} : { cachedTree: opts.cachedTree }),
        // The merged pack's checksum (megabytes of SHA-1) is computed off the event loop.
        hash: async (body) => Buffer.from(await webcrypto.subtle.digest("SHA-1", body)),
      },
    );
  }

  /** The merged pack of `chosen`: on the merge thread when there is one, else here. */
  async function merge(chosen: readonly LoadedPack[]): Promise<(EncodedPack & { readonly rev?: Buffer }) | null> {
    if (!onThread) return mergeHere(chosen);
    // The thread reads the pack folder with node:fs itself: it is checked here first.
    await fs.checkFolder?.(packDir);
    try {
      // Gives way to commits in flight while packs are few; once they pile up, merges first.
      const yieldToCommits = reader.packs.length <= YIELD_MAX_PACKS;
      return await mergeOnThread({ packDir, sources: chosen.map((p) => ({ name: p.name, size: p.size })), known: knownDeltas(chosen), yieldToCommits });
    } catch (error) {
      if (!(error instanceof MergeThreadUnavailable)) throw error;
      return mergeHere(chosen);
    }
  }

  /** One merge of the {@link mergeSet} (or of `pick`). @returns whether another round may make progress */
  async function mergeOnce(pick: () => LoadedPack[] = mergeSet): Promise<boolean> {
    let chosen: LoadedPack[] = [];
    try {
      chosen = pick();
      if (chosen.length < 2) return false;
      const merged = await merge(chosen);
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
        // Its reverse index, then its index: without the index nobody starts reading the pack;
        // readers mid-way rescan. (A crash between leaves a pack without `.rev`, still whole.)
        // Only a hint: something there that cannot be removed (a folder) must not keep the pack.
        await fs.unlinkQuiet(`${packDir}/${name}.rev`).catch(() => undefined);
        await fs.unlinkQuiet(`${packDir}/${name}.idx`);
        await fs.unlinkQuiet(`${packDir}/${name}.pack`);
        packBytes.delete(repoKey, name);
      }
      return true;
    } catch (error) {
      // A source whose entry does not match its index (a damaged pack, see pack-merge.ts) is
      // left out of later merges, as git's packs with ref-deltas are; the others merge on.
      if (error instanceof WorkflowHostError && error.data.damagedSource === true) {
        const damaged = reader.packs.find((pack) => pack.name === error.data.pack);
        if (damaged !== undefined && damaged.mergeable) {
          damaged.mergeable = false;
          return true;
        }
      }
      // A source this process wrote is read from the bytes it kept, so no read met its file
      // truncated or deleted since: checked now, it is left out and the others merge on (else
      // the same merge failed after every commit).
      if (await reader.recheckWritten(chosen.map((pack) => pack.name)).catch(() => false)) return true;
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
