/**
 * One consumer in one deployment: reads the deployment's log from the consumer's cursor, hands
 * each matching event to the consumer's target, retries, parks, and records progress on
 * `refs/consumers/<name>` (layout in `./consumer-state.ts`).
 *
 * States: created → starting (reading the consumer ref, creating it on first use) → running
 * (following main from the cursor) → stopping (no new attempts; attempts in flight finish; a
 * last checkpoint) → stopped. A failed read of main also ends in stopped, reported through
 * `onFailed`; the dispatcher makes a new lane later, which resumes from the durable state.
 *
 * Per event: queued (in its run's queue) → in flight (holding one of the consumer's
 * `concurrency` slots) → done, or failed → waiting for the backoff (no slot held; the run's
 * later events wait behind it, so a run's events are handed over in seq order) → in flight
 * again … → parked after `maxAttempts` failed attempts. Done and parked both count as handled.
 *
 * Intake: a commit's events reach the lane one of two ways, each commit exactly one way, in
 * commit order. Handed over (`handOver`): this process's fire committer gives the events of the
 * commit it just made; the lane takes them at once when the commit's parent is the last commit
 * it took in and it is not in the middle of reading another, so a fire reaches the handler
 * without reading the log back. Read (`subscribeKind` from the cursor): everything else — the
 * catch-up after a start, commits of other writers (signals, the CLI, `git push`), handovers
 * that came out of order. The reader skips commits already handed over, before reading any of
 * their events; a handover that arrives while the reader is behind waits (bounded) until the
 * reader reaches its parent, or is dropped and read.
 *
 * The cursor moves past a commit of main once every event of it and of every commit before it
 * is handled. Events handled ahead of it (other runs went faster) are listed in `done`, so a
 * restart skips them. Checkpoints are commits on the consumer ref: one is started as soon as
 * something was handled or failed, and the changes that come while it is written go into the
 * next one (group commit). A cursor that only moved over commits with nothing for this
 * consumer is written lazily (within `LAZY_CHECKPOINT_MS`): replaying those commits after a
 * crash hands nothing over.
 *
 * Bounded repeats: no new attempt starts while the consumer's `maxUnrecorded` handled events
 * wait for their checkpoint (a checkpoint can be slow: a killed writer's ref lock is only broken once
 * stale). Failed attempts count as well (their attempt number is recorded). So a crash
 * repeats at most `maxUnrecorded + concurrency` handovers per consumer and
 * deployment: the unrecorded ones and those in flight.
 */
import { WorkflowHostError } from "../../src/errors.js";
import type { Logger } from "../../src/logger.js";
import type { Principal, RepoId, RepoStore } from "../../src/substrate/types.js";
import type { Clock, TimerHandle, Timers } from "../../src/time/clock.js";
import type { CommittedEvents } from "../scheduler/scheduler-types.js";
import { parseEvent } from "../../src/workflow/events.js";
import { subscribeKind, type KindIssue } from "../../src/workflow/subscribe-kind.js";
import type { RunEvent } from "../../src/workflow/types.js";
import {
  CONSUMER_FILE,
  deploymentRepo,
  describeError,
  encodeJson,
  readConsumerState,
  readFolder,
  recordPath,
  type ConsumerFile,
  type ParkedRecord,
} from "./consumer-state.js";
import { backoffDelayMs, consumerRef, eventId, idempotencyKey, type CheckedConsumer } from "./dispatch-keys.js";
import type { Delivery, DispatchReport, LaneStatus } from "./dispatch-types.js";
import type { Semaphore } from "./semaphore.js";

/** A cursor that moved over commits with nothing to hand over is written at most this late (ms). */
export const LAZY_CHECKPOINT_MS = 1_000;
/** How often the consumer ref is looked at for events released by `dispatch retry` (ms). */
export const RELEASE_POLL_MS = 1_000;
/** A failed checkpoint is tried again after this long (ms). */
const CHECKPOINT_RETRY_MS = 1_000;
/** Handovers kept while the reader is behind them; later ones are left to the reader. */
const MAX_WAITING_HANDOVERS = 1_024;

export interface LaneDeps {
  readonly store: RepoStore;
  readonly principal: Principal;
  readonly repoId: string;
  readonly ref: string;
  readonly consumer: CheckedConsumer;
  readonly deliver: (delivery: Delivery, signal: AbortSignal) => Promise<unknown>;
  readonly slots: Semaphore;
  readonly clock: Clock;
  readonly timers: Timers;
  readonly random: () => number;
  readonly logger: Logger;
  readonly report: (report: DispatchReport) => void;
  readonly maxEventBytes: number;
  readonly maxBuffered: number;
  /** The lane stopped by itself (a read of main failed). */
  readonly onFailed: (error: unknown) => void;
}

interface Entry {
  readonly sha: string;
  remaining: number;
  closed: boolean;
  readonly ids: string[];
}

interface Item {
  readonly id: string;
  readonly runId: string;
  readonly seq: number;
  readonly commitSha: string;
  readonly event: RunEvent;
  readonly key: string;
  failed: number;
  /** The commit entry of an event read from the log; null for a released dead letter. */
  readonly entry: Entry | null;
  readonly released: boolean;
}

interface RunQueue {
  readonly runId: string;
  readonly items: Item[];
  active: boolean;
  retryTimer: TimerHandle | null;
}

export interface ConsumerLane {
  start(): Promise<void>;
  /** The events of a commit this process just made on the lane's ref (see the module comment). */
  handOver(committed: CommittedEvents): void;
  stop(): Promise<void>;
  status(): LaneStatus;
}

export function createConsumerLane(deps: LaneDeps): ConsumerLane {
  const { store, principal, consumer, timers, logger } = deps;
  const rid: RepoId = deploymentRepo(deps.repoId);
  const cref = consumerRef(consumer.name);
  const tag = { consumer: consumer.name, repoId: rid.id };

  let state: "created" | "starting" | "running" | "stopping" | "stopped" = "created";
  const abort = new AbortController();
  let cursor: string | null = null;
  let durableDone: ReadonlySet<string> = new Set();
  const doneAhead = new Set<string>();
  const window: Entry[] = [];
  const runs = new Map<string, RunQueue>();
  const failingKnown = new Set<string>();
  const retryQueued = new Set<string>();
  const inFlightWork = new Set<Promise<void>>();
  let buffered = 0;
  let spaceWaiter: (() => void) | null = null;
  let loops: Promise<void>[] = [];
  const counts = { delivered: 0, parked: 0, failedAttempts: 0, inFlight: 0 };

  // Intake (see the module comment).
  /** The last commit of main whose events are all taken in (read or handed over); null: none yet. */
  let position: string | null = null;
  /** The commit the reader is reading now (from its first look until onCommit), else null. */
  let reading: string | null = null;
  /** Commits taken from handovers that the reader has not reached yet: it skips them. */
  const takenOver = new Set<string>();
  /** Handovers that came while the reader was busy or behind, keyed by their parent commit. */
  const waiting = new Map<string, CommittedEvents>();

  // Checkpoint writer.
  let pending = new Map<string, string | null>();
  let writing = false;
  let again = false;
  let lazyTimer: TimerHandle | null = null;
  let retryFlushTimer: TimerHandle | null = null;
  let idleWaiters: (() => void)[] = [];
  /** Handled events not yet in a committed checkpoint; `pendingHandled` of them not yet in one being written. */
  let unrecorded = 0;
  let pendingHandled = 0;
  let pendingReleased: string[] = [];
  const unrecordedCap = consumer.maxUnrecorded;
  const blocked = new Set<RunQueue>();

  const safeReport = (report: DispatchReport): void => {
    try {
      deps.report(report);
    } catch {
      // A listener's failure is not the lane's.
    }
  };

  function consumerFile(): string {
    const file: ConsumerFile = { version: 1, consumer: consumer.name, cursor, done: [...doneAhead].sort(), updatedAt: deps.clock().toISOString() };
    return encodeJson(file);
  }

  function requestFlush(urgent: boolean): void {
    if (!urgent) {
      if (lazyTimer === null && retryFlushTimer === null) {
        lazyTimer = timers.setTimeout(() => {
          lazyTimer = null;
          requestFlush(true);
        }, LAZY_CHECKPOINT_MS);
      }
      return;
    }
    if (lazyTimer !== null) {
      timers.clearTimeout(lazyTimer);
      lazyTimer = null;
    }
    if (writing) {
      again = true;
      return;
    }
    writing = true;
    void flushLoop();
  }

  async function flushLoop(): Promise<void> {
    for (;;) {
      again = false;
      const batch = pending;
      pending = new Map();
      const handledInBatch = pendingHandled;
      pendingHandled = 0;
      const releasedInBatch = pendingReleased;
      pendingReleased = [];
      const file = consumerFile();
      const puts = new Map<string, string>([[CONSUMER_FILE, file]]);
      const deletes: string[] = [];
      for (const [path, value] of batch) {
        if (value === null) deletes.push(path);
        else puts.set(path, value);
      }
      try {
        await store.writeTreeDelta(principal, rid, cref, { message: `dispatch ${consumer.name}: checkpoint`, computeDelta: () => ({ puts, deletes }) });
      } catch (error) {
        for (const [path, value] of batch) if (!pending.has(path)) pending.set(path, value);
        pendingHandled += handledInBatch;
        pendingReleased.push(...releasedInBatch);
        writing = false;
        logger.error(`checkpoint of consumer ${consumer.name} in ${rid.id} failed: ${describeError(error)}`, tag);
        safeReport({ type: "checkpoint_failed", ...tag, error, retryInMs: CHECKPOINT_RETRY_MS });
        if (state === "stopping") {
          settleIdle();
          return;
        }
        retryFlushTimer = timers.setTimeout(() => {
          retryFlushTimer = null;
          requestFlush(true);
        }, CHECKPOINT_RETRY_MS);
        return;
      }
      unrecorded -= handledInBatch;
      for (const id of releasedInBatch) retryQueued.delete(id);
      if (blocked.size > 0 && unrecorded < unrecordedCap) {
        const waiting = [...blocked];
        blocked.clear();
        for (const run of waiting) kick(run);
      }
      if (!again) break;
    }
    writing = false;
    settleIdle();
  }

  function settleIdle(): void {
    const waiters = idleWaiters;
    idleWaiters = [];
    for (const w of waiters) w();
  }

  /** Resolves once no checkpoint is being written and none is asked for. */
  function flushed(): Promise<void> {
    if (!writing) return Promise.resolve();
    return new Promise((resolve) => idleWaiters.push(resolve));
  }

  function advance(): void {
    let moved = false;
    for (let head = window[0]; head !== undefined && head.closed && head.remaining === 0; head = window[0]) {
      window.shift();
      for (const id of head.ids) doneAhead.delete(id);
      cursor = head.sha;
      moved = true;
    }
    if (moved) requestFlush(false);
  }

  function handled(item: Item): void {
    unrecorded += 1;
    pendingHandled += 1;
    if (item.entry !== null) {
      item.entry.remaining -= 1;
      doneAhead.add(item.id);
      buffered -= 1;
      if (buffered < deps.maxBuffered && spaceWaiter !== null) {
        const wake = spaceWaiter;
        spaceWaiter = null;
        wake();
      }
      advance();
    }
    if (item.released) {
      // Forgotten only once the checkpoint removing its retry/ record is committed: a scan
      // before that still sees the record and must not hand it over again.
      pending.set(recordPath("retry", item.runId, item.seq), null);
      pendingReleased.push(item.id);
    }
    if (failingKnown.delete(item.id)) pending.set(recordPath("failing", item.runId, item.seq), null);
    requestFlush(true);
  }

  function enqueue(item: Item): void {
    let run = runs.get(item.runId);
    if (run === undefined) {
      run = { runId: item.runId, items: [], active: false, retryTimer: null };
      runs.set(item.runId, run);
    }
    run.items.push(item);
    kick(run);
  }

  function kick(run: RunQueue): void {
    if (run.active || state !== "running") return;
    if (run.items.length === 0) {
      runs.delete(run.runId);
      return;
    }
    if (unrecorded >= unrecordedCap) {
      blocked.add(run);
      return;
    }
    run.active = true;
    track(attempt(run));
  }

  function track(work: Promise<void>): void {
    inFlightWork.add(work);
    void work.finally(() => inFlightWork.delete(work));
  }

  async function attempt(run: RunQueue): Promise<void> {
    await deps.slots.acquire();
    const item = run.items[0];
    if (state !== "running" || item === undefined) {
      deps.slots.release();
      run.active = false;
      return;
    }
    // Checked again with the slot in hand: runs kicked earlier wait for slots, not for this.
    if (unrecorded >= unrecordedCap) {
      deps.slots.release();
      run.active = false;
      blocked.add(run);
      return;
    }
    const number = item.failed + 1;
    const delivery: Delivery = { consumer: consumer.name, repoId: rid.id, runId: item.runId, seq: item.seq, commitSha: item.commitSha, event: item.event, attempt: number, idempotencyKey: item.key };
    const controller = new AbortController();
    let timer: TimerHandle | null = null;
    let failure: unknown = null;
    let ok = false;
    counts.inFlight += 1;
    try {
      const timeout = new Promise<never>((_, reject) => {
        timer = timers.setTimeout(() => {
          const error = new WorkflowHostError("delivery_failed", `attempt ${number} of ${item.key} took longer than ${consumer.timeoutMs} ms`, { ...tag, timeoutMs: consumer.timeoutMs });
          controller.abort(error);
          reject(error);
        }, consumer.timeoutMs);
      });
      await Promise.race([Promise.resolve().then(() => deps.deliver(delivery, controller.signal)), timeout]);
      ok = true;
    } catch (error) {
      failure = error;
    } finally {
      if (timer !== null) timers.clearTimeout(timer);
      counts.inFlight -= 1;
      deps.slots.release();
    }
    if (ok) {
      run.items.shift();
      counts.delivered += 1;
      handled(item);
      safeReport({ type: "delivered", ...tag, runId: item.runId, seq: item.seq, attempt: number, idempotencyKey: item.key });
    } else {
      item.failed = number;
      counts.failedAttempts += 1;
      if (number >= consumer.maxAttempts) {
        run.items.shift();
        park(item, failure);
      } else {
        const delayMs = backoffDelayMs(consumer.backoff, number, deps.random);
        // A failed attempt not yet recorded would be repeated after a crash: it counts too.
        unrecorded += 1;
        pendingHandled += 1;
        failingKnown.add(item.id);
        pending.set(recordPath("failing", item.runId, item.seq), encodeJson({ attempts: number, lastError: describeError(failure), failedAt: deps.clock().toISOString() }));
        requestFlush(true);
        safeReport({ type: "attempt_failed", ...tag, runId: item.runId, seq: item.seq, attempt: number, idempotencyKey: item.key, error: failure, retryInMs: delayMs });
        if (state !== "running") {
          run.active = false;
          return;
        }
        run.retryTimer = timers.setTimeout(() => {
          run.retryTimer = null;
          if (state === "running") track(attempt(run));
          else run.active = false;
        }, delayMs);
        return;
      }
    }
    run.active = false;
    kick(run);
  }

  function park(item: Item, error: unknown): void {
    const record: ParkedRecord = {
      repoId: rid.id,
      runId: item.runId,
      seq: item.seq,
      commitSha: item.commitSha,
      idempotencyKey: item.key,
      attempts: item.failed,
      lastError: describeError(error),
      parkedAt: deps.clock().toISOString(),
      event: item.event,
    };
    pending.set(recordPath("parked", item.runId, item.seq), encodeJson(record));
    counts.parked += 1;
    handled(item);
    logger.warn(`consumer ${consumer.name} parked ${item.key} (${rid.id} ${item.id}) after ${item.failed} attempts: ${record.lastError}`, { ...tag, runId: item.runId, seq: item.seq });
    safeReport({ type: "parked", ...tag, runId: item.runId, seq: item.seq, attempts: item.failed, idempotencyKey: item.key, error });
  }

  function releasedItem(record: ParkedRecord): Item | null {
    const id = eventId(record.runId, record.seq);
    if (retryQueued.has(id) || record.runId === undefined || !Number.isInteger(record.seq) || record.event === undefined) return null;
    retryQueued.add(id);
    return { id, runId: record.runId, seq: record.seq, commitSha: record.commitSha, event: record.event, key: record.idempotencyKey, failed: 0, entry: null, released: true };
  }

  function onIssue(issue: KindIssue): void {
    if (issue.type === "ref_rewritten") {
      // Handovers name commits of the old history or wait for one: the reader reads on from here.
      takenOver.clear();
      waiting.clear();
    }
    if (issue.type === "bad_event") logger.warn(`consumer ${consumer.name}: bad event skipped: ${issue.path} (${issue.error.message})`, tag);
    else if (issue.type === "event_rewritten") logger.warn(`consumer ${consumer.name}: event ${issue.path} was ${issue.status} after commit; ignored`, tag);
    else logger.warn(`consumer ${consumer.name}: ref ${deps.ref} of ${rid.id} rewritten from ${issue.from ?? "nothing"} to ${issue.to}; events after the rewrite are handed over`, tag);
  }

  /** Takes one event of a commit into the window and, unless already done, into its run's queue. */
  function admit(entry: Entry, runId: string, seq: number, commitSha: string, event: RunEvent): void {
    if (consumer.runIds !== null && !consumer.runIds.has(runId)) return;
    const id = eventId(runId, seq);
    entry.ids.push(id);
    if (durableDone.has(id)) {
      doneAhead.add(id);
      return;
    }
    entry.remaining += 1;
    buffered += 1;
    enqueue({ id, runId, seq, commitSha, event, key: idempotencyKey(rid.id, runId, seq, event), failed: failing.get(id) ?? 0, entry, released: false });
  }

  /** Takes in a handed-over commit whose parent is `position`. */
  function take(committed: CommittedEvents): void {
    const entry = entryFor(committed.commitSha);
    for (const e of committed.events) {
      if ((consumer.types as ReadonlySet<string>).has(e.event.type)) admit(entry, e.runId, e.seq, committed.commitSha, e.event);
    }
    takenOver.add(committed.commitSha);
    position = committed.commitSha;
    entry.closed = true;
    advance();
  }

  /** Takes waiting handovers that now follow `position`, while the reader is idle and there is room. */
  function drain(): void {
    for (let next = waiting.get(position ?? ""); next !== undefined && reading === null && buffered < deps.maxBuffered; next = waiting.get(position ?? "")) {
      waiting.delete(position ?? "");
      take(next);
    }
  }

  /** The reader's look at a commit before reading it: true when it was (or is now) taken from a handover. */
  function skipRead(commit: { readonly commitSha: string; readonly parentSha: string | null }): boolean {
    if (takenOver.delete(commit.commitSha)) return true;
    if (state !== "running") return false;
    const handed = waiting.get(commit.parentSha ?? "");
    if (handed !== undefined && handed.commitSha === commit.commitSha) {
      waiting.delete(commit.parentSha ?? "");
      if (commit.parentSha === position && buffered < deps.maxBuffered) {
        take(handed);
        takenOver.delete(commit.commitSha);
        return true;
      }
    }
    reading = commit.commitSha;
    return false;
  }

  function entryFor(sha: string): Entry {
    const last = window[window.length - 1];
    if (last !== undefined && last.sha === sha) return last;
    const entry: Entry = { sha, remaining: 0, closed: false, ids: [] };
    window.push(entry);
    return entry;
  }

  async function followMain(): Promise<void> {
    const maxEventBytes = deps.maxEventBytes;
    try {
      const events = subscribeKind(
        store,
        principal,
        rid,
        deps.ref,
        (bytes, where) => parseEvent(bytes, { path: where.path, expectedSeq: where.seq, maxEventBytes }),
        {
          from: cursor ?? "genesis",
          kinds: [...consumer.types],
          signal: abort.signal,
          onIssue,
          skipCommit: skipRead,
          onCommit: (commit) => {
            // A skipped commit was closed when it was taken from its handover.
            if (reading !== commit.commitSha) return;
            reading = null;
            entryFor(commit.commitSha).closed = true;
            position = commit.commitSha;
            advance();
            drain();
          },
        },
      );
      for await (const found of events) {
        if (state !== "running") break;
        admit(entryFor(found.commitSha), found.runId, found.seq, found.commitSha, found.event);
        if (buffered >= deps.maxBuffered) await new Promise<void>((resolve) => (spaceWaiter = resolve));
      }
    } catch (error) {
      if (state === "running") fail(error);
      return;
    }
    if (state === "running" && !abort.signal.aborted) fail(new WorkflowHostError("store_stopped", `the store ended the subscription of ${rid.id}`, tag));
  }

  /**
   * Released dead letters are found by looking at the consumer ref's `retry/` folder: at start,
   * then every {@link RELEASE_POLL_MS} (one ref read and one tree lookup; a subscription to the
   * ref would diff every checkpoint commit). A release by the CLI is picked up within that time.
   */
  async function scanReleases(): Promise<void> {
    const tip = await store.resolveRef(principal, rid, cref);
    if (tip === null) return;
    const reads = await store.openCommittedReads(principal, rid, tip);
    const oid = await reads.treeOid("retry");
    if (oid === lastRetryTree) return;
    lastRetryTree = oid;
    if (oid === null) return;
    const records = new Map<string, ParkedRecord>();
    await readFolder(reads, "retry", records, (message) => logger.warn(`consumer ${consumer.name}: ${message}`, tag));
    for (const record of records.values()) {
      const item = releasedItem(record);
      if (item === null || state !== "running") continue;
      safeReport({ type: "released", ...tag, runId: item.runId, seq: item.seq, idempotencyKey: item.key });
      enqueue(item);
    }
  }

  function armReleasePoll(): void {
    releaseTimer = timers.setTimeout(() => {
      releaseTimer = null;
      if (state !== "running") return;
      scanReleases()
        .catch((error: unknown) => logger.warn(`consumer ${consumer.name} in ${rid.id}: reading released events failed: ${describeError(error)}`, tag))
        .finally(() => {
          if (state === "running") armReleasePoll();
        });
    }, RELEASE_POLL_MS);
  }

  function fail(error: unknown): void {
    logger.error(`consumer ${consumer.name} in ${rid.id} stopped: ${describeError(error)}`, tag);
    void lane.stop().then(() => deps.onFailed(error));
  }

  let failing = new Map<string, number>();
  let lastRetryTree: string | null = null;
  let releaseTimer: TimerHandle | null = null;

  const lane: ConsumerLane = {
    async start() {
      if (state !== "created") throw new WorkflowHostError("dispatcher_stopped", `lane of ${consumer.name} in ${rid.id} started twice`, tag);
      state = "starting";
      const warn = (message: string): void => logger.warn(`consumer ${consumer.name} in ${rid.id}: ${message}`, tag);
      let durable = await readConsumerState(store, principal, rid, consumer.name, warn);
      if (durable.refSha === null) {
        const start = consumer.startFrom === "head" ? await store.resolveRef(principal, rid, deps.ref) : null;
        const file: ConsumerFile = { version: 1, consumer: consumer.name, cursor: start, done: [], updatedAt: deps.clock().toISOString() };
        // Created only when still unborn; a racing creator's state is read back either way.
        await store.writeTreeDelta(principal, rid, cref, {
          message: `dispatch ${consumer.name}: created`,
          computeDelta: (parentSha) => (parentSha === null ? { puts: new Map([[CONSUMER_FILE, encodeJson(file)]]) } : null),
        });
        durable = await readConsumerState(store, principal, rid, consumer.name, warn);
      }
      if (state !== "starting") return;
      cursor = durable.cursor;
      position = durable.cursor;
      durableDone = durable.done;
      failing = new Map([...durable.failing].map(([id, record]) => [id, Number.isInteger(record.attempts) ? record.attempts : 0]));
      for (const id of durable.failing.keys()) failingKnown.add(id);
      counts.parked = 0;
      state = "running";
      for (const record of durable.retry.values()) {
        const item = releasedItem(record);
        if (item !== null) enqueue(item);
      }
      lastRetryTree = await (await store.openCommittedReads(principal, rid, durable.refSha as string)).treeOid("retry");
      loops = [followMain()];
      armReleasePoll();
    },

    async stop() {
      if (state === "stopped") return;
      if (state === "stopping") {
        await Promise.all(loops);
        return;
      }
      const wasRunning = state === "running";
      state = "stopping";
      abort.abort();
      spaceWaiter?.();
      for (const run of runs.values()) {
        if (run.retryTimer !== null) timers.clearTimeout(run.retryTimer);
        run.retryTimer = null;
      }
      if (lazyTimer !== null) timers.clearTimeout(lazyTimer);
      if (retryFlushTimer !== null) timers.clearTimeout(retryFlushTimer);
      if (releaseTimer !== null) timers.clearTimeout(releaseTimer);
      releaseTimer = null;
      lazyTimer = null;
      retryFlushTimer = null;
      await Promise.all(loops);
      while (inFlightWork.size > 0) await Promise.all([...inFlightWork]);
      if (wasRunning) {
        await flushed();
        requestFlush(true);
        await flushed();
      }
      state = "stopped";
    },

    handOver(committed) {
      if (state !== "running") return;
      if (reading === null && committed.parentSha === position && buffered < deps.maxBuffered) {
        take(committed);
        drain();
        return;
      }
      if (waiting.size < MAX_WAITING_HANDOVERS) waiting.set(committed.parentSha ?? "", committed);
    },

    status() {
      let queued = 0;
      for (const run of runs.values()) queued += run.items.length;
      return { consumer: consumer.name, repoId: rid.id, cursor, pending: queued, inFlight: counts.inFlight, delivered: counts.delivered, parked: counts.parked, failedAttempts: counts.failedAttempts };
    },
  };
  return lane;
}
