/**
 * Timer stand-ins for unit tests that must not wait on real time.
 */

export interface ManualTimers {
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
  /** Number of armed timers. */
  readonly pending: number;
  /** Fires every timer armed so far (not ones armed by the callbacks themselves). */
  fireAll(): void;
}

/** Timers that fire only when the test says so. */
export function createManualTimers(): ManualTimers {
  let next = 0;
  const armed = new Map<number, () => void>();
  return {
    setTimeout(callback) {
      const id = ++next;
      armed.set(id, callback);
      return id;
    },
    clearTimeout(handle) {
      armed.delete(handle as number);
    },
    get pending() {
      return armed.size;
    },
    fireAll() {
      const due = [...armed.entries()];
      armed.clear();
      for (const [, callback] of due) callback();
    },
  };
}

/** Timers that fire on the next microtask whatever the delay: back-off without waiting. */
export const instantTimers = {
  setTimeout(callback: () => void): unknown {
    queueMicrotask(callback);
    return 0;
  },
  clearTimeout(): void {},
};
