/**
 * The fire committer moves the runs of its own commits straight to their state after the commit
 * (from the write itself), and the tail then skips them; a scheduler that did not make those
 * commits reaches the same view by diffing them and reading their events back. Both views must
 * agree, run by run: the same state, seqs and tree oids (compared through the recovery index
 * each writes at stop, which holds exactly that) and the same queue.
 */
import { createFsFromVolume, Volume } from "memfs";
import { afterEach, describe, expect, it } from "vitest";
import { createWorkflowHostScheduler } from "../../../seams/scheduler/scheduler.js";
import type { WorkflowHostScheduler } from "../../../seams/scheduler/scheduler-types.js";
import { allowAll, createRepoStore } from "../../../src/substrate/index.js";
import type { RepoStore } from "../../../src/substrate/types.js";
import { createFakeClock, type FakeClock } from "../../../src/testing/fake-clock.js";
import { decodeRecoveryIndex, RECOVERY_INDEX_FILE, type RunSummary } from "../../../src/workflow/recovery-index.js";
import { appendRunEvents } from "../../../src/workflow/run-log-append.js";
import { workflowRunKind, WORKFLOW_RUN_KIND } from "../../../src/workflow/workflow-run-kind.js";
import { outOfTurns } from "../../helpers/wait-turns.js";

const RID = { kind: WORKFLOW_RUN_KIND, id: "dep" };
const START = "2026-05-01T00:00:00.000Z";

let cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const step of cleanup.reverse()) await step();
  cleanup = [];
});

function openStore(fs: ReturnType<typeof createFsFromVolume>, clock: FakeClock): RepoStore {
  const store = createRepoStore({ dataDir: "/data", fs, kindHandlers: [workflowRunKind()], authorize: allowAll, clock: clock.clock, watch: false });
  cleanup.push(() => store.close());
  return store;
}

function scheduler(store: RepoStore, clock: FakeClock, maxBatch: number): WorkflowHostScheduler {
  const s = createWorkflowHostScheduler({
    repoStore: store,
    principal: null,
    listActiveDeployments: () => store.listRepos(null, WORKFLOW_RUN_KIND),
    clock: clock.clock,
    timers: clock.timers,
    minCommitIntervalMs: 0,
    maxBatch,
  });
  cleanup.push(() => s.stop());
  return s;
}

async function append(store: RepoStore, runId: string, ...bodies: Record<string, unknown>[]): Promise<void> {
  await appendRunEvents({ store, principal: null, repoId: "dep", runId, message: `append to ${runId}`, decide: () => ({ append: bodies, result: undefined }) });
}

async function indexOf(store: RepoStore): Promise<Map<string, RunSummary>> {
  const bytes = await store.readDerived?.(null, RID, RECOVERY_INDEX_FILE);
  const index = bytes === null || bytes === undefined ? null : decodeRecoveryIndex(bytes, 1_048_576);
  expect(index).not.toBeNull();
  return index as Map<string, RunSummary>;
}

const queueOf = (s: WorkflowHostScheduler): string[] => s.queuedTimers().map((t) => `${t.runId}/${t.timerId}@${t.fireAt}`).sort();

describe("own fire commits: adopted from the write vs read back by the tail", () => {
  it("gives the same view of every run as a scheduler that diffs the commits and reads them back", async () => {
    const fs = createFsFromVolume(new Volume());
    const firing = createFakeClock(START);
    // The second scheduler's clock never moves: nothing is ever due for it, so it only tails.
    const watching = createFakeClock(START);
    const storeA = openStore(fs, firing);
    const storeB = openStore(fs, watching);
    await storeA.initRepo(null, RID);
    for (let i = 0; i < 12; i++) {
      await append(storeA, `r${i}`, { type: "WorkflowStarted", data: { n: i } }, { type: "TimerSet", data: { timerId: "t", fireAt: `2026-05-01T00:0${1 + (i % 3)}:00.000Z` } });
    }
    // A second timer in one run, a cron series (its follow-on TimerSet is in the fire commit),
    // and a run that ends before its timer is due (nothing to fire there).
    await append(storeA, "r0", { type: "TimerSet", data: { timerId: "u", fireAt: "2026-05-01T00:02:00.000Z" } });
    await append(storeA, "cron", { type: "TimerSet", data: { timerId: "c", fireAt: "2026-05-01T00:01:00.000Z", cron: "* * * * *" } });
    await append(storeA, "ended", { type: "TimerSet", data: { timerId: "t", fireAt: "2026-05-01T00:03:00.000Z" } }, { type: "RunCompleted", at: START });

    const a = scheduler(storeA, firing, 5);
    const b = scheduler(storeB, watching, 5);
    await a.start();
    await b.start();
    expect(queueOf(b)).toEqual(queueOf(a));

    // Several fire commits (batches of at most 5), with an append by someone else in between.
    await firing.advance(60_000);
    await append(storeA, "r4", { type: "StepCompleted", data: { stepId: "s" } });
    await firing.advance(60_000);
    await firing.advance(60_000);
    await a.idle();
    expect(a.stats().commits).toBeGreaterThan(2);

    storeB.poke();
    const since = performance.now();
    for (let turn = 0; !outOfTurns(turn, 2_000, since) && queueOf(b).join() !== queueOf(a).join(); turn++) {
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    expect(queueOf(b)).toEqual(queueOf(a));

    await b.stop();
    const viaTail = await indexOf(storeB);
    await a.stop();
    const viaAdoption = await indexOf(storeA);
    expect([...viaAdoption.keys()].sort()).toEqual([...viaTail.keys()].sort());
    for (const [runId, summary] of viaTail) expect({ runId, ...viaAdoption.get(runId) }).toEqual({ runId, ...summary });
    // And both match the tip: every run's tree oid is the one committed last.
    const reads = await storeA.openCommittedReads(null, RID, "main");
    for (const [runId, summary] of viaAdoption) expect(summary.runTreeOid).toBe(await reads.treeOid(`runs/${runId}`));
  });
});
