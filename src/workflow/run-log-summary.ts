/**
 * A run's summary without its log in memory: the state its log folds to, how many events it
 * holds, and what is wrong in it — what `readRunLog` gives beside `events`, for a view that
 * shows a run and pages through its events (see `readRunLogPage`).
 *
 * The state needs every event (a signal consumed at seq 900,000 ends one received at seq 3), so
 * the summary is a full fold, but a streaming one: the `events/` folder is indexed by seq (from
 * its stored bytes, in slices, 12 bytes an entry: see events-folder.ts), then the blobs are read
 * a chunk at a time in seq order, each event applied to the state and dropped. What stays in
 * memory is the folder's bytes and index, the state (pending timers, the
 * signal ids seen — the dedupe set — and the unconsumed signals) and at most `maxReports` bad
 * entries and problems (the rest are counted). A run's summary is a pure function of its tree,
 * so each run's latest summary is kept with the oid of `runs/<runId>` (see
 * {@link RunSummaryCache}): asking again for a run that did not change reads nothing but that
 * oid. The log is append-only, so a run that changed has most often only gained events: then
 * the kept fold goes on with the new events alone (see {@link summarizeRunLog}).
 *
 * A run whose log is only its sealed `events.jsonl` is folded from that file, which is one blob
 * and is read whole.
 */
import { describeValue, WorkflowHostError } from "../errors.js";
import type { CommittedReads, DirEntry, Oid } from "../substrate/types.js";
import { isRegularFileMode } from "../substrate/tree-object.js";
import { isUnreadableObject } from "../substrate/object-store.js";
import { checkCompactedLog, notEndedProblem, notFoldProblem } from "./compacted-log.js";
import { isTerminalEventType } from "./event-shapes.js";
import { afterTerminalProblem, scheduleProblem, sequenceProblems } from "./log-problems.js";
import { DEFAULT_MAX_EVENT_BYTES } from "./events.js";
import type { ParsedEventCache } from "./parsed-event-cache.js";
import { type BadEvent, isMissingRunObject, LogReader, missingObjectError, nextSeqAfter, openRunFolder, type ReadRunLogOptions, withLimit } from "./run-log.js";
import { compactedLogPath, runsPrefix } from "./paths.js";
import { type EventsFolder, firstAbove } from "./events-folder.js";
import { createRunStateFold, type RunStateFoldPoint } from "./run-state.js";
import { createTimeSlicer } from "../time/time-slicer.js";
import type { RunEvent, RunState } from "./types.js";

/** Bad entries and problems a summary lists when no `maxReports` is given (the rest are counted). */
export const DEFAULT_MAX_REPORTS = 1_000;
/** Event blobs read per step of the fold. */
const CHUNK_EVENTS = 256;
/**
 * Logs longer than this are folded without the process-wide parsed-event cache: their events
 * would push out what the running host reads again, and each is read once here anyway.
 */
const CACHED_LOG_EVENTS = 1_000;

/** What {@link summarizeRunLog} tells of a run's log; the same as `readRunLog` tells, but for `events`. */
export interface RunLogSummary {
  readonly runId: string;
  /** Valid events of the log (`readRunLog`'s `events.length`). */
  readonly eventCount: number;
  /** Seq of the first valid event, or null for none. */
  readonly firstSeq: number | null;
  /** Entries that are not readable event files, in seq order: the first `maxReports`. */
  readonly bad: readonly BadEvent[];
  /** All such entries. */
  readonly badCount: number;
  /** Breaks of the log's rules (as `RunLog.problems`): the first `maxReports`. */
  readonly problems: readonly BadEvent[];
  /** All such breaks. */
  readonly problemCount: number;
  /** As `RunLog.maxFileSeq`. */
  readonly maxFileSeq: number;
  /** Seq of the run's terminal event (the last event of `eventCount`), or null while it has not ended. */
  readonly terminalSeq: number | null;
  /** As `RunLog.nextSeq`. */
  readonly nextSeq: number;
  /** The state the log folds to (as `RunLog.state`). Shared between callers: do not change it. */
  readonly state: RunState;
  /**
   * The first entry or problem of the log (in `bad`, then `problems` order of finding: the run
   * folder's entries first) naming a git object that cannot be read — `object_missing` or
   * `object_corrupt` (an event blob, the `blobs/` folder, a sealed `events.jsonl`) — counted
   * even past `maxReports`; null when every object read. A reader that must not act on part of
   * a run (retention, schedule sync) skips a run with one. Such a summary is not kept.
   */
  readonly unreadable: BadEvent | null;
}

/** Options of {@link summarizeRunLog}. */
export interface SummarizeRunLogOptions extends ReadRunLogOptions {
  /** Bad entries and problems listed (a whole number >= 0, default {@link DEFAULT_MAX_REPORTS}; else page_invalid); all are counted. */
  readonly maxReports?: number;
  /** Where parsed events are remembered (default: the process-wide cache for logs of up to 1,000 entries; null: nowhere). */
  readonly parsedEvents?: ParsedEventCache | null;
  /** Where summaries are kept by run tree oid (default: the process-wide one; null: nowhere). */
  readonly summaries?: RunSummaryCache | null;
  /**
   * Awaited before each event is folded, so a long fold gives the event loop a turn (a time
   * slicer's `pause`, src/time/time-slicer.ts). Default: a slicer of its own
   * (`DEFAULT_SLICE_MS`).
   */
  readonly pause?: () => Promise<void>;
}

/**
 * How far a fold of a run's `events/` went: the folder folded, the fold's point and what the
 * summary counts, so that events appended after it are folded onto a copy of it (see
 * {@link summarizeRunLog}). Never changed once made.
 */
interface FoldProgress {
  /** Oid of the `events/` folder folded. */
  readonly eventsOid: Oid;
  /** The highest seq of a name in it (-1 for none): every later name is above it. */
  readonly maxFileSeq: number;
  readonly point: RunStateFoldPoint;
  readonly terminal: { readonly seq: number; readonly type: string } | null;
  readonly eventCount: number;
  readonly firstSeq: number | null;
  readonly bad: Kept;
  /** Schedule problems, gaps in the seqs, events after the terminal one: in the order reported. */
  readonly schedule: Kept;
  readonly sequence: Kept;
  readonly late: Kept;
}

/** The first `max` of a kind of report, and how many there were. */
interface Kept {
  readonly list: readonly BadEvent[];
  readonly count: number;
}

/** A run's latest summary in a {@link RunSummaryCache}. */
interface KeptSummary {
  readonly treeOid: Oid;
  readonly summary: RunLogSummary;
  /** Null when the summary cannot be continued (a sealed `events.jsonl`, no `events/`). */
  readonly progress: FoldProgress | null;
  readonly bytes: number;
}

/**
 * Summaries of runs, the latest asked for each run (by run id and the limits it was read with),
 * with the run's tree oid and how far the fold went: a run asked again unchanged costs its tree
 * oid; a run that only gained events since is folded from where the kept summary stood.
 *
 * Bounded: at most `maxEntries` runs and `maxBytes` bytes as estimated (per summary 1 KiB, plus
 * 1,536 bytes per listed report — each holds an error; 1,000 measured at about 1.5 MB of heap —
 * and 512 per pending timer, 64 bytes plus twice its length per signal id
 * seen — the dedupe set — and per unconsumed signal 256 bytes plus its payload's JSON length),
 * the least recently used dropped first; a summary heavier than `maxBytes` is not kept.
 */
export class RunSummaryCache {
  readonly #entries = new Map<string, KeptSummary>();
  readonly #maxEntries: number;
  readonly #maxBytes: number;
  #bytes = 0;

  /**
   * @param maxEntries runs kept (>= 0, default 4,096: listing pending timers summarises every run of a deployment)
   * @param maxBytes estimated bytes kept (>= 0, default 64 MiB)
   */
  constructor(maxEntries = 4_096, maxBytes = 64 * 1024 * 1024) {
    this.#maxEntries = maxEntries;
    this.#maxBytes = maxBytes;
  }

  /** Runs kept. */
  get size(): number {
    return this.#entries.size;
  }

  /** Estimated bytes kept (see the class comment). */
  get bytes(): number {
    return this.#bytes;
  }

  /** @internal the kept summary of `key`, now the most recently used */
  get(key: string): KeptSummary | undefined {
    const kept = this.#entries.get(key);
    if (kept !== undefined) {
      this.#entries.delete(key);
      this.#entries.set(key, kept);
    }
    return kept;
  }

  /** @internal keeps `summary` as the latest of `key`, dropping the least recently used past the bounds */
  set(key: string, treeOid: Oid, summary: RunLogSummary, progress: FoldProgress | null): void {
    this.delete(key);
    const bytes = weightOf(summary, progress);
    if (bytes > this.#maxBytes || this.#maxEntries === 0) return;
    this.#entries.set(key, { treeOid, summary, progress, bytes });
    this.#bytes += bytes;
    for (const [oldest, kept] of this.#entries) {
      if (this.#entries.size <= this.#maxEntries && this.#bytes <= this.#maxBytes) break;
      this.#entries.delete(oldest);
      this.#bytes -= kept.bytes;
    }
  }

  delete(key: string): void {
    const kept = this.#entries.get(key);
    if (kept === undefined) return;
    this.#entries.delete(key);
    this.#bytes -= kept.bytes;
  }

  clear(): void {
    this.#entries.clear();
    this.#bytes = 0;
  }
}

/** JSON length of each unconsumed signal's payload, by the signal (shared by the states that hold it). */
const payloadBytes = new WeakMap<object, number>();

/** A kept summary's estimated bytes (see {@link RunSummaryCache}). */
function weightOf(summary: RunLogSummary, progress: FoldProgress | null): number {
  const s = summary.state;
  let reports = summary.bad.length + summary.problems.length;
  if (progress !== null) reports += progress.bad.list.length + progress.schedule.list.length + progress.sequence.list.length + progress.late.list.length;
  let bytes = 1024 + 1536 * reports + 512 * s.pendingTimers.size;
  for (const id of s.observedSignalIds) bytes += 64 + 2 * id.length;
  for (const signal of s.unconsumedSignals) {
    let payload = payloadBytes.get(signal);
    if (payload === undefined) {
      payload = JSON.stringify(signal.payload)?.length ?? 4;
      payloadBytes.set(signal, payload);
    }
    bytes += 256 + 2 * payload;
  }
  return bytes;
}

/** The cache {@link summarizeRunLog} uses unless given another. */
export const sharedRunSummaries = new RunSummaryCache();

/**
 * Summarises the log of run `runId` at the commit `reads` is pinned to, reading each event blob
 * once, a chunk at a time, and holding none of the events (see the module comment). The same
 * state, counts, bad entries and problems as `readRunLog` (up to `maxReports` of each).
 *
 * When the cache holds this run's summary at another tree whose `events/` is the new one less
 * the names above its highest seq — the log only grew — only those newer events are read and
 * folded onto (a copy of) where that summary stood; the result is the full fold's. Checking
 * costs one pass over the new `events/` folder's stored bytes (no object per entry) and hashing
 * the folder it would have been without the new names, both in slices that give the event loop
 * a turn (~50 ms of CPU at 200,000 events, none of it held for more than a few ms), not a read
 * of any event blob. Anything else
 * (an event changed or removed, a gap filled, a new name that is not above the last seq, a sealed
 * `events.jsonl`, the run made anew) folds the whole log.
 * @returns the summary; a run with no folder is an empty one (eventCount 0, lastSeq -1)
 * @throws page_invalid for a `maxReports` that is not a whole number >= 0; id_invalid or
 *   path_violation for a `runId` that cannot name a run folder; errors of the reads themselves
 *   (object_corrupt, io_failed); a bad event never throws, nor does an event blob that is not
 *   in the repository or is damaged (a bad event `object_missing` or `object_corrupt` at its
 *   seq; such a summary is not kept)
 */
export async function summarizeRunLog(reads: CommittedReads, runId: string, options: SummarizeRunLogOptions = {}): Promise<RunLogSummary> {
  const maxReports = options.maxReports ?? DEFAULT_MAX_REPORTS;
  if (!Number.isSafeInteger(maxReports) || maxReports < 0) {
    throw new WorkflowHostError("page_invalid", `maxReports ${describeValue(maxReports)} is not valid for a run's summary; allowed: a whole number >= 0`, {
      field: "maxReports",
      value: maxReports,
    });
  }
  const cache = options.summaries === undefined ? sharedRunSummaries : options.summaries;
  const treeOid = cache === null ? null : await reads.treeOid(`${runsPrefix}${runId}`);
  const key = `${runId}:${options.maxEventBytes ?? DEFAULT_MAX_EVENT_BYTES}:${maxReports}`;
  const known = treeOid === null ? undefined : cache?.get(key);
  if (known !== undefined && known.treeOid === treeOid) return known.summary;
  const { summary, progress, missing } = await fold(reads, runId, options, maxReports, known?.progress ?? null);
  // Kept by tree oid unless read with an event blob missing (its tree is the same once restored).
  if (treeOid !== null && !missing) cache?.set(key, treeOid, summary, progress);
  else cache?.delete(key);
  return summary;
}

/** A {@link Kept} being filled. */
class Tally {
  readonly list: BadEvent[];
  count: number;
  readonly #max: number;

  constructor(max: number, from?: Kept) {
    this.#max = max;
    this.list = from === undefined ? [] : [...from.list];
    this.count = from?.count ?? 0;
  }

  add(b: BadEvent): void {
    this.count += 1;
    if (this.list.length < this.#max) this.list.push(b);
  }

  kept(): Kept {
    return { list: this.list, count: this.count };
  }
}

/**
 * Hands each event of run `runId`'s log at the commit `reads` is pinned to to `visit`, in seq
 * order: exactly `readRunLog`'s `events` (valid, up to and including a terminal event, without
 * the schedule events the controls never write), read a chunk of blobs at a time and none of
 * them held (as {@link summarizeRunLog} folds them, giving the event loop a turn between
 * chunks). For a reader that needs more than the summary (one timer's history) without the log
 * in memory. Nothing is kept or looked up in the summary cache.
 * @returns the run's summary, as {@link summarizeRunLog} gives it
 * @throws as {@link summarizeRunLog}; what `visit` throws, as it comes (the walk stops)
 */
export async function forEachRunEvent(
  reads: CommittedReads,
  runId: string,
  visit: (event: RunEvent) => void,
  options: Pick<SummarizeRunLogOptions, "maxEventBytes" | "parsedEvents"> = {},
): Promise<RunLogSummary> {
  return (await fold(reads, runId, options, DEFAULT_MAX_REPORTS, null, visit)).summary;
}

async function fold(
  reads: CommittedReads,
  runId: string,
  options: SummarizeRunLogOptions,
  maxReports: number,
  known: FoldProgress | null,
  visit?: (event: RunEvent) => void,
): Promise<{ summary: RunLogSummary; progress: FoldProgress | null; missing: boolean }> {
  const { layout, strays, folder } = await openRunFolder(reads, runId);
  const sealed = layout.compacted;
  // Folded onto the kept progress when the log only grew since (see summarizeRunLog).
  const from = known !== null && sealed === null && layout.events !== null && (await onlyGrew(folder, known)) ? known : null;
  const parsedEvents = options.parsedEvents !== undefined ? options.parsedEvents : folder.size <= CACHED_LOG_EVENTS ? undefined : null;
  const reader = new LogReader(runId, { ...withLimit({}, options.maxEventBytes), ...(parsedEvents === undefined ? {} : { parsedEvents }) });
  // A walk that reads each blob once: through reads that leave the store's caches alone.
  const blobs = reads.scan?.() ?? reads;
  const bad = new Tally(maxReports, from?.bad);
  const schedule = new Tally(maxReports, from?.schedule);
  const sequence = new Tally(maxReports, from?.sequence);
  const late = new Tally(maxReports, from?.late);
  if (from === null) {
    // Names that are not <seq>.json first (they sort first, seq null), then the log in seq order.
    for (const handle of folder.others) {
      const entry = folder.entry(handle);
      if (isRegular(entry)) reader.file(entry.name, () => new Uint8Array(), entry.oid);
      else reader.notFile(entry.name, notAFile(entry));
    }
    for (const b of reader.take().bad) bad.add(b);
  }
  const first = from === null ? 0 : firstAbove(folder.seqs, from.maxFileSeq);
  for (const p of sequenceProblems(runId, Array.from(folder.seqs.subarray(first)), from?.maxFileSeq ?? -1)) sequence.add(p);
  const total = folder.seqs.length - first;
  // A sealed log beside the files must be their exact fold: compared file by file as they are read.
  // A sealed log that cannot be read is one problem of the run (as readRunLog reports it).
  let sealedBytes: Uint8Array | null = null;
  if (sealed !== null) {
    try {
      sealedBytes = await blobs.readBlobByOid(sealed.oid);
    } catch (error) {
      if (!isUnreadableObject(error)) throw error;
      const path = compactedLogPath(runId);
      strays.push({ runId, path, seq: null, error: missingObjectError(runId, path, sealed.oid, error) });
    }
  }
  const foldCheck = sealedBytes !== null && total > 0 ? new FoldCheck(sealedBytes) : null;
  const state = createRunStateFold(runId, from?.point);
  // Folding one event can cost a cron step or more (a fire checked against its series' slots):
  // a log of thousands of them gives the event loop a turn every few ms, whatever its reads.
  const pause = options.pause ?? createTimeSlicer().pause;
  // An event blob not in the repository (a bad event): nothing of this fold is kept to grow
  // from, so the event is read again once it is restored.
  let missing = false;
  let unreadable: BadEvent | null = strays.find((p) => isMissingRunObject(p.error)) ?? null;
  let terminal = from?.terminal ?? null;
  let eventCount = from?.eventCount ?? 0;
  let firstSeq = from?.firstSeq ?? null;
  for (let start = first; start < folder.seqs.length; start += CHUNK_EVENTS) {
    // Entries are made a chunk at a time: an indexed folder holds none of them.
    const chunk: { seq: number; entry: DirEntry }[] = [];
    for (let k = start; k < Math.min(folder.seqs.length, start + CHUNK_EVENTS); k += 1) chunk.push({ seq: folder.seqs[k] as number, entry: folder.entry(folder.at[k] as number) });
    const wanted = chunk.filter(({ entry }) => isRegular(entry) && (foldCheck !== null || !reader.cached(entry.name, entry.oid)));
    let contents: readonly Uint8Array[] | null = null;
    try {
      if (blobs.readBlobsByOid !== undefined && wanted.length > 0) contents = await blobs.readBlobsByOid(wanted.map((w) => w.entry.oid));
    } catch (error) {
      // One of them is not in the repository: each read alone below, the missing one a bad event.
      if (!isUnreadableObject(error)) throw error;
    }
    let next = 0;
    for (const item of chunk) {
      const { entry } = item;
      if (!isRegular(entry)) {
        reader.notFile(entry.name, notAFile(entry));
        foldCheck?.part(new Uint8Array());
      } else if (wanted[next] === item) {
        let bytes: Uint8Array | null = null;
        try {
          bytes = contents === null ? await blobs.readBlobByOid(entry.oid) : (contents[next] as Uint8Array);
        } catch (error) {
          if (!isUnreadableObject(error)) throw error;
          missing = true;
          reader.missing(entry.name, entry.oid, error);
        }
        next += 1;
        if (bytes !== null) reader.file(entry.name, bytes, entry.oid);
        foldCheck?.part(bytes ?? new Uint8Array());
      }
    }
    const taken = reader.take();
    for (const b of taken.bad.sort((a, b) => (a.seq ?? -1) - (b.seq ?? -1))) {
      bad.add(b);
      if (unreadable === null && isMissingRunObject(b.error)) unreadable = b;
    }
    for (const event of taken.events.sort((a, b) => a.seq - b.seq)) {
      await pause();
      if (terminal !== null) {
        late.add(afterTerminalProblem(runId, event.seq, terminal.type, terminal.seq));
        continue;
      }
      const skipped = state.apply(event);
      if (skipped !== null) {
        schedule.add(scheduleProblem(runId, skipped.seq, skipped.detail));
        continue;
      }
      eventCount += 1;
      visit?.(event);
      firstSeq ??= event.seq;
      if (isTerminalEventType(event.type)) terminal = { seq: event.seq, type: event.type };
    }
  }
  let maxFileSeq = folder.seqs.length === 0 ? -1 : (folder.seqs[folder.seqs.length - 1] as number);
  let terminalSeq = terminal?.seq ?? null;
  // A run folder's object that cannot be read: nothing of this fold is kept either.
  if (unreadable !== null) missing = true;
  const progress: FoldProgress | null =
    sealed === null && layout.events !== null && !missing
      ? {
          eventsOid: layout.events.oid,
          maxFileSeq,
          point: state.point(),
          terminal,
          eventCount,
          firstSeq,
          bad: bad.kept(),
          schedule: schedule.kept(),
          sequence: sequence.kept(),
          late: late.kept(),
        }
      : null;
  let finalState = state.finish();
  if (sealedBytes !== null) {
    if (foldCheck === null) {
      // The sealed log alone is the run's log (read whole: it is one blob).
      const check = checkCompactedLog(runId, sealedBytes, withLimit({}, options.maxEventBytes));
      if (check.problem !== null) strays.push(check.problem);
      else {
        const sealedState = createRunStateFold(runId);
        for (const event of check.events) sealedState.apply(event);
        if (visit !== undefined) for (const event of check.events) visit(event);
        finalState = sealedState.finish();
        eventCount = check.events.length;
        firstSeq = check.events[0]?.seq ?? null;
        maxFileSeq = Math.max(maxFileSeq, check.events.at(-1)?.seq ?? -1);
        terminalSeq = finalState.terminal === null ? null : (check.events.at(-1)?.seq ?? null);
      }
    } else if (!foldCheck.matches()) strays.push(notFoldProblem(runId, folder.seqs.length));
    else if (finalState.terminal === null) strays.push(notEndedProblem(runId));
  }
  // As one list of the first maxReports in the order found (schedule, then gaps, then late), sorted by seq.
  const problems = [...schedule.list, ...sequence.list, ...late.list].slice(0, maxReports).sort((a, b) => (a.seq ?? -1) - (b.seq ?? -1));
  const summary: RunLogSummary = {
    runId,
    eventCount,
    firstSeq,
    bad: bad.list.slice(),
    badCount: bad.count,
    problems: [...strays, ...problems].slice(0, maxReports),
    problemCount: strays.length + schedule.count + sequence.count + late.count,
    maxFileSeq,
    terminalSeq,
    nextSeq: nextSeqAfter(maxFileSeq),
    state: finalState,
    unreadable,
  };
  return { summary, progress, missing };
}

/**
 * Whether `folder` (the new `events/`) is the folded folder plus names above its highest seq: the
 * folder it would be without those names hashes to the folded one's oid (see
 * {@link EventsFolder.onlyAddedAbove}: over the folder's stored bytes, in slices); no blob is read.
 */
function onlyGrew(folder: EventsFolder, known: FoldProgress): Promise<boolean> {
  return folder.onlyAddedAbove(known.maxFileSeq, known.eventsOid);
}

/** Whether a sealed log is the exact fold of the event files given in seq order (each file's bytes, then `\n`). */
class FoldCheck {
  readonly #sealed: Uint8Array;
  #at = 0;
  #same = true;

  constructor(sealed: Uint8Array) {
    this.#sealed = sealed;
  }

  part(bytes: Uint8Array): void {
    if (!this.#same) return;
    const end = this.#at + bytes.length;
    if (end >= this.#sealed.length || this.#sealed[end] !== 0x0a) {
      this.#same = false;
      return;
    }
    for (let i = 0; i < bytes.length; i += 1) {
      if (this.#sealed[this.#at + i] !== bytes[i]) {
        this.#same = false;
        return;
      }
    }
    this.#at = end + 1;
  }

  matches(): boolean {
    return this.#same && this.#at === this.#sealed.length;
  }
}

function isRegular(entry: DirEntry): boolean {
  return entry.type === "blob" && isRegularFileMode(entry.mode);
}

function notAFile(entry: DirEntry): "folder" | "symlink" | "gitlink (a submodule commit)" {
  return entry.type === "tree" ? "folder" : entry.type === "commit" ? "gitlink (a submodule commit)" : "symlink";
}
