/**
 * A scheduler on a memfs store and a FakeClock, with helpers to write logs and read them back.
 */
import { createFsFromVolume, Volume } from "memfs";
import { createWorkflowHostScheduler } from "../../../seams/scheduler/scheduler.js";
import type { SchedulerEvent, SchedulerOptions, WorkflowHostScheduler } from "../../../seams/scheduler/scheduler-types.js";
import { allowAll, createRepoStore } from "../../../src/substrate/index.js";
import type { RepoStore } from "../../../src/substrate/types.js";
import { createFakeClock, type FakeClock } from "../../../src/testing/fake-clock.js";
import { decodeRecoveryIndex, RECOVERY_INDEX_FILE, type RunSummary } from "../../../src/workflow/recovery-index.js";
import { readRunLog } from "../../../src/workflow/run-log.js";
import { appendRunEvents } from "../../../src/workflow/run-log-append.js";
import type { RunEvent } from "../../../src/workflow/types.js";
import { workflowRunKind, WORKFLOW_RUN_KIND } from "../../../src/workflow/workflow-run-kind.js";
import { outOfTurns } from "../../helpers/wait-turns.js";

export interface Harness {
  readonly clock: FakeClock;
  readonly store: RepoStore;
  readonly events: SchedulerEvent[];
  scheduler: WorkflowHostScheduler;
  /** Appends event bodies (without seq) to a run, as a workflow runtime would. */
  append(runId: string, ...bodies: Record<string, unknown>[]): Promise<void>;
  /** Every valid event of a run at the tip. */
  log(runId: string, repoId?: string): Promise<RunEvent[]>;
  /** A new scheduler over the same store and clock (a restart); the old one is stopped. */
  restart(overrides?: Partial<SchedulerOptions>): Promise<WorkflowHostScheduler>;
  /** Commits files as they are, with no validation: a `git push` of untrusted content. */
  rawWrite(files: Record<string, string>, repoId?: string): Promise<void>;
  /** Commits puts and deletes as they are, with no validation (a `git push`). */
  rawDelta(puts: Record<string, string | Uint8Array>, deletes?: string[], repoId?: string): Promise<void>;
  /** Overwrites a file of the memfs volume (to break a ref by hand). */
  writeFile(path: string, content: string): Promise<void>;
  close(): Promise<void>;
}

export const REPO = "dep";

export async function createHarness(startIso: string, overrides: Partial<SchedulerOptions> = {}, repos: string[] = [REPO]): Promise<Harness> {
  const fs = createFsFromVolume(new Volume());
  const clock = createFakeClock(startIso);
  const store = createRepoStore({
    dataDir: "/data",
    fs,
    kindHandlers: [workflowRunKind()],
    authorize: allowAll,
    clock: clock.clock,
    watch: false,
  });
  // Same repos, no validatePush: stands in for content that arrives by `git push`.
  const raw = createRepoStore({
    dataDir: "/data",
    fs,
    kindHandlers: [{ kind: WORKFLOW_RUN_KIND, directoryPrefix: "deployments" }],
    authorize: allowAll,
    clock: clock.clock,
    watch: false,
  });
  for (const id of repos) await store.initRepo(null, { kind: WORKFLOW_RUN_KIND, id });
  const events: SchedulerEvent[] = [];
  const make = (extra: Partial<SchedulerOptions>): WorkflowHostScheduler =>
    createWorkflowHostScheduler({
      repoStore: store,
      principal: null,
      listActiveDeployments: () => store.listRepos(null, WORKFLOW_RUN_KIND),
      clock: clock.clock,
      timers: clock.timers,
      onEvent: (e) => events.push(e),
      // The group-commit throttle runs on the fake clock: with its default interval, a second
      // fire commit at the same fake instant waits until the test advances 8 ms. These tests
      // commit back to back; group-commit.test.ts sets an interval and advances through it.
      minCommitIntervalMs: 0,
      ...overrides,
      ...extra,
    });
  const harness: Harness = {
    clock,
    store,
    events,
    scheduler: make({}),
    async append(runId, ...bodies) {
      await appendRunEvents({
        store,
        principal: null,
        repoId: REPO,
        runId,
        message: `append to ${runId}`,
        decide: () => ({ append: bodies, result: undefined }),
      });
    },
    async log(runId, repoId = REPO) {
      const reads = await store.openCommittedReads(null, { kind: WORKFLOW_RUN_KIND, id: repoId }, "refs/heads/main");
      return [...(await readRunLog(reads, runId)).events];
    },
    async restart(extra = {}) {
      await harness.scheduler.stop();
      harness.scheduler = make(extra);
      await harness.scheduler.start();
      return harness.scheduler;
    },
    async writeFile(path, content) {
      await fs.promises.mkdir(path.slice(0, path.lastIndexOf("/")), { recursive: true });
      await fs.promises.writeFile(path, content);
    },
    async rawWrite(files, repoId = REPO) {
      await raw.writeTree(null, { kind: WORKFLOW_RUN_KIND, id: repoId }, "refs/heads/main", { files, message: "raw write" });
      store.poke();
    },
    async rawDelta(puts, deletes = [], repoId = REPO) {
      await raw.writeTreeDelta(null, { kind: WORKFLOW_RUN_KIND, id: repoId }, "refs/heads/main", { message: "raw delta", computeDelta: () => ({ puts, deletes }) });
      store.poke();
    },
    async close() {
      await harness.scheduler.stop();
      await store.close();
      await raw.close();
    },
  };
  return harness;
}

/** TimerFired events of a log. */
export function firedOf(log: readonly RunEvent[], timerId?: string): { scheduledFor: string; firedAt: string; seq: number }[] {
  return log
    .filter((e) => e.type === "TimerFired" && (timerId === undefined || (e as { data: { timerId: string } }).data.timerId === timerId))
    .map((e) => ({ ...(e as { data: { scheduledFor: string; firedAt: string } }).data, seq: e.seq }));
}

export function ofType(log: readonly RunEvent[], type: string): RunEvent[] {
  return log.filter((e) => e.type === type);
}

/**
 * Gives the event loop turns (no time passes on the fake clock) until `done()` holds: for a
 * commit made outside the scheduler, whose tail reads it on real I/O.
 * @throws Error naming `what` after `maxTurns` turns
 */
export async function until(done: () => boolean | Promise<boolean>, what: string, maxTurns = 20_000): Promise<void> {
  const since = performance.now();
  for (let turn = 0; !(await done()); turn += 1) {
    if (outOfTurns(turn, maxTurns, since)) throw new Error(`never happened: ${what}`);
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}

/**
 * The recovery index the scheduler wrote for `repo` at its last stop: each run's seqs, oids and
 * timers as its view held them. Fails the test when there is none.
 */
export async function recoveryIndexOf(store: RepoStore, repo = REPO): Promise<Map<string, RunSummary>> {
  const bytes = await store.readDerived?.(null, { kind: WORKFLOW_RUN_KIND, id: repo }, RECOVERY_INDEX_FILE);
  const index = bytes === null || bytes === undefined ? null : decodeRecoveryIndex(bytes, 1_048_576);
  if (index === null) throw new Error(`no recovery index for ${repo}`);
  return index;
}

/** A run's tree oids at the tip of `main` as the recovery index holds them: its folder, its `events/`, its event `lastSeq`. */
export async function tipOidsOf(store: RepoStore, runId: string, lastSeq: number, repo = REPO): Promise<{ runTreeOid: string | null; eventsOid: string | null; lastEventOid: string | null }> {
  const reads = await store.openCommittedReads(null, { kind: WORKFLOW_RUN_KIND, id: repo }, "refs/heads/main");
  return {
    runTreeOid: await reads.treeOid(`runs/${runId}`),
    eventsOid: await reads.treeOid(`runs/${runId}/events`),
    lastEventOid: await reads.treeOid(`runs/${runId}/events/${lastSeq}.json`),
  };
}
