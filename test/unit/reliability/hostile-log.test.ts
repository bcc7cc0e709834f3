/**
 * Regression tests for faults the hostile-input suite found in how logs written by others
 * (`git push`, which skips validatePush) are read, tailed and appended to. Each is the smallest
 * log that showed the fault, on memfs under a FakeClock; `raw` commits skip validation exactly
 * as a push does.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { SchedulerEvent } from "../../../seams/scheduler/scheduler-types.js";
import { createWorkflowHostSignalChannel } from "../../../seams/signals/signal-channel.js";
import type { CommittedReads, DirEntry } from "../../../src/substrate/types.js";
import { readRunLog } from "../../../src/workflow/run-log.js";
import { appendRunEvents } from "../../../src/workflow/run-log-append.js";
import { createHarness, firedOf, type Harness } from "../scheduler/harness.js";

const START = "2026-05-01T10:00:00.000Z";
const DUE = "2026-05-01T10:00:01.000Z";
const timerSet = (seq: number, timerId: string, fireAt = DUE): string => JSON.stringify({ seq, type: "TimerSet", data: { timerId, fireAt } });

let harness: Harness | null = null;

afterEach(async () => {
  await harness?.close();
  harness = null;
});

async function started(): Promise<Harness> {
  harness = await createHarness(START);
  await harness.scheduler.start();
  return harness;
}

/** Lets the tail and the fire loop catch up with what was just committed (no wall time passes). */
async function settle(h: Harness, advanceMs = 0): Promise<void> {
  for (let i = 0; i < 20; i += 1) {
    await new Promise<void>((resolve) => setImmediate(resolve));
    await h.clock.advance(i === 0 ? advanceMs : 0);
    await h.scheduler.idle();
  }
}

function badReports(events: readonly SchedulerEvent[]): string[] {
  return events.flatMap((e) => (e.type === "bad_event" ? [`${e.path} ${e.error.code}`] : []));
}

describe("logs written by others", () => {
  it("appends after a folder named like an event file, so a valid timer before it still fires", async () => {
    // Found: the reader counted the folder's seq but validatePush did not, so every fire of the
    // run was refused (timer_rejected) and the valid timer never fired.
    const h = await started();
    await h.rawWrite({ "runs/r1/events/1.json": timerSet(1, "a"), "runs/r1/events/2.json/1.json": timerSet(1, "inner") });
    await settle(h, 1_000);
    expect(firedOf(await h.log("r1")).map((f) => f.seq)).toEqual([3]);
    expect(h.events.filter((e) => e.type === "timer_rejected")).toEqual([]);
    expect(badReports(h.events)).toContain("runs/r1/events/2.json event_invalid");
    // And another writer's append lands after it too.
    await appendRunEvents({ store: h.store, principal: null, repoId: "dep", runId: "r1", message: "step", decide: () => ({ append: [{ type: "StepDone" }], result: undefined }) });
    expect((await h.log("r1")).map((e) => e.seq)).toEqual([1, 3, 4]);
  });

  it("reports pushed entries that belong to no run, instead of failing the whole deployment", async () => {
    // Found: a run folder with an invalid name (or a file directly under runs/) threw id_invalid
    // in the tail, so the deployment failed (repo_failed) and was recovered from scratch, and
    // the entry itself was never reported.
    const h = await started();
    await h.rawWrite({
      "runs/bad run!/events/1.json": timerSet(1, "x"),
      "runs/NOTES.md": "notes",
      "runs/r2/notes.txt": "notes",
      "runs/r2/events/1.json": timerSet(1, "a"),
    });
    await settle(h, 1_000);
    expect(h.events.filter((e) => e.type === "repo_failed")).toEqual([]);
    expect(badReports(h.events).sort()).toEqual(["runs/NOTES.md event_invalid", "runs/bad run! id_invalid", "runs/r2/notes.txt event_invalid"]);
    expect(firedOf(await h.log("r2"))).toHaveLength(1);
    // Recovery reports the same entries.
    h.events.length = 0;
    await h.restart();
    expect(badReports(h.events).sort()).toEqual(["runs/NOTES.md event_invalid", "runs/bad run! id_invalid", "runs/r2/notes.txt event_invalid"]);
  });

  it("reports missing seqs but fires the timers around them, live and at recovery", async () => {
    // Found: a gap was accepted in silence (only `workflow-host check` saw it).
    const h = await started();
    await h.rawWrite({ "runs/r3/events/1.json": timerSet(1, "a"), "runs/r3/events/3.json": timerSet(3, "b") });
    await settle(h, 1_000);
    expect(badReports(h.events)).toEqual(["runs/r3/events/2.json event_invalid"]);
    expect(firedOf(await h.log("r3")).map((f) => f.seq)).toEqual([4, 5]);
    h.events.length = 0;
    await h.restart();
    expect(badReports(h.events)).toEqual(["runs/r3/events/2.json event_invalid"]);
  });

  it("skips and reports events after a terminal event, live and at recovery", async () => {
    // Found: skipped by the reducer but never reported.
    const h = await started();
    await h.rawWrite({ "runs/r4/events/1.json": JSON.stringify({ seq: 1, type: "RunCompleted" }) });
    await settle(h);
    await h.rawWrite({ "runs/r4/events/2.json": timerSet(2, "late") });
    await settle(h, 1_000);
    expect(badReports(h.events)).toEqual(["runs/r4/events/2.json event_invalid"]);
    expect(firedOf(await h.log("r4"))).toEqual([]);
    h.events.length = 0;
    await h.restart();
    await settle(h, 1_000);
    expect(badReports(h.events)).toEqual(["runs/r4/events/2.json event_invalid"]);
    expect(firedOf(await h.log("r4"))).toEqual([]);
  });

  it("reports an event file modified or deleted after it was written", async () => {
    // Found: the run was silently re-read; the rewrite of history went unnoticed.
    const h = await started();
    await h.rawWrite({ "runs/r5/events/1.json": timerSet(1, "a", "2099-01-01T00:00:00.000Z"), "runs/r5/events/2.json": JSON.stringify({ seq: 2, type: "StepDone" }) });
    await settle(h);
    await h.rawWrite({ "runs/r5/events/1.json": timerSet(1, "a", "2098-01-01T00:00:00.000Z") });
    await settle(h);
    expect(badReports(h.events)).toEqual(["runs/r5/events/1.json event_invalid"]);
    expect(h.scheduler.queuedTimers().map((t) => t.fireAt)).toEqual(["2098-01-01T00:00:00.000Z"]);
  });

  it("never hands a waiter a signal pushed after the run ended", async () => {
    // Found: the channel applied every event its feed delivered, even after RunCompleted.
    const h = await started();
    const channel = createWorkflowHostSignalChannel({ repoStore: h.store, principal: null, repoId: "dep", runId: "r6", clock: h.clock.clock });
    let handed: unknown = null;
    const waiting = channel.awaitNext("approve").then(
      (signal) => {
        handed = signal;
      },
      () => undefined,
    );
    await h.rawWrite({ "runs/r6/events/1.json": JSON.stringify({ seq: 1, type: "RunCompleted" }) });
    await settle(h);
    await h.rawWrite({ "runs/r6/events/2.json": JSON.stringify({ seq: 2, type: "SignalReceived", signalName: "approve", signalId: "late", payload: null, at: START }) });
    await settle(h);
    expect(handed).toBeNull();
    await channel.stop();
    await waiting;
    // A fresh read of the log does not offer it either.
    const fresh = await readRunLog(await h.store.openCommittedReads(null, { kind: "workflow-run", id: "dep" }, "main"), "r6");
    expect(fresh.state.unconsumedSignals).toEqual([]);
    expect(fresh.problems.map((p) => p.path)).toEqual(["runs/r6/events/2.json"]);
  });

  it("refuses to append to a run that ended, even when events follow its terminal event", async () => {
    // Found: validatePush only looks at the last event, so a log with a pushed event after its
    // terminal one took more appends (a signal delivery was committed to an ended run).
    const h = await started();
    await h.rawWrite({ "runs/r7/events/1.json": JSON.stringify({ seq: 1, type: "RunFailed" }), "runs/r7/events/2.json": JSON.stringify({ seq: 2, type: "StepDone" }) });
    const channel = createWorkflowHostSignalChannel({ repoStore: h.store, principal: null, repoId: "dep", runId: "r7", clock: h.clock.clock });
    await expect(channel.deliver("approve", { ok: true }, "s-1")).rejects.toMatchObject({ code: "event_invalid" });
    await channel.stop();
    expect((await h.log("r7")).map((e) => e.type)).toEqual(["RunFailed"]);
  });
});

describe("readRunLog on entries a git push can make", () => {
  /** Reads over one events folder whose entries are given as listed. */
  function readsOf(entries: readonly (DirEntry & { bytes: string })[]): CommittedReads {
    const byOid = new Map(entries.map((e) => [e.oid, Buffer.from(e.bytes)]));
    return {
      commitSha: null,
      listDir: async (path) => (path === "runs/r1/events" ? entries.map(({ bytes: _b, ...e }) => e) : path === "runs/r1" ? [{ name: "events", type: "tree", oid: "e".repeat(40) }] : []),
      readBlob: async () => null,
      readBlobByOid: async (oid) => byOid.get(oid) ?? new Uint8Array(),
      treeOid: async () => null,
    };
  }

  it("reports a symlink where an event should be and never reads its target as an event", async () => {
    // Found: a symlink whose target text was a valid TimerSet armed (and fired) that timer.
    const log = await readRunLog(
      readsOf([
        { name: "1.json", type: "blob", oid: "1".repeat(40), bytes: timerSet(1, "a") },
        { name: "2.json", type: "blob", oid: "2".repeat(40), mode: "120000", bytes: timerSet(2, "evil") },
      ]),
      "r1",
    );
    expect([...log.state.pendingTimers.keys()]).toEqual(["a"]);
    expect(log.bad.map((b) => [b.path, b.error.code])).toEqual([["runs/r1/events/2.json", "event_invalid"]]);
    expect(log.maxFileSeq).toBe(2);
  });
});
