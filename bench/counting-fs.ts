/**
 * node:fs with every flush counted: `fsync`/`fdatasync` (callback and sync forms) and
 * `FileHandle.sync()/datasync()` of `fs.promises`, each attributed to what was flushed (a pack
 * or index temp file, a ref lock, a folder, anything else). Given to a repo store as its `fs`,
 * it shows how many flushes a durable commit makes without strace. (Not node:fs itself, so the
 * store does not start chokidar on it: use with `watch: false` or polling.)
 */
import * as nodeFs from "node:fs";

/** What a flush was of. */
export type FlushKind = "pack" | "idx" | "ref" | "folder" | "other";

export interface FlushCounts {
  total: number;
  byKind: Record<FlushKind, number>;
}

function kindOf(path: string, isDir: boolean): FlushKind {
  if (isDir) return "folder";
  const name = path.slice(path.lastIndexOf("/") + 1);
  if (name.startsWith("tmp_pack_") || name.endsWith(".pack")) return "pack";
  if (name.startsWith("tmp_idx_") || name.endsWith(".idx")) return "idx";
  if (name.endsWith(".lock")) return "ref";
  return "other";
}

/** A node:fs look-alike counting flushes into the returned `counts`. */
export function createCountingFs(): { fs: typeof nodeFs; counts: FlushCounts } {
  const counts: FlushCounts = { total: 0, byKind: { pack: 0, idx: 0, ref: 0, folder: 0, other: 0 } };
  const pathOfFd = new Map<number, string>();
  const note = (path: string | undefined): void => {
    let isDir = false;
    try {
      isDir = path !== undefined && nodeFs.statSync(path).isDirectory();
    } catch {
      // Renamed away already: it was a file.
    }
    counts.total += 1;
    counts.byKind[path === undefined ? "other" : kindOf(path, isDir)] += 1;
  };
  const promises = new Proxy(nodeFs.promises, {
    get(target, prop, receiver) {
      if (prop !== "open") return Reflect.get(target, prop, receiver);
      return async (path: string, flags?: string, mode?: number) => {
        const handle = await target.open(path, flags, mode);
        return new Proxy(handle, {
          get(h, p) {
            const value = Reflect.get(h, p, h) as unknown;
            if (p === "sync" || p === "datasync") {
              return () => {
                note(path);
                return (value as () => Promise<void>).call(h);
              };
            }
            return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(h) : value;
          },
        });
      };
    },
  });
  const fs = new Proxy(nodeFs, {
    get(target, prop, receiver) {
      if (prop === "promises") return promises;
      if (prop === "default") return undefined;
      if (prop === "openSync") {
        return (path: string, flags?: string, mode?: number) => {
          const fd = target.openSync(path, flags ?? "r", mode);
          pathOfFd.set(fd, path);
          return fd;
        };
      }
      if (prop === "closeSync") {
        return (fd: number) => {
          pathOfFd.delete(fd);
          target.closeSync(fd);
        };
      }
      if (prop === "fsync" || prop === "fdatasync" || prop === "fsyncSync" || prop === "fdatasyncSync") {
        const original = Reflect.get(target, prop, receiver) as (fd: number, ...rest: unknown[]) => unknown;
        return (fd: number, ...rest: unknown[]) => {
          note(pathOfFd.get(fd));
          return rest.length > 0 ? original.call(target, fd, rest[0]) : original.call(target, fd);
        };
      }
      return Reflect.get(target, prop, receiver);
    },
  }) as typeof nodeFs;
  return { fs, counts };
}
