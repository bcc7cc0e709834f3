/**
 * Runs `main()` in-process with captured output, for CLI tests.
 */
import { EventEmitter } from "node:events";
import { main } from "../../../src/cli/main.js";
import type { CliIo } from "../../../src/cli/io.js";

export interface CliRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `workflow-host <argv>` in this process; `env` replaces the environment. */
export async function runCli(argv: readonly string[], opts: { env?: Record<string, string>; cwd?: string; clock?: () => Date } = {}): Promise<CliRun> {
  let stdout = "";
  let stderr = "";
  const signals = new EventEmitter();
  const io: CliIo = {
    stdout: { write: (chunk: string) => (stdout += chunk) },
    stderr: { write: (chunk: string) => (stderr += chunk) },
    env: opts.env ?? {},
    cwd: opts.cwd ?? "/nonexistent-cwd",
    signals: { on: (s, l) => signals.on(s, l), off: (s, l) => signals.off(s, l) },
    clock: opts.clock ?? (() => new Date("2026-05-01T10:00:00.000Z")),
  };
  const code = await main(argv, io);
  return { code, stdout, stderr };
}

/** Runs the CLI with `--json` added and parses its stdout as one JSON value. */
export async function runCliJson<T>(argv: readonly string[]): Promise<{ code: number; body: T }> {
  const run = await runCli([...argv, "--json"]);
  return { code: run.code, body: JSON.parse(run.stdout) as T };
}
