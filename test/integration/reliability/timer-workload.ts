/**
 * Another process's writes while a host runs (and dies): new one-shots, reschedules and
 * durable cancels, each decided under the repo lock with `appendRunEvents` — what a workflow
 * runtime or the `timer set|cancel` commands do. Writes that fail (the ref lock left by a
 * killed host, a lost race) are counted and skipped: the log is the only record that counts.
 */
import type { RepoStore } from "../../../src/substrate/types.js";
import { appendRunEvents } from "../../../src/workflow/run-log-append.js";
import type { Prng } from "./prng.js";
import { sleep } from "./serve-process.js";

export interface TimerWorkloadOptions {
  readonly store: RepoStore;
  readonly repoId: string;
  readonly runIds: readonly string[];
  readonly rng: Prng;
  /** Pause between writes (ms): uniform in [min, max]. */
  readonly everyMs: readonly [number, number];
  /** How far ahead new and rescheduled timers are due (ms): uniform in [min, max]. */
  readonly aheadMs: readonly [number, number];
}

export interface TimerWorkloadStats {
  sets: number;
  resets: number;
  cancels: number;
  cancelNoops: number;
  failures: number;
  lastError: string | null;
}

export interface TimerWorkload {
  readonly stats: TimerWorkloadStats;
  /** Resolves once the write in flight (if any) is done; no new write starts until `resume`. */
  pause(): Promise<void>;
  resume(): void;
  /** Stops for good after the write in flight. */
  stop(): Promise<void>;
}

/** Starts writing at once. */
export function startTimerWorkload(opts: TimerWorkloadOptions): TimerWorkload {
  const { store, repoId, rng } = opts;
  const stats: TimerWorkloadStats = { sets: 0, resets: 0, cancels: 0, cancelNoops: 0, failures: 0, lastError: null };
  const known: { runId: string; timerId: string }[] = [];
  let counter = 0;
  let paused = false;
  let stopped = false;
  let inFlight: Promise<void> = Promise.resolve();
  let wakeFromPause: (() => void) | null = null;

  const write = async (): Promise<void> => {
    const roll = rng.int(1, 10);
    const nowIso = new Date().toISOString();
    const fireAt = new Date(Date.now() + rng.int(opts.aheadMs[0], opts.aheadMs[1])).toISOString();
    if (roll <= 5 || known.length === 0) {
      const runId = rng.pick(opts.runIds);
      const timerId = `w${(counter += 1)}`;
      await append(runId, `Set timer ${timerId}`, (pending) => (pending === null ? null : { type: "TimerSet", at: nowIso, data: { timerId, fireAt } }), timerId);
      known.push({ runId, timerId });
      stats.sets += 1;
    } else if (roll <= 7) {
      const { runId, timerId } = rng.pick(known);
      await append(runId, `Reschedule timer ${timerId}`, (pending) => (pending === null ? null : { type: "TimerSet", at: nowIso, data: { timerId, fireAt } }), timerId);
      stats.resets += 1;
    } else {
      const { runId, timerId } = rng.pick(known);
      const committed = await append(
        runId,
        `Cancel timer ${timerId}`,
        (pending) => (pending === true ? { type: "TimerCancelled", at: nowIso, data: { timerId, reason: "workload" } } : null),
        timerId,
      );
      if (committed) stats.cancels += 1;
      else stats.cancelNoops += 1;
    }
  };

  /** `body(pending)`: pending is null when the run ended, else whether `timerId` is armed. */
  const append = async (runId: string, message: string, body: (pending: boolean | null) => Record<string, unknown> | null, timerId: string): Promise<boolean> => {
    const result = await appendRunEvents({
      store,
      principal: null,
      repoId,
      runId,
      message,
      decide: (log) => {
        const next = body(log.state.terminal !== null ? null : log.state.pendingTimers.has(timerId));
        return { append: next === null ? [] : [next], result: undefined };
      },
    });
    return result.committed;
  };

  const loop = async (): Promise<void> => {
    while (!stopped) {
      if (paused) {
        await new Promise<void>((resolve) => {
          wakeFromPause = resolve;
        });
        continue;
      }
      inFlight = write().catch((error: unknown) => {
        stats.failures += 1;
        stats.lastError = String(error);
      });
      await inFlight;
      await sleep(rng.int(opts.everyMs[0], opts.everyMs[1]));
    }
  };
  const running = loop();

  return {
    stats,
    async pause() {
      paused = true;
      await inFlight;
    },
    resume() {
      paused = false;
      const wake = wakeFromPause;
      wakeFromPause = null;
      wake?.();
    },
    async stop() {
      stopped = true;
      const wake = wakeFromPause;
      wakeFromPause = null;
      wake?.();
      await inFlight;
      await running;
    },
  };
}
