/**
 * Edges of a pushed commit that deletes a run's whole folder (design notes §94): the push racing
 * a fire commit of that run (either wins the compare-and-swap), a folder deleted and re-created
 * with another log (in one commit, or two quick ones), a series (cron) run and a paused one, a
 * sealed run (`events.jsonl` alone: its log deleted, its folder deleted or its log changed, each
 * reported as a removed event file is; moved to the archive ref, sealed, or an invalid seal
 * removed, none of them reported), the whole `runs/` folder, a run folder replaced by a file of
 * the same name, and a warm restart from the recovery index right after such a push. In each,
 * the live view equals a fresh recovery at the tip (runs, pending timers, `stats().runs`), nothing
 * of a deleted run fires, no timer fires twice, and no commit fails. Real git CLI on a real
 * store, the real scheduler on a fake clock.
 */
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { SchedulerEvent, WorkflowHostScheduler } from "../../../seams/scheduler/scheduler-types.js";
import { WORKFLOW_RUN_KIND } from "../../../src/workflow/workflow-run-kind.js";
import { freshHeldViewAt, heldViewAt, makeScheduler, type HeldView } from "../../helpers/fixture-scheduler.js";
import { gitAt, pushChanges, pushFiles, pushRemovals } from "../../helpers/git-cli.js";
import { badOf, event, fired, GitWriter, LosingWriter, settle, SOON, started, timerSet, usePlumbingDeployments, writtenOnce, type PlumbingDeployment } from "../../helpers/plumbing-deployment.js";
import { useTempDirs } from "../../helpers/temp-dir.js";

const tempDir = useTempDirs("wh-deleted-run-edges-");
const deployment = usePlumbingDeployments(tempDir, (gitdir) => new GitWriter(gitdir));
const losing = usePlumbingDeployments(tempDir, (gitdir) => new LosingWriter(gitdir));
const RID = { kind: WORKFLOW_RUN_KIND, id: "d" };
const LATER = "2026-01-01T12:05:00.000Z";
const LATEST = "2026-01-01T12:06:00.000Z";
const cronSet = (seq: number, timerId: string): string => event(seq, "TimerSet", { timerId, fireAt: SOON, cron: "* * * * *" });
const SEALED = "runs/r-sealed/events.jsonl";
/** A sealed log of `lines`: each event's bytes followed by \n. */
const jsonl = (lines: readonly string[]): string => lines.map((l) => `${l}\n`).join("");

const viewAt = (scheduler: WorkflowHostScheduler, commitSha: string): Promise<HeldView> => heldViewAt(scheduler, "d", commitSha);
const freshViewAt = (d: PlumbingDeployment<GitWriter>, commitSha: string): Promise<HeldView> => freshHeldViewAt(d.store, d.clock, "d", commitSha);

const tipOf = async (d: PlumbingDeployment<GitWriter>): Promise<string> => (await gitAt(d.w.gitdir, ["rev-parse", "main"])).trim();

const pushEdit = (d: PlumbingDeployment<GitWriter>, work: string, remove: readonly string[], files: Readonly<Record<string, string>>, message: string): Promise<string> =>
  pushChanges(d.w.gitdir, work, remove, files, message);

const fileOf = (lines: readonly string[]): Record<string, string> => Object.fromEntries(lines.map((text, i) => [`events/${i + 1}.json`, text]));
const runFiles = (runId: string, lines: readonly string[]): Record<string, string> =>
  Object.fromEntries(Object.entries(fileOf(lines)).map(([p, t]) => [`runs/${runId}/${p}`, t]));

/** `r-gone` (due in 5 and 6 minutes), `r-soon` (due in a minute) and `r-keep` (in 5). */
async function threeRuns(d: PlumbingDeployment<GitWriter>): Promise<void> {
  await threeRunsOnce(d.w.gitdir);
}

/** {@link threeRuns}'s commit, written once for the file (see writtenOnce). */
const threeRunsOnce = writtenOnce("wh-deleted-run-edges-pristine-", async (gitdir) => {
  const w = new GitWriter(gitdir);
  const runs = {
    "r-gone": await w.run([started(), timerSet(2, "g1", LATER), timerSet(3, "g2", LATEST)]),
    "r-soon": await w.run([started(), timerSet(2, "s", SOON)]),
    "r-keep": await w.run([started(), timerSet(2, "k", LATER)]),
  };
  await w.commit(Object.fromEntries(Object.entries(runs).map(([name, run]) => [name, run.tree])));
});

/** Checks the live view against a fresh recovery at the tip, and a warm restart from the index the live host writes at stop. */
async function expectAsFresh(d: PlumbingDeployment<GitWriter>, scheduler: WorkflowHostScheduler): Promise<HeldView> {
  const tip = await tipOf(d);
  const live = await viewAt(scheduler, tip);
  expect(live).toEqual(await freshViewAt(d, tip));
  return live;
}

async function warmAsFresh(d: PlumbingDeployment<GitWriter>): Promise<void> {
  const tip = await tipOf(d);
  const warm = makeScheduler(d.store, d.clock);
  await warm.scheduler.start();
  try {
    expect(await viewAt(warm.scheduler, tip)).toEqual(await freshViewAt(d, tip));
  } finally {
    await warm.scheduler.stop();
  }
}

/** Starts a host on `d` and stops it once its view is at the tip: the recovery index is written then. */
async function writeIndexAtTip(d: PlumbingDeployment<GitWriter>): Promise<void> {
  const first = makeScheduler(d.store, d.clock);
  await first.scheduler.start();
  await viewAt(first.scheduler, await tipOf(d));
  await first.scheduler.stop();
}

/**
 * Starts a host on `d`, runs `body` with it (and its events), stops it, then checks a warm
 * restart from the index it wrote at stop against a fresh recovery (see {@link warmAsFresh}).
 */
async function withLiveHost(d: PlumbingDeployment<GitWriter>, body: (scheduler: WorkflowHostScheduler, events: readonly SchedulerEvent[]) => Promise<void>): Promise<void> {
  const { scheduler, events } = makeScheduler(d.store, d.clock);
  await scheduler.start();
  try {
    await body(scheduler, events);
  } finally {
    await scheduler.stop();
  }
  await warmAsFresh(d);
}

/** Moves the clock past every fireAt above and lets what is due fire. */
async function fireAll(d: PlumbingDeployment<GitWriter>, scheduler: WorkflowHostScheduler, events: readonly { type: string }[], expected: readonly string[]): Promise<void> {
  await d.clock.advance(7 * 60_000);
  await settle(d.clock, scheduler, () => fired(events as never).length >= expected.length, "the remaining timers fired");
  await scheduler.idle();
  expect(fired(events as never)).toEqual([...expected].sort());
  expect(events.filter((e) => e.type === "commit_failed")).toEqual([]);
}

const noFolder = async (d: PlumbingDeployment<GitWriter>, runId: string): Promise<void> => {
  expect((await gitAt(d.w.gitdir, ["ls-tree", "--name-only", "main", `runs/${runId}`])).trim()).toBe("");
};

/**
 * After a push that deleted `r-soon` won against its fire commit: its folder stays gone, nothing
 * fired, the view is a fresh recovery's, and the other runs' timers then fire once each.
 */
async function expectPushWon(d: PlumbingDeployment<GitWriter>, scheduler: WorkflowHostScheduler, events: readonly SchedulerEvent[]): Promise<void> {
  await noFolder(d, "r-soon");
  expect(fired(events as never)).toEqual([]);
  await expectAsFresh(d, scheduler);
  await fireAll(d, scheduler, events, ["r-gone/g1", "r-gone/g2", "r-keep/k"]);
  await noFolder(d, "r-soon");
  await expectAsFresh(d, scheduler);
}

describe("a pushed commit that deletes a run's folder, at the edges", () => {
  it("the push wins the race with a fire commit of that run: the fire commit is planned on the push and neither fires nor re-creates the run", async () => {
    const d = await deployment();
    await threeRuns(d);
    await withLiveHost(d, async (scheduler, events) => {
      // Pushed, and not yet seen by the tail (no poke): the fire commit's plan runs on it.
      await pushRemovals(d.w.gitdir, join(await tempDir(), "work"), ["runs/r-soon"], "remove r-soon");
      await d.clock.advance(60_000);
      await scheduler.idle();
      d.store.poke(RID);
      await scheduler.idle();
      await expectPushWon(d, scheduler, events);
    });
  });

  it("the fire commit wins: the push is made on it, and the run's fired timer stays fired once", async () => {
    const d = await deployment();
    await threeRuns(d);
    await withLiveHost(d, async (scheduler, events) => {
      await d.clock.advance(60_000);
      await settle(d.clock, scheduler, () => fired(events).length >= 1, "r-soon fired");
      await pushRemovals(d.w.gitdir, join(await tempDir(), "work"), ["runs/r-soon", "runs/r-gone"], "remove two runs");
      d.store.poke(RID);
      const live = await expectAsFresh(d, scheduler);
      expect(live.pending).toEqual([`r-keep/k@${LATER}`]);
      await fireAll(d, scheduler, events, ["r-soon/s", "r-keep/k"]);
      await expectAsFresh(d, scheduler);
    });
  });

  it("a folder deleted and re-created with another log in one commit holds the new log only", async () => {
    const d = await deployment();
    await threeRuns(d);
    await withLiveHost(d, async (scheduler, events) => {
      await pushEdit(d, join(await tempDir(), "work"), ["runs/r-gone"], runFiles("r-gone", [started(), timerSet(2, "n", LATER)]), "replace r-gone");
      d.store.poke(RID);
      const live = await expectAsFresh(d, scheduler);
      expect(live.pending).toEqual([`r-gone/n@${LATER}`, `r-keep/k@${LATER}`, `r-soon/s@${SOON}`]);
      await fireAll(d, scheduler, events, ["r-gone/n", "r-keep/k", "r-soon/s"]);
      await expectAsFresh(d, scheduler);
    });
  });

  it("a folder deleted and re-created in two quick commits, the tail seeing both at once", async () => {
    const d = await deployment();
    await threeRuns(d);
    await withLiveHost(d, async (scheduler, events) => {
      const work = join(await tempDir(), "work");
      await pushRemovals(d.w.gitdir, work, ["runs/r-gone", "runs/r-soon"], "remove");
      await pushEdit(d, work, [], { ...runFiles("r-gone", [started(), timerSet(2, "n", LATER)]), ...runFiles("r-soon", [started()]) }, "re-create");
      d.store.poke(RID);
      const live = await expectAsFresh(d, scheduler);
      expect(live.pending).toEqual([`r-gone/n@${LATER}`, `r-keep/k@${LATER}`]);
      await fireAll(d, scheduler, events, ["r-gone/n", "r-keep/k"]);
      await expectAsFresh(d, scheduler);
    });
  });

  it("a series run and a paused series run deleted: nothing of them fires", async () => {
    const d = await deployment();
    const runs = {
      "r-cron": await d.w.run([started(), cronSet(2, "c")]),
      "r-paused": await d.w.run([started(), cronSet(2, "p"), event(3, "SchedulePaused", { timerId: "p", reason: "x" })]),
      "r-keep": await d.w.run([started(), timerSet(2, "k", LATER)]),
    };
    await d.w.commit(Object.fromEntries(Object.entries(runs).map(([name, run]) => [name, run.tree])));
    await withLiveHost(d, async (scheduler, events) => {
      expect((await viewAt(scheduler, await tipOf(d))).pending.some((p) => p.startsWith("r-paused/p@") && p.endsWith("paused"))).toBe(true);
      await pushRemovals(d.w.gitdir, join(await tempDir(), "work"), ["runs/r-cron", "runs/r-paused"], "remove the series");
      d.store.poke(RID);
      const live = await expectAsFresh(d, scheduler);
      expect(live.pending).toEqual([`r-keep/k@${LATER}`]);
      await fireAll(d, scheduler, events, ["r-keep/k"]);
      await expectAsFresh(d, scheduler);
    });
  });

  /** `r-sealed`: an ended run kept as its sealed log alone (no events/ folder), pushed beside the three runs. */
  async function withSealedRun(d: PlumbingDeployment<GitWriter>, work: string): Promise<void> {
    await threeRuns(d);
    await pushFiles(d.w.gitdir, work, { [SEALED]: jsonl([started(), event(2, "RunCompleted", {})]) }, "a sealed run");
  }

  /** The bad events reported of `runId`, as `path seq message` (a message starts with its code). */
  const badLines = (events: readonly SchedulerEvent[], runId: string): string[] => badOf(events, runId).map((b) => `${b.path} ${String(b.seq)} ${b.error.message}`);
  const rewritten = (status: "deleted" | "modified"): string =>
    `${SEALED} null event_invalid: ${SEALED} was ${status} after it was written; a sealed log never changes, so the log now reads as the new tip says`;
  const notEnded = `${SEALED} null event_invalid: ${SEALED} seals a run that has not ended; only a run whose last event is RunCompleted, RunFailed or RunCancelled may be sealed`;

  // A sealed log is as immutable as an event file: a push that deletes or changes it is reported
  // like a removed event file, whatever it leaves of the run.
  const sealedPushes: [string, readonly string[], Readonly<Record<string, string>>, readonly string[]][] = [
    ["its events.jsonl deleted", [SEALED], {}, [rewritten("deleted")]],
    ["its whole folder deleted", ["runs/r-sealed"], {}, [rewritten("deleted")]],
    ["its events.jsonl modified to another ended log", [], { [SEALED]: jsonl([started(), event(2, "RunFailed", {})]) }, [rewritten("modified")]],
    ["its events.jsonl modified to a log that has not ended, with a timer due in a minute", [], { [SEALED]: jsonl([started(), timerSet(2, "x", SOON)]) }, [rewritten("modified"), notEnded]],
  ];
  it.each(sealedPushes)("a sealed run (events.jsonl alone), %s: reported as a rewrite, and nothing of it fires", async (_what, remove, files, reported) => {
    const d = await deployment();
    const work = join(await tempDir(), "work");
    await withSealedRun(d, work);
    await withLiveHost(d, async (scheduler, events) => {
      expect((await viewAt(scheduler, await tipOf(d))).statsRuns).toBe(4);
      expect(badLines(events, "r-sealed")).toEqual([]);
      await pushEdit(d, work, remove, files, "change the sealed run");
      d.store.poke(RID);
      const live = await expectAsFresh(d, scheduler);
      expect(live.pending.filter((p) => p.startsWith("r-sealed/"))).toEqual([]);
      expect(badLines(events, "r-sealed")).toEqual(reported);
      await fireAll(d, scheduler, events, ["r-gone/g1", "r-gone/g2", "r-keep/k", "r-soon/s"]);
    });
  });

  it("a sealed run deleted after a warm start, the run held as the recovery index's row: reported as a rewrite", async () => {
    const d = await deployment();
    const work = join(await tempDir(), "work");
    await withSealedRun(d, work);
    await writeIndexAtTip(d);
    await withLiveHost(d, async (scheduler, events) => {
      await viewAt(scheduler, await tipOf(d));
      await pushRemovals(d.w.gitdir, work, ["runs/r-sealed"], "remove the sealed run");
      d.store.poke(RID);
      expect((await expectAsFresh(d, scheduler)).statsRuns).toBe(3);
      expect(badLines(events, "r-sealed")).toEqual([rewritten("deleted")]);
      await fireAll(d, scheduler, events, ["r-gone/g1", "r-gone/g2", "r-keep/k", "r-soon/s"]);
    });
  });

  it("a sealed run moved to the archive ref (a retention commit, pushed): dropped, nothing reported", async () => {
    const d = await deployment();
    const work = join(await tempDir(), "work");
    await withSealedRun(d, work);
    await withLiveHost(d, async (scheduler, events) => {
      await viewAt(scheduler, await tipOf(d));
      // The archive commit: refs/archive/runs holds the very folder r-sealed has on main.
      const folder = (await gitAt(d.w.gitdir, ["rev-parse", "main:runs/r-sealed"])).trim();
      const runsTree = await d.w.tree([{ mode: "40000", name: "r-sealed", oid: folder }]);
      const root = await d.w.tree([{ mode: "40000", name: "runs", oid: runsTree }]);
      const archived = (await gitAt(d.w.gitdir, ["commit-tree", root, "-m", "archive r-sealed"])).trim();
      await gitAt(d.w.gitdir, ["update-ref", "refs/archive/runs", archived]);
      // The retention commit.
      await pushRemovals(d.w.gitdir, work, ["runs/r-sealed"], "retention: r-sealed");
      d.store.poke(RID);
      expect((await expectAsFresh(d, scheduler)).statsRuns).toBe(3);
      expect(badLines(events, "r-sealed")).toEqual([]);
      await fireAll(d, scheduler, events, ["r-gone/g1", "r-gone/g2", "r-keep/k", "r-soon/s"]);
    });
  });

  it("an events.jsonl standing alone that is not a valid seal, removed: reported once, when read, not again as a rewrite", async () => {
    const d = await deployment();
    const work = join(await tempDir(), "work");
    await threeRuns(d);
    await pushFiles(d.w.gitdir, work, { [SEALED]: jsonl([started(), timerSet(2, "x", SOON)]) }, "a log that has not ended, as a seal");
    await withLiveHost(d, async (scheduler, events) => {
      await viewAt(scheduler, await tipOf(d));
      expect(badLines(events, "r-sealed")).toEqual([notEnded]);
      await pushRemovals(d.w.gitdir, work, [SEALED], "remove the bad seal");
      d.store.poke(RID);
      await expectAsFresh(d, scheduler);
      expect(badLines(events, "r-sealed")).toEqual([notEnded]);
      await fireAll(d, scheduler, events, ["r-gone/g1", "r-gone/g2", "r-keep/k", "r-soon/s"]);
    });
  });

  it("a commit that seals an ended run (events.jsonl added, its event files removed) reports nothing", async () => {
    const d = await deployment();
    const lines = [started(), event(2, "RunCompleted", {})];
    const done = await d.w.run(lines);
    const keep = await d.w.run([started(), timerSet(2, "k", LATER)]);
    await d.w.commit({ "r-sealed": done.tree, "r-keep": keep.tree });
    await withLiveHost(d, async (scheduler, events) => {
      await viewAt(scheduler, await tipOf(d));
      await pushEdit(d, join(await tempDir(), "work"), ["runs/r-sealed/events"], { [SEALED]: jsonl(lines) }, "seal r-sealed");
      d.store.poke(RID);
      expect((await expectAsFresh(d, scheduler)).statsRuns).toBe(2);
      expect(badLines(events, "r-sealed")).toEqual([]);
      await fireAll(d, scheduler, events, ["r-keep/k"]);
    });
  });

  it("the whole runs/ folder deleted", async () => {
    const d = await deployment();
    await threeRuns(d);
    const work = join(await tempDir(), "work");
    // Something else in the deployment, so the commit is not empty.
    await pushFiles(d.w.gitdir, work, { "README.md": "x\n" }, "a readme");
    await withLiveHost(d, async (scheduler, events) => {
      await viewAt(scheduler, await tipOf(d));
      await pushRemovals(d.w.gitdir, work, ["runs"], "remove every run");
      d.store.poke(RID);
      const live = await expectAsFresh(d, scheduler);
      expect({ runs: live.runs, statsRuns: live.statsRuns, pending: live.pending }).toEqual({ runs: 0, statsRuns: 0, pending: [] });
      await fireAll(d, scheduler, events, []);
    });
  });

  it("a run folder replaced by a file of the same name", async () => {
    const d = await deployment();
    await threeRuns(d);
    await withLiveHost(d, async (scheduler, events) => {
      await pushEdit(d, join(await tempDir(), "work"), ["runs/r-gone"], { "runs/r-gone": "not a folder\n" }, "a file for r-gone");
      d.store.poke(RID);
      const live = await expectAsFresh(d, scheduler);
      expect(live.pending).toEqual([`r-keep/k@${LATER}`, `r-soon/s@${SOON}`]);
      // Reported: the file as not a run folder, and each removed event file as a rewrite.
      expect(badOf(events, "r-gone").map((b) => b.path).sort()).toEqual(["runs/r-gone", "runs/r-gone/events/1.json", "runs/r-gone/events/2.json", "runs/r-gone/events/3.json"]);
      await fireAll(d, scheduler, events, ["r-keep/k", "r-soon/s"]);
      await expectAsFresh(d, scheduler);
    });
  });

  const afterIndex: [string, readonly string[], Readonly<Record<string, string>>, string[]][] = [
    ["a run folder deleted", ["runs/r-gone"], {}, ["r-keep/k", "r-soon/s"]],
    ["a run folder replaced by a file", ["runs/r-gone"], { "runs/r-gone": "x\n" }, ["r-keep/k", "r-soon/s"]],
    ["runs/ deleted", ["runs"], { "README.md": "x\n" }, []],
    ["a run folder replaced by another log", ["runs/r-gone"], runFiles("r-gone", [started(), timerSet(2, "n", LATER)]), ["r-gone/n", "r-keep/k", "r-soon/s"]],
  ];
  it.each(afterIndex)("a warm restart right after the push (%s), the index written before it", async (_what, remove, files, expected) => {
    const d = await deployment();
    await threeRuns(d);
    await writeIndexAtTip(d);
    await pushEdit(d, join(await tempDir(), "work"), remove, files, "edit while the host was down");
    await warmAsFresh(d);
    const { scheduler, events } = makeScheduler(d.store, d.clock);
    await scheduler.start();
    try {
      await fireAll(d, scheduler, events, expected);
    } finally {
      await scheduler.stop();
    }
  });

  it("a push after a warm start, the runs held as the recovery index's rows", async () => {
    const d = await deployment();
    await threeRuns(d);
    await writeIndexAtTip(d);
    await withLiveHost(d, async (scheduler, events) => {
      await viewAt(scheduler, await tipOf(d));
      await pushRemovals(d.w.gitdir, join(await tempDir(), "work"), ["runs/r-gone", "runs/r-soon"], "remove two runs");
      d.store.poke(RID);
      const live = await expectAsFresh(d, scheduler);
      expect(live.pending).toEqual([`r-keep/k@${LATER}`]);
      await fireAll(d, scheduler, events, ["r-keep/k"]);
    });
  });

  it("the runs/ folder replaced by a file", async () => {
    const d = await deployment();
    await threeRuns(d);
    await withLiveHost(d, async (scheduler, events) => {
      await viewAt(scheduler, await tipOf(d));
      await pushEdit(d, join(await tempDir(), "work"), ["runs"], { runs: "not a folder\n" }, "a file for runs/");
      d.store.poke(RID);
      const live = await expectAsFresh(d, scheduler);
      expect({ runs: live.runs, statsRuns: live.statsRuns, pending: live.pending }).toEqual({ runs: 0, statsRuns: 0, pending: [] });
      await fireAll(d, scheduler, events, []);
    });
  });
  it("a run folder deleted and pushed back as it was, the tail seeing both commits at once: its timers fire once", async () => {
    const d = await deployment();
    await threeRuns(d);
    await withLiveHost(d, async (scheduler, events) => {
      await viewAt(scheduler, await tipOf(d));
      const work = join(await tempDir(), "work");
      await pushRemovals(d.w.gitdir, work, ["runs/r-gone"], "remove r-gone");
      await pushEdit(d, work, [], runFiles("r-gone", [started(), timerSet(2, "g1", LATER), timerSet(3, "g2", LATEST)]), "put r-gone back");
      d.store.poke(RID);
      const live = await expectAsFresh(d, scheduler);
      expect(live.pending).toEqual([`r-gone/g1@${LATER}`, `r-gone/g2@${LATEST}`, `r-keep/k@${LATER}`, `r-soon/s@${SOON}`]);
      await fireAll(d, scheduler, events, ["r-gone/g1", "r-gone/g2", "r-keep/k", "r-soon/s"]);
      await expectAsFresh(d, scheduler);
    });
  });

  it("a run's events/ folder deleted, the folder kept for a file beside it", async () => {
    const d = await deployment();
    await threeRuns(d);
    const work = join(await tempDir(), "work");
    await pushFiles(d.w.gitdir, work, { "runs/r-gone/grants.json": "{}\n" }, "a grants file");
    await withLiveHost(d, async (scheduler, events) => {
      await viewAt(scheduler, await tipOf(d));
      await pushRemovals(d.w.gitdir, work, ["runs/r-gone/events"], "remove r-gone's log");
      d.store.poke(RID);
      await expectAsFresh(d, scheduler);
      await fireAll(d, scheduler, events, ["r-keep/k", "r-soon/s"]);
      await expectAsFresh(d, scheduler);
    });
  });
  it("the push lands while a fire commit of that run is in flight: its compare-and-swap loses, the retry is planned on the push", async () => {
    const d = await deployment();
    await threeRuns(d);
    const work = join(await tempDir(), "work");
    // The first fire commit's plan, once made at the old tip, is overtaken by the push before its ref move.
    let pushed: string | null = null;
    let plans = 0;
    const write = d.store.writeTreeDelta.bind(d.store);
    (d.store as { writeTreeDelta: typeof d.store.writeTreeDelta }).writeTreeDelta = (principal, rid, ref, opts) =>
      write(principal, rid, ref, {
        ...opts,
        computeDelta: async (parentSha, reads) => {
          const delta = await opts.computeDelta(parentSha, reads);
          plans += 1;
          if (pushed === null) pushed = await pushRemovals(d.w.gitdir, work, ["runs/r-soon"], "remove r-soon");
          return delta;
        },
      });
    await withLiveHost(d, async (scheduler, events) => {
      await viewAt(scheduler, await tipOf(d));
      await d.clock.advance(60_000);
      await settle(d.clock, scheduler, () => pushed !== null, "the fire commit was planned");
      await scheduler.idle();
      d.store.poke(RID);
      await scheduler.idle();
      expect(plans).toBeGreaterThanOrEqual(2);
      await expectPushWon(d, scheduler, events);
    });
  });

  it("an unreadable run (an event's object lost) whose folder a commit deletes leaves the unreadable runs", async () => {
    const d = await losing();
    const lost = await d.w.run([started(), timerSet(2, "l", LATER)]);
    const keep = await d.w.run([started(), timerSet(2, "k", LATER)]);
    await d.w.commit({ "r-lost": lost.tree, "r-keep": keep.tree });
    await d.w.lose(lost.blobs[1] as string);
    await withLiveHost(d, async (scheduler, events) => {
      expect((await viewAt(scheduler, await tipOf(d))).unreadable).toEqual(["r-lost"]);
      // A commit on the tip without r-lost's folder (git cannot clone a repository with an object lost).
      const runsTree = await d.w.tree([{ mode: "40000", name: "r-keep", oid: keep.tree }]);
      const root = await d.w.tree([{ mode: "40000", name: "runs", oid: runsTree }]);
      const commit = (await gitAt(d.w.gitdir, ["commit-tree", root, "-p", "main", "-m", "remove r-lost"])).trim();
      await gitAt(d.w.gitdir, ["update-ref", "refs/heads/main", commit]);
      d.store.poke(RID);
      const live = await expectAsFresh(d, scheduler);
      expect({ unreadable: live.unreadable, statsRuns: live.statsRuns }).toEqual({ unreadable: [], statsRuns: 1 });
      await fireAll(d, scheduler, events, ["r-keep/k"]);
    });
  });
});
