/**
 * One burst in a fresh process, as a host process runs:
 * `burst-child.ts <dataDir> <repoId> <timers> <fsync|none> [maxBatch|-] [--warm <n>]`.
 * Starts a store and scheduler on the deployment while nothing is due (recovery arms every
 * timer), then sets the wall clock so that the instant every measured timer is due at (`BASE_MS`,
 * peer.ts burstSpec) comes 100 ms later in real time, and times from that instant until the last
 * TimerFired is reported (committed).
 *
 * With `--warm <n>` the host is warmed first: the deployment also holds `n` timers due before
 * `BASE_MS` − 20 min (peer.ts `warmBurstSpec`: a second timer per run, due 30 min before the
 * measured one); the clock first moves to `BASE_MS` − 20 min, those `n` fire as a burst of their
 * own (untimed), the scheduler settles, and only then is the measured burst made due. The fire
 * path's code is then compiled and its caches sized, as in a host that has been firing: the
 * figure is the steady state, where the plain run (a fresh process) also pays V8's optimising
 * compiler for the fire path (~0.8 s of CPU, design notes §36). Prints one JSON line:
 * `{firesPerSec, fireMs, recoverMs, [warmup, warmMs,] commits, commitMs: timings.wallMs, cpuMs, mainCpuMs, commitCpuMs: timings.cpuMs, maxLoopDelayMs}`
 * (every figure but `warmMs` is the measured burst's alone) where
 * `commitMs` lists the wall time of each fire commit (from one `fired` report's commit to the next's, the first from the clock
 * move) and `commitCpuMs` the process's CPU time over the same spans (less sensitive to other
 * jobs on a shared machine), so per-commit cost can be compared across deployment sizes. With
 * `BURST_CPU_PROFILE=<file>` set, the fire phase alone (clock move → last fire) is profiled
 * through the inspector and written there as a `.cpuprofile`; with `BURST_TIMELINE=<file>`, a
 * per-commit timeline of it (lateness-timeline.ts: cut, plan, pack and ref steps, flushes, GC)
 * is written there.
 */
import { monitorEventLoopDelay } from "node:perf_hooks";
import { BASE_MS } from "./bench-context.js";
import { createOffsetClock, openRig } from "./scheduler-rig.js";
import { startPhaseProfile } from "./phase-profile.js";
import { CommitTimings, mainThreadCpuMs, nowMs, processCpuMs } from "./stats.js";
import { startTimeline } from "./lateness-timeline.js";

const args = process.argv.slice(2);
const warmAt = args.indexOf("--warm");
const warmup = warmAt < 0 ? 0 : Number(args[warmAt + 1]);
if (warmAt >= 0) args.splice(warmAt, 2);
const [dataDir, repoId, timersArg, durability, maxBatchArg] = args;
const timers = Number(timersArg);
const maxBatch = maxBatchArg === undefined || maxBatchArg === "-" ? undefined : Number(maxBatchArg);
if (dataDir === undefined || repoId === undefined || !Number.isFinite(timers) || (durability !== "fsync" && durability !== "none") || (maxBatch !== undefined && !Number.isFinite(maxBatch)) || !Number.isInteger(warmup) || warmup < 0) {
  process.stderr.write("usage: burst-child.ts <dataDir> <repoId> <timers> <fsync|none> [maxBatch|-] [--warm <n>]\n");
  process.exit(2);
}
/** How far ahead (ms of real time) the measured burst's due instant is set when its phase starts. */
const DUE_LEAD_MS = 100;
/** Where the warm-up burst's timers are all due and the measured burst's not yet (see the module comment). */
const WARM_CLOCK_MS = BASE_MS - 1_200_000;

const clock = createOffsetClock(BASE_MS - 3_600_000 - Date.now());
const timelineFile = process.env.BURST_TIMELINE;
const timeline = timelineFile === undefined || timelineFile === "" ? undefined : startTimeline();
let fired = 0;
/** Fires the phase under way (warm-up, then the measured burst) waits for. */
let expected = warmup > 0 ? warmup : timers;
const timings = new CommitTimings();
let done!: () => void;
let phaseDone = new Promise<void>((resolve) => {
  done = resolve;
});
let measuring = warmup === 0;
const rig = openRig(
  dataDir,
  [repoId],
  clock.clock,
  (event) => {
    if (event.type !== "fired") return;
    if (measuring) timings.fired(event.commitSha);
    if (measuring) timeline?.fired(Date.parse(event.scheduledFor), clock.nowMs(), event.commitSha);
    if (++fired === expected) done();
  },
  { maxArmMs: 20, ...(maxBatch === undefined ? {} : { maxBatch }), ...(timeline === undefined ? {} : { timers: timeline.timers }) },
  { durability },
);
timeline?.wrapStore(rig.store);
const r0 = nowMs();
await rig.scheduler.start();
const recoverMs = nowMs() - r0;
let warmMs: number | undefined;
let warmCommits = 0;
if (warmup > 0) {
  // The earlier burst, untimed: same process, same deployment, its own timers.
  const w0 = nowMs();
  clock.offsetMs = WARM_CLOCK_MS - Date.now();
  await phaseDone;
  await rig.scheduler.idle();
  warmMs = nowMs() - w0;
  warmCommits = rig.scheduler.stats().commits;
  fired = 0;
  expected = timers;
  phaseDone = new Promise<void>((resolve) => {
    done = resolve;
  });
  measuring = true;
}
const stopCpuProfile = await startPhaseProfile("BURST_CPU_PROFILE");
// Every allocation sampled, also the ones collected since: where the fire phase's garbage comes from.
const stopHeapProfile = await startPhaseProfile("BURST_HEAP_PROFILE", "heap");
const loopDelay = monitorEventLoopDelay({ resolution: 1 });
loopDelay.enable();
// The measured timers are all due at BASE_MS (peer.ts burstSpec). The clock is set so that BASE_MS
// comes DUE_LEAD_MS from now in real time: the scheduler re-reads the clock within `maxArmMs`,
// arms its timer for that instant and is woken by it, as a host is by a timer due on its own
// clock; the phase is timed from that instant, as pg-boss's from its jobs' `startAfter`. (A clock
// jumped past every fireAt was noticed only at the next re-read: up to `maxArmMs` into the phase.)
const main0 = mainThreadCpuMs();
const cpu0 = processCpuMs();
const t0 = nowMs() + DUE_LEAD_MS;
clock.offsetMs = BASE_MS - (Date.now() + DUE_LEAD_MS);
timings.start(t0);
timeline?.markPhase();
await phaseDone;
const fireMs = nowMs() - t0;
const cpuMs = processCpuMs() - cpu0;
const mainCpuMs = mainThreadCpuMs() - main0;
loopDelay.disable();
await stopCpuProfile();
await stopHeapProfile();
await rig.scheduler.idle();
const commits = rig.scheduler.stats().commits - warmCommits;
await rig.close();
if (timeline !== undefined && timelineFile !== undefined) timeline.write(timelineFile);
process.stdout.write(`${JSON.stringify({ firesPerSec: (timers / fireMs) * 1_000, fireMs, recoverMs, ...(warmMs === undefined ? {} : { warmup, warmMs }), commits, commitMs: timings.wallMs, cpuMs, mainCpuMs, commitCpuMs: timings.cpuMs, maxLoopDelayMs: loopDelay.max / 1e6 })}\n`);
