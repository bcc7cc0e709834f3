/**
 * Passes over every run (check, retention) on a long run: its log is streamed a chunk of blobs
 * at a time, never read whole into memory, with the same answers.
 */
import { afterEach, describe, expect, it } from "vitest";
import { archiveEndedRuns } from "../../../src/host/archive-ended-runs.js";
import { checkDeployments } from "../../../src/host/check-deployments.js";
import { compactRun } from "../../../src/host/compact-run.js";
import type { CommittedReads, RepoStore } from "../../../src/substrate/types.js";
import { buildFixtureRepo } from "../../../src/testing/fixture-repo.js";
import { createMemoryRepoStore, type MemoryRepoStore } from "../../../src/testing/memory-store.js";
import { DEFAULT_REF } from "../../../src/substrate/ref-name.js";
import { WORKFLOW_RUN_KIND } from "../../../src/workflow/workflow-run-kind.js";
import { countingReads } from "../../helpers/counting-reads.js";

let opened: MemoryRepoStore | null = null;
afterEach(async () => {
  await opened?.store.close();
  opened = null;
});

/** The most blobs asked for in one call. */
let largestBatch = 0;

function counting(reads: CommittedReads): CommittedReads {
  return countingReads(reads, {
    blobs: (count) => {
      largestBatch = Math.max(largestBatch, count);
    },
    treeBytes: false,
  });
}

const EVENTS = 900;

/** A store holding deployment `dep` with run `long` of {@link EVENTS} events (the last a RunCompleted), and the reads it opens counted. */
async function storeWithLongRun(marker: string): Promise<RepoStore> {
  opened = createMemoryRepoStore();
  const files: Record<string, object> = {};
  for (let seq = 1; seq < EVENTS; seq += 1) files[`runs/long/events/${seq}.json`] = { seq, type: "StepStarted", marker, at: "2026-01-01T00:00:00.000Z" };
  files[`runs/long/events/${EVENTS}.json`] = { seq: EVENTS, type: "RunCompleted", at: "2026-01-02T00:00:00.000Z" };
  await buildFixtureRepo(opened.store, "dep", files);
  const base = opened.store;
  const store = Object.create(base) as RepoStore;
  store.openCommittedReads = async (...args: Parameters<RepoStore["openCommittedReads"]>) => counting(await base.openCommittedReads(...args));
  store.writeTreeDelta = (p, repo, ref, opts) => base.writeTreeDelta(p, repo, ref, { ...opts, computeDelta: (parent, reads) => opts.computeDelta(parent, counting(reads)) });
  largestBatch = 0;
  return store;
}

describe("passes over a long run", () => {
  it("check streams the log a chunk of blobs at a time and counts its events", async () => {
    const store = await storeWithLongRun("check");
    const report = await checkDeployments(store, { repoId: "dep" });
    expect(report.repos.map((r) => [r.runs, r.events, r.problems])).toEqual([[1, EVENTS, 0]]);
    expect(largestBatch).toBeGreaterThan(0);
    expect(largestBatch).toBeLessThanOrEqual(256);
  });

  it("retention learns when a long run ended a chunk of blobs at a time, and archives it", async () => {
    const store = await storeWithLongRun("retention");
    const pass = await archiveEndedRuns({ store, principal: null, repoId: "dep", nowMs: Date.parse("2026-01-05T00:00:00.000Z"), endedRunsAfterMs: 2 * 86_400_000 });
    expect(pass.archived).toEqual(["long"]);
    expect(largestBatch).toBeLessThanOrEqual(256);
    // Ended 2026-01-02: not due before two days have passed.
    await opened?.store.close();
    const again = await storeWithLongRun("retention-2");
    const early = await archiveEndedRuns({ store: again, principal: null, repoId: "dep", nowMs: Date.parse("2026-01-03T00:00:00.000Z"), endedRunsAfterMs: 2 * 86_400_000 });
    expect(early.archived).toEqual([]);
  });

  it("compaction checks a long run's log a chunk of blobs at a time before sealing it", async () => {
    const store = await storeWithLongRun("compact");
    const sealed = await compactRun({ store, principal: null, repoId: "dep", runId: "long" });
    expect([sealed.committed, sealed.events]).toEqual([true, EVENTS]);
    expect(largestBatch).toBeLessThanOrEqual(256);
    const again = await compactRun({ store, principal: null, repoId: "dep", runId: "long" });
    expect([again.committed, again.events, again.bytes]).toEqual([false, EVENTS, sealed.bytes]);
  });
});

describe("retention's end time from the events that name one", () => {
  it("counts from the latest instant when the terminal event names none, and leaves live a run with an entry after its terminal event", async () => {
    opened = createMemoryRepoStore();
    await buildFixtureRepo(opened.store, "dep", {
      // Terminal without `at`, one event without an instant, one with: ended 2026-01-04.
      "runs/a/events/1.json": { seq: 1, type: "StepStarted", at: "2026-01-04T00:00:00.000Z" },
      "runs/a/events/2.json": { seq: 2, type: "StepStarted" },
      "runs/a/events/3.json": { seq: 3, type: "RunCompleted" },
      // No instant at all: due at once.
      "runs/b/events/1.json": { seq: 1, type: "StepStarted" },
      "runs/b/events/2.json": { seq: 2, type: "RunCompleted" },
      // Only a fire's firedAt.
      "runs/c/events/1.json": { seq: 1, type: "TimerSet", data: { timerId: "t", fireAt: "2026-01-04T00:00:00.000Z" } },
      "runs/c/events/2.json": { seq: 2, type: "TimerFired", data: { timerId: "t", firedAt: "2026-01-04T00:00:00.000Z" } },
      "runs/c/events/3.json": { seq: 3, type: "RunCompleted" },
      // Ended long ago, but a pushed entry follows the terminal event: the store would refuse its removal.
      "runs/d/events/1.json": { seq: 1, type: "StepStarted" },
      "runs/d/events/2.json": { seq: 2, type: "RunCompleted", at: "2025-01-01T00:00:00.000Z" },
      "runs/d/events/3.json": { seq: 3, type: "StepStarted" },
      // Sealed alone, its terminal without `at`.
      "runs/e/events.jsonl": '{"seq":1,"type":"StepStarted","at":"2026-01-04T00:00:00.000Z"}\n{"seq":2,"type":"RunCompleted"}\n',
    });
    const pass = await archiveEndedRuns({ store: opened.store, principal: null, repoId: "dep", nowMs: Date.parse("2026-01-05T00:00:00.000Z"), endedRunsAfterMs: 2 * 86_400_000 });
    expect(pass.archived).toEqual(["b"]);
    const later = await archiveEndedRuns({ store: opened.store, principal: null, repoId: "dep", nowMs: Date.parse("2026-01-07T00:00:00.000Z"), endedRunsAfterMs: 2 * 86_400_000 });
    expect(later.archived).toEqual(["a", "c", "e"]);
    expect((await (await opened.store.openCommittedReads(null, { kind: WORKFLOW_RUN_KIND, id: "dep" }, DEFAULT_REF)).listDir("runs")).map((e) => e.name)).toEqual(["d"]);
  });
});
