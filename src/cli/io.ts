/**
 * What a CLI command may touch of the outside world. `main()` gets the real process by default;
 * tests pass captured streams, their own environment and a signal source.
 */
import type { SignalSource } from "../host/stop-on-signals.js";
import { systemClock, type Clock } from "../time/clock.js";

export interface CliIo {
  readonly stdout: { write(chunk: string): unknown };
  readonly stderr: { write(chunk: string): unknown };
  /** Environment variables (`WORKFLOW_HOST_DATA_DIR` is read as a default `--data-dir`). */
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Relative paths are resolved against this folder. */
  readonly cwd: string;
  /** SIGINT/SIGTERM for `serve` and `demo`. */
  readonly signals: SignalSource;
  readonly clock: Clock;
}

/** The running process as a {@link CliIo}. */
export function processIo(): CliIo {
  return {
    stdout: process.stdout,
    stderr: process.stderr,
    env: process.env,
    cwd: process.cwd(),
    signals: process,
    clock: systemClock,
  };
}

/**
 * Makes a closed stdout or stderr (`workflow-host runs show … | head -1`) end the process
 * quietly with exit 0: the reader has what it wanted, so an EPIPE is no failure and no stack
 * trace. Any other stream error is rethrown. For the real process only.
 */
export function endQuietlyOnClosedPipe(): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on("error", (error: NodeJS.ErrnoException) => {
      if (error.code === "EPIPE") process.exit(0);
      throw error;
    });
  }
}

/** Writes one line (a newline is added) to stdout. */
export function printLine(io: CliIo, line = ""): void {
  io.stdout.write(`${line}\n`);
}

/** Writes a JSON document (2-space indent, trailing newline) to stdout. */
export function printJson(io: CliIo, value: unknown): void {
  io.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}
