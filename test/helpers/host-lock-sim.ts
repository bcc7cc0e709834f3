/**
 * Two or more simulated hosts on one memfs, for the host lock's interleavings: a memfs whose
 * calls can be held at chosen points (the caller's hooks decide which and for how long), and the
 * probes the lock tests read (the holder file's token, the commit fence's state).
 */
import { expect } from "vitest";
import type { WorkflowHostError } from "../../src/errors.js";
import type { HostLock, HostLockOptions } from "../../src/host/host-lock.js";
import { createMemFs, type MemFs } from "./memfs.js";

/** Where a hooked call waits: each hook's promise holds the call until it settles. */
export interface FsHooks {
  /** Before a promise `writeFile(path, …)` is made. */
  readonly beforeWrite?: (path: string) => Promise<void> | void;
  /** After a promise `readFile(path, …)` has read, before its result is returned. */
  readonly afterRead?: (path: string) => Promise<void> | void;
  /** Before a promise `rename(from, to)` is made. */
  readonly beforeRename?: (from: string, to: string) => Promise<void> | void;
  /** After a promise `mkdir(path)` (the guard's) was made or failed, before it settles (at once when it returns nothing). */
  readonly afterMkdir?: (path: string, error: NodeJS.ErrnoException | null) => Promise<void> | void;
}

/** A fresh memfs whose promise writes, reads, renames and mkdirs go through `hooks`. */
export function hookedMemFs(hooks: FsHooks): MemFs {
  const inner = createMemFs();
  const bound = (target: object, prop: string | symbol): unknown => {
    const value = Reflect.get(target, prop) as unknown;
    return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
  };
  const promises = new Proxy(inner.promises, {
    get(target, prop) {
      if (prop === "writeFile" && hooks.beforeWrite !== undefined) {
        return async (path: string, ...rest: unknown[]) => {
          await hooks.beforeWrite?.(path);
          return (target.writeFile as (...a: unknown[]) => Promise<void>)(path, ...rest);
        };
      }
      if (prop === "readFile" && hooks.afterRead !== undefined) {
        return async (path: string, ...rest: unknown[]) => {
          const read = await (target.readFile as (...a: unknown[]) => Promise<unknown>)(path, ...rest);
          await hooks.afterRead?.(path);
          return read;
        };
      }
      if (prop === "mkdir" && hooks.afterMkdir !== undefined) {
        return async (path: string, ...rest: unknown[]) => {
          let failure: NodeJS.ErrnoException | null = null;
          let made: unknown;
          try {
            made = await (target.mkdir as (...a: unknown[]) => Promise<unknown>)(path, ...rest);
          } catch (error) {
            failure = error as NodeJS.ErrnoException;
          }
          await hooks.afterMkdir?.(path, failure);
          if (failure !== null) throw failure;
          return made;
        };
      }
      if (prop === "rename" && hooks.beforeRename !== undefined) {
        return async (from: string, to: string) => {
          await hooks.beforeRename?.(from, to);
          await target.rename(from, to);
        };
      }
      return bound(target, prop);
    },
  });
  return new Proxy(inner, {
    get(target, prop) {
      if (prop === "promises") return promises;
      return bound(target, prop);
    },
  });
}

/** Waits (on real time: the guard retries on node's timers by default) until `done()` holds, at most 10 s. */
export async function until(done: () => boolean): Promise<void> {
  await expect.poll(done, { timeout: 10_000, interval: 5 }).toBe(true);
}

/** The token in `<dataDir>/host.lock.json`. */
export function holderToken(fs: MemFs, dataDir: string): unknown {
  return (JSON.parse(String(fs.readFileSync(`${dataDir}/host.lock.json`, "utf8"))) as { token?: unknown }).token;
}

/** "held" when the lock's commit fence passes, else the `state` of the `host_locked` it throws. */
export function fenceState(lock: HostLock): string {
  try {
    lock.assertHeld();
    return "held";
  } catch (error) {
    return String((error as WorkflowHostError).data?.["state"]);
  }
}

/** Options for a simulated host `pid` on `fs` (host "box-1", a fixed wall clock, staleMs 10 s). */
export function simulatedHost(fs: MemFs, dataDir: string, pid: number, nowMs: number, extra: Partial<HostLockOptions>): HostLockOptions {
  return { dataDir, fs, pid, hostname: "box-1", clock: () => new Date(nowMs), staleMs: 10_000, ...extra };
}

/** A call held by a hook: what it is (e.g. a path) and how to let it go on. */
export interface HeldCall {
  readonly what: string;
  readonly resume: () => void;
}

/** A promise for a hook that holds its call in `waiting` until {@link releaseHeld} lets it go. */
export function holdCall(waiting: HeldCall[], what: string): Promise<void> {
  return new Promise<void>((resume) => waiting.push({ what, resume }));
}

/** Lets every held call that `which` picks go on, in the order they were held. */
export function releaseHeld(waiting: HeldCall[], which: (what: string) => boolean): void {
  for (const held of waiting.filter((w) => which(w.what))) {
    waiting.splice(waiting.indexOf(held), 1);
    held.resume();
  }
}
