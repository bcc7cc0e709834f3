/**
 * The types of `createWorkflowHost` (./host.ts): its options, its handle and its states.
 */
import type { ClusterCoordinator, ClusterEvent, ClusterOptions } from "../../seams/cluster/cluster-coordinator.js";
import type { ConsumerHandle, ConsumerOptions, Dispatcher, DispatchReport } from "../../seams/dispatch/dispatch-types.js";
import type { ScheduleControls } from "../../seams/scheduler/schedule-controls.js";
import type { SchedulerEvent, WorkflowHostScheduler } from "../../seams/scheduler/scheduler-types.js";
import type { WorkflowHostSignalChannel } from "../../seams/signals/signal-channel-types.js";
import type { Logger } from "../logger.js";
import type { Authorize, Principal, RepoStore, RepoStoreOptions } from "../substrate/types.js";
import type { Clock, Timers } from "../time/clock.js";
import type { MisfirePolicy } from "../workflow/types.js";
import type { HostLock, HostLockOptions } from "./host-lock.js";
import type { ArchiveEndedRunsResult } from "./archive-ended-runs.js";
import type { RetentionPolicy } from "./retention.js";
import type { WorkflowRuntime } from "./runtime-adapter.js";

export type WorkflowHostState = "created" | "starting" | "running" | "stopping" | "stopped";

export interface WorkflowHostOptions {
  /** Root folder; deployments live at `<dataDir>/deployments/<repoId>.git`. Created by `start()`. */
  readonly dataDir: string;
  /** node:fs-compatible module (memfs works, without OS file watching). Default node:fs. */
  readonly fs?: unknown;
  /** Wall clock for firing and event stamps. Default the system clock. */
  readonly clock?: Clock;
  /** Timers of the scheduler and the runtime (a FakeClock's `timers` in tests). Default node's, unref'd. */
  readonly timers?: Timers;
  /** Where the host reports (lock takeovers, bad events, failed commits). Default silent. */
  readonly logger?: Logger;
  /** Misfire policy of cron series whose TimerSet names none. Default "skip". */
  readonly misfire?: MisfirePolicy;
  /** Gate on every store operation. Default {@link allowAll} (single-tenant host). */
  readonly authorize?: Authorize;
  /** The principal the host's own reads and writes run as. Default null. */
  readonly principal?: Principal;
  /**
   * How commits of other processes (`git push`, the CLI) are noticed: chokidar as a hint plus a
   * ref check every `pollMs`. Default `{pollMs: 1000, chokidar: true}`; `false` turns both off.
   */
  readonly watch?: RepoStoreOptions["watch"];
  /** "fsync": every write is flushed before its ref moves. Default "none". */
  readonly durability?: "none" | "fsync";
  /**
   * Small file calls on a commit's path (refs, ref locks, pack renames) made synchronously;
   * default true. Set false on a network file system (see RepoStoreOptions.blockingRefIo).
   */
  readonly blockingRefIo?: boolean;
  /**
   * Group commit: fire commits of one deployment start at least this far apart (ms, default 8,
   * 0 … 60 000; see SchedulerOptions.minCommitIntervalMs).
   * @throws time_invalid (from the constructor) when out of range
   */
  readonly minCommitIntervalMs?: number;
  /** Ref holding each run log. Default `DEFAULT_REF` ("refs/heads/main"). */
  readonly ref?: string;
  /** Largest serialised event (bytes, default 1 MiB). */
  readonly maxEventBytes?: number;
  /**
   * Signal channels kept for reuse (default {@link DEFAULT_MAX_CHANNELS}). Past this, the least
   * recently used channels nobody waits on are stopped and dropped; `channel()` makes a new one
   * when asked again. Channels with waiters are never dropped.
   * @throws config_invalid (from createWorkflowHost) unless an integer >= 1
   */
  readonly maxChannels?: number;
  /** How often the data dir is re-listed for new deployments (ms, default 2 000). */
  readonly discoverEveryMs?: number;
  /**
   * Host lock tuning: `staleMs` (default 10 000), `heartbeatMs` (default staleMs / 2),
   * `guardTimeoutMs` (5 000), `timers` for the holder-file heartbeat (default node's, ref'd, so a
   * started host keeps its process alive). The lock always judges staleness by the system clock:
   * other processes read it.
   */
  readonly lock?: Pick<HostLockOptions, "staleMs" | "heartbeatMs" | "guardTimeoutMs" | "timers">;
  /**
   * Room left to other writers of a deployment, such as `git push` (ms, default 100, 0 = none;
   * see RepoStoreOptions.foreignWriterRoomMs).
   */
  readonly foreignWriterRoomMs?: number;
  /** Every scheduler report (fired, skipped, bad_event, …), synchronously. Exceptions are ignored. */
  readonly onEvent?: (event: SchedulerEvent) => void;
  /** Every dispatch report (delivered, attempt_failed, parked, …), synchronously. Exceptions are ignored. */
  readonly onDispatchEvent?: (report: DispatchReport) => void;
  /**
   * Retention of ended runs (see src/host/retention.ts): runs that ended more than
   * `endedRunsAfterMs` ago (default 7 days) leave `main` for the archive ref
   * `refs/archive/runs` in batched commits made while the host runs, at quiet moments.
   * `false` turns it off. Default `{}` (every default).
   * @throws config_invalid (from the constructor) for a bad duration or count
   */
  readonly retention?: RetentionPolicy | false;
  /** Told about every retention pass that archived (or had to skip) runs. Exceptions are ignored. */
  readonly onRetention?: (repoId: string, result: ArchiveEndedRunsResult) => void;
  /**
   * Cluster mode (docs/cluster.md): deployments are leased across hosts through PostgreSQL and
   * each one's git remote is its source of truth; every commit is pushed to the remote with a
   * compare-and-swap before it lands in the local clone. Default none: single-host mode.
   */
  readonly cluster?: ClusterOptions;
  /** Every cluster report (lease_acquired, lease_lost, push_rejected, …), synchronously. */
  readonly onClusterEvent?: (event: ClusterEvent) => void;
}

export interface WorkflowHost {
  readonly dataDir: string;
  readonly store: RepoStore;
  readonly scheduler: WorkflowHostScheduler;
  /** Current state; see the module comment. */
  readonly state: WorkflowHostState;
  /** The held host lock while running, else null. */
  readonly lock: HostLock | null;
  /** Resolves once the host is stopped, by `stop()` or because its lock was lost. */
  readonly stopped: Promise<void>;
  /**
   * Takes the host lock, then recovers every deployment and starts firing; resolves when every
   * recovered timer is armed.
   * @throws host_locked (another live host holds the data dir; the error names it),
   *   host_stopped (called twice, or after stop); a failed start stops the host and rethrows
   */
  start(): Promise<void>;
  /**
   * Stops channels (pending waits reject with channel_stopped), the scheduler (waits for the
   * commit in flight), the store (closes watchers), then releases the lock. Idempotent;
   * concurrent calls share one stop.
   */
  stop(): Promise<void>;
  /**
   * Creates a deployment repo (idempotent: an existing one is kept) and, when running, has the
   * scheduler pick it up at once.
   * @throws repo_id_invalid, host_stopped, the store's errors
   */
  createDeployment(repoId: string): Promise<{ created: boolean; commitSha: string }>;
  /**
   * The signal channel of one run; one instance per (repo, run) while it is in use, created on
   * first use and sharing the deployment's one event feed (see `maxChannels` for when an idle
   * one is dropped).
   * @throws repo_id_invalid / id_invalid, host_stopped
   */
  channel(repoId: string, runId: string): WorkflowHostSignalChannel;
  /**
   * The runtime adapter of one deployment (timers and signals for workflow code); one per repo.
   * @throws repo_id_invalid, host_stopped
   */
  runtime(repoId: string): WorkflowRuntime;
  /**
   * Runs a retention pass over one deployment now (see `archiveEndedRuns`), serialised with the
   * host's own passes; with retention off, uses the default policy.
   * @throws repo_id_invalid, host_stopped, the store's errors
   */
  archiveEndedRuns(repoId: string): Promise<ArchiveEndedRunsResult>;
  /** Cluster mode's lease coordinator, or null in single-host mode. */
  readonly cluster: ClusterCoordinator | null;
  /** The dispatcher running this host's consumers (started and stopped with the host). */
  readonly dispatcher: Dispatcher;
  /**
   * Schedule controls over this host's deployments: pause, resume, trigger, backfill, list,
   * describe, `syncSchedules(repoId, desired)` (see seams/scheduler/schedule-controls.ts). Usable before
   * `start()`; a running scheduler picks the commits up through its tail.
   */
  readonly schedules: ScheduleControls;
  /**
   * Registers a named consumer that runs the user's code on log events, at least once (see
   * seams/dispatch/dispatcher.ts); it runs while the host runs.
   * @throws id_invalid, config_invalid, consumer_exists, host_stopped
   */
  dispatch(consumer: ConsumerOptions): ConsumerHandle;
}
