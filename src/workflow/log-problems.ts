/**
 * What can be wrong in a deployment's `runs/` folder besides an unreadable event file, as only a
 * `git push` (which skips `validatePush`) can make it, and how each is reported: a `BadEvent`
 * naming the path, never an exception, so one bad entry never stops a reader.
 *
 * - entries that are not part of any run's log: a file directly under `runs/`, a folder whose
 *   name is not a run id, anything in a run folder outside its layout (see run-folder.ts);
 * - breaks of density: a first seq above 1, missing seqs;
 * - events after a terminal event;
 * - an event file changed or removed after it was written (the log is append-only), and so a
 *   sealed log (`events.jsonl`) that was the run's whole log (a seal never changes);
 * - a schedule event the schedule controls never write (see `ScheduleProblem` in run-state.ts).
 */
import { WorkflowHostError, type ErrorCode } from "../errors.js";
import { GITLINK_MODE } from "../substrate/tree-object.js";
import type { EntryType } from "../substrate/types.js";
import { REPO_OR_RUN_ID_PATTERN } from "./ids.js";
import { parseEventPath, runEventsPrefix, runsPrefix } from "./paths.js";
import { runFolderPart } from "./run-folder.js";
import type { BadEvent } from "./run-log.js";

/** What a gitlink (mode 160000) is called in reports. */
const GITLINK = "gitlink (a submodule commit)";

/** Where a path under `runs/` belongs. */
export type RunPath =
  /** `runs/<runId>/events/<seq>.json`. */
  | { readonly kind: "event"; readonly runId: string; readonly seq: number }
  /**
   * Elsewhere in a run folder (`events/02.json`, `events/2.json/x`, `events.jsonl`, a stray
   * `notes.txt`): read the run again; `readRunLog` reports what does not belong.
   */
  | { readonly kind: "run"; readonly runId: string }
  /**
   * A part of the original layout beside the log (`blobs/<64 hex>`, `grants.json`, `parts/…`):
   * not read; a blob is immutable, so a change to one other than its addition is reported.
   */
  | { readonly kind: "aside"; readonly runId: string; readonly part: "blobs" | "grants.json" | "parts" }
  /** Not part of any run's log; report it. */
  | { readonly kind: "foreign"; readonly problem: BadEvent };

/**
 * Places a changed path.
 * @param mode the entry's git mode when not a plain file ("160000" a gitlink), as in a commit's changes
 * @returns null for a path outside `runs/`
 */
export function classifyRunPath(path: string, mode?: string): RunPath | null {
  if (!path.startsWith(runsPrefix)) return null;
  const event = parseEventPath(path);
  if (event !== null) return { kind: "event", ...event };
  const [name = "", ...rest] = path.slice(runsPrefix.length).split("/");
  if (rest.length === 0) return { kind: "foreign", problem: notARunFolder(`${runsPrefix}${name}`, mode === GITLINK_MODE ? GITLINK : "file") };
  if (!REPO_OR_RUN_ID_PATTERN.test(name)) return { kind: "foreign", problem: badRunFolderName(name) };
  const part = runFolderPart(rest.join("/"));
  if (part === "blobs" || part === "grants.json" || part === "parts") return { kind: "aside", runId: name, part };
  return { kind: "run", runId: name };
}

/**
 * The problem with an entry of `runs/` that is not a run folder.
 * @returns null for a folder with a valid run id
 */
export function runsEntryProblem(name: string, type: EntryType): BadEvent | null {
  if (type !== "tree") return notARunFolder(`${runsPrefix}${name}`, type === "commit" ? GITLINK : "file");
  return REPO_OR_RUN_ID_PATTERN.test(name) ? null : badRunFolderName(name);
}

/**
 * Breaks of density in a run's seqs (docs/design.md §2: the first seq is 0 or 1, each next one is the
 * previous + 1), each reported at the path of the seq it concerns.
 * @param seqs the seqs of every entry named `<seq>.json`, ascending
 * @param previousMax the highest seq already known (a tailer's), or -1 when `seqs` is the whole run
 */
export function sequenceProblems(runId: string, seqs: readonly number[], previousMax = -1): BadEvent[] {
  const prefix = runEventsPrefix(runId);
  const problems: BadEvent[] = [];
  let last = previousMax;
  for (const seq of seqs) {
    if (seq <= last) continue;
    if (last < 0 && seq > 1) {
      const path = `${prefix}${seq}.json`;
      problems.push(problem(runId, path, seq, "event_invalid", `${path}: the first event has seq ${seq}; allowed: 0 or 1`));
    } else if (last >= 0 && seq > last + 1) {
      const missing = last + 1;
      const path = `${prefix}${missing}.json`;
      const what = seq - 1 === missing ? `seq ${missing} is missing` : `seqs ${missing}..${seq - 1} are missing`;
      problems.push(problem(runId, path, missing, "event_invalid", `${path}: ${what}; seqs must be dense`));
    }
    last = seq;
  }
  return problems;
}

/** An event after the run's terminal event: the run has ended, so it is skipped. */
export function afterTerminalProblem(runId: string, seq: number, terminalType: string, terminalSeq: number | null): BadEvent {
  const path = `${runEventsPrefix(runId)}${seq}.json`;
  const where = terminalSeq === null ? "" : ` at seq ${terminalSeq}`;
  return problem(runId, path, seq, "event_invalid", `${path} follows the terminal ${terminalType}${where}; nothing may follow a terminal event, so it is skipped`);
}

/** A schedule event that breaks the controls' rules (see `ScheduleProblem`): skipped. */
export function scheduleProblem(runId: string, seq: number, detail: string): BadEvent {
  const path = `${runEventsPrefix(runId)}${seq}.json`;
  return problem(runId, path, seq, "event_invalid", `${path}: ${detail}; it is skipped`);
}

/** An event file a later commit modified or deleted: the log is append-only. */
export function rewrittenProblem(runId: string, seq: number, path: string, status: "modified" | "deleted"): BadEvent {
  return problem(runId, path, seq, "event_invalid", `${path} was ${status} after it was written; event files are append-only, so the log now reads as the new tip says`);
}

/**
 * A sealed log (`runs/<runId>/events.jsonl`) a later commit modified or deleted while it was the
 * run's whole log (a valid seal, no event files beside it): a seal never changes. `seq` null.
 */
export function sealRewrittenProblem(runId: string, path: string, status: "modified" | "deleted"): BadEvent {
  return problem(runId, path, null, "event_invalid", `${path} was ${status} after it was written; a sealed log never changes, so the log now reads as the new tip says`);
}

function notARunFolder(path: string, what: string): BadEvent {
  const name = path.slice(runsPrefix.length);
  return problem(name, path, null, "event_invalid", `${path} is a ${what}, not a run folder; allowed under runs/: one folder per run`);
}

function badRunFolderName(name: string): BadEvent {
  const path = `${runsPrefix}${name}`;
  const shown = name.length > 80 ? `${name.slice(0, 77)}...` : name;
  return problem(name, path, null, "id_invalid", `run folder ${JSON.stringify(shown)} under runs/ is not a run: its name is not a run id; allowed: 1-128 characters of A-Z a-z 0-9 _ -`);
}

function problem(runId: string, path: string, seq: number | null, code: ErrorCode, detail: string): BadEvent {
  // A log problem is data about a file, reported and skipped: its stack names no caller worth
  // knowing, and capturing it was most of the cost when a retention commit removes tens of
  // thousands of event files (each read as a removal until the archive is checked).
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return { runId, path, seq, error: new WorkflowHostError(code, detail, { path, seq }) };
  } finally {
    Error.stackTraceLimit = limit;
  }
}
