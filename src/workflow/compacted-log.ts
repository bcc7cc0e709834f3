/**
 * The sealed log of an ended run, `runs/<runId>/events.jsonl`, by the original system's rule:
 * each event's exact bytes followed by `\n`, in seq order. When the run's event files exist,
 * the file is exactly their fold; a sealed file never changes.
 *
 * A valid sealed log is the run's log, read identically from either form. One that is not valid
 * (not the fold of the event files, a bad line, a run that has not ended) is reported as one
 * problem and is not part of the log: it neither ends the run nor blocks appends to it. Pure.
 */
import { WorkflowHostError, type ErrorCode } from "../errors.js";
import { isTerminalEventType } from "./event-shapes.js";
import { parseEvent } from "./events.js";
import { compactedLogPath } from "./paths.js";
import type { BadEvent } from "./run-log.js";
import type { RunEvent } from "./types.js";

/** The result of checking a sealed log. */
export interface CompactedLogCheck {
  /** The events, in seq order, when the log is valid; else empty. */
  readonly events: readonly RunEvent[];
  /** Why the file is not a valid sealed log, or null. */
  readonly problem: BadEvent | null;
}

/**
 * The sealed log of event files: each file's exact bytes followed by `\n`, in the order given.
 * @param parts the event files' bytes in seq order
 */
export function foldEventFiles(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length + 1, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
    out[at] = 0x0a;
    at += 1;
  }
  return out;
}

/** True when both byte arrays hold the same bytes. */
export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i += 1) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * The problem with a sealed log kept beside the run's event files, or null when it is their
 * exact fold. Whether the run has ended is the caller's to check (from the files' events).
 * @param files the bytes of every `<seq>.json` entry of `events/`, in seq order
 */
export function foldProblem(runId: string, bytes: Uint8Array, files: readonly Uint8Array[]): BadEvent | null {
  if (sameBytes(bytes, foldEventFiles(files))) return null;
  return notFoldProblem(runId, files.length);
}

/** The problem "not the exact fold of the run's `fileCount` event files", for a reader that compared them itself. */
export function notFoldProblem(runId: string, fileCount: number): BadEvent {
  return problem(runId, null, `is not the exact fold of the run's ${fileCount} event files (each file's bytes plus \\n, in seq order)`);
}

/** The problem "the run has not ended", for a sealed log of a live run. */
export function notEndedProblem(runId: string): BadEvent {
  return problem(runId, null, "seals a run that has not ended; only a run whose last event is RunCompleted, RunFailed or RunCancelled may be sealed");
}

/**
 * Checks a sealed log that stands alone (its event files were removed when it was written):
 * it ends with `\n`, every line is one event ({@link parseEvent}, `maxEventBytes` per line), the
 * seqs start at 0 or 1 and are dense, and the last event, and only it, is terminal.
 * @returns the events when valid, else the first problem (with the line's seq when known)
 */
export function checkCompactedLog(runId: string, bytes: Uint8Array, opts: { readonly maxEventBytes?: number } = {}): CompactedLogCheck {
  const invalid = (seq: number | null, detail: string, code: ErrorCode = "event_invalid", cause?: unknown): CompactedLogCheck => ({
    events: [],
    problem: problem(runId, seq, detail, code, cause),
  });
  if (bytes.length === 0) return invalid(null, "is empty; a sealed log holds at least the run's terminal event");
  if (bytes[bytes.length - 1] !== 0x0a) return invalid(null, "does not end with \\n after its last event");
  const events: RunEvent[] = [];
  let start = 0;
  for (let line = 1; start < bytes.length; line += 1) {
    const end = bytes.indexOf(0x0a, start);
    const previousSeq = events.at(-1)?.seq;
    const expected = previousSeq === undefined ? null : previousSeq + 1;
    let event: RunEvent;
    try {
      event = parseEvent(bytes.subarray(start, end), { path: `${compactedLogPath(runId)}:${line}`, ...(opts.maxEventBytes === undefined ? {} : { maxEventBytes: opts.maxEventBytes }) });
    } catch (error) {
      const code = error instanceof WorkflowHostError ? error.code : "event_invalid";
      return invalid(expected, `line ${line} is not an event (${error instanceof Error ? error.message : String(error)})`, code, error);
    }
    if (expected === null && event.seq > 1) return invalid(event.seq, `line ${line} has seq ${event.seq}; the first event's seq is 0 or 1`);
    if (expected !== null && event.seq !== expected) return invalid(event.seq, `line ${line} has seq ${event.seq}; expected ${expected} (dense, in seq order)`);
    const previous = events.at(-1);
    if (previous !== undefined && isTerminalEventType(previous.type)) return invalid(event.seq, `line ${line} follows the terminal ${previous.type}`);
    events.push(event);
    start = end + 1;
  }
  const last = events.at(-1);
  if (last === undefined || !isTerminalEventType(last.type)) return { events: [], problem: notEndedProblem(runId) };
  return { events, problem: null };
}

function problem(runId: string, seq: number | null, detail: string, code: ErrorCode = "event_invalid", cause?: unknown): BadEvent {
  const path = compactedLogPath(runId);
  return { runId, path, seq, error: new WorkflowHostError(code, `${path} ${detail}`, { path, seq }, cause === undefined ? {} : { cause }) };
}
