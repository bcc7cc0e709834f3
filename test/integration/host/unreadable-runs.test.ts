/**
 * The readers outside the scheduler on a deployment with damaged runs, built with the real git
 * CLI as loose objects and damaged on disk: one run folder lost, one `events/` folder torn
 * (truncated), one event blob lost in a run with a cron series, one in an ended run. As the
 * scheduler does (missing-objects.test.ts, corrupt-objects.test.ts), every reader lists or
 * handles the other runs and names each run it cannot read with its error code
 * (`object_missing`, `object_corrupt`): pending timers (library, CLI, HTTP), `runs list`,
 * `check` (a problem that stays open), retention (skipped and reported, never archived), the
 * schedule controls (`list`; `sync` writes nothing into a run it cannot read). A damaged `runs/`
 * folder still fails the whole deployment.
 */
import { truncate, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createScheduleControls } from "../../../seams/scheduler/schedule-controls.js";
import { createWorkflowHostSignalChannel } from "../../../seams/signals/signal-channel.js";
import { archiveEndedRuns } from "../../../src/host/archive-ended-runs.js";
import { checkDeployments } from "../../../src/host/check-deployments.js";
import { compactRun } from "../../../src/host/compact-run.js";
import { listPendingTimers } from "../../../src/host/list-pending-timers.js";
import { appendRunEvents } from "../../../src/workflow/run-log-append.js";
import { WORKFLOW_RUN_KIND } from "../../../src/workflow/workflow-run-kind.js";
import { gitAt } from "../../helpers/git-cli.js";
import { event, GitWriter, NOW, PAST, SOON, started, timerSet, usePlumbingDeployments, writtenOnce, type PlumbingDeployment } from "../../helpers/plumbing-deployment.js";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { startHttpHarness } from "../http/http-harness.js";
import { runCli } from "../../unit/cli/cli-io.js";

/** Loose objects written with git's plumbing, one of which a test then removes or truncates. */
class DamagingWriter extends GitWriter {
  /** Removes one loose object's file. */
  async lose(oid: string): Promise<void> {
    await rm(join(this.gitdir, "objects", oid.slice(0, 2), oid.slice(2)));
  }
  /** Truncates a loose object's file to 10 bytes (`head -c 10`). */
  async tear(oid: string): Promise<void> {
    await truncate(join(this.gitdir, "objects", oid.slice(0, 2), oid.slice(2)), 10);
  }
  /** `git ls-tree --name-only main runs/`: the runs main holds. */
  async liveRuns(): Promise<string[]> {
    return (await gitAt(this.gitdir, ["ls-tree", "--name-only", "main", "runs/"])).trim().split("\n").map((p) => p.replace(/^runs\//, ""));
  }
  async tip(): Promise<string> {
    return (await gitAt(this.gitdir, ["rev-parse", "main"])).trim();
  }
}

const deployment = usePlumbingDeployments(useTempDirs("wh-unreadable-runs-"), (gitdir) => new DamagingWriter(gitdir));

/**
 * Run `r-fired` of `d`: one-shot `t` set and fired in the past (seqs 2, 3), `z` set for `zAt`
 * (seq 4), then the TimerFired's object lost: on the rest of the log `t` looks armed.
 */
async function runWithLostFire(d: Awaited<ReturnType<typeof deployment>>, zAt: string = SOON): Promise<void> {
  const fired = event(3, "TimerFired", { timerId: "t", scheduledFor: PAST, firedAt: PAST });
  const run = await d.w.run([started(), timerSet(2, "t", PAST), fired, timerSet(4, "z", zAt)]);
  await d.w.commit({ "r-fired": run.tree });
  await d.w.lose(run.blobs[2] as string);
}

const cronSet = (seq: number, timerId: string, cron: string): string => event(seq, "TimerSet", { timerId, fireAt: SOON, cron, owner: "sync" });
const ended = (seq: number): string => event(seq, "RunCompleted", {});
const clock = (): Date => new Date(NOW);

/**
 * {@link damaged}, served over HTTP by a real host; `folders()` reads the damaged runs' folder
 * oids (compared, not the tip: the host, on the real clock, may fire r-ok's timer), `before` as
 * they were when the host started.
 */
async function damagedServed(): Promise<{ d: Awaited<ReturnType<typeof damaged>>; h: Awaited<ReturnType<typeof startHttpHarness>>; folders: () => Promise<string>; before: string }> {
  const d = await damaged();
  const folders = async (): Promise<string> => (await gitAt(d.w.gitdir, ["rev-parse", "main:runs/r-lost", "main:runs/r-torn"])).trim();
  const before = await folders();
  await d.store.close();
  return { d, h: await startHttpHarness(d.dataDir, []), folders, before };
}

/**
 * `d` with `r-ok` (a one-shot timer and a sync-owned cron series), `r-lost` (its run folder
 * lost; a sync-owned series in it), `r-torn` (its `events/` folder truncated), `r-gap` (a cron
 * series; its seq-3 blob lost), `r-done` (ended) and `r-done-gap` (ended; its seq-2 blob lost).
 */
async function damaged(): Promise<PlumbingDeployment<DamagingWriter> & { oids: Record<string, string> }> {
  const d = await deployment();
  return { ...d, oids: await damagedOnce(d.w.gitdir) };
}

/** {@link damaged}'s deployment, written and damaged once for the file (see writtenOnce); the oids lost or torn. */
const damagedOnce = writtenOnce("wh-unreadable-runs-pristine-", async (gitdir) => {
  const d = { w: new DamagingWriter(gitdir) };
  const ok = await d.w.run([started(), timerSet(2, "t", SOON), cronSet(3, "c", "* * * * *")]);
  const lost = await d.w.run([started(), cronSet(2, "c2", "* * * * *")]);
  const torn = await d.w.run([started(), timerSet(2, "u", SOON)]);
  const gap = await d.w.run([started(), cronSet(2, "c3", "0 * * * *"), timerSet(3, "y", SOON)]);
  const done = await d.w.run([started(), ended(2)]);
  const doneGap = await d.w.run([started(), timerSet(2, "x", SOON), ended(3)]);
  await d.w.commit({ "r-ok": ok.tree, "r-lost": lost.tree, "r-torn": torn.tree, "r-gap": gap.tree, "r-done": done.tree, "r-done-gap": doneGap.tree });
  await d.w.lose(lost.tree);
  await d.w.tear(torn.events);
  await d.w.lose(gap.blobs[2] as string);
  await d.w.lose(doneGap.blobs[1] as string);
  return { lost: lost.tree, torn: torn.events, gap: gap.blobs[2] as string, doneGap: doneGap.blobs[1] as string };
});

/** The two runs that cannot be read at all, as every list names them. */
const UNREADABLE = [
  { runId: "r-lost", path: "runs/r-lost", code: "object_missing" },
  { runId: "r-torn", path: "runs/r-torn/events", code: "object_corrupt" },
];

/**
 * Every run a reader that presents runs' states names: the two above, and the two whose log lost
 * an event (their state is not known: the lost event may be a timer's fire or end).
 */
const NOT_WHOLE = [
  { runId: "r-done-gap", path: "runs/r-done-gap/events/2.json", code: "object_missing" },
  { runId: "r-gap", path: "runs/r-gap/events/3.json", code: "object_missing" },
  ...UNREADABLE,
];

const named = (list: readonly { runId: string; path: string; error?: { code: string }; code?: string }[]): { runId: string; path: string; code: string | undefined }[] =>
  list.map((u) => ({ runId: u.runId, path: u.path, code: u.code ?? u.error?.code })).sort((a, b) => (a.runId < b.runId ? -1 : 1));

describe("readers outside the scheduler on a deployment with damaged runs", () => {
  it("listPendingTimers lists the other runs' timers and names each run it cannot read whole", async () => {
    const d = await damaged();
    for (const opts of [{}, { repoId: "d" }]) {
      const report = await listPendingTimers(d.store, { clock, ...opts });
      expect(report.failedRepos).toEqual([]);
      // r-gap's timers are not listed: its lost event could be one of their fires.
      expect(report.timers.map((t) => `${t.runId}/${t.timerId}`).sort()).toEqual(["r-ok/c", "r-ok/t"]);
      expect(named(report.unreadableRuns)).toEqual(NOT_WHOLE);
      expect(report.unreadableRuns.find((u) => u.runId === "r-gap")?.error.message).toContain("run r-gap of deployment d cannot be read whole: event 3 (runs/r-gap/events/3.json");
      for (const u of report.unreadableRuns) {
        expect(u.repoId).toBe("d");
        expect(u.error.message).toContain(u.path);
      }
      expect(report.unreadableRuns.find((u) => u.runId === "r-lost")?.error.data).toMatchObject({ oid: d.oids.lost });
      // A lost event blob stays that run's bad event, as before.
      expect(report.badEvents.map((b) => [b.runId, b.seq, b.error.code]).sort()).toEqual([
        ["r-done-gap", 2, "object_missing"],
        ["r-gap", 3, "object_missing"],
      ]);
      expect(report.runs).toBe(6);
    }
  });

  it("check reports each unreadable run as a problem of that run (not the deployment's) and checks the others", async () => {
    const d = await damaged();
    const report = await checkDeployments(d.store);
    expect(report.repos).toEqual([expect.objectContaining({ repoId: "d", commitSha: await d.w.tip(), runs: 6 })]);
    const problems = report.problems.filter((p) => p.seq === null);
    expect(named(problems.map((p) => ({ ...p, runId: p.path.split("/")[1] as string })))).toEqual(UNREADABLE);
    for (const p of problems) {
      expect(p.deploymentUnreadable).toBeUndefined();
      expect(p.runUnreadable).toBe(true);
      expect(p.message).toContain(p.path);
    }
    expect(report.problems.filter((p) => p.seq !== null).map((p) => p.path).sort()).toEqual(["runs/r-done-gap/events/2.json", "runs/r-gap/events/3.json"]);
    // r-ok (3) + r-gap (2 readable) + r-done (2) + r-done-gap (2 readable)
    expect(report.repos[0]?.events).toBe(9);
  });

  it("check (CLI) prints the unreadable runs, never records them as acknowledged, exit 1", async () => {
    const d = await damaged();
    const run = await runCli(["check", "-d", d.dataDir, "--acknowledge", "--by", "ana", "--json"], { clock });
    expect(run.code).toBe(1);
    const body = JSON.parse(run.stdout) as { problems: { path: string; code: string; runUnreadable?: boolean }[]; acknowledged: { path: string }[] };
    // The runs that cannot be read stay open (the scheduler skips them until repaired); their events' problems are recorded.
    expect(body.problems.map((p) => [p.path, p.code, p.runUnreadable])).toEqual([
      ["runs/r-lost", "object_missing", true],
      ["runs/r-torn/events", "object_corrupt", true],
    ]);
    expect(body.acknowledged.map((p) => p.path).sort()).toEqual(["runs/r-done-gap/events/2.json", "runs/r-gap/events/3.json"]);
    const text = await runCli(["check", "-d", d.dataDir], { clock });
    expect(text.code).toBe(1);
    expect(text.stdout).toMatch(/runs\/r-lost.*object_missing/);
    expect(text.stdout).toMatch(/runs\/r-torn\/events.*object_corrupt/);
  });

  it("retention archives the readable ended run and skips every run it cannot read whole, reporting why; nothing of them is archived or removed", async () => {
    const d = await damaged();
    const result = await archiveEndedRuns({ store: d.store, principal: null, repoId: "d", clock: d.clock.clock, endedRunsAfterMs: 1_000 });
    expect(result.archived).toEqual(["r-done"]);
    const skipped = result.skipped.map((s) => ({ runId: s.runId, code: s.code })).sort((a, b) => (a.runId < b.runId ? -1 : 1));
    expect(skipped).toEqual([
      { runId: "r-done-gap", code: "object_missing" },
      { runId: "r-gap", code: "object_missing" },
      { runId: "r-lost", code: "object_missing" },
      { runId: "r-torn", code: "object_corrupt" },
    ]);
    for (const s of result.skipped) expect(s.reason).toContain(`runs/${s.runId}`);
    expect(result.remaining).toBe(0);
    expect(await d.w.liveRuns()).toEqual(["r-done-gap", "r-gap", "r-lost", "r-ok", "r-torn"]);
    const archive = (await gitAt(d.w.gitdir, ["ls-tree", "--name-only", "refs/archive/runs", "runs/"])).trim().split("\n");
    expect(archive).toEqual(["runs/r-done"]);
    // A second pass (its cache kept) skips them again: a damaged run is read again, never remembered as ended.
    const cache = new Map();
    await archiveEndedRuns({ store: d.store, principal: null, repoId: "d", clock: d.clock.clock, endedRunsAfterMs: 1_000, cache });
    const again = await archiveEndedRuns({ store: d.store, principal: null, repoId: "d", clock: d.clock.clock, endedRunsAfterMs: 1_000, cache });
    expect(again.archived).toEqual([]);
    expect(again.skipped.map((s) => s.runId).sort()).toEqual(["r-done-gap", "r-gap", "r-lost", "r-torn"]);
  });

  it("schedule controls: listSeries lists the readable series and names the unreadable runs; sync writes nothing into a run it cannot read whole", async () => {
    const d = await damaged();
    const controls = createScheduleControls({ store: d.store, principal: null, clock: d.clock.clock });
    const listed = await controls.listSeries("d");
    expect(listed.series.map((s) => `${s.runId}/${s.timerId}`)).toEqual(["r-ok/c"]);
    expect(named(listed.unreadableRuns)).toEqual(NOT_WHOLE);
    // list() cannot name them: it refuses with the first one's error rather than hide it.
    await expect(controls.list("d")).rejects.toMatchObject({ code: "object_missing", data: expect.objectContaining({ runId: "r-done-gap" }) });

    const tip = await d.w.tip();
    const declared = [
      { runId: "r-ok", timerId: "c", cron: "* * * * *" },
      // In runs that cannot be read (whole): each would be a create or an update.
      { runId: "r-lost", timerId: "c2", cron: "*/5 * * * *" },
      { runId: "r-torn", timerId: "n", cron: "* * * * *" },
      { runId: "r-gap", timerId: "c3", cron: "*/5 * * * *" },
    ];
    const synced = await controls.syncSchedules("d", declared);
    expect(synced.commits).toEqual([]);
    expect(synced.plan.create).toEqual([]);
    expect(synced.plan.update).toEqual([]);
    expect(synced.plan.cancel).toEqual([]);
    expect(synced.plan.unchanged).toEqual([{ runId: "r-ok", timerId: "c" }]);
    expect(synced.plan.conflicts.map((c) => `${c.runId}/${c.timerId}`).sort()).toEqual(["r-gap/c3", "r-lost/c2", "r-torn/n"]);
    for (const c of synced.plan.conflicts) expect(c.reason).toMatch(/could not be read \(object_(missing|corrupt)\)/);
    expect(named(synced.unreadableRuns)).toEqual([
      { runId: "r-done-gap", path: "runs/r-done-gap/events/2.json", code: "object_missing" },
      { runId: "r-gap", path: "runs/r-gap/events/3.json", code: "object_missing" },
      ...UNREADABLE,
    ].sort((a, b) => (a.runId < b.runId ? -1 : 1)));
    expect(await d.w.tip()).toBe(tip);
    // Declaring nothing cancels the readable runs' sync-owned series only.
    const emptied = await controls.syncSchedules("d", [], { dryRun: true });
    expect(emptied.plan.cancel).toEqual([{ runId: "r-ok", timerId: "c" }]);
  });

  it("schedule pause, resume, trigger and backfill refuse a run not read whole, naming the run and the lost object; nothing is appended", async () => {
    const d = await damaged();
    const controls = createScheduleControls({ store: d.store, principal: null, clock: d.clock.clock });
    const tip = await d.w.tip();
    const verbs: [string, (runId: string, timerId: string) => Promise<unknown>][] = [
      ["pause", (runId, timerId) => controls.pause("d", runId, timerId)],
      ["resume", (runId, timerId) => controls.resume("d", runId, timerId)],
      ["trigger", (runId, timerId) => controls.trigger("d", runId, timerId, "req-1")],
      ["backfill", (runId, timerId) => controls.backfill("d", runId, timerId, { from: "2026-01-01T09:00:00Z", to: "2026-01-01T11:00:00Z" })],
    ];
    // r-gap's lost event (seq 3) is not its series' own, but it could have been: every lost event refuses.
    const runs = [
      { runId: "r-gap", timerId: "c3", code: "object_missing", path: "runs/r-gap/events/3.json", oid: d.oids.gap, what: /event 3/ },
      { runId: "r-lost", timerId: "c2", code: "object_missing", path: "runs/r-lost", oid: d.oids.lost, what: /run folder/ },
      { runId: "r-torn", timerId: "u", code: "object_corrupt", path: "runs/r-torn/events", oid: d.oids.torn, what: /events\/ folder/ },
    ];
    for (const r of runs) {
      for (const [verb, call] of verbs) {
        const error = await call(r.runId, r.timerId).then(
          () => null,
          (e: unknown) => e as { code: string; message: string; data: Record<string, unknown> },
        );
        expect(error, `${verb} ${r.runId}`).toMatchObject({ code: r.code, data: expect.objectContaining({ repoId: "d", runId: r.runId, path: r.path, oid: r.oid }) });
        expect(error?.message).toContain(`run ${r.runId} of deployment d`);
        expect(error?.message).toContain(r.path);
        expect(error?.message).toMatch(r.what);
        expect(error?.message).toContain("nothing was written");
      }
    }
    expect(await d.w.tip()).toBe(tip);
    // The readable run's series is paused as before.
    expect((await controls.pause("d", "r-ok", "c")).outcome).toBe("paused");
    expect(await d.w.tip()).not.toBe(tip);
  });

  it("a series whose run lost an event in the middle of its log is neither paused, resumed, triggered nor backfilled (the rest of the log would have allowed it)", async () => {
    const d = await deployment();
    // seq 2 lost: it could have been the series' pause, a fire or its end; seqs 3 and 4 read.
    const mid = await d.w.run([started(), timerSet(2, "y", SOON), cronSet(3, "c", "0 * * * *"), timerSet(4, "z", SOON)]);
    await d.w.commit({ "r-mid": mid.tree });
    await d.w.lose(mid.blobs[1] as string);
    const tip = await d.w.tip();
    const controls = createScheduleControls({ store: d.store, principal: null, clock: d.clock.clock });
    const calls = [
      () => controls.pause("d", "r-mid", "c"),
      () => controls.resume("d", "r-mid", "c"),
      () => controls.trigger("d", "r-mid", "c", "req-1"),
      () => controls.backfill("d", "r-mid", "c", { from: "2026-01-01T09:00:00Z", to: "2026-01-01T11:00:00Z" }),
    ];
    for (const call of calls) {
      await expect(call()).rejects.toMatchObject({ code: "object_missing", data: expect.objectContaining({ runId: "r-mid", path: "runs/r-mid/events/2.json", oid: mid.blobs[1] }) });
    }
    expect(await d.w.tip()).toBe(tip);
    // Describe only reads: it shows what could be read, with the lost event among the run's bad events elsewhere.
    expect((await controls.describe("d", "r-mid", "c")).timerId).toBe("c");
  });

  it("a signal is neither delivered nor consumed on a run whose log lost an event (the lost one could be its delivery or its consumption)", async () => {
    const d = await deployment();
    const received = (seq: number, signalId: string): string => JSON.stringify({ seq, type: "SignalReceived", at: `2026-01-01T00:00:0${seq}.000Z`, signalName: "approve", signalId, payload: null });
    const consumed = (seq: number, signalId: string): string => event(seq, "SignalConsumed", { signalId });
    // r-recv lost its SignalReceived of a-1 (seq 2); r-cons lost its SignalConsumed of b-1 (seq 3).
    // No timer in r-recv: the host below (on the real clock) has nothing to fire there.
    const recv = await d.w.run([started(), received(2, "a-1"), received(3, "a-2")]);
    const cons = await d.w.run([started(), received(2, "b-1"), consumed(3, "b-1"), timerSet(4, "z", SOON)]);
    await d.w.commit({ "r-recv": recv.tree, "r-cons": cons.tree });
    await d.w.lose(recv.blobs[1] as string);
    await d.w.lose(cons.blobs[2] as string);
    const tip = await d.w.tip();
    const recvChannel = createWorkflowHostSignalChannel({ repoStore: d.store, principal: null, repoId: "d", runId: "r-recv", clock });
    const consChannel = createWorkflowHostSignalChannel({ repoStore: d.store, principal: null, repoId: "d", runId: "r-cons", clock });
    try {
      // On the partial log a-1 was never received: a second delivery would be a second wake-up.
      await expect(recvChannel.deliver("approve", null, "a-1")).rejects.toMatchObject({ code: "object_missing", data: expect.objectContaining({ runId: "r-recv", path: "runs/r-recv/events/2.json" }) });
      // On the partial log b-1 is unconsumed: consuming it again would run its step twice.
      await expect(consChannel.consume("b-1")).rejects.toMatchObject({ code: "object_missing", data: expect.objectContaining({ runId: "r-cons", path: "runs/r-cons/events/3.json" }) });
    } finally {
      await recvChannel.stop();
      await consChannel.stop();
    }
    expect(await d.w.tip()).toBe(tip);
    const sent = await runCli(["signal", "send", "-d", d.dataDir, "-r", "d", "--run", "r-recv", "--name", "approve", "--id", "a-1"], { clock });
    expect(sent.code).toBe(1);
    expect(sent.stderr).toContain("workflow-host: object_missing: run r-recv of deployment d cannot be read whole: event 2 (runs/r-recv/events/2.json");
    expect(await d.w.tip()).toBe(tip);
    await d.store.close();
    const h = await startHttpHarness(d.dataDir, []);
    try {
      const response = await h.request("/v1/deployments/d/runs/r-recv/signals", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ signalName: "approve", signalId: "a-1" }) });
      expect(response.status).toBe(409);
      expect(await response.json()).toEqual({ code: "object_missing", message: expect.stringContaining("run r-recv of deployment d cannot be read whole: event 2") });
    } finally {
      await h.close();
    }
    expect(await gitAt(d.w.gitdir, ["rev-parse", "main:runs/r-recv"])).toBe(await gitAt(d.w.gitdir, ["rev-parse", `${tip}:runs/r-recv`]));
  });

  it("a one-shot timer whose TimerFired is lost is not set again by a replayed timer set (it would fire twice)", async () => {
    const d = await deployment();
    await runWithLostFire(d);
    const tip = await d.w.tip();
    // The same request as seq 2: on the whole log a no-op (it fired at that instant); on the rest, a new TimerSet.
    const set = await runCli(["timer", "set", "-d", d.dataDir, "-r", "d", "--run", "r-fired", "-t", "t", "--fire-at", PAST], { clock });
    expect(set.code).toBe(1);
    expect(set.stderr).toContain("workflow-host: object_missing: run r-fired of deployment d cannot be read whole: event 3 (runs/r-fired/events/3.json");
    expect(await d.w.tip()).toBe(tip);
  });

  it("a run whose one-shot TimerFired is lost: runs show shows the rest but no state (no timer armed), exit 1; timers, runs list and schedule list name it, exit 1", async () => {
    const d = await deployment();
    const fired = event(3, "TimerFired", { timerId: "one", scheduledFor: PAST, firedAt: PAST });
    const rb = await d.w.run([started(), timerSet(2, "one", PAST), fired, timerSet(4, "two", SOON)]);
    const ok = await d.w.run([started(), timerSet(2, "t", SOON)]);
    await d.w.commit({ rb: rb.tree, ok: ok.tree });
    await d.w.lose(rb.blobs[2] as string);
    const named1 = [{ runId: "rb", path: "runs/rb/events/3.json", code: "object_missing" }];

    const show = await runCli(["runs", "show", "-d", d.dataDir, "-r", "d", "--run", "rb"], { clock });
    expect(show.code).toBe(1);
    // What can be read is shown: the events and the lost one.
    expect(show.stdout).toMatch(/^\s+2\s+TimerSet\s+one/m);
    expect(show.stdout).toMatch(/^\s+3\s+UNREADABLE\s+runs\/rb\/events\/3\.json/m);
    expect(show.stdout).toMatch(/^state: not known/m);
    expect(show.stdout).not.toMatch(/armed|running/);
    expect(show.stderr).toBe("workflow-host: object_missing: run rb of deployment d cannot be read whole: event 3 (runs/rb/events/3.json, git object " + String(rb.blobs[2]) + ") is not in the repository; its state and pending timers are not known (the lost event may be the one they turn on); restore it (workflow-host check lists what is lost)\n");
    const showJson = await runCli(["runs", "show", "-d", d.dataDir, "-r", "d", "--run", "rb", "--json"], { clock });
    expect(showJson.code).toBe(1);
    const shown = JSON.parse(showJson.stdout) as { events: { seq: number }[]; state: unknown; unreadable: { path: string; code: string; message: string } };
    expect(shown.events.map((e) => e.seq)).toEqual([1, 2, 4]);
    expect(shown.state).toBeNull();
    expect(shown.unreadable).toEqual({ path: "runs/rb/events/3.json", code: "object_missing", message: expect.stringContaining("run rb of deployment d cannot be read whole: event 3") });
    // A whole run shows as before.
    const okShow = await runCli(["runs", "show", "-d", d.dataDir, "-r", "d", "--run", "ok"], { clock });
    expect([okShow.code, okShow.stdout]).toEqual([0, expect.stringContaining("timer t armed")]);

    const timers = await runCli(["timers", "-d", d.dataDir, "-r", "d", "--json"], { clock });
    expect(timers.code).toBe(1);
    const timersBody = JSON.parse(timers.stdout) as { timers: { runId: string; timerId: string }[]; unreadableRuns: { runId: string; path: string; code: string }[] };
    expect(timersBody.timers.map((t) => `${t.runId}/${t.timerId}`)).toEqual(["ok/t"]);
    expect(named(timersBody.unreadableRuns)).toEqual(named1);

    const runs = await runCli(["runs", "list", "-d", d.dataDir, "-r", "d"], { clock });
    expect(runs.code).toBe(1);
    expect(runs.stdout).toMatch(/^rb\s+-\s+unreadable \(object_missing\)/m);
    expect(runs.stdout).toMatch(/^ok\s+2\s+running/m);

    const list = await runCli(["schedule", "list", "-d", d.dataDir, "-r", "d", "--json"], { clock });
    expect(list.code).toBe(1);
    expect(named((JSON.parse(list.stdout) as { unreadableRuns: { runId: string; path: string; code: string }[] }).unreadableRuns)).toEqual(named1);
  });

  it("timer cancel and runs complete refuse a run whose log lost an event (the lost one is the timer's fire): exit 1 naming the run and what is lost, nothing written", async () => {
    const d = await deployment();
    await runWithLostFire(d);
    const tip = await d.w.tip();
    const named = "object_missing: run r-fired of deployment d cannot be read whole: event 3 (runs/r-fired/events/3.json";
    // On the rest of the log t is armed: a cancel would answer `cancelled` where the truth is `already_fired`.
    const cancel = await runCli(["timer", "cancel", "-d", d.dataDir, "-r", "d", "--run", "r-fired", "-t", "t"], { clock });
    expect(cancel.code).toBe(1);
    expect(cancel.stderr).toContain(`workflow-host: ${named}`);
    expect(cancel.stderr).toContain("nothing was written");
    const cancelJson = await runCli(["timer", "cancel", "-d", d.dataDir, "-r", "d", "--run", "r-fired", "-t", "z", "--json"], { clock });
    expect(cancelJson.code).toBe(1);
    expect(JSON.parse(cancelJson.stdout)).toEqual({ error: { code: "object_missing", message: expect.stringContaining(named) } });
    for (const verb of ["complete", "fail", "cancel"]) {
      const end = await runCli(["runs", verb, "-d", d.dataDir, "-r", "d", "--run", "r-fired"], { clock });
      expect(end.code, verb).toBe(1);
      expect(end.stderr, verb).toContain(`workflow-host: ${named}`);
    }
    expect(await d.w.tip()).toBe(tip);
  });

  it("HTTP DELETE of a timer of a run whose log lost an event is 409 naming the run; nothing written, nor fired by the host", async () => {
    const d = await deployment();
    await runWithLostFire(d, "2099-01-01T00:00:00.000Z");
    const events = async (): Promise<string> => (await gitAt(d.w.gitdir, ["ls-tree", "--name-only", "main", "runs/r-fired/events/"])).trim();
    const before = await events();
    await d.store.close();
    const h = await startHttpHarness(d.dataDir, []);
    try {
      for (const timerId of ["t", "z"]) {
        const response = await h.request(`/v1/deployments/d/runs/r-fired/timers/${timerId}`, { method: "DELETE" });
        expect(response.status, timerId).toBe(409);
        const body = (await response.json()) as { code: string; message: string };
        expect(body.code).toBe("object_missing");
        expect(body.message).toContain("run r-fired of deployment d cannot be read whole: event 3 (runs/r-fired/events/3.json");
      }
    } finally {
      await h.close();
    }
    expect(await events()).toBe(before);
  });

  it("appends of two runs committed in one batch: the run whose last event is lost fails alone, named; the other run's append commits", async () => {
    const d = await deployment();
    const ok = await d.w.run([started(), timerSet(2, "t", SOON)]);
    const dam = await d.w.run([started(), timerSet(2, "t", SOON), timerSet(3, "u", SOON)]);
    await d.w.commit({ "r-ok": ok.tree, "r-dam": dam.tree });
    // The damaged run's last event: only the store's push check reads it (a cancel or an end, which no guard refuses first).
    await d.w.lose(dam.blobs[2] as string);
    const tip = await d.w.tip();
    const cancel = (runId: string, timerId: string): Promise<unknown> =>
      appendRunEvents({
        store: d.store,
        principal: null,
        repoId: "d",
        runId,
        message: `cancel ${runId}/${timerId}`,
        decide: () => ({ append: [{ type: "TimerCancelled", at: NOW, data: { timerId } }], result: null }),
      });
    // Made in the same turn: one batch, one commit (run-log-append.ts, group commit).
    const [healthy, damagedRun, healthyAgain] = await Promise.allSettled([cancel("r-ok", "t"), cancel("r-dam", "t"), cancel("r-ok", "t2")]);
    expect(healthy).toMatchObject({ status: "fulfilled", value: { committed: true } });
    expect(healthyAgain).toMatchObject({ status: "fulfilled", value: { committed: true } });
    expect(damagedRun).toMatchObject({
      status: "rejected",
      reason: { code: "object_missing", data: { repoId: "d", runId: "r-dam", path: "runs/r-dam/events/3.json", oid: dam.blobs[2], unreadableRun: true } },
    });
    const message = (damagedRun as PromiseRejectedResult).reason.message as string;
    expect(message).toContain("run r-dam of deployment d cannot be read whole: event 3 (runs/r-dam/events/3.json");
    expect(message).toContain("nothing was written");
    // One commit after the tip holds both of r-ok's events and nothing of r-dam's.
    expect((await gitAt(d.w.gitdir, ["rev-list", `${tip}..main`])).trim().split("\n")).toHaveLength(1);
    expect((await gitAt(d.w.gitdir, ["ls-tree", "--name-only", "main", "runs/r-ok/events/"])).trim().split("\n")).toEqual(["runs/r-ok/events/1.json", "runs/r-ok/events/2.json", "runs/r-ok/events/3.json", "runs/r-ok/events/4.json"]);
    expect((await gitAt(d.w.gitdir, ["rev-parse", "main:runs/r-dam"])).trim()).toBe(dam.tree);
  });

  it("compaction (compactRun, runs compact) of a run with an object lost or torn refuses naming the deployment, the run, what is lost, its path and oid; nothing is written", async () => {
    const d = await deployment();
    // Each run's objects its own (different timer ids, seqs): losing one object damages one run.
    const last = await d.w.run([started(), timerSet(2, "l", SOON), timerSet(3, "l2", SOON), ended(4)]);
    const mid = await d.w.run([started(), timerSet(2, "m", SOON), ended(3)]);
    const folder = await d.w.run([started(), timerSet(2, "f", SOON), ended(3)]);
    const torn = await d.w.run([started(), timerSet(2, "g", SOON), ended(3)]);
    const fine = await d.w.run([started(), ended(2)]);
    await d.w.commit({ "r-last": last.tree, "r-mid": mid.tree, "r-folder": folder.tree, "r-torn": torn.tree, "r-fine": fine.tree });
    await d.w.lose(last.blobs[3] as string);
    await d.w.lose(mid.blobs[1] as string);
    await d.w.lose(folder.tree);
    await d.w.tear(torn.events);
    const tip = await d.w.tip();
    const cases = [
      { runId: "r-last", code: "object_missing", path: "runs/r-last/events/4.json", oid: last.blobs[3], what: "event 4 (runs/r-last/events/4.json" },
      { runId: "r-mid", code: "object_missing", path: "runs/r-mid/events/2.json", oid: mid.blobs[1], what: "event 2 (runs/r-mid/events/2.json" },
      { runId: "r-folder", code: "object_missing", path: "runs/r-folder", oid: folder.tree, what: "its run folder (runs/r-folder" },
      { runId: "r-torn", code: "object_corrupt", path: "runs/r-torn/events", oid: torn.events, what: "its events/ folder (runs/r-torn/events" },
    ];
    for (const c of cases) {
      const error = await compactRun({ store: d.store, principal: null, repoId: "d", runId: c.runId }).then(
        () => null,
        (e: unknown) => e as { code: string; message: string; data: Record<string, unknown> },
      );
      expect(error, c.runId).toMatchObject({ code: c.code, data: expect.objectContaining({ repoId: "d", runId: c.runId, path: c.path, oid: c.oid, unreadableRun: true }) });
      expect(error?.message).toContain(`${c.code}: run ${c.runId} of deployment d cannot be read whole: ${c.what}`);
      expect(error?.message).toContain("nothing was written");
      const cli = await runCli(["runs", "compact", "-d", d.dataDir, "-r", "d", "--run", c.runId, "--json"], { clock });
      expect(cli.code, c.runId).toBe(1);
      expect(JSON.parse(cli.stdout)).toEqual({ error: { code: c.code, message: expect.stringContaining(`run ${c.runId} of deployment d cannot be read whole: ${c.what}`) } });
    }
    expect(await d.w.tip()).toBe(tip);
    // The readable ended run is sealed as before.
    expect(await compactRun({ store: d.store, principal: null, repoId: "d", runId: "r-fine" })).toMatchObject({ committed: true, events: 2 });
    expect((await gitAt(d.w.gitdir, ["ls-tree", "--name-only", "main", "runs/r-fine/"])).trim().split("\n")).toContain("runs/r-fine/events.jsonl");
  });

  it("a library caller's writeTreeDelta appending to runs whose last event is lost is refused naming the deployment and every such run (path, oid); nothing is written", async () => {
    const d = await deployment();
    const a = await d.w.run([started(), timerSet(2, "a", SOON), timerSet(3, "a2", SOON)]);
    const b = await d.w.run([started(), timerSet(2, "b", SOON), timerSet(3, "b2", SOON)]);
    const ok = await d.w.run([started(), timerSet(2, "o", SOON)]);
    await d.w.commit({ "r-a": a.tree, "r-b": b.tree, "r-ok": ok.tree });
    await d.w.lose(a.blobs[2] as string);
    await d.w.lose(b.blobs[2] as string);
    const tip = await d.w.tip();
    const cancelled = (seq: number, timerId: string): Uint8Array => new TextEncoder().encode(event(seq, "TimerCancelled", { timerId }));
    const error = await d.store
      .writeTreeDelta(null, { kind: WORKFLOW_RUN_KIND, id: "d" }, "refs/heads/main", {
        message: "cancel three timers",
        computeDelta: () => Promise.resolve({ puts: new Map([["runs/r-a/events/4.json", cancelled(4, "a")], ["runs/r-b/events/4.json", cancelled(4, "b")], ["runs/r-ok/events/3.json", cancelled(3, "o")]]) }),
      })
      .then(
        () => null,
        (e: unknown) => e as { code: string; message: string; data: Record<string, unknown> },
      );
    expect(error).toMatchObject({ code: "object_missing", data: expect.objectContaining({ repoId: "d", runId: "r-a", path: "runs/r-a/events/3.json", oid: a.blobs[2], unreadableRun: true }) });
    expect(error?.message).toContain("object_missing: run r-a of deployment d cannot be read whole: event 3 (runs/r-a/events/3.json");
    expect(error?.message).toContain("nothing was written");
    expect(error?.message).toContain("and 1 more run of this commit: r-b");
    // Every run the check could not read, each with its own error.
    const each = error?.data["unreadableRuns"] as { code: string; message: string; data: Record<string, unknown> }[];
    expect(each.map((e) => [e.code, e.data["repoId"], e.data["runId"], e.data["path"], e.data["oid"]])).toEqual([
      ["object_missing", "d", "r-a", "runs/r-a/events/3.json", a.blobs[2]],
      ["object_missing", "d", "r-b", "runs/r-b/events/3.json", b.blobs[2]],
    ]);
    expect(each[1]?.message).toContain("run r-b of deployment d cannot be read whole: event 3 (runs/r-b/events/3.json");
    expect(await d.w.tip()).toBe(tip);
  });

  it("appends of several damaged runs in one batch: one refusal names them all, each fails named, and the healthy run's appends commit on the first retry, once", async () => {
    const d = await deployment();
    const ok = await d.w.run([started(), timerSet(2, "t", SOON)]);
    const dam1 = await d.w.run([started(), timerSet(2, "p", SOON), timerSet(3, "p2", SOON)]);
    const dam2 = await d.w.run([started(), timerSet(2, "q", SOON), timerSet(3, "q2", SOON)]);
    const dam3 = await d.w.run([started(), timerSet(2, "s", SOON), timerSet(3, "s2", SOON)]);
    await d.w.commit({ "r-ok": ok.tree, "r-dam1": dam1.tree, "r-dam2": dam2.tree, "r-dam3": dam3.tree });
    const lost = { "r-dam1": dam1.blobs[2] as string, "r-dam2": dam2.blobs[2] as string, "r-dam3": dam3.blobs[2] as string };
    for (const oid of Object.values(lost)) await d.w.lose(oid);
    const tip = await d.w.tip();
    // Each commit attempt decides every append of its batch once: r-ok's decides count the attempts.
    const decided = new Map<string, number>();
    const cancel = (runId: string, timerId: string): Promise<unknown> =>
      appendRunEvents({
        store: d.store,
        principal: null,
        repoId: "d",
        runId,
        message: `cancel ${runId}/${timerId}`,
        decide: () => {
          decided.set(`${runId}/${timerId}`, (decided.get(`${runId}/${timerId}`) ?? 0) + 1);
          return { append: [{ type: "TimerCancelled", at: NOW, data: { timerId } }], result: null };
        },
      });
    // Made in the same turn: one batch (run-log-append.ts, group commit).
    const settled = await Promise.allSettled([cancel("r-dam1", "p"), cancel("r-ok", "t"), cancel("r-dam2", "q"), cancel("r-ok", "t2"), cancel("r-dam3", "s")]);
    expect(settled[1]).toMatchObject({ status: "fulfilled", value: { committed: true } });
    expect(settled[3]).toMatchObject({ status: "fulfilled", value: { committed: true } });
    for (const [i, runId] of [[0, "r-dam1"], [2, "r-dam2"], [4, "r-dam3"]] as const) {
      const path = `runs/${runId}/events/3.json`;
      expect(settled[i], runId).toMatchObject({ status: "rejected", reason: { code: "object_missing", data: { repoId: "d", runId, path, oid: lost[runId], unreadableRun: true } } });
      // Its own error, not the refusal naming the first run.
      const message = (settled[i] as PromiseRejectedResult).reason.message as string;
      expect(message).toContain(`run ${runId} of deployment d cannot be read whole: event 3 (${path}`);
      expect(message).not.toContain("more run");
    }
    // The failed attempt and one retry without the three damaged runs (one attempt per damaged run before).
    expect(Object.fromEntries(decided)).toEqual({ "r-dam1/p": 1, "r-ok/t": 2, "r-dam2/q": 1, "r-ok/t2": 2, "r-dam3/s": 1 });
    // r-ok's two events committed once, in one commit; nothing of the damaged runs.
    expect((await gitAt(d.w.gitdir, ["rev-list", `${tip}..main`])).trim().split("\n")).toHaveLength(1);
    expect((await gitAt(d.w.gitdir, ["ls-tree", "--name-only", "main", "runs/r-ok/events/"])).trim().split("\n")).toEqual(["runs/r-ok/events/1.json", "runs/r-ok/events/2.json", "runs/r-ok/events/3.json", "runs/r-ok/events/4.json"]);
    for (const [runId, run] of [["r-dam1", dam1], ["r-dam2", dam2], ["r-dam3", dam3]] as const) expect((await gitAt(d.w.gitdir, ["rev-parse", `main:runs/${runId}`])).trim()).toBe(run.tree);
  });

  it("the CLI's schedule pause and runs show on a run not read whole exit 1 naming the run and what is lost", async () => {
    const d = await damaged();
    const tip = await d.w.tip();
    const pause = await runCli(["schedule", "pause", "-d", d.dataDir, "-r", "d", "--run", "r-gap", "-t", "c3"], { clock });
    expect(pause.code).toBe(1);
    expect(pause.stderr).toMatch(/^workflow-host: object_missing: run r-gap of deployment d cannot be read whole: event 3 \(runs\/r-gap\/events\/3\.json/);
    expect(pause.stderr).toContain("nothing was written");
    const backfill = await runCli(["schedule", "backfill", "-d", d.dataDir, "-r", "d", "--run", "r-lost", "-t", "c2", "--from", "2026-01-01T09:00:00Z", "--to", "2026-01-01T11:00:00Z", "--json"], { clock });
    expect(backfill.code).toBe(1);
    expect(JSON.parse(backfill.stdout)).toMatchObject({ error: { code: "object_missing", message: expect.stringContaining("run r-lost of deployment d cannot be read whole: its run folder (runs/r-lost") } });
    expect(await d.w.tip()).toBe(tip);

    for (const [runId, code, what] of [
      ["r-lost", "object_missing", "its run folder (runs/r-lost"],
      ["r-torn", "object_corrupt", "its events/ folder (runs/r-torn/events"],
    ] as const) {
      const show = await runCli(["runs", "show", "-d", d.dataDir, "-r", "d", "--run", runId], { clock });
      expect(show.code).toBe(1);
      expect(show.stderr).toContain(`workflow-host: ${code}: run ${runId} of deployment d cannot be read whole: ${what}`);
    }
  });

  it("HTTP answers a run that cannot be read with 409 and its code, for its views and its writes; other runs as before", async () => {
    const { d, h, folders, before } = await damagedServed();
    try {
      for (const [runId, code, what] of [
        ["r-lost", "object_missing", "its run folder (runs/r-lost"],
        ["r-torn", "object_corrupt", "its events/ folder (runs/r-torn/events"],
      ] as const) {
        for (const path of [`/v1/deployments/d/runs/${runId}`, `/v1/deployments/d/runs/${runId}/events`, `/v1/deployments/d/runs/${runId}/events?after=1&limit=5`]) {
          const response = await h.request(path);
          expect(response.status, path).toBe(409);
          const body = (await response.json()) as { code: string; message: string };
          expect(Object.keys(body).sort()).toEqual(["code", "message"]);
          expect(body.code).toBe(code);
          expect(body.message).toContain(`${code}: run ${runId} of deployment d cannot be read whole: ${what}`);
        }
        const cancel = await h.request(`/v1/deployments/d/runs/${runId}/timers/u`, { method: "DELETE" });
        expect(cancel.status).toBe(409);
        expect(((await cancel.json()) as { code: string }).code).toBe(code);
      }
      // A run with a lost event is read as before: the event is a bad event of its summary.
      const gap = await h.request("/v1/deployments/d/runs/r-gap");
      expect(gap.status).toBe(200);
      expect(((await gap.json()) as { bad: { path: string; code: string }[] }).bad).toEqual([expect.objectContaining({ path: "runs/r-gap/events/3.json", code: "object_missing" })]);
    } finally {
      await h.close();
    }
    expect(await folders()).toBe(before);
  });

  it("the CLI's runs list, timers, schedule list and schedule sync list the other runs and name the unreadable ones, exit 1", async () => {
    const d = await damaged();
    const runs = await runCli(["runs", "list", "-d", d.dataDir, "-r", "d", "--json"], { clock });
    expect(runs.code).toBe(1);
    const runsBody = JSON.parse(runs.stdout) as { runs: { runId: string }[]; unreadableRuns: { runId: string; path: string; code: string; message: string }[] };
    expect(runsBody.runs.map((r) => r.runId)).toEqual(["r-done", "r-ok"]);
    expect(named(runsBody.unreadableRuns)).toEqual(NOT_WHOLE);
    const runsText = await runCli(["runs", "list", "-d", d.dataDir, "-r", "d"], { clock });
    expect(runsText.code).toBe(1);
    expect(runsText.stdout).toMatch(/^r-lost\s+-\s+unreadable \(object_missing\)/m);
    expect(runsText.stdout).toMatch(/^r-ok\s+3\s+running/m);
    expect(runsText.stdout).toMatch(/^r-gap\s+-\s+unreadable \(object_missing\)/m);
    expect(runsText.stderr).toContain("workflow-host: run r-gap cannot be read: object_missing: run r-gap of deployment d cannot be read whole: event 3 (runs/r-gap/events/3.json");
    expect(runsText.stderr).toMatch(/runs\/r-torn\/events/);

    const timers = await runCli(["timers", "-d", d.dataDir, "--json"], { clock });
    expect(timers.code).toBe(1);
    const timersBody = JSON.parse(timers.stdout) as { timers: { runId: string }[]; unreadableRuns: { runId: string; path: string; code: string }[] };
    expect(timersBody.timers.map((t) => t.runId).sort()).toEqual(["r-ok", "r-ok"]);
    expect(named(timersBody.unreadableRuns)).toEqual(NOT_WHOLE);
    const timersText = await runCli(["timers", "-d", d.dataDir], { clock });
    expect(timersText.code).toBe(1);
    expect(timersText.stderr).toMatch(/r-lost/);
    // The code once: the message starts with it.
    expect(timersText.stderr).toContain("(its timers are not listed): object_missing: run r-gap of deployment d cannot be read whole");
    expect(timersText.stderr).not.toMatch(/(object_missing|object_corrupt): \1:/);

    const list = await runCli(["schedule", "list", "-d", d.dataDir, "-r", "d", "--json"], { clock });
    expect(list.code).toBe(1);
    const listBody = JSON.parse(list.stdout) as { series: { runId: string }[]; unreadableRuns: { runId: string; path: string; code: string }[] };
    expect(listBody.series.map((s) => s.runId)).toEqual(["r-ok"]);
    expect(named(listBody.unreadableRuns)).toEqual(NOT_WHOLE);
    expect(list.stderr).not.toMatch(/(object_missing|object_corrupt): \1:/);

    const file = join(d.dataDir, "schedules.json");
    await writeFile(file, JSON.stringify([{ runId: "r-lost", timerId: "c2", cron: "*/5 * * * *" }]));
    const sync = await runCli(["schedule", "sync", "-d", d.dataDir, "-r", "d", "--file", file], { clock });
    expect(sync.code).toBe(1);
    expect(sync.stdout).toMatch(/conflict\s+r-lost\/c2\s+.*could not be read \(object_missing\)/);
    // r-ok's sync-owned series is cancelled (readable, not declared); nothing is written to the damaged runs.
    expect(sync.stdout).toMatch(/^cancel\s+r-ok\/c/m);
  });

  it("HTTP schedule routes list the other runs' series naming the unreadable runs, and answer a write to a run not read whole 409, writing nothing", async () => {
    const { d, h, folders, before } = await damagedServed();
    try {
      const listed = await h.request("/v1/deployments/d/schedules");
      expect(listed.status).toBe(200);
      const body = (await listed.json()) as { series: { runId: string }[]; unreadableRuns: { runId: string; path: string; code: string; message: string }[] };
      expect(body.series.map((s) => s.runId)).toEqual(["r-ok"]);
      expect(named(body.unreadableRuns)).toEqual(NOT_WHOLE);
      for (const u of body.unreadableRuns) expect(u.message).not.toContain(d.dataDir);
      // r-gap's series is armed but one of its events is lost: what decides a pause or a trigger
      // (an earlier fire of the same requestId) could be in it.
      for (const [runId, timerId, code] of [
        ["r-lost", "c2", "object_missing"],
        ["r-torn", "u", "object_corrupt"],
        ["r-gap", "c3", "object_missing"],
      ] as const) {
        for (const [verb, init] of [
          ["pause", { method: "POST" }],
          ["trigger", { method: "POST", body: JSON.stringify({ requestId: "req-1" }) }],
        ] as const) {
          const response = await h.request(`/v1/deployments/d/runs/${runId}/schedules/${timerId}/${verb}`, init);
          const answer = (await response.json()) as { code: string; message: string };
          expect({ runId, verb, status: response.status, code: answer.code }).toEqual({ runId, verb, status: 409, code });
          expect(answer.message).toContain(`run ${runId} of deployment d`);
        }
      }
      const events = (await (await h.request("/v1/deployments/d/runs/r-gap/events?limit=1000")).json()) as { events: { type: string }[] };
      expect(events.events.map((e) => e.type)).not.toContain("SchedulePaused");
    } finally {
      await h.close();
    }
    expect(await folders()).toBe(before);
  });

  it("HTTP GET /v1/timers lists the other runs' timers and names the unreadable runs", async () => {
    const d = await damaged();
    await d.store.close();
    const h = await startHttpHarness(d.dataDir, []);
    try {
      for (const path of ["/v1/timers", "/v1/deployments/d/timers"]) {
        const response = await h.request(path);
        expect(response.status).toBe(200);
        const body = (await response.json()) as { timers: { runId: string }[]; unreadableRuns: { repoId: string; runId: string; path: string; code: string; message: string }[] };
        // The host (on the real clock) may have fired r-ok's overdue one-shot by now: runs, not timers.
        expect([...new Set(body.timers.map((t) => t.runId))].sort()).toEqual(["r-ok"]);
        expect(named(body.unreadableRuns)).toEqual(NOT_WHOLE);
        for (const u of body.unreadableRuns) expect(u.repoId).toBe("d");
      }
    } finally {
      await h.close();
    }
  });

  it("a damaged runs/ folder still fails the whole deployment for every reader", async () => {
    const d = await deployment();
    const ok = await d.w.run([started(), timerSet(2, "t", SOON)]);
    const { runsTree } = await d.w.commit({ "r-ok": ok.tree });
    await d.w.lose(runsTree);
    await expect(listPendingTimers(d.store, { clock, repoId: "d" })).rejects.toMatchObject({ code: "object_corrupt" });
    expect((await listPendingTimers(d.store, { clock })).failedRepos).toEqual([expect.objectContaining({ repoId: "d", error: expect.objectContaining({ code: "object_corrupt" }) })]);
    const check = await checkDeployments(d.store);
    expect(check.problems).toEqual([expect.objectContaining({ code: "object_corrupt", deploymentUnreadable: true })]);
    await expect(archiveEndedRuns({ store: d.store, principal: null, repoId: "d", clock: d.clock.clock, endedRunsAfterMs: 1_000 })).rejects.toMatchObject({ code: "object_corrupt" });
    const controls = createScheduleControls({ store: d.store, principal: null, clock: d.clock.clock });
    await expect(controls.listSeries("d")).rejects.toMatchObject({ code: "object_corrupt" });
    await expect(controls.syncSchedules("d", [])).rejects.toMatchObject({ code: "object_corrupt" });
  });
});
