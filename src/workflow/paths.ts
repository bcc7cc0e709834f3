/**
 * Where a run's log lives in a deployment repo (docs/design.md §2):
 * `runs/<runId>/events/<seq>.json`, one file per event, and, once a terminal run is compacted,
 * `runs/<runId>/events.jsonl`.
 */
import { parseRunId } from "./ids.js";

/** Folder holding every run. */
export const runsPrefix = "runs/";

/** Name of the folder of a run's event files, in the run's folder. */
export const eventsFolder = "events";

// seq: decimal without leading zeros, so each seq has exactly one file name.
const EVENT_PATH = /^runs\/([A-Za-z0-9_-]{1,128})\/events\/(0|[1-9][0-9]{0,15})\.json$/;
const COMPACTED_PATH = /^runs\/([A-Za-z0-9_-]{1,128})\/events\.jsonl$/;

/**
 * The folder of a run's event files, `runs/<runId>/events/` (with the trailing slash).
 * @throws `id_invalid` for a bad runId.
 */
export function runEventsPrefix(runId: string): string {
  return `${runsPrefix}${parseRunId(runId)}/events/`;
}

/**
 * The path of one event file, `runs/<runId>/events/<seq>.json`.
 * @param seq - a non-negative safe integer.
 * @throws `id_invalid` for a bad runId; a `RangeError` for a bad seq (a programming error).
 */
export function eventPath(runId: string, seq: number): string {
  if (!Number.isSafeInteger(seq) || seq < 0) throw new RangeError(`seq must be a non-negative safe integer, got ${String(seq)}`);
  return `${runEventsPrefix(runId)}${seq}.json`;
}

/**
 * The seq named by an event file name (`<seq>.json`), or null when the name is not one (leading
 * zeros, signs, other extensions, values beyond `Number.MAX_SAFE_INTEGER`).
 */
export function parseEventPathName(name: string): number | null {
  // `^(0|[1-9][0-9]{0,15})\.json$`, digit by digit (no match array): a log read parses every name twice.
  const digits = name.length - 5;
  if (digits < 1 || digits > 16 || !name.endsWith(".json") || (digits > 1 && name.charCodeAt(0) === 48)) return null;
  let seq = 0;
  for (let i = 0; i < digits; i++) {
    const d = name.charCodeAt(i) - 48;
    if (d < 0 || d > 9) return null;
    seq = seq * 10 + d;
  }
  return Number.isSafeInteger(seq) ? seq : null;
}

/**
 * Splits an event file path into run and seq.
 * @returns `{runId, seq}`, or null when `path` is not exactly `runs/<runId>/events/<seq>.json`
 *   with a valid runId and a seq without leading zeros (`0` itself is allowed).
 */
export function parseEventPath(path: string): { runId: string; seq: number } | null {
  const m = EVENT_PATH.exec(path);
  if (m === null || m[1] === undefined || m[2] === undefined) return null;
  const seq = Number(m[2]);
  return Number.isSafeInteger(seq) ? { runId: m[1], seq } : null;
}

/**
 * The compacted log of a terminal run, `runs/<runId>/events.jsonl` (each event's bytes followed
 * by `\n`, in seq order).
 * @throws `id_invalid` for a bad runId.
 */
export function compactedLogPath(runId: string): string {
  return `${runsPrefix}${parseRunId(runId)}/events.jsonl`;
}

/** The run whose compacted log `path` is, or null when it is not `runs/<runId>/events.jsonl`. */
export function parseCompactedLogPath(path: string): { runId: string } | null {
  const m = COMPACTED_PATH.exec(path);
  return m === null || m[1] === undefined ? null : { runId: m[1] };
}
