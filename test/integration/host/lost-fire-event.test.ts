/**
 * A run whose log lost the object of one event (a disk fault, a bad copy, a partial fetch) is
 * never armed or fired from the rest of its log: the lost event could be a one-shot's
 * `TimerFired`, and the rest of the log would fire it a second time. Built with the real git
 * CLI as loose objects on a real store, with the real scheduler on a fake clock: the recovery,
 * the tail (a commit pushed with git whose blob is not there) and the fire commit (a run read
 * at the commit's parent) each leave such a run unarmed and reported, the other runs fire, and
 * once the object is restored the run is installed and nothing fires twice.
 */
import { describe, expect, it } from "vitest";
import type { FakeClock } from "../../../src/testing/index.js";
import { WORKFLOW_RUN_KIND } from "../../../src/workflow/workflow-run-kind.js";
import { checkDeployments } from "../../../src/host/check-deployments.js";
import { makeScheduler } from "../../helpers/fixture-scheduler.js";
import { gitAt } from "../../helpers/git-cli.js";
import { armedRuns, badOf, event, fired, LosingWriter, NOW, PAST, settle, settleAdvancing, SOON, started, timerSet, usePlumbingDeployments } from "../../helpers/plumbing-deployment.js";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { runCli } from "../../unit/cli/cli-io.js";
import { outOfTurns } from "../../helpers/wait-turns.js";

const deployment = usePlumbingDeployments(useTempDirs("wh-lost-fire-"), (gitdir) => new LosingWriter(gitdir));

/**
 * As `settle`, advancing the fake clock a second per turn and looking for deployments again: a
 * failed deployment is retried by the next look once its backoff has passed.
 */
async function ticking(clock: FakeClock, scheduler: { idle(): Promise<void>; refresh(): Promise<void> }, done: () => boolean, what: string): Promise<void> {
  const since = performance.now();
  for (let turn = 0; !done(); turn += 1) {
    if (outOfTurns(turn, 600, since)) throw new Error(`never happened: ${what}`);
    await clock.advance(1_000);
    await scheduler.refresh();
    await scheduler.idle();
    await new Promise<void>((resolve) => setTimeout(resolve, 5));
  }
}

const LATER = "2026-01-01T12:05:00.000Z";
const firedEvent = (seq: number, timerId: string, at: string): string => event(seq, "TimerFired", { timerId, scheduledFor: at, firedAt: at });

describe("a run whose one-shot's TimerFired object is lost", () => {
  it("recovery arms nothing of it (the one-shot would fire again); the other runs fire; restored, it is installed and fires only what is left", async () => {
    const d = await deployment();
    const onceFired = firedEvent(3, "once", PAST);
    const lost = await d.w.run([started(), timerSet(2, "once", PAST), onceFired, timerSet(4, "later", LATER)]);
    const ok = await d.w.run([started(), timerSet(2, "t", SOON)]);
    await d.w.commit({ "r-lost": lost.tree, "r-ok": ok.tree });
    await d.w.lose(lost.blobs[2] as string);
    const { scheduler, events } = makeScheduler(d.store, d.clock, { retryInitialMs: 500, retryMaxMs: 30_000 });
    await scheduler.start();
    try {
      await d.clock.advance(61_000);
      await scheduler.idle();
      expect(fired(events)).toEqual(["r-ok/t"]);
      expect(armedRuns(events)).toEqual(["r-ok"]);
      expect(badOf(events, "r-lost")).toEqual([expect.objectContaining({ seq: 3, path: "runs/r-lost/events/3.json", error: expect.objectContaining({ code: "object_missing" }) })]);
      expect(await d.w.eventFiles("r-lost")).toEqual(["1.json", "2.json", "3.json", "4.json"]);
      // The object comes back: the run reads whole, is installed, and only `later` is armed.
      await d.w.blob(onceFired);
      // The repair tries again at its backoff (at most retryMaxMs).
      await d.clock.advance(31_000);
      await settleAdvancing(d.clock, scheduler, () => armedRuns(events).includes("r-lost"), "the restored run armed");
      await d.clock.advance(5 * 60_000);
      await settle(d.clock, scheduler, () => fired(events).includes("r-lost/later"), "the restored run's timer fired");
      expect(fired(events)).toEqual(["r-lost/later", "r-ok/t"]);
      expect(await d.w.eventFiles("r-lost")).toEqual(["1.json", "2.json", "3.json", "4.json", "5.json"]);
    } finally {
      await scheduler.stop();
    }
  });

  it("a fire commit that reads the run at its parent with that object lost fires nothing of it, reports it, and commits the other runs", async () => {
    const d = await deployment();
    const run = await d.w.run([started(), timerSet(2, "once", SOON)]);
    const ok = await d.w.run([started(), timerSet(2, "t", SOON)]);
    await d.w.commit({ "r-lost": run.tree, "r-ok": ok.tree });
    const { scheduler, events } = makeScheduler(d.store, d.clock, { retryInitialMs: 500, retryMaxMs: 30_000 });
    await scheduler.start();
    try {
      expect(armedRuns(events)).toEqual(["r-lost", "r-ok"]);
      // Another writer fired `once` (seq 3) and set `later` (seq 4); the ref moved before seq 3's
      // object arrived. The store does not watch: the view still holds the run as it was.
      const onceFired = firedEvent(3, "once", SOON);
      const lostOid = await d.w.oidOf(onceFired);
      const later = await d.w.blob(timerSet(4, "later", LATER));
      const events3 = await d.w.tree([
        { mode: "100644", name: "1.json", oid: run.blobs[0] as string },
        { mode: "100644", name: "2.json", oid: run.blobs[1] as string },
        { mode: "100644", name: "3.json", oid: lostOid },
        { mode: "100644", name: "4.json", oid: later },
      ]);
      const runTree = await d.w.tree([{ mode: "40000", name: "events", oid: events3 }]);
      const parent = (await gitAt(d.w.gitdir, ["rev-parse", "main"])).trim();
      const runsTree = await d.w.tree([
        { mode: "40000", name: "r-lost", oid: runTree },
        { mode: "40000", name: "r-ok", oid: ok.tree },
      ]);
      const root = await d.w.tree([{ mode: "40000", name: "runs", oid: runsTree }]);
      const commit = (await gitAt(d.w.gitdir, ["commit-tree", root, "-p", parent, "-m", "once fired elsewhere"])).trim();
      await gitAt(d.w.gitdir, ["update-ref", "refs/heads/main", commit, parent]);
      await d.clock.advance(61_000);
      await scheduler.idle();
      expect(fired(events)).toEqual(["r-ok/t"]);
      expect(await d.w.eventFiles("r-lost")).toEqual(["1.json", "2.json", "3.json", "4.json"]);
      const failed = events.filter((e) => e.type === "commit_failed");
      expect(failed.length).toBeGreaterThan(0);
      for (const f of failed) expect(f).toMatchObject({ repoId: "d", runId: "r-lost", error: { code: "object_missing" } });
      // The tail reaches the commit, cannot read seq 3, and the recovery after it skips the run.
      d.store.poke({ kind: WORKFLOW_RUN_KIND, id: "d" });
      await ticking(d.clock, scheduler, () => badOf(events, "r-lost").length > 0, "the run reported by the recovery after the failed tail");
      expect(events).toContainEqual(expect.objectContaining({ type: "repo_failed", repoId: "d" }));
      expect(badOf(events, "r-lost")).toEqual([expect.objectContaining({ seq: 3, path: "runs/r-lost/events/3.json", error: expect.objectContaining({ code: "object_missing", data: expect.objectContaining({ oid: lostOid }) }) })]);
      await d.clock.advance(120_000);
      await scheduler.idle();
      expect(fired(events)).toEqual(["r-ok/t"]);
      // The object arrives: the run is installed at seq 4 and `later` fires; `once` never again.
      await d.w.blob(onceFired);
      await d.clock.advance(240_000);
      await settle(d.clock, scheduler, () => fired(events).includes("r-lost/later"), "the restored run's timer fired");
      expect(fired(events)).toEqual(["r-lost/later", "r-ok/t"]);
      expect(await d.w.eventFiles("r-lost")).toEqual(["1.json", "2.json", "3.json", "4.json", "5.json"]);
    } finally {
      await scheduler.stop();
    }
  });

  it("check names a log that holds a second TimerFired of one one-shot generation (as a host that fired from the rest of the log wrote it)", async () => {
    const d = await deployment();
    const run = await d.w.run([started(), timerSet(2, "once", PAST), firedEvent(3, "once", PAST), timerSet(4, "later", LATER), firedEvent(5, "once", PAST)]);
    const cancelled = await d.w.run([started(), timerSet(2, "c", LATER), event(3, "TimerCancelled", { timerId: "c" }), firedEvent(4, "c", LATER)]);
    const ok = await d.w.run([started(), timerSet(2, "once", PAST), firedEvent(3, "once", PAST), timerSet(4, "once", LATER), firedEvent(5, "once", LATER)]);
    await d.w.commit({ "r-twice": run.tree, "r-cancelled": cancelled.tree, "r-ok": ok.tree });
    const report = await checkDeployments(d.store);
    expect(report.problems).toEqual([
      expect.objectContaining({ repoId: "d", path: "runs/r-cancelled/events/4.json", seq: 4, code: "event_invalid", message: expect.stringContaining("TimerFired of c, which is not armed") }),
      expect.objectContaining({ repoId: "d", path: "runs/r-twice/events/5.json", seq: 5, code: "event_invalid", message: expect.stringContaining("TimerFired of once, which is not armed (already fired") }),
    ]);
    const cli = await runCli(["check", "-d", d.dataDir], { clock: () => new Date(NOW) });
    expect(cli.code).toBe(1);
    expect(cli.stdout + cli.stderr).toContain("runs/r-twice/events/5.json");
  });
});
