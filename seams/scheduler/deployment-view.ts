/**
 * One deployment as the scheduler sees it: the state of every run, kept current by recovery
 * (a walk of the logs at tip C) and then a live tail from C, and the queue kept holding exactly
 * the armed, unsuppressed timers of those runs. Committing due timers is the fire committer's
 * (fire-committer.ts); it reads and adopts run states here.
 *
 * Recovery reads only what changed: the derived recovery index (see recovery-index.ts) holds
 * each run's summary under its tree oid, and a run whose `runs/<runId>` oid at C matches is
 * restored from it without reading its log. The index is rewritten after a recovery that read
 * runs, and at stop() when runs changed since.
 *
 * States: recovering → tailing → stopped. A failed recovery or tail is reported and the
 * scheduler retries the whole tracker after a backoff; a ref rewritten by a force push
 * re-reads the runs the rewrite touched (tail-commit.ts).
 */
import type { CommittedReads, DirEntry, Principal, RepoId } from "../../src/substrate/types.js";
import { runEventsPrefix, runsPrefix } from "../../src/workflow/paths.js";
import { runsEntryProblem } from "../../src/workflow/log-problems.js";
import { readRunLog, type BadEvent, type RunLog } from "../../src/workflow/run-log.js";
import { slotDueMs } from "../../src/workflow/schedule/jitter.js";
import type { PendingTimer, RunState } from "../../src/workflow/types.js";
import { WORKFLOW_RUN_KIND } from "../../src/workflow/workflow-run-kind.js";
import { openArchive, reusedArchivedRunProblem } from "../../src/workflow/run-archive.js";
import { decodeRecoveryIndex, encodeRecoveryIndex, RECOVERY_INDEX_FILE, stateFromSummary, type RecoveryIndexHeader, type RunSummary } from "../../src/workflow/recovery-index.js";
import { applyTailCommit } from "./tail-commit.js";
import { createTimeSlicer, DEFAULT_SLICE_MS } from "../../src/time/time-slicer.js";
import { monotonicMs, wallMs, type TrackerContext } from "./tracker-context.js";

/** Run logs read ahead of the one being applied during recovery (overlaps reads of loose objects). */
const READ_AHEAD = 8;

/** What the view keeps of one run. */
export interface RunRecord {
  state: RunState;
  /** Highest seq among event file names (valid or not); the next append goes after it. */
  maxFileSeq: number;
  /** Oid of `runs/<runId>/events` the state was read at; null when unknown. */
  eventsOid: string | null;
  /** Oid of `runs/<runId>` the state was read at (the recovery index key); null when unknown. */
  runTreeOid: string | null;
  /** Bad events known in the log; a run with any is never put in the recovery index. */
  bad: number;
  /** timerIds this run has in the queue (a few at most: an array is a fifth of a Set's size). */
  queued: string[];
  /** The folder reuses an archived run's id (reported as a bad event): none of its timers is armed. */
  reused?: boolean;
}

export class DeploymentView {
  readonly repoId: string;
  readonly rid: RepoId;
  readonly runs = new Map<string, RunRecord>();
  /** Reads of the archive ref for the recovery or the commit being applied; undefined: not opened yet. */
  archive: CommittedReads | null | undefined = undefined;
  /**
   * The archive ref's commit at recovery (null: none), that every run this view holds was
   * checked against (or against a later one: the archive only grows); the recovery index says so.
   */
  private checkedArchiveSha: string | null | undefined = undefined;
  /** Runs changed since the recovery index was last written (or read). */
  indexDirty = false;
  private readonly abort = new AbortController();
  private tail: Promise<void> | null = null;
  private persisting: Promise<void> | null = null;
  private stopped = false;

  /**
   * @param onTailFailed the tail ended with an error (not after stop())
   * @param onTailApplied the tail applied a commit
   */
  constructor(
    repoId: string,
    readonly ctx: TrackerContext,
    private readonly onTailFailed: (error: unknown) => void,
    private readonly onTailApplied: () => void,
  ) {
    this.repoId = repoId;
    this.rid = { kind: WORKFLOW_RUN_KIND, id: repoId };
  }

  /**
   * Reads every run at the current tip C, arms their timers, then starts the live tail from C,
   * so a TimerSet committed meanwhile is neither lost nor seen twice.
   * @throws ref_corrupt and read errors (the caller reports and retries)
   */
  async recover(): Promise<void> {
    const startedMs = wallMs(this.ctx);
    const { store, principal, ref } = this.ctx;
    const tip = await store.resolveRef(principal, this.rid, ref);
    const reads = await store.openCommittedReads(principal, this.rid, tip ?? ref);
    // Every run's folder is read once: not through the store's caches (see CommittedReads.scan).
    const scan = reads.scan?.() ?? reads;
    const header: RecoveryIndexHeader = {};
    const index = await this.loadIndex(header);
    this.archive = await openArchive(store, principal as Principal, this.rid);
    // Runs restored from an index written against this very archive commit were checked
    // against it then: its `runs/` folder (one entry per archived run, read and parsed whole by
    // the first lookup) is not looked in again for them. At 30,000 archived runs those lookups
    // cost a warm start more than the rest of it.
    const archiveSha = this.archive.commitSha;
    this.checkedArchiveSha = archiveSha;
    const archiveChecked = index !== null && header.archiveSha === archiveSha;
    let pending = 0;
    let badEvents = 0;
    let reread = 0;
    const entries: DirEntry[] = [];
    for (const entry of await reads.listDir(runsPrefix.slice(0, -1))) {
      // What is not a run folder (a stray file, a folder named like no run) is reported, never read.
      const problem = runsEntryProblem(entry.name, entry.type);
      if (problem === null) entries.push(entry);
      else {
        badEvents += 1;
        this.reportBad(problem);
      }
    }
    // Logs are read a few runs ahead but applied (and their timers armed) in listing order.
    const ahead = new Map<number, Promise<RunLog>>();
    const readAhead = (i: number): void => {
      const entry = entries[i];
      if (entry === undefined || ahead.has(i) || index?.get(entry.name)?.runTreeOid === entry.oid) return;
      // Not through the parsed-event cache: a recovery reads every log once, and would only
      // push out the logs that appends re-read.
      const log = readRunLog(scan, entry.name, { maxEventBytes: this.ctx.maxEventBytes, parsedEvents: null });
      log.catch(() => undefined);
      ahead.set(i, log);
    };
    // Runs restored from the index cost no I/O: without a pause a warm start of 1,000,000 runs
    // would hold the event loop past the host lock's heartbeat limit (its fires then refused).
    const slicer = createTimeSlicer(DEFAULT_SLICE_MS, monotonicMs(this.ctx));
    for (let i = 0; i < entries.length; i++) {
      await slicer.pause();
      const entry = entries[i] as DirEntry;
      const summary = index?.get(entry.name);
      let state: RunState;
      if (summary !== undefined && summary.runTreeOid === entry.oid && (archiveChecked || (await reusedArchivedRunProblem(this.archive, entry.name, entry.oid)) === null)) {
        state = this.restoreRun(entry.name, summary).state;
      } else {
        for (let k = i; k <= i + READ_AHEAD; k++) readAhead(k);
        // Not read ahead when its index summary matched: it reuses an archived run's id.
        const log = await (ahead.get(i) ?? readRunLog(scan, entry.name, { maxEventBytes: this.ctx.maxEventBytes, parsedEvents: null }));
        ahead.delete(i);
        const record = await this.applyLog(scan, log, entry.oid);
        state = record.state;
        badEvents += record.bad;
        reread += 1;
        if (record.reused === true) continue;
      }
      pending += state.terminal === null ? state.pendingTimers.size : 0;
    }
    this.indexDirty = index === null || reread > 0;
    if (this.indexDirty) this.persistIndex();
    this.ctx.report({ type: "recovered", repoId: this.repoId, commitSha: tip, runs: this.runs.size, pending, badEvents, ms: wallMs(this.ctx) - startedMs });
    this.tail = this.runTail(tip ?? "genesis").catch((error: unknown) => {
      if (!this.stopped) this.onTailFailed(error);
    });
  }

  /**
   * Ends the tail, disarms this repo's queued timers, waits for `firing` (the commit in flight),
   * then writes runs that changed since recovery to the recovery index, so the next start is warm.
   */
  async stop(firing: Promise<void> | null): Promise<void> {
    this.stopped = true;
    this.abort.abort();
    for (const [runId, record] of this.runs) {
      for (const timerId of record.queued) this.ctx.queue.disarm(this.repoId, runId, timerId);
      record.queued = [];
    }
    await Promise.allSettled([this.tail, firing, this.persisting]);
    if (this.indexDirty) {
      this.persistIndex();
      await this.persisting;
    }
  }

  /** The run's record, or undefined for an unknown run. */
  run(runId: string): RunRecord | undefined {
    return this.runs.get(runId);
  }

  /** Marks a timer as no longer queued (after `dropQueued`: the queue holds its suppression). */
  forget(runId: string, timerId: string): void {
    const record = this.runs.get(runId);
    if (record !== undefined) record.queued = record.queued.filter((id) => id !== timerId);
  }

  /**
   * Moves a run to its state after a commit of this process (see FireCommitter), when the view
   * still holds it at `parentEventsOid`, the state that commit was made from.
   */
  adopt(runId: string, after: { state: RunState; maxFileSeq: number; eventsOid: string | null; runTreeOid: string | null }): void {
    const record = this.runs.get(runId);
    if (record === undefined) return;
    record.state = after.state;
    record.maxFileSeq = after.maxFileSeq;
    record.eventsOid = after.eventsOid;
    record.runTreeOid = after.runTreeOid;
    this.indexDirty = true;
    this.sync(runId, record);
  }

  /**
   * Re-arms a generation the fire loop held but did not fire (a retry, an early wake), unless
   * the live tail has moved its run on meanwhile (re-set, cancelled, fired, ended, suppressed):
   * the queue then already holds what the log arms, and putting the old generation back would
   * replace the newer one, which the ledger would then refuse as stale, so it would never fire.
   */
  rearm(runId: string, pending: PendingTimer, atMs: number): void {
    const record = this.runs.get(runId);
    const current = record?.state.terminal === null ? record.state.pendingTimers.get(pending.timerId) : undefined;
    if (current === undefined || current.setSeq !== pending.setSeq || current.fireAt !== pending.fireAt) return;
    this.arm(runId, pending, atMs);
  }

  /** The recovery index's summaries, or null when it is off, absent or unusable. */
  private async loadIndex(header: RecoveryIndexHeader): Promise<Map<string, RunSummary> | null> {
    const { store, principal } = this.ctx;
    if (!this.ctx.recoveryIndex || store.readDerived === undefined) return null;
    try {
      const bytes = await store.readDerived(principal, this.rid, RECOVERY_INDEX_FILE);
      return bytes === null ? null : decodeRecoveryIndex(bytes, this.ctx.maxEventBytes, header);
    } catch {
      // A cache that cannot be read is a cache miss.
      return null;
    }
  }

  /**
   * Writes every run whose state is known to match its tree oid, in the background (one write
   * at a time; stop() waits for it). Failures are ignored: the index is only a cache.
   */
  private persistIndex(): void {
    const { store, principal } = this.ctx;
    if (!this.ctx.recoveryIndex || store.writeDerived === undefined) return;
    this.indexDirty = false;
    const summaries: [string, RunSummary][] = [];
    for (const [runId, record] of this.runs) {
      if (record.bad > 0 || record.runTreeOid === null) continue;
      const { lastSeq, terminal } = record.state;
      const pendingTimers = [...record.state.pendingTimers.values()];
      summaries.push([runId, { runTreeOid: record.runTreeOid, eventsOid: record.eventsOid, maxFileSeq: record.maxFileSeq, lastSeq, terminal, pendingTimers }]);
    }
    const bytes = encodeRecoveryIndex(this.ctx.maxEventBytes, summaries, this.checkedArchiveSha === undefined ? {} : { archiveSha: this.checkedArchiveSha });
    const previous = this.persisting ?? Promise.resolve();
    this.persisting = previous.then(() => store.writeDerived?.(principal, this.rid, RECOVERY_INDEX_FILE, bytes)).catch(() => undefined);
  }

  /** Installs a run restored from its index summary and arms its timers. */
  private restoreRun(runId: string, summary: RunSummary): RunRecord {
    const state = stateFromSummary(runId, summary);
    const record = this.recordOf(runId, state);
    record.state = state;
    record.maxFileSeq = summary.maxFileSeq;
    record.eventsOid = summary.eventsOid;
    record.runTreeOid = summary.runTreeOid;
    record.bad = 0;
    this.sync(runId, record);
    return record;
  }

  /** The run's record, made with `state` when new (the caller sets the state either way). */
  private recordOf(runId: string, state: RunState): RunRecord {
    let record = this.runs.get(runId);
    if (record === undefined) {
      record = { state, maxFileSeq: -1, eventsOid: null, runTreeOid: null, bad: 0, queued: [] };
      this.runs.set(runId, record);
    }
    return record;
  }

  /** Reads a run's whole log at `reads` and installs it (a re-read by the tail). */
  async readRun(reads: CommittedReads, runId: string): Promise<RunRecord> {
    return this.applyLog(reads, await readRunLog(reads, runId, { maxEventBytes: this.ctx.maxEventBytes }), null);
  }

  /** Installs a run's log as read at `reads` and arms its timers. */
  private async applyLog(reads: CommittedReads, log: RunLog, runTreeOid: string | null): Promise<RunRecord> {
    const runId = log.runId;
    for (const bad of [...log.bad, ...log.problems]) this.reportBad(bad);
    const state = timerState(log.state);
    const record = this.recordOf(runId, state);
    record.state = state;
    record.maxFileSeq = log.maxFileSeq;
    record.eventsOid = await reads.treeOid(runEventsPrefix(runId).slice(0, -1));
    record.runTreeOid = runTreeOid ?? (await reads.treeOid(`${runsPrefix}${runId}`));
    // Counted with the bad files, so the recovery index keeps no summary of this run and every
    // start reports its problems again.
    record.bad = log.bad.length + log.problems.length;
    // A folder that reuses an archived run's id is not that run, nor a new one: reported, never armed.
    this.archive ??= await openArchive(this.ctx.store, this.ctx.principal as Principal, this.rid);
    const reused = await reusedArchivedRunProblem(this.archive, runId, record.runTreeOid);
    record.reused = reused !== null;
    if (reused !== null) {
      this.reportBad(reused);
      record.bad += 1;
    }
    this.indexDirty = true;
    this.sync(runId, record);
    return record;
  }

  /** Makes the queue hold exactly the run's armed, unsuppressed timers. */
  sync(runId: string, record: RunRecord): void {
    // A paused series is armed in the log but not queued: nothing of it is due until it resumes.
    const wanted: ReadonlyMap<string, PendingTimer> = record.state.terminal === null && record.reused !== true ? armedUnpaused(record.state.pendingTimers) : NO_TIMERS;
    if (record.queued.some((timerId) => !wanted.has(timerId))) {
      for (const timerId of record.queued) if (!wanted.has(timerId)) this.ctx.queue.disarm(this.repoId, runId, timerId);
      record.queued = record.queued.filter((timerId) => wanted.has(timerId));
    }
    this.ctx.queue.settle(this.repoId, runId, wanted, record.state.lastSeq);
    for (const pending of wanted.values()) {
      if (!this.arm(runId, pending, slotDueMs(runId, pending))) continue;
      if (!record.queued.includes(pending.timerId)) record.queued.push(pending.timerId);
    }
  }

  /** Arms a generation and reports a new arm. @returns false when the queue refused it (suppressed) */
  private arm(runId: string, pending: PendingTimer, atMs: number): boolean {
    const outcome = this.ctx.queue.arm(this.repoId, runId, pending, atMs);
    if (outcome === "armed") this.ctx.report({ type: "armed", repoId: this.repoId, runId, timerId: pending.timerId, fireAt: pending.fireAt });
    return outcome !== "suppressed";
  }

  private async runTail(from: string): Promise<void> {
    const { store, principal, ref } = this.ctx;
    const commits = store.subscribe(principal, this.rid, ref, {
      from,
      signal: this.abort.signal,
      onRewrite: (info) => this.ctx.report({ type: "ref_rewritten", repoId: this.repoId, ...info }),
    });
    for await (const commit of commits) {
      if (this.stopped) return;
      await applyTailCommit(this, commit);
      this.onTailApplied();
    }
  }

  /** Reports a bad event and counts it. */
  reportBad(bad: BadEvent): void {
    this.ctx.count("badEvents");
    this.ctx.report({ type: "bad_event", repoId: this.repoId, runId: bad.runId, seq: bad.seq, path: bad.path, error: bad.error });
  }
}

const NO_SIGNAL_IDS: ReadonlySet<string> = new Set();
const NO_TIMERS: ReadonlyMap<string, PendingTimer> = new Map();
const NO_SIGNALS: RunState["unconsumedSignals"] = Object.freeze([]);

/**
 * What the scheduler keeps of a run's state: its timers, end and last seq. The signal sets are
 * the signal channel's (each channel reads them from the log) and can hold every payload a run
 * received; a run restored from the recovery index has them empty too (see stateFromSummary).
 * Empty collections are shared: the reducer copies a collection before it changes it.
 */
function timerState(state: RunState): RunState {
  if (state.observedSignalIds === NO_SIGNAL_IDS && state.unconsumedSignals === NO_SIGNALS) return state;
  return { ...state, observedSignalIds: NO_SIGNAL_IDS, unconsumedSignals: NO_SIGNALS };
}

/** The armed timers that are not paused series (the same map when none is paused). */
function armedUnpaused(timers: ReadonlyMap<string, PendingTimer>): ReadonlyMap<string, PendingTimer> {
  let paused = false;
  for (const t of timers.values()) if (t.pausedAt !== undefined) paused = true;
  if (!paused) return timers;
  return new Map([...timers].filter(([, t]) => t.pausedAt === undefined));
}
