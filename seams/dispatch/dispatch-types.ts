/**
 * Shapes of the dispatch seam: named consumers that run the user's code (a function or an HTTP
 * URL) on what happens in the deployments' logs, at least once. See `./dispatcher.ts` for the
 * design and the delivery guarantee.
 */
import type { StoreOption } from "../../src/substrate/store-option.js";
import type { Logger } from "../../src/logger.js";
import type { Principal, RepoStore } from "../../src/substrate/types.js";
import type { Clock, Timers } from "../../src/time/clock.js";
import type { RunEvent } from "../../src/workflow/types.js";
import type { CommittedEvents } from "../scheduler/scheduler-types.js";

/** Event types a consumer can receive. */
export type DispatchEventType = "TimerFired" | "TimerSkipped" | "SignalReceived" | "RunCompleted" | "RunFailed" | "RunCancelled";

export const DISPATCH_EVENT_TYPES: readonly DispatchEventType[] = ["TimerFired", "TimerSkipped", "SignalReceived", "RunCompleted", "RunFailed", "RunCancelled"];

/** What one call of a handler is given. */
export interface Delivery {
  /** The consumer's name. */
  readonly consumer: string;
  readonly repoId: string;
  readonly runId: string;
  readonly seq: number;
  /** The commit of the deployment's main ref that added the event. */
  readonly commitSha: string;
  readonly event: RunEvent;
  /** 1 for the first call; counts every failed attempt recorded before, across restarts. */
  readonly attempt: number;
  /** Stable across attempts and restarts; see `idempotencyKey` in `./dispatch-keys.ts`. */
  readonly idempotencyKey: string;
}

/**
 * The user's code. Resolving means done (recorded, never handed over again); throwing or
 * rejecting means failed (retried after the backoff, parked after `maxAttempts`). `signal`
 * aborts when the attempt's `timeoutMs` passes or the dispatcher stops.
 */
export type DispatchHandler = (delivery: Delivery, signal: AbortSignal) => unknown;

/** `number[]`: the delay before retry n is `list[min(n-1, length-1)]` ms. */
export type BackoffPolicy =
  | readonly number[]
  | {
      readonly type: "exponential";
      /** First delay (ms, default 1 000). */
      readonly baseMs?: number;
      /** Largest delay (ms, default 60 000). */
      readonly maxMs?: number;
      /** Multiplier per attempt (default 2). */
      readonly factor?: number;
      /** "full": a random delay in [0, computed] (default); "none": exactly the computed delay. */
      readonly jitter?: "full" | "none";
    };

export interface DispatchFilter {
  /** Only these deployments (default: every deployment of the data dir). */
  readonly repoIds?: readonly string[];
  /** Only these runs (default: every run). */
  readonly runIds?: readonly string[];
  /** Only these event types (default: all of {@link DISPATCH_EVENT_TYPES}). */
  readonly types?: readonly DispatchEventType[];
}

/** An HTTP target: each event is POSTed as JSON, signed with HMAC-SHA256 (see `./http-target.ts`). */
export interface HttpTarget {
  /**
   * An absolute http: or https: URL without user or password (`https://u:p@…` is
   * `config_invalid`: credentials would be repeated in every error, log line and status that
   * names the URL; the receiver authenticates the host by the signature header).
   */
  readonly url: string;
  /** The HMAC key; at least 16 characters. */
  readonly secret: string;
}

export interface ConsumerOptions {
  /** `^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$`; names the ref `refs/consumers/<name>` in each deployment. */
  readonly name: string;
  /** Exactly one of `handler` and `http`. */
  readonly handler?: DispatchHandler;
  readonly http?: HttpTarget;
  readonly filter?: DispatchFilter;
  /** Handler calls in flight at once for this consumer, across runs and deployments (default 8, 1 … 1 000). */
  readonly concurrency?: number;
  /** Attempts before an event is parked (default 5, 1 … 1 000). */
  readonly maxAttempts?: number;
  /** Delay between attempts (default exponential, 1 s doubling to 60 s, full jitter). */
  readonly backoff?: BackoffPolicy;
  /** One attempt's limit (ms, default 30 000, 1 … 3 600 000); a late attempt counts as failed. */
  readonly timeoutMs?: number;
  /**
   * Handled events (and failed attempts) that may wait for their checkpoint commit before new
   * attempts wait too (default 1 000, or 4 × concurrency if more; 1 … 1 000 000). A crash repeats at
   * most `maxUnrecorded + concurrency` handovers per deployment; a larger value keeps
   * throughput up when checkpoint commits are slow.
   */
  readonly maxUnrecorded?: number;
  /**
   * Where a consumer starts in a deployment it has no ref in yet: "genesis" (default: every
   * event already in the log) or "head" (only events committed from now on).
   */
  readonly startFrom?: "genesis" | "head";
}

/** Reports of a dispatcher, synchronously (exceptions thrown by the listener are ignored). */
export type DispatchReport =
  | { readonly type: "delivered"; readonly consumer: string; readonly repoId: string; readonly runId: string; readonly seq: number; readonly attempt: number; readonly idempotencyKey: string }
  | { readonly type: "attempt_failed"; readonly consumer: string; readonly repoId: string; readonly runId: string; readonly seq: number; readonly attempt: number; readonly idempotencyKey: string; readonly error: unknown; readonly retryInMs: number }
  | { readonly type: "parked"; readonly consumer: string; readonly repoId: string; readonly runId: string; readonly seq: number; readonly attempts: number; readonly idempotencyKey: string; readonly error: unknown }
  | { readonly type: "released"; readonly consumer: string; readonly repoId: string; readonly runId: string; readonly seq: number; readonly idempotencyKey: string }
  | { readonly type: "checkpoint_failed"; readonly consumer: string; readonly repoId: string; readonly error: unknown; readonly retryInMs: number }
  | { readonly type: "lane_failed"; readonly consumer: string; readonly repoId: string; readonly error: unknown; readonly retryInMs: number };

export interface DispatcherOptionsBase {
  readonly principal: Principal;
  /** Deployments to serve; called at start and every `discoverEveryMs`. */
  readonly listDeployments: () => Promise<readonly string[]>;
  /** The deployments' log ref (default `DEFAULT_REF` ("refs/heads/main")). */
  readonly ref?: string;
  readonly clock?: Clock;
  /** Backoff, timeouts and discovery run on these (a FakeClock's in tests). Default node's. */
  readonly timers?: Timers;
  /** Jitter source in [0, 1) (default Math.random). */
  readonly random?: () => number;
  readonly logger?: Logger;
  readonly onEvent?: (report: DispatchReport) => void;
  /** Re-list deployments this often (ms, default 2 000). */
  readonly discoverEveryMs?: number;
  /** Largest event read (bytes, default 1 MiB). */
  readonly maxEventBytes?: number;
  /**
   * Events read ahead of the oldest unfinished one, per consumer and deployment (default
   * 10 000): the subscription pauses beyond it, so memory stays bounded however far behind.
   */
  readonly maxBuffered?: number;
}

/** Dispatcher options; the store is `store` (`repoStore` is its deprecated name). */
export type DispatcherOptions = DispatcherOptionsBase & StoreOption;

/** One consumer in one deployment, as the running dispatcher sees it. */
export interface LaneStatus {
  readonly consumer: string;
  readonly repoId: string;
  /** Last commit of main every event of which (and of those before) is handled. */
  readonly cursor: string | null;
  /** Events read and not yet handled (queued, in flight, waiting for a retry). */
  readonly pending: number;
  readonly inFlight: number;
  readonly delivered: number;
  readonly parked: number;
  readonly failedAttempts: number;
}

export interface ConsumerHandle {
  readonly name: string;
  /** Per deployment, what the consumer has done since it started. */
  status(): readonly LaneStatus[];
  /** Stops this consumer (waits for attempts in flight and the last checkpoint). Idempotent. */
  stop(): Promise<void>;
}

export interface Dispatcher {
  /**
   * Registers a consumer; it runs once the dispatcher is started (at once if it is).
   * @throws id_invalid (name), config_invalid (options), dispatcher_stopped, consumer_exists
   */
  add(consumer: ConsumerOptions): ConsumerHandle;
  /** Starts every registered consumer in every deployment listed now. */
  start(): Promise<void>;
  /** Re-lists deployments now (e.g. after one was created). */
  refresh(): Promise<void>;
  /**
   * The events of a commit this process just made (a scheduler's `onCommittedEvents`): lanes
   * whose reading stands at its parent take them without reading the log; the others read the
   * commit as usual. Ignored for another ref, an unknown deployment, or when not running.
   */
  committed(committed: CommittedEvents): void;
  status(): readonly LaneStatus[];
  /** Stops every consumer; idempotent. */
  stop(): Promise<void>;
}
