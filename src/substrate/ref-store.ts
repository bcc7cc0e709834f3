/**
 * The refs of one bare repository, read and moved the way git does it, so git processes and
 * other workflow-host processes can share the repository.
 *
 * Reading: a loose ref file (`refs/heads/main`) wins over `packed-refs`. A loose ref must hold
 * exactly 40 lowercase hex digits and "\n" (or `ref: <name>\n` for a symbolic ref); anything
 * else is a torn or foreign write and is reported as `ref_corrupt`, never read as "no ref".
 *
 * Moving (git's lock protocol, see git's lockfile.c / refs/files-backend.c): create
 * `<ref>.lock` exclusively, read the current value under the lock and compare it with the
 * expected old value, write the new value into the lock file, rename the lock over the ref.
 * Rename is atomic, so a reader sees the old value or the new one, never a partial file.
 */
import { WorkflowHostError, describeValue } from "../errors.js";
import { errnoCode, type FileHandleLike, type FsAdapter, type StatLike } from "./fs-adapter.js";
import { OID_PATTERN } from "./ref-name.js";
import type { Oid } from "./types.js";

/** Waits `ms` milliseconds (injected, so tests can drive it). */
export type Sleep = (ms: number) => Promise<void>;

export interface RefStoreOptions {
  readonly fs: FsAdapter;
  readonly gitdir: string;
  readonly durable: boolean;
  /** A lock older than this (by its mtime, ms) is a crashed writer's and is removed. */
  readonly staleLockMs: number;
  /** How long to wait for another writer's lock before `ref_locked` (ms). */
  readonly lockTimeoutMs: number;
  readonly sleep: Sleep;
  /** Wall-clock milliseconds, compared with lock-file mtimes (which the OS stamps). */
  readonly nowMs: () => number;
}

/** What to do with a ref found under its lock: move it to `next` (after `beforeSwap`), or null: leave it. */
export type LockedDecision = { readonly next: Oid; readonly beforeSwap: () => Promise<void> } | null;

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
   * @throws `ref_locked` when another writer holds the lock longer than `lockTimeoutMs`;
   *   `ref_corrupt` when the current value is torn (the lock is released, nothing written).
   */
  compareAndSwap(refName: string, expected: Oid | null, next: Oid, beforeSwap: () => Promise<void>): Promise<CasOutcome>;
  /**
   * Takes `<ref>.lock`, reads the ref's current value under it and lets `decide` choose the new
   * value. While `decide` runs no other git-protocol writer can move the ref, so what it
   * computes from `current` cannot be overtaken. The lock is always released.
   * @throws `ref_locked`, `ref_corrupt` as {@link compareAndSwap}; whatever `decide` throws.
   */
  lockedUpdate(refName: string, decide: (current: Oid | null) => Promise<LockedDecision>): Promise<LockedOutcome>;
}

/** The `ref_corrupt` error: names the ref, the value found and why it is not usable. */
export function refCorrupt(ref: string, value: string, reason: string, cause?: unknown): WorkflowHostError {
  return new WorkflowHostError(
    "ref_corrupt",
    `ref ${ref} holds ${describeValue(value)}, ${reason}; expected 40 hex digits and a newline`,
    { ref, value, reason },
    cause === undefined ? {} : { cause },
  );
}

type LooseValue = { readonly kind: "oid"; readonly oid: Oid } | { readonly kind: "symbolic"; readonly target: string };

/** Creates the ref store of the bare repository at `gitdir`. */
export function createRefStore(opts: RefStoreOptions): RefStore {
  const { fs, gitdir, durable } = opts;
  let packed: { readonly stamp: string; readonly refs: ReadonlyMap<string, Oid> } | null = null;
  const knownDirs = new Set<string>();

  async function readLoose(refName: string): Promise<LooseValue | null> {
    let bytes: Uint8Array | null;
    try {
      bytes = await fs.readFileOrNull(`${gitdir}/${refName}`);
    } catch (error) {
      // A folder where the ref file would be (refs/heads/main/x exists): no such ref.
      if (errnoCode(error) === "EISDIR") return null;
      throw error;
    }
    if (bytes === null) return null;
    const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("latin1");
    if (text.length === 41 && text.endsWith("\n") && OID_PATTERN.test(text.slice(0, 40))) {
      return { kind: "oid", oid: text.slice(0, 40) };
    }
    const symbolic = /^ref: (refs\/[^\s]+|HEAD)\n$/.exec(text);
    if (symbolic?.[1] !== undefined) return { kind: "symbolic", target: symbolic[1] };
    const reason = text.length === 0 ? "an empty file" : text.length < 41 ? "a truncated value" : "not an object id";
    throw refCorrupt(refName, text, reason);
  }

  async function readPacked(refName: string): Promise<Oid | null> {
    const path = `${gitdir}/packed-refs`;
    const stat: StatLike | null = await fs.statOrNull(path);
    if (stat === null) return null;
    const stamp = `${stat.ino}:${stat.size}:${stat.mtimeMs}`;
    if (packed === null || packed.stamp !== stamp) {
      const bytes = await fs.readFileOrNull(path);
      const refs = new Map<string, Oid>();
      for (const line of Buffer.from(bytes ?? new Uint8Array()).toString("utf8").split("\n")) {
        // "# pack-refs with: ..." header and "^<oid>" peeled-tag lines carry no ref.
        if (line === "" || line.startsWith("#") || line.startsWith("^")) continue;
        const match = /^([0-9a-f]{40}) (\S+)$/.exec(line);
        if (match?.[1] !== undefined && match[2] !== undefined) refs.set(match[2], match[1]);
      }
      packed = { stamp, refs };
    }
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
          return { handle, ino: (await handle.stat()).ino };
        } catch (error) {
          await handle.close().catch(() => undefined);
          await fs.unlinkQuiet(lockPath);
          throw error;
        }
      } catch (error) {
        if (errnoCode(error) !== "EEXIST") throw error;
      }
      const stat = await fs.statOrNull(lockPath);
      if (stat !== null && opts.nowMs() - stat.mtimeMs > opts.staleLockMs) {
        // A lock this old belongs to a writer that died between creating it and renaming it
        // (git itself never breaks locks; it leaves that to a human). Removing it is safe
        // enough: the compare-and-swap still compares under our own lock, and a slow (not dead)
        // holder re-checks that the lock file is still its own just before renaming, so it
        // aborts instead of overwriting (see `stillOurs`). What remains is a window of a few
        // syscalls between that check and the rename, and only for a writer that held a lock
        // for longer than `staleLockMs`.
        await fs.unlinkQuiet(lockPath);
        continue;
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

  async function stillOurs(ino: number | bigint, lockPath: string): Promise<boolean> {
    const onDisk = await fs.statOrNull(lockPath);
    return onDisk !== null && onDisk.ino === ino;
  }

  async function lockedUpdate(refName: string, decide: (current: Oid | null) => Promise<LockedDecision>): Promise<LockedOutcome> {
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
      await decision.beforeSwap();
      await handle.write(Buffer.from(`${decision.next}\n`, "latin1"));
      if (durable) await handle.sync();
      if (!(await stillOurs(ino, lockPath))) return "stolen";
      await handle.close();
      await fs.rename(lockPath, refPath);
      renamed = true;
      if (durable) await fs.fsyncDir(refDir);
      return "swapped";
    } finally {
      if (!renamed) {
        await handle.close().catch(() => undefined);
        // Only remove the lock if it is still ours; a stale-lock breaker may own it now.
        if (await stillOurs(ino, lockPath).catch(() => false)) await fs.unlinkQuiet(lockPath);
      }
    }
  }

  return {
    resolve,
    readValue,
    lockedUpdate,
    async compareAndSwap(refName, expected, next, beforeSwap) {
      let current: Oid | null = null;
      const outcome = await lockedUpdate(refName, async (found) => {
        current = found;
        return found === expected ? { next, beforeSwap } : null;
      });
      if (outcome === "swapped") return { ok: true };
      return { ok: false, current: outcome === "stolen" ? await readValue(refName) : current };
    },
  };
}
