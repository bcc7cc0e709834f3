/**
 * What a run folder `runs/<runId>/` may hold: the layout the original system writes, which this
 * project reads and validates as its own.
 *
 * - `events/`        the log, one `<seq>.json` per event;
 * - `events.jsonl`   the sealed log of an ended run (see compacted-log.ts);
 * - `blobs/`         immutable files named by 64 lowercase hex characters (added once, never
 *                    modified or removed);
 * - `grants.json`    a plain file;
 * - `parts/`         a folder of anything.
 *
 * A run folder without a log (neither `events/` nor `events.jsonl`) holds only `grants.json`
 * and `parts/`. Everything else is reported as a stray (`event_invalid`), as before. Pure: the
 * entries come from a tree listing.
 */
import { WorkflowHostError } from "../errors.js";
import { runsPrefix } from "./paths.js";
import type { BadEvent } from "./run-log.js";

/** Name of an entry of `blobs/`: 64 lowercase hex characters. */
export const BLOB_NAME = /^[0-9a-f]{64}$/;

/** The part of a run folder a path inside it belongs to. */
export type RunFolderPart = "events" | "events.jsonl" | "blobs" | "grants.json" | "parts";

/** One entry of a tree listing, as the layout rules need it. */
export interface LayoutEntry {
  readonly name: string;
  /** "blob", "tree", or anything else a pushed tree may hold (a gitlink). */
  readonly type: string;
  readonly oid: string;
  /** Git's mode when not a plain file ("120000" for a symlink, "100755" executable). */
  readonly mode?: string;
}

/** A run folder's listing, sorted into its parts. */
export interface RunFolderLayout<E extends LayoutEntry = LayoutEntry> {
  readonly events: E | null;
  readonly compacted: E | null;
  readonly blobs: E | null;
  /** Strays and misplaced parts, one problem each. */
  readonly problems: readonly BadEvent[];
}

/** True for a blob entry holding plain bytes (not a symlink, folder or gitlink). */
export function isPlainFile(entry: { readonly type: string; readonly mode?: string }): boolean {
  return entry.type === "blob" && entry.mode !== "120000";
}

/**
 * Sorts the entries of `runs/<runId>/` into the parts of the layout above.
 * @returns the `events/`, `events.jsonl` and `blobs/` entries (null when absent) and one
 *   problem per entry that does not belong
 */
export function runFolderLayout<E extends LayoutEntry>(runId: string, entries: readonly E[]): RunFolderLayout<E> {
  let events: E | null = null;
  let compacted: E | null = null;
  let blobs: E | null = null;
  const problems: BadEvent[] = [];
  const strays: E[] = [];
  for (const entry of entries) {
    if (entry.name === "events" && entry.type === "tree") events = entry;
    else if (entry.name === "events.jsonl" && isPlainFile(entry)) compacted = entry;
    else if (entry.name === "blobs" && entry.type === "tree") blobs = entry;
    else if ((entry.name === "grants.json" && isPlainFile(entry)) || (entry.name === "parts" && entry.type === "tree")) continue;
    else strays.push(entry);
  }
  for (const entry of strays) problems.push(strayInRun(runId, entry.name, entry.type));
  if (blobs !== null && events === null && compacted === null) {
    const path = `${runsPrefix}${runId}/blobs`;
    problems.push(problem(runId, path, `${path}: a run folder without a log (events/ or events.jsonl) holds only grants.json and parts/`));
    blobs = null;
  }
  return { events, compacted, blobs, problems };
}

/** One problem per entry of `runs/<runId>/blobs/` that is not a plain file named by 64 lowercase hex. */
export function blobFolderProblems(runId: string, entries: readonly LayoutEntry[]): BadEvent[] {
  const out: BadEvent[] = [];
  for (const entry of entries) {
    const path = `${runsPrefix}${runId}/blobs/${entry.name}`;
    if (!BLOB_NAME.test(entry.name)) out.push(problem(runId, path, `${path}: a blob's name is 64 lowercase hex characters`));
    else if (!isPlainFile(entry)) out.push(problem(runId, path, `${path} is a ${entry.type === "tree" ? "folder" : entry.type === "blob" ? "symlink" : entry.type}, not a blob file`));
  }
  return out;
}

/**
 * Places a path inside a run folder (`rest` is what follows `runs/<runId>/`).
 * @returns the part, or null when the path belongs to no part of the layout (a stray, a file
 *   nested where the layout has none, a blob with a bad name)
 */
export function runFolderPart(rest: string): RunFolderPart | null {
  const [head = "", ...tail] = rest.split("/");
  if (head === "events" && tail.length > 0) return "events";
  if (head === "events.jsonl" && tail.length === 0) return "events.jsonl";
  if (head === "grants.json" && tail.length === 0) return "grants.json";
  if (head === "parts" && tail.length > 0) return "parts";
  if (head === "blobs" && tail.length === 1 && BLOB_NAME.test(tail[0] ?? "")) return "blobs";
  return null;
}

/**
 * A stray entry of a run folder.
 * @param type the entry's type in its tree listing when known: a gitlink ("commit") is named as one
 */
export function strayInRun(runId: string, name: string, type?: string): BadEvent {
  const path = `${runsPrefix}${runId}/${name}`;
  const what = type === "commit" ? "is a gitlink (a submodule commit), which a run folder does not hold" : "is not part of the run's folder";
  return problem(runId, path, `${path} ${what}; allowed: events/<seq>.json, events.jsonl, blobs/<64 hex>, grants.json, parts/`);
}

/** A blob (or the sealed log) changed after it was written. */
export function immutableChangedProblem(runId: string, path: string, status: "modified" | "deleted"): BadEvent {
  return problem(runId, path, `${path} was ${status} after it was written; it is immutable`);
}

function problem(runId: string, path: string, detail: string, seq: number | null = null): BadEvent {
  return { runId, path, seq, error: new WorkflowHostError("event_invalid", detail, { path, seq }) };
}
