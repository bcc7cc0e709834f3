/**
 * A memfs whose calls take time on a fake monotonic clock, or hang, for the host lock's tests on
 * a loaded machine: each call (promise API, and the callback `mkdir`/`stat`/`utimes`/`rmdir` a
 * guard library may use) asks `delayOf` how long it takes. A call that takes time is queued with
 * its due time (the fake now plus its delay) and done, on the memfs's sync API, when
 * {@link SlowFs.drive} gets to it: the fake clock jumps to its due time first. Nothing waits on
 * real time; calls due at the same time are done in the order they were made.
 */
import { expect } from "vitest";
import { createMemFs, type MemFs } from "./memfs.js";

/** How long one call takes: ms of fake time (0: at once), "hang" (never, until let go), or a promise to wait for. */
export type CallDelay = number | "hang" | Promise<void>;

export interface SlowFs {
  /** The fs to hand the lock. */
  readonly fs: MemFs;
  /** The underlying memfs, untimed, for the test's own reads. */
  readonly inner: MemFs;
  /** The fake monotonic clock (ms); the test may move it too. */
  now: number;
  /** Decides each call's delay: `name` is the fs method, `path` its first argument. Default: all at once. */
  delayOf: (name: string, path: string) => CallDelay;
  /** Calls that hang, in the order they were made: `resume()` lets one go on. */
  readonly hung: { readonly name: string; readonly path: string; readonly resume: () => void }[];
  /** Does queued calls in due order, moving the clock, until `done()` holds (at most 10 s of real time). */
  drive(done: () => boolean): Promise<void>;
}

const PROMISE_CALLS = ["mkdir", "rmdir", "stat", "lstat", "utimes", "readFile", "writeFile", "rename", "unlink", "readdir"] as const;
const CALLBACK_CALLS = ["mkdir", "stat", "utimes", "rmdir"] as const;

/** A fresh {@link SlowFs}. */
export function createSlowFs(): SlowFs {
  const inner = createMemFs();
  const queue: { due: number; seq: number; go: () => void }[] = [];
  let seq = 0;
  const sync = inner as unknown as Record<string, (...args: unknown[]) => unknown>;

  const wait = (name: string, path: string): Promise<void> | null => {
    const delay = slow.delayOf(name, path);
    if (delay === 0) return null;
    if (delay === "hang") return new Promise<void>((resume) => slow.hung.push({ name, path, resume }));
    if (typeof delay !== "number") return delay;
    const due = slow.now + delay;
    return new Promise<void>((go) => queue.push({ due, seq: seq++, go }));
  };

  const promises = new Proxy(inner.promises, {
    get(target, prop) {
      if (typeof prop === "string" && (PROMISE_CALLS as readonly string[]).includes(prop)) {
        return async (path: string, ...rest: unknown[]) => {
          await wait(prop, String(path));
          return sync[`${prop}Sync`]!.call(inner, path, ...rest);
        };
      }
      const value = Reflect.get(target, prop) as unknown;
      return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });

  const fs = new Proxy(inner, {
    get(target, prop) {
      if (prop === "promises") return promises;
      if (typeof prop === "string" && (CALLBACK_CALLS as readonly string[]).includes(prop)) {
        return (path: string, ...rest: unknown[]) => {
          const callback = rest.pop() as (error: unknown, value?: unknown) => void;
          const run = (): void => {
            let value: unknown;
            try {
              value = sync[`${prop}Sync`]!.call(inner, path, ...rest);
            } catch (error) {
              callback(error);
              return;
            }
            callback(null, value);
          };
          const held = wait(prop, String(path));
          if (held === null) queueMicrotask(run);
          else void held.then(run);
        };
      }
      const value = Reflect.get(target, prop) as unknown;
      return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });

  const slow: SlowFs = {
    fs,
    inner,
    now: 0,
    delayOf: () => 0,
    hung: [],
    async drive(done) {
      const giveUpAt = Date.now() + 10_000;
      while (Date.now() < giveUpAt) {
        // A macrotask turn: every promise chain the last call let go has run and made its next calls.
        await new Promise((resolve) => setImmediate(resolve));
        if (done()) return;
        if (queue.length === 0) continue;
        queue.sort((a, b) => a.due - b.due || a.seq - b.seq);
        const next = queue.shift()!;
        slow.now = Math.max(slow.now, next.due);
        next.go();
      }
      expect(done()).toBe(true);
    },
  };
  return slow;
}
