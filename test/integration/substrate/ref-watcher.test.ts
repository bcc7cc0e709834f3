/**
 * The ref watcher on real disk with chokidar: every ref another process moves into place wakes
 * the listeners, also a ref in a folder made a moment before (as after `git pack-refs` removed
 * the emptied folder), without any poll.
 */
import { execFile } from "node:child_process";
import fs, { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import fsPromises from "node:fs/promises";
import { syncBuiltinESMExports } from "node:module";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { createBlockingFsAdapter } from "../../../src/substrate/fs-adapter.js";
import { createRefStore } from "../../../src/substrate/ref-store.js";
import { createRefWatcher, type RefWatcher } from "../../../src/substrate/ref-watcher.js";
import { useTempDirs } from "../../helpers/temp-dir.js";

const tempDir = useTempDirs("wh-ref-watcher-");
const script = fileURLToPath(new URL("./fixtures/ref-in-new-folder.mjs", import.meta.url));
const run = promisify(execFile);
/** A process other than this one moves `<gitdir>/<ref>` to `oid` by git's lock-and-rename. */
const foreignMove = (gitdir: string, ref: string, oid: string) =>
  run(process.execPath, [
    "-e",
    `const fs = require("node:fs"); const p = process.argv[1]; fs.mkdirSync(require("node:path").dirname(p), { recursive: true }); fs.writeFileSync(p + ".lock", process.argv[2] + "\\n", { flag: "wx" }); fs.renameSync(p + ".lock", p);`,
    join(gitdir, ref),
    oid,
  ]);

/**
 * Resolves once `ref` holds `oid` as seen from a wake of `watcher`. No deadline of its own: a
 * wake that never comes fails the test by its timeout, and a late one (a loaded machine delays
 * the follow-up wakes) is still a wake.
 */
function seenOnWake(watcher: RefWatcher, gitdir: string, ref: string, oid: string): Promise<true> {
  return new Promise<true>((resolve) => {
    const unlisten = watcher.listen(() => {
      let text = "";
      try {
        text = readFileSync(join(gitdir, ref), "latin1");
      } catch {
        return;
      }
      if (text !== `${oid}\n`) return;
      unlisten();
      resolve(true);
    });
  });
}

/**
 * Resolves at the watcher's first wake: the one it makes once its OS watches are set up
 * ("whatever moved while chokidar loaded is looked at now"), in place of a fixed wait.
 */
function watching(watcher: RefWatcher): Promise<void> {
  return new Promise<void>((resolve) => {
    const unlisten = watcher.listen(() => {
      unlisten();
      resolve();
    });
  });
}

const oidOf = (n: number): string => n.toString(16).padStart(40, "0");
const settle = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

const timers = { setTimeout: (callback: () => void, ms: number) => setTimeout(callback, ms), clearTimeout: (handle: unknown) => clearTimeout(handle as NodeJS.Timeout) };

describe("ref watcher", () => {
  it("wakes its listeners for a ref written into a folder made a moment before, by another process", async () => {
    const gitdir = join(await tempDir(), "repo.git");
    mkdirSync(join(gitdir, "refs", "heads"), { recursive: true });
    const watcher = createRefWatcher({ gitdir, pollMs: null, useChokidar: true, timers });
    const ready = watching(watcher);
    const waiting = new Map<string, () => void>();
    // A listener does what a subscriber does: looks at the refs again.
    watcher.listen(() => {
      for (const [folder, seen] of waiting) if (existsSync(join(gitdir, "refs", "heads", folder, "x"))) seen();
    });
    await ready;
    const seenFolders: string[] = [];
    try {
      for (let round = 0; round < 16; round++) {
        const folder = `n${round}`;
        const seen = new Promise<void>((resolve) => waiting.set(folder, resolve));
        await run(process.execPath, [script, gitdir, folder, String(round % 4)]);
        await seen;
        seenFolders.push(folder);
        waiting.delete(folder);
      }
    } finally {
      await watcher.close();
    }
    expect(seenFolders).toHaveLength(16);
  }, 60_000);

  it("moving refs/heads/main costs chokidar no re-read of refs/heads (the folder every fire commit moves a ref in)", async () => {
    const gitdir = join(await tempDir(), "repo.git");
    mkdirSync(join(gitdir, "refs", "heads"), { recursive: true });
    const heads = join(gitdir, "refs", "heads");
    // chokidar (and readdirp) list folders through node:fs/promises: each listing of refs/heads is counted.
    const listings: string[] = [];
    const readdir = fsPromises.readdir;
    const lstat = fsPromises.lstat;
    fsPromises.readdir = ((path: string, ...rest: unknown[]) => {
      if (String(path).replace(/\/+$/, "") === heads) listings.push("readdir");
      return (readdir as (...a: unknown[]) => unknown)(path, ...rest);
    }) as typeof fsPromises.readdir;
    // Settles once the watcher's look at the new name `main` has settled (its result handled).
    let mainLooked: () => void = () => undefined;
    const mainLookedAt = new Promise<void>((resolve) => (mainLooked = resolve));
    fsPromises.lstat = ((path: string, ...rest: unknown[]) => {
      if (String(path).startsWith(`${heads}/`)) listings.push(`lstat ${String(path).slice(heads.length + 1)}`);
      const result = (lstat as (...a: unknown[]) => Promise<unknown>)(path, ...rest);
      if (String(path) === `${heads}/main`) result.then(mainLooked, mainLooked);
      return result;
    }) as typeof fsPromises.lstat;
    syncBuiltinESMExports();
    const watcher = createRefWatcher({ gitdir, pollMs: null, useChokidar: true, timers });
    const ready = watching(watcher);
    try {
      const refs = createRefStore({ fs: createBlockingFsAdapter(), gitdir, durable: false, staleLockMs: 10_000, lockTimeoutMs: 10_000, sleep: settle, clock: () => new Date() });
      await ready;
      // The first move makes refs/heads/main: a new name in the folder is looked at once.
      let previous: string | null = oidOf(1);
      expect(await refs.compareAndSwap("refs/heads/main", null, previous, async () => undefined)).toEqual({ ok: true });
      await mainLookedAt;
      listings.length = 0;
      for (let move = 2; move <= 21; move++) {
        const next = oidOf(move);
        expect(await refs.compareAndSwap("refs/heads/main", previous, next, async () => undefined)).toEqual({ ok: true });
        previous = next;
        await settle(5);
      }
      // …and a move by another process is still seen, without any poll. Its OS event comes after
      // those of the 20 moves, so once it is seen they have all been handled.
      const seen = seenOnWake(watcher, gitdir, "refs/heads/main", oidOf(99));
      await foreignMove(gitdir, "refs/heads/main", oidOf(99));
      expect(await seen).toBe(true);
      await new Promise((resolve) => setImmediate(resolve));
      expect(listings).toEqual([]);
    } finally {
      fsPromises.readdir = readdir;
      fsPromises.lstat = lstat;
      syncBuiltinESMExports();
      await watcher.close();
    }
  }, 30_000);

  it("wakes for a ref moved in a folder under refs/heads that was there when watching began", async () => {
    const gitdir = join(await tempDir(), "repo.git");
    mkdirSync(join(gitdir, "refs", "heads", "team", "deep"), { recursive: true });
    const watcher = createRefWatcher({ gitdir, pollMs: null, useChokidar: true, timers });
    const ready = watching(watcher);
    try {
      await ready;
      for (const [round, ref] of ["refs/heads/team/x", "refs/heads/team/deep/y", "refs/heads/team/x"].entries()) {
        const seen = seenOnWake(watcher, gitdir, ref, oidOf(round + 1));
        await foreignMove(gitdir, ref, oidOf(round + 1));
        expect(await seen).toBe(true);
        // Past the follow-up wake of the last hint, so only a hint of this very move can count.
        await settle(250);
      }
    } finally {
      await watcher.close();
    }
  }, 30_000);

  it("wakes for refs moved after refs/heads itself was removed and made again", async () => {
    const gitdir = join(await tempDir(), "repo.git");
    mkdirSync(join(gitdir, "refs", "heads"), { recursive: true });
    const watches = countOsWatches();
    const watcher = createRefWatcher({ gitdir, pollMs: null, useChokidar: true, timers });
    try {
      // chokidar watches refs/ (where the removal shows), and then the new folder is watched again.
      await watches.reached(join(gitdir, "refs"), 1);
      rmSync(join(gitdir, "refs", "heads"), { recursive: true });
      mkdirSync(join(gitdir, "refs", "heads"));
      await watches.reached(join(gitdir, "refs", "heads"), 2);
      for (const [round, ref] of ["refs/heads/main", "refs/heads/main", "refs/heads/n/z"].entries()) {
        const seen = seenOnWake(watcher, gitdir, ref, oidOf(round + 1));
        await foreignMove(gitdir, ref, oidOf(round + 1));
        expect(await seen).toBe(true);
        await settle(250);
      }
    } finally {
      watches.restore();
      await watcher.close();
    }
  }, 30_000);
});

/**
 * Counts the OS watches made on each path (node:fs `watch`, which chokidar and the busy folder's
 * watch both use), so a test waits for a watch to exist instead of for a fixed time.
 */
function countOsWatches(): { reached(path: string, count: number): Promise<void>; restore(): void } {
  const counts = new Map<string, number>();
  const waiters = new Set<() => void>();
  const original = fs.watch;
  fs.watch = ((path: string, ...rest: unknown[]) => {
    const made = (original as (...a: unknown[]) => unknown)(path, ...rest);
    const key = String(path).replace(/\/+$/, "");
    counts.set(key, (counts.get(key) ?? 0) + 1);
    for (const wake of [...waiters]) wake();
    return made;
  }) as typeof fs.watch;
  syncBuiltinESMExports();
  return {
    reached(path, count) {
      return new Promise<void>((resolve) => {
        const check = (): void => {
          if ((counts.get(path) ?? 0) < count) return;
          waiters.delete(check);
          resolve();
        };
        waiters.add(check);
        check();
      });
    },
    restore() {
      fs.watch = original;
      syncBuiltinESMExports();
    },
  };
}
