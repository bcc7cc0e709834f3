/**
 * `readRunLog` over a store that lost one object (reported as the store reports it: an
 * `object_corrupt` error marked absent, see object-store.ts): a missing event blob is a bad event
 * at its seq, the other events fold; a missing `blobs/` folder or sealed log is a problem; a
 * missing run folder or `events/` folder throws `object_missing` naming that folder, by oid and
 * by path (the summary and a page the same); a missing `runs/` folder is not the run's to report
 * (thrown as the store raised it).
 */
import { describe, expect, it } from "vitest";
import { encode, folder } from "../../helpers/object-folders.js";
import { WorkflowHostError } from "../../../src/errors.js";
import { createCommittedReads, type ObjectSource } from "../../../src/substrate/committed-reads.js";
import { type GitObject, hashObject } from "../../../src/substrate/git-object.js";
import { decodeTree } from "../../../src/substrate/tree-object.js";
import type { Oid } from "../../../src/substrate/types.js";
import { isMissingRunObject, readRunLog, readRunLogPage } from "../../../src/workflow/run-log.js";
import { RunSummaryCache, summarizeRunLog } from "../../../src/workflow/run-log-summary.js";

const started = encode({ seq: 1, type: "WorkflowStarted", at: "2026-01-01T00:00:00.000Z", data: { workflow: "w" } });
const timerSet = (seq: number, timerId: string): Uint8Array => encode({ seq, type: "TimerSet", at: "2026-01-01T00:00:01.000Z", data: { timerId, fireAt: "2026-01-02T00:00:00.000Z" } });

const blobOid = (bytes: Uint8Array): Oid => hashObject("blob", bytes).oid;

/** What the object store throws for an object that is not there. */
const absent = (oid: Oid): WorkflowHostError => new WorkflowHostError("object_corrupt", `git object ${oid} cannot be read: missing (neither loose nor in a pack)`, { oid, reason: "missing", absent: true });

/** Objects as a store holds them, minus `lost`; `batch` adds a read of several blobs at once (which fails whole). */
function source(objects: Map<Oid, GitObject>, lost: ReadonlySet<Oid>, batch = false): ObjectSource {
  const get = (oid: Oid): GitObject => {
    const object = objects.get(oid);
    if (object === undefined || lost.has(oid)) throw absent(oid);
    return object;
  };
  const one: ObjectSource = {
    async readTree(oid) {
      return decodeTree(oid, get(oid).content);
    },
    async readBlob(oid) {
      return get(oid).content;
    },
  };
  if (!batch) return one;
  return { ...one, readBlobs: async (oids) => oids.map((oid) => get(oid).content) };
}

describe("readRunLog with an object missing", () => {
  for (const batch of [false, true]) {
    it(`reads a missing event blob as a bad event at its seq, naming its oid and path${batch ? " (blobs read in one call)" : ""}`, async () => {
      const objects = new Map<Oid, GitObject>();
      const lostEvent = timerSet(2, "lost");
      const events = folder(objects, { "1.json": started, "2.json": lostEvent, "3.json": timerSet(3, "kept") });
      const run = folder(objects, { events });
      const root = folder(objects, { runs: folder(objects, { r: run }) });
      const lost = blobOid(lostEvent);
      const reads = createCommittedReads(source(objects, new Set([lost]), batch), null, root);
      for (const options of [{}, { runTreeOid: run }]) {
        const log = await readRunLog(reads, "r", { parsedEvents: null, ...options });
        expect(log.bad).toEqual([expect.objectContaining({ runId: "r", seq: 2, path: "runs/r/events/2.json" })]);
        const error = log.bad[0]?.error as WorkflowHostError;
        expect(error.code).toBe("object_missing");
        expect(error.data).toMatchObject({ runId: "r", oid: lost, path: "runs/r/events/2.json" });
        expect(error.message).toContain(lost);
        expect([...log.state.pendingTimers.keys()]).toEqual(["kept"]);
        // The seq stays taken: nothing is ever appended over it.
        expect(log.maxFileSeq).toBe(3);
        expect(log.problems).toEqual([]);
      }
    });
  }

  it("summarizes and pages a run with a missing event blob (a bad event at its seq), and folds it whole once the blob is back", async () => {
    const objects = new Map<Oid, GitObject>();
    const lostEvent = timerSet(2, "lost");
    const events = folder(objects, { "1.json": started, "2.json": lostEvent, "3.json": timerSet(3, "kept") });
    const root = folder(objects, { runs: folder(objects, { r: folder(objects, { events }) }) });
    const lost = blobOid(lostEvent);
    for (const batch of [false, true]) {
      const damaged = await summarizeRunLog(createCommittedReads(source(objects, new Set([lost]), batch), null, root), "r");
      expect(damaged.bad.map((b) => [b.seq, b.path, b.error.code, b.error.data.oid])).toEqual([[2, "runs/r/events/2.json", "object_missing", lost]]);
      expect([...damaged.state.pendingTimers.keys()]).toEqual(["kept"]);
    }
    const page = await readRunLogPage(createCommittedReads(source(objects, new Set([lost])), null, root), "r", { parsedEvents: null });
    expect(page.bad.map((b) => [b.seq, b.error.code])).toEqual([[2, "object_missing"]]);
    expect(page.events.map((e) => e.seq)).toEqual([1, 3]);
    // Same tree, the blob restored: not answered from a kept summary of the damaged read.
    const whole = await summarizeRunLog(createCommittedReads(source(objects, new Set()), null, root), "r");
    expect(whole.bad).toEqual([]);
    expect([...whole.state.pendingTimers.keys()].sort()).toEqual(["kept", "lost"]);
  });

  it("reads a long log (read a slice at a time) with a missing blob the same way", async () => {
    const objects = new Map<Oid, GitObject>();
    const files: Record<string, Uint8Array> = { "1.json": started };
    for (let seq = 2; seq <= 2_500; seq++) files[`${seq}.json`] = timerSet(seq, `t${seq}`);
    const events = folder(objects, files);
    const root = folder(objects, { runs: folder(objects, { r: folder(objects, { events }) }) });
    const lost = blobOid(files["2100.json"] as Uint8Array);
    const log = await readRunLog(createCommittedReads(source(objects, new Set([lost]), true), null, root), "r", { parsedEvents: null });
    expect(log.bad.map((b) => [b.seq, b.error.code])).toEqual([[2100, "object_missing"]]);
    expect(log.state.pendingTimers.size).toBe(2_498);
  });

  it("reports a missing blobs/ folder or sealed log as a problem and reads the log", async () => {
    const objects = new Map<Oid, GitObject>();
    const events = folder(objects, { "1.json": started, "2.json": timerSet(2, "t") });
    const blobs = folder(objects, { ["a".repeat(64)]: encode("b") });
    const sealed = encode("sealed\n");
    const run = folder(objects, { events, blobs, "events.jsonl": sealed });
    const root = folder(objects, { runs: folder(objects, { r: run }) });
    const reads = createCommittedReads(source(objects, new Set([blobs, blobOid(sealed)])), null, root);
    for (const options of [{}, { runTreeOid: run }]) {
      const log = await readRunLog(reads, "r", { parsedEvents: null, ...options });
      expect(log.problems.map((p) => [p.path, p.error.code])).toEqual([
        ["runs/r/blobs", "object_missing"],
        ["runs/r/events.jsonl", "object_missing"],
      ]);
      expect([...log.state.pendingTimers.keys()]).toEqual(["t"]);
    }
  });

  it("throws object_missing naming the run folder or its events/ folder, by oid and by path", async () => {
    const objects = new Map<Oid, GitObject>();
    const events = folder(objects, { "1.json": started });
    const run = folder(objects, { events });
    const root = folder(objects, { runs: folder(objects, { r: run }) });
    for (const [lost, path] of [
      [run, "runs/r"],
      [events, "runs/r/events"],
    ] as const) {
      const reads = createCommittedReads(source(objects, new Set([lost])), null, root);
      for (const options of [{}, { runTreeOid: run }]) {
        const error = await readRunLog(reads, "r", { parsedEvents: null, ...options }).then(
          () => null,
          (e: unknown) => e,
        );
        expect(isMissingRunObject(error)).toBe(true);
        expect(error).toMatchObject({ code: "object_missing", data: { runId: "r", oid: lost, path } });
      }
    }
  });

  it("summarizes a run with a missing blobs/ folder or sealed log: a problem, named as the summary's unreadable part, not kept", async () => {
    const objects = new Map<Oid, GitObject>();
    const events = folder(objects, { "1.json": started, "2.json": timerSet(2, "t") });
    const blobs = folder(objects, { ["a".repeat(64)]: encode("b") });
    const sealed = encode("sealed\n");
    const root = folder(objects, { runs: folder(objects, { r: folder(objects, { events, blobs, "events.jsonl": sealed }) }) });
    const summaries = new RunSummaryCache();
    const summary = await summarizeRunLog(createCommittedReads(source(objects, new Set([blobs, blobOid(sealed)])), null, root), "r", { summaries });
    expect(summary.problems.map((p) => [p.path, p.error.code])).toEqual([
      ["runs/r/blobs", "object_missing"],
      ["runs/r/events.jsonl", "object_missing"],
    ]);
    expect(summary.unreadable).toMatchObject({ path: "runs/r/blobs", error: { code: "object_missing" } });
    expect([...summary.state.pendingTimers.keys()]).toEqual(["t"]);
    expect(summaries.size).toBe(0);
    // Whole again: nothing of the damaged read was kept.
    const whole = await summarizeRunLog(createCommittedReads(source(objects, new Set()), null, root), "r", { summaries });
    expect(whole.unreadable).toBeNull();
    expect(whole.problems.map((p) => p.path)).toEqual(["runs/r/events.jsonl"]);
  });

  it("summarizes and pages a run whose folder or events/ folder is missing: object_missing naming that folder, as readRunLog throws it", async () => {
    const objects = new Map<Oid, GitObject>();
    const events = folder(objects, { "1.json": started });
    const run = folder(objects, { events });
    const root = folder(objects, { runs: folder(objects, { r: run }) });
    for (const [lost, path] of [
      [run, "runs/r"],
      [events, "runs/r/events"],
    ] as const) {
      const reads = createCommittedReads(source(objects, new Set([lost])), null, root);
      for (const read of [() => summarizeRunLog(reads, "r", { summaries: null }), () => readRunLogPage(reads, "r")]) {
        const error = await read().then(
          () => null,
          (e: unknown) => e,
        );
        expect(isMissingRunObject(error)).toBe(true);
        expect(error).toMatchObject({ code: "object_missing", data: { runId: "r", oid: lost, path } });
      }
    }
  });

  it("throws the store's own error when the runs/ folder is missing: not one run's to report", async () => {
    const objects = new Map<Oid, GitObject>();
    const runs = folder(objects, { r: folder(objects, { events: folder(objects, { "1.json": started }) }) });
    const root = folder(objects, { runs });
    const reads = createCommittedReads(source(objects, new Set([runs])), null, root);
    await expect(readRunLog(reads, "r", { parsedEvents: null })).rejects.toMatchObject({ code: "object_corrupt", data: { oid: runs } });
  });
});
