/**
 * The pack files of one bare repository: finding objects in them, writing the objects of one
 * commit as one new pack, and merging small packs so lookups stay cheap. This module composes
 * the three parts: reading (pack-reader.ts: index lookups, whole and windowed pack reads, delta
 * decoding), writing (pack-writer.ts: temp files, flush, rename; crash safety and durability
 * are described there) and merging (pack-maintenance.ts; the merged pack's bytes are computed
 * on a worker thread, pack-merge-thread.ts, so a merge never holds the event loop).
 *
 * Why packs: a commit that fires a thousand timers on a 10 000-run deployment writes ~3 000
 * objects (a blob, the run's two trees on the path, then `runs/` and the root). As loose
 * objects that is ~15 000 file-system calls (temp write, rename, fan-out folders, existence
 * checks) and dominated the commit; as one pack it is two files. Reading a recovery's 100 000
 * event blobs likewise costs one file read instead of 100 000 opens.
 */
import type { Clock } from "../time/clock.js";
import type { FsAdapter } from "./fs-adapter.js";
import type { GitObject } from "./git-object.js";
import type { ScopedLruCache } from "./lru-cache.js";
import { encodePack, encodePackGently, packParts } from "./pack-file.js";
import type { PackedObjects } from "./packed-objects.js";
import { createPackMaintenance, MAX_PACKS } from "./pack-maintenance.js";
import { createPackReader } from "./pack-reader.js";
import { createPackWriter } from "./pack-writer.js";
import type { DeltaBase, ParsedTree } from "./tree-object.js";
import type { Oid } from "./types.js";

export { MAX_PACKS };
export { STALE_SPARE_MS, STALE_TEMP_MS } from "./pack-writer.js";

export interface PackStoreOptions {
  readonly fs: FsAdapter;
  /**
   * For the small files (see QUICK_PACK_BYTES), the renames that publish a pack and the pack
   * folder's listing (see fs-adapter.ts); default `fs`.
   */
  readonly quickFs?: FsAdapter;
  readonly gitdir: string;
  /** Distinguishes this repository's entries in the shared cache. */
  readonly repoKey: string;
  /** Whole pack files by pack name (scoped by `repoKey`), weighted by bytes; shared by all repositories. */
  readonly packBytes: ScopedLruCache<Buffer>;
  /** Windows of big packs (see WINDOW_BYTES), shared by all repositories; default `packBytes`. */
  readonly packWindows?: ScopedLruCache<Buffer>;
  readonly durable: boolean;
  /**
   * Reads the time the ages of temp files are measured at (see pack-writer.ts); they are
   * compared with mtimes the file system stamps, so this is the system clock in production.
   */
  readonly clock: Clock;
  /** A parsed tree by oid when one is cached (merging uses it instead of parsing big folders). */
  readonly cachedTree?: (oid: Oid) => ParsedTree | undefined;
  /** The deltas big trees were written with, by tree oid (merging stores them as they are). */
  readonly knownDeltas?: () => Iterable<readonly [Oid, DeltaBase]>;
  /**
   * Whether merges run on the process's merge thread (pack-merge-thread.ts), which reads the
   * packs with node:fs; default: when `fs` is node:fs itself.
   */
  readonly mergeOnThread?: boolean;
}

export interface PackStore {
  /**
   * The object from a pack, checked against its oid; null when no pack holds it.
   * @param rescan look for packs added since the last scan before giving up
   * @param point a read on its own (default false): out of a pack too big to read whole, only
   *   the object's bytes (a block of a few KiB around them) are read, unless its window is in
   *   memory already; otherwise the whole window is read and cached, for walks that read a pack
   *   mostly in order. A commit's edit reads the folders of runs scattered over the deployment:
   *   at 100,000 runs each such read loaded a 1 MiB window that the next commit no longer had.
   * @throws `object_corrupt` when a pack holds it but it cannot be decoded
   */
  read(oid: Oid, rescan: boolean, point?: boolean): Promise<GitObject | null>;
  /**
   * The object, when a known pack holds it whole (not as a delta) in bytes already in memory
   * (a cached pack or window): checked as {@link read} checks it, without any I/O and without
   * a promise, for walks reading a million small objects. Undefined whenever {@link read} is
   * needed instead (not scanned yet, not found, not in memory, a delta).
   * @param view when the entry is stored uncompressed (as this store writes small objects), its
   *   content as a view of the pack's bytes in memory instead of a copy: for a reader that
   *   neither changes nor keeps it (a walk parsing each event once); default false
   * @throws `object_corrupt` as {@link read}
   */
  readInMemory(oid: Oid, view?: boolean): GitObject | undefined;
  /**
   * Writes `objects` as one new pack; resolves once it is in place (its bytes flushed when
   * durable; its name is made durable by the ref's folder flush, see module comment).
   */
  write(objects: readonly GitObject[]): Promise<void>;
  /**
   * Starts writing `objects` as one new pack to temp files, returning at once: `publish` puts
   * it in place (as {@link write}), `discard` removes the temp files. One of the two must be
   * called. Lets a commit write its pack while it waits for the ref lock. With `pause`, the
   * pack is encoded in slices (see encodePackGently) and written once encoded. `packed`: objects
   * already laid out as pack entries (packed-objects.ts), placed first in the pack as they are.
   */
  stage(objects: readonly GitObject[], pause?: () => Promise<void>, packed?: PackedObjects): StagedObjects;
  /**
   * Whether a pack this store knows holds `oid` (an in-memory index lookup, no rescan). A writer
   * skips such objects: writing them again (a subtree or file put back unchanged, as retention's
   * archive commit does) would only store a second copy until a merge drops it.
   */
  contains(oid: Oid): boolean;
  /** Sets `found[i]` to 1 for each of the oids of `oids` (20 bytes each, end to end) a known pack holds. */
  markPacked(oids: Uint8Array, found: Uint8Array): void;
  /**
   * Starts merging small packs in the background when there are too many (see module
   * comment); one merge at a time, failures ignored. Returns at once: a merge copies megabytes
   * and must not delay the commit that triggered it.
   */
  maintain(): void;
  /**
   * A merge for a quiet moment (see {@link quietMergeSet}): the packs besides the biggest are
   * merged into one, so recent commits get their deltas without waiting for {@link MAX_PACKS};
   * the biggest is merged in too only once the others together hold half its objects, so each
   * object is rewritten O(log n) times over the repository's life, never the whole history on
   * every call. Waits for a merge already running first. Failures are ignored (as maintain's).
   */
  compact(): Promise<void>;
  /** Resolves when no merge is running. */
  idle(): Promise<void>;
  /**
   * Waits for the running merge and removes the spare temp files; later commits create their
   * temp files themselves (the store stays usable).
   */
  close(): Promise<void>;
  /** Number of packs known. */
  readonly count: number;
}

/** Objects written to temp files, not yet visible to any reader. */
export interface StagedObjects {
  /** Moves them into place; resolves once a reader can find them (bytes flushed when durable). */
  publish(): Promise<void>;
  /** Removes the temp files (after the writes in flight finish); never throws. */
  discard(): Promise<void>;
  /**
   * Resolves (never rejects) once nothing reads the objects' contents for this write any more:
   * the pack's bytes are written, or encoding or writing failed. Owned bytes (tree-buffers.ts)
   * are reused only after it.
   */
  readonly settled: Promise<void>;
}

/** Creates the pack store of the bare repository at `gitdir`. */
export function createPackStore(opts: PackStoreOptions): PackStore {
  const { fs, gitdir, repoKey, packBytes, durable, clock } = opts;
  const quickFs = opts.quickFs ?? fs;
  const packDir = `${gitdir}/objects/pack`;
  const writer = createPackWriter({ fs, quickFs, gitdir, durable, clock });
  const reader = createPackReader({ fs, quickFs, packDir, repoKey, packBytes, packWindows: opts.packWindows ?? packBytes, beforeScan: () => writer.sweep(), clock });
  const maintenance = createPackMaintenance({
    fs,
    packDir,
    repoKey,
    packBytes,
    reader,
    writer,
    ...(opts.cachedTree === undefined ? {} : { cachedTree: opts.cachedTree }),
    ...(opts.knownDeltas === undefined ? {} : { knownDeltas: opts.knownDeltas }),
    ...(opts.mergeOnThread === undefined ? {} : { mergeOnThread: opts.mergeOnThread }),
  });

  function stage(objects: readonly GitObject[], pause?: () => Promise<void>, packed?: PackedObjects): StagedObjects {
    if (pause !== undefined) {
      const encoding = encodePackGently(objects, pause, packed).then((encoded) => ({ encoded, staged: writer.stage(encoded, false) }));
      encoding.catch(() => undefined);
      return {
        settled: encoding.then(
          ({ staged }) => staged.settled,
          () => undefined,
        ),
        async publish() {
          const { encoded, staged } = await encoding;
          await reader.ensureScanned();
          // The bytes written, for the reader to take instead of reading the file back (PackReader.adopt).
          reader.adopt(await staged.publish(), undefined, { parts: packParts(encoded), lent: encoded.lent ?? [] });
        },
        async discard() {
          const staged = await encoding.catch(() => null);
          await staged?.staged.discard();
        },
      };
    }
    const encoded = encodePack(objects, packed);
    const staged = writer.stage(encoded, false);
    return {
      settled: staged.settled,
      async publish() {
        await reader.ensureScanned();
        reader.adopt(await staged.publish(), undefined, { parts: packParts(encoded), lent: encoded.lent ?? [] });
      },
      discard: staged.discard,
    };
  }

  return {
    read: reader.read,
    readInMemory: reader.readInMemory,
    async write(objects) {
      await stage(objects).publish();
    },
    stage,
    contains: reader.contains,
    markPacked: reader.markPacked,
    maintain: maintenance.maintain,
    compact: maintenance.compact,
    async idle() {
      await writer.swept();
      await maintenance.idle();
    },
    async close() {
      await reader.close();
      await writer.close();
      await maintenance.idle();
    },
    get count() {
      return reader.packs.length;
    },
  };
}
