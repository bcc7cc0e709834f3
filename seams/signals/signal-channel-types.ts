/**
 * Options and handle of the signal channel (docs/design.md §6).
 */
import type { StoreOption } from "../../src/substrate/store-option.js";
import type { Logger } from "../../src/logger.js";
import type { Principal, RepoStore } from "../../src/substrate/types.js";
import type { Clock } from "../../src/time/clock.js";
import type { RunState } from "../../src/workflow/types.js";
import type { RunEventFeed } from "./run-event-feed.js";

export interface SignalChannelOptionsBase {
  /** Passed to every store call (and so to `authorize`). */
  readonly principal: Principal;
  /** The deployment (workflow-run repo id); checked on creation (repo_id_invalid). */
  readonly repoId: string;
  /** Ref holding the run logs. Default `DEFAULT_REF` ("refs/heads/main"). */
  readonly ref?: string;
  /** The run whose log this channel reads and writes; checked on creation (id_invalid). */
  readonly runId: string;
  /**
   * The run's state as the runtime knows it, consulted at every `awaitNext`: a signalId it
   * reports as observed but not unconsumed counts as consumed. Optional: the channel always
   * reads the log itself at the commit its subscription starts from (so nothing is lost between
   * reading and waiting), which is what the default, "the log at the current tip", would give.
   */
  readonly readState?: () => Promise<RunState> | RunState;
  /** Makes a signalId when `deliver` is given none. Default: a random UUID. */
  readonly newId?: () => string;
  /** Stamps `at` of SignalReceived and SignalConsumed. */
  readonly clock: Clock;
  /** Largest serialised event (bytes of UTF-8, default 1 MiB = 1 048 576). */
  readonly maxEventBytes?: number;
  /**
   * The deployment's event feed, to share one subscription among the channels of many runs
   * (it must follow the same repo and ref). Default: a feed of this channel's own, which
   * subscribes at the first `awaitNext` and unsubscribes at `stop()`.
   */
  readonly feed?: RunEventFeed;
  /** Where bad events and subscription failures are reported. Default: silent. */
  readonly logger?: Logger;
}

/** SignalChannel options; the store is `store` (`repoStore` is its deprecated name). */
export type SignalChannelOptions = SignalChannelOptionsBase & StoreOption;

export interface DeliverResult {
  readonly signalId: string;
  /** Seq of the SignalReceived (the existing one for a duplicate). */
  readonly seq: number;
  /** True when the signalId was already in the log: nothing was committed. */
  readonly duplicate: boolean;
}

export interface ReceivedSignal {
  readonly signalId: string;
  readonly signalName: string;
  readonly payload: unknown;
  readonly seq: number;
  readonly at: string;
}

export interface WorkflowHostSignalChannel {
  /**
   * Commits a SignalReceived at the next seq (max seq + 1), unless `signalId` is anywhere in
   * the log (waiting, consumed or not): then nothing is committed and the existing seq is
   * returned with `duplicate: true`. The check and the append run together under the repo lock,
   * so concurrent deliveries of one signalId, from any process, commit it once. Ids, payload and
   * size are checked before any write. Does not start the subscription.
   * @param signalId dedupe key; default `newId()` (a random UUID)
   * @throws id_invalid (name or id), payload_too_large (the serialised event is over
   *   `maxEventBytes`: nothing written, the id stays free), event_invalid (payload not plain
   *   JSON data, or the run has ended), channel_stopped, and the store's write errors
   */
  deliver(signalName: string, payload: unknown, signalId?: string): Promise<DeliverResult>;
  /** How many `awaitNext` calls are pending (0 once stopped). */
  waiting(): number;
  /**
   * Resolves with the oldest signal of that name (numeric seq) not yet consumed nor handed to
   * another awaiter: at once when the log already holds one, else when a commit (by any
   * process) brings one. Awaiters of one name are served first-in, first-out; each signal goes
   * to one awaiter only. The first call subscribes (see `feed`).
   * @throws aborted (the AbortSignal fired; the awaiter is removed), channel_stopped, id_invalid
   *   (name), store_stopped (the store closed), and the store's read errors (all awaiters of
   *   the channel are then rejected and the next call reads afresh)
   */
  awaitNext(signalName: string, abortSignal?: AbortSignal): Promise<ReceivedSignal>;
  /**
   * Records that a handed-out signal was consumed (appends SignalConsumed under the repo lock),
   * so it is not handed out again, by this channel or after a restart.
   * @returns the SignalConsumed seq, or null when nothing was appended: the signal was already
   *   consumed, or no SignalReceived with that id is in the log
   * @throws id_invalid (signalId, stepId), channel_stopped, and the store's write errors
   */
  consume(signalId: string, stepId?: string): Promise<{ seq: number | null }>;
  /**
   * Marks a signal as handed out without an awaiter, for a caller that picked it from the log
   * itself (the runtime adapter settling a signal-vs-timeout race by log order). Works for a
   * signal this channel has not seen yet: it will be skipped when it arrives. Synchronous.
   * @returns false when it was already handed out or is known to be consumed (or the channel
   *   is stopped); true when the caller now owns it
   */
  claim(signalId: string): boolean;
  /**
   * Gives back a signal handed out by `awaitNext` (or `claim`) that was not consumed: it becomes
   * available again and goes to the oldest awaiter of its name. Unknown or consumed ids are
   * ignored. Synchronous, idempotent.
   */
  release(signalId: string): void;
  /**
   * Rejects pending awaiters with channel_stopped, ends the subscription and waits for it to
   * release its watcher, so the channel leaves no watcher or timer behind. Idempotent. A stopped
   * channel refuses `deliver`, `awaitNext` and `consume` with channel_stopped.
   */
  stop(): Promise<void>;
}
