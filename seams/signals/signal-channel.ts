/**
 * The signal channel of one run (docs/design.md §6): delivers named signals into the run's log,
 * deduplicated by signalId, and hands them to awaiters in log order.
 *
 * States: idle (not attached to the feed) → starting (attached: the feed hands over every commit
 * after some C; reading the log at the tip T ≥ C) → watching → stopped. The first `awaitNext`
 * leaves idle; a failed read or subscription rejects the waiters and returns to idle, so the
 * next `awaitNext` starts over from a fresh read; `stop()` is final from any state.
 *
 * Guarantees:
 * - nothing is lost between reading and waiting: the feed hands over every commit after C
 *   exactly once, including commits by other processes (the store's ref watcher polls, with
 *   OS file events as a hint), and the log is read at a commit at or after C;
 * - a signal is handed out at most once by this channel, to the oldest waiter of its name, and
 *   the oldest available signal (numeric seq) goes first; waiters are served only once the
 *   initial read is applied, and per commit, after all its events are applied (a signal
 *   received and consumed in one commit is never handed out);
 * - an event observed twice (a repeated notification, a duplicate delivery pushed by git) is
 *   applied once: signals are keyed by signalId, the first occurrence wins;
 * - `deliver` is exactly-once per signalId: the dedupe check and the append happen together
 *   under the repo lock, against the whole log.
 */
import { storeOf } from "../../src/substrate/store-option.js";
import { randomUUID } from "node:crypto";
import { WorkflowHostError } from "../../src/errors.js";
import { silentLogger } from "../../src/logger.js";
import type { RepoId } from "../../src/substrate/types.js";
import { DEFAULT_REF } from "../../src/substrate/ref-name.js";
import { newSignalConsumed } from "../../src/workflow/event-constructors.js";
import { isSignalConsumed, isSignalReceived } from "../../src/workflow/event-guards.js";
import { isTerminalEventType } from "../../src/workflow/event-shapes.js";
import { DEFAULT_MAX_EVENT_BYTES } from "../../src/workflow/events.js";
import { parseRepoId, parseRunId, parseSignalId, parseSignalName, parseStepId } from "../../src/workflow/ids.js";
import { readRunLog } from "../../src/workflow/run-log.js";
import { openRunLog } from "../../src/workflow/run-log-writer.js";
import { isoFromMs } from "../../src/workflow/time.js";
import type { RunEvent } from "../../src/workflow/types.js";
import { WORKFLOW_RUN_KIND } from "../../src/workflow/workflow-run-kind.js";
import { createRunEventFeed, type RunEventListener } from "./run-event-feed.js";
import { deliverSignalDurably } from "./deliver-signal.js";
import { createSignalPool, type SignalWaiter } from "./signal-pool.js";
import type {
  DeliverResult,
  ReceivedSignal,
  SignalChannelOptions,
  WorkflowHostSignalChannel,
} from "./signal-channel-types.js";

export type * from "./signal-channel-types.js";

/**
 * Creates the channel of one run. Nothing is read or watched until the first `awaitNext`.
 * @param opts see {@link SignalChannelOptions}
 * @returns the channel; see {@link WorkflowHostSignalChannel} for each method's contract
 * @throws repo_id_invalid (repoId), id_invalid (runId), synchronously, before any store call
 */
export function createWorkflowHostSignalChannel(opts: SignalChannelOptions): WorkflowHostSignalChannel {
  const repoId = parseRepoId(opts.repoId);
  const runId = parseRunId(opts.runId);
  const rid: RepoId = { kind: WORKFLOW_RUN_KIND, id: repoId };
  const ref = opts.ref ?? DEFAULT_REF;
  const store = storeOf(opts, "createWorkflowHostSignalChannel");
  const principal = opts.principal;
  const maxEventBytes = opts.maxEventBytes ?? DEFAULT_MAX_EVENT_BYTES;
  const newId = opts.newId ?? randomUUID;
  const logger = opts.logger ?? silentLogger;
  // Deliver dedups by signalId and consume by "received, not consumed", both on the run's whole
  // log: a run with an event lost or damaged is refused (it could be that signal's delivery or
  // consumption), never decided on the rest.
  const runLog = openRunLog({ store, principal, repoId, ref, maxEventBytes, requireWhole: true });
  const pool = createSignalPool();
  const nowIso = (): string => isoFromMs(opts.clock().getTime());

  const feed = opts.feed ?? createRunEventFeed({ store: store, principal, repoId, ref, maxEventBytes, logger });
  if (feed.repoId !== repoId) {
    throw new WorkflowHostError("repo_id_invalid", `the feed given to the channel of run ${runId} follows ${feed.repoId}, not ${repoId}`, { repoId, feedRepoId: feed.repoId });
  }

  let state: "idle" | "starting" | "watching" | "stopped" = "idle";
  /** Bumped on every (re)start, failure and stop, so stale work cannot touch a newer start. */
  let generation = 0;
  let starting: Promise<void> | null = null;
  let detachFeed: (() => Promise<void>) | null = null;

  const stoppedError = (): WorkflowHostError =>
    new WorkflowHostError("channel_stopped", `the signal channel of run ${runId} in ${repoId} was stopped`, { repoId, runId });

  /** Set by the run's terminal event: a run that ended takes no more signals (docs/design.md §3). */
  let ended = false;

  function apply(event: RunEvent): void {
    // Events after a terminal one can only come from a `git push`; like the reducer, skip them.
    if (ended) return;
    if (isTerminalEventType(event.type)) {
      ended = true;
      return;
    }
    if (isSignalReceived(event)) {
      pool.addReceived({ signalId: event.signalId, signalName: event.signalName, payload: event.payload, seq: event.seq, at: event.at });
    } else if (isSignalConsumed(event)) {
      pool.markConsumed(event.data.signalId);
    }
  }

  /** Rejects every waiter and goes back to idle, so the next awaitNext reads afresh. */
  function fail(gen: number, error: unknown): void {
    if (gen !== generation || state === "stopped") return;
    logger.error(`signal channel of run ${runId} in ${repoId} failed: ${String(error)}`, { repoId, runId });
    generation += 1;
    state = "idle";
    starting = null;
    const detach = detachFeed;
    detachFeed = null;
    void detach?.();
    pool.rejectAll(error);
  }

  function start(): Promise<void> {
    if (starting !== null) return starting;
    generation += 1;
    const gen = generation;
    state = "starting";
    // Commits handed over before the log is read wait here, so events apply in seq order.
    let early: RunEvent[] | null = [];
    const listener: RunEventListener = {
      events: (events) => {
        if (gen !== generation) return;
        if (early !== null) {
          for (const event of events) early.push(event);
          return;
        }
        for (const event of events) apply(event);
        // Per commit, after all its events: a signal received and consumed together is never handed out.
        if (state === "watching") pool.dispatch();
      },
      failed: (error) => fail(gen, error),
    };
    starting = (async () => {
      const attachment = await feed.attach(runId, listener);
      detachFeed = attachment.detach;
      if (gen !== generation) {
        await attachment.detach();
        return;
      }
      // Read at the tip, which is at or after `from`: a shared feed may lag behind commits the
      // caller already knows of (its own deliver). Applying an event twice changes nothing.
      const reads = await store.openCommittedReads(principal, rid, ref);
      const log = await readRunLog(reads, runId, { maxEventBytes });
      if (gen !== generation) return;
      for (const bad of log.bad) logger.warn(`bad event skipped: ${bad.path} (${bad.error.message})`, { repoId, runId, seq: bad.seq });
      for (const event of log.events) apply(event);
      for (const event of early ?? []) apply(event);
      early = null;
      state = "watching";
      pool.dispatch();
    })();
    starting.catch((error: unknown) => fail(gen, error));
    return starting;
  }

  async function refreshFromReadState(): Promise<void> {
    if (opts.readState === undefined) return;
    const known = await opts.readState();
    const unconsumed = new Set(known.unconsumedSignals.map((s) => s.signalId));
    for (const signalId of known.observedSignalIds) if (!unconsumed.has(signalId)) pool.markConsumed(signalId);
  }

  return {
    async deliver(signalName, payload, signalId) {
      if (state === "stopped") throw stoppedError();
      const name = parseSignalName(signalName);
      const id = parseSignalId(signalId === undefined ? newId() : signalId);
      const result = await deliverSignalDurably(runLog, runId, { signalName: name, signalId: id, payload, at: nowIso() });
      return { signalId: id, seq: result.seq, duplicate: result.duplicate } satisfies DeliverResult;
    },

    waiting() {
      return pool.waiting();
    },

    awaitNext(signalName, abortSignal) {
      if (state === "stopped") return Promise.reject(stoppedError());
      try {
        parseSignalName(signalName);
      } catch (error) {
        return Promise.reject(error);
      }
      if (abortSignal?.aborted === true) return Promise.reject(abortedError(runId, signalName));
      return new Promise<ReceivedSignal>((resolve, reject) => {
        const onAbort = (): void => {
          if (pool.remove(waiter)) reject(abortedError(runId, signalName));
        };
        const waiter: SignalWaiter = {
          signalName,
          ready: opts.readState === undefined,
          resolve: (signal) => {
            abortSignal?.removeEventListener("abort", onAbort);
            resolve(signal);
          },
          reject: (error) => {
            abortSignal?.removeEventListener("abort", onAbort);
            reject(error);
          },
        };
        // Queued synchronously, so awaiters are served in call order whatever the reads cost.
        pool.enqueue(waiter);
        abortSignal?.addEventListener("abort", onAbort, { once: true });
        start()
          .then(refreshFromReadState)
          .then(
            () => {
              waiter.ready = true;
              if (state === "watching") pool.dispatch(signalName);
            },
            (error: unknown) => {
              if (pool.remove(waiter)) waiter.reject(error);
            },
          );
      });
    },

    async consume(signalId, stepId) {
      if (state === "stopped") throw stoppedError();
      const id = parseSignalId(signalId);
      const step = stepId === undefined ? undefined : parseStepId(stepId);
      const at = nowIso();
      const written = await runLog.append<{ seq: number | null; consumed: boolean }>(runId, `Consume signal ${id} of run ${runId}`, (log) => {
        const received = log.events.some((e) => isSignalReceived(e) && e.signalId === id);
        const consumed = log.events.some((e) => isSignalConsumed(e) && e.data.signalId === id);
        if (!received || consumed) return { append: [], result: { seq: null, consumed } };
        return { append: [newSignalConsumed({ signalId: id, stepId: step }, at)], result: { seq: log.nextSeq, consumed: true } };
      });
      const result = written.result ?? { seq: null, consumed: false };
      // Known at once, not only when the subscription sees the commit.
      if (result.consumed) pool.markConsumed(id);
      return { seq: result.seq };
    },

    claim(signalId) {
      if (state === "stopped") return false;
      return pool.claim(signalId);
    },

    release(signalId) {
      const name = pool.release(signalId);
      if (name !== null && state === "watching") pool.dispatch(name);
    },

    async stop() {
      if (state !== "stopped") {
        state = "stopped";
        generation += 1;
        pool.rejectAll(stoppedError());
      }
      await starting?.catch(() => undefined);
      const detach = detachFeed;
      detachFeed = null;
      await detach?.();
    },
  };
}

function abortedError(runId: string, signalName: string): WorkflowHostError {
  return new WorkflowHostError("aborted", `waiting for signal ${signalName} of run ${runId} was aborted`, { runId, signalName });
}
