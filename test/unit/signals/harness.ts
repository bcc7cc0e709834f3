/**
 * Signal channels, a scheduler and a runtime adapter on a memfs store and a FakeClock, with
 * helpers to read logs back and to wait on scheduler reports instead of on time.
 */
import { createFsFromVolume, Volume } from "memfs";
import { createWorkflowHostScheduler } from "../../../seams/scheduler/scheduler.js";
import type { SchedulerEvent, WorkflowHostScheduler } from "../../../seams/scheduler/scheduler-types.js";
import { createWorkflowHostSignalChannel } from "../../../seams/signals/signal-channel.js";
import type { SignalChannelOptions, WorkflowHostSignalChannel } from "../../../seams/signals/signal-channel-types.js";
import { createRuntimeAdapter } from "../../../src/host/runtime-adapter.js";
import type { WorkflowRuntime } from "../../../src/host/runtime-types.js";
import { allowAll, createRepoStore } from "../../../src/substrate/index.js";
import type { RepoStore, RepoStoreOptions } from "../../../src/substrate/types.js";
import { createFakeClock, type FakeClock } from "../../../src/testing/fake-clock.js";
import { readRunLog } from "../../../src/workflow/run-log.js";
import { appendRunEvents } from "../../../src/workflow/run-log-append.js";
import type { RunEvent } from "../../../src/workflow/types.js";
import { workflowRunKind, WORKFLOW_RUN_KIND } from "../../../src/workflow/workflow-run-kind.js";

export const REPO = "dep";
export const RID = { kind: WORKFLOW_RUN_KIND, id: REPO } as const;

export type MemFs = ReturnType<typeof createFsFromVolume>;

/** One "process": a store, a scheduler, channels per run and a runtime, over a shared memfs. */
export interface Node {
  readonly store: RepoStore;
  readonly scheduler: WorkflowHostScheduler;
  readonly runtime: WorkflowRuntime;
  readonly events: SchedulerEvent[];
  channel(runId: string, extra?: Partial<SignalChannelOptions>): WorkflowHostSignalChannel;
  /** Resolves once the scheduler has reported an event matching `match` (earlier ones count). */
  reported(match: (event: SchedulerEvent) => boolean): Promise<SchedulerEvent>;
  /** Resolves once the scheduler has applied every commit up to the current tip. */
  caughtUp(): Promise<void>;
  /** Resolves once the scheduler holds `timerId` of `runId` in its queue. */
  armed(runId: string, timerId: string): Promise<void>;
  stop(): Promise<void>;
}

export interface SignalHarness {
  readonly fs: MemFs;
  readonly clock: FakeClock;
  node: Node;
  /** Stops the current node and starts a new one on the same data (a process restart). */
  restart(): Promise<Node>;
  /** A second store on the same data, as another process would open it (no watching). */
  otherStore(): RepoStore;
  /** Appends event bodies (without seq) to a run in one commit. */
  append(runId: string, ...bodies: Record<string, unknown>[]): Promise<void>;
  /** Every valid event of a run at the tip. */
  log(runId: string): Promise<RunEvent[]>;
  /** The tip commit of the deployment. */
  tip(): Promise<string | null>;
  close(): Promise<void>;
}

export async function createSignalHarness(startIso = "2026-03-01T09:00:00.000Z", storeOptions: Partial<RepoStoreOptions> = {}): Promise<SignalHarness> {
  const fs = createFsFromVolume(new Volume());
  const clock = createFakeClock(startIso);
  const extraStores: RepoStore[] = [];
  const openStore = (overrides: Partial<RepoStoreOptions> = {}): RepoStore =>
    createRepoStore({
      dataDir: "/data",
      fs,
      kindHandlers: [workflowRunKind()],
      authorize: allowAll,
      clock: clock.clock,
      watch: false,
      timers: clock.timers,
      ...storeOptions,
      ...overrides,
    });

  async function startNode(): Promise<Node> {
    const store = openStore();
    await store.initRepo(null, RID);
    const events: SchedulerEvent[] = [];
    const listeners = new Set<() => void>();
    const notify = (): void => {
      for (const listener of [...listeners]) listener();
    };
    // Commits the scheduler has applied: its tail asks for the next commit only after applying one.
    const applied = new Set<string>();
    const schedulerStore: RepoStore = {
      ...store,
      subscribe(principal, repoId, ref, opts) {
        const inner = store.subscribe(principal, repoId, ref, opts);
        return (async function* () {
          for await (const commit of inner) {
            yield commit;
            applied.add(commit.commitSha);
            notify();
          }
        })();
      },
    };
    const scheduler = createWorkflowHostScheduler({
      repoStore: schedulerStore,
      principal: null,
      listActiveDeployments: () => store.listRepos(null, WORKFLOW_RUN_KIND),
      clock: clock.clock,
      timers: clock.timers,
      discoverEveryMs: 3_600_000,
      onEvent: (event) => {
        events.push(event);
        if (event.type === "recovered" && event.commitSha !== null) applied.add(event.commitSha);
        notify();
      },
    });
    await scheduler.start();
    const channels = new Map<string, WorkflowHostSignalChannel>();
    const channel = (runId: string, extra: Partial<SignalChannelOptions> = {}): WorkflowHostSignalChannel => {
      let found = channels.get(runId);
      if (found === undefined) {
        found = createWorkflowHostSignalChannel({ repoStore: store, principal: null, repoId: REPO, runId, clock: clock.clock, ...extra });
        channels.set(runId, found);
      }
      return found;
    };
    const runtime = createRuntimeAdapter({ store, principal: null, repoId: REPO, scheduler, clock: clock.clock, timers: clock.timers, channel });
    const until = (done: () => boolean): Promise<void> =>
      new Promise((resolve) => {
        const listener = (): void => {
          if (!done()) return;
          listeners.delete(listener);
          resolve();
        };
        listeners.add(listener);
        listener();
      });
    const reported = (match: (event: SchedulerEvent) => boolean): Promise<SchedulerEvent> =>
      new Promise((resolve) => {
        const check = (): boolean => {
          const hit = events.find(match);
          if (hit === undefined) return false;
          listeners.delete(listener);
          resolve(hit);
          return true;
        };
        const listener = (): void => {
          check();
        };
        if (!check()) listeners.add(listener);
      });
    return {
      store,
      scheduler,
      runtime,
      events,
      channel,
      reported,
      async caughtUp() {
        const tip = await store.resolveRef(null, RID, "refs/heads/main");
        if (tip !== null) await until(() => applied.has(tip));
      },
      async armed(runId, timerId) {
        if (scheduler.queuedTimers().some((t) => t.runId === runId && t.timerId === timerId)) return;
        await reported((e) => e.type === "armed" && e.runId === runId && e.timerId === timerId);
      },
      async stop() {
        await runtime.stop();
        await Promise.all([...channels.values()].map((c) => c.stop()));
        await scheduler.stop();
        await store.close();
      },
    };
  }

  const harness: SignalHarness = {
    fs,
    clock,
    node: await startNode(),
    async restart() {
      await harness.node.stop();
      harness.node = await startNode();
      return harness.node;
    },
    otherStore() {
      const store = openStore();
      extraStores.push(store);
      return store;
    },
    async append(runId, ...bodies) {
      await appendRunEvents({
        store: harness.node.store,
        principal: null,
        repoId: REPO,
        runId,
        message: `append to ${runId}`,
        decide: () => ({ append: bodies, result: undefined }),
      });
    },
    async log(runId) {
      const reads = await harness.node.store.openCommittedReads(null, RID, "refs/heads/main");
      return [...(await readRunLog(reads, runId)).events];
    },
    tip() {
      return harness.node.store.resolveRef(null, RID, "refs/heads/main");
    },
    async close() {
      await harness.node.stop();
      await Promise.all(extraStores.map((s) => s.close()));
    },
  };
  return harness;
}

/** Events of a type, optionally of one timer or signal id. */
export function ofType(log: readonly RunEvent[], type: string): RunEvent[] {
  return log.filter((e) => e.type === type);
}

/** A promise with its state recorded as soon as it settles, to check "still pending" later. */
export interface Watched<T> {
  readonly promise: Promise<T>;
  state(): "pending" | "fulfilled" | "rejected";
}

export function watched<T>(promise: Promise<T>): Watched<T> {
  let state: "pending" | "fulfilled" | "rejected" = "pending";
  promise.then(
    () => {
      state = "fulfilled";
    },
    () => {
      state = "rejected";
    },
  );
  return { promise, state: () => state };
}
