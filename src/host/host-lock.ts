/**
 * The host lock: at most one live host per data dir (docs/design.md §5 invariant 1, §7).
 *
 * Files in the data dir:
 * - `host.lock/`: the lock itself, a folder made with `mkdir` (atomic: one maker wins);
 * - `host.lock.json`: who holds it, `{pid, hostname, startedAt, heartbeatAt, token, beat}`,
 *   rewritten at every heartbeat (`beat` counts up) so a person (or `host_locked`) can name the
 *   holder and other hosts can see it is alive;
 * - `host.lock.guard/`: a short-lived folder lock (host-lock-guard.ts; the same protocol as
 *   proper-lockfile, which older versions used) held while a host acquires, takes over or
 *   releases `host.lock`, and while it writes a heartbeat, so the holder file always belongs to
 *   the current lock folder, two hosts racing for a dead holder's lock cannot both win, and a
 *   heartbeat never puts its record back over a host that took the lock over. Other hosts take
 *   the guard from a holder whose folder mtime is more than 2 s old; the holder sets it right after making
 *   the folder and again and again while it holds it. A heartbeat renames its record over the
 *   holder file only within 1 s of the guard's last confirmed refresh (the mkdir, or an mtime
 *   setting seen done within 1 s of the previous one), checked right before the rename is
 *   issued; a holder that stalled or whose refreshes came back late writes nothing
 *   (`guard_expired`) and retries. A guard operation (taking, work, release) that does not
 *   settle within its wait plus 10 s is given up (`io_failed`, `data.state` "guard_timeout"):
 *   the lock's later guard operations go on, and the given-up one changes nothing more.
 *
 * Staleness survives clock steps: a heartbeat is a value, not a time to trust. A held lock is
 * taken over at once only when its holder is a process on this machine that no longer exists.
 * A heartbeat stamped within the last `staleMs` by the wall clock is taken as live (refused with
 * `host_locked`). Any other lock (a heartbeat older than that, or stamped in the future, or a
 * folder without a holder file) is watched: it is taken over once its heartbeat value (holder
 * record and folder mtime) has not changed for `staleMs` of this process's monotonic time, and
 * refused as live the moment it changes.
 *
 * States: acquiring → held ⇄ unconfirmed → released, or → compromised.
 * - held: the last heartbeat was written less than `fenceMs` ago (monotonic); commits may go.
 * - unconfirmed: heartbeats failed (a read-only, failing or hanging disk) or were late for
 *   `fenceMs`: `assertHeld()` refuses commits (another host could by now be taking over),
 *   heartbeats are retried with backoff, each failure logged with its errno; the first heartbeat
 *   that lands makes the lock held again. A transient I/O failure never counts as a takeover.
 * - compromised: the holder file names another token, or the lock folder or holder file
 *   vanished: `onCompromised` is called once, the heartbeat stops, release leaves the folder.
 *
 * Process access (pid, hostname, liveness probe), the monotonic clock and the guard's timers and
 * wall clock are injectable for tests; the defaults read the running process.
 */
import * as nodeFs from "node:fs";
import { hostname as osHostname } from "node:os";
import { join, resolve } from "node:path";
import { randomUUID } from "node:crypto";
import { WorkflowHostError } from "../errors.js";
import { asIoFailure, errnoCode } from "../substrate/fs-adapter.js";
import { silentLogger, type Logger } from "../logger.js";
import { createSystemTimers, systemClock, systemMonotonicNow, type Clock, type MonotonicNow, type TimerHandle, type Timers } from "../time/clock.js";
import { GUARD_HOLD_LIMIT_MS, runUnderGuard, type GuardFs, type GuardHold, type GuardOptions } from "./host-lock-guard.js";
import {
  defaultIsProcessAlive,
  errnoOf,
  GUARD_NAME,
  HOST_LOCK_HOLDER_NAME,
  HOST_LOCK_NAME,
  inspectHostLock,
  lockedError,
  lockFsOf,
  readHolderRecord,
  unknownHolder,
  type HolderRead,
  refuseHolderFolder,
  removePendingRecords,
  refuseLinks,
  refuseLockNotFolder,
  parseHolder,
  type HostLockHolder,
  type HostLockState,
} from "./host-lock-files.js";

export { HOST_LOCK_HOLDER_NAME, HOST_LOCK_NAME, inspectHostLock, type HostLockHolder, type HostLockState } from "./host-lock-files.js";

/** Default age after which a held lock without a fresh heartbeat is taken over (ms). */
export const DEFAULT_LOCK_STALE_MS = 10_000;

/**
 * A guard operation (taking the guard, the work under it, releasing it) is given up when it has
 * not settled this long after its wait for the guard ran out (ms): an fs call that never returns
 * must not hold the lock's later heartbeats, releases and acquires behind it.
 */
const GUARD_WORK_LIMIT_MS = 10_000;

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
  /** Monotonic clock (ms) for the commit fence. Default `performance.now()`. */
  readonly monotonicNow?: MonotonicNow;
  /**
   * Called on each failed heartbeat (a read-only, full, failing or hanging disk) with `io_failed`
   * (`data.errno`: the fs errno, or the lock's state such as "guard_expired", "ETIMEDOUT" for a
   * heartbeat given up at its time limit; the failure is the error's `cause`); the lock is kept
   * and the heartbeat retried with backoff. Must not throw.
   */
  readonly onHeartbeatFailed?: (error: WorkflowHostError) => void;
  /**
   * The guard's time sources (`host.lock.guard/` is shared with other processes on real time):
   * `clock` sets and judges the guard folder's mtime (default the system clock), `timers` run its
   * retries, refreshes and time limits (default node's, ref'd: an operation under the guard is
   * awaited, so its waits keep the process alive until it settles, within its time limit).
   */
  readonly guard?: { readonly clock?: Clock; readonly timers?: Timers };
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
   * The commit fence: returns when the lock is ours and its last heartbeat was written recently
   * enough that no other host can have taken it over (see the module comment); call it right
   * before each commit.
   * @throws host_locked with `data.state` "compromised", "released" or "unconfirmed"
   */
  assertHeld(): void;
  /**
   * Stops the heartbeat, removes the holder file (when still ours) and the lock folder.
   * Idempotent; never throws for a lock that was already lost.
   * @throws host_locked when the guard stayed busy for `guardTimeoutMs`; io_failed (`data.state`
   *   "guard_timeout") when the release under the guard did not settle within `guardTimeoutMs`
   *   + 10 s; fs errors
   */
  release(): Promise<void>;
}

/**
 * Takes the host lock of a data dir.
 *
 * @returns the held lock; its heartbeat runs until `release()` or compromise
 * @throws path_escapes_data_dir (nothing read or written) when `host.lock`, `host.lock.json` or
 *   `host.lock.guard` in the data dir is a symbolic link: the lock's files are the host's own
 * @throws host_locked when a live host holds the lock (`data {dataDir, pid, hostname, startedAt,
 *   heartbeatAt}`; pid null for an unknown holder), or when another host's acquire or release
 *   does not finish within `guardTimeoutMs`
 * @throws io_failed (`data.state` "guard_timeout") when the acquire under the guard did not
 *   settle within `guardTimeoutMs` + 10 s (an fs call that does not return); fs errors otherwise
 * A lock that has to be watched (see the module comment) makes this wait up to `staleMs`
 * (plus one poll) before it is taken over or refused.
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
  const monotonicNow = opts.monotonicNow ?? systemMonotonicNow;
  const staleMs = Math.max(opts.staleMs ?? DEFAULT_LOCK_STALE_MS, 2_000);
  const heartbeatMs = Math.min(Math.max(opts.heartbeatMs ?? staleMs / 2, 1_000), staleMs / 2);
  // Commits stop when the last heartbeat is this old: a watcher needs `staleMs` from our last
  // heartbeat before it may take over, so this leaves a quarter of `staleMs` to spare.
  const fenceMs = Math.max(heartbeatMs, staleMs - staleMs / 4);
  const pollMs = Math.max(50, Math.min(1_000, Math.floor(staleMs / 8)));
  const guardTimeoutMs = opts.guardTimeoutMs ?? 5_000;
  // A heartbeat waits for another host's acquire or release at most this long, then fails and is
  // retried (the fence stops commits meanwhile).
  const heartbeatGuardTimeoutMs = Math.min(guardTimeoutMs, heartbeatMs);
  // Ref'd: a guard operation is awaited (start, stop, a heartbeat) and clears its timers when it
  // settles, within its limit. Unref'd, a start waiting for a guard another host held was the
  // only thing left on the event loop, and `serve` exited 13 without a word, holding nothing.
  const guardTimers = opts.guard?.timers ?? createSystemTimers();
  const pid = opts.pid ?? process.pid;
  const hostname = opts.hostname ?? osHostname();
  const isProcessAlive = opts.isProcessAlive ?? defaultIsProcessAlive;
  const lockPath = join(dataDir, HOST_LOCK_NAME);
  const holderPath = join(dataDir, HOST_LOCK_HOLDER_NAME);

  try {
    await fs.mkdir(dataDir, { recursive: true });
    // Some file systems (memfs) let a recursive mkdir of an existing file succeed.
    const made = await fs.stat(dataDir);
    if (made.isDirectory !== undefined && !made.isDirectory()) throw Object.assign(new Error(`${dataDir} is not a folder`), { code: "EEXIST" });
  } catch (error) {
    throw dataDirFailure(error, dataDir);
  }

  let compromised = false;
  let released = false;
  let heartbeat: TimerHandle | null = null;
  let lastBeatMs = monotonicNow();
  let failingSince: number | null = null;
  let failures = 0;
  let tmpSeq = 0;
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

  // The guard's turn: one guard operation of this lock at a time (a release while a heartbeat
  // waits for it). Each operation is bounded (GUARD_WORK_LIMIT_MS past its wait), so an fs call
  // that never returns gives the turn up instead of holding every later one behind it.
  const guardOpts: GuardOptions = {
    fs: fs as unknown as GuardFs,
    path: join(dataDir, GUARD_NAME),
    dataDir,
    clock: opts.guard?.clock ?? systemClock,
    monotonicNow,
    timers: guardTimers,
  };
  let guardTurn: Promise<unknown> = Promise.resolve();

  /**
   * Runs `work` holding the guard, after this lock's earlier guard operations settled. `work` gets
   * the hold: `fresh()` says whether a write relying on the guard may be issued now, `active()`
   * whether the operation is still wanted (see host-lock-guard.ts).
   */
  const withGuard = <T>(work: (hold: GuardHold) => Promise<T>, waitMs = guardTimeoutMs): Promise<T> => {
    const run = (): Promise<T> => runUnderGuard(guardOpts, work, waitMs, waitMs + GUARD_WORK_LIMIT_MS);
    const turn = guardTurn.then(run, run);
    guardTurn = turn.catch(() => undefined);
    return turn;
  };

  const guardExpired = (): WorkflowHostError =>
    new WorkflowHostError(
      "host_locked",
      `the guard of ${dataDir} went more than ${GUARD_HOLD_LIMIT_MS} ms without a confirmed refresh (a stalled process or a slow disk); another host may have taken it meanwhile, so the lock's files are left as they are`,
      { dataDir, lockPath: join(dataDir, GUARD_NAME), state: "guard_expired", limitMs: GUARD_HOLD_LIMIT_MS },
    );

  /**
   * Writes `record` to a file of its own and renames it over the holder file.
   * @returns the monotonic time taken right before the rename was issued: the record cannot have
   *   become visible to a watcher earlier
   */
  const writeHolder = async (record: HostLockHolder): Promise<number> => {
    const tmp = `${holderPath}.${token}.tmp`;
    try {
      await fs.writeFile(tmp, `${JSON.stringify(record, null, 2)}\n`);
      const stampMs = monotonicNow();
      await fs.rename(tmp, holderPath);
      return stampMs;
    } catch (error) {
      await fs.unlink(tmp).catch(() => undefined);
      throw error;
    }
  };

  /** The holder file's record, or null with why (a torn file is not a removed one). */
  const readHolder = (): Promise<HolderRead> => readHolderRecord(fs, holderPath);

  const nowIso = (): string => clock().toISOString();
  const startedAt = nowIso();
  let holder: HostLockHolder = { pid, hostname, startedAt, heartbeatAt: startedAt, token, beat: 0 };

  const sleep = (ms: number): Promise<void> => new Promise((done) => timers.setTimeout(() => done(), ms));

  /** What a watcher compares: any change means the holder is alive. */
  const heartbeatValue = (state: HostLockState): string =>
    JSON.stringify([state.holder?.token ?? null, state.holder?.beat ?? null, state.holder?.heartbeatAt ?? null, state.mtimeMs]);

  /**
   * Why the lock in `state` may be taken over now, or null when it looks live. A lock that is
   * neither (see the module comment) is watched first.
   */
  const judge = async (state: HostLockState): Promise<{ reason: string | null; watch: boolean }> => {
    const h = state.holder;
    if (h !== null && h.hostname === hostname && h.pid !== pid && !isProcessAlive(h.pid)) {
      return { reason: `its holder, pid ${h.pid}, is not running`, watch: false };
    }
    const ageMs = state.heartbeatMs === null ? Number.POSITIVE_INFINITY : clock().getTime() - state.heartbeatMs;
    if (ageMs >= 0 && ageMs <= staleMs) return { reason: null, watch: false };
    // Old or stamped in the future (a clock step, another machine's clock): watch it, and say so
    // once, as the wait is long enough to look like a hang.
    const heartbeat = h !== null ? h.heartbeatAt : state.heartbeatMs === null ? "missing" : `lock folder changed ${new Date(state.heartbeatMs).toISOString()}`;
    logger.info(
      `waiting for the host lock of ${dataDir} held by ${h === null ? unknownHolder(state.holderProblem) : `pid ${h.pid} on ${h.hostname}`} (heartbeat ${heartbeat}); ` +
        `taking it over after ${Math.ceil(staleMs / 1_000)} s unless it changes`,
      { dataDir, holder: h, holderProblem: state.holderProblem, staleMs },
    );
    let unchangedMs = 0;
    const value = heartbeatValue(state);
    while (unchangedMs < staleMs) {
      await sleep(pollMs);
      unchangedMs += pollMs;
      const now = await inspectHostLock({ dataDir, fs: rawFs });
      if (!now.locked) return { reason: "it was released", watch: true };
      if (heartbeatValue(now) !== value) return { reason: null, watch: true };
    }
    const stamped = ageMs < 0 ? `stamped ${Math.round(-ageMs)} ms in the future` : Number.isFinite(ageMs) ? `${Math.round(ageMs)} ms old` : "missing";
    return { reason: `its heartbeat (${stamped} by this clock) did not change for ${unchangedMs} ms (stale after ${staleMs} ms)`, watch: true };
  };

  await refuseLinks(fs, dataDir, [HOST_LOCK_NAME, HOST_LOCK_HOLDER_NAME, GUARD_NAME]);
  await refuseHolderFolder(fs, holderPath);
  await refuseLockNotFolder(fs, lockPath);
  const observed = await inspectHostLock({ dataDir, fs: rawFs });
  const verdict = observed.locked ? await judge(observed) : { reason: null, watch: false };
  if (observed.locked && verdict.reason === null) throw lockedError(dataDir, lockPath, observed.holder, observed.holderProblem);

  const tookOver = await withGuard(async (hold) => {
    const state = await inspectHostLock({ dataDir, fs: rawFs });
    let taken: HostLock["tookOver"] = null;
    if (state.locked) {
      // Taken over only if it is still what was judged stale (a watched lock unchanged since).
      // Anything else (it changed, or was made since we looked) is another live host's.
      const reason = observed.locked && heartbeatValue(state) === heartbeatValue(observed) ? verdict.reason : null;
      if (reason === null) throw lockedError(dataDir, lockPath, state.holder, state.holderProblem);
      logger.warn(
        `taking over the host lock of ${dataDir}: ${reason}` +
          (state.holder === null ? ` (held by ${unknownHolder(state.holderProblem)})` : ` (held by pid ${state.holder.pid} on ${state.holder.hostname} since ${state.holder.startedAt})`),
        { dataDir, previous: state.holder, holderProblem: state.holderProblem, reason },
      );
      try {
        await fs.rmdir(lockPath);
      } catch (error) {
        if (errnoOf(error) !== "ENOENT") throw error;
      }
      taken = { previous: state.holder, reason };
    }
    // An acquire given up at its time limit (it threw already) makes no lock.
    if (!hold.active()) return taken;
    try {
      await fs.mkdir(lockPath);
    } catch (error) {
      if (errnoOf(error) !== "EEXIST") throw error;
      // Someone outside the guard protocol made it.
      const found = await readHolder();
      throw lockedError(dataDir, lockPath, found.holder, found.problem);
    }
    // Not held to the guard's limit: the folder is made, and failing here would leave it without
    // its holder record (what a stall mid-acquire leaves to the next acquirer is as before).
    try {
      lastBeatMs = await writeHolder(holder);
    } catch (error) {
      // A record that could not be put in place (a full or failing disk): the folder made above
      // goes too, or the next host would refuse it as a live lock of an unknown holder and then
      // watch it for staleMs. Left alone if the guard may no longer be ours.
      if (hold.fresh()) await fs.rmdir(lockPath).catch(() => undefined);
      throw error;
    }
    await removePendingRecords(fs, dataDir, token);
    return taken;
  });

  /**
   * One heartbeat: under the guard every acquire and takeover takes, so no takeover runs between
   * the check that the holder file is still ours and the rename that replaces it. A heartbeat that
   * held the guard too long (it stalled, or its guard could not be refreshed in time) writes
   * nothing and fails; the retry then finds out whether the lock was taken over meanwhile. The
   * whole heartbeat is given up after `heartbeatGuardTimeoutMs` + {@link GUARD_WORK_LIMIT_MS}
   * (an fs call that does not return): it fails with `io_failed` (`data.state` "heartbeat_timeout")
   * and whatever it still had in flight changes nothing.
   */
  const beat = (): Promise<void> => {
    let active = true;
    const run = async (): Promise<void> => {
      // The new record is written beside the holder file before the guard is taken: under it are
      // only the read, the check and the rename, so a loaded disk does not eat the guard's limit.
      // Its name is this heartbeat's own, so a heartbeat given up cannot remove a later one's.
      const next: HostLockHolder = { ...holder, heartbeatAt: nowIso(), beat: holder.beat + 1 };
      tmpSeq += 1;
      const tmp = `${holderPath}.${token}.${tmpSeq}.tmp`;
      await fs.writeFile(tmp, `${JSON.stringify(next, null, 2)}\n`);
      let placed = false;
      try {
        await withGuard(async (hold) => {
          if (compromised || released || !active) return;
          const { holder: current, problem } = await readHolder();
          if (!active || !hold.active()) return;
          if (current === null) {
            compromise(problem === null ? "the holder file was removed" : `the holder file is unreadable (${problem})`);
            return;
          }
          if (current.token !== token) {
            compromise(`pid ${current.pid} on ${current.hostname} took it over`);
            return;
          }
          // Checked with nothing awaited before the rename is issued.
          if (!hold.fresh() || !active || compromised || released) throw guardExpired();
          const stampMs = monotonicNow();
          await fs.rename(tmp, holderPath);
          placed = true;
          if (!active) return;
          holder = next;
          lastBeatMs = stampMs;
        }, heartbeatGuardTimeoutMs);
      } finally {
        if (!placed) await fs.unlink(tmp).catch(() => undefined);
      }
    };
    const limitMs = heartbeatGuardTimeoutMs + GUARD_WORK_LIMIT_MS;
    return new Promise<void>((resolve, reject) => {
      const limit = guardTimers.setTimeout(() => {
        active = false;
        reject(
          new WorkflowHostError("io_failed", `a heartbeat of the host lock of ${dataDir} did not finish within ${limitMs} ms (a file system call that does not return?); it was given up`, {
            dataDir,
            errno: "ETIMEDOUT",
            state: "heartbeat_timeout",
            limitMs,
          }),
        );
      }, limitMs);
      run().then(
        () => {
          guardTimers.clearTimeout(limit);
          resolve();
        },
        (error: unknown) => {
          guardTimers.clearTimeout(limit);
          reject(error);
        },
      );
    });
  };

  const armHeartbeat = (delayMs: number): void => {
    if (compromised || released) return;
    heartbeat = timers.setTimeout(() => {
      heartbeat = null;
      beat().then(
        () => {
          if (failingSince !== null && !compromised) {
            logger.info(`host lock heartbeat of ${dataDir} restored after ${Math.round(monotonicNow() - failingSince)} ms`, { dataDir });
          }
          failingSince = null;
          failures = 0;
          armHeartbeat(heartbeatMs);
        },
        (error: unknown) => {
          // A failing disk (read-only, full, I/O errors) is not a takeover: say so, retry soon.
          failures += 1;
          failingSince ??= monotonicNow();
          const retryMs = Math.min(heartbeatMs, 250 * 2 ** Math.min(failures - 1, 6));
          const errno = failureErrno(error);
          logger.warn(`host lock heartbeat of ${dataDir} failed (${errno}): ${String(error)}; commits wait until it is written again; retrying in ${retryMs} ms`, {
            dataDir,
            errno,
            failures,
          });
          try {
            opts.onHeartbeatFailed?.(new WorkflowHostError("io_failed", `host lock heartbeat of ${dataDir} failed (${errno})`, { dataDir, errno, failures }, { cause: error }));
          } catch {
            // The owner's reaction must not escape into a timer callback.
          }
          armHeartbeat(retryMs);
        },
      );
    }, delayMs);
  };
  armHeartbeat(heartbeatMs);

  return {
    get holder() {
      return holder;
    },
    path: lockPath,
    tookOver,
    get released() {
      return released || compromised;
    },
    assertHeld() {
      if (released || compromised) {
        throw new WorkflowHostError("host_locked", `the host lock of ${dataDir} is ${compromised ? "lost" : "released"}; nothing may be committed`, { dataDir, lockPath, state: compromised ? "compromised" : "released" });
      }
      const ageMs = monotonicNow() - lastBeatMs;
      if (ageMs > fenceMs) {
        throw new WorkflowHostError(
          "host_locked",
          `the host lock of ${dataDir} is unconfirmed: its last heartbeat was written ${Math.round(ageMs)} ms ago (limit ${fenceMs} ms); commits wait for the next one`,
          { dataDir, lockPath, state: "unconfirmed", ageMs: Math.round(ageMs), fenceMs },
        );
      }
    },
    async release() {
      if (released) return;
      released = true;
      if (heartbeat !== null) timers.clearTimeout(heartbeat);
      heartbeat = null;
      // A lost lock's folder may now be another host's: leave it alone.
      if (compromised) return;
      await withGuard(async () => {
        if ((await readHolder()).holder?.token !== token) return;
        await fs.unlink(holderPath).catch(() => undefined);
        await fs.rmdir(lockPath).catch((error: unknown) => {
          if (errnoOf(error) !== "ENOENT") throw error;
        });
      });
    },
  };
}

/**
 * Why the data dir could not be made: a file at its path, or at a folder above it, is
 * `data_dir_not_found` (it names no folder); another errno is `io_failed`.
 */
function dataDirFailure(error: unknown, dataDir: string): unknown {
  const errno = errnoCode(error);
  if (errno === "EEXIST" || errno === "ENOTDIR") {
    return new WorkflowHostError("data_dir_not_found", `data dir ${dataDir} is a file, or lies below one; allowed: a folder, or a path where one can be made`, { dataDir, errno }, { cause: error });
  }
  return asIoFailure(error, `making data dir ${dataDir}`);
}

/** The errno (or state) a failed heartbeat is logged with. */
function failureErrno(error: unknown): string {
  if (error instanceof WorkflowHostError) {
    const named = error.data["errno"] ?? error.data["state"];
    if (typeof named === "string") return named;
  }
  return errnoOf(error) ?? "unknown";
}
