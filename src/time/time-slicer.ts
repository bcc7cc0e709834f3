/**
 * Cooperative time slicing for long synchronous work on the event loop (catch-up planning,
 * group commits of many runs): the worker calls `pause()` between small units of work; while
 * the current slice is younger than `sliceMs` it returns at once (a resolved promise), and once
 * the slice is used up it waits for a macrotask (`setImmediate`), so I/O callbacks, timers and
 * heartbeats get their turn. No event-loop turn of the worker then lasts much longer than
 * `sliceMs` plus one unit of work.
 */
import { systemMonotonicNow, type MonotonicNow } from "./clock.js";

/** Default slice length (ms). */
export const DEFAULT_SLICE_MS = 10;

export interface TimeSlicer {
  /** Resolves at once while the slice lasts, else after the event loop had a turn. */
  pause(): Promise<void>;
}

/**
 * @param sliceMs longest run between two yields, in ms (default 10)
 * @param now monotonic clock (default `performance.now()`)
 */
export function createTimeSlicer(sliceMs: number = DEFAULT_SLICE_MS, now: MonotonicNow = systemMonotonicNow): TimeSlicer {
  let sliceStart = now();
  const resolved = Promise.resolve();
  return {
    pause() {
      if (now() - sliceStart < sliceMs) return resolved;
      return new Promise<void>((resolve) => {
        setImmediate(() => {
          sliceStart = now();
          resolve();
        });
      });
    },
  };
}
