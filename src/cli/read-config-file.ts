/**
 * Reading a file named on the command line (`schedule sync --file`, `serve --dispatch`,
 * `serve --tokens`) with a bound (see src/substrate/capped-read.ts): only a regular file is read;
 * a FIFO (and so process substitution `<(…)`), a device or a folder is refused before it is
 * read, as is a file larger than the bound, so no such path can stall or flood the command.
 */
import { readCappedText } from "../substrate/capped-read.js";

/** Largest configuration file read by the CLI (bytes): 64 MiB, far above 10,000 declared series. */
export const MAX_CONFIG_FILE_BYTES = 64 * 1024 * 1024;

/**
 * The UTF-8 text of the regular file `path`.
 * @param maxBytes largest size read (bytes; default {@link MAX_CONFIG_FILE_BYTES})
 * @throws NotRegularFileError for a FIFO, device, socket or folder; a RangeError when the file
 *   holds more than `maxBytes` (refused by its size before it is read); the file system's error
 *   (ENOENT, EACCES, …)
 */
export function readConfigFile(path: string, maxBytes: number = MAX_CONFIG_FILE_BYTES): Promise<string> {
  return readCappedText(path, maxBytes);
}
