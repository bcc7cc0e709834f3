/**
 * One lateness try in a fresh process, as a host process runs:
 * `lateness-child.ts <dataDir> <repoId> <timers> <baseMs> <leadMs> <windowMs> <fsync|none>`.
 * Starts a store and scheduler on the deployment (recovery arms every timer), then moves the
 * clock to `leadMs` before the first fireAt and records, for each TimerFired reported, the clock
 * at that moment minus its fireAt. Prints one JSON line: `{late: number[], startLate: number[],
 * commits, cpuMs, maxLoopDelayMs, loopBusyMs}`: `startLate` is each fire's `firedAt` (the clock
 * read as its commit was prepared) minus its fireAt, the part of `late` spent before the commit
 * (wake-up, group-commit wait, a commit ahead of it); the last three are over the measured
 * phase (clock move → last fire). With `LATENESS_CPU_PROFILE=<file>` set, that phase alone is
 * profiled (V8 CPU profile, JSON), or with `LATENESS_HEAP_PROFILE=<file>` sampled for
 * allocations instead (see phase-profile.ts: `HEAP_LIVE`, `HEAP_PROMOTED`); with
 * `LATENESS_TIMELINE=<file>`, a per-commit timeline of it is written there (see
 * lateness-timeline.ts); `LATENESS_MIN_COMMIT_INTERVAL_MS=<ms>` tries another group-commit
 * interval than the scheduler's default.
 */
import { monitorEventLoopDelay, performance } from "node:perf_hooks";
import { startPhaseProfile } from "./phase-profile.js";
import { startTimeline } from "./lateness-timeline.js";
import { createOffsetClock, openRig } from "./scheduler-rig.js";

const [dataDir, repoId, timersArg, baseArg, leadArg, windowArg, durability] = process.argv.slice(2);
const timers = Number(timersArg);
const baseMs = Number(baseArg);
const leadMs = Number(leadArg);
const windowMs = Number(windowArg);
if (dataDir === undefined || repoId === undefined || ![timers, baseMs, leadMs, windowMs].every(Number.isFinite) || (durability !== "fsync" && durability !== "none")) {
  process.stderr.write("usage: lateness-child.ts <dataDir> <repoId> <timers> <baseMs> <leadMs> <windowMs> <fsync|none>\n");
  process.exit(2);
}

const clock = createOffsetClock(baseMs - 3_600_000 - Date.now());
const late: number[] = [];
/** firedAt − fireAt: the part of `late` before the commit took its time (wake-up, throttle, queue). */
const startLate: number[] = [];
let done!: () => void;
const allFired = new Promise<void>((resolve) => {
  done = resolve;
});
const timelineFile = process.env.LATENESS_TIMELINE;
/** `LATENESS_MIN_COMMIT_INTERVAL_MS`: the group-commit interval to try instead of the scheduler's default (design notes §78). */
const intervalArg = process.env.LATENESS_MIN_COMMIT_INTERVAL_MS;
const minCommitIntervalMs = intervalArg === undefined || intervalArg === "" ? undefined : Number(intervalArg);
if (minCommitIntervalMs !== undefined && !(Number.isFinite(minCommitIntervalMs) && minCommitIntervalMs >= 0)) {
  process.stderr.write(`LATENESS_MIN_COMMIT_INTERVAL_MS ${intervalArg} is not a number of milliseconds\n`);
  process.exit(2);
}
const timeline = timelineFile === undefined || timelineFile === "" ? undefined : startTimeline();
// maxArmMs only bounds how soon the queue notices the clock move below; arms for due-soon
// timers are exact whatever the cap.
const rig = openRig(dataDir, [repoId], clock.clock, (event) => {
  if (event.type !== "fired") return;
  late.push(clock.nowMs() - Date.parse(event.scheduledFor));
  startLate.push(Date.parse(event.firedAt) - Date.parse(event.scheduledFor));
  timeline?.fired(Date.parse(event.scheduledFor), clock.nowMs(), event.commitSha);
  if (late.length === timers) done();
}, { maxArmMs: 100, ...(minCommitIntervalMs === undefined ? {} : { minCommitIntervalMs }), ...(timeline === undefined ? {} : { timers: timeline.timers }) }, { durability });
timeline?.wrapStore(rig.store);
await rig.scheduler.start();
const commits0 = rig.scheduler.stats().commits;
const stopCpuProfile = process.env.LATENESS_HEAP_PROFILE ? await startPhaseProfile("LATENESS_HEAP_PROFILE", "heap") : await startPhaseProfile("LATENESS_CPU_PROFILE");
const loopDelay = monitorEventLoopDelay({ resolution: 1 });
loopDelay.enable();
const cpu0 = process.cpuUsage();
const elu0 = performance.eventLoopUtilization();
timeline?.markPhase();
clock.offsetMs = baseMs - leadMs - Date.now();
let deadline: NodeJS.Timeout | undefined;
await Promise.race([
  allFired,
  new Promise<void>((resolve) => {
    deadline = setTimeout(resolve, leadMs + windowMs + 60_000);
  }),
]);
clearTimeout(deadline);
const cpu = process.cpuUsage(cpu0);
const elu = performance.eventLoopUtilization(elu0);
loopDelay.disable();
await stopCpuProfile();
const commits = rig.scheduler.stats().commits - commits0;
await rig.close();
if (timeline !== undefined && timelineFile !== undefined) timeline.write(timelineFile);
process.stdout.write(`${JSON.stringify({ late, startLate, commits, cpuMs: Math.round((cpu.user + cpu.system) / 1_000), maxLoopDelayMs: loopDelay.max / 1e6, loopBusyMs: Math.round(elu.active) })}\n`);
