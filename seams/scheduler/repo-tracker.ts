/**
 * One deployment as the scheduler sees it: the state of every run, kept current by recovery
 * (a walk of the logs at tip C) and then a live tail from C, and the fire loop that commits
 * due timers of this repo, one commit per batch.
 *
 * Recovery reads only what changed: the derived recovery index (see recovery-index.ts) holds
 * each run's summary under its tree oid, and a run whose `runs/<runId>` oid at C matches is
 * restored from it without reading its log. The index is rewritten after a recovery that read
 * runs, and at stop() when runs changed since.
 *
 * States: recovering → tailing → stopped. A failed recovery or tail is reported and the
 * scheduler retries the whole tracker after a backoff; a ref rewritten by a force push
 * re-reads the runs the rewrite touched.
 */
import { WorkflowHostError } from "../../src/errors.js";
import type { CommitChange, CommittedReads, DirEntry, Principal, RepoId } from "../../src/substrate/types.js";
import { parseEvent, serializeEvent } from "../../src/workflow/events.js";
import { eventPath, parseCompactedLogPath, runEventsPrefix, runsPrefix } from "../../src/workflow/paths.js";
import { immutableChangedProblem } from "../../src/workflow/run-folder.js";
import { isRegularFileMode } from "../../src/substrate/tree-object.js";
import type { TimerHandle, Timers } from "../../src/time/clock.js";
import { afterTerminalProblem, classifyRunPath, rewrittenProblem, runsEntryProblem, sequenceProblems } from "../../src/workflow/log-problems.js";
import { deepFreeze } from "../../src/workflow/parsed-event-cache.js";
import { readRunLog, type BadEvent, type RunLog } from "../../src/workflow/run-log.js";
import { applyEvent } from "../../src/workflow/run-state.js";
import { planDueTimer, type FirePlan } from "../../src/workflow/timer-ledger.js";
import { slotDueMs } from "../../src/workflow/schedule/jitter.js";
import { prepareTicksBetween } from "../../src/workflow/cron.js";
import { createTimeSlicer } from "../../src/time/time-slicer.js";
import { isoFromMs } from "../../src/workflow/time.js";
import { isTimerCancelled } from "../../src/workflow/event-guards.js";
import type { PendingTimer, RunEvent, RunState } from "../../src/workflow/types.js";
import { WORKFLOW_RUN_KIND } from "../../src/workflow/workflow-run-kind.js";
import { openArchive, reusedArchivedRunProblem, runsMovedToArchive } from "../../src/workflow/run-archive.js";
import { decodeRecoveryIndex, encodeRecoveryIndex, RECOVERY_INDEX_FILE, stateFromSummary, type RunSummary } from "../../src/workflow/recovery-index.js";
import type { DueGeneration } from "./scheduler-queue.js";
import type { CommittedEvents, SchedulerEvent } from "./scheduler-types.js";

/** What a tracker needs from its scheduler. */
export interface TrackerContext {
  readonly store: import("../../src/substrate/types.js").RepoStore;
  readonly principal: unknown;
  readonly ref: string;
  readonly nowMs: () => number;
  readonly maxBatch: number;
  /** Fire commits of this repo start at least this far apart (monotonic ms; see SchedulerOptions). */
  readonly minCommitIntervalMs: number;
  /** Monotonic time in ms (the injected timers' `now`, else the injected clock), for the group-commit throttle. */
  readonly monoMs: () => number;
  /** The injected timers; the group-commit throttle waits on them. */
  readonly timers: Timers;
  readonly maxEventBytes: number;
  readonly planOptions: { misfire: "skip" | "latest" | "all"; maxCatchUp: number; misfireGraceMs: number };
  readonly retryInitialMs: number;
  readonly retryMaxMs: number;
  /**
   * Arms (or re-arms) a generation; `atMs` is when to try, which is later than fireAt on a
   * retry. `pending` is the run state's own object (shared, not copied: see scheduler-queue.ts).
   */
  readonly arm: (repoId: string, runId: string, pending: PendingTimer, atMs: number) => void;
  readonly disarm: (repoId: string, runId: string, timerId: string) => void;
  /** Whether `cancelQueued` suppressed this generation. */
  readonly suppressed: (repoId: string, runId: string, pending: PendingTimer) => boolean;
  /** Drops a suppression once the run's log is past it and the timer is no longer armed. */
  readonly forgetSuppressed: (repoId: string, runId: string, timerId: string, lastSeq: number) => void;
  readonly report: (event: SchedulerEvent) => void;
  readonly count: (what: "fired" | "skippedTicks" | "commits" | "commitFailures" | "badEvents", n?: number) => void;
  /** Use and keep the derived recovery index (see recovery-index.ts). */
  readonly recoveryIndex: boolean;
  /** Told of each fire commit with the events it added, once its ref moved (see SchedulerOptions.onCommittedEvents). */
  readonly onCommittedEvents?: (committed: CommittedEvents) => void;
}

/** Run logs read ahead of the one being applied during recovery (overlaps reads of loose objects). */
const READ_AHEAD = 8;

interface RunRecord {
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
  /** timerIds `cancelQueued` suppressed, until they are disarmed in the log; null for none (most runs). */
  suppressed: Set<string> | null;
  /** The folder reuses an archived run's id (reported as a bad event): none of its timers is armed. */
  reused?: boolean;
}

export class RepoTracker {
  readonly repoId: string;
  readonly runs = new Map<string, RunRecord>();
  private readonly rid: RepoId;
  private readonly abort = new AbortController();
  private tail: Promise<void> | null = null;
  /** Due timers waiting for the fire loop, with the queue time they were delivered at. */
  private readonly buffer = new Map<string, DueGeneration>();
  private firing: Promise<void> | null = null;
  private retryMs: number;
  private stopped = false;
  /** Reads of the archive ref for the recovery or the commit being applied; undefined: not opened yet. */
  private archive: CommittedReads | null | undefined = undefined;
  /** Runs changed since the recovery index was last written (or read). */
  private indexDirty = false;
  private persisting: Promise<void> | null = null;

  constructor(
    repoId: string,
    private readonly ctx: TrackerContext,
    private readonly onTailFailed: (tracker: RepoTracker, error: unknown) => void,
  ) {
    this.repoId = repoId;
    this.rid = { kind: WORKFLOW_RUN_KIND, id: repoId };
    this.retryMs = ctx.retryInitialMs;
  }

  /**
   * Reads every run at the current tip C, arms their timers, then starts the live tail from C,
   * so a TimerSet committed meanwhile is neither lost nor seen twice.
   * @throws ref_corrupt and read errors (the caller reports and retries)
   */
  async recover(): Promise<void> {
    const startedMs = this.ctx.nowMs();
    const { store, principal, ref } = this.ctx;
    const tip = await store.resolveRef(principal, this.rid, ref);
    const reads = await store.openCommittedReads(principal, this.rid, tip ?? ref);
    // Every run's folder is read once: not through the store's caches (see CommittedReads.scan).
    const scan = reads.scan?.() ?? reads;
    const index = await this.loadIndex();
    this.archive = await openArchive(store, principal as Principal, this.rid);
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
    for (let i = 0; i < entries.length; i++) {
      const entry = entries[i] as DirEntry;
      const summary = index?.get(entry.name);
      let state: RunState;
      if (summary !== undefined && summary.runTreeOid === entry.oid && (await reusedArchivedRunProblem(this.archive, entry.name, entry.oid)) === null) {
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
    this.ctx.report({
      type: "recovered",
      repoId: this.repoId,
      commitSha: tip,
      runs: this.runs.size,
      pending,
      badEvents,
      ms: this.ctx.nowMs() - startedMs,
    });
    this.tail = this.runTail(tip ?? "genesis").catch((error: unknown) => {
      if (!this.stopped) this.onTailFailed(this, error);
    });
  }

  /**
   * Ends the tail and waits for the fire loop; queued timers of this repo are disarmed. Runs
   * that changed since recovery are written to the recovery index, so the next start is warm.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    this.abort.abort();
    this.wakeThrottle?.();
    for (const [runId, record] of this.runs) {
      for (const timerId of record.queued) this.ctx.disarm(this.repoId, runId, timerId);
      record.queued = [];
    }
    await Promise.allSettled([this.tail, this.firing, this.persisting]);
    if (this.indexDirty) {
      this.persistIndex();
      await this.persisting;
    }
  }

  /** The recovery index's summaries, or null when it is off, absent or unusable. */
  private async loadIndex(): Promise<Map<string, RunSummary> | null> {
    const { store, principal } = this.ctx;
    if (!this.ctx.recoveryIndex || store.readDerived === undefined) return null;
    try {
      const bytes = await store.readDerived(principal, this.rid, RECOVERY_INDEX_FILE);
      return bytes === null ? null : decodeRecoveryIndex(bytes, this.ctx.maxEventBytes);
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
      summaries.push([
        runId,
        {
          runTreeOid: record.runTreeOid,
          eventsOid: record.eventsOid,
          maxFileSeq: record.maxFileSeq,
          lastSeq: record.state.lastSeq,
          terminal: record.state.terminal,
          pendingTimers: [...record.state.pendingTimers.values()],
        },
      ]);
    }
    const bytes = encodeRecoveryIndex(this.ctx.maxEventBytes, summaries);
    const previous = this.persisting ?? Promise.resolve();
    this.persisting = previous
      .then(() => store.writeDerived?.(principal, this.rid, RECOVERY_INDEX_FILE, bytes))
      .catch(() => undefined);
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
      record = { state, maxFileSeq: -1, eventsOid: null, runTreeOid: null, bad: 0, queued: [], suppressed: null };
      this.runs.set(runId, record);
    }
    return record;
  }

  /**
   * Adds due timers to this repo's fire buffer and runs the fire loop until it is empty.
   * `dueMs` is the queue time each was delivered at: the queue's clock reading was at least
   * that, so it is a floor for "now" (case E3: a later reading that runs behind must not turn a
   * delivered timer back into "not due" and spin).
   */
  fire(due: readonly DueGeneration[]): Promise<void> {
    for (const item of due) this.buffer.set(`${item.runId}/${item.pending.timerId}`, item);
    if (this.firing === null) {
      this.firing = this.fireLoop().finally(() => {
        this.firing = null;
      });
    }
    return this.firing;
  }

  /** Resolves when the fire loop has nothing buffered and no commit in flight. */
  async idle(): Promise<void> {
    while (this.firing !== null) await this.firing;
  }

  /** The run's current timers, to answer `queuedTimers`, or undefined for an unknown run. */
  run(runId: string): RunRecord | undefined {
    return this.runs.get(runId);
  }

  /** Marks a timer as no longer queued and suppressed (after `cancelQueued`). */
  forget(runId: string, timerId: string): void {
    const record = this.runs.get(runId);
    if (record !== undefined) record.queued = record.queued.filter((id) => id !== timerId);
    if (record !== undefined) (record.suppressed ??= new Set<string>()).add(timerId);
  }

  private async readRun(reads: CommittedReads, runId: string): Promise<RunRecord> {
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
  private sync(runId: string, record: RunRecord): void {
    // A paused series is armed in the log but not queued: nothing of it is due until it resumes.
    const wanted: ReadonlyMap<string, PendingTimer> = record.state.terminal === null && record.reused !== true ? armedUnpaused(record.state.pendingTimers) : NO_TIMERS;
    if (record.queued.some((timerId) => !wanted.has(timerId))) {
      for (const timerId of record.queued) if (!wanted.has(timerId)) this.ctx.disarm(this.repoId, runId, timerId);
      record.queued = record.queued.filter((timerId) => wanted.has(timerId));
    }
    for (const timerId of record.suppressed ?? []) {
      if (!wanted.has(timerId)) {
        this.ctx.forgetSuppressed(this.repoId, runId, timerId, record.state.lastSeq);
        record.suppressed?.delete(timerId);
      }
    }
    for (const pending of wanted.values()) {
      if (this.ctx.suppressed(this.repoId, runId, pending)) continue;
      this.ctx.arm(this.repoId, runId, pending, slotDueMs(runId, pending));
      if (!record.queued.includes(pending.timerId)) record.queued.push(pending.timerId);
    }
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
      await this.applyCommit(commit);
      this.retryMs = this.ctx.retryInitialMs;
    }
  }

  /**
   * Applies one commit: added events of a run are applied in seq order when they extend its
   * state; anything else (an edit, a deletion, an out-of-order seq) re-reads the whole run.
   */
  private async applyCommit(commit: CommitChange): Promise<void> {
    this.archive = undefined;
    const byRun = new Map<string, { adds: { seq: number; oid: string; path: string }[]; reread: boolean }>();
    const problems = new Map<string, BadEvent>();
    // Runs this commit seals by adding events.jsonl; event files it removes are fine when the
    // run then reads as sealed (the log is the same, in its other form), reported otherwise.
    const sealing = new Set(commit.changes.flatMap((c) => (c.status === "added" ? [parseCompactedLogPath(c.path)?.runId ?? ""] : [])));
    const folded: BadEvent[] = [];
    // Runs whose event files this commit removes outside a seal: a retention commit's, or a rewrite.
    const removedRuns = new Set<string>();
    for (const change of commit.changes) {
      const place = classifyRunPath(change.path, change.mode);
      if (place === null) continue;
      // Pushed entries that belong to no run's log are reported; they name no run to read.
      if (place.kind === "foreign") {
        problems.set(place.problem.path, place.problem);
        continue;
      }
      if (place.kind === "aside" && isRegularFileMode(change.mode)) {
        // The original layout's files beside the log are not read; a blob is immutable, and a
        // run with no log yet is read again (blobs/ needs a log beside it).
        if (place.part === "blobs" && change.status !== "added") problems.set(change.path, immutableChangedProblem(place.runId, change.path, change.status));
        if ((this.runs.get(place.runId)?.state.lastSeq ?? -1) >= 0) continue;
      }
      const entry = byRun.get(place.runId) ?? { adds: [], reread: false };
      byRun.set(place.runId, entry);
      if (place.kind === "event" && change.status === "added" && isRegularFileMode(change.mode)) {
        entry.adds.push({ seq: place.seq, oid: change.oid, path: change.path });
        continue;
      }
      // Anything else in a run's log (a symlink, a gitlink, a folder, a bad name, an edit) is judged by
      // reading the run again; an edit or removal of an event is reported as well.
      entry.reread = true;
      if (place.kind === "event" && change.status !== "added") {
        // Removed by a commit that seals the run (events.jsonl added): judged once it is read.
        if (change.status === "deleted" && sealing.has(place.runId)) folded.push(rewrittenProblem(place.runId, place.seq, change.path, change.status));
        else problems.set(change.path, rewrittenProblem(place.runId, place.seq, change.path, change.status));
        if (change.status === "deleted" && !sealing.has(place.runId)) removedRuns.add(place.runId);
      }
    }
    if (removedRuns.size > 0) {
      // Ended runs that retention moved to the archive ref: nothing to report, nothing to track.
      // A retention commit removes up to thousands of runs: the event loop gets its turns.
      const slicer = createTimeSlicer();
      const moved = await runsMovedToArchive(this.ctx.store, this.ctx.principal as Principal, this.rid, commit.commitSha, commit.parentSha, removedRuns, slicer.pause);
      // One look at each problem, not one per moved run: a retention commit removes thousands
      // of runs, each with its event files, and a scan per run made the tail quadratic.
      if (moved.size > 0) {
        for (const path of [...problems.keys()]) {
          const end = path.indexOf("/", runsPrefix.length);
          if (path.startsWith(runsPrefix) && end > 0 && moved.has(path.slice(runsPrefix.length, end))) problems.delete(path);
        }
      }
      for (const runId of moved) {
        await slicer.pause();
        byRun.delete(runId);
        const record = this.runs.get(runId);
        if (record !== undefined) for (const timerId of record.queued) this.ctx.disarm(this.repoId, runId, timerId);
        this.runs.delete(runId);
      }
    }
    for (const problem of problems.values()) this.reportBad(problem);
    if (byRun.size === 0) return;
    const reads = await this.ctx.store.openCommittedReads(this.ctx.principal, this.rid, commit.commitSha);
    for (const [runId, change] of byRun) {
      const record = this.runs.get(runId);
      if (record !== undefined && record.eventsOid !== null && !change.reread) {
        // Already at this commit's events tree (our own fire commit, adopted when it landed):
        // a state is a function of the tree, so there is nothing to apply.
        if ((await reads.treeOid(runEventsPrefix(runId).slice(0, -1))) === record.eventsOid) {
          record.runTreeOid = await reads.treeOid(`${runsPrefix}${runId}`);
          continue;
        }
      }
      change.adds.sort((a, b) => a.seq - b.seq);
      const extends_ = record !== undefined && !change.reread && (change.adds[0]?.seq ?? 0) > record.maxFileSeq;
      if (!extends_ || record === undefined) {
        if (record !== undefined || (await reads.treeOid(`${runsPrefix}${runId}`)) !== null) {
          await this.readRun(reads, runId);
        }
        continue;
      }
      const gaps = sequenceProblems(runId, change.adds.map((a) => a.seq), record.maxFileSeq);
      for (const gap of gaps) this.reportBad(gap);
      record.bad += gaps.length;
      for (const add of change.adds) {
        record.maxFileSeq = Math.max(record.maxFileSeq, add.seq);
        // A blob that cannot be read (not there yet because the ref moved before its objects
        // were complete, a torn write, an I/O error) is not bad content: the error ends this
        // tail, which is reported (repo_failed) and restarted with backoff from the tip, so the
        // event is read once it can be. Only bytes that were read and are not an event are
        // reported as a bad event and skipped.
        const bytes = await reads.readBlobByOid(add.oid);
        let event: RunEvent;
        try {
          event = parseEvent(bytes, { path: add.path, expectedSeq: add.seq, maxEventBytes: this.ctx.maxEventBytes });
        } catch (error) {
          record.bad += 1;
          this.reportBad({ runId, path: add.path, seq: add.seq, error: asHostError(error, add.path) });
          continue;
        }
        if (record.state.terminal !== null) {
          // The run has ended: skipped (as recovery skips it), and said so.
          record.bad += 1;
          this.reportBad(afterTerminalProblem(runId, add.seq, record.state.terminal, null));
          continue;
        }
        const cancelled = isTimerCancelled(event) ? event.data.timerId : null;
        const armed = cancelled !== null && record.state.pendingTimers.has(cancelled);
        record.state = applyEvent(record.state, event);
        // Whoever wrote it (this host, the CLI, another process, a push): one report per cancel.
        if (armed) this.ctx.report({ type: "cancelled", repoId: this.repoId, runId, timerId: cancelled, commitSha: commit.commitSha });
      }
      record.eventsOid = await reads.treeOid(runEventsPrefix(runId).slice(0, -1));
      record.runTreeOid = await reads.treeOid(`${runsPrefix}${runId}`);
      this.indexDirty = true;
      this.sync(runId, record);
    }
    for (const removed of folded) {
      const record = this.runs.get(removed.runId);
      if (record === undefined || record.bad > 0 || record.state.terminal === null) this.reportBad(removed);
    }
  }

  private reportBad(bad: BadEvent): void {
    this.ctx.count("badEvents");
    this.ctx.report({ type: "bad_event", repoId: this.repoId, runId: bad.runId, seq: bad.seq, path: bad.path, error: bad.error });
  }

  /** When (`ctx.monoMs()`) the last fire commit of this repo started. */
  private lastCommitStartMs = Number.NEGATIVE_INFINITY;
  /** Ends the group-commit wait early (on stop); null when the fire loop is not waiting. */
  private wakeThrottle: (() => void) | null = null;
  /** Set while the scheduler stops: fire commits are no longer held back. */
  private throttleReleased = false;

  /**
   * Stops holding fire commits back, for a scheduler that is stopping: a pending group-commit
   * wait ends now and later ones are skipped, so what is due is committed and `stop()` never
   * waits on a timer that nobody will advance.
   */
  releaseThrottle(): void {
    this.throttleReleased = true;
    this.wakeThrottle?.();
  }

  /** Waits `waitMs` on the injected timers, or until `stop()`. */
  private throttle(waitMs: number): Promise<void> {
    return new Promise<void>((resolve) => {
      let handle: TimerHandle = null;
      const wake = (): void => {
        this.ctx.timers.clearTimeout(handle);
        this.wakeThrottle = null;
        resolve();
      };
      this.wakeThrottle = wake;
      handle = this.ctx.timers.setTimeout(wake, waitMs);
    });
  }

  private async fireLoop(): Promise<void> {
    while (this.buffer.size > 0 && !this.stopped) {
      // Group commit: timers that come due while the previous commit is young wait for it to
      // be `minCommitIntervalMs` old and go out together. A lone timer never waits (its
      // predecessor is long done); a busy deployment commits at most 1 000/interval times a
      // second, however its timers are spread, which bounds the cost of rewriting its big
      // folders and leaves the event loop time for the tail, signals and pack merging.
      const waitMs = this.ctx.minCommitIntervalMs - (this.ctx.monoMs() - this.lastCommitStartMs);
      if (waitMs > 0 && !this.throttleReleased) await this.throttle(waitMs);
      if (this.stopped) break;
      this.lastCommitStartMs = this.ctx.monoMs();
      const batch: DueGeneration[] = [];
      for (const [key, item] of this.buffer) {
        batch.push(item);
        this.buffer.delete(key);
        if (batch.length >= this.ctx.maxBatch) break;
      }
      await this.commitBatch(batch);
    }
  }

  /**
   * Commits one batch. Everything is decided inside `computeDelta`, under the repo lock, from
   * the log at the parent commit: that re-check is what makes firing exactly-once.
   */
  private async commitBatch(due: readonly DueGeneration[]): Promise<void> {
    type Outcome = { timer: PendingTimer; plan: FirePlan; runId: string };
    /** A run this commit appends to: its events tree at the parent, and its state after the commit. */
    type After = { runId: string; parentEventsOid: string | null; state: RunState; maxFileSeq: number };
    let floorMs = Number.NEGATIVE_INFINITY;
    for (const d of due) floorMs = Math.max(floorMs, d.dueMs);
    type Added = CommittedEvents["events"][number];
    const handOver = this.ctx.onCommittedEvents !== undefined;
    // The whole commit (planning, hashing, folder edits, validation) gives the event loop a turn
    // every few ms (heartbeats, the tail, signals, other deployments), however many runs the
    // batch holds and however long a series was missed: that is what lets a batch be big.
    const slicer = createTimeSlicer();
    let result;
    try {
      result = await this.ctx.store.writeTreeDelta<{ outcomes: Outcome[]; after: After[]; added: Added[] }>(this.ctx.principal, this.rid, this.ctx.ref, {
        message: `Fire ${due.length} timer${due.length === 1 ? "" : "s"}`,
        pause: slicer.pause,
        computeDelta: async (_parent, reads) => {
          const nowMs = Math.max(this.ctx.nowMs(), floorMs);
          const at = isoFromMs(nowMs);
          const puts = new Map<string, Uint8Array>();
          const outcomes: Outcome[] = [];
          const after: After[] = [];
          const added: Added[] = [];
          const byRun = new Map<string, PendingTimer[]>();
          for (const d of due) {
            const list = byRun.get(d.runId);
            if (list === undefined) byRun.set(d.runId, [d.pending]);
            else list.push(d.pending);
          }
          for (const [runId, timers] of byRun) {
            await slicer.pause();
            const fresh = await this.freshRun(reads, runId);
            let state = fresh.state;
            const firstSeq = Math.max(fresh.maxFileSeq + 1, 1);
            let seq = firstSeq;
            timers.sort((a, b) => Date.parse(a.fireAt) - Date.parse(b.fireAt));
            for (const timer of timers) {
              await prepareCatchUp(state.pendingTimers.get(timer.timerId), at, slicer.pause);
              const plan = planDueTimer(state, timer, { nowMs, ...this.ctx.planOptions });
              outcomes.push({ timer, plan, runId });
              if (plan.kind !== "append") continue;
              for (const planned of plan.events) {
                // Validated once, here. The bytes are the validated event's JSON, so parsing
                // them back gives the normalised event without validating it again.
                const bytes = serializeEvent({ seq, type: planned.type, at, data: planned.data } as RunEvent, { maxEventBytes: this.ctx.maxEventBytes });
                puts.set(eventPath(runId, seq), bytes);
                const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("utf8");
                state = applyEvent(state, JSON.parse(text) as RunEvent);
                // A copy of its own for readers outside the scheduler, frozen: they share it.
                if (handOver) added.push({ runId, seq, event: deepFreeze(JSON.parse(text) as RunEvent) });
                seq += 1;
              }
            }
            if (seq > firstSeq) after.push({ runId, parentEventsOid: fresh.eventsOid, state, maxFileSeq: seq - 1 });
          }
          return { puts, result: { outcomes, after, added } };
        },
      });
    } catch (error) {
      await this.onCommitFailed(due, error);
      return;
    }
    this.retryMs = this.ctx.retryInitialMs;
    if (result.committed) this.ctx.count("commits");
    for (const { timer, plan, runId } of result.result?.outcomes ?? []) {
      if (plan.kind === "not_due") {
        this.rearm(runId, timer, plan.dueMs);
        continue;
      }
      if (plan.kind === "stale") continue;
      const commitSha = result.commitSha ?? "";
      for (const scheduledFor of plan.fired) {
        this.ctx.count("fired");
        this.ctx.report({ type: "fired", repoId: this.repoId, runId, timerId: timer.timerId, scheduledFor, firedAt: plan.firedAt, commitSha });
      }
      if (plan.skipped !== null) {
        this.ctx.count("skippedTicks", plan.skipped.count);
        this.ctx.report({ type: "skipped", repoId: this.repoId, runId, timerId: timer.timerId, ...plan.skipped, commitSha });
      }
    }
    if (result.committed) this.handOverCommitted(result.commitSha as string, result.parentSha, result.result?.added ?? []);
    // Reported first: the fires are committed once the ref moved; adopting is bookkeeping.
    if (result.committed) await this.adoptOwnCommit(result.commitSha as string, result.result?.after ?? []);
  }

  /** Hands a fire commit's events to `onCommittedEvents` (the committer's boundary: nothing else is read). */
  private handOverCommitted(commitSha: string, parentSha: string | null, added: readonly CommittedEvents["events"][number][]): void {
    const listener = this.ctx.onCommittedEvents;
    if (listener === undefined || added.length === 0) return;
    // In the order a reader of the commit finds them: runs by id, each run's events by seq.
    const events = [...added].sort((a, b) => (a.runId < b.runId ? -1 : a.runId > b.runId ? 1 : a.seq - b.seq));
    try {
      listener({ repoId: this.repoId, ref: this.ctx.ref, commitSha, parentSha, events });
    } catch {
      // A listener's failure is not the fire loop's.
    }
  }

  /**
   * Moves the runs a fire commit appended to straight to their state after it, so the tail,
   * when it reaches that commit, finds them current (same events tree oid) and does not read
   * back and re-validate what was just written. Only a run still exactly at the commit's parent
   * state is moved; one the tail already took past it is left alone.
   */
  private async adoptOwnCommit(commitSha: string, after: readonly { runId: string; parentEventsOid: string | null; state: RunState; maxFileSeq: number }[]): Promise<void> {
    if (after.length === 0 || this.stopped) return;
    const reads = await this.ctx.store.openCommittedReads(this.ctx.principal, this.rid, commitSha);
    const slicer = createTimeSlicer();
    for (const run of after) {
      await slicer.pause();
      const record = this.runs.get(run.runId);
      if (record === undefined || run.parentEventsOid === null || record.eventsOid !== run.parentEventsOid) continue;
      record.state = run.state;
      record.maxFileSeq = run.maxFileSeq;
      record.eventsOid = await reads.treeOid(runEventsPrefix(run.runId).slice(0, -1));
      record.runTreeOid = await reads.treeOid(`${runsPrefix}${run.runId}`);
      this.indexDirty = true;
      this.sync(run.runId, record);
    }
  }

  /**
   * The run at the commit `reads` is pinned to: the cached state when its events tree is
   * unchanged, else its log read afresh. `eventsOid` is that tree's oid at the commit.
   */
  private async freshRun(reads: CommittedReads, runId: string): Promise<{ state: RunState; maxFileSeq: number; eventsOid: string | null }> {
    const oid = await reads.treeOid(runEventsPrefix(runId).slice(0, -1));
    const cached = this.runs.get(runId);
    if (cached !== undefined && oid !== null && cached.eventsOid === oid) return { state: cached.state, maxFileSeq: cached.maxFileSeq, eventsOid: oid };
    const log = await readRunLog(reads, runId, { maxEventBytes: this.ctx.maxEventBytes });
    return { state: log.state, maxFileSeq: log.maxFileSeq, eventsOid: oid };
  }

  private async onCommitFailed(due: readonly DueGeneration[], error: unknown): Promise<void> {
    const invalid = error instanceof WorkflowHostError && isContentError(error.code);
    if (invalid && due.length > 1) {
      // One timer's event was refused: bisect so the healthy timers still commit.
      const half = Math.ceil(due.length / 2);
      await this.commitBatch(due.slice(0, half));
      await this.commitBatch(due.slice(half));
      return;
    }
    if (invalid) {
      const only = due[0] as DueGeneration;
      this.ctx.report({ type: "timer_rejected", repoId: this.repoId, runId: only.runId, timerId: only.pending.timerId, error });
      return;
    }
    this.ctx.count("commitFailures");
    const retryInMs = this.retryMs;
    this.retryMs = Math.min(this.retryMs * 2, this.ctx.retryMaxMs);
    this.ctx.report({ type: "commit_failed", repoId: this.repoId, timers: due.length, retryInMs, error });
    const atMs = this.ctx.nowMs() + retryInMs;
    for (const d of due) this.rearm(d.runId, d.pending, atMs);
  }

  /**
   * Re-arms a generation the fire loop held but did not fire (a retry, an early wake), unless
   * the live tail has moved its run on meanwhile (re-set, cancelled, fired, ended, suppressed):
   * the queue then already holds what the log arms, and putting the old generation back would
   * replace the newer one, which the ledger would then refuse as stale, so it would never fire.
   */
  private rearm(runId: string, pending: PendingTimer, atMs: number): void {
    const record = this.runs.get(runId);
    const current = record?.state.terminal === null ? record.state.pendingTimers.get(pending.timerId) : undefined;
    if (current === undefined || current.setSeq !== pending.setSeq || current.fireAt !== pending.fireAt) return;
    if (this.ctx.suppressed(this.repoId, runId, pending)) return;
    this.ctx.arm(this.repoId, runId, pending, atMs);
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

/**
 * Counts a due series' missed ticks ahead of the (pure, synchronous) planner, yielding through
 * `pause`, so the planner finds the count ready. A series that cannot be compiled is left to the
 * planner, which reports it as before.
 */
async function prepareCatchUp(pending: PendingTimer | undefined, nowIso: string, pause: () => Promise<void>): Promise<void> {
  if (pending?.cron === undefined || pending.fireAt >= nowIso) return;
  try {
    await prepareTicksBetween(pending.cron, pending.timezone ?? "UTC", pending.fireAt, nowIso, pause);
  } catch {
    // Reported by planDueTimer.
  }
}

/** Codes that mean "this content is refused", as opposed to "the write could not happen". */
function isContentError(code: string): boolean {
  return code === "event_invalid" || code === "time_invalid" || code === "cron_invalid" || code === "payload_too_large" || code === "id_invalid";
}

function asHostError(error: unknown, path: string): WorkflowHostError {
  return error instanceof WorkflowHostError
    ? error
    : new WorkflowHostError("event_invalid", `${path} could not be read as an event`, { path }, { cause: error });
}

