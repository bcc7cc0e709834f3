/**
 * The CLI's {@link Logger}: one line per message on stderr, human text or JSON lines.
 */
import type { Logger } from "../logger.js";
import type { CliIo } from "./io.js";
import { oneLine } from "./format.js";

/** A logger writing `<time> <level> <message>` (or a JSON object per line with `json`) to stderr. */
export function createCliLogger(io: CliIo, opts: { readonly json?: boolean } = {}): Logger {
  const write = (level: "info" | "warn" | "error", message: string, data?: Record<string, unknown>): void => {
    const ts = io.clock().toISOString();
    if (opts.json === true) {
      io.stderr.write(`${JSON.stringify({ ts, level, message, ...(data === undefined ? {} : { data }) }, replacer)}\n`);
    } else {
      io.stderr.write(`${ts} ${level.padEnd(5)} ${oneLine(message)}\n`);
    }
  };
  return {
    info: (message, data) => write("info", message, data),
    warn: (message, data) => write("warn", message, data),
    error: (message, data) => write("error", message, data),
  };
}

/** JSON.stringify replacer that turns errors into `{code?, message}`. */
export function replacer(_key: string, value: unknown): unknown {
  if (value instanceof Error) {
    const code = (value as { code?: unknown }).code;
    return { ...(typeof code === "string" ? { code } : {}), message: value.message };
  }
  return value;
}
