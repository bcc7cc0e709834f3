/**
 * The guard of the host lock (`host.lock.guard/`): a short-lived folder lock held while a host
 * acquires, takes over or releases `host.lock`, and while it replaces the holder file at a
 * heartbeat (docs/design.md §7). On disk it is what proper-lockfile makes (hosts of older versions
 * take it with proper-lockfile): a folder made with `mkdir`, kept fresh by setting its mtime, and
 * removed by any taker once its mtime is more than {@link GUARD_STALE_MS} behind the taker's wall
 * clock.
 *
 * States of one guard operation ({@link runUnderGuard}): taking → held → released, or → abandoned.
 * - taking: `mkdir`; a folder already there is removed when stale, else the mkdir is retried every
 *   100 ms up to the wait limit (then `host_locked`).
 * - held: the work runs. The folder's mtime is set right after it was made and then again and
 *   again (at most every 250 ms, at once when the previous setting took longer). Each setting that
 *   is seen done within {@link GUARD_HOLD_LIMIT_MS} of the last confirmed one becomes the new
 *   confirmed one, stamped with the monotonic time right before it was issued (the mtime it wrote
 *   is no older). `fresh()` is true while less than {@link GUARD_HOLD_LIMIT_MS} has passed since
 *   the last confirmed stamp (the mkdir counts as the first): no other host can have judged the
 *   folder stale yet, even one that read its mtime right before a setting landed. Once `fresh()`
 *   is false it stays false (nothing is set any more: the folder may be another host's).
 * - released: the work settled; the folder is removed if the guard was still fresh, else left to
 *   go stale (it may be another host's by now).
 * - abandoned: the whole operation (taking, work, release) did not settle within its time limit
 *   (an fs call that never returns): it fails with `io_failed` (`data.state` "guard_timeout"),
 *   `fresh()` is false from then on, nothing more is set, and the folder is never touched again,
 *   whatever the calls still in flight do when they settle; a folder left behind goes stale.
 */
import { WorkflowHostError } from "../errors.js";
import type { Clock, MonotonicNow, TimerHandle, Timers } from "../time/clock.js";
import { errnoOf } from "./host-lock-files.js";

/** A taker removes the guard when its mtime is this far behind the taker's wall clock (ms). */
export const GUARD_STALE_MS = 2_000;
/**
 * A write relying on the guard is issued, and a refresh of the guard counts, only within this long
 * of the last confirmed refresh (ms, monotonic): half of {@link GUARD_STALE_MS}, the other half
 * left for the write or the refresh to land and for another host's judgement made on an older
 * mtime.
 */
export const GUARD_HOLD_LIMIT_MS = GUARD_STALE_MS / 2;
/** Pause between attempts to take a busy guard (ms). */
const GUARD_RETRY_MS = 100;
/** Least time between the starts of two refreshes of a held guard (ms). */
const GUARD_REFRESH_MS = 250;

/** The promise fs calls the guard makes. */
export interface GuardFs {
  mkdir(path: string): Promise<unknown>;
  rmdir(path: string): Promise<void>;
  stat(path: string): Promise<{ mtimeMs: number }>;
  utimes(path: string, atime: Date, mtime: Date): Promise<void>;
}

export interface GuardOptions {
  readonly fs: GuardFs;
  /** The guard folder. */
  readonly path: string;
  /** The data dir, for error data. */
  readonly dataDir: string;
  /** Wall clock the folder's mtime is set from and judged by (shared with other processes). */
  readonly clock: Clock;
  readonly monotonicNow: MonotonicNow;
  /** Retries, refreshes and the operation's time limit run on these. */
  readonly timers: Timers;
}

/** What the work under the guard is given. */
export interface GuardHold {
  /** Whether a write relying on the guard may be issued now (see the module comment). */
  fresh(): boolean;
  /** False once the operation was abandoned: stop, change nothing. */
  active(): boolean;
}

/**
 * Takes the guard, runs `work`, and releases it, all within `limitMs`.
 *
 * @param waitMs how long to retry a guard held by another (live) host before giving up (ms)
 * @param limitMs the whole operation's time limit (ms), counted from the call
 * @returns what `work` returned
 * @throws host_locked (`data {dataDir, lockPath}`) when the guard stayed busy for `waitMs`
 * @throws io_failed (`data.state` "guard_timeout", `data.limitMs`) when the operation did not
 *   settle within `limitMs`; the work may still be running, with `active()` and `fresh()` false
 * @throws what `work` or the fs threw
 */
export function runUnderGuard<T>(opts: GuardOptions, work: (hold: GuardHold) => Promise<T>, waitMs: number, limitMs: number): Promise<T> {
  const { fs, path, clock, monotonicNow, timers } = opts;
  let abandoned = false;
  let expired = false;
  let stampMs: number | null = null;
  let refreshTimer: TimerHandle | null = null;

  const fresh = (): boolean => {
    if (abandoned || expired || stampMs === null) return false;
    if (monotonicNow() - stampMs < GUARD_HOLD_LIMIT_MS) return true;
    expired = true;
    return false;
  };

  const stopRefreshing = (): void => {
    if (refreshTimer !== null) timers.clearTimeout(refreshTimer);
    refreshTimer = null;
  };

  const refresh = (): void => {
    refreshTimer = null;
    if (!fresh()) return;
    const baseMs = stampMs!;
    const issuedMs = monotonicNow();
    // Rounded up to the second: a file system that keeps whole seconds must not make the mtime
    // older than the stamp (proper-lockfile does the same there).
    const at = new Date(Math.ceil(clock().getTime() / 1_000) * 1_000);
    // An fs without utimes, or one that throws, refreshes nothing: the window counts from the mkdir.
    let setting: Promise<void>;
    try {
      setting = fs.utimes(path, at, at);
    } catch (error) {
      setting = Promise.reject(error);
    }
    setting.then(
      () => {
        // Seen done within the limit of the last confirmed stamp: nobody can have judged the
        // folder stale before it landed, so the folder it touched was ours.
        if (!fresh() || stampMs !== baseMs || monotonicNow() - baseMs >= GUARD_HOLD_LIMIT_MS) return;
        stampMs = issuedMs;
        const waitMs = GUARD_REFRESH_MS - (monotonicNow() - issuedMs);
        if (waitMs <= 0) refresh();
        else refreshTimer = timers.setTimeout(refresh, waitMs);
      },
      () => {
        // Not confirmed: the guard ages out of its limit unless the next one lands in time.
        if (fresh()) refreshTimer = timers.setTimeout(refresh, GUARD_REFRESH_MS);
      },
    );
  };

  const sleep = (ms: number): Promise<void> => new Promise((done) => timers.setTimeout(() => done(), ms));

  const take = async (): Promise<void> => {
    const retries = Math.max(1, Math.ceil(waitMs / GUARD_RETRY_MS));
    for (let attempt = 0; ; attempt += 1) {
      if (abandoned) throw timeout();
      const issuedMs = monotonicNow();
      try {
        await fs.mkdir(path);
        // Made after the operation was given up: left alone (nothing refreshes it; it goes stale).
        if (abandoned) throw timeout();
        stampMs = issuedMs;
        return;
      } catch (error) {
        if (errnoOf(error) !== "EEXIST") throw error;
      }
      let stale = false;
      try {
        stale = (await fs.stat(path)).mtimeMs < clock().getTime() - GUARD_STALE_MS;
      } catch (error) {
        if (errnoOf(error) !== "ENOENT") throw error;
        // Released meanwhile: try again at once.
        continue;
      }
      if (stale && !abandoned) {
        await fs.rmdir(path).catch((error: unknown) => {
          if (errnoOf(error) !== "ENOENT") throw error;
        });
        continue;
      }
      if (attempt >= retries) {
        throw new WorkflowHostError("host_locked", `data dir ${opts.dataDir} is being locked or unlocked by another host for more than ${waitMs} ms; try again`, {
          dataDir: opts.dataDir,
          lockPath: path,
        });
      }
      await sleep(GUARD_RETRY_MS);
    }
  };

  const timeout = (): WorkflowHostError =>
    new WorkflowHostError(
      "io_failed",
      `an operation under the guard ${path} did not finish within ${limitMs} ms (a file system call that does not return?); it was given up and the guard left to go stale`,
      { dataDir: opts.dataDir, path, errno: "ETIMEDOUT", state: "guard_timeout", limitMs },
    );

  const operation = (async (): Promise<T> => {
    await take();
    refresh();
    try {
      return await work({ fresh, active: () => !abandoned });
    } finally {
      const removable = fresh();
      stopRefreshing();
      expired = true;
      if (removable && !abandoned) {
        await fs.rmdir(path).catch(() => undefined);
      }
    }
  })();

  return new Promise<T>((resolve, reject) => {
    const limit = timers.setTimeout(() => {
      abandoned = true;
      stopRefreshing();
      reject(timeout());
    }, limitMs);
    operation.then(
      (value) => {
        timers.clearTimeout(limit);
        resolve(value);
      },
      (error: unknown) => {
        timers.clearTimeout(limit);
        reject(error);
      },
    );
  });
}
