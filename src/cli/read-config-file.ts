/**
 * Reading a file named on the command line (a token, dispatch or schedules file) with a bound
 * (see src/substrate/capped-read.ts): a FIFO or process substitution works, a device that never
 * ends or a huge file stops at `maxBytes`.
 */
import { readCappedText } from "../substrate/capped-read.js";

/** Largest configuration file read by the CLI (bytes): 64 MiB, far above 10,000 declared series. */
export const MAX_CONFIG_FILE_BYTES = 64 * 1024 * 1024;

/**
 * The UTF-8 text of `path`, read as a stream.
 * @param maxBytes largest size read (bytes; default {@link MAX_CONFIG_FILE_BYTES})
 * @throws the file system's error (ENOENT, EISDIR, EACCES, …); a RangeError when the file holds
 *   more than `maxBytes` (the read stops there)
 */
export function readConfigFile(path: string, maxBytes: number = MAX_CONFIG_FILE_BYTES): Promise<string> {
  return readCappedText(path, maxBytes);
}
