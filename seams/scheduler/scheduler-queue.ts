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
 */
import type { Clock, Timers } from "../../src/time/clock.js";
import { createTimerQueue, type TimerQueue, type TimerQueueEntry } from "../../src/time/timer-queue.js";
import type { PendingTimer } from "../../src/workflow/types.js";
import type { QueuedTimer } from "./scheduler-types.js";

/** One due generation as delivered to the scheduler. */
export interface DueGeneration {
  readonly repoId: string;
  readonly runId: string;
  /** The generation that was armed (the run state's object at arming time). */
  readonly pending: PendingTimer;
  /** The queue time it was delivered at (epoch ms): a floor for "now" when it is committed. */
  readonly dueMs: number;
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

export interface SchedulerQueue {
  /**
   * Arms `pending` of run `runId` to be delivered at `atMs` (epoch ms; later than its fireAt on
   * a retry), replacing any generation of that timer. Arming the generation already queued at
   * the same time is a no-op.
   * @returns true when the timer was not queued before (a new arm), false otherwise
   */
  arm(repoId: string, runId: string, pending: PendingTimer, atMs: number): boolean;
  /** Drops the timer's queued generation. @returns whether one was queued */
  disarm(repoId: string, runId: string, timerId: string): boolean;
  /** The generation queued for the timer, or undefined. */
  queued(repoId: string, runId: string, timerId: string): PendingTimer | undefined;
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

function toDue(entry: TimerQueueEntry<PendingTimer>): DueGeneration {
  return { ...splitKey(entry.key), pending: entry.payload, dueMs: entry.fireAtMs };
}

/** Creates the queue; see {@link SchedulerQueue}. @throws `time_invalid` for a bad `maxArmMs` */
export function createSchedulerQueue(opts: SchedulerQueueOptions): SchedulerQueue {
  const queue: TimerQueue<PendingTimer> = createTimerQueue<PendingTimer>({
    clock: opts.clock,
    timers: opts.timers,
    ...(opts.maxArmMs === undefined ? {} : { maxArmMs: opts.maxArmMs }),
    onDue: (entries) => opts.onDue(entries.map(toDue)),
    onError: (error, entries) => opts.onError(error, entries.map(toDue)),
  });
  return {
    arm(repoId, runId, pending, atMs) {
      const key = timerKey(repoId, runId, pending.timerId);
      const current = queue.get(key);
      if (current !== undefined && current.fireAtMs === atMs && current.payload.setSeq === pending.setSeq && current.payload.fireAt === pending.fireAt) {
        return false;
      }
      return queue.schedule(key, atMs, pending) && current === undefined;
    },
    disarm(repoId, runId, timerId) {
      return queue.cancel(timerKey(repoId, runId, timerId));
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
