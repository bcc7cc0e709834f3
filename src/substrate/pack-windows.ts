/**
 * The pack bytes a reader keeps at hand besides the shared caches: the two windows it used last,
 * and the reads in flight.
 *
 * - A walk reads a million objects from a few windows (a run's blobs from one, its folders from
 *   another); building and looking up the shared cache's key for every object cost more than
 *   decoding it, so the last two windows are kept here too. A window's bytes never change (a
 *   pack is immutable under its name), so one kept after the cache dropped it is still right.
 * - A recovery reads several run logs at once, and each that missed the same window started its
 *   own read (eight 1 MiB reads of every window, each three round trips through the thread pool,
 *   which on a busy machine cost more than decoding what they read): a read in flight is shared.
 */
import type { FsAdapter } from "./fs-adapter.js";
import type { ScopedLruCache } from "./lru-cache.js";

export interface WindowReads {
  /** `load()`, unless a load under `key` is in flight: then that one's result. */
  loadOnce(key: string, load: () => Promise<Buffer>): Promise<Buffer>;
  /** The window of pack `name` at `start` when in memory, else undefined. */
  cachedWindow(name: string, start: number): Buffer | undefined;
  /** Reads the window [start, end) of the pack file at `path` (once, however many ask) and caches it. */
  loadWindow(name: string, path: string, start: number, end: number): Promise<Buffer>;
}

/**
 * @param gone the error for a window read short (the pack was replaced or truncated under it)
 */
export function createWindowReads(fs: FsAdapter, packWindows: ScopedLruCache<Buffer>, repoKey: string, gone: (name: string) => Error): WindowReads {
  const recent: { name: string; start: number; bytes: Buffer }[] = [];
  const loading = new Map<string, Promise<Buffer>>();

  function remember(name: string, start: number, bytes: Buffer): void {
    recent.unshift({ name, start, bytes });
    if (recent.length > 2) recent.pop();
  }

  function loadOnce(key: string, load: () => Promise<Buffer>): Promise<Buffer> {
    let pending = loading.get(key);
    if (pending === undefined) {
      pending = load();
      const settled = (): void => {
        loading.delete(key);
      };
      pending.then(settled, settled);
      loading.set(key, pending);
    }
    return pending;
  }

  return {
    loadOnce,
    cachedWindow(name, start) {
      for (let i = 0; i < recent.length; i++) {
        const w = recent[i] as (typeof recent)[number];
        if (w.start === start && w.name === name) {
          if (i > 0) recent.reverse();
          return w.bytes;
        }
      }
      const bytes = packWindows.get(repoKey, `${name}@${start}`);
      if (bytes !== undefined) remember(name, start, bytes);
      return bytes;
    },
    loadWindow(name, path, start, end) {
      const key = `${name}@${start}`;
      return loadOnce(key, async () => {
        const read = await fs.readRange(path, start, end - start);
        if (read.byteLength !== end - start) throw gone(name);
        const window = Buffer.from(read.buffer, read.byteOffset, read.byteLength);
        packWindows.set(repoKey, key, window, window.byteLength);
        remember(name, start, window);
        return window;
      });
    },
  };
}
