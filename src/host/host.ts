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
import { createClusterCoordinator, type ClusterCoordinator } from "../../seams/cluster/cluster-coordinator.js";
import { createDispatcher } from "../../seams/dispatch/dispatcher.js";
import type { Dispatcher } from "../../seams/dispatch/dispatch-types.js";
import { createWorkflowHostScheduler } from "../../seams/scheduler/scheduler.js";
import { createScheduleControls } from "../../seams/scheduler/schedule-controls.js";
import { createRunEventFeed, type RunEventFeed } from "../../seams/signals/run-event-feed.js";
import { createWorkflowHostSignalChannel } from "../../seams/signals/signal-channel.js";
import type { WorkflowHostSignalChannel } from "../../seams/signals/signal-channel-types.js";
import { describeValue, WorkflowHostError } from "../errors.js";
import { silentLogger } from "../logger.js";
import { allowAll } from "../substrate/allow-all.js";
import { createRepoStore } from "../substrate/repo-store.js";
import { checkDataDir } from "../substrate/repo-store-options.js";
import { asIoFailure } from "../substrate/fs-adapter.js";
import { createSystemTimers, systemClock } from "../time/clock.js";
import { parseRepoId, parseRunId } from "../workflow/ids.js";
import { WORKFLOW_RUN_KIND, workflowRunKind } from "../workflow/workflow-run-kind.js";
import { acquireHostLock, type HostLock } from "./host-lock.js";
import { createRetentionLoop } from "./retention.js";
import { createRuntimeAdapter, type WorkflowRuntime } from "./runtime-adapter.js";
import type { WorkflowHost, WorkflowHostOptions, WorkflowHostState } from "./host-types.js";

export type { WorkflowHost, WorkflowHostOptions, WorkflowHostState } from "./host-types.js";


/** Default {@link WorkflowHostOptions.maxChannels}. */
export const DEFAULT_MAX_CHANNELS = 1_000;

/**
 * Creates a host over a data dir. Nothing touches the disk until `start()` or `createDeployment`.
 * @throws config_invalid for a missing or empty `dataDir`, a `misfire` other than skip, latest
 *   or all, a `maxEventBytes` below 1, a `durability` other than fsync or none, or another bad store option (see
 *   `createRepoStore`); TypeError for an `fs` without the node:fs API
 */
export function createWorkflowHost(opts: WorkflowHostOptions): WorkflowHost {
  checkDataDir(opts.dataDir, "createWorkflowHost");
  checkHostOptions(opts);
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
    clock,
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
      }).catch((error: unknown) => {
        // A data dir that cannot be written (read-only, full, no permission) is io_failed with
        // its errno, as every later write is, not node's raw error.
        throw asIoFailure(error, `taking the host lock of ${opts.dataDir}`);
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

/**
 * The options the store and scheduler would otherwise take without a word: a misspelt misfire
 * policy became the policy of every series naming none, and a maxEventBytes below 1 refused
 * every write. (`durability` is checked by the store.)
 * @throws config_invalid naming the option
 */
function checkHostOptions(opts: WorkflowHostOptions): void {
  const bad = (field: string, allowed: string): WorkflowHostError => {
    const value = (opts as unknown as Record<string, unknown>)[field];
    return new WorkflowHostError("config_invalid", `createWorkflowHost: ${field} ${describeValue(value)} is not valid; allowed: ${allowed}`, { field, value });
  };
  if (opts.misfire !== undefined && !["skip", "latest", "all"].includes(opts.misfire)) throw bad("misfire", '"skip", "latest" or "all"');
  if (opts.maxEventBytes !== undefined && (!Number.isInteger(opts.maxEventBytes) || opts.maxEventBytes < 1)) throw bad("maxEventBytes", "an integer number of bytes >= 1");
}
