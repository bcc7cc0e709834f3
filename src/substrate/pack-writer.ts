/**
 * Writing a pack and its index into one bare repository (see pack-store.ts), and removing what
 * killed writers left behind.
 *
 * Crash safety is git's: the pack and its index are written to temp files in `objects/`, the
 * pack is renamed into `objects/pack/` first and its index last. Git and this store only look
 * at packs that have an index, so a reader sees either no new pack or a whole one, and a crash
 * leaves at worst a temp file or an unreferenced pack (as with loose objects, nothing refers to
 * the new objects until the ref moves).
 *
 * Durability ("fsync"), by git's rules: a commit's pack and index are flushed (both at once)
 * before they are renamed, so their bytes are on disk before the ref can move; the renames
 * themselves are not flushed folder by folder. Git never flushes folders: it relies on the
 * file system keeping metadata operations in order (ext4, XFS and btrfs journal them in
 * sequence), so a ref rename that survived a crash implies the pack renames made before it
 * did. The ref store flushes the ref's folder once after the ref moved, which makes the whole
 * commit durable when the write returns. A merge flushes the pack folder once, before deleting
 * the packs it replaces (a deletion that outran the merged pack's name would lose objects); the
 * deletions are not flushed (a deleted pack that comes back is only a duplicate).
 */
import { randomBytes } from "node:crypto";
import type { Clock } from "../time/clock.js";
import { errnoCode, type FileHandleLike, type FsAdapter } from "./fs-adapter.js";
import { type EncodedPack, packLength, parsePackIndex } from "./pack-file.js";
import { type LoadedPack, QUICK_PACK_BYTES } from "./pack-reader.js";

/** Temp files in `objects/` older than this (ms) are a dead writer's and are removed. */
export const STALE_TEMP_MS = 15 * 60_000;
/** A spare temp file pair older than this (ms) is replaced, not used (see makeSpare). */
const SPARE_MAX_AGE_MS = 60_000;
/**
 * An empty temp file older than this (ms) is a spare no writer will use (spares are taken
 * only while younger than {@link SPARE_MAX_AGE_MS} and written the moment they are taken), left
 * by a process that was killed: removed at open rather than after {@link STALE_TEMP_MS}.
 */
export const STALE_SPARE_MS = 5 * SPARE_MAX_AGE_MS;
const EMPTY = new Uint8Array(0);
/**
 * A commit's pack (staged with `flushFolder` false) up to this size (bytes) is written with the
 * quick (blocking) adapter into the spare temp pair, like packs up to QUICK_PACK_BYTES: a fire
 * commit at 10,000 runs is ~380 KB (its `runs/` folder, stored), and through the thread pool its
 * two files cost six round trips (open, write, close each), every one of which waits for a pool
 * thread and then for the event loop to be scheduled again; on a busy 2-core machine those waits,
 * not the writes (~0.1 ms into the page cache), made the slow commits that the p99 fires wait on
 * (design notes §92). Bigger commits (an import; `runs/` at 100,000 runs is 3.8 MB) and merged
 * packs still go through the pool, so a slow disk holds the event loop for at most this much.
 * Flushes (durability "fsync") always go through the pool.
 */
export const QUICK_COMMIT_PACK_BYTES = 1024 * 1024;

export interface PackWriterOptions {
  readonly fs: FsAdapter;
  /** For small packs, the renames that publish a pack (see QUICK_PACK_BYTES). */
  readonly quickFs: FsAdapter;
  readonly gitdir: string;
  readonly durable: boolean;
  /** Ages of temp files, compared with the mtimes the file system stamps on them. */
  readonly clock: Clock;
}

/** A pack written to temp files, not yet visible to any reader. */
export interface StagedPack {
  /** Renames it into place; resolves with the pack as loaded (bytes flushed when durable). */
  publish(): Promise<LoadedPack>;
  /** Removes the temp files (after the writes in flight finish); never throws. */
  discard(): Promise<void>;
  /** Resolves (never rejects) once both files' writes settled: the pack's pieces are read no more. */
  readonly settled: Promise<void>;
}

export interface PackWriter {
  /**
   * Writes `encoded` to two temp files in `objects/`; `publish` renames the pack into
   * `objects/pack/` and then its index (flushing the pack folder after when `flushFolder` and
   * durable), `discard` removes the temp files.
   * @param flushFolder true for a merged pack, false for a commit's pack (its name is made durable
   *   by the ref folder's flush; written with the quick adapter up to QUICK_COMMIT_PACK_BYTES)
   */
  stage(encoded: EncodedPack, flushFolder: boolean): StagedPack;
  /**
   * Starts the sweep of stale temp files (see sweepTemps): the first call, and a call once a
   * file the last sweep kept for being too young has turned stale; else does nothing.
   */
  sweep(): void;
  /** Resolves when the sweep (if started) is done. */
  swept(): Promise<void>;
  /** Whether {@link close} was called. */
  readonly closed: boolean;
  /** Removes the spare temp files and waits for the sweep; later stages make their own files. */
  close(): Promise<void>;
}

/** Creates the pack writer of the bare repository at `gitdir`. */
export function createPackWriter(opts: PackWriterOptions): PackWriter {
  const { fs, quickFs, gitdir, durable, clock } = opts;
  const packDir = `${gitdir}/objects/pack`;
  const tempPrefix = randomBytes(4).toString("hex");
  let tempCounter = 0;
  /** The last sweep of stale temp files, running or done (see sweepTemps). */
  let sweeping: Promise<void> | null = null;
  /**
   * When the first file the last sweep kept only for being too young (another writer's) turns
   * stale; null when it kept none. A host restarted within minutes of a kill finds the killed
   * one's spare pair young at its first sweep: swept again then, not at its own next restart.
   */
  let sweepAgainAt: number | null = null;
  let packDirMade = false;
  const now = (): number => clock().getTime();

  /**
   * Removes what killed writers left, at the first read of the repository and again (at a read
   * or commit) once a file it kept for being too young has turned stale, in the background,
   * best effort:
   * - temp files in `objects/` (git's `tmp_` prefix: `tmp_pack_`, `tmp_idx_`, `tmp_obj_`) older
   *   than {@link STALE_TEMP_MS}, or empty and older than {@link STALE_SPARE_MS} (a spare pair).
   *   Nothing refers to them (a pack counts once renamed into `objects/pack/`), and a live
   *   writer's temp files are milliseconds old;
   * - a `pack-*.rev` without its `.idx`, older than {@link STALE_TEMP_MS}: a reader's reverse
   *   index (pack-rev-index.ts) renamed into place just after a merge removed its pack, or a
   *   pack removed by hand. Git never removes one and warns about it at every `git gc`.
   * Git itself removes such files only at `git gc`, after two weeks. A `pack-*.pack` without its
   * `.idx` is not removed: it may be the only copy of its objects (an index lost), and the
   * reader indexes it once it is old enough (pack-reader.ts, ORPHAN_PACK_MS); one a killed
   * merge or commit placed is whole, and indexed it only duplicates objects until a merge.
   * This writer's own temp files are this writer's to remove (close, discard, an old spare
   * replaced): one kept never makes a sweep again.
   */
  async function sweepTemps(): Promise<void> {
    let againAt = Number.POSITIVE_INFINITY;
    const keep = (staleAt: number): void => {
      againAt = Math.min(againAt, Math.floor(staleAt) + 1);
    };
    try {
      const dir = `${gitdir}/objects`;
      for (const name of await fs.readdirOrEmpty(dir)) {
        if (!name.startsWith("tmp_")) continue;
        const stat = await fs.statOrNull(`${dir}/${name}`);
        if (stat === null || !stat.isFile()) continue;
        const empty = Number(stat.size) === 0;
        const ageMs = now() - stat.mtimeMs;
        if (ageMs > STALE_TEMP_MS || (empty && ageMs > STALE_SPARE_MS)) await fs.unlinkQuiet(`${dir}/${name}`);
        else if (!name.startsWith(`tmp_pack_${tempPrefix}`) && !name.startsWith(`tmp_idx_${tempPrefix}`)) keep(stat.mtimeMs + (empty ? STALE_SPARE_MS : STALE_TEMP_MS));
      }
      const names = new Set(await fs.readdirOrEmpty(packDir));
      for (const name of names) {
        if (!/^pack-[0-9a-f]{40,64}\.rev$/.test(name) || names.has(name.replace(/\.rev$/, ".idx"))) continue;
        const stat = await fs.statOrNull(`${packDir}/${name}`);
        if (stat === null || !stat.isFile()) continue;
        if (now() - stat.mtimeMs <= STALE_TEMP_MS) {
          keep(stat.mtimeMs + STALE_TEMP_MS);
          continue;
        }
        // Looked at once more just before: an index that arrived meanwhile makes it a pack.
        if ((await fs.statOrNull(`${packDir}/${name.replace(/\.rev$/, ".idx")}`)) === null) await fs.unlinkQuiet(`${packDir}/${name}`);
      }
    } catch {
      // A file left is only wasted space.
    }
    sweepAgainAt = Number.isFinite(againAt) ? againAt : null;
  }

  const tempName = (kind: "pack" | "idx"): string => `${gitdir}/objects/tmp_${kind}_${tempPrefix}${(tempCounter++).toString(36)}`;

  /**
   * Two empty temp files made ahead of time (through the thread pool, off the commit's path)
   * for the next small pack: creating a file is the slowest call of a commit here (~0.3 ms on
   * ext4, against ~0.005 ms to open one that exists), and a commit needs two. Used only while
   * younger than {@link SPARE_MAX_AGE_MS}, far below the age at which any store sweeps temp
   * files ({@link STALE_TEMP_MS}); removed by {@link PackWriter.close}.
   */
  let spare: { readonly pack: string; readonly idx: string; readonly madeAt: number } | null = null;
  let makingSpare: Promise<void> | null = null;
  let closed = false;

  function makeSpare(): void {
    if (spare !== null || makingSpare !== null || closed) return;
    const pair = { pack: tempName("pack"), idx: tempName("idx"), madeAt: now() };
    makingSpare = Promise.all([fs.writeNewFile(pair.pack, EMPTY, false), fs.writeNewFile(pair.idx, EMPTY, false)])
      .then(
        () => {
          if (closed) return removeFiles(pair.pack, pair.idx);
          spare = pair;
        },
        // A spare is an optimisation: without one, the next commit creates its files itself.
        () => removeFiles(pair.pack, pair.idx),
      )
      .finally(() => {
        makingSpare = null;
      });
  }

  /** The spare pair if there is a fresh one (it is then no longer spare), else null. */
  function takeSpare(): { pack: string; idx: string } | null {
    const pair = spare;
    spare = null;
    if (pair === null) return null;
    if (now() - pair.madeAt > SPARE_MAX_AGE_MS) {
      void removeFiles(pair.pack, pair.idx);
      return null;
    }
    return pair;
  }

  async function removeFiles(...paths: string[]): Promise<void> {
    for (const path of paths) await quickFs.unlinkQuiet(path).catch(() => undefined);
  }

  /** Writes `data` into the spare temp file `path`, or creates it when it is gone. */
  async function writeSpare(path: string, data: Uint8Array | readonly Uint8Array[]): Promise<void> {
    let handle: FileHandleLike;
    try {
      handle = await quickFs.open(path, "r+");
    } catch (error) {
      if (errnoCode(error) !== "ENOENT") throw error;
      return quickFs.writeNewFile(path, data, durable);
    }
    try {
      if (data instanceof Uint8Array) await handle.write(data);
      else for (const piece of data) await handle.write(piece);
      if (durable) await handle.sync();
    } finally {
      await handle.close();
    }
  }

  /**
   * Writes `encoded` to two temp files in `objects/`; `publish` renames the pack into
   * `objects/pack/` and then its index, `discard` removes the temp files. Until published, no
   * reader (git or this store) sees the objects. A small pack (≤ QUICK_PACK_BYTES) and a commit's
   * pack (`flushFolder` false, ≤ QUICK_COMMIT_PACK_BYTES) are written with the quick adapter into
   * the spare pair: through the thread pool, the three calls per file cost more than the write
   * itself (measured: −1 ms of a 4 ms signal delivery; §92: the pool's round trips were the slow
   * fire commits' wait). Bigger packs (merges, imports) go through the pool, both files at once,
   * so a slow disk does not stall the event loop.
   */
  function stageEncoded(encoded: EncodedPack, flushFolder: boolean): StagedPack {
    const name = `pack-${encoded.checksum}`;
    const size = packLength(encoded);
    const quick = size <= (flushFolder ? QUICK_PACK_BYTES : QUICK_COMMIT_PACK_BYTES);
    const pair = quick ? takeSpare() : null;
    const tempPack = pair?.pack ?? tempName("pack");
    const tempIdx = pair?.idx ?? tempName("idx");
    const writer = quick ? quickFs : fs;
    const write = (path: string, data: Uint8Array | readonly Uint8Array[]): Promise<void> => (pair !== null ? writeSpare(path, data) : writer.writeNewFile(path, data, durable));
    // A pack holding big objects is written from its pieces (see EncodedPack.parts), never joined.
    const written = Promise.all([write(tempPack, encoded.parts ?? encoded.pack), write(tempIdx, encoded.idx)]);
    // Observed here so a failure is never unhandled; `publish` and `discard` await it again.
    written.catch(() => undefined);
    if (quick) makeSpare();
    const removeTemps = async (): Promise<void> => {
      await written.catch(() => undefined);
      await removeFiles(tempPack, tempIdx);
    };
    return {
      settled: written.then(
        () => undefined,
        () => undefined,
      ),
      async publish() {
        try {
          await written;
          if (!packDirMade) {
            await quickFs.mkdirp(packDir);
            packDirMade = true;
          }
          // The pack before its index: a pack counts once its index exists (git's order too).
          try {
            await quickFs.rename(tempPack, `${packDir}/${name}.pack`);
          } catch (error) {
            // The folder is git's to manage; if it is gone, make it again once.
            if (errnoCode(error) !== "ENOENT") throw error;
            await quickFs.mkdirp(packDir);
            await quickFs.rename(tempPack, `${packDir}/${name}.pack`);
          }
          await quickFs.rename(tempIdx, `${packDir}/${name}.idx`);
        } catch (error) {
          await removeTemps();
          throw error;
        }
        // A commit's pack leaves its folder to the ref's folder flush (see module comment).
        if (durable && flushFolder) await fs.fsyncDir(packDir);
        return { name, index: parsePackIndex(name, encoded.idx, size), size, mergeable: true };
      },
      discard: removeTemps,
    };
  }

  return {
    stage: stageEncoded,
    sweep() {
      // sweepAgainAt is set only once the last sweep is done: never two at once.
      if (sweeping !== null && (sweepAgainAt === null || now() < sweepAgainAt || closed)) return;
      sweepAgainAt = null;
      sweeping = sweepTemps();
    },
    async swept() {
      await sweeping;
    },
    get closed() {
      return closed;
    },
    async close() {
      closed = true;
      await makingSpare;
      const pair = spare;
      spare = null;
      if (pair !== null) await removeFiles(pair.pack, pair.idx);
      await sweeping;
    },
  };
}
