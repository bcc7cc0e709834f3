/**
 * Our path as the host wires it (see `src/host/host.ts`): a repo store with the workflow-run
 * kind handler (validated appends) and the scheduler on top, over real disk and node's timers.
 * The clock is the system clock plus an adjustable offset, so a benchmark can recover a repo
 * while nothing is due yet and then move the wall clock to make timers due on cue.
 */
import { createWorkflowHostScheduler } from "../seams/scheduler/scheduler.js";
import type { SchedulerEvent, SchedulerOptions, WorkflowHostScheduler } from "../seams/scheduler/scheduler-types.js";
import { allowAll, createRepoStore } from "../src/substrate/index.js";
import type { RepoStore, RepoStoreOptions } from "../src/substrate/types.js";
import { workflowRunKind } from "../src/workflow/workflow-run-kind.js";

/** The system clock shifted by `offsetMs` (settable at any time). */
export interface OffsetClock {
  offsetMs: number;
  readonly clock: () => Date;
  /** Epoch ms on this clock. */
  nowMs(): number;
}

export function createOffsetClock(offsetMs = 0): OffsetClock {
  const c: OffsetClock = {
    offsetMs,
    clock: () => new Date(Date.now() + c.offsetMs),
    nowMs: () => Date.now() + c.offsetMs,
  };
  return c;
}

export interface Rig {
  readonly store: RepoStore;
  readonly scheduler: WorkflowHostScheduler;
  close(): Promise<void>;
}

/** Opens a store on `dataDir` the way the host does. */
export function openStore(dataDir: string, clock: () => Date, extra: Partial<RepoStoreOptions> = {}): RepoStore {
  return createRepoStore({
    dataDir,
    kindHandlers: [workflowRunKind()],
    authorize: allowAll,
    clock,
    watch: { pollMs: 1_000, chokidar: true },
    ...extra,
  });
}

/** How a store flushes its writes: `fsync` is what `serve` runs by default. */
export type Durability = "fsync" | "none";

/** Both durabilities, in the order the benchmarks run them: what `serve` runs first. */
export const DURABILITIES: readonly Durability[] = ["fsync", "none"];

/** A store plus a scheduler serving the deployments `repoIds`. */
export function openRig(
  dataDir: string,
  repoIds: readonly string[],
  clock: () => Date,
  onEvent: (event: SchedulerEvent) => void,
  extra: Partial<SchedulerOptions> = {},
  storeExtra: Partial<RepoStoreOptions> = {},
): Rig {
  const store = openStore(dataDir, clock, storeExtra);
  const scheduler = createWorkflowHostScheduler({
    repoStore: store,
    principal: null,
    listActiveDeployments: () => repoIds,
    clock,
    onEvent,
    ...extra,
  });
  return {
    store,
    scheduler,
    async close() {
      await scheduler.stop();
      await store.close();
    },
  };
}
