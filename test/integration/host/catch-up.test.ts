/**
 * Catch-up of very long downtime on real time and a real disk (issue 19, fault 3): a pushed,
 * schema-valid daily series armed in year 0001, and 200 runs of a daily series after three
 * years of downtime. The host must record each series' missed ticks in one correct
 * TimerSkipped, arm the next future tick, keep firing healthy timers and keep its lock, without
 * holding the event loop. The event loop's longest delay is measured and printed (the figure is
 * a benchmark, not asserted beyond a sanity bound that cannot flake).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { describe, expect, it } from "vitest";
import type { SchedulerEvent } from "../../../seams/scheduler/scheduler-types.js";
import { createWorkflowHost, type WorkflowHost } from "../../../src/host/host.js";
import { appendRunEvents } from "../../../src/workflow/run-log-append.js";
import type { RunLog } from "../../../src/workflow/run-log.js";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { readDeploymentLog } from "../reliability/deployment-log.js";
import { openGitPusher } from "../reliability/git-pusher.js";
import { pollFor } from "../reliability/serve-process.js";

const tempDir = useTempDirs("wfh-catchup-");
const REPO = "dep";
const DAY_MS = 86_400_000;

function dayNumber(iso: string): number {
  return Math.floor(Date.parse(iso) / DAY_MS);
}

interface SkippedData {
  readonly timerId: string;
  readonly firstMissed: string;
  readonly lastMissed: string;
  readonly count: number;
}

/** The run's TimerSkipped bodies and the fireAt of its armed series tick. */
function outcomeOf(log: RunLog | undefined, timerId: string): { skipped: SkippedData[]; fired: string[]; armedAt: string | undefined } {
  const events = log?.events ?? [];
  const skipped = events.filter((e) => e.type === "TimerSkipped").map((e) => (e as unknown as { data: SkippedData }).data);
  const fired = events.filter((e) => e.type === "TimerFired").map((e) => (e as unknown as { data: { scheduledFor: string } }).data.scheduledFor);
  return { skipped, fired, armedAt: log?.state.pendingTimers.get(timerId)?.fireAt };
}

/** A daily UTC series skipped in one record: count and range right, the next tick armed. */
function expectOneDailySkip(log: RunLog | undefined, timerId: string, fireAt: string): void {
  const { skipped, fired, armedAt } = outcomeOf(log, timerId);
  expect(skipped).toHaveLength(1);
  const skip = skipped[0] as SkippedData;
  expect(skip.firstMissed).toBe(fireAt);
  // Every midnight from fireAt to lastMissed, both included.
  expect(skip.count).toBe(dayNumber(skip.lastMissed) - dayNumber(fireAt) + 1);
  // The newest due midnight was missed too, unless the host happened to be within a second of it.
  const newest = fired.at(-1) ?? skip.lastMissed;
  expect(fired.length).toBeLessThanOrEqual(1);
  expect(new Date(Date.parse(newest) + DAY_MS).toISOString()).toBe(armedAt);
  expect(Date.parse(armedAt as string)).toBeGreaterThan(Date.now() - DAY_MS);
}

async function startHost(dataDir: string, events: SchedulerEvent[]): Promise<WorkflowHost> {
  const host = createWorkflowHost({ dataDir, watch: { pollMs: 100, chokidar: true }, onEvent: (e) => events.push(e) });
  await host.start();
  return host;
}

function holderOf(dataDir: string): { token: string; beat: number } {
  return JSON.parse(readFileSync(join(dataDir, "host.lock.json"), "utf8")) as { token: string; beat: number };
}

describe("catch-up after very long downtime", () => {
  it("records a pushed daily series armed in year 0001 in one TimerSkipped while healthy timers keep firing and the lock is kept", async () => {
    const dataDir = join(await tempDir(), "data");
    const events: SchedulerEvent[] = [];
    const host = await startHost(dataDir, events);
    const delay = monitorEventLoopDelay({ resolution: 10 });
    try {
      await host.createDeployment(REPO);
      const runtime = host.runtime(REPO);
      const token = holderOf(dataDir).token;
      // Healthy runs: one-shot timers due every 250 ms over the next ~5 s.
      const startMs = Date.now();
      const healthy: { runId: string; timerId: string }[] = [];
      for (let r = 0; r < 4; r++) {
        for (let i = 0; i < 5; i++) {
          const t = { runId: `healthy-${r}`, timerId: `t${i}` };
          await runtime.setTimer(t.runId, { timerId: t.timerId, fireAt: new Date(startMs + 1_500 + (i * 4 + r) * 250).toISOString() });
          healthy.push(t);
        }
      }
      delay.enable();
      // Pushed with git, as a runtime elsewhere would: schema-valid, and armed 2 025 years ago.
      const pusher = await openGitPusher(join(dataDir, "deployments", `${REPO}.git`));
      try {
        await pusher.push(
          [
            {
              path: "runs/ancient/events/1.json",
              bytes: JSON.stringify({ seq: 1, type: "TimerSet", data: { timerId: "daily", fireAt: "0001-01-01T00:00:00Z", cron: "0 0 * * *" } }),
            },
            {
              path: "runs/ancient-zoned/events/1.json",
              bytes: JSON.stringify({ seq: 1, type: "TimerSet", data: { timerId: "monthly", fireAt: "0000-03-01T00:00:00Z", cron: "30 2 1 * *", timezone: "America/New_York" } }),
            },
          ],
          "TimerSets armed in years 0000 and 0001",
        );
      } finally {
        await pusher.close();
      }
      await pollFor(
        () => (healthy.every((t) => events.some((e) => e.type === "fired" && e.runId === t.runId && e.timerId === t.timerId)) && events.filter((e) => e.type === "skipped").length >= 2 ? true : undefined),
        25_000,
        50,
        "healthy timers fired and both old series skipped",
      );
      delay.disable();
      const maxDelayMs = delay.max / 1e6;
      console.log(`[catch-up] year-0001 series beside healthy runs: event loop delay max ${maxDelayMs.toFixed(1)} ms, p99 ${(delay.percentile(99) / 1e6).toFixed(1)} ms`);

      const log = await readDeploymentLog(dataDir, REPO);
      expectOneDailySkip(log.runs.get("ancient"), "daily", "0001-01-01T00:00:00.000Z");
      const zoned = outcomeOf(log.runs.get("ancient-zoned"), "monthly");
      expect(zoned.skipped).toHaveLength(1);
      expect(zoned.skipped[0]?.firstMissed).toBe("0000-03-01T00:00:00.000Z");
      expect(Date.parse(zoned.armedAt as string)).toBeGreaterThan(Date.now());
      for (const t of healthy) {
        const fires = (log.runs.get(t.runId)?.events ?? []).filter((e) => e.type === "TimerFired" && (e as unknown as { data: { timerId: string } }).data.timerId === t.timerId);
        expect(fires, `${t.runId}/${t.timerId}`).toHaveLength(1);
      }
      // The lock stayed this host's, and its heartbeat kept going.
      expect(host.state).toBe("running");
      expect(holderOf(dataDir).token).toBe(token);
      expect(events.filter((e) => e.type === "commit_failed")).toEqual([]);
    } finally {
      delay.disable();
      await host.stop();
    }
  });

  it("records 200 runs of a daily series after three years of downtime in one TimerSkipped each, without holding the event loop", async () => {
    const dataDir = join(await tempDir(), "data");
    const fireAt = new Date(Math.floor((Date.now() - 3 * 365 * DAY_MS) / DAY_MS) * DAY_MS).toISOString();
    // Written while no host runs: the host was down for three years.
    const offline = createWorkflowHost({ dataDir, watch: false });
    await offline.createDeployment(REPO);
    const runIds = Array.from({ length: 200 }, (_, i) => `daily-${i}`);
    for (const runId of runIds) {
      await appendRunEvents({
        store: offline.store,
        principal: null,
        repoId: REPO,
        runId,
        message: `Set the daily series of ${runId}`,
        decide: () => ({ append: [{ type: "TimerSet", data: { timerId: "daily", fireAt, cron: "0 0 * * *" } }], result: undefined }),
      });
    }
    await offline.stop();

    const events: SchedulerEvent[] = [];
    const delay = monitorEventLoopDelay({ resolution: 10 });
    delay.enable();
    const host = await startHost(dataDir, events);
    try {
      await pollFor(() => (new Set(events.filter((e) => e.type === "skipped").map((e) => (e as { runId: string }).runId)).size === 200 ? true : undefined), 25_000, 50, "200 series skipped");
      delay.disable();
      const maxDelayMs = delay.max / 1e6;
      console.log(`[catch-up] 200 daily series after 3 years down: event loop delay max ${maxDelayMs.toFixed(1)} ms, p99 ${(delay.percentile(99) / 1e6).toFixed(1)} ms`);
      const log = await readDeploymentLog(dataDir, REPO);
      for (const runId of runIds) expectOneDailySkip(log.runs.get(runId), "daily", fireAt);
      expect(host.state).toBe("running");
    } finally {
      delay.disable();
      await host.stop();
    }
  });
});
