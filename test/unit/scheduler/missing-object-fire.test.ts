/**
 * A fire batch that fails because one run's object is not in the repository, on an object the
 * scheduler's view does not know (so the run is found by bisecting the batch by run): the other
 * runs' timers are committed, and that run is reported (`commit_failed` with its `runId`) and
 * re-armed after `retryMaxMs`, not retried in a loop of quick retries. A failure that no run
 * explains (the deployment's `runs/` folder unreadable) is still retried whole with backoff.
 */
import { afterEach, describe, expect, it } from "vitest";
import { WorkflowHostError } from "../../../src/errors.js";
import type { RepoStore } from "../../../src/substrate/types.js";
import { afterPlan } from "../../helpers/after-plan.js";
import { createHarness, firedOf, type Harness } from "./harness.js";

const START = "2026-01-01T00:00:00.000Z";
const LOST = "9".repeat(40);

/** The store, whose fire commits fail as a lost object would while `failing(folders)` holds for the runs they append to. */
function losing(store: RepoStore, failing: (folders: readonly string[]) => boolean): RepoStore {
  return afterPlan(store, (delta) => {
    const folders = (delta?.appends ?? []).map((a) => a.folder);
    if (failing(folders)) throw new WorkflowHostError("object_corrupt", `git object ${LOST} cannot be read: missing (neither loose nor in a pack)`, { oid: LOST, reason: "missing", absent: true });
  });
}

let h: Harness | null = null;
afterEach(async () => {
  await h?.close();
  h = null;
});

describe("a fire batch that fails on one run's missing object", () => {
  it("commits the other runs' timers, found by bisecting by run, and retries that run after retryMaxMs", async () => {
    h = await createHarness(START);
    const runs = ["r-1", "r-2", "r-3", "r-4", "r-5"];
    for (const runId of runs) await h.append(runId, { type: "WorkflowStarted", data: { workflow: "w" } }, { type: "TimerSet", data: { timerId: "t", fireAt: "2026-01-01T00:01:00.000Z" } });
    const store = losing(h.store, (folders) => folders.includes("runs/r-3"));
    await h.restart({ repoStore: store, retryInitialMs: 500, retryMaxMs: 30_000 });
    await h.clock.advance(61_000);
    await h.scheduler.idle();
    for (const runId of ["r-1", "r-2", "r-4", "r-5"]) expect({ runId, fired: firedOf(await h.log(runId)).length }).toEqual({ runId, fired: 1 });
    expect(firedOf(await h.log("r-3"))).toEqual([]);
    const failed = h.events.filter((e) => e.type === "commit_failed");
    expect(failed.length).toBeGreaterThan(0);
    for (const f of failed) expect(f).toMatchObject({ runId: "r-3", timers: 1, retryInMs: 30_000, error: { code: "object_corrupt" } });
    // Failed at 00:01:00 (the fire's time): not retried before retryMaxMs, then retried (never dropped).
    const before = failed.length;
    await h.clock.advance(28_000);
    await h.scheduler.idle();
    expect(h.events.filter((e) => e.type === "commit_failed")).toHaveLength(before);
    await h.clock.advance(2_000);
    await h.scheduler.idle();
    expect(h.events.filter((e) => e.type === "commit_failed").length).toBeGreaterThan(before);
  });

  it("retries the whole batch with backoff when the deployment's runs/ folder cannot be read", async () => {
    h = await createHarness(START);
    for (const runId of ["r-1", "r-2"]) await h.append(runId, { type: "WorkflowStarted", data: { workflow: "w" } }, { type: "TimerSet", data: { timerId: "t", fireAt: "2026-01-01T00:01:00.000Z" } });
    const base = losing(h.store, () => true);
    // Every read of runs/ at the tip fails as a lost runs/ folder would.
    const store = new Proxy(base, {
      get(target, key, receiver) {
        if (key !== "openCommittedReads") return Reflect.get(target, key, receiver) as unknown;
        const open: RepoStore["openCommittedReads"] = async (...args) => {
          const reads = await target.openCommittedReads(...args);
          return { ...reads, listDir: async (path: string) => (path === "runs" && args[2] === "refs/heads/main" ? Promise.reject(new WorkflowHostError("object_corrupt", "lost", { oid: LOST, absent: true })) : reads.listDir(path)) };
        };
        return open;
      },
    });
    await h.restart({ repoStore: store, retryInitialMs: 500, retryMaxMs: 30_000 });
    await h.clock.advance(61_000);
    await h.scheduler.idle();
    const failed = h.events.filter((e) => e.type === "commit_failed");
    expect(failed.length).toBeGreaterThan(0);
    expect(failed[0]).toMatchObject({ timers: 2, retryInMs: 500 });
    expect(failed[0]).not.toHaveProperty("runId");
  });
});
