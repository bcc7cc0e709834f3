/**
 * A commit pushed with git that deletes a run's whole folder (not moved to the archive by
 * retention: a rewrite) leaves the live host's view as a fresh recovery at that commit gives it:
 * the run is gone from its runs, its timers are disarmed (none fires, not even one due a minute
 * later), `stats().runs` no longer counts it, and the recovery index written at stop holds no row
 * of it. The removal is reported (a bad event per removed event file), not dropped silently. A
 * push that deletes one event file of another run re-reads that run as usual. Built with the
 * real git CLI on a real store, with the real scheduler on a fake clock.
 */
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { WorkflowHostScheduler } from "../../../seams/scheduler/scheduler-types.js";
import { WORKFLOW_RUN_KIND } from "../../../src/workflow/workflow-run-kind.js";
import { decodeRecoveryColumns, RECOVERY_INDEX_FILE } from "../../../src/workflow/recovery-index.js";
import { freshHeldViewAt, heldViewAt, makeScheduler, queueOf, type HeldView } from "../../helpers/fixture-scheduler.js";
import { gitAt, pushRemovals } from "../../helpers/git-cli.js";
import { badOf, fired, GitWriter, settle, SOON, started, timerSet, usePlumbingDeployments, type PlumbingDeployment } from "../../helpers/plumbing-deployment.js";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { recoveryIndexOf } from "../../unit/scheduler/harness.js";

const tempDir = useTempDirs("wh-deleted-run-");
const deployment = usePlumbingDeployments(tempDir, (gitdir) => new GitWriter(gitdir));
const RID = { kind: WORKFLOW_RUN_KIND, id: "d" };
const LATER = "2026-01-01T12:05:00.000Z";
const LATEST = "2026-01-01T12:06:00.000Z";

/** The scheduler's view of `d` once every run is at `commitSha`. */
const viewAt = (scheduler: WorkflowHostScheduler, commitSha: string): Promise<HeldView> => heldViewAt(scheduler, "d", commitSha);
/** A scheduler started afresh on the same store, with no recovery index: every log read at the tip. */
const freshViewAt = (d: PlumbingDeployment<GitWriter>, commitSha: string): Promise<HeldView> => freshHeldViewAt(d.store, d.clock, "d", commitSha);

/** The `runs/` folder oid the recovery index of `d` says its rows are every run of, or null. */
async function indexClaimOf(d: PlumbingDeployment<GitWriter>): Promise<string | null> {
  const bytes = await d.store.readDerived?.(null, RID, RECOVERY_INDEX_FILE);
  return bytes === null || bytes === undefined ? null : (decodeRecoveryColumns(bytes, 1_048_576)?.runsTreeOid ?? null);
}

const tipOf = async (d: PlumbingDeployment<GitWriter>): Promise<string> => (await gitAt(d.w.gitdir, ["rev-parse", "main"])).trim();
const runFolders = async (d: PlumbingDeployment<GitWriter>): Promise<string[]> =>
  (await gitAt(d.w.gitdir, ["ls-tree", "--name-only", "main", "runs/"])).trim().split("\n").map((p) => p.slice("runs/".length)).sort();

/**
 * Four runs, each with timers pending: `r-gone` (two, due in 5 and 6 minutes), `r-soon` (due in
 * a minute), `r-cut` (two: its last event file is removed below) and `r-keep`.
 */
async function fourRuns(d: PlumbingDeployment<GitWriter>): Promise<void> {
  const runs = {
    "r-gone": await d.w.run([started(), timerSet(2, "g1", LATER), timerSet(3, "g2", LATEST)]),
    "r-soon": await d.w.run([started(), timerSet(2, "s", SOON)]),
    "r-cut": await d.w.run([started(), timerSet(2, "a", LATER), timerSet(3, "b", LATEST)]),
    "r-keep": await d.w.run([started(), timerSet(2, "k", LATER)]),
  };
  await d.w.commit(Object.fromEntries(Object.entries(runs).map(([name, run]) => [name, run.tree])));
}

describe("a pushed commit that deletes a run's whole folder", () => {
  it("leaves the live view as a fresh recovery at that commit gives it, reported, and nothing of the deleted runs fires", async () => {
    const d = await deployment();
    await fourRuns(d);
    const { scheduler, events } = makeScheduler(d.store, d.clock);
    await scheduler.start();
    try {
      expect(queueOf(scheduler, "d").map((t) => `${t.runId}/${t.timerId}`).sort()).toEqual(["r-cut/a", "r-cut/b", "r-gone/g1", "r-gone/g2", "r-keep/k", "r-soon/s"]);
      const pushed = await pushRemovals(d.w.gitdir, join(await tempDir(), "work"), ["runs/r-gone", "runs/r-soon", "runs/r-cut/events/3.json"], "remove two runs and one event");
      d.store.poke(RID);
      const live = await viewAt(scheduler, pushed);
      expect(live).toEqual(await freshViewAt(d, pushed));
      expect(live.pending).toEqual([`r-cut/a@${LATER}`, `r-keep/k@${LATER}`]);
      expect(live.statsRuns).toBe(2);
      // Each removed event file is reported as a rewrite: nothing dropped silently.
      expect(badOf(events, "r-gone").map((b) => b.path).sort()).toEqual(["runs/r-gone/events/1.json", "runs/r-gone/events/2.json", "runs/r-gone/events/3.json"]);
      expect(badOf(events, "r-soon").map((b) => b.path)).toEqual(["runs/r-soon/events/1.json", "runs/r-soon/events/2.json"]);
      expect(badOf(events, "r-cut").map((b) => b.path)).toEqual(["runs/r-cut/events/3.json"]);

      // Past every fireAt the deleted runs had: only the timers still in the log fire.
      await d.clock.advance(7 * 60_000);
      await settle(d.clock, scheduler, () => fired(events).length >= 2, "the remaining timers fired");
      await scheduler.idle();
      expect(fired(events)).toEqual(["r-cut/a", "r-keep/k"]);
      expect(events.filter((e) => e.type === "commit_failed")).toEqual([]);
      const tip = await tipOf(d);
      const after = await viewAt(scheduler, tip);
      expect(after).toEqual(await freshViewAt(d, tip));
      expect(after.statsRuns).toBe(2);
    } finally {
      await scheduler.stop();
    }
  });

  it("the recovery index the live host writes at stop is the one a cold recovery at that commit writes", async () => {
    const d = await deployment();
    await fourRuns(d);
    const { scheduler } = makeScheduler(d.store, d.clock);
    await scheduler.start();
    let pushed: string;
    try {
      pushed = await pushRemovals(d.w.gitdir, join(await tempDir(), "work"), ["runs/r-gone"], "remove a run");
      d.store.poke(RID);
      expect((await viewAt(scheduler, pushed)).statsRuns).toBe(3);
    } finally {
      await scheduler.stop();
    }
    const live = await recoveryIndexOf(d.store, "d");
    expect([...live.keys()].sort()).toEqual(await runFolders(d));
    // It claims the whole `runs/` folder at the tip, as a cold recovery's does: the next start need not list it.
    const runsTree = (await gitAt(d.w.gitdir, ["rev-parse", "main:runs"])).trim();
    expect(await indexClaimOf(d)).toBe(runsTree);
    // A warm start from that index holds what a cold one does.
    const warm = makeScheduler(d.store, d.clock);
    await warm.scheduler.start();
    try {
      expect(await viewAt(warm.scheduler, pushed)).toEqual(await freshViewAt(d, pushed));
    } finally {
      await warm.scheduler.stop();
    }
    await rm(join(d.w.gitdir, "workflow-host", RECOVERY_INDEX_FILE));
    const cold = makeScheduler(d.store, d.clock);
    await cold.scheduler.start();
    await cold.scheduler.stop();
    expect(await recoveryIndexOf(d.store, "d")).toEqual(live);
    expect(await indexClaimOf(d)).toBe(runsTree);
  });
});
