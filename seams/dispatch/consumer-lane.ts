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
 * Intake: each commit's events are handed over by this process's fire committer or read from
 * the log, exactly one way (`./consumer-intake.ts`). The cursor moves past a commit once every
 * event of it and before it is handled (`./consumer-window.ts`); checkpoints of the cursor and
 * the records are group-committed on the consumer ref (`./consumer-checkpoint.ts`); dead letters
 * and their release (`./consumer-releases.ts`).
 *
 * Bounded repeats: no new attempt starts while the consumer's `maxUnrecorded` handled events
 * wait for their checkpoint (a checkpoint can be slow: a killed writer's ref lock is only broken
 * once stale). Failed attempts count as well (their attempt number is recorded). So a crash
 * repeats at most `maxUnrecorded + concurrency` handovers per consumer and deployment: the
 * unrecorded ones and those in flight.
 */
import { WorkflowHostError } from "../../src/errors.js";
import type { Logger } from "../../src/logger.js";
import type { Principal, RepoId, RepoStore } from "../../src/substrate/types.js";
import type { Clock, Timers } from "../../src/time/clock.js";
import type { CommittedEvents } from "../scheduler/scheduler-types.js";
import { parseEvent } from "../../src/workflow/events.js";
import { subscribeKind, type KindIssue } from "../../src/workflow/subscribe-kind.js";
import type { RunEvent } from "../../src/workflow/types.js";
import { createCheckpointWriter } from "./consumer-checkpoint.js";
import { createIntake } from "./consumer-intake.js";
import type { ConsumerRefDeps, LaneItem, RunQueue } from "./consumer-lane-types.js";
import { createReleaseWatch, parkedRecord } from "./consumer-releases.js";
import { CONSUMER_FILE, deploymentRepo, describeError, encodeJson, readConsumerState, recordPath, type ConsumerFile } from "./consumer-state.js";
import { createCommitWindow, type CommitWindow } from "./consumer-window.js";
import { backoffDelayMs, consumerRef, eventId, idempotencyKey, type CheckedConsumer } from "./dispatch-keys.js";
import type { Delivery, DispatchReport, LaneStatus } from "./dispatch-types.js";
import type { Semaphore } from "./semaphore.js";
import { startDeliveryTimeout } from "./delivery-timeout.js";

export { LAZY_CHECKPOINT_MS } from "./consumer-checkpoint.js";
export { RELEASE_POLL_MS } from "./consumer-releases.js";

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
  /** Replaced at start by one from the durable cursor. */
  let window: CommitWindow = createCommitWindow(null, new Set(), () => {});
  const runs = new Map<string, RunQueue>();
  const failingKnown = new Set<string>();
  const inFlightWork = new Set<Promise<void>>();
  let buffered = 0;
  let spaceWaiter: (() => void) | null = null;
  let loops: Promise<void>[] = [];
  const counts = { delivered: 0, parked: 0, failedAttempts: 0, inFlight: 0 };

  /** Handled events (and failed attempts) not yet in a committed checkpoint. */
  let unrecorded = 0;
  const unrecordedCap = consumer.maxUnrecorded;
  const blocked = new Set<RunQueue>();

  const safeReport = (report: DispatchReport): void => {
    try {
      deps.report(report);
    } catch {
      // A listener's failure is not the lane's.
    }
  };

  const refDeps: ConsumerRefDeps = { store, principal, rid, ref: cref, consumer: consumer.name, timers, logger, report: safeReport };
  const checkpoint = createCheckpointWriter({
    ...refDeps,
    consumerFile: () => encodeJson({ version: 1, consumer: consumer.name, cursor: window.cursor, done: window.done(), updatedAt: deps.clock().toISOString() } satisfies ConsumerFile),
    stopping: () => state === "stopping",
    onRecorded: (handledCount, released) => {
      unrecorded -= handledCount;
      releases.recorded(released);
      if (blocked.size > 0 && unrecorded < unrecordedCap) {
        const waiting = [...blocked];
        blocked.clear();
        for (const run of waiting) kick(run);
      }
    },
  });

  const releases = createReleaseWatch({
    ...refDeps,
    running: () => state === "running",
    enqueue: (item) => enqueue(item),
  });

  const intake = createIntake({
    window: () => window,
    types: consumer.types,
    hasRoom: () => buffered < deps.maxBuffered,
    running: () => state === "running",
    admit: (commitSha, runId, seq, event) => admit(commitSha, runId, seq, event),
  });

  function handled(item: LaneItem): void {
    unrecorded += 1;
    checkpoint.noteHandled();
    if (item.entry !== null) {
      buffered -= 1;
      if (buffered < deps.maxBuffered && spaceWaiter !== null) {
        const wake = spaceWaiter;
        spaceWaiter = null;
        wake();
      }
      window.handled(item.entry, item.id);
    }
    if (item.released) {
      // Forgotten only once the checkpoint removing its retry/ record is committed: a scan
      // before that still sees the record and must not hand it over again.
      checkpoint.set(recordPath("retry", item.runId, item.seq), null);
      checkpoint.noteReleased(item.id);
    }
    if (failingKnown.delete(item.id)) checkpoint.set(recordPath("failing", item.runId, item.seq), null);
    checkpoint.request(true);
  }

  function enqueue(item: LaneItem): void {
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
    let failure: unknown = null;
    let ok = false;
    counts.inFlight += 1;
    const limit = startDeliveryTimeout(timers, consumer.timeoutMs, controller, () => new WorkflowHostError("delivery_failed", `attempt ${number} of ${item.key} took longer than ${consumer.timeoutMs} ms`, { ...tag, timeoutMs: consumer.timeoutMs }));
    try {
      await Promise.race([Promise.resolve().then(() => deps.deliver(delivery, controller.signal)), limit.expired]);
      ok = true;
    } catch (error) {
      failure = error;
    } finally {
      limit.clear();
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
        checkpoint.noteHandled();
        failingKnown.add(item.id);
        checkpoint.set(recordPath("failing", item.runId, item.seq), encodeJson({ attempts: number, lastError: describeError(failure), failedAt: deps.clock().toISOString() }));
        checkpoint.request(true);
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

  function park(item: LaneItem, error: unknown): void {
    const record = parkedRecord(rid.id, item, error, deps.clock().toISOString());
    checkpoint.set(recordPath("parked", item.runId, item.seq), encodeJson(record));
    counts.parked += 1;
    handled(item);
    logger.warn(`consumer ${consumer.name} parked ${item.key} (${rid.id} ${item.id}) after ${item.failed} attempts: ${record.lastError}`, { ...tag, runId: item.runId, seq: item.seq });
    safeReport({ type: "parked", ...tag, runId: item.runId, seq: item.seq, attempts: item.failed, idempotencyKey: item.key, error });
  }

  function onIssue(issue: KindIssue): void {
    if (issue.type === "ref_rewritten") {
      // Handovers name commits of the old history or wait for one: the reader reads on from here.
      intake.rewritten();
    }
    if (issue.type === "bad_event") logger.warn(`consumer ${consumer.name}: bad event skipped: ${issue.path} (${issue.error.message})`, tag);
    else if (issue.type === "event_rewritten") logger.warn(`consumer ${consumer.name}: event ${issue.path} was ${issue.status} after commit; ignored`, tag);
    else if (issue.type === "log_rewritten") logger.warn(`consumer ${consumer.name}: sealed log ${issue.path} was ${issue.status} after commit; its events are not handed over again`, tag);
    else logger.warn(`consumer ${consumer.name}: ref ${deps.ref} of ${rid.id} rewritten from ${issue.from ?? "nothing"} to ${issue.to}; events after the rewrite are handed over`, tag);
  }

  /** Takes one event of a commit into the window and, unless already done, into its run's queue. */
  function admit(commitSha: string, runId: string, seq: number, event: RunEvent): void {
    const entry = window.entryFor(commitSha);
    const id = eventId(runId, seq);
    if (consumer.runIds !== null && !consumer.runIds.has(runId)) {
      window.pass(entry, id);
      return;
    }
    if (!window.admit(entry, id)) return;
    buffered += 1;
    enqueue({ id, runId, seq, commitSha, event, key: idempotencyKey(rid.id, runId, seq, event), failed: failing.get(id) ?? 0, entry, released: false });
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
          from: window.cursor ?? "genesis",
          kinds: [...consumer.types],
          signal: abort.signal,
          onIssue,
          skipCommit: (commit) => intake.skipRead(commit),
          onCommit: (commit) => intake.read(commit),
        },
      );
      for await (const found of events) {
        if (state !== "running") break;
        admit(found.commitSha, found.runId, found.seq, found.event);
        if (buffered >= deps.maxBuffered) await new Promise<void>((resolve) => (spaceWaiter = resolve));
      }
    } catch (error) {
      if (state === "running") fail(error);
      return;
    }
    if (state === "running" && !abort.signal.aborted) fail(new WorkflowHostError("store_stopped", `the store ended the subscription of ${rid.id}`, tag));
  }

  function fail(error: unknown): void {
    logger.error(`consumer ${consumer.name} in ${rid.id} stopped: ${describeError(error)}`, tag);
    void lane.stop().then(() => deps.onFailed(error));
  }

  let failing = new Map<string, number>();

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
      window = createCommitWindow(durable.cursor, durable.done, () => checkpoint.request(false));
      intake.reset(durable.cursor);
      failing = new Map([...durable.failing].map(([id, record]) => [id, Number.isInteger(record.attempts) ? record.attempts : 0]));
      for (const id of durable.failing.keys()) failingKnown.add(id);
      counts.parked = 0;
      state = "running";
      releases.take(durable.retry.values());
      await releases.seen(durable.refSha as string);
      loops = [followMain()];
      releases.arm();
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
      checkpoint.cancelTimers();
      releases.stop();
      await Promise.all(loops);
      while (inFlightWork.size > 0) await Promise.all([...inFlightWork]);
      if (wasRunning) {
        await checkpoint.flushed();
        checkpoint.request(true);
        await checkpoint.flushed();
      }
      state = "stopped";
    },

    handOver(committed) {
      intake.handOver(committed);
    },

    status() {
      let queued = 0;
      for (const run of runs.values()) queued += run.items.length;
      return { consumer: consumer.name, repoId: rid.id, cursor: window.cursor, pending: queued, inFlight: counts.inFlight, delivered: counts.delivered, parked: counts.parked, failedAttempts: counts.failedAttempts };
    },
  };
  return lane;
}
