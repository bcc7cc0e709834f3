/**
 * One burst in a fresh process, as a host process runs:
 * `burst-child.ts <dataDir> <repoId> <timers> <fsync|none> [maxBatch]`.
 * Starts a store and scheduler on the deployment while nothing is due (recovery arms every
 * timer), then moves the wall clock past every fireAt and times from that moment until the
 * last TimerFired is reported (committed). Prints one JSON line:
 * `{firesPerSec, fireMs, recoverMs, commits, commitMs: timings.wallMs, cpuMs, mainCpuMs, commitCpuMs: timings.cpuMs, maxLoopDelayMs}` where
 * `commitMs` lists the wall time of each fire commit (from one `fired` report's commit to the next's, the first from the clock
 * move) and `commitCpuMs` the process's CPU time over the same spans (less sensitive to other
 * jobs on a shared machine), so per-commit cost can be compared across deployment sizes. With
 * `BURST_CPU_PROFILE=<file>` set, the fire phase alone (clock move → last fire) is profiled
 * through the inspector and written there as a `.cpuprofile`.
 */
import { monitorEventLoopDelay } from "node:perf_hooks";
import { BASE_MS } from "./bench-context.js";
import { createOffsetClock, openRig } from "./scheduler-rig.js";
import { startPhaseProfile } from "./phase-profile.js";
import { CommitTimings, mainThreadCpuMs, nowMs, processCpuMs } from "./stats.js";

const [dataDir, repoId, timersArg, durability, maxBatchArg] = process.argv.slice(2);
const timers = Number(timersArg);
const maxBatch = maxBatchArg === undefined ? undefined : Number(maxBatchArg);
if (dataDir === undefined || repoId === undefined || !Number.isFinite(timers) || (durability !== "fsync" && durability !== "none") || (maxBatch !== undefined && !Number.isFinite(maxBatch))) {
  process.stderr.write("usage: burst-child.ts <dataDir> <repoId> <timers> <fsync|none> [maxBatch]\n");
  process.exit(2);
}

const clock = createOffsetClock(BASE_MS - 3_600_000 - Date.now());
let fired = 0;
const timings = new CommitTimings();
let done!: () => void;
const allFired = new Promise<void>((resolve) => {
  done = resolve;
});
const rig = openRig(
  dataDir,
  [repoId],
  clock.clock,
  (event) => {
    if (event.type !== "fired") return;
    timings.fired(event.commitSha);
    if (++fired === timers) done();
  },
  { maxArmMs: 20, ...(maxBatch === undefined ? {} : { maxBatch }) },
  { durability },
);
const r0 = nowMs();
await rig.scheduler.start();
const recoverMs = nowMs() - r0;
const stopCpuProfile = await startPhaseProfile("BURST_CPU_PROFILE");
// Every allocation sampled, also the ones collected since: where the fire phase's garbage comes from.
const stopHeapProfile = await startPhaseProfile("BURST_HEAP_PROFILE", "heap");
const loopDelay = monitorEventLoopDelay({ resolution: 1 });
loopDelay.enable();
const t0 = nowMs();
const main0 = mainThreadCpuMs();
const cpu0 = processCpuMs();
timings.start();
clock.offsetMs = BASE_MS + 3_600_000 - Date.now();
await allFired;
const fireMs = nowMs() - t0;
const cpuMs = processCpuMs() - cpu0;
const mainCpuMs = mainThreadCpuMs() - main0;
loopDelay.disable();
await stopCpuProfile();
await stopHeapProfile();
await rig.scheduler.idle();
const commits = rig.scheduler.stats().commits;
await rig.close();
process.stdout.write(`${JSON.stringify({ firesPerSec: (timers / fireMs) * 1_000, fireMs, recoverMs, commits, commitMs: timings.wallMs, cpuMs, mainCpuMs, commitCpuMs: timings.cpuMs, maxLoopDelayMs: loopDelay.max / 1e6 })}\n`);
