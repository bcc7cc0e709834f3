/**
 * Heap cost of pending timers, in a fresh process run with `--expose-gc`:
 * `memory-child.ts ours|baseline <count>`.
 *
 * Both modes first build what the runs' state holds anyway — one run id and one
 * `PendingTimer` per timer, as the RunState reducer makes them — then measure what holding
 * them as pending timers adds:
 * - ours: the scheduler's queue (`createSchedulerQueue`, armed exactly as the repo tracker
 *   arms a run's timers);
 * - baseline: one node `setTimeout` per timer, its callback closing over the timer, plus a
 *   key → handle map so it can be cancelled (what the original code did).
 * Prints `{heapBytesPerTimer, arrayBufferBytesPerTimer, rssBytesPerTimer, runStateBytesPerTimer}`.
 */
import { createSystemTimers } from "../src/time/clock.js";
import type { PendingTimer } from "../src/workflow/types.js";
import { createSchedulerQueue, timerKey } from "../seams/scheduler/scheduler-queue.js";
import { BASE_MS } from "./bench-context.js";
import { runIdOf } from "./repo-generator.js";

const [mode, countText] = process.argv.slice(2);
const count = Number(countText);
const gc = (globalThis as { gc?: () => void }).gc;
if ((mode !== "ours" && mode !== "baseline") || !Number.isInteger(count) || count <= 0 || gc === undefined) {
  process.stderr.write("usage: node --expose-gc --import tsx memory-child.ts ours|baseline <count>\n");
  process.exit(2);
}

function settle(): NodeJS.MemoryUsage {
  for (let i = 0; i < 4; i++) gc?.();
  return process.memoryUsage();
}

const before = settle();
const repoId = "deployment-1";
const runIds: string[] = [];
const pending: PendingTimer[] = [];
for (let i = 0; i < count; i++) {
  runIds.push(runIdOf(i));
  // One timer per run, a week of fire times: the shape the reducer builds from a TimerSet.
  pending.push({ timerId: "wait-approval", fireAt: new Date(BASE_MS + (i % 604_800) * 1_000).toISOString(), setSeq: 7, stepId: "approve" });
}
const withRuns = settle();

let holder: unknown;
if (mode === "ours") {
  const queue = createSchedulerQueue({
    clock: () => new Date(BASE_MS - 86_400_000),
    timers: createSystemTimers({ unref: true }),
    onDue: () => undefined,
    onError: () => undefined,
  });
  for (let i = 0; i < count; i++) {
    const timer = pending[i] as PendingTimer;
    queue.arm(repoId, runIds[i] as string, timer, Date.parse(timer.fireAt));
  }
  holder = queue;
} else {
  const handles = new Map<string, NodeJS.Timeout>();
  const fire = (_repoId: string, _runId: string, _timer: PendingTimer): void => undefined;
  for (let i = 0; i < count; i++) {
    const runId = runIds[i] as string;
    const timer = pending[i] as PendingTimer;
    const handle = setTimeout(() => fire(repoId, runId, timer), Date.parse(timer.fireAt) - (BASE_MS - 86_400_000));
    handle.unref();
    handles.set(timerKey(repoId, runId, timer.timerId), handle);
  }
  holder = handles;
}
const after = settle();
const per = (a: number, b: number): number => (a - b) / count;
process.stdout.write(
  `${JSON.stringify({
    heapBytesPerTimer: per(after.heapUsed, withRuns.heapUsed),
    arrayBufferBytesPerTimer: per(after.arrayBuffers, withRuns.arrayBuffers),
    rssBytesPerTimer: per(after.rss, withRuns.rss),
    runStateBytesPerTimer: per(withRuns.heapUsed, before.heapUsed),
    held: holder === undefined ? 0 : count,
  })}\n`,
);
process.exit(0);
