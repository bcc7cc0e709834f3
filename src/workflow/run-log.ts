/**
 * Reading and appending one run's log through the repo store. Reads are lenient (a bad event
 * is reported and skipped, never fatal); appends are strict (every new event is validated and
 * written at the next dense seq, under the store's repo lock, re-checked against the log).
 *
 * Group commit: appends to one ref of one deployment (per store) that arrive while a commit
 * for it is in flight are queued and committed together in the next single commit, one
 * `writeTreeDelta` that decides every queued append, in arrival order, against the same parent
 * (a later append to the same run sees the earlier ones of the batch). A batch holds at most
 * {@link MAX_BATCH_APPENDS} appends of one principal, and stops taking appends once its new
 * events reach {@link MAX_BATCH_BYTES} (the rest wait for the next commit; one append is always
 * taken). An append whose decide throws or whose events are invalid fails alone, with nothing
 * written for it; a lost compare-and-swap decides every append of the batch again; a commit
 * that `validatePush` refuses is retried one append per commit, so only the offending append
 * fails. Errors of the repository itself (ref_locked, ref_conflict, store_stopped, …) fail
 * every append of the batch.
 */
import { WorkflowHostError } from "../errors.js";
import type { CommittedReads, Principal, RepoStore, WriteResult } from "../substrate/types.js";
import { isRegularFileMode } from "../substrate/tree-object.js";
import { isTerminalEventType } from "./event-shapes.js";
import { parseEvent, serializeEvent } from "./events.js";
import { checkCompactedLog, foldProblem, notEndedProblem } from "./compacted-log.js";
import { afterTerminalProblem, scheduleProblem, sequenceProblems } from "./log-problems.js";
import { type ParsedEventCache, sharedParsedEvents } from "./parsed-event-cache.js";
import { parseEventPathName, runEventsPrefix, runsPrefix } from "./paths.js";
import { blobFolderProblems, runFolderLayout } from "./run-folder.js";
import { applyEvent, reduceRunState, reduceRunStateWithProblems } from "./run-state.js";
import type { RunEvent, RunState } from "./types.js";
import { WORKFLOW_RUN_KIND } from "./workflow-run-kind.js";

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
  readonly state: RunState;
}

export interface ReadRunLogOptions {
  /** Largest event accepted on read (bytes, default 1 MiB). */
  readonly maxEventBytes?: number;
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
 * The run folder is checked against the original layout (see run-folder.ts): `blobs/`,
 * `grants.json` and `parts/` are accepted silently, anything else is a problem. A sealed
 * `events.jsonl` (see compacted-log.ts) that is valid is the run's log, read identically from
 * either form: beside the event files it must be their exact fold and the run must have ended;
 * alone, its lines are the events. One that is not valid is one problem and is otherwise
 * ignored: it neither ends the run nor moves the next seq.
 */
export async function readRunLog(
  reads: CommittedReads,
  runId: string,
  options: ReadRunLogOptions & Pick<ReadRunLogFromFilesOptions, "parsedEvents"> = {},
): Promise<RunLog> {
  const prefix = runEventsPrefix(runId);
  // The run folder itself: anything beside its log is reported (the tree is read anyway to
  // reach events/, so this costs no extra read).
  const layout = runFolderLayout(runId, await reads.listDir(`${runsPrefix}${runId}`));
  const strays: BadEvent[] = [...layout.problems];
  if (layout.blobs !== null) strays.push(...blobFolderProblems(runId, await reads.listDir(`${runsPrefix}${runId}/blobs`)));
  const reader = new LogReader(runId, options);
  const eventFiles: { seq: number; oid: string }[] = [];
  const entries = layout.events === null ? [] : await reads.listDir(prefix.slice(0, -1));
  // The blobs to read, all in one call when the reads can (see CommittedReads.readBlobsByOid).
  const wanted: string[] = [];
  const toRead: boolean[] = [];
  for (const entry of entries) {
    const regular = entry.type === "blob" && isRegularFileMode(entry.mode);
    const read = regular && !reader.cached(entry.name, entry.oid);
    toRead.push(read);
    if (read) wanted.push(entry.oid);
  }
  let contents: readonly Uint8Array[] | null = null;
  if (reads.readBlobsByOid !== undefined && wanted.length > 0) contents = await reads.readBlobsByOid(wanted);
  let next = 0;
  for (let i = 0; i < entries.length; i++) {
    const entry = entries[i] as (typeof entries)[number];
    const seq = parseEventPathName(entry.name);
    const regular = entry.type === "blob" && isRegularFileMode(entry.mode);
    if (seq !== null) eventFiles.push({ seq, oid: regular ? entry.oid : "" });
    if (entry.type === "tree") reader.notFile(entry.name, "folder");
    else if (entry.type === "commit") reader.notFile(entry.name, "gitlink (a submodule commit)");
    else if (!regular) reader.notFile(entry.name, "symlink");
    else if (toRead[i] === true) reader.file(entry.name, contents === null ? await reads.readBlobByOid(entry.oid) : (contents[next++] as Uint8Array), entry.oid);
  }
  let log = reader.finish();
  if (layout.compacted !== null) {
    const bytes = await reads.readBlobByOid(layout.compacted.oid);
    if (eventFiles.length === 0) {
      const sealed = checkCompactedLog(runId, bytes, withLimit({}, options.maxEventBytes));
      if (sealed.problem !== null) strays.push(sealed.problem);
      else log = { ...log, events: sealed.events, maxFileSeq: Math.max(log.maxFileSeq, (sealed.events.at(-1) as RunEvent).seq), state: reduceRunState(runId, sealed.events) };
    } else {
      eventFiles.sort((a, b) => a.seq - b.seq);
      const files = await Promise.all(eventFiles.map((f) => (f.oid === "" ? new Uint8Array() : reads.readBlobByOid(f.oid))));
      const unfolded = foldProblem(runId, bytes, files);
      if (unfolded !== null) strays.push(unfolded);
      else if (log.state.terminal === null) strays.push(notEndedProblem(runId));
    }
  }
  return strays.length === 0 ? log : { ...log, problems: [...strays, ...log.problems] };
}

/** Collects a log's entries one by one, then sorts and checks them (see {@link RunLog}). */
class LogReader {
  readonly #runId: string;
  readonly #prefix: string;
  readonly #limit: number | undefined;
  readonly #cache: ParsedEventCache | null;
  readonly #parsed: RunEvent[] = [];
  readonly #bad: BadEvent[] = [];
  readonly #seqs: number[] = [];

  constructor(runId: string, options: ReadRunLogOptions & Pick<ReadRunLogFromFilesOptions, "parsedEvents">) {
    this.#runId = runId;
    this.#prefix = runEventsPrefix(runId);
    this.#limit = options.maxEventBytes;
    this.#cache = options.parsedEvents === undefined ? sharedParsedEvents : options.parsedEvents;
  }

  /** Takes the entry from the cache when its blob was parsed before; false when it must be read. */
  cached(name: string, oid: string): boolean {
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

  notFile(name: string, what: NotAFile): void {
    const path = `${this.#prefix}${name}`;
    const seq = parseEventPathName(name);
    if (seq !== null) this.#seqs.push(seq);
    this.#bad.push({ runId: this.#runId, path, seq, error: new WorkflowHostError("event_invalid", `${path} is a ${what}, not an event file`, { path, seq }) });
  }

  finish(): RunLog {
    const runId = this.#runId;
    const parsed = this.#parsed.sort((a, b) => a.seq - b.seq);
    const bad = this.#bad.sort((a, b) => (a.seq ?? -1) - (b.seq ?? -1));
    const seqs = this.#seqs.sort((a, b) => a - b);
    const problems = sequenceProblems(runId, seqs);
    const terminal = parsed.find((e) => isTerminalEventType(e.type));
    const ended = terminal === undefined ? parsed : parsed.filter((e) => e.seq <= terminal.seq);
    for (const late of parsed.slice(ended.length)) problems.push(afterTerminalProblem(runId, late.seq, terminal?.type ?? "", terminal?.seq ?? null));
    // Schedule events the controls never write are reported and skipped like a late event.
    const folded = reduceRunStateWithProblems(runId, ended);
    for (const p of folded.problems) problems.push(scheduleProblem(runId, p.seq, p.detail));
    const skipped = new Set(folded.problems.map((p) => p.seq));
    const events = skipped.size === 0 ? ended : ended.filter((e) => !skipped.has(e.seq));
    problems.sort((a, b) => (a.seq ?? -1) - (b.seq ?? -1));
    return { runId, events, bad, problems, maxFileSeq: seqs.at(-1) ?? -1, state: folded.state };
  }

  #takeCached(oid: string, seq: number): boolean {
    const event = this.#cache?.get(oid, seq, this.#limit);
    if (event === undefined) return false;
    this.#parsed.push(event);
    return true;
  }
}

/** What an append decides, given the log under the repo lock. */
export interface AppendDecision<R> {
  /** Events to append, without `seq`: they get `maxFileSeq + 1`, `+ 2`, … in order. */
  readonly append: readonly Record<string, unknown>[];
  /** Returned to the caller whether or not anything was appended. */
  readonly result: R;
}

export interface AppendRunEventsOptions<R> {
  readonly store: RepoStore;
  readonly principal: Principal;
  readonly repoId: string;
  readonly runId: string;
  /** Default "refs/heads/main". */
  readonly ref?: string;
  readonly message: string;
  readonly maxEventBytes?: number;
  /**
   * Runs under the repo lock with the log at the current tip (and again after a lost
   * compare-and-swap). Returning `append: []` commits nothing.
   */
  readonly decide: (log: RunLog) => AppendDecision<R>;
}

/**
 * Appends events to one run's log in one commit, at the next dense seqs, after `decide` has
 * re-checked the log under the repo lock (so concurrent appenders never reuse a seq and a
 * check-then-append is atomic).
 *
 * Reads only what it has not seen: the log each append decided on is kept per store and run
 * (see {@link AppendLogCache}), keyed by the oid of the run's `events` tree. An append to a log
 * this process last wrote (or read) reads no event at all; one to a log others have added to
 * since reads just the added files; only a log changed in any other way (an edit, a removal, a
 * bad file) is read whole, as before.
 *
 * Appends made while another commit to the deployment is in flight share the next commit (see
 * the rule at the top of this file); the result and errors are this append's own either way.
 * @returns the store's write result, as seen by this append: `committed` is true only when
 *   this append's events were written; `result` is what `decide` returned on the winning attempt
 * @throws event_invalid / payload_too_large / time_invalid when a new event is invalid or the
 *   run has ended (nothing is written for this append), whatever `decide` throws, plus every
 *   error of `writeTreeDelta`
 */
export function appendRunEvents<R>(options: AppendRunEventsOptions<R>): Promise<WriteResult<R>> {
  return new Promise<WriteResult<R>>((resolve, reject) => {
    const batcher = appendBatcherOf(options.store, options.repoId, options.ref ?? "refs/heads/main");
    batcher.enqueue({ options: options as AppendRunEventsOptions<unknown>, resolve: resolve as (written: WriteResult<unknown>) => void, reject });
  });
}

/** Most appends committed together. */
export const MAX_BATCH_APPENDS = 1_000;
/** Once a batch's new event bytes reach this, its remaining appends wait for the next commit. */
export const MAX_BATCH_BYTES = 8 * 1024 * 1024;

/**
 * Errors of a batch's commit that are the repository's, not any one append's: every caller of
 * the batch gets them. Any other failure of a batch of several appends (what `validatePush` or
 * the store's path checks refuse) retries each of its appends alone, so it fails only its own.
 */
const SHARED_FAILURES: ReadonlySet<string> = new Set([
  "ref_locked",
  "ref_conflict",
  "ref_corrupt",
  "object_corrupt",
  "repo_not_found",
  "repo_id_invalid",
  "kind_unknown",
  "authorize_denied",
  "store_stopped",
  "io_failed",
]);

interface PendingAppend {
  readonly options: AppendRunEventsOptions<unknown>;
  readonly resolve: (written: WriteResult<unknown>) => void;
  readonly reject: (error: unknown) => void;
}

/** What became of one append of a batch, on the attempt that won. */
type AppendOutcome =
  | { readonly kind: "decided"; readonly result: unknown; readonly appended: boolean }
  | { readonly kind: "failed"; readonly error: unknown }
  | { readonly kind: "deferred" };

/** A run's log while a batch is decided: the log at the parent plus the batch's earlier appends. */
interface WorkingLog {
  readonly known: KnownLog;
  log: RunLog;
  names: Map<string, string>;
  changed: boolean;
}

/** The appends queued for one ref of one deployment (see {@link appendRunEvents}). */
class AppendBatcher {
  readonly #store: RepoStore;
  readonly #repoId: string;
  readonly #ref: string;
  readonly #queue: PendingAppend[] = [];
  #running = false;

  constructor(store: RepoStore, repoId: string, ref: string) {
    this.#store = store;
    this.#repoId = repoId;
    this.#ref = ref;
  }

  enqueue(pending: PendingAppend): void {
    this.#queue.push(pending);
    if (this.#running) return;
    this.#running = true;
    // Started a microtask later, so appends made in the same turn share the first commit too.
    queueMicrotask(() => void this.#drain());
  }

  async #drain(): Promise<void> {
    try {
      while (this.#queue.length > 0) {
        // One principal per commit: the store authorizes the commit as that principal.
        const principal = (this.#queue[0] as PendingAppend).options.principal;
        const batch: PendingAppend[] = [];
        for (let i = 0; i < this.#queue.length && batch.length < MAX_BATCH_APPENDS; ) {
          const pending = this.#queue[i] as PendingAppend;
          if (pending.options.principal === principal) {
            batch.push(pending);
            this.#queue.splice(i, 1);
          } else i += 1;
        }
        const deferred = await this.#commit(batch);
        this.#queue.unshift(...deferred);
      }
    } finally {
      this.#running = false;
    }
  }

  /** Commits `batch` and settles each of its appends; returns those left for the next commit. */
  async #commit(batch: readonly PendingAppend[]): Promise<PendingAppend[]> {
    let written: WriteResult<AppendOutcome[]>;
    let working: Map<string, WorkingLog>;
    try {
      ({ written, working } = await this.#write(batch));
    } catch (error) {
      if (batch.length > 1 && !(error instanceof WorkflowHostError && SHARED_FAILURES.has(error.code))) {
        const deferred: PendingAppend[] = [];
        for (const pending of batch) deferred.push(...(await this.#commit([pending])));
        return deferred;
      }
      for (const pending of batch) pending.reject(error);
      return [];
    }
    if (written.committed && written.commitSha !== null) {
      try {
        await this.#rememberLogs(batch[0]?.options.principal, written.commitSha, working);
      } catch {
        // Only the cache misses out: the next append reads the log again.
      }
    }
    const outcomes = written.result ?? [];
    const deferred: PendingAppend[] = [];
    batch.forEach((pending, i) => {
      const outcome = outcomes[i];
      if (outcome === undefined || outcome.kind === "deferred") deferred.push(pending);
      else if (outcome.kind === "failed") pending.reject(outcome.error);
      else pending.resolve({ ...written, committed: written.committed && outcome.appended, result: outcome.result });
    });
    return deferred;
  }

  async #write(batch: readonly PendingAppend[]): Promise<{ written: WriteResult<AppendOutcome[]>; working: Map<string, WorkingLog> }> {
    const cache = appendLogCacheOf(this.#store);
    const first = batch[0] as PendingAppend;
    let working = new Map<string, WorkingLog>();
    const message = batch.length === 1 ? first.options.message : `${batch.length} appends\n\n${batch.map((p) => p.options.message).join("\n")}`;
    const written = await this.#store.writeTreeDelta<AppendOutcome[]>(first.options.principal, { kind: WORKFLOW_RUN_KIND, id: this.#repoId }, this.#ref, {
      message,
      computeDelta: async (_parentSha, reads) => {
        // Every append is decided again on each attempt, against this parent only.
        working = new Map();
        const outcomes: AppendOutcome[] = [];
        const puts = new Map<string, Uint8Array>();
        let bytes = 0;
        for (const { options } of batch) {
          if (outcomes.length > 0 && bytes >= MAX_BATCH_BYTES) {
            outcomes.push({ kind: "deferred" });
            continue;
          }
          try {
            const key = `${this.#repoId}\u0000${options.runId}`;
            let run = working.get(key);
            if (run === undefined) {
              const known = await cache.read(key, reads, options.runId, runEventsPrefix(options.runId).slice(0, -1), options.maxEventBytes);
              run = { known, log: known.log, names: new Map(known.names), changed: false };
              working.set(key, run);
            }
            const decision = options.decide(run.log);
            if (decision.append.length === 0) {
              outcomes.push({ kind: "decided", result: decision.result, appended: false });
              continue;
            }
            const added = newEvents(options.runId, run.log, decision.append, options.maxEventBytes);
            // Only an append that is wholly valid touches the batch.
            for (const [path, data] of added.puts) {
              puts.set(path, data);
              bytes += data.length;
            }
            for (const event of added.events) run.names.set(`${event.seq}.json`, "");
            run.log = { ...run.log, events: [...run.log.events, ...added.events], maxFileSeq: added.maxFileSeq, state: added.state };
            run.changed = true;
            outcomes.push({ kind: "decided", result: decision.result, appended: true });
          } catch (error) {
            outcomes.push({ kind: "failed", error });
          }
        }
        return puts.size === 0 ? { result: outcomes } : { puts, result: outcomes };
      },
    });
    return { written, working };
  }

  /** Keeps the logs the commit extended, with the oids it gave them (trees are cached). */
  async #rememberLogs(principal: Principal, commitSha: string, working: ReadonlyMap<string, WorkingLog>): Promise<void> {
    const cache = appendLogCacheOf(this.#store);
    const reads = await this.#store.openCommittedReads(principal, { kind: WORKFLOW_RUN_KIND, id: this.#repoId }, commitSha);
    for (const [key, run] of working) {
      if (!run.changed || !run.known.clean || run.log.state.terminal !== null) continue;
      const folder = runEventsPrefix(run.log.runId).slice(0, -1);
      const eventsOid = await reads.treeOid(folder);
      if (eventsOid === null) continue;
      const names = new Map(run.names);
      for (const entry of await reads.listDir(folder)) if (names.get(entry.name) === "") names.set(entry.name, entry.oid);
      cache.remember(key, { eventsOid, names, clean: true, log: run.log });
    }
  }
}

/**
 * The files and log of `append` at the next dense seqs after `log`.
 * @throws event_invalid when the run has ended; payload_too_large / event_invalid /
 *   time_invalid / id_invalid for an event that is not valid at its seq
 */
function newEvents(
  runId: string,
  log: RunLog,
  append: readonly Record<string, unknown>[],
  maxEventBytes: number | undefined,
): { puts: Map<string, Uint8Array>; events: RunEvent[]; maxFileSeq: number; state: RunState } {
  // Checked on the whole log: the store's validatePush only sees the last event, and a log
  // pushed with git may hold events after its terminal one.
  if (log.state.terminal !== null) {
    throw new WorkflowHostError("event_invalid", `run ${runId} has ended (${log.state.terminal}); nothing may follow a terminal event`, { runId, terminal: log.state.terminal });
  }
  const puts = new Map<string, Uint8Array>();
  let seq = Math.max(log.maxFileSeq + 1, 1);
  let state = log.state;
  const events: RunEvent[] = [];
  for (const body of append) {
    if (state.terminal !== null) {
      throw new WorkflowHostError("event_invalid", `run ${runId} has ended (${state.terminal}); nothing may follow a terminal event`, { runId, terminal: state.terminal });
    }
    const event = parseEvent(serializeEvent({ ...body, seq } as RunEvent, withLimit({}, maxEventBytes)), withLimit({ expectedSeq: seq }, maxEventBytes));
    puts.set(`${runEventsPrefix(runId)}${seq}.json`, serializeEvent(event, withLimit({}, maxEventBytes)));
    state = applyEvent(state, event);
    events.push(event);
    seq += 1;
  }
  return { puts, events, maxFileSeq: seq - 1, state };
}

const appendBatchers = new WeakMap<RepoStore, Map<string, AppendBatcher>>();

/** The batcher of one ref of one deployment in one store. */
function appendBatcherOf(store: RepoStore, repoId: string, ref: string): AppendBatcher {
  let byRef = appendBatchers.get(store);
  if (byRef === undefined) {
    byRef = new Map();
    appendBatchers.set(store, byRef);
  }
  const key = `${repoId}\u0000${ref}`;
  let batcher = byRef.get(key);
  if (batcher === undefined) {
    batcher = new AppendBatcher(store, repoId, ref);
    byRef.set(key, batcher);
  }
  return batcher;
}

/** A run's log as an append last saw it, with the tree it was read from. */
interface KnownLog {
  /** Oid of `runs/<runId>/events` the log was read at; null until known. */
  readonly eventsOid: string | null;
  /** Entry name → blob oid of every entry in that tree. */
  readonly names: ReadonlyMap<string, string>;
  /** No bad files, no rule breaks, not ended: only such a log is extended in place. */
  readonly clean: boolean;
  readonly log: RunLog;
}

/** Most events kept across the logs of one store (the least recently used logs go first). */
const APPEND_CACHE_EVENTS = 250_000;

/**
 * The logs appends decided on, per run, most recently used last. A log is a pure function of
 * its events tree, so a cached one is reused only for the very tree oid it was read at, and
 * extended only when the tree gained new files and nothing else changed.
 */
class AppendLogCache {
  readonly #logs = new Map<string, KnownLog>();
  #events = 0;

  async read(key: string, reads: CommittedReads, runId: string, folder: string, maxEventBytes: number | undefined): Promise<KnownLog> {
    const oid = await reads.treeOid(folder);
    const hit = this.#logs.get(key);
    if (hit !== undefined && oid !== null && hit.eventsOid === oid) {
      this.remember(key, hit);
      return hit;
    }
    if (hit !== undefined && oid !== null && hit.clean) {
      const extended = await extendLog(hit, reads, runId, folder, oid, maxEventBytes);
      if (extended !== null) {
        this.remember(key, extended);
        return extended;
      }
    }
    const log = await readRunLog(reads, runId, withLimit({}, maxEventBytes));
    const names = new Map<string, string>();
    if (oid !== null) for (const entry of await reads.listDir(folder)) names.set(entry.name, entry.oid);
    const known: KnownLog = { eventsOid: oid, names, clean: log.bad.length === 0 && log.problems.length === 0 && log.state.terminal === null, log };
    if (oid !== null) this.remember(key, known);
    return known;
  }

  remember(key: string, known: KnownLog): void {
    const old = this.#logs.get(key);
    if (old !== undefined) {
      this.#logs.delete(key);
      this.#events -= old.log.events.length;
    }
    this.#logs.set(key, known);
    this.#events += known.log.events.length;
    for (const [k, v] of this.#logs) {
      if (this.#events <= APPEND_CACHE_EVENTS || k === key) break;
      this.#logs.delete(k);
      this.#events -= v.log.events.length;
    }
  }
}

/**
 * `known` plus the files added to its tree since, when that is all that changed and the added
 * files are the next seqs, valid events, in order; null otherwise (the caller reads it whole).
 */
async function extendLog(known: KnownLog, reads: CommittedReads, runId: string, folder: string, oid: string, maxEventBytes: number | undefined): Promise<KnownLog | null> {
  const entries = await reads.listDir(folder);
  const added: { seq: number; entry: (typeof entries)[number] }[] = [];
  let kept = 0;
  for (const entry of entries) {
    const before = known.names.get(entry.name);
    if (before === undefined) {
      const seq = parseEventPathName(entry.name);
      if (seq === null || entry.type !== "blob" || !isRegularFileMode(entry.mode)) return null;
      added.push({ seq, entry });
    } else if (before !== entry.oid) return null;
    else kept += 1;
  }
  if (kept !== known.names.size) return null;
  added.sort((a, b) => a.seq - b.seq);
  let { state, maxFileSeq } = known.log;
  const events: RunEvent[] = [];
  for (const { seq, entry } of added) {
    if (seq !== maxFileSeq + 1 || state.terminal !== null) return null;
    let event: RunEvent;
    try {
      event = sharedParsedEvents.parse(entry.oid, await reads.readBlobByOid(entry.oid), withLimit({ path: `${folder}/${entry.name}`, expectedSeq: seq }, maxEventBytes));
    } catch {
      return null;
    }
    state = applyEvent(state, event);
    events.push(event);
    maxFileSeq = seq;
  }
  const names = new Map(known.names);
  for (const { entry } of added) names.set(entry.name, entry.oid);
  return { eventsOid: oid, names, clean: state.terminal === null, log: { ...known.log, events: [...known.log.events, ...events], maxFileSeq, state } };
}

const appendLogCaches = new WeakMap<RepoStore, AppendLogCache>();

/** The append log cache of one store (a store is one data dir, so keys need no data dir). */
function appendLogCacheOf(store: RepoStore): AppendLogCache {
  let cache = appendLogCaches.get(store);
  if (cache === undefined) {
    cache = new AppendLogCache();
    appendLogCaches.set(store, cache);
  }
  return cache;
}

function withLimit<T extends object>(base: T, maxEventBytes: number | undefined): T & { maxEventBytes?: number } {
  return maxEventBytes === undefined ? base : { ...base, maxEventBytes };
}

function asEventError(error: unknown, path: string, seq: number): WorkflowHostError {
  if (error instanceof WorkflowHostError) return error;
  return new WorkflowHostError("event_invalid", `${path} could not be read as an event`, { path, seq }, { cause: error });
}
