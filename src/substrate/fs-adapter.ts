/**
 * The slice of the node:fs promise API the substrate uses, over node:fs or any compatible
 * module (memfs). Keeping it narrow documents exactly which calls a custom fs must support.
 *
 * Two flavours behind one interface: {@link createFsAdapter} (the promise API: every call is a
 * round trip through libuv's thread pool) and {@link createBlockingFsAdapter} (the same calls
 * made synchronously, for the few tiny files on a commit's critical path: refs, ref locks, the
 * renames that publish a pack). Measured here on ext4, a ref read costs ~0.2–0.4 ms through the
 * thread pool and ~0.015 ms synchronously, a rename ~0.11 ms against ~0.02 ms; a commit makes
 * about ten such calls one after another. Flushes (fsync) stay asynchronous in both: waiting for
 * the disk must not stop the event loop.
 */
import { type MonotonicNow, systemMonotonicNow } from "../time/clock.js";
import * as nodeFs from "node:fs";
import { dirname } from "node:path";
import { WorkflowHostError } from "../errors.js";

/** What {@link FsAdapter.readBoundedOrNull} found. */
export type BoundedRead = { readonly bytes: Uint8Array } | { readonly refused: StatLike };

/** Errors of an open for reading that mean "not a file": a folder (EISDIR), a socket (ENXIO), a device without a driver. */
const UNOPENABLE = new Set(["EISDIR", "ENXIO", "ENODEV", "EOPNOTSUPP"]);

/** Opens for reading without waiting for a FIFO's writer (O_NONBLOCK does nothing to a regular file's reads). */
const READ_NONBLOCK = nodeFs.constants.O_RDONLY | (nodeFs.constants.O_NONBLOCK ?? 0);

/** Refuses (ELOOP) to open a symbolic link at the last part of a path; 0 where the platform has none. */
const O_NOFOLLOW = nodeFs.constants.O_NOFOLLOW ?? 0;

/** The open flags the substrate uses, as numbers, so O_NOFOLLOW can be added. */
const OPEN_FLAGS: Readonly<Record<string, number>> = {
  r: nodeFs.constants.O_RDONLY,
  "r+": nodeFs.constants.O_RDWR,
  w: nodeFs.constants.O_WRONLY | nodeFs.constants.O_CREAT | nodeFs.constants.O_TRUNC,
  wx: nodeFs.constants.O_WRONLY | nodeFs.constants.O_CREAT | nodeFs.constants.O_EXCL,
};

/** Options of {@link createFsAdapter} and {@link createBlockingFsAdapter}. */
export interface FsAdapterOptions {
  /**
   * Never follow a symbolic link at the last part of a path a file is opened or read at
   * (O_NOFOLLOW: such a call fails with ELOOP). Folder links on the way are followed; see
   * contained-fs.ts for how those are checked. Default false.
   */
  readonly noFollow?: boolean;
}

/** `flags` as a number with O_NOFOLLOW added when `noFollow`; as given otherwise. */
function openFlags(flags: string | number, noFollow: boolean): string | number {
  if (!noFollow) return flags;
  const base = typeof flags === "number" ? flags : OPEN_FLAGS[flags];
  if (base === undefined) throw new TypeError(`fs adapter: open flags ${flags} are not supported with noFollow`);
  return base | O_NOFOLLOW;
}

/**
 * The buffer a bounded read fills: `sizeHint + 1` bytes at first (the extra byte tells a file
 * that grew since its stat), grown to at most `maxBytes + 1`. `more` gives room for the next
 * read, or null once the bound is reached.
 */
class BoundedBuffer {
  private buffer: Buffer;
  filled = 0;
  private readonly limit: number;

  constructor(sizeHint: number, maxBytes: number) {
    this.limit = maxBytes + 1;
    this.buffer = Buffer.alloc(Math.min(Math.max(sizeHint, 0) + 1, this.limit));
  }

  /** The buffer to read into at `filled`, or null when `maxBytes + 1` bytes are in. */
  more(): Buffer | null {
    if (this.filled < this.buffer.byteLength) return this.buffer;
    if (this.buffer.byteLength >= this.limit) return null;
    const bigger = Buffer.alloc(Math.min(this.buffer.byteLength * 2, this.limit));
    this.buffer.copy(bigger, 0, 0, this.filled);
    this.buffer = bigger;
    return bigger;
  }

  bytes(): Uint8Array {
    return this.buffer.subarray(0, this.filled);
  }
}

/** Reads from position 0 with `read` (bytes read; 0 at the end) into a {@link BoundedBuffer}. */
async function readUpTo(read: (buffer: Buffer, offset: number, length: number, position: number) => Promise<number>, sizeHint: number, maxBytes: number): Promise<Uint8Array> {
  const out = new BoundedBuffer(sizeHint, maxBytes);
  for (let buffer = out.more(); buffer !== null; buffer = out.more()) {
    const length = buffer.byteLength - out.filled;
    const n = await read(buffer, out.filled, length, out.filled);
    out.filled += n;
    // A short read of a regular file is its end.
    if (n < length) break;
  }
  return out.bytes();
}

/** {@link readUpTo} with a synchronous `read`. */
function readUpToSync(read: (buffer: Buffer, offset: number, length: number, position: number) => number, sizeHint: number, maxBytes: number): Uint8Array {
  const out = new BoundedBuffer(sizeHint, maxBytes);
  for (let buffer = out.more(); buffer !== null; buffer = out.more()) {
    const length = buffer.byteLength - out.filled;
    const n = read(buffer, out.filled, length, out.filled);
    out.filled += n;
    if (n < length) break;
  }
  return out.bytes();
}

/** The FileHandle calls the substrate makes. */
export interface FileHandleLike {
  write(data: Uint8Array): Promise<unknown>;
  /** node's FileHandle has it (one call for many pieces); memfs's does not. */
  writev?(buffers: Uint8Array[]): Promise<{ bytesWritten: number }>;
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
  readFile(path: string, opts?: { flag: number }): Promise<Uint8Array>;
  writeFile(path: string, data: Uint8Array, opts: { flag: string; mode: number }): Promise<void>;
  open(path: string, flags: string | number, mode?: number): Promise<FileHandleLike>;
  rename(from: string, to: string): Promise<void>;
  unlink(path: string): Promise<void>;
  mkdir(path: string, opts?: { recursive: boolean }): Promise<unknown>;
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
  /**
   * A small file read without trusting what is at the path: it is opened without blocking (a
   * FIFO does not wait for a writer), what was opened is looked at (fstat of the descriptor, so
   * a swap after the open changes nothing), and only a regular file of at most `maxBytes` is
   * read, from that descriptor. @returns null when nothing is there (ENOENT, ENOTDIR);
   * `{refused}`, the stat of what was found, when it is not a regular file or is larger than
   * `maxBytes`; else `{bytes}`, at most `maxBytes + 1` of them (more: it grew past the bound)
   */
  readBoundedOrNull(path: string, maxBytes: number): Promise<BoundedRead | null>;
  readFile(path: string): Promise<Uint8Array>;
  /**
   * Creates `path` (EEXIST when it exists) holding `data` (or its pieces one after another, e.g.
   * a pack whose big objects are not copied into one buffer); with `sync`, flushed to disk
   * before resolving.
   */
  writeNewFile(path: string, data: Uint8Array | readonly Uint8Array[], sync: boolean): Promise<void>;
  /** Opens `path` with `flags` ("wx" fails with EEXIST when the file exists). */
  open(path: string, flags: string): Promise<FileHandleLike>;
  rename(from: string, to: string): Promise<void>;
  /** Removes a file; a missing file (ENOENT, ENOTDIR) is not an error. */
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
  /**
   * Resolves once `folder` is known to lie inside the store's data dir (or is missing), for
   * those who read below it by other means (isomorphic-git, the merge thread). Present on a
   * store's contained adapters only (see contained-fs.ts).
   * @throws path_escapes_data_dir when it leads outside
   */
  checkFolder?(folder: string): Promise<void>;
}

/** The synchronous calls {@link createBlockingFsAdapter} needs (node:fs and memfs have them). */
interface FsSyncLike {
  readFileSync(path: string, opts?: { flag: number }): Uint8Array;
  openSync(path: string, flags: string | number, mode?: number): number;
  writeSync(fd: number, data: Uint8Array, offset: number, length: number, position: number | null): number;
  readSync(fd: number, buffer: Uint8Array, offset: number, length: number, position: number): number;
  fstatSync(fd: number): StatLike;
  closeSync(fd: number): void;
  renameSync(from: string, to: string): void;
  unlinkSync(path: string): void;
  mkdirSync(path: string, opts?: { recursive: boolean }): unknown;
  statSync(path: string): StatLike;
  readdirSync(path: string): unknown[];
  fsync(fd: number, callback: (error: Error | null) => void): void;
}

const SYNC_CALLS = ["readFileSync", "openSync", "writeSync", "readSync", "fstatSync", "closeSync", "renameSync", "unlinkSync", "mkdirSync", "statSync", "readdirSync", "fsync"] as const;

/** The errno `code` of a node-style error, or undefined. */
export function errnoCode(error: unknown): string | undefined {
  if (typeof error === "object" && error !== null && "code" in error) {
    const code = (error as { code: unknown }).code;
    return typeof code === "string" ? code : undefined;
  }
  return undefined;
}

/** What an errno means for the operator: `data.cause` of an `io_failed`, and its wording. */
const IO_CAUSES: Record<string, readonly [cause: string, text: string]> = {
  ENOSPC: ["full", "the disk is full"],
  EDQUOT: ["full", "the disk quota is used up"],
  EROFS: ["read_only", "the file system is read-only"],
  EACCES: ["permission_denied", "permission denied"],
  EPERM: ["permission_denied", "the operation is not permitted"],
  ENOTDIR: ["not_a_folder", "a part of the path is a file, not a folder"],
  EISDIR: ["is_a_folder", "the path is a folder where a file was expected"],
  ENOENT: ["missing", "a folder on the path does not exist"],
  EEXIST: ["exists", "something already exists at the path"],
  ENOTEMPTY: ["exists", "a folder that is not empty is in the way"],
  EMFILE: ["out_of_handles", "the process is out of file handles"],
  ENFILE: ["out_of_handles", "the system is out of file handles"],
  EIO: ["device_failed", "the device failed"],
  ENAMETOOLONG: ["name_too_long", "the path is too long"],
  ELOOP: ["link_loop", "symbolic links on the path loop"],
};

/**
 * A file-system failure as the store reports it: `io_failed`, with the errno code (`ENOSPC`,
 * `EROFS`, `EIO`, `EMFILE`, …), what it means (`cause`: `full`, `read_only`,
 * `permission_denied`, `not_a_folder`, `is_a_folder`, `missing`, `exists`, `out_of_handles`,
 * `device_failed`, `name_too_long`, `link_loop`, else `failed`), the system call and the path in
 * `data`, and the original error as `cause`. The message names the path and says the cause.
 * A `WorkflowHostError` and an error without an errno code are returned as they are.
 * @param doing what was being done, for the message ("write to deployments/x")
 */
export function asIoFailure(error: unknown, doing: string): unknown {
  if (error instanceof WorkflowHostError) return error;
  const errno = errnoCode(error);
  if (errno === undefined || !/^E[A-Z0-9]+$/.test(errno)) return error;
  const e = error as { syscall?: unknown; path?: unknown };
  const syscall = typeof e.syscall === "string" ? e.syscall : undefined;
  const path = typeof e.path === "string" ? e.path : undefined;
  const [cause, text] = IO_CAUSES[errno] ?? ["failed", "the file system refused it"];
  return new WorkflowHostError(
    "io_failed",
    `${doing} failed: ${errno}${syscall === undefined ? "" : ` in ${syscall}`}${path === undefined ? "" : ` on ${path}`}: ${text}; retry once that is fixed`,
    { errno, cause, ...(syscall === undefined ? {} : { syscall }), ...(path === undefined ? {} : { path }) },
    { cause: error },
  );
}

/**
 * Node's recursive mkdir says ENOENT where a level could not be made for another reason (on a
 * read-only file system a plain mkdir says EROFS): the first missing level is made alone, so the
 * error that surfaces is the real one, on the folder that could not be made.
 * @returns never: throws that error, or the original one when the level could be made after all
 */
async function explainMkdirFailure(error: unknown, path: string, exists: (p: string) => Promise<boolean>, mkdirOne: (p: string) => Promise<void>): Promise<never> {
  if (errnoCode(error) !== "ENOENT") throw error;
  let missing = path;
  for (;;) {
    const parent = dirname(missing);
    if (parent === missing || (await exists(parent))) break;
    missing = parent;
  }
  await mkdirOne(missing);
  throw error;
}

/**
 * Wraps a node:fs-compatible module (`fs.promises` must exist). Default: node:fs.
 * @param options `noFollow` (default false): see {@link FsAdapterOptions}
 * @throws TypeError when the module has no `promises` API.
 */
export function createFsAdapter(fsModule?: unknown, options: FsAdapterOptions = {}): FsAdapter {
  const raw = fsModule ?? nodeFs;
  const noFollow = options.noFollow === true;
  const readOpts = noFollow ? { flag: nodeFs.constants.O_RDONLY | O_NOFOLLOW } : undefined;
  const readNonblock = noFollow ? READ_NONBLOCK | O_NOFOLLOW : READ_NONBLOCK;
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
        return await p.readFile(path, readOpts);
      } catch (error) {
        const code = errnoCode(error);
        if (code === "ENOENT" || code === "ENOTDIR") return null;
        throw error;
      }
    },
    readFile: (path) => p.readFile(path, readOpts),
    async readBoundedOrNull(path, maxBytes) {
      let handle: FileHandleLike;
      try {
        handle = await p.open(path, readNonblock);
      } catch (error) {
        const code = errnoCode(error);
        if (code === "ENOENT" || code === "ENOTDIR") return null;
        // What cannot be opened for reading (a folder on some file systems, a socket): what is
        // there is what was found.
        if (code !== undefined && UNOPENABLE.has(code)) return { refused: await p.stat(path) };
        throw error;
      }
      try {
        const stat = await handle.stat();
        if (!stat.isFile() || Number(stat.size) > maxBytes) return { refused: stat };
        return { bytes: await readUpTo(async (b, o, l, pos) => (await handle.read(b, o, l, pos)).bytesRead, Number(stat.size), maxBytes) };
      } finally {
        await handle.close();
      }
    },
    async writeNewFile(path, data, sync) {
      if (!sync && !isPieces(data)) {
        await p.writeFile(path, data, { flag: "wx", mode: 0o644 });
        return;
      }
      const handle = await p.open(path, "wx", 0o644);
      try {
        if (isPieces(data)) await writePieces(handle, data);
        else await handle.write(data);
        if (sync) await handle.sync();
      } finally {
        await handle.close();
      }
    },
    open: (path, flags) => p.open(path, openFlags(flags, noFollow), 0o644),
    rename: (from, to) => p.rename(from, to),
    async unlinkQuiet(path) {
      try {
        await p.unlink(path);
      } catch (error) {
        // ENOTDIR: a parent is a file, so there is no such file either.
        const code = errnoCode(error);
        if (code !== "ENOENT" && code !== "ENOTDIR") throw error;
      }
    },
    async mkdirp(path) {
      try {
        await p.mkdir(path, { recursive: true });
      } catch (error) {
        await explainMkdirFailure(
          error,
          path,
          (dir) => p.stat(dir).then(
            () => true,
            () => false,
          ),
          async (dir) => {
            await p.mkdir(dir);
          },
        );
      }
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
      const handle = await p.open(path, openFlags("r", noFollow));
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
    fsyncDir: (path) => fsyncFolder((folder) => p.open(folder, "r"), path),
  };
}

function isPieces(data: Uint8Array | readonly Uint8Array[]): data is readonly Uint8Array[] {
  return Array.isArray(data);
}

/** Writes `pieces` at the handle's position one after another: one `writev` where there is one. */
async function writePieces(handle: FileHandleLike, pieces: readonly Uint8Array[]): Promise<void> {
  let from = 0;
  if (handle.writev !== undefined) {
    let total = 0;
    for (const piece of pieces) total += piece.byteLength;
    let written = (await handle.writev(pieces.slice())).bytesWritten;
    if (written === total) return;
    // A short write (rare for a regular file): the rest piece by piece, from where it stopped.
    for (; from < pieces.length && written >= (pieces[from] as Uint8Array).byteLength; from++) written -= (pieces[from] as Uint8Array).byteLength;
    if (from < pieces.length) {
      await handle.write((pieces[from] as Uint8Array).subarray(written));
      from++;
    }
  }
  for (; from < pieces.length; from++) if ((pieces[from] as Uint8Array).byteLength > 0) await handle.write(pieces[from] as Uint8Array);
}

async function fsyncFolder(open: (path: string) => Promise<FileHandleLike>, path: string): Promise<void> {
  let handle: FileHandleLike;
  try {
    handle = await open(path);
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
}

/**
 * Longest time (ms) a chain of blocking calls runs without giving the event loop a turn. Bounds
 * how late a timer or an I/O callback can be made by a caller looping on the blocking adapter
 * (a background pack merge works in slices of 2 ms). At 2 ms, a reader looping beside a writer
 * that commits back to back (test F2a) got a tenth of the turns it gets at 0.5 ms; signal
 * deliveries measured the same at 0.5, 1 and 2 ms.
 */
export const BLOCKING_STRETCH_MS = 1;

/**
 * The current stretch of blocking calls: when it began (on its monotonic clock) and what waits
 * for a turn of the event loop. One per clock: every adapter on the default clock shares one,
 * so chains on different stores take turns with each other too.
 */
interface Stretch {
  readonly monotonicNow: MonotonicNow;
  /** When the current stretch began (ms on `monotonicNow`), while one runs. */
  startedAt: number;
  /** True from a stretch's first call until the event loop's next turn. */
  running: boolean;
  /** Settles waiting for a turn of the event loop (see settleSoon). */
  deferred: number;
}

const newStretch = (monotonicNow: MonotonicNow): Stretch => ({ monotonicNow, startedAt: 0, running: false, deferred: 0 });

/** The stretch of every adapter on the default clock, {@link systemMonotonicNow}. */
const sharedStretch = newStretch(systemMonotonicNow);

/**
 * Runs `settle` after the current microtasks while the current stretch of blocking calls is
 * younger than {@link BLOCKING_STRETCH_MS} and no other settle waits for a turn; else on the
 * next turn of the event loop. Settling on every call through a turn let everything queued
 * meanwhile run inside a commit: OS file events from the commit's own ref lock, thread-pool
 * completions, slices of a pack merge. Measured on a signal delivery (eleven calls), same
 * minutes: 4.1–4.6 ms through turns, 3.2–3.4 ms this way.
 *
 * Fairness: once one chain has had its stretch and waits for a turn, every call waits for one
 * too until none is left waiting, so two chains looping side by side (a reader beside a
 * writer) take turns call by call, as through the thread pool. Without that rule the first
 * chain to run in a turn took the whole stretch and the other got one call per turn: a reader
 * looping on refs cut a writer's commits five-fold.
 */
function settleSoon(stretch: Stretch, settle: () => void): void {
  const now = stretch.monotonicNow();
  if (!stretch.running) {
    stretch.running = true;
    stretch.startedAt = now;
    setImmediate(() => {
      stretch.running = false;
    });
  }
  if (stretch.deferred === 0 && now - stretch.startedAt < BLOCKING_STRETCH_MS) {
    queueMicrotask(settle);
    return;
  }
  stretch.deferred += 1;
  setImmediate(() => {
    stretch.deferred -= 1;
    settle();
  });
}

/** Options of {@link createBlockingFsAdapter}. */
export interface BlockingFsAdapterOptions extends FsAdapterOptions {
  /**
   * Monotonic ms on which a stretch of blocking calls is measured ({@link BLOCKING_STRETCH_MS};
   * default {@link systemMonotonicNow}); not a wall `Clock`, whose step back would hold a
   * stretch open. Adapters given their own take turns among themselves only.
   */
  readonly monotonicNow?: MonotonicNow;
}

/**
 * Like {@link createFsAdapter}, but each call is made synchronously, except flushes, which still
 * go through the thread pool. Its promise settles at once (after the current microtasks) while
 * the chain of such calls has held the event loop for less than {@link BLOCKING_STRETCH_MS},
 * else on the next turn of the event loop (see {@link settleSoon}). Meant for small files only:
 * a slow disk stalls the whole event loop for as long as one call takes.
 * Falls back to {@link createFsAdapter} when the module lacks a synchronous call.
 * @param fsModule node:fs or a module like it (memfs); default node:fs
 * @param options `monotonicNow`: the clock stretches are measured on (default {@link systemMonotonicNow})
 * @throws TypeError when the module has no `promises` API.
 */
export function createBlockingFsAdapter(fsModule?: unknown, options: BlockingFsAdapterOptions = {}): FsAdapter {
  const noFollow = options.noFollow === true;
  const async = createFsAdapter(fsModule, { noFollow });
  const readOpts = noFollow ? { flag: nodeFs.constants.O_RDONLY | O_NOFOLLOW } : undefined;
  const readNonblock = noFollow ? READ_NONBLOCK | O_NOFOLLOW : READ_NONBLOCK;
  const stretch = options.monotonicNow === undefined ? sharedStretch : newStretch(options.monotonicNow);
  const f = async.raw as Partial<FsSyncLike>;
  if (SYNC_CALLS.some((name) => typeof f[name] !== "function")) return async;
  const s = f as FsSyncLike;
  const run = <T>(call: () => T): Promise<T> => {
    let settle: () => void;
    const settled = new Promise<T>((resolve, reject) => {
      try {
        const value = call();
        settle = () => resolve(value);
      } catch (error) {
        settle = () => reject(error);
      }
    });
    settleSoon(stretch, () => settle());
    return settled;
  };
  const orNull = <T>(call: () => T): T | null => {
    try {
      return call();
    } catch (error) {
      const code = errnoCode(error);
      if (code === "ENOENT" || code === "ENOTDIR") return null;
      throw error;
    }
  };
  const flush = (fd: number): Promise<void> =>
    new Promise((resolve, reject) => {
      s.fsync(fd, (error) => (error === null ? resolve() : reject(error)));
    });
  const handleOf = (fd: number): FileHandleLike => {
    let closed = false;
    return {
      write: (data) =>
        run(() => {
          let at = 0;
          while (at < data.byteLength) at += s.writeSync(fd, data, at, data.byteLength - at, null);
          return at;
        }),
      read: (buffer, offset, length, position) => run(() => ({ bytesRead: s.readSync(fd, buffer, offset, length, position) })),
      sync: () => flush(fd),
      stat: () => run(() => s.fstatSync(fd)),
      close: () =>
        run(() => {
          if (closed) return;
          closed = true;
          s.closeSync(fd);
        }),
    };
  };
  const open = (path: string, flags: string): Promise<FileHandleLike> => run(() => handleOf(s.openSync(path, openFlags(flags, noFollow), 0o644)));
  return {
    raw: async.raw,
    isNodeFs: async.isNodeFs,
    readFileOrNull: (path) => run(() => orNull(() => s.readFileSync(path, readOpts))),
    readFile: (path) => run(() => s.readFileSync(path, readOpts)),
    readBoundedOrNull: (path, maxBytes) =>
      run(() => {
        let fd: number;
        try {
          fd = s.openSync(path, readNonblock);
        } catch (error) {
          const code = errnoCode(error);
          if (code === "ENOENT" || code === "ENOTDIR") return null;
          if (code !== undefined && UNOPENABLE.has(code)) return { refused: s.statSync(path) };
          throw error;
        }
        try {
          const stat = s.fstatSync(fd);
          if (!stat.isFile() || Number(stat.size) > maxBytes) return { refused: stat };
          return { bytes: readUpToSync((b, o, l, pos) => s.readSync(fd, b, o, l, pos), Number(stat.size), maxBytes) };
        } finally {
          s.closeSync(fd);
        }
      }),
    async writeNewFile(path, data, sync) {
      const handle = await open(path, "wx");
      try {
        if (isPieces(data)) for (const piece of data) await handle.write(piece);
        else await handle.write(data);
        if (sync) await handle.sync();
      } finally {
        await handle.close();
      }
    },
    open,
    rename: (from, to) => run(() => s.renameSync(from, to)),
    unlinkQuiet: (path) =>
      run(() => {
        orNull(() => s.unlinkSync(path));
      }),
    mkdirp: (path) =>
      run(() => {
        s.mkdirSync(path, { recursive: true });
      }).catch((error: unknown) =>
        explainMkdirFailure(
          error,
          path,
          async (dir) => orNull(() => s.statSync(dir)) !== null,
          async (dir) => {
            s.mkdirSync(dir);
          },
        ),
      ),
    statOrNull: (path) => run(() => orNull(() => s.statSync(path))),
    readdirOrEmpty: (path) => run(() => (orNull(() => s.readdirSync(path)) ?? []).map(String)),
    fsyncDir: (path) => fsyncFolder((folder) => run(() => handleOf(s.openSync(folder, "r"))), path),
    readRange: (path, position, length) => async.readRange(path, position, length),
  };
}
