/**
 * The refs of one bare repository, read and moved the way git does it, so git processes and
 * other workflow-host processes can share the repository.
 *
 * Reading: a loose ref file (`refs/heads/main`) wins over `packed-refs`. A loose ref must hold
 * exactly 40 lowercase hex digits and "\n" (or `ref: <name>\n` for a symbolic ref); anything
 * else is a torn or foreign write and is reported as `ref_corrupt`, never read as "no ref".
 * `packed-refs` is read as strictly as git reads it: an optional `# pack-refs with:` header
 * first, then `<oid> <name>` lines, each optionally followed by one `^<oid>` peeled line, every
 * line ended by "\n". Any other line makes the whole file unreadable (`ref_corrupt` naming the
 * file and the line): skipping it would make a ref packed there read as unborn, and a write onto
 * an "unborn" ref would orphan the history. A symbolic ref's target must be a ref name git
 * accepts (check-ref-format), so following it never leaves `refs/`.
 *
 * Moving (git's lock protocol, see git's lockfile.c / refs/files-backend.c): create
 * `<ref>.lock` exclusively, read the current value under the lock and compare it with the
 * expected old value, write the new value into the lock file, rename the lock over the ref.
 * Rename is atomic, so a reader sees the old value or the new one, never a partial file.
 */
import { type Clock, systemMonotonicNow } from "../time/clock.js";
import { parsePackedRefs, refCorrupt, refNotAFile } from "./packed-refs.js";
import { MAX_PACKED_REFS_BYTES, MAX_REF_FILE_BYTES, readBoundedFileOrNull } from "./bounded-file.js";
import { lockOwnerPath, type LockHolder } from "./ref-lock-owner.js";
import { WorkflowHostError, describeValue } from "../errors.js";
import { errnoCode, type FileHandleLike, type FsAdapter, type StatLike } from "./fs-adapter.js";
import { fullRefNameProblem, OID_PATTERN } from "./ref-name.js";
import type { Oid } from "./types.js";


// Parts kept in files of their own (packed-refs, lock owners); importers of this module keep them.
export { parsePackedRefs, refCorrupt } from "./packed-refs.js";
export { lockOwnerPath, type LockHolder } from "./ref-lock-owner.js";
/** Waits `ms` milliseconds (injected, so tests can drive it). */
export type Sleep = (ms: number) => Promise<void>;

export interface RefStoreOptions {
  readonly fs: FsAdapter;
  readonly gitdir: string;
  readonly durable: boolean;
  /**
   * A lock is a crashed writer's, and is removed, once this process has seen it unchanged
   * (same inode, size and mtime) for this long by its monotonic clock (ms), or when its mtime
   * is this far in the past by the wall clock. A future mtime is never trusted.
   */
  readonly staleLockMs: number;
  /** How long to wait for another writer's lock before `ref_locked` (ms). */
  readonly lockTimeoutMs: number;
  readonly sleep: Sleep;
  /** Wall clock compared with lock-file mtimes, which the OS stamps: the system clock in production. */
  readonly clock: Clock;
  /**
   * Monotonic milliseconds (unaffected by wall-clock steps), for how long a lock was seen
   * unchanged. Default: `performance.now()`.
   */
  readonly monotonicMs?: () => number;
  /**
   * This process, as recorded beside each lock it takes (see {@link lockOwnerPath}), so a writer
   * of the same machine that finds the lock of a process that no longer exists breaks it at once
   * instead of after `staleLockMs`. Absent: no record is written or read.
   */
  readonly holder?: LockHolder;
}


/** Size of a lock-holder record (see {@link lockOwnerPath}); hostnames longer than fit are cut. */
const RECORD_BYTES = 320;

/**
 * What to do with a ref found under its lock: move it to `next` (after `beforeSwap`), or null:
 * leave it. `fence`, when given, is called synchronously right before the rename, after every
 * awaited step of the update (objects, lock bytes, flushes); throwing aborts the move with the
 * thrown error and releases the lock (see {@link RefStore.lockedUpdate}).
 */
export type LockedDecision = { readonly next: Oid; readonly beforeSwap: () => Promise<void>; readonly fence?: () => void } | null;

/**
 * `swapped`: the ref now holds the decided value; `skipped`: the decision was null, nothing
 * written; `stolen`: the lock was broken as stale by another writer before the rename, nothing
 * moved by us (the objects written by `beforeSwap` are unreferenced).
 */
export type LockedOutcome = "swapped" | "skipped" | "stolen";

/** Outcome of a compare-and-swap: `ok`, or lost with the value found under the lock. */
export type CasOutcome = { readonly ok: true } | { readonly ok: false; readonly current: Oid | null };

export interface RefStore {
  /**
   * Follows symbolic refs (`HEAD` → `refs/heads/main`, at most 5 levels, as git) to the ref
   * that holds an oid, and reads it: `value` is null when that ref is unborn.
   * @throws `ref_corrupt` naming the ref and the bytes found for a torn file or a loop.
   */
  resolve(refName: string): Promise<{ readonly name: string; readonly value: Oid | null }>;
  /**
   * The raw value of a (non-symbolic) ref: loose, else packed, else null (unborn).
   * @throws `ref_corrupt` naming the ref and the bytes found when the loose file is not
   *   40 hex + "\n".
   */
  readValue(refName: string): Promise<Oid | null>;
  /**
   * Moves `refName` from `expected` (null: must not exist) to `next` under `<ref>.lock`.
   * `beforeSwap` runs after the comparison succeeded and before the rename: it writes the
   * commit's objects, so a ref never points at a missing object and a lost race writes nothing.
   * @returns `{ok: true}` once the ref holds `next`; `{ok: false, current}` when the ref held
   *   another value (nothing written).
   * `fence` (optional) is called synchronously right before the rename, once nothing but the
   * rename is left to await; throwing aborts the move (the lock is released, the ref keeps its
   * value) and the error is rethrown: a writer that may have lost its right to write (a host
   * lock taken over while this update was in flight) checks it there, not only before the
   * objects are written.
   * @throws `ref_locked` when another writer holds the lock longer than `lockTimeoutMs`;
   *   `ref_corrupt` when the current value is torn (the lock is released, nothing written);
   *   whatever `beforeSwap` or `fence` throws.
   */
  compareAndSwap(refName: string, expected: Oid | null, next: Oid, beforeSwap: () => Promise<void>, fence?: () => void): Promise<CasOutcome>;
  /**
   * Takes `<ref>.lock`, reads the ref's current value under it and lets `decide` choose the new
   * value. While `decide` runs no other git-protocol writer can move the ref, so what it
   * computes from `current` cannot be overtaken. The lock is always released.
   * @throws `ref_locked`, `ref_corrupt` as {@link compareAndSwap}; whatever `decide` throws.
   */
  lockedUpdate(refName: string, decide: (current: Oid | null) => Promise<LockedDecision>): Promise<LockedOutcome>;
}

type LooseValue = { readonly kind: "oid"; readonly oid: Oid } | { readonly kind: "symbolic"; readonly target: string };

/** Creates the ref store of the bare repository at `gitdir`. */
export function createRefStore(opts: RefStoreOptions): RefStore {
  const { fs, gitdir, durable } = opts;
  const monotonicMs = opts.monotonicMs ?? systemMonotonicNow;
  /** The last parse of packed-refs (or why it failed), by the file's stamp. */
  let packed: { readonly stamp: string; readonly refs: ReadonlyMap<string, Oid> | WorkflowHostError } | null = null;
  const knownDirs = new Set<string>();

  async function readLoose(refName: string): Promise<LooseValue | null> {
    let bytes: Uint8Array | null;
    const path = `${gitdir}/${refName}`;
    try {
      // A folder where the ref file would be (refs/heads/main/x exists): no such ref. A FIFO,
      // device or socket there is refused unread (reading one would wait forever).
      bytes = await readBoundedFileOrNull(fs, path, MAX_REF_FILE_BYTES, (found) => refNotAFile(`ref ${refName}`, path, found), { directoryIsAbsent: true });
    } catch (error) {
      if (errnoCode(error) === "EISDIR") return null;
      throw error;
    }
    if (bytes === null) return null;
    const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("latin1");
    if (text.length === 41 && text.endsWith("\n") && OID_PATTERN.test(text.slice(0, 40))) {
      return { kind: "oid", oid: text.slice(0, 40) };
    }
    const symbolic = /^ref: (\S+)\n$/.exec(text);
    if (symbolic?.[1] !== undefined) {
      // Git treats a symref to a name it refuses as dangling; following one could leave the
      // repository (`ref: refs/heads/../../../tmp/x`), so it is refused, never followed.
      const problem = fullRefNameProblem(symbolic[1]);
      if (problem !== null) throw refCorrupt(refName, text, `a symbolic ref to an invalid ref name (${problem})`, undefined, `expected "ref: refs/<name>" with a name git's check-ref-format accepts`);
      return { kind: "symbolic", target: symbolic[1] };
    }
    const reason = text.length === 0 ? "an empty file" : text.length < 41 ? "a truncated value" : "not an object id";
    throw refCorrupt(refName, text, reason);
  }

  async function readPacked(refName: string): Promise<Oid | null> {
    const path = `${gitdir}/packed-refs`;
    const stat: StatLike | null = await fs.statOrNull(path);
    if (stat === null) return null;
    const stamp = `${stat.ino}:${stat.size}:${stat.mtimeMs}`;
    if (packed === null || packed.stamp !== stamp) {
      let refs: ReadonlyMap<string, Oid> | WorkflowHostError;
      try {
        const bytes = await readBoundedFileOrNull(fs, path, MAX_PACKED_REFS_BYTES, (found) => refNotAFile("packed-refs", path, found, "a regular file of \"<40 hex> <ref name>\" lines"));
        refs = parsePackedRefs(path, Buffer.from(bytes ?? new Uint8Array()).toString("utf8"));
      } catch (error) {
        if (!(error instanceof WorkflowHostError)) throw error;
        refs = error;
      }
      packed = { stamp, refs };
    }
    if (packed.refs instanceof WorkflowHostError) throw packed.refs;
    return packed.refs.get(refName) ?? null;
  }

  async function readValue(refName: string): Promise<Oid | null> {
    const loose = await readLoose(refName);
    if (loose?.kind === "symbolic") throw refCorrupt(refName, `ref: ${loose.target}`, "a symbolic ref where an oid was expected");
    if (loose !== null) return loose.oid;
    return readPacked(refName);
  }

  async function resolve(refName: string): Promise<{ name: string; value: Oid | null }> {
    let name = refName;
    for (let depth = 0; depth < 5; depth++) {
      const loose = await readLoose(name);
      if (loose === null) return { name, value: await readPacked(name) };
      if (loose.kind === "oid") return { name, value: loose.oid };
      name = loose.target;
    }
    throw refCorrupt(refName, name, "a symbolic-ref loop");
  }

  async function acquireLock(refName: string, lockPath: string): Promise<{ handle: FileHandleLike; ino: number | bigint }> {
    let waitedMs = 0;
    let backoffMs = 1;
    /** The lock as last seen (inode, size, mtime) and since when (monotonic ms) it is unchanged. */
    let seen: { readonly stamp: string; readonly sinceMs: number; ownerChecked: boolean } | null = null;
    for (;;) {
      try {
        let handle: FileHandleLike;
        try {
          handle = await fs.open(lockPath, "wx");
        } catch (error) {
          // The ref's folder can vanish (git pack-refs prunes emptied folders): recreate it once.
          if (errnoCode(error) !== "ENOENT") throw error;
          await fs.mkdirp(lockPath.slice(0, lockPath.lastIndexOf("/")));
          handle = await fs.open(lockPath, "wx");
        }
        try {
          const birth = await handle.stat();
          await recordHolder(refName, birth);
          return { handle, ino: birth.ino };
        } catch (error) {
          await handle.close().catch(() => undefined);
          await fs.unlinkQuiet(lockPath);
          throw error;
        }
      } catch (error) {
        if (errnoCode(error) !== "EEXIST") throw error;
      }
      const stat = await fs.statOrNull(lockPath);
      if (stat !== null) {
        // A lock that stays unchanged this long belongs to a writer that died between creating
        // it and renaming it (git itself never breaks locks; it leaves that to a human). Its
        // age is measured here, by this process's monotonic clock from the first time it was
        // seen, so neither a wall-clock step nor a skewed or future mtime (NFS, a clock set
        // back after a crash) can keep it alive forever. An mtime already more than
        // `staleLockMs` in the past is taken at its word (the quick way out after a crash).
        // Removing a lock is safe enough: the compare-and-swap still compares under our own
        // lock, and a slow (not dead) holder re-checks that the lock file is still its own just
        // before renaming, so it aborts instead of overwriting (see `stillOurs`). What remains
        // is a window of a few syscalls between that check and the rename, and only for a
        // writer that held a lock for longer than `staleLockMs`.
        const stamp = `${stat.ino}:${stat.size}:${stat.mtimeMs}`;
        const nowMono = monotonicMs();
        if (seen === null || seen.stamp !== stamp) seen = { stamp, sinceMs: nowMono, ownerChecked: false };
        const oldByMtime = opts.clock().getTime() - stat.mtimeMs > opts.staleLockMs;
        // The recorded holder is looked at once per lock seen: a process of this machine that
        // is gone will never rename its lock.
        let holderGone = false;
        if (!seen.ownerChecked) {
          seen.ownerChecked = true;
          holderGone = await holderIsGone(refName, stat);
        }
        if (oldByMtime || holderGone || nowMono - seen.sinceMs >= opts.staleLockMs) {
          // Only the lock that was judged: one taken meanwhile by a live writer is left alone.
          const again = await fs.statOrNull(lockPath);
          if (again !== null && `${again.ino}:${again.size}:${again.mtimeMs}` === stamp) {
            await fs.unlinkQuiet(lockPath);
            await forgetHolder(refName);
          }
          seen = null;
          continue;
        }
      }
      if (waitedMs >= opts.lockTimeoutMs) {
        throw new WorkflowHostError(
          "ref_locked",
          `ref ${refName} is locked by another writer (${lockPath}) for more than ${opts.lockTimeoutMs} ms`,
          { ref: refName, lockPath, lockTimeoutMs: opts.lockTimeoutMs },
        );
      }
      // Jittered exponential backoff (1 ms .. 32 ms): lock holds are short (a few file writes).
      const delay = Math.min(backoffMs, opts.lockTimeoutMs - waitedMs) * (0.5 + Math.random() / 2);
      await opts.sleep(delay);
      waitedMs += delay;
      backoffMs = Math.min(backoffMs * 2, 32);
    }
  }

  /** Records this process as the holder of the lock just created (best effort: only a hint). */
  async function recordHolder(refName: string, birth: StatLike): Promise<void> {
    const holder = opts.holder;
    if (holder === undefined) return;
    try {
      await writeRecord(refName, `held ${String(birth.ino)} ${birth.mtimeMs} ${holder.pid} ${holder.hostname}`);
    } catch {
      // Without a record a dead holder's lock is still broken after staleLockMs; an earlier
      // record must not stand in for the missing one.
      await forgetHolder(refName);
    }
  }

  /** Marks the holder record of `refName`'s lock released (a record describes a held lock only). */
  async function forgetHolder(refName: string): Promise<void> {
    if (opts.holder === undefined) return;
    await writeRecord(refName, "released").catch(() => fs.unlinkQuiet(lockOwnerPath(gitdir, refName)).catch(() => undefined));
  }

  /**
   * Overwrites the record file in place with `text`, padded to {@link RECORD_BYTES}: creating a
   * file is the dearest call of a commit (see pack-store.ts), so the file, made once, is kept.
   */
  async function writeRecord(refName: string, text: string): Promise<void> {
    const path = lockOwnerPath(gitdir, refName);
    const bytes = Buffer.alloc(RECORD_BYTES, 0x20);
    bytes.write(text.slice(0, RECORD_BYTES - 1), "utf8");
    bytes[RECORD_BYTES - 1] = 0x0a;
    let handle: FileHandleLike;
    try {
      handle = await fs.open(path, "r+");
    } catch (error) {
      if (errnoCode(error) !== "ENOENT") throw error;
      await fs.mkdirp(path.slice(0, path.lastIndexOf("/")));
      handle = await fs.open(path, "w");
    }
    try {
      await handle.write(bytes);
    } finally {
      await handle.close();
    }
  }

  /** Whether the lock `stat` describes was taken by a process of this machine that no longer exists. */
  async function holderIsGone(refName: string, stat: StatLike): Promise<boolean> {
    const holder = opts.holder;
    if (holder === undefined) return false;
    let text: string;
    try {
      const path = lockOwnerPath(gitdir, refName);
      const bytes = await readBoundedFileOrNull(fs, path, RECORD_BYTES, (found) => refNotAFile(`the lock record of ${refName}`, path, found));
      if (bytes === null) return false;
      text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("utf8");
    } catch {
      return false;
    }
    const match = /^held (\d+) ([0-9.e+]+) (\d+) (.+)$/.exec(text.trimEnd());
    if (match === null || match[1] !== String(stat.ino) || match[4] !== holder.hostname) return false;
    // The record describes this very lock: born then, and untouched since (an empty lock) or
    // written by its holder afterwards (a crash between writing the new value and the rename).
    const birthMs = Number(match[2]);
    if (Number(stat.size) === 0 ? stat.mtimeMs !== birthMs : stat.mtimeMs < birthMs) return false;
    const pid = Number(match[3]);
    return pid !== holder.pid && !holder.isAlive(pid);
  }

  async function stillOurs(ino: number | bigint, lockPath: string): Promise<boolean> {
    const onDisk = await fs.statOrNull(lockPath);
    return onDisk !== null && onDisk.ino === ino;
  }

  async function lockedUpdate(refName: string, decide: (current: Oid | null) => Promise<LockedDecision>): Promise<LockedOutcome> {
    // Names reach here from callers (normalised) or from symbolic refs (checked when read); a
    // last check keeps the lock and the rename inside `refs/` whatever the caller did.
    const problem = fullRefNameProblem(refName);
    if (problem !== null) throw refCorrupt(refName, refName, `not a ref name git accepts (${problem})`, undefined, "expected HEAD or a name under refs/");
    const refPath = `${gitdir}/${refName}`;
    const lockPath = `${refPath}.lock`;
    const refDir = refPath.slice(0, refPath.lastIndexOf("/"));
    if (!knownDirs.has(refDir)) {
      await fs.mkdirp(refDir);
      knownDirs.add(refDir);
    }
    const { handle, ino } = await acquireLock(refName, lockPath);
    let renamed = false;
    try {
      const decision = await decide(await readValue(refName));
      if (decision === null) return "skipped";
      // The lock's bytes are written and flushed while `beforeSwap` runs (a commit's pack being
      // flushed and put in place): the lock is ours alone until renamed, and the rename waits
      // for both, so the ref still moves only after the pack is durable, one flush later
      // instead of two.
      const writing = (async () => {
        await handle.write(Buffer.from(`${decision.next}\n`, "latin1"));
        if (durable) await handle.sync();
      })();
      const [swap, wrote] = await Promise.allSettled([decision.beforeSwap(), writing]);
      if (swap.status === "rejected") throw swap.reason;
      if (wrote.status === "rejected") throw wrote.reason;
      if (!(await stillOurs(ino, lockPath))) return "stolen";
      await handle.close();
      // The record goes while the lock is still ours: once the lock is renamed, the next
      // holder's record may take its place.
      await forgetHolder(refName);
      // Last word before the ref moves, with no await between it and the rename: what is left
      // unfenced is the rename syscall itself.
      decision.fence?.();
      await fs.rename(lockPath, refPath);
      renamed = true;
      if (durable) await fs.fsyncDir(refDir);
      return "swapped";
    } finally {
      if (!renamed) {
        await handle.close().catch(() => undefined);
        // Only remove the lock if it is still ours; a stale-lock breaker may own it now.
        if (await stillOurs(ino, lockPath).catch(() => false)) {
          await forgetHolder(refName);
          await fs.unlinkQuiet(lockPath);
        }
      }
    }
  }

  return {
    resolve,
    readValue,
    lockedUpdate,
    async compareAndSwap(refName, expected, next, beforeSwap, fence) {
      let current: Oid | null = null;
      const outcome = await lockedUpdate(refName, async (found) => {
        current = found;
        return found === expected ? { next, beforeSwap, ...(fence === undefined ? {} : { fence }) } : null;
      });
      if (outcome === "swapped") return { ok: true };
      return { ok: false, current: outcome === "stolen" ? await readValue(refName) : current };
    },
  };
}
