/**
 * One subscription to a deployment's ref, fanned out to listeners by run: the live half of
 * "read the log at commit C, then follow every commit after C" for signal channels and timer
 * waits. A channel that gets no feed makes its own (one subscription per channel); a host can
 * hand one feed per deployment to all of its channels, so every commit is read once, not once
 * per waiting run.
 *
 * States: idle (no subscription) → starting (resolving the tip T) → running (subscription from
 * T) → idle again when the last listener detaches or the subscription fails; closed is final.
 *
 * Guarantee: `attach` returns `from`, a commit such that the listener is given the events of
 * exactly the commits after it, each commit once, whole (all its events in one call, in seq
 * order), in commit order. The events of a commit are handed out and `from` moves past it in
 * one synchronous step, so a listener attaching at any moment gets no gap and no overlap.
 */
import { storeOf, type StoreOption } from "../../src/substrate/store-option.js";
import { DEFAULT_REF } from "../../src/substrate/ref-name.js";
import { WorkflowHostError } from "../../src/errors.js";
import { silentLogger, type Logger } from "../../src/logger.js";
import type { Oid, Principal, RepoId, RepoStore } from "../../src/substrate/types.js";
import { DEFAULT_MAX_EVENT_BYTES, parseEvent } from "../../src/workflow/events.js";
import { parseRepoId, parseRunId } from "../../src/workflow/ids.js";
import { subscribeKind, type KindIssue } from "../../src/workflow/subscribe-kind.js";
import type { RunEvent } from "../../src/workflow/types.js";
import { WORKFLOW_RUN_KIND } from "../../src/workflow/workflow-run-kind.js";

export interface RunEventFeedOptionsBase {
  readonly principal: Principal;
  /** The deployment; checked on creation (repo_id_invalid). */
  readonly repoId: string;
  /** Default `DEFAULT_REF` ("refs/heads/main"). */
  readonly ref?: string;
  /** Largest event read (bytes, default 1 MiB); larger files are reported and skipped. */
  readonly maxEventBytes?: number;
  /** Where bad events and failures are reported. Default: silent. */
  readonly logger?: Logger;
}

/** RunEventFeed options; the store is `store` (`repoStore` is its deprecated name). */
export type RunEventFeedOptions = RunEventFeedOptionsBase & StoreOption;

/** Receives one run's events. Called synchronously; must not throw. */
export interface RunEventListener {
  /** The events one commit added to the run, in seq order (never empty). */
  events(events: readonly RunEvent[], commitSha: Oid): void;
  /** The subscription failed or the store closed; the listener is detached. */
  failed(error: unknown): void;
}

export interface RunEventAttachment {
  /**
   * The listener is given every commit after this one: read the run's log at `from` for the
   * events before. Null when the ref had no commit yet (there is nothing before).
   */
  readonly from: Oid | null;
  /**
   * Removes the listener (idempotent). Resolves when, if it was the last one, the subscription
   * has ended and released its watcher.
   */
  detach(): Promise<void>;
}

export interface RunEventFeed {
  readonly repoId: string;
  /**
   * Registers a listener for `runId`, starting the subscription if idle.
   * @returns where the listener's view starts, and its detach
   * @throws id_invalid (runId); store_stopped (feed closed); the store's read errors (the
   *   listener is then not attached)
   */
  attach(runId: string, listener: RunEventListener): Promise<RunEventAttachment>;
  /** Number of attached listeners. */
  listeners(): number;
  /** Detaches every listener (each is told `failed` with store_stopped) and ends the subscription. */
  close(): Promise<void>;
}

/**
 * Creates an idle feed; nothing is read until the first `attach`.
 * @throws repo_id_invalid synchronously
 */
export function createRunEventFeed(opts: RunEventFeedOptions): RunEventFeed {
  const repoId = parseRepoId(opts.repoId);
  const rid: RepoId = { kind: WORKFLOW_RUN_KIND, id: repoId };
  const ref = opts.ref ?? DEFAULT_REF;
  const store = storeOf(opts, "createRunEventFeed");
  const maxEventBytes = opts.maxEventBytes ?? DEFAULT_MAX_EVENT_BYTES;
  const logger = opts.logger ?? silentLogger;

  const byRun = new Map<string, Set<RunEventListener>>();
  let count = 0;
  let state: "idle" | "starting" | "running" | "closed" = "idle";
  /** Bumped whenever a subscription is started or abandoned; stale work checks it. */
  let generation = 0;
  let starting: Promise<Oid | null> | null = null;
  let position: Oid | null = null;
  let abort: AbortController | null = null;
  let tail: Promise<void> = Promise.resolve();

  const stoppedError = (): WorkflowHostError => new WorkflowHostError("store_stopped", `the event feed of ${repoId} was closed`, { repoId });

  function onIssue(issue: KindIssue): void {
    if (issue.type === "bad_event") logger.warn(`bad event skipped: ${issue.path} (${issue.error.message})`, { repoId, seq: issue.seq });
    else if (issue.type === "event_rewritten") logger.warn(`event ${issue.path} was ${issue.status} after commit; ignored`, { repoId });
    else if (issue.type === "log_rewritten") logger.warn(`sealed log ${issue.path} was ${issue.status} after commit; its events are not delivered again`, { repoId });
    else logger.warn(`ref ${ref} of ${repoId} rewritten from ${issue.from ?? "nothing"} to ${issue.to}`, { repoId });
  }

  /** Ends the subscription (if any) and returns to idle; the caller deals with listeners. */
  function halt(): Promise<void> {
    generation += 1;
    abort?.abort();
    abort = null;
    starting = null;
    if (state !== "closed") state = "idle";
    return tail;
  }

  function failAll(gen: number, error: unknown): void {
    if (gen !== generation) return;
    logger.error(`event feed of ${repoId} failed: ${String(error)}`, { repoId });
    void halt();
    const all = [...byRun.values()].flatMap((set) => [...set]);
    byRun.clear();
    count = 0;
    for (const listener of all) listener.failed(error);
  }

  function start(): Promise<Oid | null> {
    if (starting !== null) return starting;
    generation += 1;
    const gen = generation;
    const controller = new AbortController();
    abort = controller;
    state = "starting";
    starting = (async () => {
      const tip = await store.resolveRef(opts.principal, rid, ref);
      if (gen === generation) {
        position = tip;
        state = "running";
        tail = follow(gen, tip ?? "genesis", controller.signal);
      }
      return tip;
    })();
    starting.catch((error: unknown) => failAll(gen, error));
    return starting;
  }

  async function follow(gen: number, from: string, signal: AbortSignal): Promise<void> {
    const pending = new Map<string, RunEvent[]>();
    const flush = (commitSha: Oid): void => {
      if (gen !== generation) return;
      // Hand out and move `position` in one step: see the module comment.
      position = commitSha;
      for (const [runId, events] of pending) {
        for (const listener of [...(byRun.get(runId) ?? [])]) listener.events(events, commitSha);
      }
      pending.clear();
    };
    try {
      const events = subscribeKind(
        store,
        opts.principal,
        rid,
        ref,
        (bytes, where) => parseEvent(bytes, { path: where.path, expectedSeq: where.seq, maxEventBytes }),
        { from, signal, onIssue, onCommit: (commit) => flush(commit.commitSha) },
      );
      for await (const item of events) {
        if (gen !== generation) break;
        const list = pending.get(item.runId);
        if (list === undefined) pending.set(item.runId, [item.event]);
        else list.push(item.event);
      }
    } catch (error) {
      failAll(gen, error);
      return;
    }
    // The store ends subscriptions silently when it closes; listeners must not hang on it.
    if (!signal.aborted) failAll(gen, new WorkflowHostError("store_stopped", `the store ended the subscription of ${repoId}`, { repoId }));
  }

  return {
    repoId,

    async attach(runId, listener) {
      parseRunId(runId);
      if (state === "closed") throw stoppedError();
      // Registered before anything is awaited: it sees every commit the feed hands out from now on.
      const set = byRun.get(runId) ?? new Set<RunEventListener>();
      byRun.set(runId, set);
      set.add(listener);
      count += 1;
      let attached = true;
      const detach = async (): Promise<void> => {
        if (!attached) return;
        attached = false;
        const mine = byRun.get(runId);
        if (mine?.delete(listener) !== true) return;
        if (mine.size === 0) byRun.delete(runId);
        count -= 1;
        if (count === 0 && state !== "closed") await halt();
      };
      if (state === "running") return { from: position, detach };
      try {
        return { from: await start(), detach };
      } catch (error) {
        await detach();
        throw error;
      }
    },

    listeners: () => count,

    async close() {
      if (state === "closed") return;
      state = "closed";
      const all = [...byRun.values()].flatMap((set) => [...set]);
      byRun.clear();
      count = 0;
      await halt();
      for (const listener of all) listener.failed(stoppedError());
    },
  };
}
