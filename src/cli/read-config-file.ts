/**
 * Reading a file named on the command line (a token, dispatch or schedules file) with a bound:
 * a FIFO or process substitution (`--file <(…)`) works, as every stream does, but a device that
 * never ends (`/dev/zero`, `/dev/urandom`) or a huge file stops at `maxBytes` instead of filling
 * memory for seconds before failing.
 */
import { createReadStream } from "node:fs";

/** Largest configuration file read by the CLI (bytes): 64 MiB, far above 10,000 declared series. */
export const MAX_CONFIG_FILE_BYTES = 64 * 1024 * 1024;

/**
 * The UTF-8 text of `path`, read as a stream.
 * @param maxBytes largest size read (bytes; default {@link MAX_CONFIG_FILE_BYTES})
 * @throws the file system's error (ENOENT, EISDIR, EACCES, …); a RangeError when the file holds
 *   more than `maxBytes` (the read stops there)
 */
export async function readConfigFile(path: string, maxBytes: number = MAX_CONFIG_FILE_BYTES): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  const stream = createReadStream(path);
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      size += chunk.byteLength;
      if (size > maxBytes) throw new RangeError(`more than ${maxBytes} bytes`);
      chunks.push(chunk);
    }
  } finally {
    stream.destroy();
  }
  return Buffer.concat(chunks).toString("utf8");
}
