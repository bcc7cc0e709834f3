/**
 * A recovery reads uncompressed event blobs as views of the pack window they were checked in.
 * Here a deployment whose pack (written by the store: events stored uncompressed) is too big to be cached whole
 * (~8.5 MB of events under 1 KB each, so it is read in 1 MiB windows, several runs read ahead at once):
 * every run's timer is armed with the id and time its own events hold, and no event is bad, so
 * no view was read after its window's bytes changed or was kept across another window's read.
 */
import { readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { allowAll } from "../../../src/substrate/allow-all.js";
import { createRepoStore } from "../../../src/substrate/repo-store.js";
import { createFakeClock } from "../../../src/testing/index.js";
import { WORKFLOW_RUN_KIND, workflowRunKind } from "../../../src/workflow/workflow-run-kind.js";
import { makeScheduler } from "../../helpers/fixture-scheduler.js";
import { useTempDirs } from "../../helpers/temp-dir.js";

const tempDir = useTempDirs("wh-views-");
const RUNS = 3_000;
const PAD = 800;

const fireAtOf = (i: number): string => new Date(Date.UTC(2026, 1, 1) + i * 60_000).toISOString();

/** The deployment's files: four events a run, three padded (unique per run and event: no deltas). */
function deploymentFiles(): Record<string, string> {
  const files: Record<string, string> = {};
  for (let i = 0; i < RUNS; i++) {
    const run = `run-${String(i).padStart(4, "0")}`;
    const pad = (k: number): string => `${run}-${k}-`.repeat(Math.ceil(PAD / 12)).slice(0, PAD);
    files[`runs/${run}/events/1.json`] = JSON.stringify({ seq: 1, type: "WorkflowStarted", at: "2026-01-01T00:00:00.000Z", data: { workflow: "w", pad: pad(1) } });
    files[`runs/${run}/events/2.json`] = JSON.stringify({ seq: 2, type: "StepCompleted", at: "2026-01-01T00:00:01.000Z", data: { stepId: `s-${run}`, pad: pad(2) } });
    files[`runs/${run}/events/3.json`] = JSON.stringify({ seq: 3, type: "TimerSet", at: "2026-01-01T00:00:02.000Z", data: { timerId: `t-${run}`, fireAt: fireAtOf(i) } });
    files[`runs/${run}/events/4.json`] = JSON.stringify({ seq: 4, type: "StepCompleted", at: "2026-01-01T00:00:03.000Z", data: { stepId: `u-${run}`, pad: pad(4) } });
  }
  return files;
}

describe("event blobs read as views of many pack windows", () => {
  it("arms every run's own timer from an uncompressed pack read in windows", async () => {
    const dataDir = await tempDir();
    const writeClock = createFakeClock("2026-01-01T00:00:00.000Z");
    // Written by the store itself (small objects as one uncompressed block, one pack a commit).
    const writer = createRepoStore({ dataDir, kindHandlers: [{ kind: WORKFLOW_RUN_KIND, directoryPrefix: "deployments" }], authorize: allowAll, clock: writeClock.clock, watch: false });
    try {
      await writer.initRepo(null, { kind: WORKFLOW_RUN_KIND, id: "d" });
      await writer.writeTree(null, { kind: WORKFLOW_RUN_KIND, id: "d" }, "refs/heads/main", { files: deploymentFiles(), message: "runs" });
    } finally {
      await writer.close();
    }
    const packs = (await readdir(join(dataDir, "deployments", "d.git", "objects", "pack"))).filter((n) => n.endsWith(".pack"));
    const sizes = await Promise.all(packs.map(async (n) => (await stat(join(dataDir, "deployments", "d.git", "objects", "pack", n))).size));
    // Too big to be cached whole (8 MiB): read in windows.
    expect(Math.max(...sizes)).toBeGreaterThan(8 * 1024 * 1024);
    const clock = createFakeClock("2026-01-01T12:00:00.000Z");
    const store = createRepoStore({ dataDir, kindHandlers: [workflowRunKind()], authorize: allowAll, clock: clock.clock, watch: false });
    try {
      const { scheduler, events } = makeScheduler(store, clock, { recoveryIndex: false });
      await scheduler.start();
      try {
        expect(events.filter((e) => e.type === "bad_event")).toEqual([]);
        expect(events.filter((e) => e.type === "recovered")).toEqual([expect.objectContaining({ runs: RUNS, pending: RUNS, badEvents: 0 })]);
        const armed = scheduler.queuedTimers().map((t) => `${t.runId} ${t.timerId} ${t.fireAt}`).sort();
        expect(armed).toEqual(Array.from({ length: RUNS }, (_, i) => `run-${String(i).padStart(4, "0")} t-run-${String(i).padStart(4, "0")} ${fireAtOf(i)}`));
      } finally {
        await scheduler.stop();
      }
    } finally {
      await store.close();
    }
  }, 120_000);
});
