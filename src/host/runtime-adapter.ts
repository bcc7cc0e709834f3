/**
 * The runtime adapter of one deployment (docs/design.md §7): durable timers and signals for workflow
 * code, written to the run logs and fired by the scheduler.
 *
 * States: running → stopped (`stop()`: pending waits reject with host_stopped and release their
 * subscriptions; later calls throw host_stopped). Every write is one run-log append (`openRunLog`)
 * whose decision is re-checked under the repo lock, so concurrent callers in this or another
 * process never arm, cancel or consume twice.
 */
import { createRunEventFeed } from "../../seams/signals/run-event-feed.js";
import { setTimerDurably } from "../../seams/scheduler/set-timer.js";
import { compactRun } from "./compact-run.js";
import { endRun, type RunOutcome } from "./end-run.js";
import { WorkflowHostError, isWorkflowHostError } from "../errors.js";
import { silentLogger } from "../logger.js";
import { DEFAULT_REF } from "../substrate/ref-name.js";
import { DEFAULT_MAX_EVENT_BYTES } from "../workflow/events.js";
import { parseRepoId, parseRunId, parseSignalName, parseStepId, parseTimerId } from "../workflow/ids.js";
import { openRunLog } from "../workflow/run-log-writer.js";
import { isoFromMs } from "../workflow/time.js";
import type {
  RuntimeAdapterOptions,
  ScheduleDisposer,
  SetTimerResult,
  TimerSpec,
  WorkflowRuntime,
} from "./runtime-types.js";
import { durationMs, instantOf, resolveTimerSpec } from "../workflow/timer-spec.js";
import { waitForSignalInRun, type SignalWaitContext } from "./wait-for-signal.js";
import { watchTimer } from "./watch-timer.js";

export type * from "./runtime-types.js";

/**
 * Creates the runtime of one deployment.
 * @param opts see {@link RuntimeAdapterOptions}
 * @returns the runtime; see {@link WorkflowRuntime} for each method's contract
 * @throws repo_id_invalid synchronously, before any store call (also for a feed of another repo)
 */
export function createRuntimeAdapter(opts: RuntimeAdapterOptions): WorkflowRuntime {
  const repoId = parseRepoId(opts.repoId);
  const ref = opts.ref ?? DEFAULT_REF;
  const logger = opts.logger ?? silentLogger;
  const maxEventBytes = opts.maxEventBytes ?? DEFAULT_MAX_EVENT_BYTES;
  const nowMs = (): number => opts.clock().getTime();
  // setTimer's replay check (fired already at this instant?) and the signal waits' choice of a
  // signal decide on the run's whole log: a run with an event lost or damaged is refused.
  const runLog = openRunLog({ store: opts.store, principal: opts.principal, repoId, ref, maxEventBytes, requireWhole: true });
  const stopping = new AbortController();
  const active = new Set<Promise<unknown>>();
  const ownFeed = opts.feed === undefined;
  const feed = opts.feed ?? createRunEventFeed({ store: opts.store, principal: opts.principal, repoId, ref, maxEventBytes, logger });
  if (feed.repoId !== repoId) {
    throw new WorkflowHostError("repo_id_invalid", `the feed given to the runtime of ${repoId} follows ${feed.repoId}`, { repoId, feedRepoId: feed.repoId });
  }
  const waitCtx: SignalWaitContext = {
    feed,
    store: opts.store,
    principal: opts.principal,
    repoId,
    ref,
    maxEventBytes,
    runLog,
    scheduler: opts.scheduler,
    clock: opts.clock,
    logger,
    activeTimers: new Set(),
  };

  const hostStopped = (): WorkflowHostError => new WorkflowHostError("host_stopped", `the runtime of ${repoId} was stopped`, { repoId });

  function ensureRunning(): void {
    if (stopping.signal.aborted) throw hostStopped();
  }

  /**
   * Runs one wait under an AbortSignal that fires for the caller's abort and for `stop()`, and
   * keeps it in `active` until it settles, so `stop()` can wait for its subscriptions to close.
   */
  function track<T>(callerSignal: AbortSignal | undefined, body: (signal: AbortSignal, abandoned: () => boolean) => Promise<T>): Promise<T> {
    if (stopping.signal.aborted) return Promise.reject(hostStopped());
    const local = new AbortController();
    const onAbort = (): void => local.abort();
    callerSignal?.addEventListener("abort", onAbort, { once: true });
    stopping.signal.addEventListener("abort", onAbort, { once: true });
    if (callerSignal?.aborted === true) local.abort();
    const abandoned = (): boolean => callerSignal?.aborted === true && !stopping.signal.aborted;
    const run = (async () => {
      try {
        return await body(local.signal, abandoned);
      } catch (error) {
        if (stopping.signal.aborted && isWorkflowHostError(error, "aborted")) throw hostStopped();
        throw error;
      } finally {
        callerSignal?.removeEventListener("abort", onAbort);
        stopping.signal.removeEventListener("abort", onAbort);
      }
    })();
    active.add(run);
    const forget = (): void => {
      active.delete(run);
    };
    run.then(forget, forget);
    return run;
  }

  async function setTimer(runId: string, spec: TimerSpec): Promise<SetTimerResult> {
    ensureRunning();
    parseRunId(runId);
    const data = resolveTimerSpec(spec, nowMs());
    const { fireAt, setSeq, committed } = await setTimerDurably(runLog, runId, data, isoFromMs(nowMs()));
    return { timerId: data.timerId, fireAt, setSeq, committed };
  }

  async function end(runId: string, outcome: RunOutcome, data: Record<string, unknown> | undefined) {
    ensureRunning();
    return endRun({ store: opts.store, principal: opts.principal, repoId, runId, ref, maxEventBytes, outcome, clock: opts.clock, ...(data === undefined ? {} : { data }) });
  }

  return {
    repoId,

    completeRun: (runId, data) => end(runId, "completed", data),
    failRun: (runId, data) => end(runId, "failed", data),
    cancelRun: (runId, data) => end(runId, "cancelled", data),

    scheduleIn(runId, timerId, fireAt) {
      ensureRunning();
      parseRunId(runId);
      parseTimerId(timerId);
      const at = instantOf(fireAt, "fireAt");
      let disposed = false;
      // Started a microtask later, so a disposer called right away writes nothing.
      const ready = Promise.resolve().then(async () => {
        if (disposed) return null;
        const result = await setTimer(runId, { timerId, fireAt: at });
        // Disposed while writing: the scheduler may have queued the new generation meanwhile.
        if (disposed) opts.scheduler.dropQueued(repoId, runId, timerId, result.setSeq);
        return result;
      });
      ready.catch((error: unknown) => {
        logger.error(`scheduleIn ${timerId} of run ${runId} in ${repoId} failed: ${String(error)}`, { repoId, runId, timerId });
      });
      const dispose = (): void => {
        if (disposed) return;
        disposed = true;
        opts.scheduler.dropQueued(repoId, runId, timerId);
      };
      return Object.assign(dispose, { ready }) satisfies ScheduleDisposer;
    },

    setTimer,

    waitForTimer(runId, timerId, options = {}) {
      try {
        ensureRunning();
        parseRunId(runId);
        parseTimerId(timerId);
      } catch (error) {
        return Promise.reject(error);
      }
      return track(options.signal, (signal) => watchTimer(waitCtx, runId, timerId, signal));
    },

    async cancelTimer(runId, timerId, reason) {
      ensureRunning();
      return opts.scheduler.cancelTimer(repoId, runId, timerId, reason);
    },

    async deliverSignal(runId, signalName, payload, signalId) {
      ensureRunning();
      parseRunId(runId);
      const id = signalId ?? opts.newId?.();
      return opts.channel(runId).deliver(signalName, payload, id);
    },

    waitForSignal(runId, signalName, options = {}) {
      let request: { timeoutMs?: number; timerId?: string; stepId?: string };
      try {
        ensureRunning();
        parseRunId(runId);
        parseSignalName(signalName);
        request = {
          ...(options.timeoutMs === undefined ? {} : { timeoutMs: durationMs(options.timeoutMs, "timeoutMs") }),
          ...(options.timerId === undefined ? {} : { timerId: parseTimerId(options.timerId) }),
          ...(options.stepId === undefined ? {} : { stepId: parseStepId(options.stepId) }),
        };
      } catch (error) {
        return Promise.reject(error);
      }
      const channel = opts.channel(runId);
      return track(options.signal, (signal, abandoned) => waitForSignalInRun(waitCtx, channel, { runId, signalName, ...request, signal, abandoned }));
    },

    async compactRun(runId) {
      ensureRunning();
      return compactRun({ store: opts.store, principal: opts.principal, repoId, runId, ref, maxEventBytes });
    },

    async stop() {
      stopping.abort();
      await Promise.allSettled([...active]);
      if (ownFeed) await feed.close();
    },
  };
}
