/**
 * `workflow-host <args>` run inside the test process on the real clock: the CLI's own parsing,
 * validation and output, without a process start per call (and with arguments no argv can
 * carry, such as a NUL or a 2 MiB payload).
 */
import { EventEmitter } from "node:events";
import { main } from "../../../src/cli/main.js";
import type { CliIo } from "../../../src/cli/io.js";

export interface CliOutcome {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

export async function runCliInProcess(argv: readonly string[]): Promise<CliOutcome> {
  let stdout = "";
  let stderr = "";
  const signals = new EventEmitter();
  const io: CliIo = {
    stdout: { write: (chunk: string) => (stdout += chunk) },
    stderr: { write: (chunk: string) => (stderr += chunk) },
    env: {},
    cwd: process.cwd(),
    signals: { on: (s, l) => signals.on(s, l), off: (s, l) => signals.off(s, l) },
    clock: () => new Date(),
  };
  const code = await main(argv, io);
  return { code, stdout, stderr };
}

/** The `<code>` of a one-line `workflow-host: <code>: ...` error, or null. */
export function errorCodeOf(stderr: string): string | null {
  return /^workflow-host: ([a-z_]+): /m.exec(stderr)?.[1] ?? null;
}
