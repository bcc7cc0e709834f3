/**
 * Run lifecycle verbs and retention (issue 16): ending a run, archiving ended runs to
 * refs/archive/runs and removing them from main in a retention commit, the rules that tell such
 * a commit from a destructive one, and that an archived run's log is unchanged, byte for byte.
 * On memfs under a FakeClock.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { archiveEndedRuns } from "../../../src/host/archive-ended-runs.js";
import { endRun } from "../../../src/host/end-run.js";
import { ARCHIVE_REF } from "../../../src/workflow/run-archive.js";
import { readRunLog } from "../../../src/workflow/run-log.js";
import { subscribeKind, type KindIssue } from "../../../src/workflow/subscribe-kind.js";
import { WORKFLOW_RUN_KIND, workflowRunKind } from "../../../src/workflow/workflow-run-kind.js";
import { createHarness, recoveryIndexOf, REPO, until, type Harness } from "../scheduler/harness.js";

const NOW = "2026-05-01T10:00:00.000Z";
const RID = { kind: WORKFLOW_RUN_KIND, id: REPO };
const DAY = 24 * 60 * 60 * 1000;

/** Asserts that `promise` rejects with a WorkflowHostError of this code. */
async function expectCode(promise: Promise<unknown>, code: string): Promise<void> {
  await expect(promise).rejects.toMatchObject({ code });
}

let harness: Harness | null = null;
afterEach(async () => {
  await harness?.close();
  harness = null;
});

async function setup(): Promise<Harness> {
  harness = await createHarness(NOW);
  return harness;
}

async function filesUnder(h: Harness, ref: string, folder: string): Promise<Map<string, string>> {
  const reads = await h.store.openCommittedReads(null, RID, ref);
  const out = new Map<string, string>();
  const walk = async (path: string): Promise<void> => {
    for (const entry of await reads.listDir(path)) {
      if (entry.type === "tree") await walk(`${path}/${entry.name}`);
      else out.set(`${path}/${entry.name}`, new TextDecoder().decode(await reads.readBlobByOid(entry.oid)));
    }
  };
  await walk(folder);
  return out;
}

const end = (h: Harness, runId: string, outcome: "completed" | "failed" | "cancelled", data?: Record<string, unknown>) =>
  endRun({ store: h.store, principal: null, repoId: REPO, runId, outcome, nowMs: h.clock.now(), ...(data === undefined ? {} : { data }) });

describe("run lifecycle verbs", () => {
  it("appends the terminal event of each outcome, stamped now, once", async () => {
    const h = await setup();
    await h.append("a", { type: "Started" });
    const first = await end(h, "a", "completed", { result: 42 });
    expect(first).toMatchObject({ type: "RunCompleted", seq: 2, committed: true });
    const again = await end(h, "a", "completed");
    expect(again).toMatchObject({ type: "RunCompleted", seq: 2, committed: false });
    await expectCode(end(h, "a", "failed"), "event_invalid");
    expect(await h.log("a")).toEqual([
      { seq: 1, type: "Started" },
      { seq: 2, type: "RunCompleted", at: NOW, data: { result: 42 } },
    ]);
    await h.append("b", { type: "Started" });
    await h.append("c", { type: "Started" });
    expect((await end(h, "b", "failed", { error: "boom" })).type).toBe("RunFailed");
    expect((await end(h, "c", "cancelled")).type).toBe("RunCancelled");
    await expectCode(end(h, "bad id", "cancelled"), "id_invalid");
    // A run with no events is not started by its end, whichever outcome.
    const tip = await h.store.resolveRef(null, RID, "refs/heads/main");
    for (const outcome of ["completed", "failed", "cancelled"] as const) await expectCode(end(h, "never-existed", outcome), "run_not_found");
    expect(await h.store.resolveRef(null, RID, "refs/heads/main")).toBe(tip);
  });

  it("a terminal event disarms the run's pending timers", async () => {
    const h = await setup();
    await h.scheduler.start();
    await h.append("a", { type: "TimerSet", data: { timerId: "t", fireAt: "2026-05-01T11:00:00Z" } });
    await h.scheduler.idle();
    for (let i = 0; i < 5 && h.scheduler.queuedTimers().length === 0; i += 1) await new Promise((r) => setImmediate(r));
    expect(h.scheduler.queuedTimers()).toHaveLength(1);
    await end(h, "a", "cancelled");
    for (let i = 0; i < 20 && h.scheduler.queuedTimers().length > 0; i += 1) {
      await new Promise((r) => setImmediate(r));
      await h.scheduler.idle();
    }
    expect(h.scheduler.queuedTimers()).toHaveLength(0);
  });
});

describe("retention", () => {
  it("moves runs ended longer ago than the policy to the archive ref, unchanged, and keeps the others live", async () => {
    const h = await setup();
    await h.append("old", { type: "Started", at: NOW });
    await end(h, "old", "completed");
    await h.append("live", { type: "TimerSet", data: { timerId: "t", fireAt: "2026-06-01T00:00:00Z" } });
    await h.clock.advance(3 * DAY);
    await h.append("recent", { type: "Started" });
    await end(h, "recent", "failed");
    const before = await filesUnder(h, "refs/heads/main", "runs/old");

    const pass = await archiveEndedRuns({ store: h.store, principal: null, repoId: REPO, nowMs: h.clock.now(), endedRunsAfterMs: 2 * DAY });
    expect(pass.archived).toEqual(["old"]);
    expect(pass.commitSha).not.toBeNull();
    const main = await h.store.openCommittedReads(null, RID, "refs/heads/main");
    expect((await main.listDir("runs")).map((e) => e.name)).toEqual(["live", "recent"]);
    expect(await filesUnder(h, ARCHIVE_REF, "runs/old")).toEqual(before);
    const archive = await h.store.openCommittedReads(null, RID, ARCHIVE_REF);
    expect((await readRunLog(archive, "old")).events.map((e) => e.type)).toEqual(["Started", "RunCompleted"]);

    // Nothing more is due: a second pass commits nothing.
    const second = await archiveEndedRuns({ store: h.store, principal: null, repoId: REPO, nowMs: h.clock.now(), endedRunsAfterMs: 2 * DAY });
    expect(second.archived).toEqual([]);
    expect(await h.store.resolveRef(null, RID, "refs/heads/main")).toBe(pass.commitSha);
  });

  it("archives runs of existing repos: no `at` on the terminal event, and the original compacted form", async () => {
    const h = await setup();
    const lines = ['{"seq":0,"type":"Started"}', '{"seq":1,"type":"RunCompleted"}'];
    await h.rawWrite({
      "runs/sealed/events.jsonl": `${lines.join("\n")}\n`,
      "runs/plain/events/0.json": '{"seq":0,"type":"TimerFired","data":{"timerId":"t"}}',
      "runs/plain/events/1.json": '{"seq":1,"type":"RunCancelled"}',
      "runs/plain/grants.json": "{}",
    });
    const from = await h.store.resolveRef(null, RID, "refs/heads/main");
    const pass = await archiveEndedRuns({ store: h.store, principal: null, repoId: REPO, nowMs: h.clock.now(), endedRunsAfterMs: DAY });
    expect(pass.archived).toEqual(["plain", "sealed"]);
    const archive = await h.store.openCommittedReads(null, RID, ARCHIVE_REF);
    expect(new TextDecoder().decode((await archive.readBlob("runs/sealed/events.jsonl")) ?? new Uint8Array())).toBe(`${lines.join("\n")}\n`);
    expect(await archive.readBlob("runs/plain/grants.json")).not.toBeNull();
    // The sealed log removed by the retention commit is no rewrite (`log_rewritten`) for a subscriber.
    const issues: KindIssue[] = [];
    const stop = new AbortController();
    for await (const event of subscribeKind(h.store, null, RID, "refs/heads/main", undefined, { from: from ?? "genesis", signal: stop.signal, onIssue: (i) => issues.push(i), onCommit: (c) => c.commitSha === pass.commitSha && stop.abort() })) void event;
    expect(issues).toEqual([]);
  });

  it("a retention commit is not reported as a rewrite; the same removal pushed without the archive is", async () => {
    const h = await setup();
    await h.append("a", { type: "Started" });
    await end(h, "a", "completed");
    await h.append("b", { type: "Started" });
    await end(h, "b", "completed");
    const from = await h.store.resolveRef(null, RID, "refs/heads/main");
    await h.clock.advance(2 * DAY);
    await archiveEndedRuns({ store: h.store, principal: null, repoId: REPO, nowMs: h.clock.now(), endedRunsAfterMs: DAY, maxRuns: 1 });
    await h.rawDelta({}, ["runs/b"]);
    const issues: KindIssue[] = [];
    const stop = new AbortController();
    const tip = await h.store.resolveRef(null, RID, "refs/heads/main");
    for await (const commit of subscribeKind(h.store, null, RID, "refs/heads/main", undefined as never, { from: from ?? "genesis", signal: stop.signal, onIssue: (i) => issues.push(i), onCommit: (c) => { if (c.commitSha === tip) stop.abort(); } })) void commit;
    expect(issues.map((i) => (i.type === "event_rewritten" ? `${i.runId}/${i.seq}` : i.type)).sort()).toEqual(["b/1", "b/2"]);
  });

  it("refuses, through the store, a removal of a run the archive does not hold, of a live run, and a reused archived id", async () => {
    const h = await setup();
    await h.append("a", { type: "Started" });
    await end(h, "a", "completed");
    await h.append("live", { type: "Started" });
    const remove = (path: string) =>
      h.store.writeTreeDelta(null, RID, "refs/heads/main", { message: "remove", computeDelta: () => ({ deletes: [path] }) });
    await expectCode(remove("runs/a"), "event_invalid");
    // A copy of a live run in the archive does not let it leave: only an ended run does.
    const live = await filesUnder(h, "refs/heads/main", "runs/live");
    await h.store.writeTreeDelta(null, RID, ARCHIVE_REF, { message: "copy", computeDelta: () => ({ puts: new Map([...live].map(([p, t]) => [p, new TextEncoder().encode(t)])) }) });
    await expectCode(remove("runs/live"), "event_invalid");
    // The archive only grows.
    await expectCode(h.store.writeTreeDelta(null, RID, ARCHIVE_REF, { message: "rm", computeDelta: () => ({ deletes: ["runs/live"] }) }), "event_invalid");

    await h.clock.advance(2 * DAY);
    const pass = await archiveEndedRuns({ store: h.store, principal: null, repoId: REPO, nowMs: h.clock.now(), endedRunsAfterMs: DAY });
    expect(pass.archived).toEqual(["a"]);
    await expectCode(h.append("a", { type: "Started" }), "event_invalid");
    await expectCode(end(h, "a", "completed"), "run_archived");
    expect(await (await h.store.openCommittedReads(null, RID, "refs/heads/main")).treeOid("runs/a")).toBeNull();
  });

  it("finishes a pass whose archive commit was made but whose retention commit was not", async () => {
    const h = await setup();
    await h.append("a", { type: "Started" });
    await end(h, "a", "completed");
    const files = await filesUnder(h, "refs/heads/main", "runs/a");
    await h.store.writeTreeDelta(null, RID, ARCHIVE_REF, { message: "archive", computeDelta: () => ({ puts: new Map([...files].map(([p, t]) => [p, new TextEncoder().encode(t)])) }) });
    await h.clock.advance(2 * DAY);
    const pass = await archiveEndedRuns({ store: h.store, principal: null, repoId: REPO, nowMs: h.clock.now(), endedRunsAfterMs: DAY });
    expect(pass.archived).toEqual(["a"]);
    expect(await filesUnder(h, ARCHIVE_REF, "runs/a")).toEqual(files);
  });
});

describe("the host's retention", () => {
  it("moves a run ended through the runtime to the archive once the policy's time has passed, at a quiet check", async () => {
    const { createWorkflowHost } = await import("../../../src/host/host.js");
    const { createFakeClock } = await import("../../../src/testing/fake-clock.js");
    const { createManualTimers } = await import("../../helpers/manual-timers.js");
    const { createMemFs } = await import("../../helpers/memfs.js");
    const clock = createFakeClock(NOW);
    const passes: string[] = [];
    const warnings: string[] = [];
    const host = createWorkflowHost({
      dataDir: "/data",
      fs: createMemFs(),
      clock: clock.clock,
      timers: clock.timers,
      watch: false,
      lock: { timers: createManualTimers() },
      discoverEveryMs: DAY,
      retention: { endedRunsAfterMs: DAY, checkEveryMs: 12 * 60 * 60 * 1000, quietMs: 10 },
      logger: { info: () => undefined, warn: (m) => warnings.push(m), error: (m) => warnings.push(m) },
      onRetention: (repoId, result) => passes.push(`${repoId}:${result.archived.join(",")}`),
    });
    try {
      await host.start();
      await host.createDeployment(REPO);
      const runtime = host.runtime(REPO);
      await runtime.deliverSignal("r1", "go", {}, "s1");
      expect((await runtime.completeRun("r1", { ok: true })).committed).toBe(true);
      await runtime.deliverSignal("r2", "go", {}, "s2");
      for (let check = 0; check < 4 && passes.length === 0; check += 1) {
        await clock.advance(12 * 60 * 60 * 1000);
        // The check's store reads and its quiet wait take a few turns of the event loop (more
        // when the machine is busy: each read over the runs yields once its slice is used up).
        for (let i = 0; i < 2_000 && passes.length === 0; i += 1) {
          for (let j = 0; j < 10; j += 1) await new Promise((r) => setImmediate(r));
          await clock.advance(10);
        }
      }
      expect(passes).toEqual([`${REPO}:r1`]);
      const main = await host.store.openCommittedReads(null, RID, "refs/heads/main");
      expect((await main.listDir("runs")).map((e) => e.name)).toEqual(["r2"]);
      await expect(runtime.completeRun("r1")).rejects.toMatchObject({ code: "run_archived" });
      // The scheduler saw the retention commit as what it is, not as a rewrite.
      await host.scheduler.idle();
      expect(warnings).toEqual([]);
    } finally {
      await host.stop();
    }
  });
});

/** `n` ended runs (TimerSet, RunCompleted), pushed as git would, and one live run. */
async function aged(h: Harness, n: number): Promise<void> {
  const puts: Record<string, string> = {};
  for (let i = 0; i < n; i += 1) {
    const id = `r${String(i).padStart(5, "0")}`;
    puts[`runs/${id}/events/1.json`] = JSON.stringify({ seq: 1, type: "TimerSet", at: "2026-04-01T00:00:00.000Z", data: { timerId: "t", fireAt: "2026-04-02T00:00:00.000Z" } });
    puts[`runs/${id}/events/2.json`] = JSON.stringify({ seq: 2, type: "RunCompleted", at: "2026-04-01T00:00:00.000Z" });
  }
  await h.rawDelta(puts);
}

/** Waits until the scheduler's tail reached the tip: a timer set now is queued. */
async function tailed(h: Harness): Promise<void> {
  await h.append("zz-live", { type: "TimerSet", data: { timerId: "later", fireAt: "2026-06-01T00:00:00Z" } });
  for (let i = 0; i < 200 && !h.scheduler.queuedTimers().some((t) => t.runId === "zz-live"); i += 1) {
    await new Promise((r) => setImmediate(r));
    await h.scheduler.idle();
  }
  expect(h.scheduler.queuedTimers().map((t) => t.runId)).toContain("zz-live");
}

describe("a big retention pass", () => {
  it("the tail takes a retention commit in work that grows with the runs removed, not with their square", async () => {
    const h = await setup();
    const n = 400;
    await aged(h, n);
    await h.scheduler.start();
    await h.scheduler.idle();
    const pass = await archiveEndedRuns({ store: h.store, principal: null, repoId: REPO, nowMs: h.clock.now(), endedRunsAfterMs: DAY });
    expect(pass.archived).toHaveLength(n);
    // Path tests are the unit of the tail's per-path work: a scan of every removed path per
    // removed run makes n × 2n of them.
    const startsWith = vi.spyOn(String.prototype, "startsWith");
    try {
      await tailed(h);
      expect(startsWith.mock.calls.length).toBeLessThan(40 * n);
    } finally {
      startsWith.mockRestore();
    }
    expect(h.events.filter((e) => e.type === "bad_event")).toEqual([]);
  });

  it("the recovery index written at stop holds no row of the runs the tail saw leave for the archive", async () => {
    const h = await setup();
    await aged(h, 3);
    await h.append("live", { type: "TimerSet", data: { timerId: "t", fireAt: "2026-06-01T00:00:00Z" } });
    await h.scheduler.start();
    await h.scheduler.idle();
    expect((await archiveEndedRuns({ store: h.store, principal: null, repoId: REPO, nowMs: h.clock.now(), endedRunsAfterMs: DAY })).archived).toHaveLength(3);
    const tip = await h.store.resolveRef(null, RID, "refs/heads/main");
    await until(async () => {
      const served = await h.scheduler.servedPendingTimers(REPO);
      return served !== null && served !== "unsettled" && served.commitSha === tip;
    }, "the tail took the retention commit");
    expect(h.scheduler.stats().runs).toBe(1);
    await h.scheduler.stop();
    expect([...(await recoveryIndexOf(h.store)).keys()]).toEqual(["live"]);
  });

  it("a pass gives the event loop a turn between runs: its pause is awaited for each run it reads, copies and checks", async () => {
    const h = await setup();
    const n = 300;
    await aged(h, n);
    let pauses = 0;
    const pass = await archiveEndedRuns({
      store: h.store,
      principal: null,
      repoId: REPO,
      nowMs: h.clock.now(),
      endedRunsAfterMs: DAY,
      pause: () => {
        pauses += 1;
        return Promise.resolve();
      },
    });
    expect(pass.archived).toHaveLength(n);
    // Read, copied into the archive commit, checked against the archive: one pause each at least.
    expect(pauses).toBeGreaterThanOrEqual(3 * n);
  });

  it("removes at most 1,000 runs per retention commit by default (a commit holds the write queue), the rest in the next pass", async () => {
    const h = await setup();
    await aged(h, 1_100);
    const first = await archiveEndedRuns({ store: h.store, principal: null, repoId: REPO, nowMs: h.clock.now(), endedRunsAfterMs: DAY });
    expect([first.archived.length, first.remaining]).toEqual([1_000, 100]);
    const second = await archiveEndedRuns({ store: h.store, principal: null, repoId: REPO, nowMs: h.clock.now(), endedRunsAfterMs: DAY });
    expect([second.archived.length, second.remaining]).toEqual([100, 0]);
  });

  it("validating an archive commit and a retention commit awaits the writer's pause for each run", async () => {
    const h = await setup();
    const n = 200;
    await aged(h, n);
    const mainBefore = await h.store.resolveRef(null, RID, "refs/heads/main");
    const pass = await archiveEndedRuns({ store: h.store, principal: null, repoId: REPO, nowMs: h.clock.now(), endedRunsAfterMs: DAY });
    expect(pass.archived).toHaveLength(n);
    const at = (ref: string) => h.store.openCommittedReads(null, RID, ref);
    const archive = await at(ARCHIVE_REF);
    const paths = pass.archived.flatMap((id) => [`runs/${id}/events/1.json`, `runs/${id}/events/2.json`]);
    const kind = workflowRunKind();
    const validate = async (ref: string, prior: string | null, tip: string, status: "added" | "deleted"): Promise<number> => {
      let pauses = 0;
      await kind.validatePush?.({
        repoId: RID,
        ref,
        prior: prior === null ? null : await at(prior),
        prospective: await at(tip),
        changes: paths.map((path) => ({ path, oid: "0".repeat(40), status })),
        changedPathPrefixes: [...new Set(paths.map((p) => p.slice(0, p.lastIndexOf("/") + 1)))],
        readRef: async (other) => (other === ARCHIVE_REF ? archive : null),
        pause: () => {
          pauses += 1;
          return Promise.resolve();
        },
      });
      return pauses;
    };
    expect(await validate(ARCHIVE_REF, null, pass.archiveSha as string, "added")).toBeGreaterThanOrEqual(n);
    expect(await validate("refs/heads/main", mainBefore, pass.commitSha as string, "deleted")).toBeGreaterThanOrEqual(n);
  });
});

describe("an archived run id pushed again", () => {
  /** Run `old` ended, archived and removed from main; the scheduler tails main. */
  async function archivedOld(h: Harness): Promise<void> {
    await h.append("old", { type: "Started", at: NOW });
    await end(h, "old", "completed");
    await h.clock.advance(2 * DAY);
    expect((await archiveEndedRuns({ store: h.store, principal: null, repoId: REPO, nowMs: h.clock.now(), endedRunsAfterMs: DAY })).archived).toEqual(["old"]);
    await h.scheduler.start();
    await h.scheduler.idle();
  }

  /**
   * Moves the wall clock `ms` on without firing the running scheduler's timers: what the pass
   * judges is the wall clock. (`advance` would fire its discovery poll, every 2 s, 86,400 times
   * for two days, each let settle: 12 s of work on an idle machine, past the test's timeout under load.)
   */
  function laterByWallClock(h: Harness, ms: number): void {
    h.clock.jump(new Date(h.clock.now() + ms).toISOString());
  }

  const pushedTimer = { "runs/old/events/1.json": JSON.stringify({ seq: 1, type: "TimerSet", at: "2026-05-03T10:00:00.000Z", data: { timerId: "t", fireAt: "2026-05-03T10:05:00.000Z" } }) };

  const reusedReports = (h: Harness) =>
    h.events.filter((e) => e.type === "bad_event" && e.runId === "old" && (e.error as { code?: string; data?: { reason?: unknown } }).code === "event_invalid" && (e.error as { data?: { reason?: unknown } }).data?.reason === "run_archived");

  it("is reported by the tail as a bad event (run_archived) and its timers are not armed", async () => {
    const h = await setup();
    await archivedOld(h);
    await h.rawDelta(pushedTimer);
    await tailed(h);
    expect(reusedReports(h)).toHaveLength(1);
    expect(h.scheduler.queuedTimers().map((t) => t.runId)).not.toContain("old");
  });

  it("is reported by recovery and its timers are not armed", async () => {
    const h = await setup();
    await archivedOld(h);
    await h.rawDelta(pushedTimer);
    await h.restart();
    await tailed(h);
    expect(reusedReports(h).length).toBeGreaterThanOrEqual(1);
    expect(h.scheduler.queuedTimers().map((t) => t.runId)).not.toContain("old");
  });

  it("is left out of a retention pass once it ended, said so, and leaves no runs remaining", async () => {
    const h = await setup();
    await archivedOld(h);
    await h.rawDelta({ ...pushedTimer, "runs/old/events/2.json": JSON.stringify({ seq: 2, type: "RunCompleted", at: "2026-05-03T10:00:00.000Z" }) });
    laterByWallClock(h, 2 * DAY);
    const pass = await archiveEndedRuns({ store: h.store, principal: null, repoId: REPO, nowMs: h.clock.now(), endedRunsAfterMs: DAY });
    expect(pass).toMatchObject({ archived: [], remaining: 0, commitSha: null });
    expect(pass.skipped.map((s) => s.runId)).toEqual(["old"]);
  });

  it("is warned about by the retention loop once, not at every pass", async () => {
    const { createRetentionLoop } = await import("../../../src/host/retention.js");
    const h = await setup();
    await archivedOld(h);
    await h.rawDelta({ ...pushedTimer, "runs/old/events/2.json": JSON.stringify({ seq: 2, type: "RunCompleted", at: "2026-05-03T10:00:00.000Z" }) });
    laterByWallClock(h, 2 * DAY);
    const warnings: string[] = [];
    const loop = createRetentionLoop({
      store: h.store,
      principal: null,
      listDeployments: () => Promise.resolve([REPO]),
      clock: h.clock.clock,
      timers: h.clock.timers,
      logger: { info: () => undefined, warn: (m) => warnings.push(m), error: (m) => warnings.push(m) },
      policy: { endedRunsAfterMs: DAY },
    });
    try {
      for (let i = 0; i < 3; i += 1) expect((await loop.runPass(REPO)).skipped.map((s) => s.runId)).toEqual(["old"]);
      expect(warnings).toHaveLength(1);
    } finally {
      await loop.stop();
    }
  });

  it("is reported by check (event_invalid at runs/<runId>)", async () => {
    const { checkDeployments } = await import("../../../src/host/check-deployments.js");
    const h = await setup();
    await archivedOld(h);
    expect((await checkDeployments(h.store)).problems).toEqual([]);
    await h.rawDelta(pushedTimer);
    expect((await checkDeployments(h.store)).problems).toMatchObject([{ repoId: REPO, path: "runs/old", seq: null, code: "event_invalid" }]);
  });
});

describe("a warm start and the archive", () => {
  /** Run `old` archived, run `live` with a timer; started once (the recovery index written) and stopped. */
  async function indexed(h: Harness): Promise<void> {
    await h.append("old", { type: "Started", at: NOW });
    await end(h, "old", "completed");
    await h.append("live", { type: "TimerSet", data: { timerId: "t", fireAt: "2026-06-01T00:00:00.000Z" } });
    await h.clock.advance(2 * DAY);
    expect((await archiveEndedRuns({ store: h.store, principal: null, repoId: REPO, nowMs: h.clock.now(), endedRunsAfterMs: DAY })).archived).toEqual(["old"]);
    await h.scheduler.start();
    await h.scheduler.stop();
  }

  it("does not look restored runs up in the archive when the index was written against the same archive commit", async () => {
    const h = await setup();
    await indexed(h);
    const archive = await h.store.openCommittedReads(null, RID, ARCHIVE_REF);
    const looked: string[] = [];
    const treeOid = archive.treeOid.bind(archive);
    archive.treeOid = (path) => {
      looked.push(path);
      return treeOid(path);
    };
    const open = h.store.openCommittedReads.bind(h.store);
    vi.spyOn(h.store, "openCommittedReads").mockImplementation(async (principal, repoId, ref) => (ref === ARCHIVE_REF ? archive : open(principal, repoId, ref)));
    await h.restart();
    expect(looked).toEqual([]);
    expect(h.scheduler.queuedTimers().map((t) => t.runId)).toEqual(["live"]);
  });

  it("checks every restored run again once the archive moved: a live run's id the archive now holds with another folder is reported, not armed", async () => {
    const h = await setup();
    await indexed(h);
    const other = JSON.stringify({ seq: 1, type: "RunCompleted", at: NOW });
    await h.store.writeTreeDelta(null, RID, ARCHIVE_REF, { message: "pushed", computeDelta: () => ({ puts: new Map([["runs/live/events/1.json", new TextEncoder().encode(other)]]) }) });
    h.events.length = 0;
    await h.restart();
    expect(h.events.filter((e) => e.type === "bad_event" && e.runId === "live" && (e.error as { data?: { reason?: unknown } }).data?.reason === "run_archived")).toHaveLength(1);
    expect(h.scheduler.queuedTimers()).toEqual([]);
  });
});
