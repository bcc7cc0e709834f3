/**
 * `syncSchedules` when the write of some runs fails after others were committed (an I/O error on
 * the commit that holds them): the call answers once every run's append has settled, with the
 * failure's code and the runs written, the commits and the runs failed in its data; nothing is
 * written after it answers, and syncing the same set again converges.
 */
import { afterEach, describe, expect, it } from "vitest";
import { createScheduleControls } from "../../../seams/scheduler/schedule-controls.js";
import { WorkflowHostError } from "../../../src/errors.js";
import type { RepoStore } from "../../../src/substrate/types.js";
import { WORKFLOW_RUN_KIND } from "../../../src/workflow/workflow-run-kind.js";
import { afterPlan } from "../../helpers/after-plan.js";
import { createHarness, REPO, type Harness } from "../scheduler/harness.js";

const NOW = "2026-05-01T10:00:00.000Z";
const RUNS = ["a", "b", "c", "d", "e", "r-bad"];
let h: Harness | undefined;

afterEach(async () => {
  await h?.close();
  h = undefined;
});

/**
 * `store` whose commits that append to run `failing` fail with `code` while `broken()`: io_failed
 * fails the whole commit (every run of it, as an EIO would), run_archived only that run's append
 * (the others of its commit are committed again without it).
 */
function failingFor(store: RepoStore, failing: string, code: "io_failed" | "run_archived", broken: () => boolean): RepoStore {
  return afterPlan(store, (delta) => {
    if (delta !== null && broken() && (delta.appends ?? []).some((a) => a.folder === `runs/${failing}`)) {
      throw new WorkflowHostError(code, code === "io_failed" ? "EIO: i/o error, write" : `run ${failing} was archived`, code === "io_failed" ? { errno: "EIO" } : {});
    }
  });
}

describe("syncSchedules when the write of a run fails", () => {
  it.each(["run_archived", "io_failed"] as const)("%s: answers after every run settled, naming the runs written, their commits and the runs failed; nothing is written after; a second sync converges", async (code) => {
    h = await createHarness(NOW);
    let broken = true;
    const store = failingFor(h.store, "r-bad", code, () => broken);
    const controls = createScheduleControls({ store, principal: null, clock: h.clock.clock });
    const declared = RUNS.map((runId) => ({ runId, timerId: "hourly", cron: "0 * * * *" }));
    const armed = async (): Promise<string[]> => (await controls.list(REPO)).map((s) => s.runId).sort();

    const error = (await controls.syncSchedules(REPO, declared).catch((e: unknown) => e)) as WorkflowHostError;
    expect(error).toBeInstanceOf(WorkflowHostError);
    expect(error.code).toBe(code);
    const data = error.data as { writtenRuns: string[]; commits: string[]; failedRuns: { runId: string; code: string }[] };
    const failed = data.failedRuns.map((f) => f.runId);
    expect(failed).toContain("r-bad");
    expect(data.failedRuns.every((f) => f.code === code)).toBe(true);
    // A run's own failure fails that run only: the others are written whatever commits they shared.
    if (code === "run_archived") expect([failed, data.writtenRuns.length]).toEqual([["r-bad"], RUNS.length - 1]);
    // Every run is either written (in one of the commits named) or failed with nothing written.
    expect([...data.writtenRuns, ...failed].sort()).toEqual([...RUNS].sort());
    expect(data.writtenRuns.length > 0 === data.commits.length > 0).toBe(true);
    expect(data.commits.length).toBeLessThanOrEqual(data.writtenRuns.length);
    expect(error.message).toContain(`wrote ${data.writtenRuns.length} of ${RUNS.length} runs; ${failed.length} failed`);
    // What the error says is on the ref, and it stays so: no append of this sync is still under way.
    const tip = (await h.store.openCommittedReads(null, { kind: WORKFLOW_RUN_KIND, id: REPO }, "refs/heads/main")).commitSha;
    expect(await armed()).toEqual([...data.writtenRuns].sort());
    for (let i = 0; i < 20; i += 1) await new Promise<void>((resolve) => setImmediate(resolve));
    expect((await h.store.openCommittedReads(null, { kind: WORKFLOW_RUN_KIND, id: REPO }, "refs/heads/main")).commitSha).toBe(tip);

    broken = false;
    const again = await controls.syncSchedules(REPO, declared);
    expect(again.plan.create.map((d) => d.runId).sort()).toEqual([...failed].sort());
    expect(again.plan.unchanged.map((d) => d.runId).sort()).toEqual([...data.writtenRuns].sort());
    expect(await armed()).toEqual([...RUNS].sort());
    expect((await controls.syncSchedules(REPO, declared)).commits).toEqual([]);
  });
});
