/**
 * The checkpoint writer of one consumer lane: moves `refs/consumers/<name>` of one deployment
 * by commits whose tree is the lane's progress (layout in `./consumer-state.ts`).
 *
 * States: idle → writing (one commit in flight) → idle; a request while writing marks the
 * next commit wanted, and the changes that came meanwhile go into it (group commit). A lazy
 * request (a cursor that only moved over commits with nothing for this consumer) is written
 * within {@link LAZY_CHECKPOINT_MS}; a failed commit puts its changes back, is reported and is
 * tried again after {@link CHECKPOINT_RETRY_MS} (once, on a stopping lane, and then left).
 *
 * What a committed checkpoint holds is told to the lane through `onRecorded`: how many handled
 * events (and failed attempts) it recorded and which released dead letters it removed, so the
 * lane can count them as recorded (see the lane's bounded repeats).
 */
import type { TimerHandle } from "../../src/time/clock.js";
import type { ConsumerRefDeps } from "./consumer-lane-types.js";
import { CONSUMER_FILE, describeError } from "./consumer-state.js";

/** A cursor that moved over commits with nothing to hand over is written at most this late (ms). */
export const LAZY_CHECKPOINT_MS = 1_000;
/** A failed checkpoint is tried again after this long (ms). */
const CHECKPOINT_RETRY_MS = 1_000;

export interface CheckpointDeps extends ConsumerRefDeps {
  /** The content of `consumer.json` at the moment a commit is built. */
  readonly consumerFile: () => string;
  /** Whether the lane is stopping: a failed checkpoint is then not tried again. */
  readonly stopping: () => boolean;
  /** A checkpoint was committed: it recorded `handled` events and removed the `released` records. */
  readonly onRecorded: (handled: number, released: readonly string[]) => void;
}

export interface CheckpointWriter {
  /** Puts (a string) or deletes (null) a record file in the next checkpoint. */
  set(path: string, value: string | null): void;
  /** One handled event (or failed attempt) for the next checkpoint to record. */
  noteHandled(): void;
  /** A released dead letter whose `retry/` record the next checkpoint removes. */
  noteReleased(id: string): void;
  /** Asks for a checkpoint: at once when `urgent`, else within {@link LAZY_CHECKPOINT_MS}. */
  request(urgent: boolean): void;
  /** Resolves once no checkpoint is being written and none is asked for. */
  flushed(): Promise<void>;
  /** Drops the lazy and retry timers (the lane is stopping). */
  cancelTimers(): void;
}

export function createCheckpointWriter(deps: CheckpointDeps): CheckpointWriter {
  const { store, principal, rid, timers, logger } = deps;
  const tag = { consumer: deps.consumer, repoId: rid.id };
  let pending = new Map<string, string | null>();
  let pendingHandled = 0;
  let pendingReleased: string[] = [];
  let writing = false;
  let again = false;
  let lazyTimer: TimerHandle | null = null;
  let retryFlushTimer: TimerHandle | null = null;
  let idleWaiters: (() => void)[] = [];

  function request(urgent: boolean): void {
    if (!urgent) {
      if (lazyTimer === null && retryFlushTimer === null) {
        lazyTimer = timers.setTimeout(() => {
          lazyTimer = null;
          request(true);
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
      const puts = new Map<string, string>([[CONSUMER_FILE, deps.consumerFile()]]);
      const deletes: string[] = [];
      for (const [path, value] of batch) {
        if (value === null) deletes.push(path);
        else puts.set(path, value);
      }
      try {
        await store.writeTreeDelta(principal, rid, deps.ref, { message: `dispatch ${deps.consumer}: checkpoint`, computeDelta: () => ({ puts, deletes }) });
      } catch (error) {
        for (const [path, value] of batch) if (!pending.has(path)) pending.set(path, value);
        pendingHandled += handledInBatch;
        pendingReleased.push(...releasedInBatch);
        writing = false;
        logger.error(`checkpoint of consumer ${deps.consumer} in ${rid.id} failed: ${describeError(error)}`, tag);
        deps.report({ type: "checkpoint_failed", ...tag, error, retryInMs: CHECKPOINT_RETRY_MS });
        if (deps.stopping()) {
          settleIdle();
          return;
        }
        retryFlushTimer = timers.setTimeout(() => {
          retryFlushTimer = null;
          request(true);
        }, CHECKPOINT_RETRY_MS);
        return;
      }
      deps.onRecorded(handledInBatch, releasedInBatch);
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

  return {
    set(path, value) {
      pending.set(path, value);
    },
    noteHandled() {
      pendingHandled += 1;
    },
    noteReleased(id) {
      pendingReleased.push(id);
    },
    request,
    flushed() {
      if (!writing) return Promise.resolve();
      return new Promise((resolve) => idleWaiters.push(resolve));
    },
    cancelTimers() {
      if (lazyTimer !== null) timers.clearTimeout(lazyTimer);
      if (retryFlushTimer !== null) timers.clearTimeout(retryFlushTimer);
      lazyTimer = null;
      retryFlushTimer = null;
    },
  };
}
