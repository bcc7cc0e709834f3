/**
 * Appending to one run's log through the repo store. Appends are strict (every new event is
 * validated and written at the next dense seq, under the store's repo lock, re-checked against the log).
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
 * fails. A commit refused because objects of runs cannot be read (the push check reads each
 * changed run's last event: a lost one fails there, `object_missing`/`object_corrupt`, and the
 * refusal names every such run of the commit) fails those runs' appends, each named as
 * `unreadableRunError` names it, and commits the others without them in one more commit. Errors of the repository itself (ref_locked, ref_conflict,
 * store_stopped, …) fail every append of the batch.
 */
import { WorkflowHostError } from "../errors.js";
import { DEFAULT_REF } from "../substrate/ref-name.js";
import type { FolderAppend, Principal, RepoStore, WriteResult } from "../substrate/types.js";
import { appendLogCacheOf, type KnownLog } from "./append-log-cache.js";
import { parseEvent, serializeEvent } from "./events.js";
import { eventsFolder, runEventsPrefix, runsPrefix } from "./paths.js";
import { nextSeqAfter, withLimit, type RunLog } from "./run-log.js";
import { WORKFLOW_RUN_KIND } from "./workflow-run-kind.js";
import { applyEvent } from "./run-state.js";
import type { RunEvent, RunState } from "./types.js";
import { asUnreadableRunError, requireWholeRun, unreadableRunsIn } from "./unreadable-runs.js";

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
  /** Default `DEFAULT_REF` ("refs/heads/main"). */
  readonly ref?: string;
  readonly message: string;
  readonly maxEventBytes?: number;
  /**
   * Runs under the repo lock with the log at the current tip (and again after a lost
   * compare-and-swap). Returning `append: []` commits nothing.
   */
  readonly decide: (log: RunLog) => AppendDecision<R>;
  /**
   * Default false. When true, `decide` is never given a log read in part: an event blob, the
   * `blobs/` folder or a sealed `events.jsonl` of the run that is missing or damaged refuses the
   * append before `decide` runs (`object_missing`, `object_corrupt`; see `requireWholeRun`). For
   * a write whose decision turns on the run's whole history (the schedule controls); a write
   * that only adds what the scheduler judges later leaves it off.
   */
  readonly requireWhole?: boolean;
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
 *   error of `writeTreeDelta`; `object_missing` / `object_corrupt` naming the run, what of it is
 *   lost, and "nothing was written" (`unreadableRunError`, `data.unreadableRun`) when its run
 *   folder or `events/` folder cannot be read, or its last event (which the store's push check
 *   reads), or, with `requireWhole`, any object of its log; the other runs' appends of the same
 *   commit are committed without it
 */
export function appendRunEvents<R>(options: AppendRunEventsOptions<R>): Promise<WriteResult<R>> {
  return new Promise<WriteResult<R>>((resolve, reject) => {
    const batcher = appendBatcherOf(options.store, options.repoId, options.ref ?? DEFAULT_REF);
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
      const lost = lostRunsOf(batch, error);
      if (lost.size > 0) {
        // Runs whose object is lost or damaged (the push check could not read their last event;
        // it names every such run of the commit at once): their appends fail, each named; the
        // others are committed without them in one more commit, as the fire committer does.
        const rest: PendingAppend[] = [];
        for (const pending of batch) {
          const own = lost.get(pending.options.runId);
          if (own !== undefined) pending.reject(asUnreadableRunError(this.#repoId, pending.options.runId, own, "nothing was written"));
          else rest.push(pending);
        }
        return rest.length === 0 ? [] : await this.#commit(rest);
      }
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
        // Per run, its new event files: one append to its `events/` folder (TreeDelta.appends),
        // which the store builds from the folder's stored bytes (a long run's folder is never
        // parsed whole) and validates as it would the same files put.
        const files = new Map<string, { name: string; content: Uint8Array }[]>();
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
              run = { known, log: known.log, changed: false };
              working.set(key, run);
            }
            if (options.requireWhole === true) requireWholeRun(this.#repoId, run.log);
            const decision = options.decide(run.log);
            if (decision.append.length === 0) {
              outcomes.push({ kind: "decided", result: decision.result, appended: false });
              continue;
            }
            const added = newEvents(options.runId, run.log, decision.append, options.maxEventBytes);
            // Only an append that is wholly valid touches the batch.
            let runFiles = files.get(options.runId);
            if (runFiles === undefined) {
              runFiles = [];
              files.set(options.runId, runFiles);
            }
            for (const [name, content] of added.files) {
              runFiles.push({ name, content });
              bytes += content.length;
            }
            // concat: a spread of a 200,000-event log is several times slower, in one piece.
            run.log = { ...run.log, events: run.log.events.concat(added.events), maxFileSeq: added.maxFileSeq, nextSeq: nextSeqAfter(added.maxFileSeq), state: added.state };
            run.changed = true;
            outcomes.push({ kind: "decided", result: decision.result, appended: true });
          } catch (error) {
            outcomes.push({ kind: "failed", error: asUnreadableRunError(this.#repoId, options.runId, error, "nothing was written") });
          }
        }
        if (files.size === 0) return { result: outcomes };
        const appends: FolderAppend[] = [];
        for (const [runId, runFiles] of files) appends.push({ folder: `${runsPrefix}${runId}`, sub: eventsFolder, files: runFiles });
        return { appends, result: outcomes };
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
      // The log as the commit left it: the next append checks the folder against this oid.
      cache.remember(key, { eventsOid, clean: true, log: run.log });
    }
  }
}

/**
 * The runs of `batch` a failed commit's `error` names as ones whose object cannot be read, each
 * with its own error (`unreadableRunsIn`: every run the push check could not read, or the one
 * of `data.runId`); empty for an error of the repository or of no run of the batch (`runs/`,
 * the root, the tip).
 */
function lostRunsOf(batch: readonly PendingAppend[], error: unknown): Map<string, WorkflowHostError> {
  const named = unreadableRunsIn(error);
  const lost = new Map<string, WorkflowHostError>();
  for (const pending of batch) {
    const own = named.get(pending.options.runId);
    if (own !== undefined) lost.set(pending.options.runId, own);
  }
  return lost;
}

/**
 * The files (names in the run's `events/`) and log of `append` at the next dense seqs after `log`.
 * @throws event_invalid when the run has ended; payload_too_large / event_invalid /
 *   time_invalid / id_invalid for an event that is not valid at its seq
 */
function newEvents(
  runId: string,
  log: RunLog,
  append: readonly Record<string, unknown>[],
  maxEventBytes: number | undefined,
): { files: Map<string, Uint8Array>; events: RunEvent[]; maxFileSeq: number; state: RunState } {
  // Checked on the whole log: the store's validatePush only sees the last event, and a log
  // pushed with git may hold events after its terminal one.
  if (log.state.terminal !== null) {
    throw new WorkflowHostError("event_invalid", `run ${runId} has ended (${log.state.terminal}); nothing may follow a terminal event`, { runId, terminal: log.state.terminal });
  }
  const files = new Map<string, Uint8Array>();
  let seq = log.nextSeq;
  let state = log.state;
  const events: RunEvent[] = [];
  for (const body of append) {
    if (state.terminal !== null) {
      throw new WorkflowHostError("event_invalid", `run ${runId} has ended (${state.terminal}); nothing may follow a terminal event`, { runId, terminal: state.terminal });
    }
    const event = parseEvent(serializeEvent({ ...body, seq } as RunEvent, withLimit({}, maxEventBytes)), withLimit({ expectedSeq: seq }, maxEventBytes));
    files.set(`${seq}.json`, serializeEvent(event, withLimit({}, maxEventBytes)));
    state = applyEvent(state, event);
    events.push(event);
    seq += 1;
  }
  return { files, events, maxFileSeq: seq - 1, state };
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
