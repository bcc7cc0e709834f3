/**
 * Wakes the subscribers of one repository when its refs may have moved.
 *
 * Three sources, from fastest to most reliable:
 *  - `notify()` after a commit by this process (immediate fan-out);
 *  - OS file events, a hint that git or another process renamed a ref into place (raw events,
 *    coalesced per event-loop turn; events can be coalesced or dropped by the OS too, so never
 *    trusted alone): chokidar on `refs/` and `packed-refs`, except `refs/heads` itself, which
 *    one plain OS watch covers (see {@link BUSY_FOLDER});
 *  - a periodic wake every `pollMs`: the safety net that bounds how late a commit is seen.
 * Listeners only learn "look again"; each one re-resolves its ref and compares with what it has
 * seen, so duplicate or spurious wakes cost one small file read.
 *
 * States: running → closed (close(): timer cleared, chokidar closed, listeners dropped).
 */
import { type FSWatcher as OsWatch, watch as osWatch } from "node:fs";
import { lstat, readdir } from "node:fs/promises";
import { createSystemTimers, type TimerHandle } from "../time/clock.js";
import type { FSWatcher } from "chokidar";
import type { TimerApi } from "./types.js";

/** Delay (ms, real time) of the second wake after an OS hint; see `hint` in createRefWatcher. */
export const FOLLOW_UP_MS = 100;

/**
 * Delay (ms, real time) of a last wake after an OS hint: a ref written into a new folder after
 * chokidar listed the folder and before it watched it is seen by no event, and by the wake
 * {@link FOLLOW_UP_MS} later only when the writer was that quick (on a loaded machine a writer
 * stalls longer). At most one per this period, so ~1 wake a second while refs move.
 */
export const LATE_FOLLOW_UP_MS = 1_000;

/**
 * The folder of the main line (`refs/heads/main`), where every commit of the host moves a ref:
 * a lock file made, written and renamed over the ref. chokidar re-lists a watched folder and
 * lstats its entries after each OS event in it, and re-arms its watch of a file whose inode
 * changed: two listings, two lstats, a stat and a new watch per ref move, ~1 ms of CPU
 * (bench/design-notes.md, "Lateness at 1,000 fires/s"). This folder alone is watched by one
 * plain OS watch, whose events are only hints; its subfolders (`refs/heads/team/x`) are handed
 * to chokidar as they appear, and the folder is watched again when `refs/` says it was replaced.
 */
export const BUSY_FOLDER = "refs/heads";

export interface RefWatcher {
  /** Adds a wake listener; returns the function that removes it. */
  listen(listener: () => void): () => void;
  /** Wakes every listener now. */
  notify(): void;
  /** Stops polling and OS watching; later notifications do nothing. */
  close(): Promise<void>;
}

export interface RefWatcherOptions {
  readonly gitdir: string;
  /** Poll period (ms), or null for no polling. */
  readonly pollMs: number | null;
  /** Use OS file watching (only meaningful when the store works on node:fs). */
  readonly useChokidar: boolean;
  readonly timers: TimerApi;
}

// The follow-up wake answers OS events, which arrive in real time: it runs on node's timers
// (through src/time), not on the injected ones the polling uses.
const realTimers = createSystemTimers();

export function createRefWatcher(opts: RefWatcherOptions): RefWatcher {
  const listeners = new Set<() => void>();
  let closed = false;
  let timer: unknown;
  let osWatcher: FSWatcher | undefined;
  let busy: BusyFolderWatch | undefined;
  const refsDir = `${opts.gitdir}/refs`;
  const busyDir = `${opts.gitdir}/${BUSY_FOLDER}`;

  const notify = (): void => {
    if (closed) return;
    for (const listener of [...listeners]) listener();
  };

  const arm = (): void => {
    if (closed || opts.pollMs === null) return;
    timer = opts.timers.setTimeout(() => {
      timer = undefined;
      notify();
      // The safety net of the busy folder's subfolders too: any the plain watch missed.
      busy?.resync();
      arm();
    }, opts.pollMs);
  };
  arm();

  // OS hints arriving in one turn of the event loop (a ref move is a create, a write and a
  // rename) wake the listeners once, after that turn, once more {@link FOLLOW_UP_MS} later and
  // a last time {@link LATE_FOLLOW_UP_MS} later: a ref written into a folder made a moment
  // before can land after chokidar listed the new folder and before it watches it, and then no
  // event at all names it (of 16 such refs, each 0–3 ms after its folder, one was missed in most
  // runs of the test; none with the first follow-up on a quiet machine; at load 14–24 one to
  // three were still missed per run, before and after the busy folder's own watch).
  let hinted = false;
  let followUp: TimerHandle | undefined;
  let lateFollowUp: TimerHandle | undefined;
  const hint = (): void => {
    if (hinted || closed) return;
    hinted = true;
    setImmediate(() => {
      hinted = false;
      notify();
    });
    if (followUp === undefined) {
      followUp = realTimers.setTimeout(() => {
        followUp = undefined;
        notify();
      }, FOLLOW_UP_MS);
    }
    if (lateFollowUp === undefined) armLateFollowUp();
    else hintedSinceLate = true;
  };
  // Every hint gets a wake 1–2 periods after it: hints while one waits arm the next when it fires.
  let hintedSinceLate = false;
  const armLateFollowUp = (): void => {
    lateFollowUp = realTimers.setTimeout(() => {
      lateFollowUp = undefined;
      notify();
      if (hintedSinceLate && !closed) {
        hintedSinceLate = false;
        armLateFollowUp();
      }
    }, LATE_FOLLOW_UP_MS);
  };

  // chokidar is loaded when a watcher starts, not with the store: a command that only reads
  // (`workflow-host timers`) never watches, and loading it was part of every start.
  const watching: Promise<void> | undefined = !opts.useChokidar
    ? undefined
    : import("chokidar").then(
        ({ watch }) => {
          if (closed) return;
          const chokidar = watch([`${opts.gitdir}/refs`, `${opts.gitdir}/packed-refs`], {
            // Initial adds too: a folder handed over by the busy folder's watch (`add`) is listed
            // as an initial path, and a ref that landed in it before chokidar watched it is
            // reported only by that listing. At start they are one more hint.
            ignoreInitial: false,
            persistent: true,
            // Lock files come and go around every ref move; the rename that follows is the signal.
            // The busy folder is watched by the plain watch (see BUSY_FOLDER).
            ignored: (path: string) => path.endsWith(".lock") || path === busyDir,
          });
          osWatcher = chokidar;
          busy = watchBusyFolder(busyDir, chokidar, hint);
          // chokidar's raw events (each OS event as it arrives): its add/change events come after a
          // stat or a re-read of the folder, throttled per path, and a ref replaced twice within that
          // window was seen only by the next poll. Measured on the signal benchmark, cross-process
          // round trip p50 / p99: 45 ms / 991 ms on add/change alone, 6.4 ms / 17 ms with raw.
          chokidar.on("raw", (_event: string, path: string, details: unknown) => {
            if (String(path).endsWith(".lock")) return;
            hint();
            // An event in refs/ naming heads: the busy folder may have been removed or replaced.
            if (path === "heads" && (details as { watchedPath?: unknown } | undefined)?.watchedPath === refsDir) busy?.rearm();
          });
          // And its add/change events too: a ref written into a folder made a moment before (after
          // `git pack-refs` removed it) lands before chokidar watches the new folder, so no raw event
          // names it; chokidar's first listing of the folder reports it as added.
          chokidar.on("all", hint);
          // A failing OS watcher only loses the hint; polling still finds every commit.
          chokidar.on("error", () => undefined);
          // Whatever moved while chokidar loaded is looked at now.
          hint();
        },
        // Without chokidar only the hint is lost; polling still finds every commit.
        () => undefined,
      );

  return {
    listen(listener) {
      listeners.add(listener);
      return () => {
        listeners.delete(listener);
      };
    },
    notify,
    async close() {
      if (closed) return;
      closed = true;
      listeners.clear();
      if (timer !== undefined) opts.timers.clearTimeout(timer);
      timer = undefined;
      if (followUp !== undefined) realTimers.clearTimeout(followUp);
      followUp = undefined;
      if (lateFollowUp !== undefined) realTimers.clearTimeout(lateFollowUp);
      lateFollowUp = undefined;
      await watching;
      busy?.close();
      await osWatcher?.close();
    },
  };
}

interface BusyFolderWatch {
  /** Watches the folder again (it was removed or replaced) and re-lists it. */
  rearm(): void;
  /** Re-lists the folder: subfolders not yet handed to chokidar are, gone ones dropped. */
  resync(): void;
  close(): void;
}

/**
 * The plain OS watch of {@link BUSY_FOLDER}: every event in it is a hint; a name not known as a
 * ref file is looked at once, and a subfolder is handed to `chokidar` (which watches it and what
 * it holds, as it watches the rest of `refs/`). A ref file's name is never looked at again, so a
 * ref moved by the host costs no call at all. (A ref file replaced by a folder of the same name
 * is found by the next {@link BusyFolderWatch.resync}.) Errors only lose hints: polling remains.
 */
function watchBusyFolder(dir: string, chokidar: FSWatcher, hint: () => void): BusyFolderWatch {
  let watcher: OsWatch | undefined;
  let closed = false;
  /** Names in the folder known to be ref files. */
  const files = new Set<string>();
  /** Subfolders handed to chokidar, by name. */
  const folders = new Set<string>();

  const lookAt = (name: string): void => {
    lstat(`${dir}/${name}`).then(
      (stat) => {
        if (closed) return;
        if (stat.isDirectory()) {
          // Handed over again when made again: chokidar's watch of a removed folder is gone.
          if (folders.has(name)) chokidar.unwatch(`${dir}/${name}`);
          folders.add(name);
          files.delete(name);
          chokidar.add(`${dir}/${name}`);
        } else {
          files.add(name);
        }
      },
      () => {
        files.delete(name);
        if (folders.delete(name)) chokidar.unwatch(`${dir}/${name}`);
      },
    );
  };

  const resync = (): void => {
    readdir(dir, { withFileTypes: true }).then(
      (entries) => {
        if (closed) return;
        const present = new Set<string>();
        for (const entry of entries) {
          if (entry.name.endsWith(".lock")) continue;
          present.add(entry.name);
          if (entry.isDirectory() ? !folders.has(entry.name) : !files.has(entry.name)) lookAt(entry.name);
        }
        for (const name of files) if (!present.has(name)) files.delete(name);
        for (const name of folders) {
          if (present.has(name)) continue;
          folders.delete(name);
          chokidar.unwatch(`${dir}/${name}`);
        }
      },
      () => undefined,
    );
  };

  const rearm = (): void => {
    if (closed) return;
    watcher?.close();
    watcher = undefined;
    try {
      watcher = osWatch(dir, { persistent: true }, (_event, name) => {
        if (name === null || name.endsWith(".lock")) return;
        hint();
        if (!files.has(name)) lookAt(name);
      });
      watcher.on("error", () => {
        watcher?.close();
        watcher = undefined;
      });
    } catch {
      // No folder (yet): chokidar's watch of refs/ calls rearm when it is made.
    }
    resync();
  };

  rearm();
  return {
    rearm,
    resync,
    close() {
      closed = true;
      watcher?.close();
      watcher = undefined;
    },
  };
}
