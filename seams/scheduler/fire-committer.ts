/**
 * Commits a deployment's due timers: the fire loop. Due generations delivered by the queue wait
 * in a buffer; the loop takes them out in batches, one commit per batch, each decided under the
 * repo lock from the log at the parent commit (that re-check is what makes firing exactly-once).
 *
 * States: idle (nothing buffered) → throttled (waiting for the group-commit interval) →
 * committing → idle; a failed commit re-arms its timers after a backoff (doubling up to
 * `retryMaxMs`, back to `retryInitialMs` after a commit or a tail step); a batch whose content is
 * refused is bisected so the healthy timers still commit. A batch that fails because one run's
 * folder is not in the repository (a disk fault, a bad copy) commits without that run, found by
 * its folder oids or by bisecting the batch by run; the run is reported and retried after
 * `retryMaxMs`. A run whose log, read at the parent, lacks an event's object is not fired from
 * the rest of it (the lost event could be the very fire): its timers are left out the same way.
 * stop() ends any wait and lets the commit in flight finish.
 *
 * Time is injected: "now" is the context's clock, the throttle waits on its timers and measures
 * their monotonic `now`, and the commit's work is sliced on that same monotonic time.
 */
import { WorkflowHostError } from "../../src/errors.js";
import { isUnreadableObject } from "../../src/substrate/object-store.js";
import type { AppendedFolder, CommittedReads, FolderAppend } from "../../src/substrate/types.js";
import { serializeEvent, serializePlainTimerFiredOf } from "../../src/workflow/events.js";
import { eventsFolder, runEventsPrefix, runsPrefix } from "../../src/workflow/paths.js";
import type { TimerHandle } from "../../src/time/clock.js";
import { deepFreeze } from "../../src/workflow/parsed-event-cache.js";
import { readRunLog } from "../../src/workflow/run-log.js";
import { unreadablePartOf, unreadableRunError } from "../../src/workflow/unreadable-runs.js";
import { applyEvent } from "../../src/workflow/run-state.js";
import { planDueTimer, type FirePlan } from "../../src/workflow/timer-ledger.js";
import { prepareTicksBetween } from "../../src/workflow/cron.js";
import { createTimeSlicer, DEFAULT_SLICE_MS } from "../../src/time/time-slicer.js";
import { isoFromMs } from "../../src/workflow/time.js";
import type { PendingTimer, RunEvent, RunState } from "../../src/workflow/types.js";
import type { DeploymentView } from "./deployment-view.js";
import { RowBase, type RunRecord } from "./run-table.js";
import type { DueGeneration } from "./scheduler-queue.js";
import type { CommittedEvents } from "./scheduler-types.js";
import { monotonicMs, wallMs, type TrackerContext } from "./tracker-context.js";

type Added = CommittedEvents["events"][number];
/**
 * A run a commit appends to: its events tree at the parent, and its state after the commit.
 * `base`: what the view gave the plan of it (its record, or its row, see RunTable.base; null when
 * the run was read afresh), taken as the run's at the adopt while the view's run table has not
 * changed since planning began (`Planned.tableAt`): no second lookup, no record made of a row.
 */
type After = { runId: string; parentEventsOid: string | null; state: RunState; maxFileSeq: number; append: number; due: DueGeneration | DueGeneration[]; base: RunRecord | RowBase | null };
/** What a fire commit's plan hands on: `tableAt` is the view's RunTable.changes when planning began. */
type Planned = { outcomes: Outcome[]; after: After[]; added: Added[]; refused: Refused[]; tableAt: number };
type Outcome = { timer: PendingTimer; plan: FirePlan; runId: string };
/** A run whose log, read at the commit's parent, lacks an object: its due timers, and why (see FireCommitter.freshRun). */
type Refused = { runId: string; timers: PendingTimer[]; error: WorkflowHostError };

export class FireCommitter {
  /** Due timers waiting for the fire loop, with the queue time they were delivered at. */
  private readonly buffer = new Map<string, DueGeneration>();
  private firing: Promise<void> | null = null;
  private retryMs: number;
  private stopped = false;
  private readonly monoMs: () => number;
  /** When (`monoMs()`) the last fire commit of this repo started. */
  private lastCommitStartMs = Number.NEGATIVE_INFINITY;
  /** Ends the group-commit wait early (on stop); null when the fire loop is not waiting. */
  private wakeThrottle: (() => void) | null = null;
  /** Set while the scheduler stops: fire commits are no longer held back. */
  private throttleReleased = false;
  /** Timers the previous commit of this run of the fire loop took (0: the loop started idle). */
  private lastBatch = 0;

  constructor(
    private readonly view: DeploymentView,
    private readonly ctx: TrackerContext,
  ) {
    this.retryMs = ctx.retryInitialMs;
    this.monoMs = monotonicMs(ctx);
    // The recovery index's write waits for the fires due at recovery (DeploymentView.recover).
    view.firesIdle = () => this.idle();
  }

  /**
   * Adds due timers to this repo's fire buffer and runs the fire loop until it is empty.
   * `dueMs` is the queue time each was delivered at: the queue's clock reading was at least
   * that, so it is a floor for "now" (case E3: a later reading that runs behind must not turn a
   * delivered timer back into "not due" and spin).
   */
  fire(due: readonly DueGeneration[]): Promise<void> {
    // Keyed by the queue key (repo, run, timer): a string the queue already holds, not a new one per timer.
    for (let i = 0; i < due.length; i++) {
      const item = due[i] as DueGeneration;
      this.buffer.set(item.key, item);
    }
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

  /** The next failed commit waits `retryInitialMs` again (the repo is reachable). */
  resetBackoff(): void {
    this.retryMs = this.ctx.retryInitialMs;
  }

  /**
   * Stops holding fire commits back, for a scheduler that is stopping: a pending group-commit
   * wait ends now and later ones are skipped, so what is due is committed and `stop()` never
   * waits on a timer that nobody will advance.
   */
  releaseThrottle(): void {
    this.throttleReleased = true;
    this.wakeThrottle?.();
  }

  /** Starts no further commit. @returns the commit in flight, if any (to wait for) */
  stop(): Promise<void> | null {
    this.stopped = true;
    this.wakeThrottle?.();
    return this.firing;
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
      const waitMs = this.ctx.minCommitIntervalMs - (this.monoMs() - this.lastCommitStartMs);
      if (waitMs > 0 && !this.throttleReleased) {
        await this.throttle(waitMs);
        if (this.stopped) break;
        // The batch is cut now: timers that came due during the wait go out in this commit,
        // not one interval after it (the queue hands nothing over while this loop runs).
        this.ctx.takeDue();
      }
      if (this.stopped) break;
      this.lastCommitStartMs = this.monoMs();
      const batch = this.takeBatch(nextBatchSize(this.lastBatch, this.buffer.size, this.ctx.maxBatch));
      this.lastBatch = batch.length;
      await this.commitBatch(batch);
      // What came due while this commit ran is the next batch, without a round through the queue.
      if (!this.stopped) this.ctx.takeDue();
    }
    this.lastBatch = 0;
  }

  /**
   * Takes up to `size` buffered timers, oldest delivered first. A loop over thousands of timers
   * in a method of its own: kept inside the (async, rarely called) fire loop, it made V8 compile
   * that loop with everything it calls inlined, for a burst that calls it once (see design notes).
   */
  private takeBatch(size: number): DueGeneration[] {
    const batch: DueGeneration[] = [];
    // By value (each is filed under its own key): an entries iterator makes a pair per timer.
    for (const item of this.buffer.values()) {
      batch.push(item);
      this.buffer.delete(item.key);
      if (batch.length >= size) break;
    }
    return batch;
  }

  /**
   * Commits one batch. Everything is decided inside `computeDelta`, under the repo lock, from
   * the log at the parent commit: that re-check is what makes firing exactly-once.
   */
  private async commitBatch(due: readonly DueGeneration[]): Promise<void> {
    // Until this commit has landed and its runs are adopted, the tail holds back a commit on the
    // same parent (it may be this one), so it finds the runs adopted instead of reading them back.
    let settle!: () => void;
    const settled = new Promise<void>((resolve) => {
      settle = resolve;
    });
    try {
      await this.commitAndAdopt(due, settled);
    } finally {
      if (this.view.ownWrite?.settled === settled) this.view.ownWrite = null;
      settle();
    }
  }

  private async commitAndAdopt(due: readonly DueGeneration[], settled: Promise<void>): Promise<void> {
    let floorMs = Number.NEGATIVE_INFINITY;
    for (let i = 0; i < due.length; i++) floorMs = Math.max(floorMs, (due[i] as DueGeneration).dueMs);
    const handOver = this.ctx.onCommittedEvents !== undefined;
    // The whole commit (planning, hashing, folder edits, validation) gives the event loop a turn
    // every few ms (heartbeats, the tail, signals, other deployments), however many runs the
    // batch holds and however long a series was missed: that is what lets a batch be big.
    const slicer = createTimeSlicer(DEFAULT_SLICE_MS, this.monoMs);
    let result;
    try {
      result = await this.ctx.store.writeTreeDelta<Planned>(this.ctx.principal, this.view.rid, this.ctx.ref, {
        message: `Fire ${due.length} timer${due.length === 1 ? "" : "s"}`,
        pause: slicer.pause,
        // Every change is an event this commit built from the log at the parent, under the repo
        // lock, by the rules validatePush checks: appended at the run's next seq (freshRun), to a
        // run that has not ended (planDueTimer), each event validated once above.
        prevalidated: true,
        computeDelta: async (parentSha, reads) => {
          this.view.assertNotRewound();
          this.view.ownWrite = { parentSha, settled };
          // Before any run is taken: a run added, replaced, removed or made a record from here on moves it.
          const tableAt = this.view.runs.changes;
          const nowMs = Math.max(wallMs(this.ctx), floorMs);
          const at = isoFromMs(nowMs);
          // Each run's new event files, appended to its events folder: the store builds the run's
          // two new folders from their stored bytes (TreeDelta.appends), with no generic edit.
          const appends: FolderAppend[] = [];
          const outcomes: Outcome[] = [];
          const after: After[] = [];
          const added: Added[] = [];
          const refused: Refused[] = [];
          // The view's records are at this very parent: each run's state is taken as it is,
          // without looking its folder up in the parent's tree.
          const current = this.view.recordsAt(parentSha);
          // A run's one due generation as it is (a burst's usual run), a list from its second on.
          const byRun = new Map<string, DueGeneration | DueGeneration[]>();
          // Loops here and below are indexed, once per timer: a for-of makes an iterator result
          // per step until V8 has optimised the loop, which a fresh host's first burst runs before.
          for (let i = 0; i < due.length; i++) {
            const d = due[i] as DueGeneration;
            const held = byRun.get(d.runId);
            if (held === undefined) byRun.set(d.runId, d);
            else if (Array.isArray(held)) held.push(d);
            else byRun.set(d.runId, [held, d]);
          }
          // One options object for the commit; a series tick gets its own (with when it was taken up).
          const planOptions = { nowMs, ...this.ctx.planOptions };
          const serializeOptions = { maxEventBytes: this.ctx.maxEventBytes };
          let runsSincePause = 0;
          // Runs in id order (one native sort of strings, no comparator): the folders are then
          // appended, spliced into `runs/`, and their changes listed in nearly the order git keeps
          // them, so every later sort of the commit (its changes by path, the splice's edits by
          // position, the events handed over) finds its input already in order.
          const runIds = [...byRun.keys()].sort();
          for (let r = 0; r < runIds.length; r++) {
            const runId = runIds[r] as string;
            const held = byRun.get(runId) as DueGeneration | DueGeneration[];
            const timers = Array.isArray(held) ? held : null;
            const count = timers === null ? 1 : timers.length;
            // A turn for the event loop when the slice is used up, asked every few runs: an
            // await per run is a microtask hop per fire, and a run's plan takes microseconds.
            if (++runsSincePause === PAUSE_EVERY_RUNS) {
              runsSincePause = 0;
              await slicer.pause();
            }
            const base = current ? this.currentRun(runId) : undefined;
            const fresh = base ?? (await this.freshRun(reads, runId, refused));
            if (fresh === null) {
              refused[refused.length - 1]?.timers.push(...(timers === null ? [(held as DueGeneration).pending] : timers.map((d) => d.pending)));
              continue;
            }
            // Read now: `fresh` may be the view's record, which the tail may move on while this awaits.
            const parentEventsOid = fresh.eventsOid;
            let state = fresh.state;
            const firstSeq = Math.max(fresh.maxFileSeq + 1, 1);
            let seq = firstSeq;
            // Made as a literal for the first file (a run's usual one): `[]` then push gives it room for 17.
            let files: { name: string; content: Uint8Array }[] | null = null;
            if (timers !== null) timers.sort(byFireAt);
            for (let t = 0; t < count; t++) {
              const d = timers === null ? (held as DueGeneration) : (timers[t] as DueGeneration);
              const timer = d.pending;
              const counting = prepareCatchUp(state.pendingTimers.get(timer.timerId), at, slicer.pause);
              if (counting !== undefined) await counting;
              // A series tick is judged on time or missed when the host took it up, not now.
              const plan = planDueTimer(state, timer, timer.cron === undefined ? planOptions : { ...planOptions, takenUpMs: d.takenUpMs });
              outcomes.push({ timer, plan, runId });
              if (plan.kind !== "append") continue;
              for (let e = 0; e < plan.events.length; e++) {
                const planned = plan.events[e] as (typeof plan.events)[number];
                // Validated once, here. A plain TimerFired (most of a burst) is laid out from a
                // template and comes back normalised and frozen, shared by the state and readers.
                const plain = serializePlainTimerFiredOf(seq, planned.type, at, planned.data, serializeOptions);
                if (plain !== null) {
                  const file = { name: eventFileName(seq), content: plain.bytes };
                  if (files === null) files = [file];
                  else files.push(file);
                  state = applyEvent(state, plain.event);
                  if (handOver) added.push({ runId, seq, event: plain.event });
                  seq += 1;
                  continue;
                }
                // The bytes are the validated event's JSON, so parsing them back gives the
                // normalised event without validating it again.
                const event = { seq, type: planned.type, at, data: planned.data } as RunEvent;
                const bytes = serializeEvent(event, serializeOptions);
                const file = { name: eventFileName(seq), content: bytes };
                if (files === null) files = [file];
                else files.push(file);
                const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("utf8");
                state = applyEvent(state, JSON.parse(text) as RunEvent);
                // A copy of its own for readers outside the scheduler, frozen: they share it.
                if (handOver) added.push({ runId, seq, event: deepFreeze(JSON.parse(text) as RunEvent) });
                seq += 1;
              }
            }
            if (files !== null) {
              after.push({ runId, parentEventsOid, state, maxFileSeq: seq - 1, append: appends.length, due: held, base: base ?? null });
              const folder = `${runsPrefix}${runId}`;
              appends.push(parentEventsOid === null ? { folder, sub: eventsFolder, files } : { folder, sub: eventsFolder, files, subOid: parentEventsOid });
            }
          }
          return { appends, result: { outcomes, after, added, refused, tableAt } };
        },
      });
    } catch (error) {
      await this.onCommitFailed(due, error);
      return;
    }
    this.retryMs = this.ctx.retryInitialMs;
    if (result.committed) this.ctx.count("commits");
    this.reportOutcomes(result.result?.outcomes ?? [], result.commitSha ?? "");
    this.reportRefused(result.result?.refused ?? []);
    if (result.committed) this.handOverCommitted(result.commitSha as string, result.parentSha, result.result?.added ?? []);
    // Reported first: the fires are committed once the ref moved; adopting is bookkeeping.
    if (result.committed) {
      const after = result.result?.after ?? [];
      const folderOid = result.folderOid;
      if (folderOid !== undefined) this.adoptFromWrite(result.commitSha as string, result.parentSha, after, result.result?.tableAt ?? -1, folderOid, result.appended);
      else await this.adoptOwnCommit(result.commitSha as string, after);
    }
  }

  /**
   * Re-arms what was not due yet and reports each fire and skip of a commit (`commitSha`, "" when
   * nothing was committed). A method of its own, as {@link takeBatch}: its loop runs once per timer.
   */
  private reportOutcomes(outcomes: readonly Outcome[], commitSha: string): void {
    const repoId = this.view.repoId;
    for (let i = 0; i < outcomes.length; i++) {
      const { timer, plan, runId } = outcomes[i] as Outcome;
      if (plan.kind === "not_due") {
        this.view.rearm(runId, timer, plan.dueMs);
        continue;
      }
      if (plan.kind === "stale") continue;
      for (let f = 0; f < plan.fired.length; f++) {
        const scheduledFor = plan.fired[f] as string;
        this.ctx.count("fired");
        this.ctx.report({ type: "fired", repoId, runId, timerId: timer.timerId, scheduledFor, firedAt: plan.firedAt, commitSha });
      }
      if (plan.skipped !== null) {
        this.ctx.count("skippedTicks", plan.skipped.count);
        this.ctx.report({ type: "skipped", repoId, runId, timerId: timer.timerId, ...plan.skipped, commitSha });
      }
    }
  }

  /**
   * Reports each run a commit left out because its log at the parent lacks an object (see
   * {@link freshRun}): `commit_failed` with its `runId` and the run's error, its timers re-armed
   * after `retryMaxMs` (as a run whose folder is lost, see {@link withoutMissingRuns}); the view
   * drops them when its tail reaches that commit and finds the run damaged.
   */
  private reportRefused(refused: readonly Refused[]): void {
    if (refused.length === 0) return;
    const atMs = wallMs(this.ctx) + this.ctx.retryMaxMs;
    for (const { runId, timers, error } of refused) {
      this.ctx.count("commitFailures");
      this.ctx.report({ type: "commit_failed", repoId: this.view.repoId, runId, timers: timers.length, retryInMs: this.ctx.retryMaxMs, error });
      for (const timer of timers) this.view.rearm(runId, timer, atMs);
    }
  }

  /**
   * {@link adoptOwnCommit} from what the write itself knows (the oids of the folders it
   * rewrote), without a read or a turn of the event loop, so it happens before the tail sees the
   * commit; the runs it moves are noted for the tail, which then skips them (see tail-commit.ts).
   */
  private adoptFromWrite(
    commitSha: string,
    parentSha: string | null,
    after: readonly After[],
    tableAt: number,
    folderOid: (path: string) => string | null | undefined,
    appended: readonly (AppendedFolder | undefined)[] | undefined,
  ): void {
    if (after.length === 0 || this.stopped) return;
    const adopted = new Set<string>();
    // The run table as the plan left it, with the changes this loop made itself (a row made its
    // record). Checked before each run, not once: adopting a run reports (a series' next tick is
    // "armed"), and a listener may look a later run of this commit up there, making its row a
    // record the plan's row no longer stands for.
    let tableNow = tableAt;
    for (let i = 0; i < after.length; i++) {
      const run = after[i] as After;
      if (run.parentEventsOid === null) continue;
      // No run added, replaced, removed or made a record since the plan took them (but by this loop): each base is still the run's.
      const held = this.view.runs.changes === tableNow;
      const base = held ? run.base : null;
      const row = base instanceof RowBase ? base.row : -1;
      const record = row >= 0 ? undefined : base !== null ? (base as RunRecord) : this.view.run(run.runId);
      if (row >= 0 ? !this.view.runs.rowEventsAt(row, run.parentEventsOid) : record === undefined || record.eventsOid !== run.parentEventsOid) continue;
      // The folders the store built from this run's append, by position (no path per run); a run
      // whose append went through the generic edit is looked up by path. The run ids are the
      // view's own (checked when read): the paths are built, not parsed.
      const built = appended?.[run.append];
      let runTreeOid: string | null | undefined;
      let eventsOid: string | null | undefined;
      // The last event's blob (the recovery index keeps it, design notes §74); unknown when the
      // append went through the generic edit (then a start does not check it for this run).
      let lastEventOid: string | null = null;
      if (built !== undefined) {
        runTreeOid = built.folder;
        eventsOid = built.sub;
        lastEventOid = built.last;
      } else {
        const runFolder = `${runsPrefix}${run.runId}`;
        runTreeOid = folderOid(runFolder);
        eventsOid = folderOid(`${runFolder}/${eventsFolder}`);
      }
      if (runTreeOid === undefined || eventsOid === undefined) continue;
      const state = { state: run.state, maxFileSeq: run.maxFileSeq, eventsOid, lastEventOid, runTreeOid };
      if (row < 0) this.view.adopt(run.runId, state, run.due, record);
      else if (!this.view.adoptRow(run.runId, row, state, run.due)) {
        // A row the state does not fit is made its record (still the one it stood for: one change
        // of the table, this loop's own) and adopted as one.
        const made = this.view.run(run.runId);
        tableNow = this.view.runs.changes;
        this.view.adopt(run.runId, state, run.due, made);
      }
      adopted.add(run.runId);
    }
    if (adopted.size > 0) this.view.noteOwnCommit(commitSha, parentSha, adopted, adopted.size === after.length);
  }

  /** Hands a fire commit's events to `onCommittedEvents` (the committer's boundary: nothing else is read). */
  private handOverCommitted(commitSha: string, parentSha: string | null, added: readonly Added[]): void {
    const listener = this.ctx.onCommittedEvents;
    if (listener === undefined || added.length === 0) return;
    // In the order a reader of the commit finds them: runs by id, each run's events by seq.
    const events = [...added].sort((a, b) => (a.runId < b.runId ? -1 : a.runId > b.runId ? 1 : a.seq - b.seq));
    try {
      listener({ repoId: this.view.repoId, ref: this.ctx.ref, commitSha, parentSha, events });
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
  private async adoptOwnCommit(commitSha: string, after: readonly After[]): Promise<void> {
    if (after.length === 0 || this.stopped) return;
    const reads = await this.ctx.store.openCommittedReads(this.ctx.principal, this.view.rid, commitSha);
    const slicer = createTimeSlicer(DEFAULT_SLICE_MS, this.monoMs);
    for (const run of after) {
      await slicer.pause();
      const record = this.view.run(run.runId);
      if (record === undefined || run.parentEventsOid === null || record.eventsOid !== run.parentEventsOid) continue;
      const eventsOid = await reads.treeOid(runEventsPrefix(run.runId).slice(0, -1));
      const lastEventOid = await reads.treeOid(`${runEventsPrefix(run.runId)}${eventFileName(run.maxFileSeq)}`);
      const runTreeOid = await reads.treeOid(`${runsPrefix}${run.runId}`);
      this.view.adopt(run.runId, { state: run.state, maxFileSeq: run.maxFileSeq, eventsOid, lastEventOid, runTreeOid });
    }
  }

  /**
   * The view's record of a run (or its row, not made a record: RunTable.base) as {@link freshRun}
   * returns it, when it knows the run's events folder.
   */
  private currentRun(runId: string): RunRecord | RowBase | undefined {
    const cached = this.view.runs.base(runId);
    // The record itself (read before anything awaits; adopted only after the commit): no copy per run.
    return cached === undefined || cached.eventsOid === null ? undefined : cached;
  }

  /**
   * The run at the commit `reads` is pinned to: the cached state when its events tree is
   * unchanged, else its log read afresh. `eventsOid` is that tree's oid at the commit. A log read
   * afresh with an object lost or damaged (an event blob, `blobs/`, the sealed log) is not fired
   * from: the lost event could be the very `TimerFired` of a due one-shot, so its timers are
   * refused (added to `refused`, design notes §69).
   * @returns null when the run is refused
   */
  private async freshRun(reads: CommittedReads, runId: string, refused: Refused[]): Promise<{ state: RunState; maxFileSeq: number; eventsOid: string | null } | null> {
    const cached = this.view.run(runId);
    // The run's folder unchanged since the view read it (one lookup in `runs/`, no read of the
    // run's own folder): its state holds, the events folder in it too.
    if (cached !== undefined && cached.runTreeOid !== null && cached.eventsOid !== null && (await reads.treeOid(`${runsPrefix}${runId}`)) === cached.runTreeOid) {
      return { state: cached.state, maxFileSeq: cached.maxFileSeq, eventsOid: cached.eventsOid };
    }
    const oid = await reads.treeOid(runEventsPrefix(runId).slice(0, -1));
    if (cached !== undefined && oid !== null && cached.eventsOid === oid) return { state: cached.state, maxFileSeq: cached.maxFileSeq, eventsOid: oid };
    const log = await readRunLog(reads, runId, { maxEventBytes: this.ctx.maxEventBytes });
    const unreadable = unreadablePartOf(runId, log.bad, log.problems);
    if (unreadable !== null) {
      refused.push({ runId, timers: [], error: unreadableRunError(this.view.repoId, unreadable, "none of its timers was fired; they are tried again") });
      return null;
    }
    return { state: log.state, maxFileSeq: log.maxFileSeq, eventsOid: oid };
  }

  private async onCommitFailed(due: readonly DueGeneration[], error: unknown): Promise<void> {
    if (isUnreadableObject(error) && !this.stopped && (await this.withoutMissingRuns(due, error as WorkflowHostError))) return;
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
      this.ctx.report({ type: "timer_rejected", repoId: this.view.repoId, runId: only.runId, timerId: only.pending.timerId, error });
      return;
    }
    this.ctx.count("commitFailures");
    const retryInMs = this.retryMs;
    this.retryMs = Math.min(this.retryMs * 2, this.ctx.retryMaxMs);
    this.ctx.report({ type: "commit_failed", repoId: this.view.repoId, timers: due.length, retryInMs, error });
    const atMs = wallMs(this.ctx) + retryInMs;
    for (const d of due) this.view.rearm(d.runId, d.pending, atMs);
  }

  /**
   * A batch failed on an object that is not in the repository: when it is one run's (its
   * folder or `events/` folder, as the view holds their oids, or the one run a bisection by run
   * is left with), the other runs' timers are committed now and that run's are reported
   * (`commit_failed` with its `runId`) and re-armed after `retryMaxMs`, never in a loop of quick
   * retries. @returns false when the object is what every run needs (the deployment's `runs/`
   * folder cannot be read): the whole batch is then retried with backoff, as any failed commit
   */
  private async withoutMissingRuns(due: readonly DueGeneration[], error: WorkflowHostError): Promise<boolean> {
    const oid = error.data.oid;
    const runIds = [...new Set(due.map((d) => d.runId))].sort();
    const missing = new Set<string>();
    for (const runId of runIds) {
      const record = this.view.run(runId);
      if (record !== undefined && (record.runTreeOid === oid || record.eventsOid === oid)) missing.add(runId);
    }
    if (missing.size === 0) {
      if (!(await this.runsReadable())) return false;
      if (runIds.length > 1) {
        // Not a folder the view knows of: halves by run until one run is left.
        const left = new Set(runIds.slice(0, Math.ceil(runIds.length / 2)));
        await this.commitBatch(due.filter((d) => left.has(d.runId)));
        await this.commitBatch(due.filter((d) => !left.has(d.runId)));
        return true;
      }
      missing.add(runIds[0] as string);
    }
    const atMs = wallMs(this.ctx) + this.ctx.retryMaxMs;
    for (const runId of missing) {
      const timers = due.filter((d) => d.runId === runId);
      this.ctx.count("commitFailures");
      this.ctx.report({ type: "commit_failed", repoId: this.view.repoId, runId, timers: timers.length, retryInMs: this.ctx.retryMaxMs, error });
      for (const d of timers) this.view.rearm(d.runId, d.pending, atMs);
    }
    const rest = due.filter((d) => !missing.has(d.runId));
    if (rest.length > 0) await this.commitBatch(rest);
    return true;
  }

  /** Whether the deployment's `runs/` folder can be read at the ref's tip (what every run's commit needs). */
  private async runsReadable(): Promise<boolean> {
    try {
      const reads = await this.ctx.store.openCommittedReads(this.ctx.principal, this.view.rid, this.ctx.ref);
      await reads.listDir(runsPrefix.slice(0, -1));
      return true;
    } catch {
      return false;
    }
  }
}

/** Oldest fireAt first. */
function byFireAt(a: DueGeneration, b: DueGeneration): number {
  return Date.parse(a.pending.fireAt) - Date.parse(b.pending.fireAt);
}

/** Event file names by seq, made once each: a burst's runs share the few seqs they are at. */
const EVENT_FILE_NAMES: string[] = [];
/** Seqs below this have their file name kept in {@link EVENT_FILE_NAMES}. */
const KEPT_FILE_NAMES = 4_096;

/** `${seq}.json`, the name of the event file with that seq. */
function eventFileName(seq: number): string {
  if (seq >= KEPT_FILE_NAMES) return `${seq}.json`;
  let name = EVENT_FILE_NAMES[seq];
  if (name === undefined) EVENT_FILE_NAMES[seq] = name = `${seq}.json`;
  return name;
}

/** Runs planned between two `pause()` calls of a fire commit's time slicer. */
const PAUSE_EVERY_RUNS = 16;

/** Most timers in the first commit of a backlog (see {@link nextBatchSize}). */
export const FIRST_BATCH = 1_000;

/**
 * How many buffered timers the next commit takes: the batch grows with the backlog. A commit
 * after an idle spell takes up to {@link FIRST_BATCH}; while timers are still waiting when it
 * lands, each next commit may take twice what the previous one took, up to `maxBatch`. A burst
 * of 20,000 due timers is then 5 commits (1,000, 2,000, 4,000, 8,000, 5,000) instead of 20, and
 * its first 1,000 are committed as soon as with a fixed batch: the earliest fires do not wait
 * for the whole backlog's commit. Each commit's work is sliced (the event loop gets a turn
 * every ~10 ms), so a bigger batch costs the other deployments no longer stall.
 * @param previous timers in the previous commit of this backlog (0 for none)
 * @param backlog timers buffered now
 * @param maxBatch the cap (SchedulerOptions.maxBatch)
 */
export function nextBatchSize(previous: number, backlog: number, maxBatch: number): number {
  const limit = Math.min(maxBatch, Math.max(FIRST_BATCH, 2 * previous));
  return Math.max(1, Math.min(backlog, limit));
}

/**
 * Counts a due series' missed ticks ahead of the (pure, synchronous) planner, yielding through
 * `pause`, so the planner finds the count ready. A series that cannot be compiled is left to the
 * planner, which reports it as before.
 */
function prepareCatchUp(pending: PendingTimer | undefined, nowIso: string, pause: () => Promise<void>): Promise<void> | undefined {
  // Only a series with missed ticks has counting to do: no promise for the others (most of a burst).
  if (pending?.cron === undefined || pending.fireAt >= nowIso) return undefined;
  return countCatchUp(pending.cron, pending.timezone ?? "UTC", pending.fireAt, nowIso, pause);
}

async function countCatchUp(cron: string, timezone: string, fromIso: string, nowIso: string, pause: () => Promise<void>): Promise<void> {
  try {
    await prepareTicksBetween(cron, timezone, fromIso, nowIso, pause);
  } catch {
    // Reported by planDueTimer.
  }
}

/** Codes that mean "this content is refused", as opposed to "the write could not happen". */
function isContentError(code: string): boolean {
  return code === "event_invalid" || code === "time_invalid" || code === "cron_invalid" || code === "payload_too_large" || code === "id_invalid";
}
