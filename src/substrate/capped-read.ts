/**
 * Reading a file a person named (a token, dispatch or schedules file) with a bound: a FIFO or
 * process substitution (`--file <(…)`) works, as every stream does, but a device that never
 * ends (`/dev/zero`, `/dev/urandom`) or a huge file stops at `maxBytes` instead of filling memory
 * for seconds before failing.
 */
import { createReadStream } from "node:fs";

/**
 * The UTF-8 text of `path`, read as a stream.
 * @param maxBytes largest size read (bytes)
 * @throws the file system's error (ENOENT, EISDIR, EACCES, …); a RangeError when the file holds
 *   more than `maxBytes` (the read stops there)
 */
export async function readCappedText(path: string, maxBytes: number): Promise<string> {
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
