/**
 * FakeClock: a controllable wall clock and timer facility for tests (docs/design.md §7).
 *
 * Like a real machine it keeps two notions of time:
 * - monotonic time, on which fake `setTimeout`s are scheduled; it only moves forward, through
 *   `advance`;
 * - the wall clock returned by `clock()` and `now()`: monotonic time plus an offset. `advance`
 *   moves both together; `jump` changes only the offset (an NTP step, forwards or backwards)
 *   and fires nothing.
 *
 * States of a fake timer: pending → fired (by `advance`) or cleared (by `clearTimeout`).
 * The clock itself is idle or advancing; `advance` calls made meanwhile queue behind the
 * running one.
 */

import { WorkflowHostError } from "../errors.js";
import type { Clock, TimerHandle, Timers } from "../time/clock.js";

/** What {@link createFakeClock} returns. */
export interface FakeClock {
  /** The wall clock, in epoch ms. */
  now(): number;
  /** The wall clock as a fresh `Date` per call; pass it wherever a `Clock` is wanted. */
  readonly clock: Clock;
  /** Fake timers on monotonic time; pass them wherever `Timers` are wanted. */
  readonly timers: Timers;
  /**
   * Moves monotonic time and the wall clock forward by `ms`, firing every fake timer that
   * falls due on the way (and any they schedule that fall due before the end), ordered by due
   * time, ties by scheduling order. Before each callback the clock is set to that timer's due
   * time. After each callback (and at the start and end) its work is let settle:
   * - a promise the callback returns is awaited, through event-loop turns (so I/O from the
   *   thread pool, like isomorphic-git's hashing and deflate, completes), for at most
   *   `maxSettleRounds` turns; past that budget the clock moves on and the promise is still
   *   awaited at the next settle point. The budget only matters for work that waits on this
   *   fake clock itself (a retry backoff): that timer then fires once the budget is spent.
   * - then `settleRounds` more turns run for work the callback started without returning it.
   *   Tests should still wait on events for such work, never on a number of turns.
   * Calls made while another `advance` runs start after it ends. Calling `advance` from inside
   * a fake timer callback and awaiting it deadlocks.
   * @param ms milliseconds, finite and ≥ 0; otherwise `time_invalid` is thrown synchronously
   *   and time does not move.
   * @returns a promise resolved when time has reached the target and the work settled; it
   *   rejects with the first error a callback threw (or its promise rejected with), in which
   *   case time stays at that timer's due time.
   */
  advance(ms: number): Promise<void>;
  /**
   * Sets the wall clock to `iso` (forwards or backwards) without moving monotonic time and
   * without firing anything; armed timers keep their monotonic due times.
   * @param iso RFC 3339 with an explicit offset and a real calendar date; else `time_invalid`.
   */
  jump(iso: string): void;
  /** Number of fake timers scheduled and not yet fired or cleared. */
  pending(): number;
}

/** Options of {@link createFakeClock}. */
export interface FakeClockOptions {
  /** Event-loop turns run after each callback for work it did not return; default 5. */
  readonly settleRounds?: number;
  /** Most event-loop turns spent awaiting a callback's returned promise per settle; default 100 000. */
  readonly maxSettleRounds?: number;
}

interface FakeTimer {
  readonly id: number;
  readonly dueMs: number;
  readonly fn: () => unknown;
}

/** Node's limit; out-of-range delays are coerced the way node coerces them. */
const MAX_TIMEOUT_MS = 2_147_483_647;

const RFC3339 =
  /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.\d+)?(?:[Zz]|([+-])(\d{2}):(\d{2}))$/;

/** Parses an RFC 3339 instant with an explicit offset and a real calendar date to epoch ms. */
function parseInstant(name: string, iso: string): number {
  const invalid = (): WorkflowHostError =>
    new WorkflowHostError(
      "time_invalid",
      `${name} must be an RFC 3339 instant with a real date and an explicit offset (Z or ±hh:mm); got ${JSON.stringify(iso)}`,
      { [name]: iso },
    );
  if (typeof iso !== "string") throw invalid();
  const match = RFC3339.exec(iso);
  if (match === null) throw invalid();
  const [year, month, day, hour, minute, second] = match.slice(1, 7).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const offsetHour = match[8] === undefined ? 0 : Number(match[8]);
  const offsetMinute = match[9] === undefined ? 0 : Number(match[9]);
  const calendar = new Date(Date.UTC(year, month - 1, day));
  const realDate =
    month >= 1 &&
    month <= 12 &&
    calendar.getUTCFullYear() === year &&
    calendar.getUTCMonth() === month - 1 &&
    calendar.getUTCDate() === day;
  if (!realDate || hour > 23 || minute > 59 || second > 59 || offsetHour > 23 || offsetMinute > 59) {
    throw invalid();
  }
  const ms = Date.parse(iso);
  if (!Number.isFinite(ms)) throw invalid();
  return ms;
}

/** Node's coercion: NaN, < 1 (except exactly 0, see below) or > 2^31−1 become 1 ms. */
function coerceDelayMs(delayMs: number): number {
  // Exactly 0 stays 0 so `advance(0)` runs work that is due now; every other out-of-range
  // value behaves as in node (1 ms), so a scheduler that passes one misbehaves here too.
  if (delayMs === 0) return 0;
  if (!(delayMs >= 1 && delayMs <= MAX_TIMEOUT_MS)) return 1;
  return Math.ceil(delayMs);
}

function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    (typeof value === "object" || typeof value === "function") &&
    value !== null &&
    typeof (value as { then?: unknown }).then === "function"
  );
}

function checkRounds(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 0) {
    throw new WorkflowHostError("time_invalid", `${name} must be an integer ≥ 0; got ${String(value)}`, {
      [name]: value,
    });
  }
  return value;
}

/**
 * Creates a FakeClock whose wall clock starts at `startIso` and whose monotonic time starts at 0.
 * @param startIso RFC 3339 with an explicit offset; otherwise `time_invalid`.
 * @throws `time_invalid` for a bad `startIso` or bad options.
 */
export function createFakeClock(startIso: string, options: FakeClockOptions = {}): FakeClock {
  const startMs = parseInstant("startIso", startIso);
  const settleRounds = checkRounds("settleRounds", options.settleRounds, 5);
  const maxSettleRounds = checkRounds("maxSettleRounds", options.maxSettleRounds, 100_000);

  let monoMs = 0;
  let wallOffsetMs = startMs;
  let nextId = 1;
  /** Pending timers sorted by (dueMs, id); ids grow, so id order is scheduling order. */
  const queue: FakeTimer[] = [];
  const byId = new Map<number, FakeTimer>();
  /** Promises returned by callbacks and not settled yet. */
  const inFlight = new Set<PromiseLike<unknown>>();
  /** First error from a callback or its promise, not yet reported by an `advance`. */
  let failure: { error: unknown } | undefined;
  let tail: Promise<void> = Promise.resolve();

  function insertionIndex(timer: FakeTimer): number {
    let low = 0;
    let high = queue.length;
    while (low < high) {
      const mid = (low + high) >> 1;
      const other = queue[mid]!;
      if (other.dueMs < timer.dueMs || (other.dueMs === timer.dueMs && other.id < timer.id)) low = mid + 1;
      else high = mid;
    }
    return low;
  }

  const timers: Timers = {
    setTimeout(fn: () => unknown, delayMs: number): TimerHandle {
      const timer: FakeTimer = { id: nextId++, dueMs: monoMs + coerceDelayMs(delayMs), fn };
      queue.splice(insertionIndex(timer), 0, timer);
      byId.set(timer.id, timer);
      return timer.id;
    },
    clearTimeout(handle: TimerHandle): void {
      if (typeof handle !== "number") return;
      const timer = byId.get(handle);
      if (timer === undefined) return;
      byId.delete(handle);
      const index = insertionIndex(timer);
      if (queue[index] === timer) queue.splice(index, 1);
    },
    now: () => monoMs,
  };

  function track(value: unknown): void {
    if (!isThenable(value)) return;
    inFlight.add(value);
    value.then(
      () => inFlight.delete(value),
      (error: unknown) => {
        inFlight.delete(value);
        failure ??= { error };
      },
    );
  }

  async function settle(): Promise<void> {
    for (let round = 0; inFlight.size > 0 && round < maxSettleRounds; round += 1) await nextTurn();
    for (let round = 0; round < settleRounds; round += 1) await nextTurn();
  }

  function throwFailure(): void {
    if (failure !== undefined) {
      const { error } = failure;
      failure = undefined;
      throw error;
    }
  }

  async function run(targetMs: number): Promise<void> {
    await settle();
    throwFailure();
    for (;;) {
      const next = queue[0];
      if (next === undefined || next.dueMs > targetMs) break;
      queue.shift();
      byId.delete(next.id);
      monoMs = Math.max(monoMs, next.dueMs);
      try {
        track(next.fn());
      } catch (error) {
        failure ??= { error };
      }
      await settle();
      throwFailure();
    }
    monoMs = Math.max(monoMs, targetMs);
    await settle();
    throwFailure();
  }

  return {
    now: () => monoMs + wallOffsetMs,
    clock: () => new Date(monoMs + wallOffsetMs),
    timers,
    advance(ms: number): Promise<void> {
      if (typeof ms !== "number" || !Number.isFinite(ms) || ms < 0) {
        throw new WorkflowHostError("time_invalid", `advance takes a finite number of ms ≥ 0; got ${String(ms)}`, {
          ms,
        });
      }
      // The target is fixed when advance starts running, relative to where the previous one ended.
      const result = tail.then(() => run(monoMs + ms));
      tail = result.catch(() => undefined);
      return result;
    },
    jump(iso: string): void {
      const wallMs = parseInstant("iso", iso);
      wallOffsetMs = wallMs - monoMs;
    },
    pending: () => queue.length,
  };
}
