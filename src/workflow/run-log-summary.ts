/**
 * A run's summary without its log in memory: the state its log folds to, how many events it
 * holds, and what is wrong in it — what `readRunLog` gives beside `events`, for a view that
 * shows a run and pages through its events (see `readRunLogPage`).
 *
 * The state needs every event (a signal consumed at seq 900,000 ends one received at seq 3), so
 * the summary is a full fold, but a streaming one: the `events/` listing (names and oids) is
 * sorted by seq, then the blobs are read a chunk at a time in seq order, each event applied to
 * the state and dropped. What stays in memory is the listing, the state (pending timers, the
 * signal ids seen — the dedupe set — and the unconsumed signals) and at most `maxReports` bad
 * entries and problems (the rest are counted). A run's summary is a pure function of its tree,
 * so summaries are kept by the oid of `runs/<runId>` (see {@link RunSummaryCache}): asking
 * again for a run that did not change reads nothing but that oid.
 *
 * A run whose log is only its sealed `events.jsonl` is folded from that file, which is one blob
 * and is read whole.
 */
import { LruCache } from "../substrate/lru-cache.js";
import type { CommittedReads, DirEntry } from "../substrate/types.js";
import { isRegularFileMode } from "../substrate/tree-object.js";
import { checkCompactedLog, notEndedProblem, notFoldProblem } from "./compacted-log.js";
import { isTerminalEventType } from "./event-shapes.js";
import { afterTerminalProblem, scheduleProblem, sequenceProblems } from "./log-problems.js";
import { DEFAULT_MAX_EVENT_BYTES } from "./events.js";
import type { ParsedEventCache } from "./parsed-event-cache.js";
import { parseEventPathName, runsPrefix } from "./paths.js";
import { type BadEvent, listRunFolder, LogReader, nextSeqAfter, type ReadRunLogOptions, seqIndexOf, withLimit } from "./run-log.js";
import { createRunStateFold } from "./run-state.js";
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
  /** As `RunLog.nextSeq`. */
  readonly nextSeq: number;
  /** The state the log folds to (as `RunLog.state`). Shared between callers: do not change it. */
  readonly state: RunState;
}

/** Options of {@link summarizeRunLog}. */
export interface SummarizeRunLogOptions extends ReadRunLogOptions {
  /** Bad entries and problems listed (>= 0, default {@link DEFAULT_MAX_REPORTS}); all are counted. */
  readonly maxReports?: number;
  /** Where parsed events are remembered (default: the process-wide cache for logs of up to 1,000 entries; null: nowhere). */
  readonly parsedEvents?: ParsedEventCache | null;
  /** Where summaries are kept by run tree oid (default: the process-wide one; null: nowhere). */
  readonly summaries?: RunSummaryCache | null;
}

/** Summaries by the oid of the run's tree and the run's id (and the limits they were read with). */
export class RunSummaryCache {
  readonly #cache: LruCache<RunLogSummary>;

  /**
   * @param capacity weight bound, in units of about 8 KiB of heap (default 4,096: about 32 MiB):
   *   a summary weighs 1, plus 1 per 8 listed bad entries and problems (each holds an error,
   *   measured at about 750 bytes), per 16 pending timers, and per 64 signal ids
   */
  constructor(capacity = 4_096) {
    this.#cache = new LruCache(capacity);
  }

  /** Total weight of the summaries kept. */
  get weight(): number {
    return this.#cache.weight;
  }

  get(key: string): RunLogSummary | undefined {
    return this.#cache.get(key);
  }

  set(key: string, summary: RunLogSummary): void {
    const s = summary.state;
    const reports = summary.bad.length + summary.problems.length;
    const signals = s.observedSignalIds.size + s.unconsumedSignals.length;
    this.#cache.set(key, summary, 1 + Math.ceil(reports / 8) + Math.ceil(s.pendingTimers.size / 16) + Math.ceil(signals / 64));
  }

  clear(): void {
    this.#cache.clear();
  }
}

/** The cache {@link summarizeRunLog} uses unless given another. */
export const sharedRunSummaries = new RunSummaryCache();

/**
 * Summarises the log of run `runId` at the commit `reads` is pinned to, reading each event blob
 * once, a chunk at a time, and holding none of the events (see the module comment). The same
 * state, counts, bad entries and problems as `readRunLog` (up to `maxReports` of each).
 * @returns the summary; a run with no folder is an empty one (eventCount 0, lastSeq -1)
 * @throws errors of the reads themselves (object_corrupt, io_failed); a bad event never throws
 */
export async function summarizeRunLog(reads: CommittedReads, runId: string, options: SummarizeRunLogOptions = {}): Promise<RunLogSummary> {
  const maxReports = options.maxReports ?? DEFAULT_MAX_REPORTS;
  const cache = options.summaries === undefined ? sharedRunSummaries : options.summaries;
  const treeOid = cache === null ? null : await reads.treeOid(`${runsPrefix}${runId}`);
  // The run id too: two runs with the same events have the same tree, but their reports name their own paths.
  const key = treeOid === null ? null : `${treeOid}:${runId}:${options.maxEventBytes ?? DEFAULT_MAX_EVENT_BYTES}:${maxReports}`;
  const known = key === null ? undefined : cache?.get(key);
  if (known !== undefined) return known;
  const summary = await fold(reads, runId, options, maxReports);
  if (key !== null) cache?.set(key, summary);
  return summary;
}

async function fold(reads: CommittedReads, runId: string, options: SummarizeRunLogOptions, maxReports: number): Promise<RunLogSummary> {
  const { layout, strays, entries } = await listRunFolder(reads, runId);
  const parsedEvents = options.parsedEvents !== undefined ? options.parsedEvents : entries.length <= CACHED_LOG_EVENTS ? undefined : null;
  const reader = new LogReader(runId, { ...withLimit({}, options.maxEventBytes), ...(parsedEvents === undefined ? {} : { parsedEvents }) });
  // A walk that reads each blob once: through reads that leave the store's caches alone.
  const blobs = reads.scan?.() ?? reads;
  const out = new Reports(maxReports);
  // Names that are not <seq>.json first (they sort first, seq null), then the log in seq order.
  for (const entry of entries) {
    if (parseEventPathName(entry.name) !== null) continue;
    if (isRegular(entry)) reader.file(entry.name, () => new Uint8Array(), entry.oid);
    else reader.notFile(entry.name, notAFile(entry));
  }
  for (const b of reader.take().bad) out.bad(b);
  const index = seqIndexOf(entries);
  const order: { seq: number; entry: DirEntry }[] = [];
  for (let k = 0; k < index.seqs.length; k += 1) order.push({ seq: index.seqs[k] as number, entry: entries[index.at[k] as number] as DirEntry });
  const sequence = sequenceProblems(runId, Array.from(index.seqs));
  const sealed = layout.compacted;
  // A sealed log beside the files must be their exact fold: compared file by file as they are read.
  const foldCheck = sealed !== null && order.length > 0 ? new FoldCheck(await blobs.readBlobByOid(sealed.oid)) : null;
  const state = createRunStateFold(runId);
  const late: BadEvent[] = [];
  let terminal: RunEvent | null = null;
  let eventCount = 0;
  let firstSeq: number | null = null;
  for (let start = 0; start < order.length; start += CHUNK_EVENTS) {
    const chunk = order.slice(start, start + CHUNK_EVENTS);
    const wanted = chunk.filter(({ entry }) => isRegular(entry) && (foldCheck !== null || !reader.cached(entry.name, entry.oid)));
    const contents = blobs.readBlobsByOid !== undefined && wanted.length > 0 ? await blobs.readBlobsByOid(wanted.map((w) => w.entry.oid)) : null;
    let next = 0;
    for (const item of chunk) {
      const { entry } = item;
      if (!isRegular(entry)) {
        reader.notFile(entry.name, notAFile(entry));
        foldCheck?.part(new Uint8Array());
      } else if (wanted[next] === item) {
        const bytes = contents === null ? await blobs.readBlobByOid(entry.oid) : (contents[next] as Uint8Array);
        next += 1;
        reader.file(entry.name, bytes, entry.oid);
        foldCheck?.part(bytes);
      }
    }
    const taken = reader.take();
    for (const b of taken.bad.sort((a, b) => (a.seq ?? -1) - (b.seq ?? -1))) out.bad(b);
    for (const event of taken.events.sort((a, b) => a.seq - b.seq)) {
      if (terminal !== null) {
        late.push(afterTerminalProblem(runId, event.seq, terminal.type, terminal.seq));
        continue;
      }
      const skipped = state.apply(event);
      if (skipped !== null) {
        out.problem(scheduleProblem(runId, skipped.seq, skipped.detail));
        continue;
      }
      eventCount += 1;
      firstSeq ??= event.seq;
      if (isTerminalEventType(event.type)) terminal = event;
    }
  }
  for (const p of [...sequence, ...late]) out.problem(p);
  let maxFileSeq = order.at(-1)?.seq ?? -1;
  let finalState = state.finish();
  if (sealed !== null) {
    if (foldCheck === null) {
      // The sealed log alone is the run's log (read whole: it is one blob).
      const check = checkCompactedLog(runId, await blobs.readBlobByOid(sealed.oid), withLimit({}, options.maxEventBytes));
      if (check.problem !== null) strays.push(check.problem);
      else {
        const sealedState = createRunStateFold(runId);
        for (const event of check.events) sealedState.apply(event);
        finalState = sealedState.finish();
        eventCount = check.events.length;
        firstSeq = check.events[0]?.seq ?? null;
        maxFileSeq = Math.max(maxFileSeq, check.events.at(-1)?.seq ?? -1);
      }
    } else if (!foldCheck.matches()) strays.push(notFoldProblem(runId, order.length));
    else if (finalState.terminal === null) strays.push(notEndedProblem(runId));
  }
  const problems = out.problems().sort((a, b) => (a.seq ?? -1) - (b.seq ?? -1));
  return {
    runId,
    eventCount,
    firstSeq,
    bad: out.badList,
    badCount: out.badCount,
    problems: [...strays, ...problems].slice(0, maxReports),
    problemCount: strays.length + out.problemCount,
    maxFileSeq,
    nextSeq: nextSeqAfter(maxFileSeq),
    state: finalState,
  };
}

/** Bad entries and problems: the first `max` of each kept, all counted. */
class Reports {
  readonly badList: BadEvent[] = [];
  badCount = 0;
  problemCount = 0;
  readonly #problems: BadEvent[] = [];
  readonly #max: number;

  constructor(max: number) {
    this.#max = max;
  }

  bad(b: BadEvent): void {
    this.badCount += 1;
    if (this.badList.length < this.#max) this.badList.push(b);
  }

  problem(p: BadEvent): void {
    this.problemCount += 1;
    if (this.#problems.length < this.#max) this.#problems.push(p);
  }

  problems(): BadEvent[] {
    return this.#problems;
  }
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
