/**
 * The host lock: at most one live host per data dir (docs/design.md §5 invariant 1, §7).
 *
 * Files in the data dir:
 * - `host.lock/`: the lock itself, a folder made and kept fresh by proper-lockfile (its mtime is
 *   touched every `heartbeatMs`);
 * - `host.lock.json`: who holds it, `{pid, hostname, startedAt, heartbeatAt, token}`, rewritten
 *   at every heartbeat so a person (or `host_locked`) can name the holder;
 * - `host.lock.guard/`: a short-lived proper-lockfile lock held while a host acquires, takes
 *   over or releases `host.lock`, so the holder file always belongs to the current lock folder
 *   and two hosts racing for a dead holder's lock cannot both win.
 *
 * A held lock is taken over (and the takeover logged) when its holder is a process on this
 * machine that no longer exists, or its newest heartbeat (folder mtime or `heartbeatAt`) is older
 * than `staleMs`; a lock folder without a readable holder file counts by its mtime alone.
 * Otherwise acquiring fails with `host_locked` naming the holder.
 *
 * States: acquiring → held → released, or held → compromised (the lock folder vanished or was
 * refreshed by someone else, or the holder file names another token: `onCompromised` is called
 * once, the heartbeat stops, and release becomes a no-op for the folder).
 *
 * Process access (pid, hostname, liveness probe) is injectable for tests; the defaults read the
 * running process.
 */
import * as nodeFs from "node:fs";
import { hostname as osHostname } from "node:os";
import { join, resolve } from "node:path";
import { randomUUID } from "node:crypto";
import lockfile from "proper-lockfile";
import { WorkflowHostError } from "../errors.js";
import { silentLogger, type Logger } from "../logger.js";
import { createSystemTimers, systemClock, type Clock, type TimerHandle, type Timers } from "../time/clock.js";

/** Name of the lock folder inside the data dir. */
export const HOST_LOCK_NAME = "host.lock";
/** Name of the holder file inside the data dir. */
export const HOST_LOCK_HOLDER_NAME = "host.lock.json";
const GUARD_NAME = "host.lock.guard";

/** Default age after which a held lock without a fresh heartbeat is taken over (ms). */
export const DEFAULT_LOCK_STALE_MS = 10_000;

/** Who holds (or held) a host lock, as written in `host.lock.json`. */
export interface HostLockHolder {
  readonly pid: number;
  readonly hostname: string;
  /** When the holder took the lock (RFC 3339, UTC). */
  readonly startedAt: string;
  /** The holder's last heartbeat (RFC 3339, UTC). */
  readonly heartbeatAt: string;
  /** Random per acquisition; tells a holder whether the file is still its own. */
  readonly token: string;
}

export interface HostLockOptions {
  /** The data dir; created when missing. */
  readonly dataDir: string;
  /** node:fs-compatible module (memfs works). Default node:fs. */
  readonly fs?: unknown;
  /** Stamps `startedAt`/`heartbeatAt` and judges staleness. Default the system clock. */
  readonly clock?: Clock;
  /** Drives the holder-file heartbeat. Default node's timers, ref'd: a held lock keeps the process alive. */
  readonly timers?: Timers;
  readonly logger?: Logger;
  /** A heartbeat older than this makes the lock stale (ms, default 10 000, at least 2 000). */
  readonly staleMs?: number;
  /** Heartbeat period (ms, default `staleMs / 2`, clamped to 1 000 … `staleMs / 2`). */
  readonly heartbeatMs?: number;
  /** How long to wait for another host's acquire or release in progress (ms, default 5 000). */
  readonly guardTimeoutMs?: number;
  /**
   * Called once when the lock is lost while held (its folder vanished or changed under us, or the
   * holder file names someone else). The lock is no longer ours: stop writing. Must not throw.
   */
  readonly onCompromised?: (error: WorkflowHostError) => void;
  /** This process's id. Default `process.pid`. */
  readonly pid?: number;
  /** This machine's name. Default `os.hostname()`. */
  readonly hostname?: string;
  /** Whether a process of this machine exists. Default: `process.kill(pid, 0)`; ESRCH means no. */
  readonly isProcessAlive?: (pid: number) => boolean;
}

/** A held host lock. */
export interface HostLock {
  /** The holder record this lock wrote. */
  readonly holder: HostLockHolder;
  /** Path of the lock folder. */
  readonly path: string;
  /** What was taken over to get the lock, or null when the lock was free. */
  readonly tookOver: { readonly previous: HostLockHolder | null; readonly reason: string } | null;
  /** True once released or compromised. */
  readonly released: boolean;
  /**
   * Stops the heartbeat, removes the holder file (when still ours) and the lock folder.
   * Idempotent; never throws for a lock that was already lost.
   */
  release(): Promise<void>;
}

interface LockFs {
  readFile(path: string, encoding: "utf8"): Promise<string>;
  writeFile(path: string, data: string): Promise<void>;
  rename(from: string, to: string): Promise<void>;
  unlink(path: string): Promise<void>;
  rmdir(path: string): Promise<void>;
  mkdir(path: string, opts: { recursive: true }): Promise<unknown>;
  stat(path: string): Promise<{ mtimeMs: number }>;
}

function lockFsOf(fs: unknown): LockFs {
  const promises = (fs as { promises?: LockFs } | undefined)?.promises;
  if (promises === undefined) throw new TypeError("host lock: fs must provide the node:fs promises API (fs.promises)");
  return promises;
}

function defaultIsProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code !== "ESRCH";
  }
}

function errnoOf(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | null)?.code;
}

function parseHolder(text: string): HostLockHolder | null {
  try {
    const value = JSON.parse(text) as Partial<HostLockHolder>;
    if (typeof value.pid !== "number" || typeof value.hostname !== "string" || typeof value.startedAt !== "string") return null;
    return {
      pid: value.pid,
      hostname: value.hostname,
      startedAt: value.startedAt,
      heartbeatAt: typeof value.heartbeatAt === "string" ? value.heartbeatAt : value.startedAt,
      token: typeof value.token === "string" ? value.token : "",
    };
  } catch {
    return null;
  }
}

/** What is in a data dir's lock right now, as {@link inspectHostLock} reports it. */
export interface HostLockState {
  /** Whether the lock folder exists. */
  readonly locked: boolean;
  /** The holder file's record, or null when missing or unreadable. */
  readonly holder: HostLockHolder | null;
  /** Newest heartbeat in epoch ms (folder mtime or `heartbeatAt`), or null when not locked. */
  readonly heartbeatMs: number | null;
}

/**
 * Reads a data dir's lock without touching it (for `workflow-host` status output and tests).
 * @returns whether the lock folder exists, the holder record, and the newest heartbeat
 */
export async function inspectHostLock(opts: { readonly dataDir: string; readonly fs?: unknown }): Promise<HostLockState> {
  const fs = lockFsOf(opts.fs ?? nodeFs);
  const dir = resolve(opts.dataDir);
  let mtimeMs: number | null = null;
  try {
    mtimeMs = (await fs.stat(join(dir, HOST_LOCK_NAME))).mtimeMs;
  } catch (error) {
    if (errnoOf(error) !== "ENOENT") throw error;
  }
  let holder: HostLockHolder | null = null;
  try {
    holder = parseHolder(await fs.readFile(join(dir, HOST_LOCK_HOLDER_NAME), "utf8"));
  } catch (error) {
    if (errnoOf(error) !== "ENOENT") throw error;
  }
  if (mtimeMs === null) return { locked: false, holder, heartbeatMs: null };
  const beat = holder === null ? Number.NaN : Date.parse(holder.heartbeatAt);
  return { locked: true, holder, heartbeatMs: Number.isFinite(beat) ? Math.max(beat, mtimeMs) : mtimeMs };
}

/**
 * Takes the host lock of a data dir.
 *
 * @returns the held lock; its heartbeat runs until `release()` or compromise
 * @throws host_locked when a live host holds the lock (`data {dataDir, pid, hostname, startedAt,
 *   heartbeatAt}`; pid null for an unknown holder), or when another host's acquire or release
 *   does not finish within `guardTimeoutMs`; fs errors otherwise
 * Concurrent calls (in this or other processes) for one data dir: exactly one succeeds while the
 * others get host_locked.
 */
export async function acquireHostLock(opts: HostLockOptions): Promise<HostLock> {
  const rawFs = opts.fs ?? nodeFs;
  const fs = lockFsOf(rawFs);
  const dataDir = resolve(opts.dataDir);
  const clock = opts.clock ?? systemClock;
  const timers = opts.timers ?? createSystemTimers();
  const logger = opts.logger ?? silentLogger;
  const staleMs = Math.max(opts.staleMs ?? DEFAULT_LOCK_STALE_MS, 2_000);
  const heartbeatMs = Math.min(Math.max(opts.heartbeatMs ?? staleMs / 2, 1_000), staleMs / 2);
  const guardTimeoutMs = opts.guardTimeoutMs ?? 5_000;
  const pid = opts.pid ?? process.pid;
  const hostname = opts.hostname ?? osHostname();
  const isProcessAlive = opts.isProcessAlive ?? defaultIsProcessAlive;
  const lockPath = join(dataDir, HOST_LOCK_NAME);
  const holderPath = join(dataDir, HOST_LOCK_HOLDER_NAME);
  // proper-lockfile keys its in-process registry by this path; it need not exist.
  const lockKey = join(dataDir, "host");
  const fsOption = opts.fs === undefined ? {} : { fs: rawFs };

  await fs.mkdir(dataDir, { recursive: true });

  let compromised = false;
  let released = false;
  let heartbeat: TimerHandle | null = null;
  const token = randomUUID();

  const compromise = (why: string, cause?: unknown): void => {
    if (compromised || released) return;
    compromised = true;
    if (heartbeat !== null) timers.clearTimeout(heartbeat);
    heartbeat = null;
    const error = new WorkflowHostError("host_locked", `the host lock of ${dataDir} was lost: ${why}`, { dataDir, lockPath }, cause === undefined ? {} : { cause });
    logger.error(error.message, { dataDir });
    try {
      opts.onCompromised?.(error);
    } catch {
      // The owner's reaction must not escape into a timer callback.
    }
  };

  const withGuard = async <T>(work: () => Promise<T>): Promise<T> => {
    let unlockGuard: () => Promise<void>;
    try {
      unlockGuard = await lockfile.lock(join(dataDir, "host-guard"), {
        ...fsOption,
        lockfilePath: join(dataDir, GUARD_NAME),
        realpath: false,
        stale: 2_000,
        retries: { retries: Math.max(1, Math.ceil(guardTimeoutMs / 100)), factor: 1, minTimeout: 100, maxTimeout: 100 },
        onCompromised: () => undefined,
      });
    } catch (error) {
      if (errnoOf(error) !== "ELOCKED") throw error;
      throw new WorkflowHostError(
        "host_locked",
        `data dir ${dataDir} is being locked or unlocked by another host for more than ${guardTimeoutMs} ms; try again`,
        { dataDir, lockPath: join(dataDir, GUARD_NAME) },
        { cause: error },
      );
    }
    try {
      return await work();
    } finally {
      await unlockGuard().catch(() => undefined);
    }
  };

  const writeHolder = async (record: HostLockHolder): Promise<void> => {
    const tmp = `${holderPath}.${token}.tmp`;
    await fs.writeFile(tmp, `${JSON.stringify(record, null, 2)}\n`);
    await fs.rename(tmp, holderPath);
  };

  const readHolder = async (): Promise<HostLockHolder | null> => {
    try {
      return parseHolder(await fs.readFile(holderPath, "utf8"));
    } catch (error) {
      if (errnoOf(error) === "ENOENT") return null;
      throw error;
    }
  };

  const nowIso = (): string => clock().toISOString();
  const startedAt = nowIso();
  let holder: HostLockHolder = { pid, hostname, startedAt, heartbeatAt: startedAt, token };

  const { tookOver, unlock } = await withGuard(async () => {
    const state = await inspectHostLock({ dataDir, fs: rawFs });
    let taken: HostLock["tookOver"] = null;
    if (state.locked) {
      const reason = staleReason(state);
      if (reason === null) throw lockedError(dataDir, lockPath, state.holder);
      logger.warn(
        `taking over the host lock of ${dataDir}: ${reason}` +
          (state.holder === null ? "" : ` (held by pid ${state.holder.pid} on ${state.holder.hostname} since ${state.holder.startedAt})`),
        { dataDir, previous: state.holder, reason },
      );
      try {
        await fs.rmdir(lockPath);
      } catch (error) {
        if (errnoOf(error) !== "ENOENT") throw error;
      }
      taken = { previous: state.holder, reason };
    }
    let release: () => Promise<void>;
    try {
      release = await lockfile.lock(lockKey, {
        ...fsOption,
        lockfilePath: lockPath,
        realpath: false,
        stale: staleMs,
        update: heartbeatMs,
        onCompromised: (error) => compromise(error.message, error),
      });
    } catch (error) {
      if (errnoOf(error) !== "ELOCKED") throw error;
      // Someone outside the guard protocol holds it.
      throw lockedError(dataDir, lockPath, await readHolder());
    }
    await writeHolder(holder);
    return { tookOver: taken, unlock: release };
  });

  function staleReason(state: HostLockState): string | null {
    const h = state.holder;
    if (h !== null && h.hostname === hostname && h.pid !== pid && !isProcessAlive(h.pid)) {
      return `its holder, pid ${h.pid}, is not running`;
    }
    const ageMs = state.heartbeatMs === null ? Number.POSITIVE_INFINITY : clock().getTime() - state.heartbeatMs;
    if (ageMs > staleMs) {
      return `its last heartbeat is ${Math.round(ageMs)} ms old (stale after ${staleMs} ms)`;
    }
    return null;
  }

  const beat = async (): Promise<void> => {
    const current = await readHolder();
    if (current?.token !== token) {
      compromise(current === null ? "the holder file was removed" : `pid ${current.pid} on ${current.hostname} took it over`);
      return;
    }
    holder = { ...holder, heartbeatAt: nowIso() };
    await writeHolder(holder);
  };

  const armHeartbeat = (): void => {
    if (compromised || released) return;
    heartbeat = timers.setTimeout(() => {
      heartbeat = null;
      beat().then(armHeartbeat, (error: unknown) => {
        logger.warn(`host lock heartbeat failed: ${String(error)}`, { dataDir });
        armHeartbeat();
      });
    }, heartbeatMs);
  };
  armHeartbeat();

  return {
    get holder() {
      return holder;
    },
    path: lockPath,
    tookOver,
    get released() {
      return released || compromised;
    },
    async release() {
      if (released) return;
      released = true;
      if (heartbeat !== null) timers.clearTimeout(heartbeat);
      heartbeat = null;
      if (compromised) {
        // The folder may now be another host's: leave it alone.
        await unlock().catch(() => undefined);
        return;
      }
      await withGuard(async () => {
        if ((await readHolder())?.token === token) await fs.unlink(holderPath).catch(() => undefined);
        await unlock().catch((error: unknown) => {
          if (errnoOf(error) !== "ERELEASED" && errnoOf(error) !== "ENOTACQUIRED") throw error;
        });
      });
    },
  };
}

function lockedError(dataDir: string, lockPath: string, holder: HostLockHolder | null): WorkflowHostError {
  if (holder === null) {
    return new WorkflowHostError("host_locked", `data dir ${dataDir} is locked by another host (holder unknown; lock ${lockPath}); stop that host first`, {
      dataDir,
      lockPath,
      pid: null,
    });
  }
  return new WorkflowHostError(
    "host_locked",
    `data dir ${dataDir} is locked by pid ${holder.pid} on ${holder.hostname} since ${holder.startedAt} (last heartbeat ${holder.heartbeatAt}); stop that host first`,
    { dataDir, lockPath, pid: holder.pid, hostname: holder.hostname, startedAt: holder.startedAt, heartbeatAt: holder.heartbeatAt },
  );
}
