/**
 * Options, handle and reports of the host scheduler (docs/design.md §5).
 */
import type { StoreOption } from "../../src/substrate/store-option.js";
import type { Logger } from "../../src/logger.js";
import type { Principal, RepoId, RepoStore } from "../../src/substrate/types.js";
import type { Clock, Timers } from "../../src/time/clock.js";
import type { MisfirePolicy, PendingTimer, RunEvent } from "../../src/workflow/types.js";
import type { UnreadableRun } from "../../src/workflow/unreadable-runs.js";
import type { WorkflowHostError } from "../../src/errors.js";

export interface SchedulerOptionsBase {
  readonly principal: Principal;
  /** Ids of the workflow-run repos to serve; polled every `discoverEveryMs`. */
  readonly listActiveDeployments: () => Promise<readonly (string | RepoId)[]> | readonly (string | RepoId)[];
  /** Ref holding each run log. Default `DEFAULT_REF` ("refs/heads/main"). */
  readonly ref?: string;
  /** Wall clock; never fires before `fireAt` by this clock. */
  readonly clock: Clock;
  /** Monotonic one-shot timers. Default: node's, unref'd (the embedding host keeps the process alive). */
  readonly timers?: Timers;
  /** Misfire policy of cron series whose TimerSet names none. Default "skip". */
  readonly misfire?: MisfirePolicy;
  /** Most missed ticks fired per series under "all". Default 100. */
  readonly maxCatchUp?: number;
  /** How late the newest due cron tick may be and still count as on time (ms, default 1 000). */
  readonly misfireGraceMs?: number;
  /**
   * Most timers per fire commit. Default 20 000. The batch grows with the backlog: a commit
   * takes every buffered due timer of its deployment up to 1 000 (or this, when smaller), and
   * while timers still wait when it lands, the next takes up to twice as many, up to this; so a
   * burst of 20 000 is five commits, the first 1 000 as early as ever. The commit's work is
   * sliced (the event loop gets a turn every ~10 ms while it plans, hashes, edits folders,
   * validates and encodes its pack), so a big batch does not stall other deployments, signals
   * or heartbeats; its timers are committed together, when its ref moves.
   */
  readonly maxBatch?: number;
  /**
   * Group commit: fire commits of one deployment start at least this far apart (ms of real
   * time, default 8; 0 commits back to back). Timers that come due in between are committed
   * together by the next one; a timer that comes due on a quiet deployment is committed at
   * once. Each commit rewrites the folders on its paths (`runs/` holds an entry per run: 400 KB
   * at 10 000 runs), so on a busy deployment this bounds the commit rate, the bytes written and
   * the CPU they cost, at the price of up to this much lateness; measured at 500 fires/s on a
   * 10 000-run deployment it lowered p99 lateness (see bench/RESULTS.md).
   */
  readonly minCommitIntervalMs?: number;
  /** Longest single timer arm; the wall clock is re-read at least this often (ms, default 30 000). */
  readonly maxArmMs?: number;
  /** How often `listActiveDeployments` is polled for new repos (ms, default 2 000). */
  readonly discoverEveryMs?: number;
  /** First retry delay after a failed commit, doubled per failure up to `retryMaxMs` (ms, default 500). */
  readonly retryInitialMs?: number;
  /** Longest retry delay (ms, default 30 000). */
  readonly retryMaxMs?: number;
  /** Largest event read from a log (bytes, default 1 MiB). */
  readonly maxEventBytes?: number;
  /**
   * Keep a derived recovery index beside each deployment (`<repo>.git/workflow-host/`), so a
   * restart reads only the runs whose tree changed since the index was written. Never part of
   * the repository's history; ignored whenever it does not match exactly. Default true.
   */
  readonly recoveryIndex?: boolean;
  /** Where reports go when there is no `onEvent` (bad events, failed commits, …), and other failures. */
  readonly logger?: Logger;
  /**
   * Every report of the scheduler, synchronously, in order. Exceptions thrown here are ignored.
   * When given, reports are not also written to `logger`: each is reported once, here.
   */
  readonly onEvent?: (event: SchedulerEvent) => void;
  /**
   * Told of every fire commit once its ref moved, with every event it added (see
   * {@link CommittedEvents}), synchronously, before the commit's runs are adopted. For
   * in-process readers of the log (a dispatcher) that can take the events from here instead of
   * reading them back. Exceptions thrown here are ignored.
   */
  readonly onCommittedEvents?: (committed: CommittedEvents) => void;
}

/**
 * The events one commit of this process added to a deployment's log, handed over as it lands.
 * `events` is every event file the commit added, in run then seq order, each as committed
 * (validated, deep-frozen); the commit added nothing else to `runs/`.
 */
export interface CommittedEvents {
  readonly repoId: string;
  /** Full ref name the commit moved (e.g. "refs/heads/main"). */
  readonly ref: string;
  readonly commitSha: string;
  /** The commit's only parent; null for a root commit. */
  readonly parentSha: string | null;
  readonly events: readonly { readonly runId: string; readonly seq: number; readonly event: RunEvent }[];
}

/** Scheduler options; the store is `store` (`repoStore` is its deprecated name). */
export type SchedulerOptions = SchedulerOptionsBase & StoreOption;

/** A timer held in memory, due at `fireAt`. */
export interface QueuedTimer {
  readonly repoId: string;
  readonly runId: string;
  readonly timerId: string;
  /** The armed generation's fireAt (for a cron series, its next tick). */
  readonly fireAt: string;
  /** `fireAt` as epoch milliseconds (the original seam's field). */
  readonly fireAtMs: number;
  /** Seq of the TimerSet that armed this generation. */
  readonly setSeq: number;
  readonly cron?: string;
  readonly timezone?: string;
}

/**
 * The pending timers of one deployment as the scheduler holds them (see
 * {@link WorkflowHostScheduler.servedPendingTimers}): what the fold of its logs at `commitSha`
 * lists (src/host/list-pending-timers.ts), read from memory. Timer `i` is `timers[i]` of run
 * `runIds[i]`, each run's in its state's order, paused series included, ended runs left out.
 */
export interface ServedPendingTimers {
  readonly repoId: string;
  /** The commit every run was read at: the live tail's last applied commit (it may trail the ref's tip by one tail step). */
  readonly commitSha: string;
  /** Run folders held, readable or not. */
  readonly runs: number;
  readonly runIds: readonly string[];
  /** The run states' own objects (never changed in place: a new state holds new ones). */
  readonly timers: readonly PendingTimer[];
  /** Runs the fold would name as unreadable: held as damaged until they read whole (design notes §52, §69), or holding no log. */
  readonly unreadable: readonly UnreadableRun[];
}

export type SchedulerEvent =
  | { readonly type: "recovered"; readonly repoId: string; readonly commitSha: string | null; readonly runs: number; readonly pending: number; readonly badEvents: number; readonly ms: number }
  | { readonly type: "fired"; readonly repoId: string; readonly runId: string; readonly timerId: string; readonly scheduledFor: string; readonly firedAt: string; readonly commitSha: string }
  | { readonly type: "skipped"; readonly repoId: string; readonly runId: string; readonly timerId: string; readonly firstMissed: string; readonly lastMissed: string; readonly count: number; readonly commitSha: string }
  | { readonly type: "armed"; readonly repoId: string; readonly runId: string; readonly timerId: string; readonly fireAt: string }
  | { readonly type: "cancelled"; readonly repoId: string; readonly runId: string; readonly timerId: string; readonly commitSha: string | null }
  /**
   * A cron series was paused (`SchedulePaused`) or resumed (`ScheduleResumed`) by the commit
   * `commitSha`, whoever wrote it (the HTTP face, the CLI, another process, a push): one report
   * per change of its state, once the tail applied it; `reason` the pause's, when it gave one.
   */
  | { readonly type: "paused"; readonly repoId: string; readonly runId: string; readonly timerId: string; readonly reason?: string; readonly commitSha: string }
  | { readonly type: "resumed"; readonly repoId: string; readonly runId: string; readonly timerId: string; readonly commitSha: string }
  | { readonly type: "bad_event"; readonly repoId: string; readonly runId: string; readonly seq: number | null; readonly path: string; readonly error: WorkflowHostError }
  /**
   * A fire commit failed; its `timers` are re-armed `retryInMs` later. With `runId`: only that
   * run's timers, whose folder is not in the repository (`error` object_corrupt naming it); the
   * other runs of the batch were committed without them, and this run waits `retryMaxMs`.
   */
  | { readonly type: "commit_failed"; readonly repoId: string; readonly runId?: string; readonly timers: number; readonly retryInMs: number; readonly error: unknown }
  | { readonly type: "timer_rejected"; readonly repoId: string; readonly runId: string; readonly timerId: string; readonly error: unknown }
  | { readonly type: "repo_failed"; readonly repoId: string; readonly retryInMs: number; readonly error: unknown }
  | { readonly type: "ref_rewritten"; readonly repoId: string; readonly from: string | null; readonly to: string }
  /**
   * The deployment's archive ref (refs/archive/runs) cannot be read (`error`: ref_corrupt or
   * object_corrupt); reported once per damage seen. Live runs are served as usual meanwhile.
   */
  | { readonly type: "archive_unreadable"; readonly repoId: string; readonly error: WorkflowHostError }
  /**
   * A directory sat at the recovery index's path (so no index could be written or read, and
   * every start walked every run): moved aside to `displacedTo`, kept, and the index written.
   */
  | { readonly type: "index_replaced"; readonly repoId: string; readonly displacedTo: string }
  /**
   * The ref was moved back from `from` to its ancestor `to` behind this host (after a
   * `ref_rewritten`): refused. The host keeps the runs as they were at `from`, fires nothing
   * again and commits nothing (`commit_failed` with `ref_rewound`, retried) until the ref is
   * restored to `from` or the host restarts, which takes the ref as it finds it.
   */
  | { readonly type: "rewind_refused"; readonly repoId: string; readonly from: string; readonly to: string };

export interface SchedulerStats {
  readonly repos: number;
  readonly runs: number;
  readonly queued: number;
  readonly fired: number;
  readonly skippedTicks: number;
  readonly cancelled: number;
  readonly commits: number;
  readonly commitFailures: number;
  readonly badEvents: number;
  /** Reports of bad events, newest last, at most 100. */
  readonly recentBadEvents: readonly { readonly repoId: string; readonly path: string; readonly seq: number | null; readonly code: string }[];
}

export type CancelOutcome = "cancelled" | "already_fired" | "already_cancelled" | "not_armed" | "run_terminal";

export interface WorkflowHostScheduler {
  /** Recovers every active deployment (resolves when their timers are armed) and starts tailing. */
  start(): Promise<void>;
  /** Cancels arms, waits for the commit in flight, releases every watcher and timer. Idempotent. */
  stop(): Promise<void>;
  /**
   * Drops a queued timer from memory only (sync, idempotent); the log is untouched, so a restart
   * re-arms it. A later TimerSet (a new generation) is armed as usual.
   * @param repoId the deployment
   * @param setSeq also suppresses every generation up to this TimerSet seq, even one the live
   *   tail has not seen yet (a cancel racing its own TimerSet's commit)
   * @returns whether a queued timer was dropped
   */
  dropQueued(repoId: string, runId: string, timerId: string, setSeq?: number): boolean;
  /**
   * @deprecated Use {@link WorkflowHostScheduler.dropQueued} (`repoId` first, as everywhere).
   * Without `repoId`, drops the timer in every deployment.
   */
  cancelQueued(runId: string, timerId: string, repoId?: string, setSeq?: number): boolean;
  /**
   * Cancels a timer durably: appends TimerCancelled unless the timer already fired, checked
   * under the repo lock, so cancel-vs-fire has exactly one winner.
   * @throws id_invalid / repo_id_invalid before any write; the store's write errors
   */
  cancelTimer(repoId: string, runId: string, timerId: string, reason?: string): Promise<{ outcome: CancelOutcome; commitSha: string | null }>;
  /** Every timer held in memory, sorted by fireAt. */
  queuedTimers(): QueuedTimer[];
  /**
   * The pending timers of deployment `repoId` from the scheduler's memory (no log is read; see
   * {@link ServedPendingTimers}), all at one commit: the walk awaits `pause` every few thousand
   * runs (default: a time slicer of 10 ms) and starts over when the runs changed meanwhile; the
   * fourth walk is made in one go.
   * @returns null when this scheduler does not serve `repoId` (not listed active, leased
   *   elsewhere, failed and waiting to retry), its recovery has not completed or its ref has no
   *   commit; "unsettled" while its runs are not all at one commit (a commit being applied by the
   *   tail, a fire commit of this host in flight or not yet reached by the tail): ask again
   *   shortly
   */
  servedPendingTimers(repoId: string, pause?: () => Promise<void>): Promise<ServedPendingTimers | "unsettled" | null>;
  stats(): SchedulerStats;
  /** Polls `listActiveDeployments` now and recovers new deployments; resolves when they are armed. */
  refresh(): Promise<void>;
  /** Resolves when no commit is in flight and no fire is buffered (tests, graceful handover). */
  idle(): Promise<void>;
}
