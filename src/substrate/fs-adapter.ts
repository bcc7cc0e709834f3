/**
 * The slice of the node:fs promise API the substrate uses, over node:fs or any compatible
 * module (memfs). Keeping it narrow documents exactly which calls a custom fs must support.
 */
import * as nodeFs from "node:fs";

/** The FileHandle calls the substrate makes. */
export interface FileHandleLike {
  write(data: Uint8Array): Promise<unknown>;
  read(buffer: Uint8Array, offset: number, length: number, position: number): Promise<{ bytesRead: number }>;
  sync(): Promise<void>;
  stat(): Promise<StatLike>;
  close(): Promise<void>;
}

export interface StatLike {
  readonly mtimeMs: number;
  readonly ino: number | bigint;
  readonly size: number | bigint;
  isDirectory(): boolean;
  isFile(): boolean;
}

interface FsPromisesLike {
  readFile(path: string): Promise<Uint8Array>;
  writeFile(path: string, data: Uint8Array, opts: { flag: string; mode: number }): Promise<void>;
  open(path: string, flags: string, mode?: number): Promise<FileHandleLike>;
  rename(from: string, to: string): Promise<void>;
  unlink(path: string): Promise<void>;
  mkdir(path: string, opts: { recursive: boolean }): Promise<unknown>;
  stat(path: string): Promise<StatLike>;
  readdir(path: string): Promise<unknown[]>;
}

/** Narrow async file-system access used by every substrate module. */
export interface FsAdapter {
  /** The module as given, for isomorphic-git (which takes a node:fs-like client). */
  readonly raw: unknown;
  /** True when this is node:fs itself, so OS-level watching (chokidar) sees the same files. */
  readonly isNodeFs: boolean;
  /** File bytes, or null when the file does not exist. */
  readFileOrNull(path: string): Promise<Uint8Array | null>;
  readFile(path: string): Promise<Uint8Array>;
  /**
   * Creates `path` (EEXIST when it exists) holding `data`; with `sync`, flushed to disk before
   * resolving.
   */
  writeNewFile(path: string, data: Uint8Array, sync: boolean): Promise<void>;
  /** Opens `path` with `flags` ("wx" fails with EEXIST when the file exists). */
  open(path: string, flags: string): Promise<FileHandleLike>;
  rename(from: string, to: string): Promise<void>;
  /** Removes a file; a missing file is not an error. */
  unlinkQuiet(path: string): Promise<void>;
  mkdirp(path: string): Promise<void>;
  /** Stat, or null when the path does not exist. */
  statOrNull(path: string): Promise<StatLike | null>;
  /** Names in a folder, or [] when it does not exist. */
  readdirOrEmpty(path: string): Promise<string[]>;
  /**
   * Flushes a folder's entries (new names from create/rename) to disk. Not every file system
   * can open a folder (memfs, some platforms): there it is skipped, as fsync is best effort.
   */
  fsyncDir(path: string): Promise<void>;
  /**
   * `length` bytes of a file from byte `position` (fewer at the end of the file); for reading
   * one object out of a pack too big to load whole.
   */
  readRange(path: string, position: number, length: number): Promise<Uint8Array>;
}

/** The errno `code` of a node-style error, or undefined. */
export function errnoCode(error: unknown): string | undefined {
  if (typeof error === "object" && error !== null && "code" in error) {
    const code = (error as { code: unknown }).code;
    return typeof code === "string" ? code : undefined;
  }
  return undefined;
}

/**
 * Wraps a node:fs-compatible module (`fs.promises` must exist). Default: node:fs.
 * @throws TypeError when the module has no `promises` API.
 */
export function createFsAdapter(fsModule?: unknown): FsAdapter {
  const raw = fsModule ?? nodeFs;
  const promises = (raw as { promises?: unknown }).promises as FsPromisesLike | undefined;
  if (promises === undefined || typeof promises.readFile !== "function") {
    throw new TypeError("createRepoStore: `fs` must be a node:fs-compatible module with `promises`");
  }
  const p = promises;
  return {
    raw,
    isNodeFs: raw === nodeFs || raw === (nodeFs as { default?: unknown }).default,
    async readFileOrNull(path) {
      try {
        return await p.readFile(path);
      } catch (error) {
        const code = errnoCode(error);
        if (code === "ENOENT" || code === "ENOTDIR") return null;
        throw error;
      }
    },
    readFile: (path) => p.readFile(path),
    async writeNewFile(path, data, sync) {
      if (!sync) {
        await p.writeFile(path, data, { flag: "wx", mode: 0o644 });
        return;
      }
      const handle = await p.open(path, "wx", 0o644);
      try {
        await handle.write(data);
        await handle.sync();
      } finally {
        await handle.close();
      }
    },
    open: (path, flags) => p.open(path, flags, 0o644),
    rename: (from, to) => p.rename(from, to),
    async unlinkQuiet(path) {
      try {
        await p.unlink(path);
      } catch (error) {
        if (errnoCode(error) !== "ENOENT") throw error;
      }
    },
    async mkdirp(path) {
      await p.mkdir(path, { recursive: true });
    },
    async statOrNull(path) {
      try {
        return await p.stat(path);
      } catch (error) {
        const code = errnoCode(error);
        if (code === "ENOENT" || code === "ENOTDIR") return null;
        throw error;
      }
    },
    async readdirOrEmpty(path) {
      try {
        return (await p.readdir(path)).map(String);
      } catch (error) {
        const code = errnoCode(error);
        if (code === "ENOENT" || code === "ENOTDIR") return [];
        throw error;
      }
    },
    async readRange(path, position, length) {
      const handle = await p.open(path, "r");
      try {
        const buffer = Buffer.allocUnsafe(length);
        let filled = 0;
        while (filled < length) {
          const { bytesRead } = await handle.read(buffer, filled, length - filled, position + filled);
          if (bytesRead === 0) break;
          filled += bytesRead;
        }
        return buffer.subarray(0, filled);
      } finally {
        await handle.close();
      }
    },
    async fsyncDir(path) {
      let handle: FileHandleLike;
      try {
        handle = await p.open(path, "r");
      } catch {
        return;
      }
      try {
        await handle.sync();
      } catch {
        // EISDIR/EINVAL/EPERM: this fs cannot flush folders; durability of the names is then
        // up to the fs itself.
      } finally {
        await handle.close();
      }
    },
  };
}
