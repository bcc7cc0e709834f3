/**
 * What a CLI command may touch of the outside world. `main()` gets the real process by default;
 * tests pass captured streams, their own environment and a signal source.
 */
import type { SignalSource } from "../host/stop-on-signals.js";
import { systemClock, type Clock } from "../time/clock.js";
import { oneLine } from "./format.js";
import { asIoFailure } from "../substrate/fs-adapter.js";

export interface CliIo {
  readonly stdout: { write(chunk: string): unknown };
  readonly stderr: { write(chunk: string): unknown };
  /** Environment variables (`WORKFLOW_HOST_DATA_DIR` is read as a default `--data-dir`). */
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Relative paths are resolved against this folder. */
  readonly cwd: string;
  /**
   * SIGINT/SIGTERM for `serve` and `demo`, and "SIGPIPE" once stdout or stderr is found closed
   * (a write met EPIPE: the reader went away, as with `| head -1`).
   */
  readonly signals: SignalSource;
  readonly clock: Clock;
  /** The script the process was started with (`process.argv[1]`), when known: the demo's hint names how to run the CLI again. */
  readonly entryPath?: string;
}

/** Who is told of a closed pipe instead of the process ending at once (see below). */
const closedPipeListeners = new Set<(signal: NodeJS.Signals) => void>();

/**
 * The process's signals, except "SIGPIPE": a listener for it is told when a write to stdout or
 * stderr met EPIPE (see {@link endQuietlyOnClosedPipe}), not of the OS signal, which stays
 * ignored as node has it.
 */
const processSignals: SignalSource = {
  on(signal, listener) {
    if (signal === "SIGPIPE") closedPipeListeners.add(listener);
    else process.on(signal, listener);
  },
  off(signal, listener) {
    if (signal === "SIGPIPE") closedPipeListeners.delete(listener);
    else process.off(signal, listener);
  },
};

/** The running process as a {@link CliIo}. */
export function processIo(): CliIo {
  return {
    stdout: process.stdout,
    stderr: process.stderr,
    env: process.env,
    cwd: process.cwd(),
    signals: processSignals,
    clock: systemClock,
    ...(process.argv[1] === undefined ? {} : { entryPath: process.argv[1] }),
  };
}

/**
 * Makes a closed stdout or stderr (`workflow-host check … | head -1`) no stack trace and no
 * change of exit code: the reader has what it wanted, the rest of the output is dropped, and the
 * command finishes and exits with its own code (1 when `check` found problems, so
 * `set -o pipefail` still sees the failure). A command listening for "SIGPIPE" on
 * {@link processIo}'s signals (`serve`, `demo`: a host that would otherwise run on) is told
 * once and ends by itself. Any other stream error (a full disk) is one typed line and exit 1.
 * For the real process only.
 */
export function endQuietlyOnClosedPipe(): void {
  let closed = false;
  for (const stream of [process.stdout, process.stderr]) {
    stream.on("error", (error: NodeJS.ErrnoException) => {
      if (closed && error.code === "ERR_STREAM_DESTROYED") return;
      if (error.code !== "EPIPE") {
        // The output cannot be written (a full disk, /dev/full, EIO): one typed line on stderr
        // (when it is stdout that failed) and exit 1, never a stack trace.
        if (outputFailure !== null) return;
        outputFailure = asIoFailure(error, `writing to ${stream === process.stdout ? "stdout" : "stderr"}`);
        if (stream === process.stdout) {
          try {
            process.stderr.write(`workflow-host: ${outputFailure instanceof Error ? oneLine(outputFailure.message) : String(outputFailure)}\n`);
          } catch {
            // stderr is gone too: the exit code says it.
          }
        }
        process.exitCode = 1;
      }
      if (closed) return;
      closed = true;
      // A command that listens (a host) stops itself; any other one runs to its end, its later
      // writes dropped, so its exit code is still its own.
      for (const listener of [...closedPipeListeners]) listener("SIGPIPE");
    });
  }
}

/** The failure of a write to stdout or stderr other than a closed pipe (ENOSPC, EIO), once one happened. */
let outputFailure: unknown = null;

/** Whether writing the output failed other than by a closed pipe: the command then exits 1. */
export function outputFailed(): boolean {
  return outputFailure !== null;
}

/** Writes one line (a newline is added) to stdout. */
export function printLine(io: CliIo, line = ""): void {
  io.stdout.write(`${oneLine(line)}\n`);
}

/** Writes a JSON document (2-space indent, trailing newline) to stdout. */
export function printJson(io: CliIo, value: unknown): void {
  io.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}
