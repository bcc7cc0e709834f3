/**
 * `createWorkflowHost`: one data dir served by one process (docs/design.md §7). It wires the repo store,
 * the scheduler (the single writer of timer outcomes), one signal channel per run and one
 * runtime adapter per deployment, and guards the data dir with the host lock.
 *
 * States: created → starting (lock taken, scheduler recovering) → running → stopping → stopped.
 * `start()` runs once; a failed start leaves the host stopped with the lock released. `stop()`
 * is idempotent and may be called in any state (also while starting: it waits for the start to
 * settle). A lost lock (another process took it over) stops the host by itself, and no commit
 * leaves it after the loss is known: every ref move first passes the lock's fence
 * (`HostLock.assertHeld`), which also holds commits back while heartbeats cannot be written
 * (a read-only or failing data dir). Such a failure is logged with its errno and retried; the
 * host keeps running and catches up once the disk takes writes again.
 *
 * The library installs no signal handlers; a process that wants Ctrl-C to stop the host calls
 * {@link stopOnSignals} (see `./stop-on-signals.ts`).
 */
import { DEFAULT_REF } from "../substrate/ref-name.js";
import { createClusterCoordinator, type ClusterCoordinator, type ClusterEvent, type ClusterOptions } from "../../seams/cluster/cluster-coordinator.js";
import { createDispatcher } from "../../seams/dispatch/dispatcher.js";
import type { ConsumerHandle, ConsumerOptions, Dispatcher, DispatchReport } from "../../seams/dispatch/dispatch-types.js";
import { createWorkflowHostScheduler } from "../../seams/scheduler/scheduler.js";
import { createScheduleControls, type ScheduleControls } from "../../seams/scheduler/schedule-controls.js";
import type { SchedulerEvent, WorkflowHostScheduler } from "../../seams/scheduler/scheduler-types.js";
import { createRunEventFeed, type RunEventFeed } from "../../seams/signals/run-event-feed.js";
import { createWorkflowHostSignalChannel } from "../../seams/signals/signal-channel.js";
import type { WorkflowHostSignalChannel } from "../../seams/signals/signal-channel-types.js";
import { WorkflowHostError } from "../errors.js";
import { silentLogger, type Logger } from "../logger.js";
import { allowAll } from "../substrate/allow-all.js";
import { createRepoStore } from "../substrate/repo-store.js";
import type { Authorize, Principal, RepoStore, RepoStoreOptions } from "../substrate/types.js";
import { createSystemTimers, systemClock, type Clock, type Timers } from "../time/clock.js";
import { parseRepoId, parseRunId } from "../workflow/ids.js";
import type { MisfirePolicy } from "../workflow/types.js";
import { WORKFLOW_RUN_KIND, workflowRunKind } from "../workflow/workflow-run-kind.js";
import { acquireHostLock, type HostLock, type HostLockOptions } from "./host-lock.js";
import type { ArchiveEndedRunsResult } from "./archive-ended-runs.js";
import { createRetentionLoop, type RetentionPolicy } from "./retention.js";
import { createRuntimeAdapter, type WorkflowRuntime } from "./runtime-adapter.js";

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

/** Default {@link WorkflowHostOptions.maxChannels}. */
export const DEFAULT_MAX_CHANNELS = 1_000;

/**
 * Creates a host over a data dir. Nothing touches the disk until `start()` or `createDeployment`.
 * @throws TypeError for a bad store option (see `createRepoStore`)
 */
export function createWorkflowHost(opts: WorkflowHostOptions): WorkflowHost {
  const clock = opts.clock ?? systemClock;
  const timers = opts.timers ?? createSystemTimers({ unref: true });
  const logger = opts.logger ?? silentLogger;
  const principal = opts.principal ?? null;
  const ref = opts.ref ?? DEFAULT_REF;
  let lock: HostLock | null = null;
  let lockLost: WorkflowHostError | null = null;
  let followLeases = false;
  const cluster: ClusterCoordinator | null =
    opts.cluster === undefined
      ? null
      : createClusterCoordinator({
          ...opts.cluster,
          deploymentsDir: `${opts.dataDir.replace(/\/+$/, "")}/deployments`,
          timers,
          clock,
          logger,
          ...(opts.onClusterEvent === undefined ? {} : { onEvent: opts.onClusterEvent }),
          // Twice: a refresh already under way may have listed the leases before this change.
          onServingChanged: async () => {
            if (!followLeases) return;
            await scheduler.refresh();
            await scheduler.refresh();
            await dispatcher.refresh();
          },
        });
  const listDeployments = async (): Promise<readonly string[]> => (cluster === null ? store.listRepos(principal, WORKFLOW_RUN_KIND) : cluster.serving());
  const store = createRepoStore({
    dataDir: opts.dataDir,
    kindHandlers: [workflowRunKind(opts.maxEventBytes === undefined ? {} : { maxEventBytes: opts.maxEventBytes })],
    authorize: opts.authorize ?? allowAll,
    clock,
    watch: opts.watch ?? { pollMs: 1_000, chokidar: true },
    ...(opts.fs === undefined ? {} : { fs: opts.fs }),
    ...(opts.durability === undefined ? {} : { durability: opts.durability }),
    ...(opts.blockingRefIo === undefined ? {} : { blockingRefIo: opts.blockingRefIo }),
    foreignWriterRoomMs: opts.foreignWriterRoomMs ?? 100,
    ...(cluster === null ? {} : { author: cluster.identity, beforeRefMove: (move) => cluster.beforeRefMove(move) }),
    // Before start() (createDeployment) there is no lock to check; once it was lost, nothing goes.
    fence: () => {
      if (lockLost !== null) throw lockLost;
      lock?.assertHeld();
    },
  });
  const scheduler = createWorkflowHostScheduler({
    store,
    principal,
    listActiveDeployments: listDeployments,
    ref,
    clock,
    timers,
    logger,
    ...(opts.misfire === undefined ? {} : { misfire: opts.misfire }),
    ...(opts.maxEventBytes === undefined ? {} : { maxEventBytes: opts.maxEventBytes }),
    ...(opts.discoverEveryMs === undefined ? {} : { discoverEveryMs: opts.discoverEveryMs }),
    ...(opts.minCommitIntervalMs === undefined ? {} : { minCommitIntervalMs: opts.minCommitIntervalMs }),
    ...(opts.onEvent === undefined ? {} : { onEvent: opts.onEvent }),
    // Fire commits go straight to the consumers; they read back only what they were not handed.
    onCommittedEvents: (committed) => dispatcher.committed(committed),
  });

  const dispatcher: Dispatcher = createDispatcher({
    store,
    principal,
    listDeployments,
    ref,
    clock,
    timers,
    logger,
    ...(opts.discoverEveryMs === undefined ? {} : { discoverEveryMs: opts.discoverEveryMs }),
    ...(opts.maxEventBytes === undefined ? {} : { maxEventBytes: opts.maxEventBytes }),
    ...(opts.onDispatchEvent === undefined ? {} : { onEvent: opts.onDispatchEvent }),
  });
  const retention = createRetentionLoop({
    store,
    principal,
    listDeployments,
    ref,
    nowMs: () => clock().getTime(),
    timers,
    logger,
    policy: opts.retention === false ? {} : (opts.retention ?? {}),
    ...(opts.maxEventBytes === undefined ? {} : { maxEventBytes: opts.maxEventBytes }),
    onPass: (repoId, result) => {
      try {
        opts.onRetention?.(repoId, result);
      } catch {
        // A listener's failure is its own.
      }
    },
  });
  /** Channels by `repo/run`, least recently used first; at most `maxChannels` idle ones are kept. */
  const channels = new Map<string, WorkflowHostSignalChannel>();
  const maxChannels = opts.maxChannels ?? DEFAULT_MAX_CHANNELS;
  if (!Number.isInteger(maxChannels) || maxChannels < 1) {
    throw new WorkflowHostError("config_invalid", `maxChannels ${String(maxChannels)} must be an integer >= 1`, { field: "maxChannels", value: maxChannels });
  }
  /** One event feed per deployment, shared by its runtime and every channel of its runs. */
  const feeds = new Map<string, RunEventFeed>();
  const runtimes = new Map<string, WorkflowRuntime>();
  let state: WorkflowHostState = "created";
  let starting: Promise<void> | null = null;
  let stopping: Promise<void> | null = null;
  let markStopped: () => void = () => undefined;
  const stopped = new Promise<void>((resolve) => {
    markStopped = resolve;
  });

  const ensureUsable = (what: string): void => {
    if (state === "stopping" || state === "stopped") {
      throw new WorkflowHostError("host_stopped", `${what}: the host of ${store.dataDir} is ${state}; create a new host`, { dataDir: store.dataDir, state });
    }
  };

  function feedOf(repoId: string): RunEventFeed {
    let feed = feeds.get(repoId);
    if (feed === undefined) {
      feed = createRunEventFeed({ store, principal, repoId, ref, logger, ...(opts.maxEventBytes === undefined ? {} : { maxEventBytes: opts.maxEventBytes }) });
      feeds.set(repoId, feed);
    }
    return feed;
  }

  /** Stops the least recently used channels nobody waits on while more than `maxChannels` are kept. */
  function trimChannels(): void {
    if (channels.size <= maxChannels) return;
    for (const [key, channel] of channels) {
      if (channels.size <= maxChannels) return;
      if (channel.waiting() > 0) continue;
      channels.delete(key);
      channel.stop().catch((error: unknown) => logger.error(`stopping an idle signal channel failed: ${String(error)}`));
    }
  }

  async function doStart(): Promise<void> {
    try {
      lock = await acquireHostLock({
        dataDir: opts.dataDir,
        logger,
        ...(opts.fs === undefined ? {} : { fs: opts.fs }),
        ...opts.lock,
        onCompromised: (error) => {
          lockLost = error;
          logger.error(`stopping the host of ${store.dataDir}: its lock was lost`);
          void host.stop();
        },
      });
      await cluster?.start();
      await scheduler.start();
      await dispatcher.start();
      if (opts.retention !== false) retention.start();
      followLeases = true;
      // Leases taken while the scheduler started are picked up now.
      if (cluster !== null) await Promise.all([scheduler.refresh(), dispatcher.refresh()]);
      if (state === "starting") state = "running";
    } catch (error) {
      state = "stopping";
      await shutdown();
      throw error;
    }
  }

  async function shutdown(): Promise<void> {
    // Every part is stopped even when another fails; failures are logged, the lock still released.
    const attempt = async (what: string, work: () => Promise<unknown>): Promise<void> => {
      try {
        await work();
      } catch (error) {
        logger.error(`stopping ${what} failed: ${String(error)}`);
      }
    };
    // Runtimes first: their waits end with host_stopped rather than the channels' channel_stopped.
    await Promise.all([...runtimes.values()].map((runtime) => attempt("a runtime", () => runtime.stop())));
    runtimes.clear();
    await Promise.all([...channels.values()].map((channel) => attempt("a signal channel", () => channel.stop())));
    channels.clear();
    await Promise.all([...feeds.values()].map((feed) => attempt("an event feed", () => feed.close())));
    feeds.clear();
    await attempt("retention", () => retention.stop());
    await attempt("the dispatcher", () => dispatcher.stop());
    await attempt("the scheduler", () => scheduler.stop());
    followLeases = false;
    // After the scheduler: its last commit is pushed before the leases are freed.
    if (cluster !== null) await attempt("the cluster leases", () => cluster.stop());
    await attempt("the store", () => store.close());
    const held = lock;
    lock = null;
    if (held !== null) await attempt("the host lock", () => held.release());
    state = "stopped";
    markStopped();
  }

  const host: WorkflowHost = {
    dataDir: store.dataDir,
    store,
    scheduler,
    get state() {
      return state;
    },
    get lock() {
      return lock;
    },
    stopped,

    start() {
      if (state !== "created") {
        return Promise.reject(
          new WorkflowHostError("host_stopped", `start() called on a host that is ${state}; a host starts once`, { dataDir: store.dataDir, state }),
        );
      }
      state = "starting";
      starting = doStart();
      return starting;
    },

    stop() {
      if (stopping !== null) return stopping;
      stopping = (async () => {
        // Let a start in progress settle first, so the lock it takes is released below.
        if (state === "starting") await starting?.catch(() => undefined);
        if (state === "stopped") return;
        state = "stopping";
        await shutdown();
      })();
      return stopping;
    },

    async createDeployment(repoId) {
      ensureUsable("createDeployment");
      const id = parseRepoId(repoId);
      if (cluster !== null) return cluster.createDeployment(id);
      const result = await store.initRepo(principal, { kind: WORKFLOW_RUN_KIND, id });
      if (state === "running") await Promise.all([scheduler.refresh(), dispatcher.refresh()]);
      return result;
    },

    channel(repoId, runId) {
      ensureUsable("channel");
      const id = parseRepoId(repoId);
      const key = `${id}/${parseRunId(runId)}`;
      let channel = channels.get(key);
      if (channel === undefined) {
        channel = createWorkflowHostSignalChannel({ store, principal, repoId: id, ref, runId, clock, logger, feed: feedOf(id), ...(opts.maxEventBytes === undefined ? {} : { maxEventBytes: opts.maxEventBytes }) });
      } else {
        channels.delete(key);
      }
      channels.set(key, channel);
      trimChannels();
      return channel;
    },

    archiveEndedRuns(repoId) {
      try {
        ensureUsable("archiveEndedRuns");
        return retention.runPass(parseRepoId(repoId));
      } catch (error) {
        return Promise.reject(error);
      }
    },

    dispatcher,
    cluster,

    schedules: createScheduleControls({ store, principal, ref, clock, ...(opts.maxEventBytes === undefined ? {} : { maxEventBytes: opts.maxEventBytes }) }),

    dispatch(consumer) {
      ensureUsable("dispatch");
      return dispatcher.add(consumer);
    },

    runtime(repoId) {
      ensureUsable("runtime");
      const id = parseRepoId(repoId);
      let runtime = runtimes.get(id);
      if (runtime === undefined) {
        runtime = createRuntimeAdapter({
          store,
          principal,
          repoId: id,
          ref,
          scheduler,
          clock,
          timers,
          logger,
          feed: feedOf(id),
          channel: (runId: string) => host.channel(id, runId),
        });
        runtimes.set(id, runtime);
      }
      return runtime;
    },
  };
  return host;
}
