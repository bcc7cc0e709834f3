import { afterEach, describe, expect, it } from "vitest";
import type { CommittedReads, RepoStore } from "../../../src/substrate/types.js";
import { ARCHIVE_REF } from "../../../src/workflow/run-archive.js";
import { createHarness, type Harness } from "./harness.js";

let h: Harness | undefined;

afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** Counts the store calls that look up `ref` (by any of its spellings), from now on. */
function countRefLookups(store: RepoStore, ref: string): { readonly count: number } {
  const counter = { count: 0 };
  const names = new Set([ref, ref.replace(/^refs\//, "")]);
  const resolveRef = store.resolveRef.bind(store);
  const openCommittedReads = store.openCommittedReads.bind(store);
  store.resolveRef = async (principal, repoId, name) => {
    if (names.has(name)) counter.count += 1;
    return resolveRef(principal, repoId, name);
  };
  store.openCommittedReads = async (principal, repoId, name) => {
    if (names.has(name)) counter.count += 1;
    return openCommittedReads(principal, repoId, name);
  };
  return counter;
}

/** Counts the paths below `runs/` that reads (and their scans) opened from now on look up or list. */
function countRunPathWalks(store: RepoStore): { readonly paths: string[] } {
  const counter = { paths: [] as string[] };
  const wrap = (reads: CommittedReads): CommittedReads => {
    const note = (path: string): void => {
      if (path.startsWith("runs/") && path.length > "runs/".length) counter.paths.push(path);
    };
    return {
      ...reads,
      listDir: (path) => {
        note(path);
        return reads.listDir(path);
      },
      treeOid: (path) => {
        note(path);
        return reads.treeOid(path);
      },
      ...(reads.scan === undefined ? {} : { scan: () => wrap((reads.scan as () => CommittedReads)()) }),
    };
  };
  const openCommittedReads = store.openCommittedReads.bind(store);
  store.openCommittedReads = async (principal, repoId, name) => wrap(await openCommittedReads(principal, repoId, name));
  return counter;
}

describe("recovery reads", () => {
  it("reads each run's folders by the oids the listing of runs/ gave, finding no path below runs/ from the root", async () => {
    h = await createHarness("2026-05-01T00:00:00.000Z");
    const runs = 5;
    for (let i = 0; i < runs; i++) {
      await h.append(`r${i}`, { type: "TimerSet", data: { timerId: "t", fireAt: "2026-05-02T00:00:00.000Z" } });
      await h.append(`r${i}`, { type: "StepCompleted", data: { stepId: "s", output: { i } } });
    }
    const walks = countRunPathWalks(h.store);
    // Cold: no recovery index yet, so every run's log is read.
    await h.scheduler.start();
    expect(h.scheduler.queuedTimers()).toHaveLength(runs);
    // Before: three per run (runs/<id>, runs/<id>/events listed, runs/<id>/events looked up).
    expect(walks.paths).toEqual([]);
  });


  it("looks the archive ref up once per recovery, not once per run, when the deployment has no archive", async () => {
    h = await createHarness("2026-05-01T00:00:00.000Z");
    const runs = 12;
    for (let i = 0; i < runs; i++) await h.append(`r${i}`, { type: "TimerSet", data: { timerId: "t", fireAt: "2026-05-02T00:00:00.000Z" } });
    const lookups = countRefLookups(h.store, ARCHIVE_REF);
    // Cold: no recovery index yet, so every run's log is read.
    await h.scheduler.start();
    expect(h.scheduler.queuedTimers()).toHaveLength(runs);
    expect(lookups.count).toBe(1);
  });
});
