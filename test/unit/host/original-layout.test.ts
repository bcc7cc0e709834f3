/**
 * Deployments written by the original system (issue: drop-in for the original host): the run
 * folder layout (blobs/, grants.json, parts/, a sealed events.jsonl), top-level addresses/ and
 * agent-state/, and compaction. The fixture `fixtures/original-layout` is the unbroken case;
 * each row of the table breaks one rule of the layout in a copy of it, and recovery and
 * `checkDeployments` must each report exactly that one problem, while the live run's timers
 * stay armed. On memfs under a FakeClock; `rawWrite`/`rawDelta` commit as a `git push` does.
 */
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import type { SchedulerEvent } from "../../../seams/scheduler/scheduler-types.js";
import { compactRun } from "../../../src/host/compact-run.js";
import { createWorkflowHost } from "../../../src/host/host.js";
import { createFakeClock } from "../../../src/testing/fake-clock.js";
import { appendRunEvents } from "../../../src/workflow/run-log-append.js";
import { createManualTimers } from "../../helpers/manual-timers.js";
import { createMemFs } from "../../helpers/memfs.js";
import { checkDeployments } from "../../../src/host/check-deployments.js";
import { readFixtureFolder } from "../../../src/testing/fixture-repo.js";
import { foldEventFiles } from "../../../src/workflow/compacted-log.js";
import { readRunLog } from "../../../src/workflow/run-log.js";
import { subscribeKind, type KindEvent, type KindIssue } from "../../../src/workflow/subscribe-kind.js";
import { WORKFLOW_RUN_KIND } from "../../../src/workflow/workflow-run-kind.js";
import { createHarness, firedOf, REPO, type Harness } from "../scheduler/harness.js";

const FIXTURE = fileURLToPath(new URL("../../../fixtures/original-layout/", import.meta.url));
const NOW = "2026-05-01T10:45:00.000Z";
const RID = { kind: WORKFLOW_RUN_KIND, id: REPO };
const LIVE_BLOB = "runs/live-2/blobs/e1b518e3a338e16d0d0cf867f4df8ee1a53ad3c3702ba740f3527880602d0977";
const SEALED = "runs/sealed-1/events.jsonl";
const LIVE_TIMERS = ["live-2/hourly-sync@2026-05-01T11:00:00.000Z", "live-2/reminder@2026-05-01T11:15:00.000Z"];

const text = (bytes: Uint8Array): string => new TextDecoder().decode(bytes);
/** An ended run's whole log as one sealed file: a timer set, fired, then the run cancelled. */
const OLD_SEAL = [
  { seq: 0, type: "TimerSet", data: { timerId: "w", fireAt: "2026-04-30T09:00:00.000Z", cron: null, stepId: null } },
  { seq: 1, type: "TimerFired", data: { timerId: "w" } },
  { seq: 2, type: "RunCancelled" },
]
  .map((l) => `${JSON.stringify(l)}\n`)
  .join("");

let harness: Harness | null = null;

afterEach(async () => {
  await harness?.close();
  harness = null;
});

/** The fixture's files as text, by repo path. */
async function fixtureFiles(): Promise<Map<string, string>> {
  return new Map([...(await readFixtureFolder(FIXTURE))].map(([path, bytes]) => [path, text(bytes)]));
}

/** Lets the tail and the fire loop catch up (no wall time passes unless asked). */
async function settle(h: Harness, advanceMs = 0): Promise<void> {
  for (let i = 0; i < 20; i += 1) {
    await new Promise<void>((resolve) => setImmediate(resolve));
    await h.clock.advance(i === 0 ? advanceMs : 0);
    await h.scheduler.idle();
  }
}

function badReports(events: readonly SchedulerEvent[]): string[] {
  return events.flatMap((e) => (e.type === "bad_event" ? [`${e.path} ${e.error.code}`] : [])).sort();
}

function queued(h: Harness): string[] {
  return h.scheduler.queuedTimers().map((t) => `${t.runId}/${t.timerId}@${t.fireAt}`);
}

async function checkProblems(h: Harness): Promise<string[]> {
  return (await checkDeployments(h.store, { repoId: REPO })).problems.map((p) => `${p.path} ${p.code}`).sort();
}

/** A harness whose repo holds `files` in one pushed commit, then a started scheduler. */
async function deployed(files: ReadonlyMap<string, string>): Promise<Harness> {
  harness = await createHarness(NOW);
  await harness.rawWrite(Object.fromEntries(files));
  await harness.scheduler.start();
  await settle(harness);
  return harness;
}

const sealedLines = (files: ReadonlyMap<string, string>): string[] => (files.get(SEALED) ?? "").split("\n").slice(0, -1);

/** One rule broken in a copy of the fixture, and the one problem it must give. */
interface BrokenRule {
  readonly rule: string;
  readonly mutate: (files: Map<string, string>) => void;
  readonly problem: string;
  /** The live run's timers as queued afterwards (default: both, untouched). */
  readonly queued?: readonly string[];
}

const HEX = "ab".repeat(32);
const rules: BrokenRule[] = [
  {
    rule: "a blob's name is 64 lowercase hex characters (upper case)",
    mutate: (f) => f.set(`runs/live-2/blobs/${HEX.toUpperCase()}`, "x"),
    problem: `runs/live-2/blobs/${HEX.toUpperCase()} event_invalid`,
  },
  {
    rule: "a blob's name is 64 lowercase hex characters (63 of them)",
    mutate: (f) => f.set(`runs/live-2/blobs/${HEX.slice(1)}`, "x"),
    problem: `runs/live-2/blobs/${HEX.slice(1)} event_invalid`,
  },
  {
    rule: "a blob is a file, not a folder",
    mutate: (f) => f.set(`runs/live-2/blobs/${HEX}/inner`, "x"),
    problem: `runs/live-2/blobs/${HEX} event_invalid`,
  },
  {
    rule: "a run folder without a log holds only grants.json and parts/",
    mutate: (f) => f.set(`runs/pending-3/blobs/${HEX}`, "x"),
    problem: "runs/pending-3/blobs event_invalid",
  },
  {
    rule: "grants.json is a file",
    mutate: (f) => {
      f.delete("runs/live-2/grants.json");
      f.set("runs/live-2/grants.json/x", "{}");
    },
    problem: "runs/live-2/grants.json event_invalid",
  },
  {
    rule: "parts/ is a folder",
    mutate: (f) => {
      f.delete("runs/live-2/parts/invoice/0.json");
      f.set("runs/live-2/parts", "not a folder");
    },
    problem: "runs/live-2/parts event_invalid",
  },
  {
    rule: "nothing else lives in a run folder",
    mutate: (f) => f.set("runs/live-2/notes.txt", "hello"),
    problem: "runs/live-2/notes.txt event_invalid",
  },
  {
    rule: "the sealed log holds every event (one dropped)",
    mutate: (f) => {
      const lines = sealedLines(f);
      f.set(SEALED, [...lines.slice(0, 1), ...lines.slice(2)].map((l) => `${l}\n`).join(""));
    },
    problem: `${SEALED} event_invalid`,
  },
  {
    rule: "the sealed log keeps seq order (two swapped)",
    mutate: (f) => {
      const [a = "", b = "", ...rest] = sealedLines(f);
      f.set(SEALED, [b, a, ...rest].map((l) => `${l}\n`).join(""));
    },
    problem: `${SEALED} event_invalid`,
  },
  {
    rule: "the sealed log ends each event with \\n",
    mutate: (f) => f.set(SEALED, (f.get(SEALED) ?? "").trimEnd()),
    problem: `${SEALED} event_invalid`,
  },
  {
    rule: "only an ended run is sealed (a fold of the live run beside it)",
    mutate: (f) => f.set("runs/live-2/events.jsonl", [0, 1, 2].map((seq) => `${f.get(`runs/live-2/events/${seq}.json`) ?? ""}\n`).join("")),
    problem: "runs/live-2/events.jsonl event_invalid",
  },
  {
    rule: "a sealed log that stands alone is a whole ended log (a TimerSet, no terminal event)",
    mutate: (f) => f.set("runs/alone-5/events.jsonl", `${JSON.stringify({ seq: 1, type: "TimerSet", data: { timerId: "inside", fireAt: "2026-05-01T10:00:00.000Z" } })}\n`),
    problem: "runs/alone-5/events.jsonl event_invalid",
  },
];

describe("the original system's deployment layout", () => {
  it("recovers the fixture in the original's exact format with no bad events, and check reports nothing", async () => {
    const h = await deployed(await fixtureFiles());
    expect(badReports(h.events)).toEqual([]);
    expect(queued(h)).toEqual(LIVE_TIMERS);
    expect(await checkProblems(h)).toEqual([]);
    // The sealed run reads from its event files and its sealed log alike: ended, nothing armed.
    const reads = await h.store.openCommittedReads(null, RID, "main");
    const sealed = await readRunLog(reads, "sealed-1");
    expect(sealed.events.map((e) => e.seq)).toEqual([0, 1, 2, 3]);
    expect(sealed.state.terminal).toBe("RunCompleted");
    // null optional fields are read as absent.
    expect(h.scheduler.queuedTimers().map((t) => [t.timerId, t.cron ?? null, t.timezone ?? null])).toEqual([
      ["hourly-sync", "0 * * * *", "UTC"],
      ["reminder", null, null],
    ]);
  });

  for (const broken of rules) {
    it(`reports one problem when a copy breaks the rule: ${broken.rule}`, async () => {
      const files = await fixtureFiles();
      broken.mutate(files);
      const h = await deployed(files);
      expect(badReports(h.events)).toEqual([broken.problem]);
      expect(queued(h)).toEqual(broken.queued ?? LIVE_TIMERS);
      expect(await checkProblems(h)).toEqual([broken.problem]);
    });
  }

  it("keeps a live run with a bad sealed log beside it running: its timers fire and appends go on", async () => {
    const files = await fixtureFiles();
    files.set("runs/live-2/events.jsonl", [0, 1, 2].map((seq) => `${files.get(`runs/live-2/events/${seq}.json`) ?? ""}\n`).join(""));
    const h = await deployed(files);
    await h.append("live-2", { type: "StepDone" });
    await settle(h, 31 * 60_000);
    const log = await h.log("live-2");
    expect(firedOf(log).map((f) => f.scheduledFor)).toEqual(["2026-05-01T11:00:00.000Z", "2026-05-01T11:15:00.000Z"]);
    expect(h.events.filter((e) => e.type === "timer_rejected" || e.type === "commit_failed")).toEqual([]);
  });

  it("serves the original's files silently when they arrive after recovery, and reports a blob changed after it was written", async () => {
    const h = await deployed(await fixtureFiles());
    await h.rawWrite({ [`runs/live-2/blobs/${HEX}`]: "new blob", "runs/live-2/grants.json": '{"grants":["x"]}', "runs/live-2/parts/more.txt": "more", "agent-state/w2.json": "{}" });
    await settle(h);
    expect(badReports(h.events)).toEqual([]);
    await h.rawWrite({ [LIVE_BLOB]: "changed" });
    await settle(h);
    expect(badReports(h.events)).toEqual([`${LIVE_BLOB} event_invalid`]);
    expect(queued(h)).toEqual(LIVE_TIMERS);
  });

  it("refuses through the store what breaks the layout, and accepts the original's files", async () => {
    const h = await deployed(await fixtureFiles());
    const tip = await h.store.resolveRef(null, RID, "main");
    const refused = async (files: Record<string, string>, deletes: string[] = []): Promise<unknown> =>
      h.store.writeTreeDelta(null, RID, "main", { message: "x", computeDelta: () => ({ puts: files, deletes }) }).then(() => null, (e: unknown) => e);
    expect(await refused({ [LIVE_BLOB]: "changed" })).toMatchObject({ code: "event_invalid", data: { path: LIVE_BLOB } });
    expect(await refused({}, [LIVE_BLOB])).toMatchObject({ code: "event_invalid", data: { path: LIVE_BLOB } });
    expect(await refused({ [`runs/live-2/blobs/${HEX.toUpperCase()}`]: "x" })).toMatchObject({ code: "event_invalid" });
    expect(await refused({ [`runs/pending-3/blobs/${HEX}`]: "x" })).toMatchObject({ code: "event_invalid" });
    expect(await refused({ "runs/live-2/notes.txt": "x" })).toMatchObject({ code: "event_invalid" });
    expect(await refused({ [SEALED]: "{}\n" })).toMatchObject({ code: "event_invalid", data: { path: SEALED } });
    expect(await refused({}, [SEALED])).toMatchObject({ code: "event_invalid", data: { path: SEALED } });
    expect(await refused({ "runs/live-2/events.jsonl": `${(await fixtureFiles()).get("runs/live-2/events/0.json") ?? ""}\n` })).toMatchObject({ code: "event_invalid" });
    expect(await h.store.resolveRef(null, RID, "main")).toBe(tip);
    const accepted = await h.store.writeTree(null, RID, "main", {
      message: "original files",
      files: { [`runs/live-2/blobs/${HEX}`]: "b", "runs/live-2/grants.json": "{}", "runs/live-2/parts/p/q.bin": "p", "runs/pending-3/grants.json": "{}" },
    });
    expect(accepted.committed).toBe(true);
  });
});

describe("compactRun", () => {
  async function endedRun(h: Harness, runId: string): Promise<void> {
    await h.append(runId, { type: "TimerSet", data: { timerId: "t", fireAt: "2026-05-01T10:46:00.000Z", stepId: "s" } });
    await h.append(runId, { type: "StepDone", data: { note: "ünïcödé" } });
    await h.append(runId, { type: "RunCompleted" });
  }

  async function eventFileBytes(h: Harness, runId: string): Promise<Uint8Array[]> {
    const reads = await h.store.openCommittedReads(null, RID, "main");
    const out: Uint8Array[] = [];
    for (let seq = 1; ; seq += 1) {
      const bytes = await reads.readBlob(`runs/${runId}/events/${seq}.json`);
      if (bytes === null) return out;
      out.push(bytes);
    }
  }

  it("seals an ended run into the byte-exact events.jsonl, keeps its event files, and a second call commits nothing", async () => {
    harness = await createHarness(NOW);
    const h = harness;
    await endedRun(h, "done");
    const reads = await h.store.openCommittedReads(null, RID, "main");
    const before = await readRunLog(reads, "done");
    const files = await eventFileBytes(h, "done");
    const first = await compactRun({ store: h.store, principal: null, repoId: REPO, runId: "done" });
    expect(first).toMatchObject({ committed: true, path: "runs/done/events.jsonl", events: 3 });
    const after = await h.store.openCommittedReads(null, RID, "main");
    expect(await after.readBlob("runs/done/events.jsonl")).toEqual(foldEventFiles(files));
    expect(await eventFileBytes(h, "done")).toEqual(files);
    const sealed = await readRunLog(after, "done");
    expect(sealed.events).toEqual(before.events);
    expect(sealed.problems).toEqual([]);
    const second = await compactRun({ store: h.store, principal: null, repoId: REPO, runId: "done" });
    expect(second).toMatchObject({ committed: false, commitSha: first.commitSha });
    expect(await h.store.resolveRef(null, RID, "main")).toBe(first.commitSha);
    // Nothing may follow a sealed run.
    await expect(h.append("done", { type: "StepDone" })).rejects.toMatchObject({ code: "event_invalid" });
    // Recovery reads it with no problem.
    await h.scheduler.start();
    await settle(h);
    expect(badReports(h.events)).toEqual([]);
  });

  it("refuses a run that has not ended, or has no log, and commits nothing", async () => {
    harness = await createHarness(NOW);
    const h = harness;
    await h.append("live", { type: "TimerSet", data: { timerId: "t", fireAt: "2026-05-01T11:00:00.000Z" } });
    const tip = await h.store.resolveRef(null, RID, "main");
    await expect(compactRun({ store: h.store, principal: null, repoId: REPO, runId: "live" })).rejects.toMatchObject({ code: "event_invalid", data: { reason: "not_ended" } });
    await expect(compactRun({ store: h.store, principal: null, repoId: REPO, runId: "nobody" })).rejects.toMatchObject({ code: "event_invalid", data: { reason: "no_log" } });
    await expect(compactRun({ store: h.store, principal: null, repoId: REPO, runId: "../x" })).rejects.toMatchObject({ code: "id_invalid" });
    expect(await h.store.resolveRef(null, RID, "main")).toBe(tip);
  });

  it("refuses a seal that drops or reorders an event", async () => {
    harness = await createHarness(NOW);
    const h = harness;
    await endedRun(h, "done");
    const [a, b, c] = (await eventFileBytes(h, "done")) as [Uint8Array, Uint8Array, Uint8Array];
    const tip = await h.store.resolveRef(null, RID, "main");
    for (const parts of [[a, c], [b, a, c], [a, b, c, c]]) {
      const write = h.store.writeTree(null, RID, "main", { message: "bad seal", files: { "runs/done/events.jsonl": foldEventFiles(parts) } });
      await expect(write).rejects.toMatchObject({ code: "event_invalid", data: { path: "runs/done/events.jsonl" } });
    }
    expect(await h.store.resolveRef(null, RID, "main")).toBe(tip);
  });

  it("reads a run sealed with its event files removed exactly as before, and subscriptions replay every event once", async () => {
    harness = await createHarness(NOW);
    const h = harness;
    await endedRun(h, "done");
    const before = await readRunLog(await h.store.openCommittedReads(null, RID, "main"), "done");
    const files = await eventFileBytes(h, "done");
    await h.scheduler.start();
    await settle(h, 60_000);
    await h.rawDelta({ "runs/done/events.jsonl": foldEventFiles(files) }, ["runs/done/events"]);
    await settle(h);
    expect(badReports(h.events)).toEqual([]);
    const after = await readRunLog(await h.store.openCommittedReads(null, RID, "main"), "done");
    expect(after.events).toEqual(before.events);
    expect(after.state).toEqual(before.state);
    expect(after.problems).toEqual([]);
    // The store's validatePush accepts the same fold (the form docs/design.md §2 describes).
    await h.restart();
    await settle(h);
    expect(badReports(h.events)).toEqual([]);
    // A subscription from the root sees each event once, and no rewrite.
    const issues: KindIssue[] = [];
    const seen: KindEvent[] = [];
    const stop = new AbortController();
    const tip = await h.store.resolveRef(null, RID, "main");
    for await (const item of subscribeKind(h.store, null, RID, "main", undefined, {
      from: "genesis",
      signal: stop.signal,
      runId: "done",
      onIssue: (i) => issues.push(i),
      onCommit: (c) => {
        if (c.commitSha === tip) stop.abort();
      },
    })) {
      seen.push(item);
    }
    expect(seen.map((e) => e.seq)).toEqual([1, 2, 3]);
    expect(issues).toEqual([]);
  });

  it("replays the events of a sealed log pushed alone", async () => {
    harness = await createHarness(NOW);
    const h = harness;
    await h.rawWrite({ "runs/old/events.jsonl": OLD_SEAL });
    const tip = await h.store.resolveRef(null, RID, "main");
    const log = await readRunLog(await h.store.openCommittedReads(null, RID, "main"), "old");
    expect(log.state.terminal).toBe("RunCancelled");
    expect(log.problems).toEqual([]);
    const seen: number[] = [];
    const stop = new AbortController();
    for await (const item of subscribeKind(h.store, null, RID, "main", undefined, { from: "genesis", signal: stop.signal, onCommit: (c) => c.commitSha === tip && stop.abort() })) seen.push(item.seq);
    expect(seen).toEqual([0, 1, 2]);
    await expect(h.append("old", { type: "StepDone" })).rejects.toMatchObject({ code: "event_invalid" });
  });

  /** Pushes `runs/old/events.jsonl` alone (an ended run's whole log), then `change` as another push; what a subscriber from genesis gets. */
  async function subscribeAcrossSealChange(h: Harness, change: () => Promise<void>): Promise<{ seen: number[]; issues: KindIssue[] }> {
    await h.rawWrite({ "runs/old/events.jsonl": OLD_SEAL });
    await change();
    const tip = await h.store.resolveRef(null, RID, "main");
    const seen: number[] = [];
    const issues: KindIssue[] = [];
    const stop = new AbortController();
    for await (const item of subscribeKind(h.store, null, RID, "main", undefined, { from: "genesis", signal: stop.signal, onIssue: (i) => issues.push(i), onCommit: (c) => c.commitSha === tip && stop.abort() })) seen.push(item.seq);
    return { seen, issues };
  }

  it("reports a pushed edit of a sealed log that stood alone, and does not replay its events a second time", async () => {
    harness = await createHarness(NOW);
    const h = harness;
    const edited = [
      { seq: 0, type: "TimerSet", data: { timerId: "w", fireAt: "2026-04-30T10:00:00.000Z", cron: null, stepId: null } },
      { seq: 1, type: "TimerFired", data: { timerId: "w" } },
      { seq: 2, type: "RunCancelled" },
    ];
    const { seen, issues } = await subscribeAcrossSealChange(h, () => h.rawWrite({ [`runs/old/events.jsonl`]: edited.map((l) => `${JSON.stringify(l)}\n`).join("") }));
    expect(seen).toEqual([0, 1, 2]);
    expect(issues).toEqual([expect.objectContaining({ type: "log_rewritten", runId: "old", path: "runs/old/events.jsonl", status: "modified" })]);
  });

  it("reports a pushed removal of a sealed log that stood alone", async () => {
    harness = await createHarness(NOW);
    const h = harness;
    const { seen, issues } = await subscribeAcrossSealChange(h, () => h.rawDelta({ "runs/keep/events/0.json": JSON.stringify({ seq: 0, type: "StepDone" }) }, ["runs/old/events.jsonl"]));
    expect(seen).toEqual([0, 1, 2, 0]);
    expect(issues).toEqual([expect.objectContaining({ type: "log_rewritten", runId: "old", path: "runs/old/events.jsonl", status: "deleted" })]);
  });
});

describe("runtime.compactRun", () => {
  it("seals an ended run through the host's runtime, once", async () => {
    const clock = createFakeClock(NOW);
    const host = createWorkflowHost({ dataDir: "/data", fs: createMemFs(), clock: clock.clock, timers: clock.timers, watch: false, lock: { timers: createManualTimers() } });
    await host.start();
    try {
      await host.createDeployment("app");
      const runtime = host.runtime("app");
      await runtime.setTimer("r1", { timerId: "t", delayMs: 60_000 });
      await expect(runtime.compactRun("r1")).rejects.toMatchObject({ code: "event_invalid", data: { reason: "not_ended" } });
      await appendRunEvents({ store: host.store, principal: null, repoId: "app", runId: "r1", message: "end", decide: () => ({ append: [{ type: "RunCancelled" }], result: undefined }) });
      expect(await runtime.compactRun("r1")).toMatchObject({ committed: true, path: "runs/r1/events.jsonl", events: 2 });
      expect(await runtime.compactRun("r1")).toMatchObject({ committed: false });
    } finally {
      await host.stop();
    }
  });
});

describe("queuedTimers", () => {
  it("carries fireAtMs beside the richer fields", async () => {
    harness = await createHarness(NOW);
    const h = harness;
    await h.append("r1", { type: "TimerSet", data: { timerId: "t", fireAt: "2026-05-01T11:00:00.000Z" } });
    await h.scheduler.start();
    expect(h.scheduler.queuedTimers()).toEqual([
      { repoId: REPO, runId: "r1", timerId: "t", fireAt: "2026-05-01T11:00:00.000Z", fireAtMs: Date.parse("2026-05-01T11:00:00.000Z"), setSeq: 1 },
    ]);
  });
});
