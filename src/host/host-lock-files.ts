/**
 * The host lock's files in a data dir (`host.lock/`, `host.lock.json`, `host.lock.guard/`): their
 * names, the holder record, reading them (`inspectHostLock`), and the error naming a holder.
 */
import * as nodeFs from "node:fs";
import { join, resolve } from "node:path";
import { escapesDataDir } from "../substrate/contained-fs.js";
import { WorkflowHostError } from "../errors.js";

/** Name of the lock folder inside the data dir. */
export const HOST_LOCK_NAME = "host.lock";
/** Name of the holder file inside the data dir. */
export const HOST_LOCK_HOLDER_NAME = "host.lock.json";
/** Name of the guard folder that serialises acquires and releases. */
export const GUARD_NAME = "host.lock.guard";

/** Who holds (or held) a host lock, as written in `host.lock.json`. */
export interface HostLockHolder {
  readonly pid: number;
  readonly hostname: string;
  /** When the holder took the lock (RFC 3339, UTC). */
  readonly startedAt: string;
  /** The holder's last heartbeat (RFC 3339, UTC). */
  readonly heartbeatAt: string;
  /** Random per acquisition; tells a holder whether the file is still its own. */
  readonly token: string;
  /** Heartbeats written since the lock was taken; 0 in records of older versions. */
  readonly beat: number;
}

export interface LockFs {
  readFile(path: string, encoding: "utf8"): Promise<string>;
  writeFile(path: string, data: string): Promise<void>;
  rename(from: string, to: string): Promise<void>;
  unlink(path: string): Promise<void>;
  rmdir(path: string): Promise<void>;
  /** node:fs and memfs have it; without it records left by killed hosts stay. */
  readdir?(path: string): Promise<unknown[]>;
  mkdir(path: string, opts?: { recursive: true }): Promise<unknown>;
  stat(path: string): Promise<{ mtimeMs: number; size?: number | bigint; isFile?: () => boolean; isDirectory?: () => boolean }>;
  /** node:fs and memfs have it; without it a link at the lock's files goes unseen. */
  lstat?(path: string): Promise<{ isSymbolicLink(): boolean; isFile(): boolean; size: number | bigint }>;
}

/**
 * Refuses a symbolic link at any of `names` in `dataDir`: the lock's files are the host's own,
 * and one leading elsewhere would have the lock read (a holder named there) or remove what is
 * not its own.
 * @throws path_escapes_data_dir naming the first link found
 */
export async function refuseLinks(fs: LockFs, dataDir: string, names: readonly string[]): Promise<void> {
  if (fs.lstat === undefined) return;
  for (const name of names) {
    const path = join(dataDir, name);
    const found = await fs.lstat(path).catch(() => null);
    if (found?.isSymbolicLink() === true) throw escapesDataDir(dataDir, path, "link");
  }
}

/**
 * Refuses a folder where the holder file belongs, before anything is written: the record is put
 * in place by rename, which cannot replace a folder.
 * @throws io_failed (`data {path, errno: "EISDIR"}`) naming the folder
 */
export async function refuseHolderFolder(fs: LockFs, holderPath: string): Promise<void> {
  const found = await (fs.lstat !== undefined ? fs.lstat(holderPath) : fs.stat(holderPath)).catch(() => null);
  const isDirectory = (found as { isDirectory?: () => boolean } | null)?.isDirectory;
  if (isDirectory === undefined || !isDirectory.call(found)) return;
  throw new WorkflowHostError(
    "io_failed",
    `the host lock's holder file ${holderPath} is a folder; expected a regular file (or none): remove it, then start again`,
    { path: holderPath, errno: "EISDIR", cause: "not_a_file" },
  );
}

/**
 * Refuses something other than a folder at the lock folder's path (a file, a FIFO): no host makes
 * one, and it was watched as a live lock of an unknown holder for `staleMs`, then failed with
 * ENOTDIR when the takeover tried to remove it as a folder.
 * @throws io_failed (`data.errno` "ENOTDIR", `data.cause` "not_a_folder") naming it
 */
export async function refuseLockNotFolder(fs: LockFs, lockPath: string): Promise<void> {
  const found = await (fs.lstat !== undefined ? fs.lstat(lockPath) : fs.stat(lockPath)).catch(() => null);
  const isDirectory = (found as { isDirectory?: () => boolean } | null)?.isDirectory;
  if (found === null || isDirectory === undefined || isDirectory.call(found)) return;
  throw new WorkflowHostError(
    "io_failed",
    `the host lock ${lockPath} is ${holderKind(found)}, not the folder a host makes there: remove it, then start again`,
    { path: lockPath, errno: "ENOTDIR", cause: "not_a_folder" },
  );
}

/**
 * A holder record written beside the holder file, before its rename: `host.lock.json.<token>.tmp`
 * (an acquire) or `host.lock.json.<token>.<n>.tmp` (heartbeat n of this lock).
 */
const PENDING_RECORD = /^host\.lock\.json\.[0-9a-f-]{36}(\.[0-9]+)?\.tmp$/;

/**
 * Removes the records other hosts wrote beside the holder file and never renamed (killed
 * mid-heartbeat or mid-acquire); called by the host that just took the lock. A stalled host's
 * record removed here makes its rename fail, and its retry finds the lock taken over.
 */
export async function removePendingRecords(fs: LockFs, dataDir: string, ownToken: string): Promise<void> {
  if (fs.readdir === undefined) return;
  const names = await fs.readdir(dataDir).catch(() => []);
  for (const name of names) {
    const text = String(name);
    if (!PENDING_RECORD.test(text) || text.includes(ownToken)) continue;
    await fs.unlink(join(dataDir, text)).catch(() => undefined);
  }
}

/** Largest holder record read (bytes); the record is a few hundred. */
const MAX_HOLDER_BYTES = 64 * 1024;

/**
 * How an unknown holder is named in the host's log: "an unknown holder (no holder file)", or
 * "(holder file unreadable: <why>)" for one that is there but torn or garbled.
 */
export function unknownHolder(holderProblem: string | null): string {
  return `an unknown holder (${holderProblem === null ? "no holder file" : `holder file unreadable: ${holderProblem}`})`;
}

/** What the holder file gave: its record, or why it gave none. */
export interface HolderRead {
  /** The record, or null when there is no file or it could not be read as one. */
  readonly holder: HostLockHolder | null;
  /**
   * Why a holder file that is there gave no record ("not JSON (…)", "no pid", "a symbolic link,
   * not a regular file", "larger than 65536 bytes"), or null: a record was read, or there is no
   * file.
   */
  readonly problem: string | null;
}

/**
 * Reads the holder file at `path`: what is there is looked at before it is opened, since opening
 * a FIFO would wait for a writer forever (before the CLI could even handle SIGTERM) and a device
 * could be read without end. A torn or garbled file gives no record, as a missing one does (the
 * next holder replaces it by rename), but says why, so it is reported as what it is.
 * @throws the file system's errors other than ENOENT/ENOTDIR
 */
export async function readHolderRecord(fs: LockFs, path: string): Promise<HolderRead> {
  try {
    // lstat: a link is not a regular file, and what it leads to is not read.
    const stat: { isFile?: () => boolean; isSymbolicLink?: () => boolean; size?: number | bigint } = fs.lstat === undefined ? await fs.stat(path) : await fs.lstat(path);
    if (stat.isFile !== undefined && !stat.isFile()) {
      return { holder: null, problem: `${holderKind(stat)}, not a regular file` };
    }
    if (stat.size !== undefined && Number(stat.size) > MAX_HOLDER_BYTES) return { holder: null, problem: `larger than ${MAX_HOLDER_BYTES} bytes` };
    return parseHolderText(await fs.readFile(path, "utf8"));
  } catch (error) {
    const errno = errnoOf(error);
    if (errno === "ENOENT" || errno === "ENOTDIR") return { holder: null, problem: null };
    throw error;
  }
}

/** What stands at the holder file's path when it is no regular file: "a FIFO (named pipe)", "a folder", … */
function holderKind(stat: object): string {
  const is = stat as Partial<Record<"isSymbolicLink" | "isDirectory" | "isFIFO" | "isSocket" | "isCharacterDevice" | "isBlockDevice" | "isFile", () => boolean>>;
  if (is.isSymbolicLink?.() === true) return "a symbolic link";
  if (is.isDirectory?.() === true) return "a folder";
  if (is.isFIFO?.() === true) return "a FIFO (named pipe)";
  if (is.isSocket?.() === true) return "a socket";
  if (is.isCharacterDevice?.() === true || is.isBlockDevice?.() === true) return "a device";
  if (is.isFile?.() === true) return "a file";
  return "something other than a file";
}

export function lockFsOf(fs: unknown): LockFs {
  const promises = (fs as { promises?: LockFs } | undefined)?.promises;
  if (promises === undefined) throw new WorkflowHostError("config_invalid", "host lock: fs must provide the node:fs promises API (fs.promises)", { field: "fs" });
  return promises;
}

export function defaultIsProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code !== "ESRCH";
  }
}

export function errnoOf(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | null)?.code;
}

/** The holder record in `text`, or null when it is not one (see {@link parseHolderText}). */
export function parseHolder(text: string): HostLockHolder | null {
  return parseHolderText(text).holder;
}

/**
 * The holder record in `text`, or why it is not one: not JSON (a write torn by a crash or a full
 * disk, bytes garbled), not an object, or without a numeric `pid`, a string `hostname` or
 * `startedAt`. The other fields default (`heartbeatAt` to `startedAt`, `token` "", `beat` 0).
 */
export function parseHolderText(text: string): HolderRead {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    const size = Buffer.byteLength(text);
    // The parser's message quotes the bytes: kept to one short printable line for the log.
    const why = (error instanceof Error ? error.message : String(error)).replace(/[\u0000-\u001f\u007f]/g, "?").slice(0, 160);
    return { holder: null, problem: size === 0 ? "empty (0 bytes)" : `not JSON (${why}; ${size} bytes)` };
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return { holder: null, problem: `not a JSON object (${Array.isArray(value) ? "an array" : value === null ? "null" : typeof value})` };
  const record = value as Partial<HostLockHolder>;
  const missing = [typeof record.pid !== "number" ? "a numeric pid" : null, typeof record.hostname !== "string" ? "a hostname" : null, typeof record.startedAt !== "string" ? "a startedAt" : null].filter((m) => m !== null);
  if (missing.length > 0) return { holder: null, problem: `a JSON object without ${missing.join(", ")}` };
  return {
    holder: {
      pid: record.pid as number,
      hostname: record.hostname as string,
      startedAt: record.startedAt as string,
      heartbeatAt: typeof record.heartbeatAt === "string" ? record.heartbeatAt : (record.startedAt as string),
      token: typeof record.token === "string" ? record.token : "",
      beat: typeof record.beat === "number" ? record.beat : 0,
    },
    problem: null,
  };
}

/** What is in a data dir's lock right now, as {@link inspectHostLock} reports it. */
export interface HostLockState {
  /** Whether the lock folder exists. */
  readonly locked: boolean;
  /** The holder file's record, or null when missing or unreadable. */
  readonly holder: HostLockHolder | null;
  /**
   * Why a holder file that is there could not be read as a record (torn, garbled, not a regular
   * file: see {@link HolderRead}), or null when the record was read or there is no file.
   */
  readonly holderProblem: string | null;
  /** Last heartbeat in epoch ms (`heartbeatAt`, or the folder mtime without a holder record), or null when not locked. */
  readonly heartbeatMs: number | null;
  /** The lock folder's mtime (epoch ms), or null when not locked. */
  readonly mtimeMs: number | null;
}

/**
 * Reads a data dir's lock without touching it (for `workflow-host` status output and tests).
 * @returns whether the lock folder exists, the holder record, and the newest heartbeat
 */
export async function inspectHostLock(opts: { readonly dataDir: string; readonly fs?: unknown }): Promise<HostLockState> {
  const fs = lockFsOf(opts.fs ?? nodeFs);
  const dir = resolve(opts.dataDir);
  let mtimeMs: number | null = null;
  try {
    mtimeMs = (await fs.stat(join(dir, HOST_LOCK_NAME))).mtimeMs;
  } catch (error) {
    if (errnoOf(error) !== "ENOENT") throw error;
  }
  const { holder, problem: holderProblem } = await readHolderRecord(fs, join(dir, HOST_LOCK_HOLDER_NAME));
  if (mtimeMs === null) return { locked: false, holder, holderProblem, heartbeatMs: null, mtimeMs: null };
  const beat = holder === null ? Number.NaN : Date.parse(holder.heartbeatAt);
  // The folder is not touched by heartbeats: its mtime counts only without a holder record.
  return { locked: true, holder, holderProblem, heartbeatMs: Number.isFinite(beat) ? beat : mtimeMs, mtimeMs };
}

/**
 * The `host_locked` error naming the holder, or saying it is unknown and why: no holder file,
 * or one that could not be read (`holderProblem`, also in `data`).
 */
export function lockedError(dataDir: string, lockPath: string, holder: HostLockHolder | null, holderProblem: string | null = null): WorkflowHostError {
  if (holder === null) {
    const why = holderProblem === null ? "no holder file" : `holder file unreadable: ${holderProblem}`;
    return new WorkflowHostError("host_locked", `data dir ${dataDir} is locked by another host (holder unknown, ${why}; lock ${lockPath}); stop that host first`, {
      dataDir,
      lockPath,
      pid: null,
      holderProblem,
    });
  }
  return new WorkflowHostError(
    "host_locked",
    `data dir ${dataDir} is locked by pid ${holder.pid} on ${holder.hostname} since ${holder.startedAt} (last heartbeat ${holder.heartbeatAt}); stop that host first`,
    { dataDir, lockPath, pid: holder.pid, hostname: holder.hostname, startedAt: holder.startedAt, heartbeatAt: holder.heartbeatAt },
  );
}
