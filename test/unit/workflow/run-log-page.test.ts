/**
 * A run's log read a page at a time (readRunLogPage) and summarised without holding it
 * (summarizeRunLog): the same events, bad entries, problems and state as readRunLog, while a
 * page reads only its own blobs.
 */
import { afterEach, describe, expect, it } from "vitest";
import { isWorkflowHostError } from "../../../src/errors.js";
import { DEFAULT_REF } from "../../../src/substrate/ref-name.js";
import type { CommittedReads, Oid } from "../../../src/substrate/types.js";
import { buildFixtureRepo, type FixtureFiles } from "../../../src/testing/fixture-repo.js";
import { createMemoryRepoStore, type MemoryRepoStore } from "../../../src/testing/memory-store.js";
import { readRunLog, readRunLogPage, type RunLogPage, type RunLogPageOptions } from "../../../src/workflow/run-log.js";
import { summarizeRunLog } from "../../../src/workflow/run-log-summary.js";
import { WORKFLOW_RUN_KIND } from "../../../src/workflow/workflow-run-kind.js";

const REPO = { kind: WORKFLOW_RUN_KIND, id: "dep" };
const EVENTS = 5_000;
const BAD_SEQ = 2_500;

let opened: MemoryRepoStore | null = null;
afterEach(async () => {
  await opened?.store.close();
  opened = null;
});

const step = (seq: number): object => ({ seq, type: "StepDone", n: seq });
const timerSet = (seq: number, timerId: string): object => ({ seq, type: "TimerSet", data: { timerId, fireAt: "2026-06-01T00:00:00.000Z" } });

/** A deployment holding `files`, committed unvalidated in one commit (as a push would). */
async function repoWith(files: FixtureFiles): Promise<CommittedReads> {
  opened = createMemoryRepoStore();
  await buildFixtureRepo(opened.store, "dep", files);
  return opened.store.openCommittedReads(null, REPO, DEFAULT_REF);
}

/** Run `big`: seqs 1..5000, a TimerSet at 1, a signal at 2, a bad event at 2500. */
function bigRun(): FixtureFiles {
  const files: Record<string, string | object> = {};
  for (let seq = 1; seq <= EVENTS; seq += 1) files[`runs/big/events/${seq}.json`] = step(seq);
  files["runs/big/events/1.json"] = timerSet(1, "t1");
  files["runs/big/events/2.json"] = { seq: 2, type: "SignalReceived", signalName: "go", signalId: "s-1", payload: null, at: "2026-05-01T00:00:00.000Z" };
  files[`runs/big/events/${BAD_SEQ}.json`] = '{"type":"TimerSet",}';
  return files;
}

/** Every page from the start, with `options`. */
async function allPages(reads: CommittedReads, runId: string, options: RunLogPageOptions = {}): Promise<RunLogPage[]> {
  const pages: RunLogPage[] = [];
  let after: number | null = -1;
  while (after !== null) {
    const page: RunLogPage = await readRunLogPage(reads, runId, { ...options, after });
    pages.push(page);
    after = page.nextAfter;
    if (pages.length > EVENTS + 10) throw new Error("paging does not end");
  }
  return pages;
}

/** Reads that count which blobs are read, by oid. */
function countingReads(reads: CommittedReads): { reads: CommittedReads; read: Oid[]; batches: number[] } {
  const read: Oid[] = [];
  const batches: number[] = [];
  const wrapped: CommittedReads = {
    commitSha: reads.commitSha,
    listDir: (path) => reads.listDir(path),
    readBlob: async (path) => {
      read.push(`path:${path}`);
      return reads.readBlob(path);
    },
    readBlobByOid: async (oid) => {
      read.push(oid);
      batches.push(1);
      return reads.readBlobByOid(oid);
    },
    readBlobsByOid: async (oids) => {
      read.push(...oids);
      batches.push(oids.length);
      return Promise.all(oids.map((oid) => reads.readBlobByOid(oid)));
    },
    treeOid: (path) => reads.treeOid(path),
  };
  return { reads: wrapped, read, batches };
}

async function pageError(reads: CommittedReads, options: RunLogPageOptions): Promise<string> {
  try {
    await readRunLogPage(reads, "big", options);
    return "no error";
  } catch (error) {
    return isWorkflowHostError(error) ? error.code : String(error);
  }
}

describe("readRunLogPage", () => {
  it("pages through 5,000 events in seq order, reporting and skipping the bad one", async () => {
    const reads = await repoWith(bigRun());
    const pages = await allPages(reads, "big", { limit: 100, parsedEvents: null });
    expect(pages).toHaveLength(50);
    const seqs = pages.flatMap((p) => p.events.map((e) => e.seq));
    const expected = Array.from({ length: EVENTS }, (_, i) => i + 1).filter((s) => s !== BAD_SEQ);
    expect(seqs).toEqual(expected);
    expect(pages.flatMap((p) => p.bad.map((b) => [b.seq, b.error.code]))).toEqual([[BAD_SEQ, "event_invalid"]]);
    expect(pages.flatMap((p) => p.problems)).toEqual([]);
    // Every page but the last says where the next starts: its own last seq.
    expect(pages.slice(0, -1).map((p) => p.nextAfter)).toEqual(pages.slice(0, -1).map((_, i) => (i + 1) * 100));
    expect(pages.at(-1)?.nextAfter).toBeNull();
    // The same events readRunLog gives, byte for byte.
    expect(pages.flatMap((p) => p.events)).toEqual((await readRunLog(reads, "big", { parsedEvents: null })).events);
  });

  it("gives an empty last page for a cursor at or past the end", async () => {
    const reads = await repoWith(bigRun());
    for (const after of [EVENTS, EVENTS + 1, 10_000_000]) {
      const page = await readRunLogPage(reads, "big", { after });
      expect([page.events, page.bad, page.nextAfter]).toEqual([[], [], null]);
    }
    const last = await readRunLogPage(reads, "big", { after: EVENTS - 1 });
    expect([last.events.map((e) => e.seq), last.nextAfter]).toEqual([[EVENTS], null]);
    expect(await readRunLogPage(reads, "nope")).toMatchObject({ events: [], bad: [], nextAfter: null });
  });

  it("holds at most limit entries, at least one, and stops at the byte budget", async () => {
    const reads = await repoWith(bigRun());
    expect((await readRunLogPage(reads, "big", { limit: 1_000 })).events).toHaveLength(1_000);
    expect((await readRunLogPage(reads, "big", { limit: 1 })).events.map((e) => e.seq)).toEqual([1]);
    // The default page.
    expect((await readRunLogPage(reads, "big")).events).toHaveLength(100);
    // A budget of one byte: one event per page, still every event in order.
    const tiny = await readRunLogPage(reads, "big", { after: 10, limit: 50, maxBytes: 1 });
    expect([tiny.events.map((e) => e.seq), tiny.nextAfter]).toEqual([[11], 11]);
  });

  it("refuses a limit, cursor or budget out of range with page_invalid", async () => {
    const reads = await repoWith(bigRun());
    for (const options of [{ limit: 0 }, { limit: 1_001 }, { limit: 1.5 }, { limit: Number.NaN }, { after: -2 }, { after: 0.5 }, { maxBytes: 0 }]) {
      expect(await pageError(reads, options)).toBe("page_invalid");
    }
  });

  it("reads no event blob outside its page once the run's summary is kept", async () => {
    const base = await repoWith(bigRun());
    const oidOf = new Map((await base.listDir("runs/big/events")).map((e) => [e.name, e.oid]));
    // A page past the first entry asks the summary whether the run ended before it (the run's view folds it first).
    await summarizeRunLog(base, "big", { parsedEvents: null });
    const { reads, read } = countingReads(base);
    const page = await readRunLogPage(reads, "big", { after: 3_000, limit: 50, parsedEvents: null });
    expect(page.events.map((e) => e.seq)).toEqual(Array.from({ length: 50 }, (_, i) => 3_001 + i));
    const pageOids = new Set(Array.from({ length: 50 }, (_, i) => oidOf.get(`${3_001 + i}.json`)));
    expect(read.length).toBe(50);
    expect(read.every((oid) => pageOids.has(oid))).toBe(true);
  });

  it("fills a page past missing seqs and reports them, then stops at the terminal event", async () => {
    const reads = await repoWith({
      "runs/g/events/1.json": step(1),
      "runs/g/events/2.json": step(2),
      "runs/g/events/5.json": step(5),
      "runs/g/events/6.json": { seq: 6, type: "RunCompleted" },
      "runs/g/events/7.json": step(7),
      "runs/g/events/8.json": step(8),
    });
    const first = await readRunLogPage(reads, "g", { limit: 3 });
    expect([first.events.map((e) => e.seq), first.nextAfter]).toEqual([[1, 2, 5], 5]);
    expect(first.problems.map((p) => [p.seq, p.error.code])).toEqual([[3, "event_invalid"]]);
    const second = await readRunLogPage(reads, "g", { after: 5, limit: 3 });
    expect([second.events.map((e) => e.seq), second.nextAfter]).toEqual([[6], null]);
    expect(second.problems.map((p) => p.seq)).toEqual([7, 8]);
  });

  it("orders seqs spread far apart (a pushed log) numerically, not as the tree's text order", async () => {
    const reads = await repoWith({ "runs/w/events/1.json": step(1), "runs/w/events/10.json": step(10), "runs/w/events/2.json": step(2), "runs/w/events/1000000.json": step(1_000_000) });
    const pages = await allPages(reads, "w", { limit: 2 });
    expect(pages.map((p) => p.events.map((e) => e.seq))).toEqual([[1, 2], [10, 1_000_000]]);
    expect(pages.flatMap((p) => p.problems.map((x) => x.seq))).toEqual([3, 11]);
  });

  it("pages a run whose log is only its sealed events.jsonl", async () => {
    const lines = [step(1), step(2), step(3), { seq: 4, type: "RunCompleted" }].map((e) => `${JSON.stringify(e)}\n`).join("");
    const reads = await repoWith({ "runs/s/events.jsonl": lines });
    const pages = await allPages(reads, "s", { limit: 3 });
    expect(pages.map((p) => p.events.map((e) => e.seq))).toEqual([[1, 2, 3], [4]]);
  });
});

describe("summarizeRunLog", () => {
  it("tells what readRunLog tells but the events, for 5,000 events with a bad one", async () => {
    const reads = await repoWith(bigRun());
    const log = await readRunLog(reads, "big", { parsedEvents: null });
    const summary = await summarizeRunLog(reads, "big", { parsedEvents: null, summaries: null });
    expect(summary.eventCount).toBe(log.events.length);
    expect(summary.firstSeq).toBe(1);
    expect([summary.badCount, summary.problemCount, summary.maxFileSeq, summary.nextSeq]).toEqual([1, 0, EVENTS, EVENTS + 1]);
    expect(summary.bad).toEqual(log.bad);
    expect(summary.state).toEqual(log.state);
    expect([...summary.state.pendingTimers.keys()]).toEqual(["t1"]);
    expect(summary.state.unconsumedSignals.map((s) => s.signalId)).toEqual(["s-1"]);
  });

  it("reports the same problems as readRunLog for a log pushed with gaps, strays, late events and a bad sealed log", async () => {
    const reads = await repoWith({
      "runs/h/events/2.json": timerSet(2, "a"),
      "runs/h/events/3.json": "not json",
      "runs/h/events/6.json": { seq: 6, type: "SchedulePaused", data: { timerId: "a" } },
      "runs/h/events/7.json/1.json": step(1),
      "runs/h/events/8.json": { seq: 8, type: "RunFailed" },
      "runs/h/events/9.json": step(9),
      "runs/h/events/09.json": step(9),
      "runs/h/events.jsonl": "{}\n",
      "runs/h/notes.txt": "x",
    });
    const log = await readRunLog(reads, "h", { parsedEvents: null });
    const summary = await summarizeRunLog(reads, "h", { parsedEvents: null, summaries: null });
    const codes = (list: readonly { path: string; seq: number | null; error: { code: string; message: string } }[]) => list.map((b) => [b.path, b.seq, b.error.code, b.error.message]);
    expect(codes(summary.bad)).toEqual(codes(log.bad));
    expect(codes(summary.problems)).toEqual(codes(log.problems));
    expect(summary.state).toEqual(log.state);
    expect([summary.eventCount, summary.maxFileSeq, summary.nextSeq]).toEqual([log.events.length, log.maxFileSeq, log.nextSeq]);
  });

  it("folds a sealed log beside its files and alone as readRunLog does", async () => {
    const events = [timerSet(1, "a"), { seq: 2, type: "RunCompleted" }];
    const lines = events.map((e) => `${JSON.stringify(e)}\n`).join("");
    const reads = await repoWith({ "runs/a/events/1.json": JSON.stringify(events[0]), "runs/a/events/2.json": JSON.stringify(events[1]), "runs/a/events.jsonl": lines, "runs/b/events.jsonl": lines });
    for (const runId of ["a", "b"]) {
      const log = await readRunLog(reads, runId, { parsedEvents: null });
      const summary = await summarizeRunLog(reads, runId, { parsedEvents: null, summaries: null });
      expect([summary.problems, summary.state, summary.eventCount]).toEqual([log.problems, log.state, log.events.length]);
    }
  });
});

describe("summarizeRunLog's cache", () => {
  it("reads each blob once, and nothing but the run's tree oid again while the run is unchanged", async () => {
    const base = await repoWith(bigRun());
    const { reads, read, batches } = countingReads(base);
    const { RunSummaryCache } = await import("../../../src/workflow/run-log-summary.js");
    const summaries = new RunSummaryCache();
    const first = await summarizeRunLog(reads, "big", { parsedEvents: null, summaries });
    expect(new Set(read).size).toBe(EVENTS);
    expect(read).toHaveLength(EVENTS);
    // A chunk at a time: no call asks for more than 256 blobs, so no more are held at once.
    expect(Math.max(...batches)).toBeLessThanOrEqual(256);
    read.length = 0;
    expect(await summarizeRunLog(reads, "big", { parsedEvents: null, summaries })).toBe(first);
    expect(read).toEqual([]);
  });

  it("weighs a summary by what it holds, so its byte bound bounds the memory kept (a bad entry costs a sizeable error)", async () => {
    const files: Record<string, string | object> = {};
    for (let seq = 1; seq <= 1_000; seq += 1) files[`runs/bad/events/${seq}.json`] = `{"not json ${seq}`;
    const reads = await repoWith(files);
    const { RunSummaryCache } = await import("../../../src/workflow/run-log-summary.js");
    const summaries = new RunSummaryCache();
    const summary = await summarizeRunLog(reads, "bad", { parsedEvents: null, summaries });
    expect(summary.badCount).toBe(1_000);
    // 1,000 listed errors were measured at about 1.5 MB of heap: the estimate must not be far below.
    expect(summaries.bytes).toBeGreaterThanOrEqual(1_500_000);
  });

  it("keeps two runs with the same events apart: each names its own paths", async () => {
    const reads = await repoWith({ "runs/a/events/1.json": "x", "runs/b/events/1.json": "x" });
    const a = await summarizeRunLog(reads, "a");
    const b = await summarizeRunLog(reads, "b");
    expect([a.bad[0]?.path, b.bad[0]?.path, b.state.runId]).toEqual(["runs/a/events/1.json", "runs/b/events/1.json", "b"]);
  });
});
