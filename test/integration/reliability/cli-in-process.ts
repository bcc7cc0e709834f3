/**
 * `workflow-host <args>` run inside the test process on the real clock: the CLI's own parsing,
 * validation and output, without a process start per call (and with arguments no argv can
 * carry, such as a NUL or a 2 MiB payload).
 */
import { runCli, type CliRun } from "../../unit/cli/cli-io.js";

export type CliOutcome = CliRun;

export function runCliInProcess(argv: readonly string[]): Promise<CliOutcome> {
  return runCli(argv, { cwd: process.cwd(), clock: () => new Date() });
}

/** The `<code>` of a one-line `workflow-host: <code>: ...` error, or null. */
export function errorCodeOf(stderr: string): string | null {
  return /^workflow-host: ([a-z_]+): /m.exec(stderr)?.[1] ?? null;
}
