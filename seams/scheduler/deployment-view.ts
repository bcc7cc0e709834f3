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
 *
 * An object of one run that is not in the repository or is damaged (a disk fault, a bad copy, a
 * partial fetch) is that run's problem, never the deployment's: a missing event blob is a bad
 * event at its seq, a missing run folder or `events/` folder makes the log unreadable (see
 * readRunLog); either way the run is reported and nothing of it is armed (the lost event could be
 * a one-shot's `TimerFired`). Such runs are read again with backoff until they read whole (an
 * object that arrives late, as a copy completes, is then applied), and only then installed and
 * armed. Only what every run needs (the tip commit, the root, `runs/`) fails the recovery.
 */
import { WorkflowHostError } from "../../src/errors.js";
import type { CommittedReads, DirEntry, Principal, RepoId } from "../../src/substrate/types.js";
import { runEventsPrefix, runsPrefix } from "../../src/workflow/paths.js";
import { runsEntryProblem } from "../../src/workflow/log-problems.js";
import { isMissingRunObject, missingObjectError, readRunLog, type BadEvent, type RunLog } from "../../src/workflow/run-log.js";
import type { TimerHandle } from "../../src/time/clock.js";
import { slotDueMs } from "../../src/workflow/schedule/jitter.js";
import type { PendingTimer, RunState } from "../../src/workflow/types.js";
import type { ServedPendingTimers } from "./scheduler-types.js";
import type { DueGeneration } from "./scheduler-queue.js";
import { WORKFLOW_RUN_KIND } from "../../src/workflow/workflow-run-kind.js";
import { reusedArchivedRunProblem } from "../../src/workflow/run-archive.js";
import { ArchiveReads } from "./archive-reads.js";
import { decodeRecoveryColumns, eventsOidAt, lastEventOidAt, noEventsOidAt, noLastEventOidAt, RECOVERY_INDEX_FILE, RecoveryIndexWriter, type RecoveryIndex } from "../../src/workflow/recovery-index.js";
import { MASK_BITS, RunTable, UnpausedTimers, type RunRecord } from "./run-table.js";
import { applyTailCommit } from "./tail-commit.js";
import { createTimeSlicer, DEFAULT_SLICE_MS } from "../../src/time/time-slicer.js";
import { monotonicMs, wallMs, type TrackerContext } from "./tracker-context.js";
import { requireRunLog, unreadablePartOf, type UnreadableRun } from "../../src/workflow/unreadable-runs.js";

/**
 * Most own commits whose adopted runs are remembered for the tail (see DeploymentView.noteOwnCommit):
 * a note is dropped when the tail passes its commit, so only a tail stalled for this many fire
 * commits loses one (its runs are then read back at that commit, as any other writer's).
 */
const OWN_COMMITS_KEPT = 4_096;

/** Run logs read ahead of the one being applied during recovery (overlaps reads of loose objects). */
const READ_AHEAD = 8;

export type { RunRecord } from "./run-table.js";

/** Runs walked by {@link DeploymentView.pendingSnapshot} between two looks at the time slicer. */
const WALK_STEP = 4_096;

/** Walks of {@link DeploymentView.pendingSnapshot} that may be started over; the last is made in one go. */
const WALK_TRIES = 4;

/** Runs restored from the recovery index between two looks at the time slicer (each costs no I/O). */
const RESTORED_PER_PAUSE = 64;

/**
 * How long (ms, on the injected timers) the recovery index a recovery made waits before it is
 * written, and then for the fire loop to be idle (see DeploymentView.recover): the timers that
 * came due while the process was down go out first, on a fire path not yet compiled, without a
 * write of megabytes (3 MB at 20,000 runs) and its flush beside their commits. stop() writes it at once.
 */
export const INDEX_WRITE_DELAY_MS = 2_000;

/**
 * How long (ms, on the injected timers) the recovery index's write waits for the fire loop to
 * be idle after {@link INDEX_WRITE_DELAY_MS}: a deployment whose timers come due faster than its
 * commits land (a steady 1,000 fires/s) never leaves the loop idle, and without a bound its
 * index was written only by stop(), so a crash after hours of such load left the next start as
 * cold as the last.
 */
export const INDEX_IDLE_WAIT_MAX_MS = 30_000;

export class DeploymentView {
  readonly repoId: string;
  readonly rid: RepoId;
  /** Every run, as a record or (restored or read by recovery and untouched since) as a row. */
  readonly runs = new RunTable();
  /** Reads of the archive ref for the recovery or the commit being applied; undefined: not opened yet. */
  archive: CommittedReads | null | undefined = undefined;
  /** Opens the archive ref; a damaged one is reported (once per damage) and read as none. */
  private readonly archiveReads: ArchiveReads;
  /**
   * The archive ref's commit at recovery (null: none), that every run this view holds was
   * checked against (or against a later one: the archive only grows); the recovery index says so.
   */
  private checkedArchiveSha: string | null | undefined = undefined;
  /** Runs changed since the recovery index was last written (or read). */
  indexDirty = false;
  /**
   * Runs a fire commit of this process moved to their state at that commit (FireCommitter), by
   * the commit's sha, until the tail reaches it: the tail skips them there (see tail-commit.ts).
   */
  private readonly ownCommits = new Map<string, OwnCommit>();
  /**
   * The commit every run record is at (recovery's tip, then each commit the tail applied);
   * undefined while unknown (recovering). Runs adopted ahead of it are in {@link ownCommits}.
   */
  appliedSha: string | null | undefined = undefined;
  /**
   * The fire commit in flight (FireCommitter): the parent it is computed on, and a promise that
   * resolves once it landed (or failed) and its runs were adopted. Null when none.
   */
  ownWrite: { readonly parentSha: string | null; readonly settled: Promise<void> } | null = null;
  private readonly abort = new AbortController();
  private tail: Promise<void> | null = null;
  private persisting: Promise<void> | null = null;
  /** Ends the wait of the index write recovery queued (see INDEX_WRITE_DELAY_MS); null when none waits. */
  private releaseIndexWait: (() => void) | null = null;
  /**
   * Resolves when the fire loop of this deployment has nothing buffered and no commit in flight
   * (set by the FireCommitter); resolved at once until one is set.
   */
  firesIdle: () => Promise<void> = () => Promise.resolve();
  private stopped = false;
  /**
   * Runs read with one of their objects missing or damaged (see readRunLog), with those objects:
   * an event's blob, `blobs/`, the sealed log, or the run folder or its `events/` folder. None of
   * them has a record (nothing of it is armed); each is read again by {@link repair} once those
   * objects can be read.
   */
  private readonly damaged = new Map<string, readonly MissingObject[]>();
  /**
   * Runs the pending-timer listing names as unreadable, as the fold of the logs names them
   * (src/host/list-pending-timers.ts): each {@link damaged} run with the first object of it that
   * could not be read, and each run held whose `events` entry is a file or a link, so that it
   * holds no log (`event_invalid`, see requireRunLog).
   */
  private readonly unreadable = new Map<string, UnreadableRun>();
  /**
   * Bumped at every change of what {@link pendingSnapshot} reads that does not move
   * {@link appliedSha} (a repair installs a run at the same commit).
   */
  private changes = 0;
  /** The repair's timer (on the injected timers), while one is set. */
  private repairTimer: { handle: TimerHandle } | null = null;
  /** The repair's next delay (ms): `retryInitialMs`, doubled per try up to `retryMaxMs`; 0 while none is due. */
  private repairDelayMs = 0;
  /** The tail's steps and the repairs, one at a time. */
  private steps: Promise<void> = Promise.resolve();
  /** The repair in progress (stop() waits for it), or null. */
  private repairing: Promise<void> | null = null;

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
    this.archiveReads = new ArchiveReads(ctx, repoId, this.rid);
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
    const index = await this.loadIndex();
    this.archive = await this.archiveReads.open();
    // Without an archive ref no run can reuse an archived id: nothing to look up per run. Nor
    // for runs restored from an index written against this very archive commit: they were
    // checked against it then (its `runs/` folder, one entry per archived run, is read and parsed
    // whole by the first lookup; at 30,000 archived runs that cost more than the rest of a warm start).
    // An unreadable archive (reported) checks nothing, and the index says so (unknown).
    this.checkedArchiveSha = this.archive === null ? undefined : this.archive.commitSha;
    const noArchiveLookups = this.archive === null || this.archive.commitSha === null || (index !== null && index.archiveSha === this.archive.commitSha);
    const runsTree = await reads.treeOid(runsPrefix.slice(0, -1));
    // Runs restored from the index cost no I/O: without a pause a warm start of 1,000,000 runs
    // would hold the event loop past the host lock's heartbeat limit (its fires then refused).
    const slicer = createTimeSlicer(DEFAULT_SLICE_MS, monotonicMs(this.ctx));
    let pending = 0;
    // The object files are the very ones the index was written with (no pack gone, no loose
    // object anywhere): every object its rows rest on is still stored, nothing to look up.
    const unchanged = index !== null && index.storeMark !== null && (await storeMarkOf(reads)) === index.storeMark;
    // Else, which of the objects the index's rows rest on known packs hold, all rows at once (see rowLoss).
    const packed = index === null || unchanged ? null : packedRows(reads, index);
    if (index !== null && noArchiveLookups && runsTree !== null && index.runsTreeOid === runsTree) {
      // The very `runs/` folder the index holds every run of: each run is its row, unread.
      let lost = 0;
      for (let i = 0; i < index.runIds.length; i++) {
        if (i % RESTORED_PER_PAUSE === 0) await slicer.pause();
        const runId = index.runIds[i] as string;
        const loss = unchanged ? null : rowLoss(reads, runId, index, i, packed);
        const found = loss === null ? null : await loss;
        if (found === null) pending += this.restoreRow(runId, index.runTreeOids, i * OID_LENGTH, index, i);
        else {
          lost += 1;
          this.dropLost(runId, found);
        }
      }
      this.indexDirty = false;
      // A run left out for a lost object: the next index does not claim every run of this folder.
      if (lost > 0) this.persistIndex(null, () => this.afterFirstFires());
      this.recovered(tip, pending, lost, startedMs);
      return;
    }
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
    // A run is read by its folder's oid from this listing, unless a foreign writer stored its
    // name twice in runs/: then, as before, by path (both entries read the folder a lookup by
    // name answers), so one entry's timers are not armed under a record the other replaces.
    const byOid = (i: number): { runTreeOid?: string } => {
      const entry = entries[i] as DirEntry;
      return entries[i - 1]?.name === entry.name || entries[i + 1]?.name === entry.name ? {} : { runTreeOid: entry.oid };
    };
    // Logs are read a few runs ahead but applied (and their timers armed) in listing order.
    const ahead = new Map<number, Promise<RunLog>>();
    const readAhead = (i: number): void => {
      const entry = entries[i];
      if (entry === undefined || ahead.has(i) || (index !== null && restorableRow(index, entry) >= 0)) return;
      // Not through the parsed-event cache: a recovery reads every log once, and would only
      // push out the logs that appends re-read.
      const log = readRunLog(scan, entry.name, { maxEventBytes: this.ctx.maxEventBytes, parsedEvents: null, ...byOid(i) });
      log.catch(() => undefined);
      ahead.set(i, log);
    };
    let sincePause = 0;
    for (let i = 0; i < entries.length; i++) {
      if (++sincePause >= RESTORED_PER_PAUSE) {
        sincePause = 0;
        await slicer.pause();
      }
      const entry = entries[i] as DirEntry;
      const row = index === null ? -1 : restorableRow(index, entry);
      if (row >= 0 && (noArchiveLookups || (await reusedArchivedRunProblem(this.archive, entry.name, entry.oid)) === null)) {
        const loss = unchanged ? null : rowLoss(reads, entry.name, index as RecoveryIndex, row, packed);
        const lost = loss === null ? null : await loss;
        if (lost === null) pending += this.restoreRow(entry.name, entry.oid, 0, index as RecoveryIndex, row);
        else {
          // Reported as a bad event; the index is written again, without it.
          badEvents += 1;
          reread += 1;
          this.dropLost(entry.name, lost);
        }
      } else {
        sincePause = RESTORED_PER_PAUSE;
        for (let k = i; k <= i + READ_AHEAD; k++) readAhead(k);
        // Not read ahead when its index summary matched: it reuses an archived run's id.
        let log: RunLog;
        try {
          log = await (ahead.get(i) ?? readRunLog(scan, entry.name, { maxEventBytes: this.ctx.maxEventBytes, parsedEvents: null, ...byOid(i) }));
        } catch (error) {
          // Its folder or events/ folder is not in the repository: this run is skipped, not the deployment.
          if (!isMissingRunObject(error)) throw error;
          badEvents += 1;
          this.skipRun(entry.name, error);
          continue;
        } finally {
          ahead.delete(i);
        }
        const record = await this.applyLog(scan, log, entry.oid);
        reread += 1;
        if (record === undefined) {
          // Read with an object of its log lost or damaged: reported, nothing armed (see applyLog).
          badEvents += log.bad.length + log.problems.length;
          continue;
        }
        badEvents += record.bad;
        if (record.reused === true) continue;
        pending += record.state.terminal === null ? record.state.pendingTimers.size : 0;
        // Untouched until something asks for it: kept as a row (see run-table.ts).
        this.runs.compact(entry.name, record);
      }
    }
    this.indexDirty = index === null || reread > 0;
    // Every run a row (none with bad events) and no stray entry: the index is every run of this
    // `runs/` folder, and says so, so that a start at this very folder need not list it.
    // Made now (the runs as recovery read them), written once the first fires are out.
    if (this.indexDirty) this.persistIndex(badEvents === 0 && this.runs.rows === this.runs.size ? runsTree : null, () => this.afterFirstFires());
    this.recovered(tip, pending, badEvents, startedMs);
  }

  /** Reports the recovery and starts the live tail from its tip. */
  private recovered(tip: string | null, pending: number, badEvents: number, startedMs: number): void {
    this.ctx.report({ type: "recovered", repoId: this.repoId, commitSha: tip, runs: this.runs.size, pending, badEvents, ms: wallMs(this.ctx) - startedMs });
    this.appliedSha = tip;
    this.tail = this.runTail(tip ?? "genesis").catch((error: unknown) => {
      if (!this.stopped) this.onTailFailed(error);
    });
    this.scheduleRepair();
  }

  /**
   * Reports a run whose folder or `events/` folder is not in the repository (readRunLog's
   * `object_missing`) and drops what the view held of it: nothing of it is armed until it can
   * be read (see {@link repair}).
   */
  private skipRun(runId: string, error: WorkflowHostError): void {
    const path = typeof error.data.path === "string" ? error.data.path : `${runsPrefix}${runId}`;
    this.reportBad({ runId, path, seq: null, error });
    this.dropDamaged(runId, [{ oid: String(error.data.oid), tree: true }], { runId, path, error });
  }

  /**
   * Reports a run restored from the recovery index whose stored objects fail the start's check
   * (see {@link rowLoss}) and keeps it, unarmed, for {@link repair}, exactly as a run read with
   * that object lost: its log is read whole once the object is back.
   */
  private dropLost(runId: string, loss: RowLoss): void {
    const error = missingObjectError(runId, loss.path, loss.oid);
    this.reportBad({ runId, path: loss.path, seq: loss.seq, error });
    this.dropDamaged(runId, [{ oid: loss.oid, tree: loss.tree }], { runId, path: loss.path, error });
  }

  /**
   * Drops what the view held of a run not read whole (its queued timers, its record) and keeps
   * it in {@link damaged} with the objects it was read without, to be read again by {@link repair}.
   */
  private dropDamaged(runId: string, missing: readonly MissingObject[], unreadable: UnreadableRun): void {
    this.changes += 1;
    this.unreadable.set(runId, unreadable);
    const record = this.runs.get(runId);
    if (record !== undefined) {
      for (const timerId of record.queued) this.ctx.queue.disarm(this.repoId, runId, timerId);
      this.runs.delete(runId);
      this.indexDirty = true;
    }
    this.damaged.set(runId, missing);
  }

  /** Sets the repair's timer when runs wait for it and none is set (see {@link repair}). */
  private scheduleRepair(): void {
    if (this.stopped || this.repairTimer !== null || this.damaged.size === 0) return;
    this.repairDelayMs = this.repairDelayMs === 0 ? this.ctx.retryInitialMs : Math.min(this.repairDelayMs * 2, this.ctx.retryMaxMs);
    const timer: { handle: TimerHandle } = { handle: null };
    this.repairTimer = timer;
    timer.handle = this.ctx.timers.setTimeout(() => {
      if (this.repairTimer === timer) this.repairTimer = null;
      const repairing = this.repair().finally(() => {
        if (this.repairing === repairing) this.repairing = null;
      });
      this.repairing = repairing;
    }, this.repairDelayMs);
  }

  /**
   * Reads the {@link damaged} runs again at the commit the view is at, between two steps of the
   * tail, and installs each that now reads whole (its objects restored: a copy or fetch that
   * completed). The others wait for the next try, unreported (each was reported when found).
   * Skipped while a fire commit of this process is in flight or adopted ahead of the tail: the
   * records are then not all at one commit.
   */
  private async repair(): Promise<void> {
    await this.exclusive(async () => {
      const sha = this.appliedSha;
      if (this.stopped || sha === undefined || sha === null || this.ownWrite !== null || this.ownCommits.size > 0) return;
      const reads = await this.ctx.store.openCommittedReads(this.ctx.principal, this.rid, sha);
      for (const [runId, missing] of [...this.damaged]) {
        const runTreeOid = await reads.treeOid(`${runsPrefix}${runId}`);
        if (runTreeOid === null) {
          this.damaged.delete(runId);
          this.unreadable.delete(runId);
          this.changes += 1;
          continue;
        }
        // Its log (up to a million events) is read again only once what was missing is there.
        if (!(await allThere(reads, missing))) continue;
        let log: RunLog;
        try {
          log = await readRunLog(reads, runId, { maxEventBytes: this.ctx.maxEventBytes, runTreeOid });
        } catch (error) {
          if (isMissingRunObject(error)) continue;
          throw error;
        }
        if (missesObjects(log)) continue;
        // Installed only at the commit it was read at, with no fire commit in flight.
        if (this.stopped || this.appliedSha !== sha || this.ownWrite !== null || this.ownCommits.size > 0) return;
        await this.applyLog(reads, log, runTreeOid);
      }
    }).catch(() => undefined);
    if (this.damaged.size === 0) this.repairDelayMs = 0;
    else this.scheduleRepair();
  }

  /** Runs `step` after the tail's step or repair in progress, before any later one. */
  private exclusive(step: () => Promise<void>): Promise<void> {
    const run = this.steps.then(step);
    this.steps = run.catch(() => undefined);
    return run;
  }

  /**
   * Ends the tail, disarms this repo's queued timers, waits for `firing` (the commit in flight),
   * then writes runs that changed since recovery to the recovery index, so the next start is warm.
   */
  async stop(firing: Promise<void> | null): Promise<void> {
    this.stopped = true;
    this.abort.abort();
    for (const [runId, queued] of this.runs.queuedTimers()) {
      for (const timerId of queued) this.ctx.queue.disarm(this.repoId, runId, timerId);
    }
    this.runs.clearQueued();
    if (this.repairTimer !== null) this.ctx.timers.clearTimeout(this.repairTimer.handle);
    this.repairTimer = null;
    this.releaseIndexWait?.();
    await Promise.allSettled([this.tail, firing, this.persisting, this.repairing]);
    if (this.indexDirty) {
      this.persistIndex(await this.wholeFolder());
      await this.persisting;
    }
  }

  /**
   * The oid of `runs/` at the ref's tip when the runs held here are exactly its runs, each at its
   * tree there and clean (no bad events, no stray entry beside them), else null: what the index
   * written at stop() may claim (see persistIndex). Costs one listing of `runs/`, here rather
   * than at the next start.
   */
  private async wholeFolder(): Promise<string | null> {
    if (!this.ctx.recoveryIndex) return null;
    try {
      const reads = await this.ctx.store.openCommittedReads(this.ctx.principal, this.rid, this.ctx.ref);
      const runsTree = await reads.treeOid(runsPrefix.slice(0, -1));
      if (runsTree === null) return null;
      const entries = await reads.listDir(runsPrefix.slice(0, -1));
      if (entries.length !== this.runs.size) return null;
      for (const entry of entries) {
        if (runsEntryProblem(entry.name, entry.type) !== null || !this.runs.cleanAt(entry.name, entry.oid)) return null;
      }
      return runsTree;
    } catch {
      return null;
    }
  }

  /**
   * Every pending timer of the runs held, as the fold of the logs at {@link appliedSha} lists
   * them (src/host/list-pending-timers.ts), without turning rows into records. The walk awaits
   * `pause` every {@link WALK_STEP} runs; when the runs changed meanwhile (a tail step, a fire
   * commit, a repair) it starts over, and after {@link WALK_TRIES} such tries walks them in one
   * go (~15 ms at 100,000 runs), so an answer comes however busy the deployment is.
   * @returns null while recovering, once stopped, and for a ref with no commit; "unsettled"
   *   while the records are not all at one commit (the tail applying a commit, a refused rewind,
   *   a fire commit of this process in flight or adopted ahead of the tail)
   */
  async pendingSnapshot(pause: () => Promise<void>): Promise<ServedPendingTimers | "unsettled" | null> {
    for (let attempt = 1; ; attempt++) {
      const sha = this.appliedSha;
      if (this.stopped || this.tail === null) return null;
      if (sha === undefined || this.ownWrite !== null || this.ownCommits.size > 0) return "unsettled";
      if (sha === null) return null;
      const version = this.changes;
      const held = this.runs.changes;
      const current = (): boolean => !this.stopped && this.appliedSha === sha && this.changes === version && this.runs.changes === held && this.ownWrite === null && this.ownCommits.size === 0;
      const runIds: string[] = [];
      const timers: PendingTimer[] = [];
      const visit = (runId: string, timer: PendingTimer): void => {
        runIds.push(runId);
        timers.push(timer);
      };
      const step = this.runs.pendingWalk();
      const whole = attempt >= WALK_TRIES;
      let intact = true;
      while (!step(whole ? Number.POSITIVE_INFINITY : WALK_STEP, visit)) {
        await pause();
        if (!current()) {
          intact = false;
          break;
        }
      }
      if (!intact) continue;
      const unreadable: UnreadableRun[] = [];
      // A run the tail has since dropped (moved to the archive) is no longer listed by the fold either.
      for (const [runId, run] of this.unreadable) if (this.damaged.has(runId) || this.runs.has(runId)) unreadable.push(run);
      return { repoId: this.repoId, commitSha: sha, runs: this.runs.size + this.damaged.size, runIds, timers, unreadable };
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
   * still holds it at `parentEventsOid`, the state that commit was made from. `fired`: the run's
   * generations that commit took, as delivered (their queue keys disarm them, see {@link sync}).
   * `record`: the run's record when the caller holds it (what {@link run} gives now); looked up
   * when left out.
   */
  adopt(
    runId: string,
    after: { state: RunState; maxFileSeq: number; eventsOid: string | null; lastEventOid: string | null; runTreeOid: string | null },
    fired?: DueGeneration | readonly DueGeneration[],
    record: RunRecord | undefined = this.runs.get(runId),
  ): void {
    if (record === undefined) return;
    record.state = after.state;
    record.maxFileSeq = after.maxFileSeq;
    record.eventsOid = after.eventsOid;
    record.lastEventOid = after.lastEventOid;
    record.runTreeOid = after.runTreeOid;
    this.indexDirty = true;
    this.changes += 1;
    this.sync(runId, record, fired);
  }

  /**
   * {@link adopt} for a run kept as row `row` of the run table (RunTable.base gave it, and the
   * table has not changed since): moved in the row itself, without turning it into a record,
   * when the row can hold the state after the commit (RunTable.adoptRow) and the view is not
   * stopping; the queue is then synced as {@link sync} syncs a run with no timer armed.
   * @returns false when declined (the caller adopts the run's record instead)
   */
  adoptRow(runId: string, row: number, after: { state: RunState; maxFileSeq: number; eventsOid: string | null; lastEventOid: string | null; runTreeOid: string | null }, fired?: DueGeneration | readonly DueGeneration[]): boolean {
    if (this.stopped) return false;
    const queued = this.runs.adoptRow(row, after.state, after.maxFileSeq, after.eventsOid, after.lastEventOid, after.runTreeOid);
    if (queued === null) return false;
    this.indexDirty = true;
    this.changes += 1;
    // sync() with nothing wanted: every queued timer is dropped, by its delivered key when it has one.
    for (let i = 0; i < queued.length; i++) this.disarmQueued(runId, queued[i] as string, fired);
    this.ctx.queue.settle(this.repoId, runId, NO_TIMERS, after.state.lastSeq);
    return true;
  }

  /**
   * Notes that `runs` were adopted at `commitSha` (see {@link ownCommits}), until the tail passes
   * that commit. @param complete the commit changed nothing but those runs
   */
  noteOwnCommit(commitSha: string, parentSha: string | null, runs: ReadonlySet<string>, complete: boolean): void {
    this.ownCommits.set(commitSha, { parentSha, runs, complete });
    if (this.ownCommits.size > OWN_COMMITS_KEPT) this.ownCommits.delete(this.ownCommits.keys().next().value as string);
  }

  /**
   * Whether every run record is exactly at `sha`: the tail applied that commit last and no run
   * was adopted ahead of it (a fire commit the tail has not reached yet).
   */
  recordsAt(sha: string | null): boolean {
    return sha !== null && sha === this.appliedSha && this.ownCommits.size === 0;
  }

  /**
   * The note of `commitSha` when its parent is `parentSha` (the tail is applying exactly that
   * commit), forgotten now with the notes of this process's earlier commits (noted before it: the
   * ref's history is linear, so the tail has passed them); undefined for any other commit.
   */
  takeOwnCommit(commitSha: string, parentSha: string | null): OwnCommit | undefined {
    const own = this.ownCommits.get(commitSha);
    if (own === undefined) return undefined;
    for (const sha of this.ownCommits.keys()) {
      this.ownCommits.delete(sha);
      if (sha === commitSha) break;
    }
    return own.parentSha === parentSha ? own : undefined;
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
  private async loadIndex(): Promise<RecoveryIndex | null> {
    const { store, principal } = this.ctx;
    if (!this.ctx.recoveryIndex || store.readDerived === undefined) return null;
    try {
      const bytes = await store.readDerived(principal, this.rid, RECOVERY_INDEX_FILE);
      return bytes === null ? null : decodeRecoveryColumns(bytes, this.ctx.maxEventBytes);
    } catch {
      // A cache that cannot be read is a cache miss.
      return null;
    }
  }

  /**
   * Resolves {@link INDEX_WRITE_DELAY_MS} after now, then once the fire loop is idle or, under
   * a load that never leaves it idle, {@link INDEX_IDLE_WAIT_MAX_MS} later; at once (then after
   * the commit in flight) when stop() releases it.
   */
  private afterFirstFires(): Promise<void> {
    return this.indexWait(INDEX_WRITE_DELAY_MS).then(() => {
      if (this.stopped) return this.firesIdle();
      const capped = this.indexWait(INDEX_IDLE_WAIT_MAX_MS);
      // Idle first: the capped wait's timer is cleared (its release is the one waiting).
      return Promise.race([this.firesIdle().then(() => this.releaseIndexWait?.()), capped]);
    });
  }

  /** Resolves `ms` after now on the injected timers, or when stop() calls {@link releaseIndexWait}. */
  private indexWait(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const release = (): void => {
        this.ctx.timers.clearTimeout(handle);
        if (this.releaseIndexWait === release) this.releaseIndexWait = null;
        resolve();
      };
      const handle = this.ctx.timers.setTimeout(release, ms);
      this.releaseIndexWait = release;
    });
  }

  /**
   * Writes every run whose state is known to match its tree oid, in the background (one write
   * at a time; stop() waits for it). Failures are ignored: the index is only a cache.
   * @param runsTree the `runs/` folder the runs are all the runs of, exactly, or null
   * @param waitFor started now: what the write also waits for (the rows are taken now; the
   *   object files' mark, see CommittedReads.storeMark, when the write begins)
   */
  private persistIndex(runsTree: string | null = null, waitFor?: () => Promise<void>): void {
    const { store, principal } = this.ctx;
    if (!this.ctx.recoveryIndex || store.writeDerived === undefined) return;
    this.indexDirty = false;
    const after = waitFor?.();
    const writer = new RecoveryIndexWriter(this.ctx.maxEventBytes);
    this.runs.writeSummaries(writer);
    const header = this.checkedArchiveSha === undefined ? {} : { archiveSha: this.checkedArchiveSha };
    const previous = this.persisting ?? Promise.resolve();
    this.persisting = previous
      .then(() => after)
      // The object files' mark is taken after the rows' objects are stored (they are committed),
      // so an equal mark at a start means they still are; a merge or another writer's pack in
      // between only makes the next start's mark differ (it then looks the objects up).
      .then(async () => {
        const storeMark = await store.openCommittedReads(principal, this.rid, this.ctx.ref).then(storeMarkOf, () => null);
        return store.writeDerived?.(principal, this.rid, RECOVERY_INDEX_FILE, writer.bytes(runsTree, { ...header, storeMark }));
      })
      .then((written) => {
        // A directory sat where the index goes (every start walked all runs): moved aside, said once.
        if (written?.displaced !== undefined) this.ctx.report({ type: "index_replaced", repoId: this.repoId, displacedTo: written.displaced });
      })
      .catch(() => undefined);
  }

  /**
   * Installs row `row` of the recovery index as a row of the run table and arms its timers, as
   * {@link sync} would for a record made from it. @returns its pending timers (0 once ended)
   */
  private restoreRow(runId: string, runTreeOid: string, runTreeAt: number, index: RecoveryIndex, row: number): number {
    const first = index.firstTimer[row] as number;
    const count = (index.firstTimer[row + 1] as number) - first;
    const terminal = index.terminals[row] as RunState["terminal"];
    const lastSeq = index.runNumbers[3 * row + 1] as number;
    let queued = 0;
    let queuedIds: string[] | null = null;
    if (terminal === null && count > 0) {
      // The run's timers as sync() sees them (paused series are not queued), as a map only if
      // the queue looks (it holds suppressions of this run).
      this.ctx.queue.settle(this.repoId, runId, new UnpausedTimers(index.timers, first, count), lastSeq);
      for (let i = 0; i < count; i++) {
        const timer = index.timers[first + i] as PendingTimer;
        if (timer.pausedAt !== undefined || !this.arm(runId, timer, slotDueMs(runId, timer))) continue;
        if (count > MASK_BITS) (queuedIds ??= []).push(timer.timerId);
        else queued |= 1 << i;
      }
    } else {
      this.ctx.queue.settle(this.repoId, runId, NO_TIMERS, lastSeq);
    }
    const noEvents = noEventsOidAt(index, row);
    this.runs.addRow(runId, runTreeOid, runTreeAt, noEvents ? "" : index.eventsOids, row * OID_LENGTH, noEvents ? "" : index.lastEventOids, index.runNumbers[3 * row] as number, lastSeq, terminal, index.timers, first, count, queuedIds ?? queued);
    return terminal === null ? count : 0;
  }

  /** The run's record, made with `state` when new (the caller sets the state either way). */
  private recordOf(runId: string, state: RunState): RunRecord {
    let record = this.runs.get(runId);
    if (record === undefined) {
      record = { state, maxFileSeq: -1, eventsOid: null, lastEventOid: null, runTreeOid: null, bad: 0, queued: [] };
      this.runs.set(runId, record);
    }
    return record;
  }

  /**
   * Reads a run's whole log at `reads` and installs it (a re-read by the tail). A run with no
   * folder at `reads` (deleted by the commit, or replaced by a file or a gitlink of its name) is
   * dropped (see {@link dropRun}): a fresh recovery there would not hold it (the file is reported
   * as not a run folder, from the commit's change). A run whose folder or `events/` folder is named but not in the
   * repository is reported and dropped (see skipRun), as is one read with any other object of
   * its log lost or damaged (see applyLog).
   * @returns its record, or undefined when it was dropped
   */
  async readRun(reads: CommittedReads, runId: string): Promise<RunRecord | undefined> {
    const runTreeOid = await reads.treeOid(`${runsPrefix}${runId}`);
    // treeOid names a blob too: a file where the folder was is no run (readBlob is null for a folder).
    if (runTreeOid === null || (await reads.readBlob(`${runsPrefix}${runId}`)) !== null) {
      this.dropRun(runId);
      return undefined;
    }
    let log: RunLog;
    try {
      log = await readRunLog(reads, runId, { maxEventBytes: this.ctx.maxEventBytes });
    } catch (error) {
      if (!isMissingRunObject(error)) throw error;
      this.skipRun(runId, error);
      return undefined;
    }
    return this.applyLog(reads, log, runTreeOid);
  }

  /**
   * Forgets a run whose folder the commit being applied removed (retention moved it to the
   * archive ref, or a pushed commit deleted it, which the tail reports): its queued timers
   * are disarmed, it leaves the run table and the runs waiting for {@link repair}, and the
   * recovery index is written again without it. No-op for a run the view does not know.
   */
  dropRun(runId: string): void {
    const record = this.runs.get(runId);
    if (record !== undefined) {
      for (const timerId of record.queued) this.ctx.queue.disarm(this.repoId, runId, timerId);
      this.runs.delete(runId);
      this.indexDirty = true;
    }
    const damaged = this.damaged.delete(runId);
    if (this.unreadable.delete(runId) || damaged || record !== undefined) this.changes += 1;
  }

  /**
   * Installs a run's log as read at `reads` and arms its timers. A log read with an object lost
   * or damaged (an event blob, `blobs/`, the sealed log: readRunLog's `object_missing`, or
   * `object_corrupt` naming the run) is reported and not installed: the lost event could be a
   * one-shot's `TimerFired`, its cancel or the run's end, and the rest of the log would arm (and
   * fire) it again. What the view held of the run is dropped, and {@link repair} installs it once
   * it reads whole (design notes §69).
   * @returns its record, or undefined when it was not installed
   */
  private async applyLog(reads: CommittedReads, log: RunLog, runTreeOid: string | null): Promise<RunRecord | undefined> {
    const runId = log.runId;
    for (const bad of [...log.bad, ...log.problems]) this.reportBad(bad);
    const missing = missingObjects(log);
    if (missing.length > 0) {
      this.dropDamaged(runId, missing, unreadablePartOf(runId, log.bad, log.problems) as UnreadableRun);
      return undefined;
    }
    const state = timerState(log.state);
    const record = this.recordOf(runId, state);
    record.state = state;
    record.maxFileSeq = log.maxFileSeq;
    record.eventsOid = log.eventsOid !== undefined ? log.eventsOid : await reads.treeOid(runEventsPrefix(runId).slice(0, -1));
    record.lastEventOid = log.lastEventOid !== undefined ? log.lastEventOid : record.eventsOid === null ? null : await eventFileOid(reads, runId, log.maxFileSeq);
    record.runTreeOid = runTreeOid ?? (await reads.treeOid(`${runsPrefix}${runId}`));
    // Counted with the bad files, so the recovery index keeps no summary of this run and every
    // start reports its problems again.
    record.bad = log.bad.length + log.problems.length;
    this.damaged.delete(runId);
    this.changes += 1;
    const noLog = noLogOf(this.repoId, log);
    if (noLog === null) this.unreadable.delete(runId);
    else this.unreadable.set(runId, noLog);
    // A folder that reuses an archived run's id is not that run, nor a new one: reported, never armed.
    this.archive ??= await this.archiveReads.open();
    const reused = await reusedArchivedRunProblem(this.archive, runId, record.runTreeOid);
    // Set only on a run that is (or was) a reused id: a record has the shape the run table's
    // records have (recordOf, RunTable), so the fire path's sync sees one shape of record, not
    // recovery's and the table's ("wrong map", design notes §58).
    if (reused !== null || record.reused !== undefined) record.reused = reused !== null;
    if (reused !== null) {
      this.reportBad(reused);
      record.bad += 1;
    }
    this.indexDirty = true;
    this.sync(runId, record);
    return record;
  }

  /** Takes a queued timer of the run out of the queue: by its delivered key when `delivered` holds it, else by its id. */
  private disarmQueued(runId: string, timerId: string, delivered: DueGeneration | readonly DueGeneration[] | undefined): void {
    const key = deliveredKey(delivered, timerId);
    if (key === undefined) this.ctx.queue.disarm(this.repoId, runId, timerId);
    else this.ctx.queue.disarmKey(key);
  }

  /**
   * Makes the queue hold exactly the run's armed, unsuppressed timers (none once stopped: stop()
   * disarmed them). `delivered`: generations of this run as the queue delivered them (a fire
   * commit's); a timer among them is disarmed by its delivered key, not by a key built anew.
   */
  sync(runId: string, record: RunRecord, delivered?: DueGeneration | readonly DueGeneration[]): void {
    if (this.stopped) return;
    // A paused series is armed in the log but not queued: nothing of it is due until it resumes.
    const wanted: ReadonlyMap<string, PendingTimer> = record.state.terminal === null && record.reused !== true ? armedUnpaused(record.state.pendingTimers) : NO_TIMERS;
    // Indexed loops, no some/filter with closures: a fire commit syncs every run it appended to.
    let dropped = 0;
    for (let i = 0; i < record.queued.length; i++) {
      const timerId = record.queued[i] as string;
      if (wanted.has(timerId)) continue;
      this.disarmQueued(runId, timerId, delivered);
      dropped += 1;
    }
    if (dropped === record.queued.length) {
      if (dropped > 0) record.queued = [];
    } else if (dropped > 0) record.queued = record.queued.filter((timerId) => wanted.has(timerId));
    this.ctx.queue.settle(this.repoId, runId, wanted, record.state.lastSeq);
    if (wanted.size === 0) return;
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
    let rewrite: { from: string | null; to: string } | null = null;
    const commits = store.subscribe(principal, this.rid, ref, {
      from,
      signal: this.abort.signal,
      onRewrite: (info) => {
        rewrite = info;
        this.ctx.report({ type: "ref_rewritten", repoId: this.repoId, ...info });
      },
    });
    for await (const commit of commits) {
      if (this.stopped) return;
      const rewritten: { from: string | null; to: string } | null = rewrite;
      rewrite = null;
      if (await this.refusesRewind(commit, rewritten)) continue;
      // The ref watcher can show this process's fire commit before the committer is back from
      // the write: a commit on the parent of the fire commit in flight may be that commit, so the
      // committer adopts its runs first and this step then skips them. A commit by someone else
      // waits for at most that one write.
      const own = this.ownWrite;
      if (own !== null && own.parentSha === commit.parentSha) await own.settled;
      await this.exclusive(async () => {
        this.appliedSha = undefined;
        await applyTailCommit(this, commit);
        this.appliedSha = commit.commitSha;
      });
      this.onTailApplied();
      this.scheduleRepair();
    }
  }

  /**
   * The ref moved back to one of its own ancestors (`from` → `to`) behind this host, which
   * holds the runs as they were at `from`; null: not rewound. While it is set nothing is
   * committed (see {@link assertNotRewound}) and the tail applies nothing: re-reading the runs at
   * `to` would arm again the timers this host fired after it. It ends when the ref is back at
   * `from` (or a descendant of it); any other rewrite restarts the tracker, which then takes the
   * ref as it finds it, as a host started afterwards would.
   */
  private rewound: { readonly from: string; readonly to: string } | null = null;

  /**
   * Whether the tail skips `commit` because of a refused rewind (see {@link rewound}).
   * @param rewrite the rewrite the subscription reported just before yielding `commit`, if any
   * @throws ref_rewound when a rewrite other than a rewind ends a refused one (the tracker is retried from the tip)
   */
  private async refusesRewind(commit: { commitSha: string; parentSha: string | null }, rewrite: { from: string | null; to: string } | null): Promise<boolean> {
    const isRewrite = rewrite !== null && rewrite.to === commit.commitSha;
    if (isRewrite && rewrite.from !== null && (await this.isRewind(rewrite.from, rewrite.to))) {
      if (this.rewound === null) {
        this.rewound = { from: rewrite.from, to: rewrite.to };
        this.ctx.report({ type: "rewind_refused", repoId: this.repoId, from: rewrite.from, to: rewrite.to });
      }
      this.appliedSha = undefined;
      return true;
    }
    const held = this.rewound;
    if (held === null) return false;
    if (isRewrite) {
      throw new WorkflowHostError("ref_rewound", `${this.ctx.ref} of ${this.repoId} was rewritten again (to ${commit.commitSha}) while a rewind from ${held.from} was refused; the deployment is read afresh from the new tip`, { repoId: this.repoId, from: held.from, to: commit.commitSha });
    }
    // Back at the commit this host last held the runs at: they are current again.
    if (commit.commitSha === held.from) {
      this.rewound = null;
      this.appliedSha = commit.commitSha;
    }
    return true;
  }

  /** Whether `to` is an ancestor of `from` (a rewind); false when the store cannot tell or `from` is gone. */
  private async isRewind(from: string, to: string): Promise<boolean> {
    const { store, principal } = this.ctx;
    if (store.isAncestor === undefined) return false;
    try {
      return await store.isAncestor(principal, this.rid, to, from);
    } catch {
      return false;
    }
  }

  /**
   * Refuses a fire commit while a rewind is refused (see {@link rewound}): the committer retries
   * with backoff, so what is due is committed once the ref is restored, never dropped.
   * @throws ref_rewound
   */
  assertNotRewound(): void {
    const held = this.rewound;
    if (held === null) return;
    throw new WorkflowHostError(
      "ref_rewound",
      `${this.ctx.ref} of ${this.repoId} was moved back from ${held.from} to its ancestor ${held.to} behind this host; nothing is committed until it is restored (git update-ref ${this.ctx.ref} ${held.from}) or the host restarts (then it takes the ref as it is)`,
      { repoId: this.repoId, from: held.from, to: held.to },
    );
  }

  /** Reports a bad event and counts it. */
  reportBad(bad: BadEvent): void {
    this.ctx.count("badEvents");
    this.ctx.report({ type: "bad_event", repoId: this.repoId, runId: bad.runId, seq: bad.seq, path: bad.path, error: bad.error });
  }
}

/**
 * The run's {@link UnreadableRun} when it holds no log (its `events` entry a file or a link; see
 * requireRunLog), else null.
 */
function noLogOf(repoId: string, log: RunLog): UnreadableRun | null {
  try {
    requireRunLog(repoId, log);
    return null;
  } catch (error) {
    const e = error as WorkflowHostError;
    return { runId: log.runId, path: String(e.data["path"]), error: e };
  }
}

/** An object a run's log names that was not in the repository when it was read: a blob, or a folder (`tree`). */
interface MissingObject {
  readonly oid: string;
  readonly tree: boolean;
}

/** The objects a run's log was read without (see readRunLog's `object_missing`, and `object_corrupt` naming a run). */
function missingObjects(log: RunLog): MissingObject[] {
  const out: MissingObject[] = [];
  for (const bad of [...log.bad, ...log.problems]) {
    if (!isMissingRunObject(bad.error)) continue;
    // The `blobs/` folder is the one folder among them; events and the sealed log are blobs.
    out.push({ oid: String(bad.error.data.oid), tree: bad.path.endsWith("/blobs") });
  }
  return out;
}

/** Whether a run's log was read with one of its objects missing. */
function missesObjects(log: RunLog): boolean {
  return missingObjects(log).length > 0;
}

/**
 * The oid of the run's event file `<seq>.json` at `reads` (a lookup in folders the read just
 * walked), or null when there is none. A log with a folder there has a bad event and is never
 * kept in the recovery index, so what it names there is not checked.
 */
function eventFileOid(reads: CommittedReads, runId: string, seq: number): Promise<string | null> {
  return seq < 0 ? Promise.resolve(null) : reads.treeOid(`${runEventsPrefix(runId)}${seq}.json`);
}

/** Whether every one of `missing` can be read now (false while one is still not there, or cannot be read). */
async function allThere(reads: CommittedReads, missing: readonly MissingObject[]): Promise<boolean> {
  try {
    for (const { oid, tree } of missing) {
      if (!tree) await reads.readBlobByOid(oid);
      else if (reads.listTree !== undefined) await reads.listTree(oid);
      else if (reads.readTreeBytes !== undefined && (await reads.readTreeBytes(oid)) === null) return false;
    }
    return true;
  } catch {
    return false;
  }
}

/** Length of a hex object id. */
const OID_LENGTH = 40;

/** `reads.storeMark()`, or null when the store has none or it fails (the rows' objects are then looked up). */
async function storeMarkOf(reads: CommittedReads): Promise<string | null> {
  try {
    return (await reads.storeMark?.()) ?? null;
  } catch {
    return null;
  }
}

/** The first object a restored row rests on that is not stored (see {@link rowLoss}). */
interface RowLoss {
  readonly oid: string;
  readonly path: string;
  readonly seq: number | null;
  readonly tree: boolean;
}

/** Per row of a recovery index, 1 where known packs hold its events folder, its last event's blob (see CommittedReads.packedAll). */
interface PackedRows {
  readonly events: Uint8Array;
  readonly lasts: Uint8Array;
}

/** The rows' {@link PackedRows}, or null when the reads cannot tell in one go. */
function packedRows(reads: CommittedReads, index: RecoveryIndex): PackedRows | null {
  const packedAll = reads.packedAll;
  if (packedAll === undefined) return null;
  return { events: packedAll.call(reads, index.eventsOids), lasts: packedAll.call(reads, index.lastEventOids) };
}

/**
 * Whether the objects row `row` of the recovery index rests on are still stored: the run's
 * `events/` folder and its last event's blob, for a run that has not ended and has pending
 * timers (what the scheduler would fire from the row). The index was made from a whole read of
 * that very tree, but an object can be lost afterwards while the host is stopped (a deleted
 * loose file, a lost pack, a bad copy): the row would then arm and fire a run whose log has a
 * hole, and the fire commit append after it (design notes §74). Existence only, no read: a pack
 * index lookup each, all rows at once (`packed`), and a loose file's stat for an object no known
 * pack holds. Not seen here: a damaged object that is still there, a lost event before the last,
 * a lost run folder (a fire commit rebuilds it from its `events/` oid; the tip's log is whole);
 * `check` reads every object.
 * @returns null when they are all stored (at once, no promise, when known packs hold them), else
 *   the first that is not, or a promise of either
 */
function rowLoss(reads: CommittedReads, runId: string, index: RecoveryIndex, row: number, packed: PackedRows | null): RowLoss | null | Promise<RowLoss | null> {
  const stored = reads.stored;
  if (stored === undefined || index.terminals[row] !== null || (index.firstTimer[row + 1] as number) === (index.firstTimer[row] as number)) return null;
  if (noEventsOidAt(index, row)) return null;
  const noLast = noLastEventOidAt(index, row);
  // Known packs hold both (a deployment this host wrote): no string, no call per object.
  if (packed !== null && packed.events[row] === 1 && (noLast || packed.lasts[row] === 1)) return null;
  const eventsOid = eventsOidAt(index, row) as string;
  const lastOid = noLast ? null : lastEventOidAt(index, row);
  const a = stored.call(reads, eventsOid);
  const b = lastOid === null ? true : stored.call(reads, lastOid);
  if (a === true && b === true) return null;
  // Awaited in turn below: the second, when the first is already a loss, is not left unhandled.
  if (b instanceof Promise) b.catch(() => undefined);
  return (async (): Promise<RowLoss | null> => {
    const eventsPath = `${runsPrefix}${runId}/events`;
    if (!(await a)) return { oid: eventsOid, path: eventsPath, seq: null, tree: true };
    const seq = index.runNumbers[3 * row] as number;
    if (!(await b)) return { oid: lastOid as string, path: `${eventsPath}/${seq}.json`, seq, tree: false };
    return null;
  })();
}

/** Runs a fire commit of this process adopted (see DeploymentView.noteOwnCommit). */
export interface OwnCommit {
  readonly parentSha: string | null;
  readonly runs: ReadonlySet<string>;
  /** The commit changed nothing but these runs' logs: the tail has nothing to read in it. */
  readonly complete: boolean;
}

/**
 * The index's row of the run when it was computed at this very tree (then its log is not read:
 * a state is a function of the tree), else -1.
 */
function restorableRow(index: RecoveryIndex, entry: DirEntry): number {
  const row = index.rowOf(entry.name);
  return row >= 0 && entry.oid.length === OID_LENGTH && index.runTreeOids.startsWith(entry.oid, row * OID_LENGTH) ? row : -1;
}

const NO_SIGNAL_IDS: ReadonlySet<string> = new Set();
const NO_TIMERS: ReadonlyMap<string, PendingTimer> = new Map();
const NO_SIGNALS: RunState["unconsumedSignals"] = Object.freeze([]);

/**
 * What the scheduler keeps of a run's state: its timers, end and last seq. The signal sets are
 * the signal channel's (each channel reads them from the log) and can hold every payload a run
 * received; a run restored from the recovery index has them empty too (see run-table.ts).
 * Empty collections are shared: the reducer copies a collection before it changes it.
 */
function timerState(state: RunState): RunState {
  if (state.observedSignalIds === NO_SIGNAL_IDS && state.unconsumedSignals === NO_SIGNALS) return state;
  // A literal in the order every state is made in (run-state.ts, run-table.ts), not a spread: a
  // copied state had a shape of its own, and the fire path's states, made by the reducer, did not
  // match the code recovery had optimised for its own ("wrong map", design notes §58).
  return { runId: state.runId, lastSeq: state.lastSeq, terminal: state.terminal, pendingTimers: state.pendingTimers, observedSignalIds: NO_SIGNAL_IDS, unconsumedSignals: NO_SIGNALS };
}

/** The armed timers that are not paused series (the same map when none is paused). */
function armedUnpaused(timers: ReadonlyMap<string, PendingTimer>): ReadonlyMap<string, PendingTimer> {
  if (timers.size === 0) return timers;
  let paused = false;
  for (const t of timers.values()) if (t.pausedAt !== undefined) paused = true;
  if (!paused) return timers;
  return new Map([...timers].filter(([, t]) => t.pausedAt === undefined));
}

/**
 * The queue key of `timerId`'s generation among `delivered` (one generation, or a list), or
 * undefined: a delivered key is the very string the queue holds (built, flattened and hashed once
 * at arming), where building `repo/run/timer` again makes a new string to hash per fired timer.
 */
function deliveredKey(delivered: DueGeneration | readonly DueGeneration[] | undefined, timerId: string): string | undefined {
  if (delivered === undefined) return undefined;
  if (!Array.isArray(delivered)) {
    const one = delivered as DueGeneration;
    return one.pending.timerId === timerId ? one.key : undefined;
  }
  const list = delivered as readonly DueGeneration[];
  for (let i = 0; i < list.length; i++) if ((list[i] as DueGeneration).pending.timerId === timerId) return (list[i] as DueGeneration).key;
  return undefined;
}
