/**
 * A deployment whose store lost one object (a disk fault, a bad copy, a partial fetch), built
 * with the real git CLI as loose objects, one of which is then removed: the deployment keeps
 * serving every other run. A missing event blob is that run's bad event at its seq, and nothing
 * of that run is armed until it reads whole; a missing run folder or `events/` folder skips that
 * run (reported, nothing armed); only a missing `runs/` folder or tip commit fails the
 * deployment (nothing can be read). A fire commit that
 * meets a run's missing folder commits the other runs' fires and reports that run.
 */
import { describe, expect, it } from "vitest";
import { makeScheduler } from "../../helpers/fixture-scheduler.js";
import { armedRuns, badOf, fired, LosingWriter, PAST, settle, settleAdvancing, SOON, started, timerSet, usePlumbingDeployments } from "../../helpers/plumbing-deployment.js";
import { useTempDirs } from "../../helpers/temp-dir.js";

const deployment = usePlumbingDeployments(useTempDirs("wh-missing-obj-"), (gitdir) => new LosingWriter(gitdir));

describe("a deployment with one object missing", () => {
  it("recovers and fires the other runs; a missing event blob is that run's bad event at its seq, and nothing of that run is armed", async () => {
    const d = await deployment();
    const ok = await d.w.run([started(), timerSet(2, "t", PAST)]);
    const blob = await d.w.run([started(), timerSet(2, "lost", PAST), timerSet(3, "kept", PAST)]);
    const { commit } = await d.w.commit({ "r-ok": ok.tree, "r-blob": blob.tree });
    const lost = blob.blobs[1] as string;
    await d.w.lose(lost);
    const { scheduler, events } = makeScheduler(d.store, d.clock);
    await scheduler.start();
    try {
      await d.clock.advance(0);
      await scheduler.idle();
      expect(events.filter((e) => e.type === "repo_failed")).toEqual([]);
      // The damaged run is not installed (as a run whose folder is lost): one run held.
      expect(events.filter((e) => e.type === "recovered")).toEqual([expect.objectContaining({ repoId: "d", commitSha: commit, runs: 1 })]);
      const bad = badOf(events, "r-blob");
      expect(bad).toHaveLength(1);
      expect(bad[0]).toMatchObject({ seq: 2, path: "runs/r-blob/events/2.json", error: { code: "object_missing", data: { oid: lost, path: "runs/r-blob/events/2.json" } } });
      expect(bad[0]?.error.message).toContain(lost);
      expect(bad[0]?.error.message).toContain("runs/r-blob/events/2.json");
      // Nothing of the run is armed until it reads whole: the lost event could have been the
      // fire or cancel of any of its timers (design notes §69). The other run fires.
      expect(armedRuns(events)).toEqual(["r-ok"]);
      expect(fired(events)).toEqual(["r-ok/t"]);
    } finally {
      await scheduler.stop();
    }
  });

  it("reads a run again once its missing objects are restored (a copy that completes late): its timers then fire", async () => {
    const d = await deployment();
    const lostText = timerSet(2, "late", PAST);
    const blob = await d.w.run([started(), lostText]);
    const folderLost = await d.w.run([started(), timerSet(2, "late2", PAST)]);
    await d.w.commit({ "r-blob": blob.tree, "r-folder": folderLost.tree });
    await d.w.lose(blob.blobs[1] as string);
    await d.w.lose(folderLost.events);
    const { scheduler, events } = makeScheduler(d.store, d.clock, { retryInitialMs: 500, retryMaxMs: 30_000 });
    await scheduler.start();
    try {
      await d.clock.advance(0);
      await scheduler.idle();
      expect(fired(events)).toEqual([]);
      expect(events.filter((e) => e.type === "bad_event").map((e) => (e as { path: string }).path).sort()).toEqual(["runs/r-blob/events/2.json", "runs/r-folder/events"]);
      // Still missing at the first tries: read again later, not reported again.
      await d.clock.advance(1_600);
      await scheduler.idle();
      expect(events.filter((e) => e.type === "bad_event")).toHaveLength(2);
      // The objects arrive (written again: the same bytes, the same oids).
      await d.w.blob(lostText);
      await d.w.tree([{ mode: "100644", name: "1.json", oid: folderLost.blobs[0] as string }, { mode: "100644", name: "2.json", oid: folderLost.blobs[1] as string }]);
      await d.clock.advance(5_000);
      // The clock moving: the repair's next try is set after real I/O, which a busy machine can end after a still clock passed it.
      await settleAdvancing(d.clock, scheduler, () => fired(events).length >= 2, "the restored runs' timers fired");
      expect(fired(events)).toEqual(["r-blob/late", "r-folder/late2"]);
    } finally {
      await scheduler.stop();
    }
  });

  it("skips and reports a run whose folder or events folder is missing; the others fire", async () => {
    const d = await deployment();
    const ok = await d.w.run([started(), timerSet(2, "t", PAST)]);
    // Not the same bytes as r-ok's folder (then it would be the same object).
    const noTree = await d.w.run([started(), timerSet(2, "t2", PAST)]);
    const noEvents = await d.w.run([started(), timerSet(2, "u", PAST), timerSet(3, "v", PAST)]);
    await d.w.commit({ "r-ok": ok.tree, "r-no-tree": noTree.tree, "r-no-events": noEvents.tree });
    await d.w.lose(noTree.tree);
    await d.w.lose(noEvents.events);
    const { scheduler, events } = makeScheduler(d.store, d.clock);
    await scheduler.start();
    try {
      await d.clock.advance(0);
      await scheduler.idle();
      expect(events.filter((e) => e.type === "repo_failed")).toEqual([]);
      expect(events.filter((e) => e.type === "recovered")).toEqual([expect.objectContaining({ repoId: "d" })]);
      expect(armedRuns(events)).toEqual(["r-ok"]);
      expect(fired(events)).toEqual(["r-ok/t"]);
      expect(badOf(events, "r-no-tree")).toEqual([
        expect.objectContaining({ seq: null, path: "runs/r-no-tree", error: expect.objectContaining({ code: "object_missing", data: expect.objectContaining({ oid: noTree.tree }) }) }),
      ]);
      expect(badOf(events, "r-no-events")).toEqual([
        expect.objectContaining({ seq: null, path: "runs/r-no-events/events", error: expect.objectContaining({ code: "object_missing", data: expect.objectContaining({ oid: noEvents.events }) }) }),
      ]);
    } finally {
      await scheduler.stop();
    }
  });

  it("fails the whole deployment (retried) when its runs/ folder or tip commit is missing", async () => {
    for (const what of ["runs", "commit"] as const) {
      const d = await deployment();
      const ok = await d.w.run([started(), timerSet(2, "t", PAST)]);
      const { commit, runsTree } = await d.w.commit({ "r-ok": ok.tree });
      await d.w.lose(what === "runs" ? runsTree : commit);
      const { scheduler, events } = makeScheduler(d.store, d.clock);
      await scheduler.start();
      try {
        expect(events.filter((e) => e.type === "recovered")).toEqual([]);
        // A ref whose commit is gone is a dangling ref (ref_corrupt); a lost folder, object_corrupt.
        const code = what === "runs" ? "object_corrupt" : "ref_corrupt";
        expect(events).toContainEqual(expect.objectContaining({ type: "repo_failed", repoId: "d", error: expect.objectContaining({ code }) }));
        expect(fired(events)).toEqual([]);
      } finally {
        await scheduler.stop();
      }
    }
  });

  it("commits the other runs' fires when one run's folder goes missing under a running host", async () => {
    const d = await deployment();
    // Each folder its own bytes (the same bytes would be the same objects).
    const a = await d.w.run([started(), timerSet(2, "ta", SOON)]);
    const b = await d.w.run([started(), timerSet(2, "tb", SOON)]);
    const c = await d.w.run([started(), timerSet(2, "tc", SOON)]);
    await d.w.commit({ "r-a": a.tree, "r-b": b.tree, "r-c": c.tree });
    const { scheduler, events } = makeScheduler(d.store, d.clock, { retryInitialMs: 500, retryMaxMs: 30_000 });
    await scheduler.start();
    try {
      expect(armedRuns(events)).toEqual(["r-a", "r-b", "r-c"]);
      // Lost after recovery read it: the fire commit meets it when it appends to the folder.
      await d.w.lose(b.events);
      await d.w.lose(b.tree);
      await d.clock.advance(61_000);
      await scheduler.idle();
      expect(fired(events)).toEqual(["r-a/ta", "r-c/tc"]);
      const failed = events.filter((e) => e.type === "commit_failed");
      expect(failed.length).toBeGreaterThan(0);
      // The run is named and retried at the longest backoff, not in a loop of quick retries.
      for (const f of failed) expect(f).toMatchObject({ repoId: "d", runId: "r-b", retryInMs: 30_000, error: { code: "object_corrupt" } });
    } finally {
      await scheduler.stop();
    }
  });

  it("commits every other run's fire once when several runs of one fire batch lost their folders; each damaged run is reported, none fired", async () => {
    const d = await deployment();
    const runs: Record<string, { tree: string; events: string }> = {};
    for (const name of ["a", "b", "c", "d", "e"]) runs[`r-${name}`] = await d.w.run([started(), timerSet(2, `t${name}`, SOON)]);
    await d.w.commit(Object.fromEntries(Object.entries(runs).map(([runId, run]) => [runId, run.tree])));
    const { scheduler, events } = makeScheduler(d.store, d.clock, { retryInitialMs: 500, retryMaxMs: 30_000 });
    await scheduler.start();
    try {
      expect(armedRuns(events)).toEqual(["r-a", "r-b", "r-c", "r-d", "r-e"]);
      // Lost after recovery read them: the one fire commit of the five due timers meets both.
      for (const runId of ["r-b", "r-d"]) {
        await d.w.lose((runs[runId] as { events: string }).events);
        await d.w.lose((runs[runId] as { tree: string }).tree);
      }
      await d.clock.advance(61_000);
      await scheduler.idle();
      // Exactly once each (a duplicate fire would be listed twice).
      expect(fired(events)).toEqual(["r-a/ta", "r-c/tc", "r-e/te"]);
      const failed = events.filter((e) => e.type === "commit_failed");
      expect([...new Set(failed.map((f) => (f as { runId?: string }).runId))].sort()).toEqual(["r-b", "r-d"]);
      for (const f of failed) expect(f).toMatchObject({ repoId: "d", retryInMs: 30_000, error: { code: "object_corrupt" } });
    } finally {
      await scheduler.stop();
    }
  });
});
