/**
 * The timer queue's entries, options and handle (see timer-queue.ts for its states and
 * wake-up rules).
 */
import type { Clock, Timers } from "./clock.js";

/** One pending timer. */
export interface TimerQueueEntry<T> {
  /** Unique key; scheduling an existing key replaces that entry. */
  readonly key: string;
  /** When it is due, epoch ms on the wall clock. */
  readonly fireAtMs: number;
  /** Opaque caller data, returned as given. */
  readonly payload: T;
}

/** Options of {@link createTimerQueue}. */
export interface TimerQueueOptions<T> {
  /** Wall clock, re-read at every wake. */
  readonly clock: Clock;
  /** Monotonic one-shot timers used for the single arm. */
  readonly timers: Timers;
  /**
   * Longest single arm, in ms; default 30 000. A forward wall-clock step is noticed within
   * this much monotonic time. Integer in 1 … 2^31−1, else `time_invalid`.
   */
  readonly maxArmMs?: number;
  /**
   * Receives the due entries, removed from the queue, in (fireAtMs, schedule order) order, as
   * one batch. May be async: the queue does not call it again until it settles, and then
   * delivers what fell due meanwhile right away. It may call `schedule`, `cancel`, `recheck`
   * and `stop` on the queue (awaiting `stop()` inside it would wait for itself).
   */
  readonly onDue: (entries: TimerQueueEntry<T>[]) => void | Promise<void>;
  /**
   * Called when `onDue` throws or rejects (with that batch; its entries have already left the
   * queue, re-schedule them to retry) or when the clock throws (with no entries). Default:
   * the queue keeps running and the error rejects the promise of that wake, which is an
   * unhandled rejection under node's timers and a rejected `advance` under the FakeClock.
   */
  readonly onError?: (error: unknown, entries: readonly TimerQueueEntry<T>[]) => void;
}

/** Handle of {@link createTimerQueue}. Every method is synchronous unless it returns a promise. */
export interface TimerQueue<T> {
  /**
   * Adds an entry, or replaces the one with the same key (its fireAtMs, payload and tie order).
   * A past fireAtMs is due now: it goes out at the next wake, which is armed with delay 0
   * (never synchronously from this call).
   * @param fireAtMs epoch ms; NaN, ±Infinity or outside the Date range → `time_invalid`,
   *   thrown before the queue changes.
   * @returns true when stored; false, and nothing changes, once the queue is stopped.
   */
  schedule(key: string, fireAtMs: number, payload: T): boolean;
  /** Removes the entry with `key`. @returns whether there was one. */
  cancel(key: string): boolean;
  /** Whether an entry with `key` is pending. */
  has(key: string): boolean;
  /** The pending entry with `key`, as a fresh object, or undefined. */
  get(key: string): TimerQueueEntry<T> | undefined;
  /** Number of pending entries. */
  readonly size: number;
  /** The earliest pending entry (ties: scheduled first), or undefined when empty. */
  peek(): TimerQueueEntry<T> | undefined;
  /**
   * Every pending entry, in no particular order (sort by fireAtMs if needed). Do not schedule
   * or cancel while iterating: entries may then be skipped or seen twice.
   */
  entries(): IterableIterator<TimerQueueEntry<T>>;
  /**
   * Re-reads the clock now (e.g. after a known wall-clock step): delivers what is due, else
   * re-arms from the new reading. While `onDue` runs this is a no-op (the queue re-reads when
   * it settles).
   * @returns a promise settled when the delivery this started (or the one running) is over;
   *   it rejects as a wake does (see `onError`).
   */
  recheck(): Promise<void>;
  /**
   * Takes the entries due now (the clock re-read), in the order `onDue` receives them, without
   * waiting for a delivery in flight: for an owner whose `onDue` is still at work and can take
   * more (a group commit cutting its next batch). The arm is left as it is (a wake that then
   * finds nothing due re-arms). Returns [] when stopped or when the clock cannot be read.
   */
  takeDue(): TimerQueueEntry<T>[];
  /**
   * Stops the queue for good: clears the arm at once, delivers nothing more, and makes
   * `schedule` return false. Pending entries stay readable (`size`, `entries()`).
   * @returns a promise resolved (never rejected) once the `onDue` call in flight, if any, has
   *   settled.
   */
  stop(): Promise<void>;
  /** Whether {@link TimerQueue.stop} was called. */
  readonly stopped: boolean;
}
