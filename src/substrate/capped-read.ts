/**
 * Reading a file a person named (a token, dispatch or schedules file) with a bound. Only a
 * regular file (or a link to one) is read: a FIFO would block until a writer came (forever if
 * none does), a device may never end (`/dev/zero`), a folder has no text. Each is refused before
 * it is read; a regular file larger than `maxBytes` is refused by its size, before it is read,
 * and the read stops at `maxBytes` should it grow meanwhile.
 *
 * Process substitution (`--file <(…)`) hands over a pipe, so it is refused too: write the text
 * to a file first.
 */
import { constants } from "node:fs";
import { open, stat } from "node:fs/promises";

/** What a path holds when it is no regular file, for the message. */
function kindOf(s: { isDirectory(): boolean; isFIFO(): boolean; isCharacterDevice(): boolean; isBlockDevice(): boolean; isSocket(): boolean }): string {
  if (s.isDirectory()) return "a folder";
  if (s.isFIFO()) return "a FIFO (named pipe; process substitution <(…) is one too)";
  if (s.isCharacterDevice() || s.isBlockDevice()) return "a device";
  if (s.isSocket()) return "a socket";
  return "not a regular file";
}

/** Thrown for a path that is no regular file; `kind` says what it is. */
export class NotRegularFileError extends Error {
  override readonly name = "NotRegularFileError";
  constructor(readonly path: string, readonly kind: string) {
    super(`it is ${kind}, not a regular file; give a regular file`);
  }
}

/**
 * The UTF-8 text of the regular file `path`.
 * @param maxBytes largest size read (bytes)
 * @throws NotRegularFileError for a FIFO, device, socket or folder (checked before it is opened,
 *   and again on the opened file, which is opened without blocking); a RangeError when the file
 *   holds more than `maxBytes`; the file system's error (ENOENT, EACCES, …)
 */
export async function readCappedText(path: string, maxBytes: number): Promise<string> {
  const before = await stat(path);
  if (!before.isFile()) throw new NotRegularFileError(path, kindOf(before));
  if (before.size > maxBytes) throw new RangeError(`it holds ${before.size} bytes, more than the ${maxBytes} allowed`);
  // Swapped for a FIFO between the stat and the open: O_NONBLOCK keeps the open from waiting for
  // a writer, and the opened file is checked again.
  const handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const opened = await handle.stat();
    if (!opened.isFile()) throw new NotRegularFileError(path, kindOf(opened));
    const chunks: Buffer[] = [];
    let size = 0;
    for (;;) {
      const buffer = Buffer.allocUnsafe(Math.min(64 * 1024, maxBytes + 1 - size));
      const { bytesRead } = await handle.read(buffer, 0, buffer.byteLength, null);
      if (bytesRead === 0) break;
      size += bytesRead;
      if (size > maxBytes) throw new RangeError(`it holds more than the ${maxBytes} bytes allowed`);
      chunks.push(buffer.subarray(0, bytesRead));
    }
    return Buffer.concat(chunks).toString("utf8");
  } finally {
    await handle.close();
  }
}
