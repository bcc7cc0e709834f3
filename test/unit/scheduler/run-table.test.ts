import { describe, expect, it } from "vitest";
import { RowBase, RunTable, type RunRecord } from "../../../seams/scheduler/run-table.js";
import { decodeRecoveryIndex, RecoveryIndexWriter } from "../../../src/workflow/recovery-index.js";
import type { PendingTimer } from "../../../src/workflow/types.js";

const OID_A = "a".repeat(40);
const OID_B = "b".repeat(40);
const OID_C = "c".repeat(40);

function timer(timerId: string, extra: Partial<PendingTimer> = {}): PendingTimer {
  return { timerId, fireAt: "2026-05-01T01:00:00.000Z", setSeq: 3, ...extra };
}

function record(runId: string, timers: PendingTimer[], queued: string[], extra: Partial<RunRecord> = {}): RunRecord {
  return {
    state: { runId, lastSeq: 7, terminal: null, pendingTimers: new Map(timers.map((t) => [t.timerId, t])), observedSignalIds: new Set(), unconsumedSignals: [] },
    maxFileSeq: 8,
    eventsOid: OID_B,
    lastEventOid: OID_C,
    runTreeOid: OID_A,
    bad: 0,
    queued,
    ...extra,
  };
}

/** What the scheduler reads of a record (signal collections are not the scheduler's). */
function view(r: RunRecord | undefined): unknown {
  if (r === undefined) return undefined;
  return { ...r, state: { runId: r.state.runId, lastSeq: r.state.lastSeq, terminal: r.state.terminal, pendingTimers: [...r.state.pendingTimers] } };
}

describe("run table", () => {
  it("gives back, for a run kept as a row, the record it was made from, with the same timer objects", () => {
    const table = new RunTable();
    const timers = [timer("t1"), timer("t2", { cron: "0 * * * *", timezone: "UTC", pausedAt: "" }), timer("t3", { stepId: "s" })];
    const original = record("r1", timers, ["t3", "t1"]);
    const expected = view(original);
    table.compact("r1", original);
    expect(table.rows).toBe(1);
    expect(table.size).toBe(1);
    const back = table.get("r1");
    // Queued ids come back in the state's timer order (the order sync() queues them in).
    expect(view(back)).toEqual({ ...(expected as object), queued: ["t1", "t3"] });
    expect([...(back as RunRecord).state.pendingTimers.values()].every((t, i) => t === timers[i])).toBe(true);
    // Once asked for, the record is the run: changes to it stay.
    (back as RunRecord).maxFileSeq = 99;
    expect(table.get("r1")?.maxFileSeq).toBe(99);
    expect(table.rows).toBe(0);
  });

  it("keeps the queued ids of a run with more timers than a bit mask holds", () => {
    const table = new RunTable();
    const timers = Array.from({ length: 40 }, (_, i) => timer(`t${i}`));
    const queued = timers.filter((_, i) => i % 3 === 0).map((t) => t.timerId);
    table.compact("r1", record("r1", timers, queued));
    expect([...table.queuedTimers()]).toEqual([["r1", queued]]);
    expect(table.get("r1")?.queued).toEqual(queued);
  });

  it("keeps runs with bad events, reused ids or no tree oid as records", () => {
    const table = new RunTable();
    const bad = record("bad", [timer("t")], ["t"], { bad: 1 });
    const reused = record("reused", [timer("t")], [], { reused: true });
    const unknown = record("unknown", [timer("t")], ["t"], { runTreeOid: null });
    for (const r of [bad, reused, unknown]) {
      table.set(r.state.runId, r);
      table.compact(r.state.runId, r);
    }
    expect(table.rows).toBe(0);
    expect(table.get("bad")).toBe(bad);
    expect(table.get("reused")).toBe(reused);
    expect(table.get("unknown")).toBe(unknown);
  });

  it("summarises rows and records alike without turning rows into records, and forgets queued ids", () => {
    const table = new RunTable();
    table.compact("r1", record("r1", [timer("t")], ["t"], { eventsOid: null, lastEventOid: null }));
    table.set("r2", record("r2", [timer("u")], ["u"]));
    table.addRow("r3", `${OID_B}${OID_A}`, 40, `${"-".repeat(40)}${OID_B}`, 40, `${OID_A}${OID_C}`, 5, 4, "RunCompleted", [timer("x"), timer("v")], 1, 1, 0);
    expect(table.size).toBe(3);
    const writer = new RecoveryIndexWriter(1_000);
    table.writeSummaries(writer);
    const written = decodeRecoveryIndex(writer.bytes(), 1_000);
    expect(table.rows).toBe(2);
    expect(written?.get("r1")).toEqual({ runTreeOid: OID_A, eventsOid: null, lastEventOid: null, maxFileSeq: 8, lastSeq: 7, terminal: null, pendingTimers: [timer("t")] });
    expect(written?.get("r2")).toEqual({ runTreeOid: OID_A, eventsOid: OID_B, lastEventOid: OID_C, maxFileSeq: 8, lastSeq: 7, terminal: null, pendingTimers: [timer("u")] });
    expect(written?.get("r3")).toEqual({ runTreeOid: OID_A, eventsOid: OID_B, lastEventOid: OID_C, maxFileSeq: 5, lastSeq: 4, terminal: "RunCompleted", pendingTimers: [timer("v")] });
    expect(new Map(table.queuedTimers())).toEqual(new Map([["r1", ["t"]], ["r2", ["u"]], ["r3", []]]));
    table.clearQueued();
    expect([...table.queuedTimers()].flatMap(([, ids]) => ids)).toEqual([]);
    expect(table.get("r3")?.eventsOid).toBe(OID_B);
    expect(table.get("r3")?.lastEventOid).toBe(OID_C);
    expect([...table.keys()].sort()).toEqual(["r1", "r2", "r3"]);
    expect([...table.values()].map((r) => r.state.runId).sort()).toEqual(["r1", "r2", "r3"]);
    expect(table.rows).toBe(0);
    expect(table.delete("r1")).toBe(true);
    expect(table.has("r1")).toBe(false);
    expect(table.size).toBe(2);
  });
});

describe("the pending-timer walk", () => {
  it("visits every pending timer of runs not ended, rows and records alike, in steps, without turning rows into records", () => {
    const table = new RunTable();
    const paused = timer("p", { cron: "0 * * * *", timezone: "UTC", pausedAt: "" });
    table.compact("r-row", record("r-row", [timer("a"), paused], ["a"]));
    table.compact("r-ended", record("r-ended", [timer("x")], [], { state: { runId: "r-ended", lastSeq: 9, terminal: "RunCompleted", pendingTimers: new Map([["x", timer("x")]]), observedSignalIds: new Set(), unconsumedSignals: [] } }));
    table.set("r-record", record("r-record", [timer("b")], ["b"]));
    table.set("r-done", record("r-done", [timer("y")], [], { state: { runId: "r-done", lastSeq: 9, terminal: "RunFailed", pendingTimers: new Map([["y", timer("y")]]), observedSignalIds: new Set(), unconsumedSignals: [] } }));
    const before = table.changes;
    const seen: string[] = [];
    const step = table.pendingWalk();
    let steps = 0;
    while (!step(1, (runId, t) => seen.push(`${runId}/${t.timerId}`))) steps += 1;
    expect(seen.sort()).toEqual(["r-record/b", "r-row/a", "r-row/p"]);
    expect(steps).toBeGreaterThanOrEqual(3);
    expect(table.rows).toBe(2);
    expect(table.changes).toBe(before);
  });

  it("moves the change count when a row becomes a record, and when runs come and go", () => {
    const table = new RunTable();
    table.compact("r1", record("r1", [timer("a")], ["a"]));
    let at = table.changes;
    table.get("r1");
    expect(table.changes).not.toBe(at);
    at = table.changes;
    table.set("r2", record("r2", [], []));
    expect(table.changes).not.toBe(at);
    at = table.changes;
    table.delete("r2");
    expect(table.changes).not.toBe(at);
  });

  it("gives a fire the state of a run kept as a row without making a record, and takes the state after the fire into the row", () => {
    const table = new RunTable();
    const fired = timer("t1");
    table.compact("r1", record("r1", [fired], ["t1"]));
    table.compact("r2", record("r2", [timer("t2")], ["t2"]));
    const at = table.changes;
    const base = table.base("r1");
    expect(base).toBeInstanceOf(RowBase);
    expect(table.rows).toBe(2);
    expect(table.changes).toBe(at);
    const row = (base as RowBase).row;
    expect({ maxFileSeq: base?.maxFileSeq, eventsOid: base?.eventsOid, lastSeq: base?.state.lastSeq, timers: [...(base?.state.pendingTimers.values() ?? [])] }).toEqual({ maxFileSeq: 8, eventsOid: OID_B, lastSeq: 7, timers: [fired] });
    expect(table.rowEventsAt(row, OID_B)).toBe(true);
    expect(table.rowEventsAt(row, OID_C)).toBe(false);

    const after = { runId: "r1", lastSeq: 9, terminal: null, pendingTimers: new Map(), observedSignalIds: new Set<string>(), unconsumedSignals: [] };
    // Declined, the row untouched: a timer left, or no tree oid known.
    expect(table.adoptRow(row, { ...after, pendingTimers: new Map([["t9", timer("t9")]]) }, 9, OID_C, OID_A, OID_B)).toBeNull();
    expect(table.adoptRow(row, after, 9, OID_C, OID_A, null)).toBeNull();
    expect(table.adoptRow(row, after, 9, OID_C, null, OID_B)).toEqual(["t1"]);
    expect(table.rows).toBe(2);
    expect(table.rowEventsAt(row, OID_C)).toBe(true);
    expect(table.cleanAt("r1", OID_B)).toBe(true);
    expect([...table.queuedTimers()]).toEqual([["r1", []], ["r2", ["t2"]]]);
    // The record it stands for is the adopted one; the other row is as it was.
    expect(view(table.get("r1"))).toEqual(view(record("r1", [], [], { state: after, maxFileSeq: 9, eventsOid: OID_C, lastEventOid: null, runTreeOid: OID_B })));
    expect(view(table.get("r2"))).toEqual(view(record("r2", [timer("t2")], ["t2"])));
  });

  it("gives a fire the record of a run that has one", () => {
    const table = new RunTable();
    const held = record("r1", [timer("t1")], ["t1"]);
    table.set("r1", held);
    expect(table.base("r1")).toBe(held);
    expect(table.base("r2")).toBeUndefined();
  });
});
