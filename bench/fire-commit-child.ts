/**
 * Fire commits of one batch size in a fresh process, as a host process makes them:
 * `fire-commit-child.ts <dataDir> <repoId> <timers> <fsync|none> <batch>`.
 * Starts a store and scheduler on the deployment while nothing is due (recovery arms every
 * timer), then moves the wall clock past the `timers` that are due; the scheduler commits them
 * `batch` at a time, back to back. Each commit is timed from the report of the previous one's
 * fires (the first from the clock move) to the report of its own: wall time and the process's
 * CPU time (`process.cpuUsage`: the garbage collector's helpers, the thread pool and pack
 * merging on its worker thread included). The main thread's CPU (Linux: its /proc stat, 10 ms
 * ticks) is read at every commit too; per commit it is only meaningful as a mean.
 * Prints one JSON line: `{commits, batches, wallMs[], cpuMs[], mainCpuMs[], recoverMs}`, where
 * `batches` lists the fires of each commit.
 */
import { BASE_MS } from "./bench-context.js";
import { createOffsetClock, openRig } from "./scheduler-rig.js";
import { startPhaseProfile } from "./phase-profile.js";
import { CommitTimings, nowMs } from "./stats.js";

const [dataDir, repoId, timersArg, durability, batchArg] = process.argv.slice(2);
const timers = Number(timersArg);
const batch = Number(batchArg);
if (dataDir === undefined || repoId === undefined || !Number.isInteger(timers) || (durability !== "fsync" && durability !== "none") || !Number.isInteger(batch)) {
  process.stderr.write("usage: fire-commit-child.ts <dataDir> <repoId> <timers> <fsync|none> <batch>\n");
  process.exit(2);
}

const clock = createOffsetClock(BASE_MS - 3_600_000 - Date.now());
const timings = new CommitTimings();
let fired = 0;
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
  { maxArmMs: 20, maxBatch: batch },
  { durability },
);
const r0 = nowMs();
await rig.scheduler.start();
const recoverMs = nowMs() - r0;
const stopCpuProfile = await startPhaseProfile("FIRE_COMMIT_CPU_PROFILE");
timings.start();
// The due timers' fireAts are within the hour after BASE_MS; the deployment's others, a year on, stay armed.
clock.offsetMs = BASE_MS + 3_600_000 - Date.now();
await allFired;
await stopCpuProfile();
await rig.scheduler.idle();
const commits = rig.scheduler.stats().commits;
await rig.close();
process.stdout.write(`${JSON.stringify({ commits, batches: timings.batches, wallMs: timings.wallMs, cpuMs: timings.cpuMs, mainCpuMs: timings.mainCpuMs, recoverMs })}\n`);
