/**
 * The scheduler's view of the process-wide timer queue: one entry per armed generation,
 * keyed `<repoId>/<runId>/<timerId>`.
 *
 * Memory layout (a host may hold a million pending timers): the entry's payload is the run
 * state's own `PendingTimer` object, shared, not a copy; repo and run ids are recovered from
 * the key (none of the three ids may contain "/"), and a {@link QueuedTimer} is only built when
 * someone asks (`entries`, deliveries). Per pending timer the queue then costs the key string,
 * its heap slot and its map entry: measured 79 B at a million timers (bench/RESULTS.md,
 * "Memory"), against ~112 B when every entry carried its own `QueuedTimer` object.
 *
 * The queue also owns what decides whether a generation may be armed at all:
 * - suppressions: `suppress` (the scheduler's `dropQueued`) drops a timer from memory and
 *   refuses every generation up to a TimerSet seq, even one not read yet; a newer generation
 *   spends the suppression, and `settle` forgets it once the run's log has caught up with it
 *   and no longer arms the timer (kept per run, so settling a run costs one lookup);
 * - deliveries: a generation delivered and armed again (a retry, an early wake) is not a new
 *   arm, so `arm` says so once per generation per start.
 */
import type { Clock, Timers } from "../../src/time/clock.js";
import { createTimerQueue, type TimerQueue, type TimerQueueEntry } from "../../src/time/timer-queue.js";
import type { PendingTimer } from "../../src/workflow/types.js";
import type { QueuedTimer } from "./scheduler-types.js";

/** One due generation as delivered to the scheduler. */
export interface DueGeneration {
  /** The queue key, `<repoId>/<runId>/<timerId>` ({@link timerKey}): one flat string per timer, reused as the fire buffer's key. */
  readonly key: string;
  readonly repoId: string;
  readonly runId: string;
  /** The generation that was armed (the run state's object at arming time). */
  readonly pending: PendingTimer;
  /** The queue time it was delivered at (epoch ms): a floor for "now" when it is committed. */
  readonly dueMs: number;
  /**
   * The wall clock when the queue handed it over (epoch ms): when the host took it up. A series
   * tick is judged on time or missed at this moment, not at its commit, which may wait behind a
   * backlog of fire commits.
   */
  readonly takenUpMs: number;
}

export interface SchedulerQueueOptions {
  readonly clock: Clock;
  readonly timers: Timers;
  readonly maxArmMs?: number;
  /** Receives every due generation of one wake, in (fireAt, arming order) order. */
  readonly onDue: (due: DueGeneration[]) => void | Promise<void>;
  /** `onDue` failed: the generations have left the queue; re-arm them to retry. */
  readonly onError: (error: unknown, due: readonly DueGeneration[]) => void;
}

/**
 * What {@link SchedulerQueue.arm} did: `armed` a generation that was neither queued nor delivered
 * before (report it), `kept` one that was (already queued, or back from a delivery), or refused a
 * `suppressed` one (nothing queued).
 */
export type ArmOutcome = "armed" | "kept" | "suppressed";

export interface SchedulerQueue {
  /**
   * Arms `pending` of run `runId` to be delivered at `atMs` (epoch ms; later than its fireAt on
   * a retry), replacing any generation of that timer, unless it is suppressed. Arming the
   * generation already queued at the same time is a no-op.
   */
  arm(repoId: string, runId: string, pending: PendingTimer, atMs: number): ArmOutcome;
  /** Drops the timer's queued generation. @returns whether one was queued */
  disarm(repoId: string, runId: string, timerId: string): boolean;
  /**
   * {@link disarm} by the timer's queue key as delivered ({@link DueGeneration.key}): the string
   * the queue already holds and has hashed, so no key is built and hashed again (a fire commit
   * disarms every timer it fired). @returns whether a generation was queued
   */
  disarmKey(key: string): boolean;
  /**
   * Drops the timer from memory and refuses its generations up to `upToSetSeq` (a TimerSet seq)
   * from now on; a newer generation is armed as usual and ends the suppression. A negative
   * `upToSetSeq` (no generation known) only drops it.
   * @returns whether a generation was queued
   */
  suppress(repoId: string, runId: string, timerId: string, upToSetSeq: number): boolean;
  /** Whether `pending` is a suppressed generation (a newer one ends the suppression). */
  suppressed(repoId: string, runId: string, pending: PendingTimer): boolean;
  /**
   * Forgets the run's suppressions of timers the log no longer arms (not in `armed`) once its
   * log is at or past the suppressed generation (`lastSeq`), so a cancel that raced the
   * TimerSet's commit still applies when that commit is read.
   */
  settle(repoId: string, runId: string, armed: ReadonlyMap<string, unknown>, lastSeq: number): void;
  /** The generation queued for the timer, or undefined. */
  queued(repoId: string, runId: string, timerId: string): PendingTimer | undefined;
  /**
   * The generations due now, taken out of the queue as a delivery would hand them over, even
   * while `onDue` is still at work (see `TimerQueue.takeDue`).
   */
  takeDue(): DueGeneration[];
  /** Every queued generation, materialised as {@link QueuedTimer}s, in no particular order. */
  entries(): QueuedTimer[];
  readonly size: number;
  /** Stops delivering (see `TimerQueue.stop`). */
  stop(): Promise<void>;
}

/** The queue key of a timer. */
export function timerKey(repoId: string, runId: string, timerId: string): string {
  return `${repoId}/${runId}/${timerId}`;
}

function splitKey(key: string): { repoId: string; runId: string } {
  const first = key.indexOf("/");
  const second = key.indexOf("/", first + 1);
  return { repoId: key.slice(0, first), runId: key.slice(first + 1, second) };
}

function toQueued(repoId: string, runId: string, pending: PendingTimer): QueuedTimer {
  return {
    repoId,
    runId,
    timerId: pending.timerId,
    fireAt: pending.fireAt,
    fireAtMs: Date.parse(pending.fireAt),
    setSeq: pending.setSeq,
    ...(pending.cron === undefined ? {} : { cron: pending.cron, timezone: pending.timezone ?? "UTC" }),
  };
}

/**
 * Due generations of one delivery. A burst delivers every timer of a deployment at once (20,000
 * in the peer bench): one object each, its ids sliced from the key, and the repo id string shared
 * by every generation of the same repo instead of one copy per timer.
 */
function toDue(entries: readonly TimerQueueEntry<PendingTimer>[], takenUpMs: number): DueGeneration[] {
  const out: DueGeneration[] = new Array<DueGeneration>(entries.length);
  let repoId = "";
  for (let i = 0; i < entries.length; i += 1) {
    const entry = entries[i] as TimerQueueEntry<PendingTimer>;
    const key = entry.key;
    const first = key.indexOf("/");
    if (first !== repoId.length || !key.startsWith(repoId)) repoId = key.slice(0, first);
    const runId = key.slice(first + 1, key.indexOf("/", first + 1));
    out[i] = { key, repoId, runId, pending: entry.payload, dueMs: entry.fireAtMs, takenUpMs };
  }
  return out;
}

const NO_SUPPRESSIONS: ReadonlyMap<string, number> = new Map();

/** A delivery not filed in the delivered map yet: its entries, and the first not taken back. */
interface Delivery {
  readonly entries: readonly TimerQueueEntry<PendingTimer>[];
  next: number;
}

/** Creates the queue; see {@link SchedulerQueue}. @throws `time_invalid` for a bad `maxArmMs` */
export function createSchedulerQueue(opts: SchedulerQueueOptions): SchedulerQueue {
  /**
   * `repo/run/timer` → setSeq of a generation delivered and not back in the queue yet (held by
   * the fire loop, or waiting for a retry). An entry lives only while its generation is out.
   * The deliveries not yet filed here are in `outstanding` (see there): together they are that map.
   */
  const delivered = new Map<string, number>();
  /**
   * Deliveries not filed in `delivered` yet, oldest first: the keys and setSeqs of each (from
   * `next` on; a key is in one place at most, as a generation is only delivered from the queue).
   * A fire loop disarms the timers it fired in the order they were delivered (a burst's 20,000):
   * a disarm or arm of the key at the oldest delivery's `next` only moves `next` on, where filing
   * and deleting each key cost two map updates per fire. Any other key files them all first.
   */
  const outstanding: Delivery[] = [];
  /** Files every outstanding delivery into `delivered`. */
  const file = (): void => {
    for (let d = 0; d < outstanding.length; d++) {
      const { entries, next } = outstanding[d] as Delivery;
      for (let i = next; i < entries.length; i++) {
        const entry = entries[i] as TimerQueueEntry<PendingTimer>;
        delivered.set(entry.key, entry.payload.setSeq);
      }
    }
    outstanding.length = 0;
  };
  /**
   * Takes `key` out of the delivered generations. @returns its setSeq, or undefined when none
   * was out.
   */
  const takeDelivered = (key: string): number | undefined => {
    const oldest = outstanding[0];
    if (oldest !== undefined) {
      const entry = oldest.entries[oldest.next] as TimerQueueEntry<PendingTimer>;
      if (entry.key === key) {
        oldest.next += 1;
        if (oldest.next === oldest.entries.length) outstanding.shift();
        return entry.payload.setSeq;
      }
      file();
    }
    const setSeq = delivered.get(key);
    if (setSeq !== undefined) delivered.delete(key);
    return setSeq;
  };
  /** `repo/run` → timerId → the newest suppressed generation (setSeq); older ones are too. */
  const suppressions = new Map<string, Map<string, number>>();
  const markDelivered = (entries: readonly TimerQueueEntry<PendingTimer>[]): DueGeneration[] => {
    if (entries.length > 0) outstanding.push({ entries, next: 0 });
    return toDue(entries, opts.clock().getTime());
  };
  const queue: TimerQueue<PendingTimer> = createTimerQueue<PendingTimer>({
    clock: opts.clock,
    timers: opts.timers,
    ...(opts.maxArmMs === undefined ? {} : { maxArmMs: opts.maxArmMs }),
    onDue: (entries) => opts.onDue(markDelivered(entries)),
    onError: (error, entries) => {
      opts.onError(error, toDue(entries, opts.clock().getTime()));
    },
  });
  const isSuppressed = (repoId: string, runId: string, pending: PendingTimer): boolean => {
    // Almost always none: a recovery arms a million timers without building a key for each.
    if (suppressions.size === 0) return false;
    const run = suppressions.get(`${repoId}/${runId}`);
    const upTo = run?.get(pending.timerId);
    if (run === undefined || upTo === undefined) return false;
    if (pending.setSeq <= upTo) return true;
    // A newer generation: the suppression is spent.
    run.delete(pending.timerId);
    if (run.size === 0) suppressions.delete(`${repoId}/${runId}`);
    return false;
  };
  const disarm = (key: string): boolean => {
    takeDelivered(key);
    return queue.cancel(key);
  };
  return {
    arm(repoId, runId, pending, atMs) {
      const key = timerKey(repoId, runId, pending.timerId);
      const back = takeDelivered(key) === pending.setSeq;
      if (isSuppressed(repoId, runId, pending)) return "suppressed";
      const current = queue.get(key);
      if (current !== undefined && current.fireAtMs === atMs && current.payload.setSeq === pending.setSeq && current.payload.fireAt === pending.fireAt) {
        return "kept";
      }
      return queue.schedule(key, atMs, pending) && current === undefined && !back ? "armed" : "kept";
    },
    disarm(repoId, runId, timerId) {
      return disarm(timerKey(repoId, runId, timerId));
    },
    disarmKey: disarm,
    suppress(repoId, runId, timerId, upToSetSeq) {
      const runKey = `${repoId}/${runId}`;
      let run = suppressions.get(runKey);
      if (upToSetSeq >= 0 && run === undefined) suppressions.set(runKey, (run = new Map()));
      if (upToSetSeq >= 0) run?.set(timerId, Math.max(upToSetSeq, run.get(timerId) ?? -1));
      return disarm(timerKey(repoId, runId, timerId));
    },
    suppressed: isSuppressed,
    settle(repoId, runId, armed, lastSeq) {
      if (suppressions.size === 0) return;
      const run = suppressions.get(`${repoId}/${runId}`) ?? NO_SUPPRESSIONS;
      if (run === NO_SUPPRESSIONS) return;
      for (const [timerId, upTo] of run) if (!armed.has(timerId) && upTo <= lastSeq) (run as Map<string, number>).delete(timerId);
      if (run.size === 0) suppressions.delete(`${repoId}/${runId}`);
    },
    takeDue() {
      const entries = queue.takeDue();
      return entries.length === 0 ? [] : markDelivered(entries);
    },
    queued(repoId, runId, timerId) {
      return queue.get(timerKey(repoId, runId, timerId))?.payload;
    },
    entries() {
      const out: QueuedTimer[] = [];
      for (const entry of queue.entries()) {
        const { repoId, runId } = splitKey(entry.key);
        out.push(toQueued(repoId, runId, entry.payload));
      }
      return out;
    },
    get size() {
      return queue.size;
    },
    stop() {
      return queue.stop();
    },
  };
}
