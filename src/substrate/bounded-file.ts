/**
 * Reading a small file whose path comes from a data dir (a ref, `packed-refs`, a loose object,
 * a lock-holder record) without trusting what is at that path. Opening a FIFO for reading waits
 * for a writer forever (through the blocking adapter it stops the whole event loop, so not even
 * SIGTERM is handled), and a device such as `/dev/zero` would be read until memory runs out.
 * So the path is opened without blocking, what was opened is looked at (fstat of the
 * descriptor), and only a regular file of at most `maxBytes` is read, from that same
 * descriptor: a file swapped for a FIFO after the open is not what is read. What else is there
 * is refused through the caller's typed error, which names the path.
 */
import type { FsAdapter, StatLike } from "./fs-adapter.js";

/** Largest loose ref file read (bytes): `ref: <name>\n` with a name as long as a path may be. */
export const MAX_REF_FILE_BYTES = 8 * 1024;
/** Largest `packed-refs` read (bytes): about four million refs at ~60 bytes a line. */
export const MAX_PACKED_REFS_BYTES = 256 * 1024 * 1024;
/**
 * Largest loose object read (bytes, compressed): git's own `core.bigFileThreshold` (512 MiB),
 * above which git stores files whole rather than as ordinary objects.
 */
export const MAX_LOOSE_OBJECT_BYTES = 512 * 1024 * 1024;

/** How a refused path is described: "a FIFO", "a directory", "a file of N bytes (more than M)". */
export function describeNonRegular(stat: StatLike, maxBytes: number): string | null {
  const kinds = stat as Partial<Record<"isFIFO" | "isSocket" | "isCharacterDevice" | "isBlockDevice" | "isSymbolicLink", () => boolean>>;
  if (stat.isFile()) return Number(stat.size) > maxBytes ? `a file of ${String(stat.size)} bytes (more than the ${maxBytes} allowed)` : null;
  if (stat.isDirectory()) return "a directory";
  if (kinds.isFIFO?.() === true) return "a FIFO (named pipe)";
  if (kinds.isSocket?.() === true) return "a socket";
  if (kinds.isCharacterDevice?.() === true || kinds.isBlockDevice?.() === true) return "a device";
  return "not a regular file";
}

/** Options of {@link readBoundedFileOrNull}. */
export interface BoundedReadOptions {
  /** Read a directory at the path as "no file" (null) instead of refusing it (a ref namespace folder). Default false. */
  readonly directoryIsAbsent?: boolean;
}

/**
 * The bytes of the regular file at `path`, or null when nothing is there (ENOENT, ENOTDIR).
 * @param maxBytes largest size read, in bytes
 * @param refuse builds the error thrown for anything else at the path, given what was found
 *   ("a FIFO (named pipe)", "a directory", "a device", "a socket", "a file of N bytes …")
 * @throws what `refuse` returns; the file system's own errors as they are (callers type them)
 */
export async function readBoundedFileOrNull(
  fs: FsAdapter,
  path: string,
  maxBytes: number,
  refuse: (found: string) => Error,
  opts: BoundedReadOptions = {},
): Promise<Uint8Array | null> {
  const read = await fs.readBoundedOrNull(path, maxBytes);
  if (read === null) return null;
  if ("refused" in read) {
    const found = describeNonRegular(read.refused, maxBytes) ?? "not a regular file";
    if (found === "a directory" && opts.directoryIsAbsent === true) return null;
    throw refuse(found);
  }
  // Grown past the bound since the fstat: refused the same way.
  if (read.bytes.byteLength > maxBytes) throw refuse(`a file of more than ${maxBytes} bytes (more than the ${maxBytes} allowed)`);
  return read.bytes;
}
