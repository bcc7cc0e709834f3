/**
 * summarizeRunLog on a log that grows: a run that only gained events since its kept summary is
 * folded from where that summary stood, reading only the new blobs, with the same result as a
 * full fold; anything else folds it whole. The summary cache stays within its bounds.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { CommittedReads, Oid } from "../../../src/substrate/types.js";
import { memoryCommits } from "../../helpers/memory-commits.js";
import { type RunLogSummary, RunSummaryCache, summarizeRunLog } from "../../../src/workflow/run-log-summary.js";

/** Reads of a new commit holding `files` (each in a repo of its own, in one memory store). */
const commitOf = memoryCommits();

/** Reads that record the oids of the blobs read. */
function counting(reads: CommittedReads, read: Oid[]): CommittedReads {
  return {
    commitSha: reads.commitSha,
    listDir: (path) => reads.listDir(path),
    readBlob: (path) => reads.readBlob(path),
    readBlobByOid: async (oid) => {
      read.push(oid);
      return reads.readBlobByOid(oid);
    },
    readBlobsByOid: async (oids) => {
      read.push(...oids);
      return Promise.all(oids.map((oid) => reads.readBlobByOid(oid)));
    },
    treeOid: (path) => reads.treeOid(path),
  };
}

const tick = (n: number): string => new Date(Date.UTC(2026, 4, 1, 10, 5 * n)).toISOString();
const CRON = "*/5 * * * *";

/** One entry of a generated log: an event of some kind, a bad file, or no file (a gap). */
type Item =
  | { kind: "set" | "cancel" | "pause" | "resume"; timerId: string }
  | { kind: "fire"; timerId: string; slot: number }
  | { kind: "manual"; requestId: string }
  | { kind: "received" | "consumed"; signalId: string }
  | { kind: "other" | "bad" | "gap" }
  | { kind: "terminal"; type: "RunCompleted" | "RunFailed" | "RunCancelled" };

const timerId = fc.constantFrom("a", "c");
const item: fc.Arbitrary<Item> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constantFrom("set" as const, "cancel" as const, "pause" as const, "resume" as const), timerId }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("fire" as const), timerId, slot: fc.integer({ min: 0, max: 12 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("manual" as const), requestId: fc.constantFrom("r1", "r2") }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constantFrom("received" as const, "consumed" as const), signalId: fc.constantFrom("s1", "s2", "s3", "s4", "s5") }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constantFrom("other" as const, "bad" as const, "gap" as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("terminal" as const), type: fc.constantFrom("RunCompleted" as const, "RunFailed" as const, "RunCancelled" as const) }) },
);

/** The file of `it` at `seq` (null: none, a gap). */
function fileOf(it: Item, seq: number): string | object | null {
  switch (it.kind) {
    case "set":
      return it.timerId === "c" ? { seq, type: "TimerSet", data: { timerId: "c", fireAt: tick(0), cron: CRON } } : { seq, type: "TimerSet", data: { timerId: "a", fireAt: tick(3) } };
    case "cancel":
      return { seq, type: "TimerCancelled", data: { timerId: it.timerId } };
    case "pause":
      return { seq, type: "SchedulePaused", data: { timerId: it.timerId } };
    case "resume":
      return { seq, type: "ScheduleResumed", data: { timerId: it.timerId } };
    case "fire":
      return { seq, type: "TimerFired", data: { timerId: it.timerId, scheduledFor: tick(it.slot), firedAt: tick(it.slot) } };
    case "manual":
      return { seq, type: "TimerFired", data: { timerId: "c", manual: true, requestId: it.requestId, firedAt: tick(1) } };
    case "received":
      return { seq, type: "SignalReceived", signalName: "n", signalId: it.signalId, payload: { seq }, at: tick(0) };
    case "consumed":
      return { seq, type: "SignalConsumed", data: { signalId: it.signalId } };
    case "other":
      return { seq, type: "StepStarted", note: seq };
    case "bad":
      return '{"type":"TimerSet",}';
    case "gap":
      return null;
    case "terminal":
      return { seq, type: it.type };
  }
}

/** A copy of `summary` that later changes to it do not reach: plain data, errors as their code and message. */
function snapshot(summary: RunLogSummary): unknown {
  const reports = (list: RunLogSummary["bad"]): unknown[] => list.map((b) => ({ ...b, error: { code: b.error.code, message: b.error.message } }));
  const { state } = summary;
  const plain = { ...state, pendingTimers: [...state.pendingTimers], observedSignalIds: [...state.observedSignalIds] };
  return JSON.parse(JSON.stringify({ ...summary, bad: reports(summary.bad), problems: reports(summary.problems), state: plain }));
}

/** What happens between two summaries: events appended, or the log changed by hand. */
type Change =
  | { kind: "append"; count: number }
  | { kind: "rewrite"; at: number; item: Item }
  | { kind: "remove"; at: number }
  | { kind: "stray"; name: "note" | "1" | "1000.json" }
  | { kind: "unchanged" };

const change: fc.Arbitrary<Change> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ kind: fc.constant("append" as const), count: fc.integer({ min: 0, max: 8 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("rewrite" as const), at: fc.nat(), item }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("remove" as const), at: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("stray" as const), name: fc.constantFrom("note" as const, "1" as const, "1000.json" as const) }) },
  { weight: 1, arbitrary: fc.constant({ kind: "unchanged" as const }) },
);

describe("summarizeRunLog on a growing log", () => {
  it("gives at every step what a full fold gives, through appends and rewrites by hand", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(item, { maxLength: 40 }), fc.constantFrom(0, 1, 2), fc.array(change, { minLength: 1, maxLength: 7 }), fc.constantFrom(2, 1_000), async (items, first, changes, maxReports) => {
        const summaries = new RunSummaryCache();
        const files = new Map<string, string | object>();
        let next = 0;
        const earlier: [unknown, unknown][] = [];
        for (const step of changes) {
          if (step.kind === "append") {
            for (const it of items.slice(next, next + step.count)) {
              const file = fileOf(it, first + next);
              if (file !== null) files.set(`runs/r/events/${first + next}.json`, file);
              next += 1;
            }
          } else if (step.kind === "rewrite" && next > 0) {
            const seq = first + (step.at % next);
            const file = fileOf(step.item, seq);
            if (file === null) files.delete(`runs/r/events/${seq}.json`);
            else files.set(`runs/r/events/${seq}.json`, file);
          } else if (step.kind === "remove" && next > 0) {
            files.delete(`runs/r/events/${first + (step.at % next)}.json`);
          } else if (step.kind === "stray") {
            // A file that is not an event, or a folder: "1" sorts beside "1.json", "1000.json" is a seq above every append.
            files.set(step.name === "note" ? `runs/r/events/note-${files.size}.txt` : `runs/r/events/${step.name}/x`, "x");
          }
          files.set("runs/other/events/1.json", { seq: 1, type: "StepStarted" });
          const reads = await commitOf(Object.fromEntries(files));
          const kept = await summarizeRunLog(reads, "r", { parsedEvents: null, summaries, maxReports });
          const full = await summarizeRunLog(reads, "r", { parsedEvents: null, summaries: null, maxReports });
          expect(kept).toEqual(full);
          earlier.push([kept, snapshot(full)]);
        }
        // A summary handed out is never changed by a later fold continued from it.
        for (const [kept, full] of earlier) expect(snapshot(kept as RunLogSummary)).toEqual(full);
      }),
      { numRuns: 40 },
    );
  }, 120_000);

  it("reads only the appended events' blobs when the log only grew, and all of them after a rewrite", async () => {
    const files: Record<string, string | object> = {};
    for (let seq = 1; seq <= 300; seq += 1) files[`runs/r/events/${seq}.json`] = { seq, type: "StepStarted", n: seq };
    files["runs/r/events/2.json"] = { seq: 2, type: "SignalReceived", signalName: "go", signalId: "s-1", payload: null, at: tick(0) };
    // A folder "1" sorts after "1.json" in git's order, before it by name.
    files["runs/r/events/1/x"] = "x";
    const summaries = new RunSummaryCache();
    const read: Oid[] = [];
    await summarizeRunLog(counting(await commitOf(files), read), "r", { parsedEvents: null, summaries });
    expect(read).toHaveLength(300);

    read.length = 0;
    for (let seq = 301; seq <= 303; seq += 1) files[`runs/r/events/${seq}.json`] = { seq, type: "StepStarted", n: seq };
    files["runs/r/events/303.json"] = { seq: 303, type: "SignalConsumed", data: { signalId: "s-1" } };
    const grown = await commitOf(files);
    const summary = await summarizeRunLog(counting(grown, read), "r", { parsedEvents: null, summaries });
    expect(read).toHaveLength(3);
    expect([summary.eventCount, summary.state.lastSeq, summary.state.unconsumedSignals, summary.state.observedSignalIds.has("s-1")]).toEqual([303, 303, [], true]);
    expect(summary).toEqual(await summarizeRunLog(grown, "r", { parsedEvents: null, summaries: null }));

    read.length = 0;
    files["runs/r/events/7.json"] = { seq: 7, type: "StepStarted", n: "rewritten" };
    files["runs/r/events/304.json"] = { seq: 304, type: "StepStarted", n: 304 };
    await summarizeRunLog(counting(await commitOf(files), read), "r", { parsedEvents: null, summaries });
    expect(read).toHaveLength(304);
  });
});

describe("RunSummaryCache's bounds", () => {
  /** A run `id` of `n` events, each a signal with a payload of `payload` characters. */
  function signalRun(id: string, n: number, payload: number): Record<string, object> {
    const files: Record<string, object> = {};
    for (let seq = 1; seq <= n; seq += 1) {
      files[`runs/${id}/events/${seq}.json`] = { seq, type: "SignalReceived", signalName: "n", signalId: `${id}-${seq}`, payload: "p".repeat(payload), at: tick(0) };
    }
    return files;
  }

  it("keeps at most maxEntries runs", async () => {
    const summaries = new RunSummaryCache(2, 1024 * 1024);
    const reads = await commitOf({ ...signalRun("a", 2, 1), ...signalRun("b", 2, 1), ...signalRun("c", 2, 1) });
    for (const id of ["a", "b", "c"]) await summarizeRunLog(reads, id, { summaries });
    expect(summaries.size).toBe(2);
  });

  it("keeps at most maxBytes, counting the signals a state holds, and no summary heavier than that", async () => {
    const maxBytes = 64 * 1024;
    const summaries = new RunSummaryCache(100, maxBytes);
    // Each run's 20 unconsumed signals carry 1,000-character payloads: ~45 KB a summary.
    const reads = await commitOf({ ...signalRun("a", 20, 1_000), ...signalRun("b", 20, 1_000), ...signalRun("big", 60, 1_000) });
    for (const id of ["a", "b"]) {
      await summarizeRunLog(reads, id, { summaries });
      expect(summaries.bytes).toBeLessThanOrEqual(maxBytes);
    }
    expect(summaries.size).toBe(1);
    await summarizeRunLog(reads, "big", { summaries });
    expect([summaries.size, summaries.bytes <= maxBytes]).toEqual([1, true]);
  });
});

describe("summarizeRunLog's options", () => {
  it("refuses a maxReports that is not a whole number >= 0 with page_invalid, before reading", async () => {
    const reads = await commitOf({ "runs/r1/events/1.json": { seq: 1, type: "TimerSet", at: tick(0), data: { timerId: "a", fireAt: tick(1) } } });
    for (const maxReports of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      const code = await summarizeRunLog(reads, "r1", { maxReports, summaries: null }).then(
        () => "none",
        (error: unknown) => (error as { code?: string }).code,
      );
      expect(code).toBe("page_invalid");
    }
    expect((await summarizeRunLog(reads, "r1", { maxReports: 0, summaries: null })).eventCount).toBe(1);
  });
});

describe("the root's summary exports", () => {
  it("holds the default its options' docstrings name, beside the page's", async () => {
    const root = await import("../../../src/index.js");
    expect([root.DEFAULT_PAGE_EVENTS, root.MAX_PAGE_EVENTS, root.DEFAULT_MAX_REPORTS]).toEqual([100, 1_000, 1_000]);
  });
});
