import { afterEach, describe, expect, it } from "vitest";
import type { RepoStore } from "../../../src/substrate/types.js";
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

describe("recovery reads", () => {
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
