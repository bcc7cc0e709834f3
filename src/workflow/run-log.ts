/**
 * Reading one run's log through the repo store. Reads are lenient (a bad event is reported and
 * skipped, never fatal). Appends are in `run-log-append.ts`; verbs write through
 * `run-log-writer.ts`.
 */
import { DEFAULT_REF } from "../substrate/ref-name.js";
import { describeValue, WorkflowHostError } from "../errors.js";
import type { CommittedReads, DirEntry, Principal, RepoStore, WriteResult } from "../substrate/types.js";
import { LruCache } from "../substrate/lru-cache.js";
import { isDamagedObject, isUnreadableObject } from "../substrate/object-store.js";
import { isRegularFileMode } from "../substrate/tree-object.js";
import { isTerminalEventType } from "./event-shapes.js";
import { DEFAULT_MAX_EVENT_BYTES, parseEvent, serializeEvent } from "./events.js";
import { checkCompactedLog, foldProblem, notEndedProblem } from "./compacted-log.js";
import { afterTerminalProblem, scheduleProblem, sequenceProblems } from "./log-problems.js";
import { type ParsedEventCache, sharedParsedEvents } from "./parsed-event-cache.js";
import { compactedLogPath, parseEventPathName, runEventsPrefix, runsPrefix } from "./paths.js";
import { blobFolderProblems, runFolderLayout, type RunFolderLayout } from "./run-folder.js";
import { applyEvent, createRunStateFold, reduceRunState, reduceRunStateWithProblems, type ScheduleProblem } from "./run-state.js";
import type { RunEvent, RunState } from "./types.js";
import { WORKFLOW_RUN_KIND } from "./workflow-run-kind.js";
import { type EventsFolder, firstAbove, fromEntries, indexEventsFolder, openEventsFolder } from "./events-folder.js";
// A page asks the run's summary whether the log ended before it (run-log-summary.ts reads through
// this module too: a cycle of functions only, nothing used while the modules load).
import { type RunLogSummary, summarizeRunLog } from "./run-log-summary.js";

/**
 * Something wrong in a run's log, reported and skipped, never fatal: an event file that could
 * not be read as an event, or (in `RunLog.problems`) a break of the log's rules.
 */
export interface BadEvent {
  readonly runId: string;
  readonly path: string;
  /** The seq from the file name, or null when the name itself is not `<seq>.json`. */
  readonly seq: number | null;
  readonly error: WorkflowHostError;
}

/** One run's log as read at one commit. */
export interface RunLog {
  readonly runId: string;
  /**
   * Valid events in numeric seq order, up to and including a terminal event: from the event
   * files, or from a valid sealed `events.jsonl` when it stands alone (the same events).
   */
  readonly events: readonly RunEvent[];
  /** Entries that are not readable event files (bad bytes, bad names, folders, symlinks, gitlinks). */
  readonly bad: readonly BadEvent[];
  /**
   * Breaks of the log's rules by otherwise readable files, as only a `git push` can make them:
   * a first seq above 1 and missing seqs (reported; the events around them are kept, so nothing
   * valid is lost), events after a terminal event (reported and left out of `events`: a run
   * that ended takes nothing more, as the reducer says), and (from `readRunLog`) entries of the
   * run folder beside its log.
   */
  readonly problems: readonly BadEvent[];
  /**
   * Highest seq among the event file names, valid or not (and of a valid sealed log standing
   * alone), or -1 for none. The next append goes to `maxFileSeq + 1`, so a bad file is never
   * overwritten and seqs stay dense.
   */
  readonly maxFileSeq: number;
  /** The seq the next appended event gets: `maxFileSeq + 1`, and 1 for an empty log. */
  readonly nextSeq: number;
  readonly state: RunState;
  /**
   * Set by {@link readRunLog} given the run folder's oid (`runTreeOid`): the oid of its `events`
   * entry at the commit read (what `treeOid("runs/<runId>/events")` answers there), null when
   * there is none, so a caller that keeps it need not find it again from the root.
   */
  readonly eventsOid?: string | null;
  /**
   * Set by {@link readRunLog} given the run folder's oid, as {@link eventsOid}: the blob oid of
   * the event file `<maxFileSeq>.json` (the log's last file) when it is a regular file, else
   * null; what the recovery index keeps so a start can check that object is still stored
   * (design notes §74).
   */
  readonly lastEventOid?: string | null;
}

export interface ReadRunLogOptions {
  /** Largest event accepted on read (bytes, default 1 MiB). */
  readonly maxEventBytes?: number;
}

/** What {@link readRunLog} reads besides {@link ReadRunLogOptions}. */
export interface ReadRunLogAtOptions extends ReadRunLogOptions, Pick<ReadRunLogFromFilesOptions, "parsedEvents"> {
  /**
   * Awaited before each event folded into the state, so a long fold gives the event loop a turn
   * (a time slicer's `pause`, src/time/time-slicer.ts). Default: none; a long log (over
   * READ_SLICE_ENTRIES events) still gives a turn every READ_SLICE_ENTRIES events.
   */
  readonly pause?: () => Promise<void>;
  /**
   * The oid of `runs/<runId>` at the commit `reads` is pinned to, when the caller has it (a
   * recovery takes each run's from the listing of `runs/`): the run folder and its `events/`
   * are then listed by oid (`CommittedReads.listTree`), not found from the root by name, three
   * walks down `runs/` per run. It must be that folder's oid at those reads; without it, or
   * with reads that cannot list by oid, the folders are found by path.
   */
  readonly runTreeOid?: string;
}

/** What an entry under `events/` is when it is not a regular file. */
export type NotAFile = "folder" | "symlink" | "gitlink (a submodule commit)" | "folder, symlink or gitlink";

/** What {@link readRunLogFromFiles} reads besides the bytes. */
export interface ReadRunLogFromFilesOptions extends ReadRunLogOptions {
  /**
   * Blob oid of each file (by name), when known: a file whose oid was parsed before is not
   * parsed again (see parsed-event-cache.ts). Files without an oid are always parsed.
   */
  readonly oids?: ReadonlyMap<string, string>;
  /** Where parsed events are remembered by oid (default: the process-wide cache; null: nowhere). */
  readonly parsedEvents?: ParsedEventCache | null;
}

/**
 * Reads a run's events from the files directly under `runs/<runId>/events/`.
 * @param files name → bytes of the regular files (e.g. what `writeTreePreservingPrefix` hands
 *   to `merge`)
 * @param notFiles names of the other entries there (folders, symlinks): reported as bad, and
 *   their seqs are taken, so nothing is ever appended over them
 * @returns the run log; bad files and rule breaks are listed with path and seq, never thrown
 */
export function readRunLogFromFiles(
  runId: string,
  files: ReadonlyMap<string, Uint8Array>,
  options: ReadRunLogFromFilesOptions = {},
  notFiles: ReadonlyMap<string, NotAFile> = new Map(),
): RunLog {
  const reader = new LogReader(runId, options);
  for (const [name, bytes] of files) reader.file(name, () => bytes, options.oids?.get(name));
  for (const [name, what] of notFiles) reader.notFile(name, what);
  return reader.finish();
}

/**
 * Reads a run's log at the commit `reads` is pinned to. Entries that are not regular files (a
 * folder or a symlink where an event should be) are reported as bad events, never read. Events
 * parsed before (by blob oid) are not read or parsed again.
 *
 * A long log (over 2,048 entries) is read a slice at a time with a turn of the event loop between
 * two, its folder indexed from its stored bytes when big (see events-folder.ts), its blobs read
 * as a walk (`CommittedReads.scan`) and, unless `parsedEvents` is given, not put in the
 * process-wide parsed-event cache: the same log, without a stretch of seconds in one piece.
 *
 * The run folder is checked against the original layout (see run-folder.ts): `blobs/`,
 * `grants.json` and `parts/` are accepted silently, anything else is a problem. A sealed
 * `events.jsonl` (see compacted-log.ts) that is valid is the run's log, read identically from
 * either form: beside the event files it must be their exact fold and the run must have ended;
 * alone, its lines are the events. One that is not valid is one problem and is otherwise
 * ignored: it neither ends the run nor moves the next seq.
 *
 * An object of the run that is not in the repository (a disk fault, a bad copy, a partial fetch),
 * or is there but fails its own check (damaged: a torn loose file, a bad pack entry; see
 * {@link missingObjectError}): an event file's blob is a bad event at its seq (`object_missing`,
 * or `object_corrupt` for a damaged one; the other events fold as around any bad event), a sealed
 * log's or `blobs/` folder's a problem.
 * @throws `object_missing` or `object_corrupt` naming the run (`data.runId`, `data.path`
 *   `runs/<runId>` or `runs/<runId>/events`; see {@link isMissingRunObject}) when the run's folder
 *   or its `events/` folder cannot be read: nothing of the log can be read; any other read error
 *   as the store raises it (an I/O error, a missing or damaged `runs/` folder)
 */
export async function readRunLog(reads: CommittedReads, runId: string, options: ReadRunLogAtOptions = {}): Promise<RunLog> {
  const { layout, strays, count, entryAt, eventsOid } = await listLogForRead(reads, runId, options.runTreeOid);
  // A long log is read as a walk (each blob once, the store's caches left alone) and, unless the
  // caller names a cache, without the process-wide parsed-event cache: its events would push out
  // what the running host reads again, and whoever reads such a log keeps what it needs.
  const long = count > READ_SLICE_ENTRIES;
  const blobs = long ? (reads.scan?.() ?? reads) : reads;
  const reader = new LogReader(runId, long && options.parsedEvents === undefined ? { ...options, parsedEvents: null } : options);
  const eventFiles: { seq: number; oid: string }[] = [];
  // The file with the highest seq so far and its blob oid (see RunLog.lastEventOid).
  let lastSeq = -1;
  let lastOid: string | null = null;
  // A slice's blobs are read in one call when the reads can (see CommittedReads.readBlobsByOid);
  // a long log a slice at a time, the event loop given a turn between two (a run's whole log of
  // 200,000 events was one stretch of seconds).
  for (let from = 0; from < count; from += READ_SLICE_ENTRIES) {
    if (from > 0) await new Promise((resolve) => setImmediate(resolve));
    const to = Math.min(count, from + READ_SLICE_ENTRIES);
    const slice: DirEntry[] = [];
    for (let i = from; i < to; i++) slice.push(entryAt(i));
    const wanted: string[] = [];
    const toRead: boolean[] = [];
    for (const entry of slice) {
      const regular = entry.type === "blob" && isRegularFileMode(entry.mode);
      const read = regular && !reader.cached(entry.name, entry.oid);
      toRead.push(read);
      if (read) wanted.push(entry.oid);
    }
    let contents: readonly Uint8Array[] | null = null;
    try {
      if (blobs.readBlobsByOid !== undefined && wanted.length > 0) contents = await blobs.readBlobsByOid(wanted);
    } catch (error) {
      // One of them is not there: each read alone below, the missing one a bad event.
      if (!isUnreadableObject(error)) throw error;
    }
    let next = 0;
    for (let i = from; i < to; i++) {
      const entry = slice[i - from] as DirEntry;
      const seq = parseEventPathName(entry.name);
      const regular = entry.type === "blob" && isRegularFileMode(entry.mode);
      if (seq !== null && seq > lastSeq) {
        lastSeq = seq;
        lastOid = regular ? entry.oid : null;
      }
      // Kept only to check a sealed log against (most runs have none).
      if (seq !== null && layout.compacted !== null) eventFiles.push({ seq, oid: regular ? entry.oid : "" });
      if (entry.type === "tree") reader.notFile(entry.name, "folder");
      else if (entry.type === "commit") reader.notFile(entry.name, "gitlink (a submodule commit)");
      else if (!regular) reader.notFile(entry.name, "symlink");
      else if (toRead[i - from] === true) {
        if (contents !== null) reader.file(entry.name, contents[next++] as Uint8Array, entry.oid);
        else {
          let bytes: Uint8Array;
          try {
            bytes = await blobs.readBlobByOid(entry.oid);
          } catch (error) {
            if (!isUnreadableObject(error)) throw error;
            reader.missing(entry.name, entry.oid, error);
            continue;
          }
          reader.file(entry.name, bytes, entry.oid);
        }
      }
    }
  }
  // Given a pause (the schedule controls, the readers behind HTTP), folded with the event loop
  // given a turn every few ms, long log or not: one event can cost a cron step (a backfill fire
  // checked against its series' slots), and 2,048 of them did hold the loop for half a second.
  // Without one (the scheduler's recovery and fire path, which read every run), a short log is
  // folded in one go and a long one with a turn every READ_SLICE_ENTRIES events, as before: an
  // await per event there would cost every recovery a microtask per event of the deployment.
  let log = options.pause !== undefined ? await reader.finishInSlices(options.pause) : long ? await reader.finishInSlices() : reader.finish();
  const sealedBytes = layout.compacted === null ? null : await readOrMissing(reads, runId, compactedLogPath(runId), layout.compacted.oid, strays);
  if (layout.compacted !== null && sealedBytes !== null) {
    const bytes = sealedBytes;
    if (eventFiles.length === 0) {
      const sealed = checkCompactedLog(runId, bytes, withLimit({}, options.maxEventBytes));
      if (sealed.problem !== null) strays.push(sealed.problem);
      else {
        const maxFileSeq = Math.max(log.maxFileSeq, sealed.events.at(-1)?.seq ?? -1);
        log = { ...log, events: sealed.events, maxFileSeq, nextSeq: nextSeqAfter(maxFileSeq), state: reduceRunState(runId, sealed.events) };
      }
    } else {
      eventFiles.sort((a, b) => a.seq - b.seq);
      // A missing event file (a bad event already) reads as empty: the sealed log then does not fold.
      const files = await Promise.all(eventFiles.map((f) => (f.oid === "" ? new Uint8Array() : reads.readBlobByOid(f.oid).catch((error: unknown) => (isUnreadableObject(error) ? new Uint8Array() : Promise.reject(error))))));
      const unfolded = foldProblem(runId, bytes, files);
      if (unfolded !== null) strays.push(unfolded);
      else if (log.state.terminal === null) strays.push(notEndedProblem(runId));
    }
  }
  if (options.runTreeOid !== undefined) log = { ...log, eventsOid, lastEventOid: lastSeq === log.maxFileSeq ? lastOid : null };
  return strays.length === 0 ? log : { ...log, problems: [...strays, ...log.problems] };
}

/** Entries of `events/` {@link readRunLog} reads and parses between two turns of the event loop. */
const READ_SLICE_ENTRIES = 2_048;

/** Events in a page when no `limit` is given. */
export const DEFAULT_PAGE_EVENTS = 100;
/** Largest `limit` of a page. */
export const MAX_PAGE_EVENTS = 1_000;
/** Event bytes a page reads when no `maxBytes` is given (4 MiB). */
export const DEFAULT_PAGE_BYTES = 4 * 1024 * 1024;

/** Which part of a run's log {@link readRunLogPage} reads. */
export interface RunLogPageOptions extends ReadRunLogOptions, Pick<ReadRunLogFromFilesOptions, "parsedEvents"> {
  /** Cursor: the page holds seqs above this one (a previous page's `nextAfter`). Default -1: from the first event. */
  readonly after?: number;
  /** Most entries in the page (events and unreadable entries), 1..{@link MAX_PAGE_EVENTS}; default {@link DEFAULT_PAGE_EVENTS}. */
  readonly limit?: number;
  /**
   * Byte budget (event bytes, >= 1; default {@link DEFAULT_PAGE_BYTES}; an event the parsed-event
   * cache holds counts as its JSON text): the page ends after the event that reaches it, so it
   * always holds at least one entry, and it reads at most `maxBytes` plus one event's bytes.
   */
  readonly maxBytes?: number;
  /**
   * The run's summary at the same commit, when the caller has it (see run-log-summary.ts): a page
   * past the first entry asks it whether the log ended before the page; without it, the summary
   * is looked up (kept by run tree oid) or folded once.
   */
  readonly summary?: RunLogSummary;
}

/** One page of a run's log: the entries with the lowest seqs above the cursor. */
export interface RunLogPage {
  readonly runId: string;
  /** The cursor the page was read from. */
  readonly after: number;
  /** Valid events of the page, in seq order. */
  readonly events: readonly RunEvent[];
  /** Entries of the page that are not readable events (bad bytes, folders, symlinks), reported and skipped. */
  readonly bad: readonly BadEvent[];
  /**
   * Breaks of the log's rules seen within the page: missing seqs between the cursor and the
   * page's last seq, and events after a terminal event (skipped). Rules that need the whole log
   * (schedule events the controls never write, the sealed log beside the files, strays in the
   * run folder) are the run's summary's to report (see run-log-summary.ts); such events are
   * listed here as read.
   */
  readonly problems: readonly BadEvent[];
  /**
   * The `after` of the next page (the highest seq this page covers), or null when the log has
   * nothing beyond this page: no entry with a higher seq, or the page reached the run's
   * terminal event (nothing follows it).
   */
  readonly nextAfter: number | null;
}

/**
 * Reads one page of a run's log at the commit `reads` is pinned to: the entries of
 * `runs/<runId>/events/` with the lowest seqs above `after`, at most `limit` of them and about
 * `maxBytes` of event bytes. Only the page's blobs are read (and only those the parsed-event
 * cache does not hold): the folder's stored bytes, indexed by seq, are all that is read of the
 * rest, so paging through a log of a million events costs one index per version of the log and
 * a page of blobs per call, never the whole log in memory. Decoding is {@link readRunLog}'s: an unreadable entry is
 * reported in `bad` and skipped, and the page goes on past it.
 *
 * Event file names sort as text in a git tree (`10.json` before `2.json`), so the page is
 * picked from the folder's seqs in numeric order (see events-folder.ts): indexed once per
 * version of the folder from its stored bytes, in slices that give the event loop a turn (no
 * object per entry), so each further page costs a binary search and its own entries.
 *
 * A page past the first entry agrees with the full read about the run's end: when a terminal
 * event lies at or below `after`, the entries above it are not events of the log (only a push
 * can put them there) and the page holds none, each reported as a problem. That is the run's
 * summary's to know (see {@link RunLogPageOptions.summary}): the first such page of a version of
 * the run not summarised before folds it once.
 *
 * A run whose log is only its sealed `events.jsonl` (see compacted-log.ts) is paged from that
 * file: it is one blob, read whole; it is checked whole once (its line index is then kept by
 * blob oid, ~8 bytes a line), so each further page parses only its own lines; an invalid one
 * reads as an empty log here. A run with
 * no log is an empty page. Concurrent calls are independent (reads are pinned to one commit).
 * @throws page_invalid for an `after` that is not a whole number >= -1, a `limit` outside
 *   1..{@link MAX_PAGE_EVENTS} or a `maxBytes` that is not a whole number >= 1; id_invalid or
 *   path_violation for a `runId` that cannot name a run folder; errors of the reads themselves
 *   (object_corrupt, io_failed) as they come
 */
export async function readRunLogPage(reads: CommittedReads, runId: string, options: RunLogPageOptions = {}): Promise<RunLogPage> {
  const after = options.after ?? -1;
  const limit = options.limit ?? DEFAULT_PAGE_EVENTS;
  const maxBytes = options.maxBytes ?? DEFAULT_PAGE_BYTES;
  checkPageOption("after", after, -1, Number.MAX_SAFE_INTEGER);
  checkPageOption("limit", limit, 1, MAX_PAGE_EVENTS);
  checkPageOption("maxBytes", maxBytes, 1, Number.MAX_SAFE_INTEGER);
  const { layout, folder } = await openRunFolder(reads, runId);
  if (folder.seqs.length === 0 && layout.compacted !== null) return sealedPage(reads, runId, layout.compacted.oid, after, limit, options.maxEventBytes);
  const from = firstAbove(folder.seqs, after);
  const window: { seq: number; entry: DirEntry }[] = [];
  for (let k = from; k < folder.seqs.length && window.length < limit; k += 1) {
    window.push({ seq: folder.seqs[k] as number, entry: folder.entry(folder.at[k] as number) });
  }
  const above = folder.seqs.length - from - window.length;
  // A terminal event at or below the cursor ends the log before the page: what the window holds
  // is after it, reported as the full read reports it, and not read. Only the run's summary
  // knows (kept by run tree oid, shared with the run's view): asked only for a page that starts
  // past the first entry and has something to show.
  if (window.length > 0 && after >= (folder.seqs[0] as number)) {
    const summary = options.summary ?? (await summarizeRunLog(reads, runId, { ...withLimit({}, options.maxEventBytes), ...(options.parsedEvents === undefined ? {} : { parsedEvents: options.parsedEvents }) }));
    const ended = summary.terminalSeq;
    if (ended !== null && ended <= after && summary.state.terminal !== null) {
      const type = summary.state.terminal;
      return { runId, after, events: [], bad: [], problems: window.map((w) => afterTerminalProblem(runId, w.seq, type, ended)), nextAfter: null };
    }
  }
  const reader = new LogReader(runId, options);
  const problems: BadEvent[] = [];
  let bytes = 0;
  let covered = 0;
  let terminal: RunEvent | null = null;
  const events: RunEvent[] = [];
  const bad: BadEvent[] = [];
  for (const { entry } of window) {
    if (bytes >= maxBytes) break;
    covered += 1;
    let read: number | null = 0;
    if (entry.type === "tree") reader.notFile(entry.name, "folder");
    else if (entry.type === "commit") reader.notFile(entry.name, "gitlink (a submodule commit)");
    else if (!isRegularEntry(entry)) reader.notFile(entry.name, "symlink");
    else if (reader.cached(entry.name, entry.oid)) read = null;
    else {
      let content: Uint8Array | null = null;
      try {
        content = await reads.readBlobByOid(entry.oid);
      } catch (error) {
        // Not in the repository: a bad event of the page (object_missing), as readRunLog reads it.
        if (!isUnreadableObject(error)) throw error;
        reader.missing(entry.name, entry.oid, error);
      }
      if (content !== null) {
        read = content.byteLength;
        reader.file(entry.name, content, entry.oid);
      }
    }
    const taken = reader.take();
    bad.push(...taken.bad);
    const event = taken.events[0];
    if (event === undefined) continue;
    // A cached event counts as its JSON text, so a page is the same whatever the cache holds.
    bytes += read ?? JSON.stringify(event).length;
    events.push(event);
    if (isTerminalEventType(event.type)) {
      terminal = event;
      break;
    }
  }
  const coveredSeqs = window.slice(0, covered).map((w) => w.seq);
  problems.push(...sequenceProblems(runId, coveredSeqs, after));
  if (terminal !== null) {
    // Nothing follows a terminal event: the rest of the window is reported, not read.
    for (const late of window.slice(covered)) problems.push(afterTerminalProblem(runId, late.seq, terminal.type, terminal.seq));
  }
  problems.sort((a, b) => (a.seq ?? -1) - (b.seq ?? -1));
  const last = coveredSeqs.at(-1);
  const more = terminal === null && last !== undefined && (covered < window.length || above > 0);
  return { runId, after, events, bad, problems, nextAfter: more ? last : null };
}

/** A page of a run whose log is its sealed `events.jsonl` alone (one blob: read whole). */
async function sealedPage(reads: CommittedReads, runId: string, sealedOid: string, after: number, limit: number, maxEventBytes: number | undefined): Promise<RunLogPage> {
  const bytes = await reads.readBlobByOid(sealedOid);
  const index = sealedIndexOf(runId, sealedOid, bytes, maxEventBytes);
  const empty: RunLogPage = { runId, after, events: [], bad: [], problems: [], nextAfter: null };
  if (index === null) return empty;
  // The log is checked: its seqs are dense from `firstSeq`, one a line, so line k holds firstSeq + k.
  const lines = index.starts.length - 1;
  const from = Math.max(0, Math.min(lines, after + 1 - index.firstSeq));
  const to = Math.min(lines, from + limit);
  const events: RunEvent[] = [];
  const opts = withLimit({}, maxEventBytes);
  for (let k = from; k < to; k += 1) {
    const line = bytes.subarray(index.starts[k] as number, (index.starts[k + 1] as number) - 1);
    events.push(parseEvent(line, { path: `${compactedLogPath(runId)}:${k + 1}`, ...opts }));
  }
  return { ...empty, events, nextAfter: to < lines ? (events.at(-1)?.seq ?? null) : null };
}

/** Where each line of a checked sealed log starts (and, last, where the file ends), and its first seq. */
interface SealedIndex {
  readonly firstSeq: number;
  readonly starts: Float64Array;
}

/**
 * Sealed logs checked for paging, by blob oid and event size limit: `null` for an invalid one.
 * Weighed by lines (8 bytes each), at most ~4 M lines (~32 MB) kept.
 */
const sealedIndexes = new LruCache<SealedIndex | null>(4_000_000);

/**
 * The line index of a sealed log, checked whole once (checkCompactedLog) and then kept, so each
 * further page parses only its own lines; null when the log is invalid (read as empty here).
 */
function sealedIndexOf(runId: string, oid: string, bytes: Uint8Array, maxEventBytes: number | undefined): SealedIndex | null {
  const key = `${oid}:${maxEventBytes ?? DEFAULT_MAX_EVENT_BYTES}`;
  const known = sealedIndexes.get(key);
  if (known !== undefined) return known;
  const check = checkCompactedLog(runId, bytes, withLimit({}, maxEventBytes));
  const first = check.events[0];
  if (check.problem !== null || first === undefined) {
    sealedIndexes.set(key, null, 1);
    return null;
  }
  const starts = new Float64Array(check.events.length + 1);
  let at = 0;
  for (let k = 0; k < check.events.length; k += 1) {
    starts[k] = at;
    at = bytes.indexOf(0x0a, at) + 1;
  }
  starts[check.events.length] = at;
  const index = { firstSeq: first.seq, starts };
  sealedIndexes.set(key, index, 1 + starts.length);
  return index;
}

/** Checks one option of a page (see {@link RunLogPageOptions}). */
function checkPageOption(name: string, value: number, min: number, max: number): void {
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    const allowed = max === Number.MAX_SAFE_INTEGER ? `a whole number >= ${min}` : `a whole number in ${min}..${max}`;
    throw new WorkflowHostError("page_invalid", `${name} ${describeValue(value)} is not valid for a page of a run's log; allowed: ${allowed}`, { field: name, value });
  }
}

/** A run folder as a reader of part of its log starts: its layout, what lies beside the log, and `events/` indexed by seq. */
export interface RunFolderIndex {
  readonly layout: RunFolderLayout<DirEntry>;
  /** Entries of the run folder outside its layout (see run-folder.ts), one problem each. */
  readonly strays: BadEvent[];
  readonly folder: EventsFolder;
}

/**
 * Lists `runs/<runId>` and indexes its `events/` folder by seq (see events-folder.ts): from the
 * folder's stored bytes, in slices, where the reads give them; never an event's blob. A `blobs/`
 * folder that cannot be read is one problem in `strays` (as {@link readRunLog} reports it).
 * @throws `object_missing` or `object_corrupt` naming the run when its folder or its `events/`
 *   folder cannot be read, as {@link readRunLog} throws it (see {@link isMissingRunObject});
 *   other read errors as the store raises them (a missing or damaged `runs/` folder)
 * @internal shared by the readers of run-log.ts and run-log-summary.ts
 */
export async function openRunFolder(reads: CommittedReads, runId: string): Promise<RunFolderIndex> {
  const runPath = `${runsPrefix}${runId}`;
  let runEntries: readonly DirEntry[];
  try {
    runEntries = await reads.listDir(runPath);
  } catch (error) {
    throw await runFolderMissing(reads, runId, undefined, error);
  }
  const layout = runFolderLayout(runId, runEntries);
  const strays: BadEvent[] = [...layout.problems];
  if (layout.blobs !== null) {
    const blobsOid = layout.blobs.oid;
    try {
      strays.push(...blobFolderProblems(runId, await reads.listDir(`${runPath}/blobs`)));
    } catch (error) {
      if (!isUnreadableObject(error) || errorOid(error) !== blobsOid) throw error;
      strays.push({ runId, path: `${runPath}/blobs`, seq: null, error: missingObjectError(runId, `${runPath}/blobs`, blobsOid, error) });
    }
  }
  const eventsPath = runEventsPrefix(runId).slice(0, -1);
  const oid = layout.events === null ? null : layout.events.oid;
  try {
    return { layout, strays, folder: await openEventsFolder(reads, eventsPath, oid) };
  } catch (error) {
    if (oid === null || !isUnreadableObject(error) || errorOid(error) !== oid) throw error;
    throw missingObjectError(runId, eventsPath, oid, error);
  }
}

/** An `events/` folder's stored size above which {@link readRunLog} indexes its bytes instead of listing it (~1,600 entries). */
const BIG_EVENTS_FOLDER_BYTES = 64 * 1024;

/**
 * A run folder as {@link readRunLog} reads it: `count` entries of `events/`, taken one by one.
 * A big folder is indexed from its stored bytes (see events-folder.ts; no object per entry until
 * taken) and a long one is taken in seq order, names that are not seqs first, so what the reader
 * collects is sorted already; a small one is its listing, as listed.
 */
async function listLogForRead(
  reads: CommittedReads,
  runId: string,
  runTreeOid: string | undefined,
): Promise<{ layout: RunFolderLayout<DirEntry>; strays: BadEvent[]; count: number; entryAt: (i: number) => DirEntry; eventsOid: string | null }> {
  const folderPath = runEventsPrefix(runId).slice(0, -1);
  // By oid when the caller has the run folder's (see ReadRunLogAtOptions.runTreeOid): the folders
  // below it are then listed by theirs too (a folder of the layout is a tree entry).
  let byOid = runTreeOid !== undefined && reads.listTree !== undefined ? (reads.listTree.bind(reads) as (oid: string) => Promise<readonly DirEntry[]>) : null;
  const runPath = `${runsPrefix}${runId}`;
  let runEntries: readonly DirEntry[];
  try {
    runEntries = byOid === null ? await reads.listDir(runPath) : await byOid(runTreeOid as string);
  } catch (error) {
    throw await runFolderMissing(reads, runId, runTreeOid, error);
  }
  // A name a foreign writer stored twice in the run folder (`events` as a file and as a folder)
  // is found by path as the tree lookup answers it, not as the layout picks it from the listing:
  // such a run is read by path, exactly as without its oid, and its `events` oid found by path.
  let eventsOid: string | null | undefined;
  if (byOid !== null && hasNameTwice(runEntries)) {
    byOid = null;
    runEntries = await reads.listDir(`${runsPrefix}${runId}`);
    eventsOid = await reads.treeOid(folderPath);
  } else {
    eventsOid = eventsEntryOid(runEntries);
  }
  const layout = runFolderLayout(runId, runEntries);
  const strays: BadEvent[] = [...layout.problems];
  if (layout.blobs !== null) {
    const blobsOid = layout.blobs.oid;
    try {
      strays.push(...blobFolderProblems(runId, byOid === null ? await reads.listDir(`${runPath}/blobs`) : await byOid(blobsOid)));
    } catch (error) {
      // Not read for the log: its loss is the run's problem, not the end of its log.
      if (!isUnreadableObject(error) || errorOid(error) !== blobsOid) throw error;
      strays.push({ runId, path: `${runPath}/blobs`, seq: null, error: missingObjectError(runId, `${runPath}/blobs`, blobsOid, error) });
    }
  }
  const oid = layout.events?.oid ?? null;
  try {
    return await listEvents(reads, runId, byOid, layout, strays, eventsOid);
  } catch (error) {
    if (oid === null || !isUnreadableObject(error) || errorOid(error) !== oid) throw error;
    throw missingObjectError(runId, folderPath, oid, error);
  }
}

/** The rest of {@link listLogForRead}: `events/` listed or indexed. */
async function listEvents(
  reads: CommittedReads,
  runId: string,
  byOid: ((oid: string) => Promise<readonly DirEntry[]>) | null,
  layout: RunFolderLayout<DirEntry>,
  strays: BadEvent[],
  eventsOid: string | null,
): Promise<{ layout: RunFolderLayout<DirEntry>; strays: BadEvent[]; count: number; entryAt: (i: number) => DirEntry; eventsOid: string | null }> {
  const folderPath = runEventsPrefix(runId).slice(0, -1);
  const oid = layout.events?.oid ?? null;
  const content = oid === null || reads.readTreeBytes === undefined ? null : await reads.readTreeBytes(oid);
  if (oid !== null && content !== null && content.byteLength > BIG_EVENTS_FOLDER_BYTES) {
    const folder = await indexEventsFolder(oid, content);
    // Every entry has its place in the index (a name stored twice, in a foreign tree, takes two).
    if (folder !== null && folder.others.length + folder.at.length === folder.size) {
      const order = entryOrder(folder);
      return { layout, strays, count: order.length, entryAt: (i) => folder.entry(order[i] as number), eventsOid };
    }
  }
  const entries = layout.events === null ? [] : byOid === null ? await reads.listDir(folderPath) : await byOid(layout.events.oid);
  if (entries.length > READ_SLICE_ENTRIES) {
    const folder = fromEntries(entries);
    if (folder.others.length + folder.at.length === entries.length) {
      const order = entryOrder(folder);
      return { layout, strays, count: order.length, entryAt: (i) => entries[order[i] as number] as DirEntry, eventsOid };
    }
  }
  return { layout, strays, count: entries.length, entryAt: (i) => entries[i] as DirEntry, eventsOid };
}

/**
 * The error of an object a run's log names that cannot be read: `object_missing` when it is not
 * in the repository (see isAbsentObject: nowhere, or another type under that oid), `object_corrupt`
 * when it is there but fails its own check (`cause` a damaged object, see isDamagedObject: a
 * truncated loose file, a pack entry that does not inflate or hashes to another oid). `path` is
 * where the run names it (`runs/<runId>`, `runs/<runId>/events`, an event file); `data`: `runId`,
 * `path`, `oid` (and `damaged: true`, `reason`, `pack` when known, for a damaged one).
 */
export function missingObjectError(runId: string, path: string, oid: string, cause?: unknown): WorkflowHostError {
  if (isDamagedObject(cause)) {
    const { reason, pack } = cause.data;
    return new WorkflowHostError(
      "object_corrupt",
      `${path} of run ${runId} is git object ${oid}, which is damaged (${String(reason)}); it is read without it until the object is restored`,
      { runId, path, oid, damaged: true, ...(typeof reason === "string" ? { reason } : {}), ...(typeof pack === "string" ? { pack } : {}) },
      { cause },
    );
  }
  return new WorkflowHostError(
    "object_missing",
    `${path} of run ${runId} is git object ${oid}, which is not in the repository (lost by a disk fault, a bad copy or a partial fetch); it is read without it until the object is restored`,
    { runId, path, oid },
    cause === undefined ? {} : { cause },
  );
}

/**
 * Whether `error` is {@link readRunLog}'s error for a run's object that cannot be read (see
 * {@link missingObjectError}): `object_missing`, or `object_corrupt` naming a run (`data.runId`).
 */
export function isMissingRunObject(error: unknown): error is WorkflowHostError {
  return error instanceof WorkflowHostError && (error.code === "object_missing" || (error.code === "object_corrupt" && typeof error.data.runId === "string" && typeof error.data.path === "string"));
}

/** The oid an `object_corrupt` error names, or "". */
function errorOid(error: unknown): string {
  const oid = error instanceof WorkflowHostError ? error.data.oid : undefined;
  return typeof oid === "string" ? oid : "";
}

/**
 * What a failed listing of the run folder throws: `object_missing` when the missing object is
 * the run folder itself (its oid as given or as found in `runs/`), else `error` as it is (a
 * missing `runs/` folder or root: nothing of the deployment can be read).
 */
async function runFolderMissing(reads: CommittedReads, runId: string, runTreeOid: string | undefined, error: unknown): Promise<unknown> {
  if (!isUnreadableObject(error)) return error;
  let oid: string | null | undefined = runTreeOid;
  if (oid === undefined) {
    try {
      oid = await reads.treeOid(`${runsPrefix}${runId}`);
    } catch {
      return error;
    }
  }
  return oid !== null && errorOid(error) === oid ? missingObjectError(runId, `${runsPrefix}${runId}`, oid, error) : error;
}

/** A blob of the run's folder, or null when it is missing (then one problem in `strays`). */
async function readOrMissing(reads: CommittedReads, runId: string, path: string, oid: string, strays: BadEvent[]): Promise<Uint8Array | null> {
  try {
    return await reads.readBlobByOid(oid);
  } catch (error) {
    if (!isUnreadableObject(error)) throw error;
    strays.push({ runId, path, seq: null, error: missingObjectError(runId, path, oid, error) });
    return null;
  }
}

/** Whether two entries of a listing (sorted by name) share a name. */
function hasNameTwice(entries: readonly DirEntry[]): boolean {
  for (let i = 1; i < entries.length; i++) if ((entries[i] as DirEntry).name === (entries[i - 1] as DirEntry).name) return true;
  return false;
}

/**
 * The oid `treeOid("runs/<runId>/events")` answers, from the run folder's listing: its entry
 * named `events` (a folder, or a file where a push put one), null for none or a gitlink.
 */
function eventsEntryOid(runEntries: readonly DirEntry[]): string | null {
  for (const entry of runEntries) if (entry.name === "events") return entry.type === "commit" ? null : entry.oid;
  return null;
}

/**
 * A folder's handles, names that are not seqs first, then the seqs in order: copied into a typed
 * array (spreading 200,000 handles into an array held the event loop 120–280 ms).
 */
function entryOrder(folder: EventsFolder): Float64Array {
  const order = new Float64Array(folder.others.length + folder.at.length);
  order.set(folder.others);
  order.set(folder.at, folder.others.length);
  return order;
}

/** True for an entry of `events/` that holds plain bytes (not a folder, symlink or gitlink). */
function isRegularEntry(entry: DirEntry): boolean {
  return entry.type === "blob" && isRegularFileMode(entry.mode);
}

/**
 * Collects a log's entries one by one, then sorts and checks them (see {@link RunLog}); or, for
 * a reader that holds only part of a log at a time, hands them over as they come ({@link take}).
 * @internal shared by the readers of run-log.ts and run-log-summary.ts: the one decoder of event files
 */
export class LogReader {
  readonly #runId: string;
  readonly #prefix: string;
  readonly #limit: number | undefined;
  readonly #cache: ParsedEventCache | null;
  readonly #parsed: RunEvent[] = [];
  readonly #bad: BadEvent[] = [];
  readonly #seqs: number[] = [];

  constructor(runId: string, options: ReadRunLogOptions & Pick<ReadRunLogFromFilesOptions, "parsedEvents"> = {}) {
    this.#runId = runId;
    this.#prefix = runEventsPrefix(runId);
    this.#limit = options.maxEventBytes;
    this.#cache = options.parsedEvents === undefined ? sharedParsedEvents : options.parsedEvents;
  }

  /** Takes the entry from the cache when its blob was parsed before; false when it must be read. */
  cached(name: string, oid: string): boolean {
    // Without a cache nothing is taken from one (a recovery reads a million names).
    if (this.#cache === null) return false;
    const seq = parseEventPathName(name);
    if (seq === null || !this.#takeCached(oid, seq)) return false;
    this.#seqs.push(seq);
    return true;
  }

  file(name: string, content: Uint8Array | (() => Uint8Array), oid: string | undefined): void {
    const path = `${this.#prefix}${name}`;
    const seq = parseEventPathName(name);
    if (seq === null) {
      this.#bad.push({
        runId: this.#runId,
        path,
        seq: null,
        error: new WorkflowHostError("event_invalid", `event file name ${JSON.stringify(name)} is not <seq>.json`, { path }),
      });
      return;
    }
    this.#seqs.push(seq);
    if (oid !== undefined && this.#takeCached(oid, seq)) return;
    const bytes = typeof content === "function" ? content() : content;
    const ctx = this.#limit === undefined ? { path, expectedSeq: seq } : { path, expectedSeq: seq, maxEventBytes: this.#limit };
    try {
      this.#parsed.push(oid === undefined || this.#cache === null ? parseEvent(bytes, ctx) : this.#cache.parse(oid, bytes, ctx));
    } catch (error) {
      this.#bad.push({ runId: this.#runId, path, seq, error: asEventError(error, path, seq) });
    }
  }

  /** An entry whose blob is not in the repository, or damaged: a bad event (`object_missing`, `object_corrupt`) at its seq, which stays taken. */
  missing(name: string, oid: string, cause: unknown): void {
    const path = `${this.#prefix}${name}`;
    const seq = parseEventPathName(name);
    if (seq !== null) this.#seqs.push(seq);
    this.#bad.push({ runId: this.#runId, path, seq, error: missingObjectError(this.#runId, path, oid, cause) });
  }

  notFile(name: string, what: NotAFile): void {
    const path = `${this.#prefix}${name}`;
    const seq = parseEventPathName(name);
    if (seq !== null) this.#seqs.push(seq);
    this.#bad.push({ runId: this.#runId, path, seq, error: new WorkflowHostError("event_invalid", `${path} is a ${what}, not an event file`, { path, seq }) });
  }

  /**
   * What was collected since the last call, in the order given (events parsed, entries that are
   * not events), and forgets it (the seqs too): {@link finish} is then of no use.
   */
  take(): { readonly events: RunEvent[]; readonly bad: BadEvent[] } {
    const taken = { events: this.#parsed.splice(0), bad: this.#bad.splice(0) };
    this.#seqs.length = 0;
    return taken;
  }

  finish(): RunLog {
    const sorted = this.#sorted();
    return this.#complete(sorted, reduceRunStateWithProblems(this.#runId, sorted.ended));
  }

  /**
   * As {@link finish}, awaiting `pause` (a time slicer's, when given) before each event folded, and giving
   * the event loop a turn every {@link READ_SLICE_ENTRIES} events in any case: the fold is
   * otherwise one long stretch.
   */
  async finishInSlices(pause?: () => Promise<void>): Promise<RunLog> {
    const sorted = this.#sorted();
    const fold = createRunStateFold(this.#runId);
    const problems: ScheduleProblem[] = [];
    for (let i = 0; i < sorted.ended.length; i += 1) {
      // A turn every READ_SLICE_ENTRIES events whatever the clock says, and one whenever the
      // slicer's slice is used up (a few costly events).
      if (i > 0 && i % READ_SLICE_ENTRIES === 0) await new Promise((resolve) => setImmediate(resolve));
      else if (pause !== undefined) await pause();
      const skipped = fold.apply(sorted.ended[i] as RunEvent);
      if (skipped !== null) problems.push(skipped);
    }
    return this.#complete(sorted, { state: fold.finish(), problems });
  }

  /** The collected events, bad entries and seqs sorted; the events up to a terminal one, and the problems of the seqs and of events after it. */
  #sorted(): SortedLog {
    const runId = this.#runId;
    const parsed = this.#parsed.sort((a, b) => a.seq - b.seq);
    const bad = this.#bad.sort((a, b) => (a.seq ?? -1) - (b.seq ?? -1));
    const seqs = this.#seqs.sort((a, b) => a - b);
    const problems = sequenceProblems(runId, seqs);
    const terminal = parsed.find((e) => isTerminalEventType(e.type));
    const ended = terminal === undefined ? parsed : parsed.filter((e) => e.seq <= terminal.seq);
    for (const late of parsed.slice(ended.length)) problems.push(afterTerminalProblem(runId, late.seq, terminal?.type ?? "", terminal?.seq ?? null));
    return { ended, bad, seqs, problems };
  }

  #complete(sorted: SortedLog, folded: { state: RunState; problems: readonly ScheduleProblem[] }): RunLog {
    const runId = this.#runId;
    const { ended, bad, seqs, problems } = sorted;
    // Schedule events the controls never write are reported and skipped like a late event.
    for (const p of folded.problems) problems.push(scheduleProblem(runId, p.seq, p.detail));
    const skipped = folded.problems.length === 0 ? null : new Set(folded.problems.map((p) => p.seq));
    const events = skipped === null || skipped.size === 0 ? ended : ended.filter((e) => !skipped.has(e.seq));
    problems.sort((a, b) => (a.seq ?? -1) - (b.seq ?? -1));
    const maxFileSeq = seqs.at(-1) ?? -1;
    return { runId, events, bad, problems, maxFileSeq, nextSeq: nextSeqAfter(maxFileSeq), state: folded.state };
  }

  #takeCached(oid: string, seq: number): boolean {
    const event = this.#cache?.get(oid, seq, this.#limit);
    if (event === undefined) return false;
    this.#parsed.push(event);
    return true;
  }
}

/** What {@link LogReader} collected, sorted, before the state is folded. */
interface SortedLog {
  /** The events in seq order up to and including a terminal one. */
  readonly ended: RunEvent[];
  readonly bad: BadEvent[];
  readonly seqs: number[];
  /** Missing seqs and events after the terminal one; the fold's schedule problems are added. */
  readonly problems: BadEvent[];
}

/** Adds `maxEventBytes` to parse/serialise options when given. */
export function withLimit<T extends object>(base: T, maxEventBytes: number | undefined): T & { maxEventBytes?: number } {
  return maxEventBytes === undefined ? base : { ...base, maxEventBytes };
}

function asEventError(error: unknown, path: string, seq: number): WorkflowHostError {
  if (error instanceof WorkflowHostError) return error;
  return new WorkflowHostError("event_invalid", `${path} could not be read as an event`, { path, seq }, { cause: error });
}

/** Seqs start at 1 and stay dense: the next after the highest file name. */
export function nextSeqAfter(maxFileSeq: number): number {
  return Math.max(maxFileSeq + 1, 1);
}
