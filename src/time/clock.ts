/**
 * The two time sources every time-aware component takes by injection (docs/design.md §5, §7):
 * a wall clock (`Clock`) and a timer facility (`Timers`). Production code uses
 * {@link systemClock} and {@link systemTimers}; tests use the FakeClock of the test kit.
 * This module and the CLI are the only places that touch `Date.now`/`new Date()` and
 * node's `setTimeout`.
 */

/** Reads the wall clock. May step backwards or forwards between calls (NTP, suspend, VM). */
export type Clock = () => Date;

/** What a {@link Timers} implementation returns from `setTimeout`; opaque to callers. */
export type TimerHandle = unknown;

/**
 * One-shot timers on a monotonic time base. Callbacks may return a promise; production
 * timers ignore it, the FakeClock awaits it so tests see the work finished.
 */
export interface Timers {
  /**
   * Calls `fn` once after `delayMs` milliseconds of monotonic time.
   * @returns a handle for {@link Timers.clearTimeout}.
   */
  setTimeout(fn: () => void, delayMs: number): TimerHandle;
  /** Cancels a pending timer; a fired, cleared or foreign handle is ignored. */
  clearTimeout(handle: TimerHandle): void;
  /**
   * The current monotonic time in ms, on the base `setTimeout` delays run on (only
   * differences are meaningful). Optional: components that measure elapsed time fall back to
   * the injected wall clock when it is absent. System timers: `performance.now()`.
   */
  now?(): number;
}

/** Largest delay node's `setTimeout` honours (2^31−1 ms, about 24.8 days). */
export const MAX_TIMEOUT_MS = 2_147_483_647;

/** The process's wall clock: a fresh `Date` per call. */
export const systemClock: Clock = () => new Date();

/**
 * Turns any number into a delay node's `setTimeout` accepts as given.
 *
 * Node replaces NaN, negative and > 2^31−1 delays by 1 ms (the last with a
 * `TimeoutOverflowWarning`), so a far-future timer would fire almost at once. This never
 * lets such a value through:
 * - NaN → 0 (no usable delay: wake at once so the caller re-reads the clock);
 * - negative or −Infinity → 0 (already due);
 * - above `capMs` or +Infinity → `capMs`;
 * - fractions round up, so a wake-up is never earlier than asked.
 *
 * @param delayMs the wanted delay in ms.
 * @param capMs the largest delay to return, in ms; default {@link MAX_TIMEOUT_MS}. Clamped
 *   into 0 … {@link MAX_TIMEOUT_MS}; NaN means the default.
 * @returns an integer in 0 … min(capMs, 2^31−1).
 */
export function safeDelayMs(delayMs: number, capMs: number = MAX_TIMEOUT_MS): number {
  const cap = Number.isNaN(capMs) ? MAX_TIMEOUT_MS : Math.min(Math.max(Math.floor(capMs), 0), MAX_TIMEOUT_MS);
  if (Number.isNaN(delayMs) || delayMs <= 0) return 0;
  if (delayMs >= cap) return cap;
  return Math.ceil(delayMs);
}

/** Options of {@link createSystemTimers}. */
export interface SystemTimersOptions {
  /**
   * When true, armed timers do not keep the process alive (`Timeout.unref()`); the owner
   * keeps the process running by other means (a server, the host's lock heartbeat).
   * Default false, as node's own `setTimeout`.
   */
  readonly unref?: boolean;
}

/**
 * Node's timers behind the {@link Timers} interface. Every delay goes through
 * {@link safeDelayMs}, so no NaN, negative or overflowing value reaches node and no
 * `TimeoutOverflowWarning` is emitted; a delay beyond 2^31−1 ms is shortened to 2^31−1 ms,
 * so callers with longer waits must re-arm (the timer queue caps every arm far lower).
 */
export function createSystemTimers(options: SystemTimersOptions = {}): Timers {
  const unref = options.unref === true;
  return {
    setTimeout(fn, delayMs) {
      const handle = setTimeout(fn, safeDelayMs(delayMs));
      if (unref) handle.unref();
      return handle;
    },
    clearTimeout(handle) {
      if (handle !== null && typeof handle === "object") clearTimeout(handle as NodeJS.Timeout);
    },
    now: () => performance.now(),
  };
}

/** {@link createSystemTimers} with default options: ref'd timers, safe delays. */
export const systemTimers: Timers = createSystemTimers();

/** Reads a monotonic time base in milliseconds (never steps; only differences mean anything). */
export type MonotonicNow = () => number;

/** The process's monotonic clock (`performance.now()`), unaffected by wall-clock steps. */
export const systemMonotonicNow: MonotonicNow = () => performance.now();

/**
 * The monotonic time base `timers` run on (their `now`), or {@link systemMonotonicNow} when they
 * have none: what a component that takes `timers` measures elapsed time with.
 */
export function monotonicNowOf(timers: Timers | undefined): MonotonicNow {
  const now = timers?.now;
  return now === undefined ? systemMonotonicNow : () => now.call(timers);
}
