/**
 * The one way the verbs write a run's log: a writer bound to a deployment (store, principal,
 * repoId, ref, maxEventBytes), whose `append` runs {@link appendRunEvents} with a decision that
 * returns typed events (built with the constructors of `event-constructors.ts`).
 */
import { DEFAULT_REF } from "../substrate/ref-name.js";
import type { Principal, RepoStore, WriteResult } from "../substrate/types.js";
import { DEFAULT_MAX_EVENT_BYTES } from "./events.js";
import type { NewRunEvent } from "./event-constructors.js";
import { type RunLog } from "./run-log.js";
import { appendRunEvents } from "./run-log-append.js";

/** What an append decides: typed events without seq (they get the next dense seqs), and a result. */
export interface RunLogDecision<R> {
  readonly append: readonly NewRunEvent[];
  readonly result: R;
}

export interface OpenRunLogOptions {
  readonly store: RepoStore;
  readonly principal: Principal;
  readonly repoId: string;
  /** Default {@link DEFAULT_REF}. */
  readonly ref?: string;
  /** Largest event in bytes of UTF-8; default {@link DEFAULT_MAX_EVENT_BYTES} (1 MiB). */
  readonly maxEventBytes?: number;
  /**
   * Default false. When true, every append refuses a run whose log cannot be read whole (an
   * event, `blobs/` or the sealed log missing or damaged) before its `decide` runs: see
   * `AppendRunEventsOptions.requireWhole`.
   */
  readonly requireWhole?: boolean;
}

export interface RunLogWriter {
  readonly repoId: string;
  readonly ref: string;
  readonly maxEventBytes: number;
  /**
   * Appends to `runId`'s log in one commit after `decide` re-checked the log under the repo lock
   * (see {@link appendRunEvents}: contract, batching and errors).
   * @param message - the commit message.
   * @returns the store's write result; `result` is what `decide` returned on the winning attempt
   */
  append<R>(runId: string, message: string, decide: (log: RunLog) => RunLogDecision<R>): Promise<WriteResult<R>>;
}

/**
 * Binds a writer to one deployment. Cheap: it holds no state of its own (the append batching
 * and log cache are per store and ref).
 */
export function openRunLog(opts: OpenRunLogOptions): RunLogWriter {
  const ref = opts.ref ?? DEFAULT_REF;
  const maxEventBytes = opts.maxEventBytes ?? DEFAULT_MAX_EVENT_BYTES;
  return {
    repoId: opts.repoId,
    ref,
    maxEventBytes,
    append(runId, message, decide) {
      return appendRunEvents({ store: opts.store, principal: opts.principal, repoId: opts.repoId, runId, ref, maxEventBytes, message, decide, ...(opts.requireWhole === true ? { requireWhole: true } : {}) });
    },
  };
}
