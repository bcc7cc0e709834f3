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
 * Also per commit (Linux; NaN elsewhere): the bytes the process handed to write calls
 * (`/proc/self/io` `wchar`: the commit's pack and index, the ref, and whatever a pack merge or a
 * derived file wrote meanwhile), and over the whole fire phase each thread's CPU (ms, the main
 * thread first, then by CPU), which tells the merge thread and the thread pool from the loop.
 * Prints one JSON line: `{commits, batches, wallMs[], cpuMs[], mainCpuMs[], writeBytes[],
 * threadCpuMs[], recoverMs}`, where `batches` lists the fires of each commit.
 */
import { BASE_MS } from "./bench-context.js";
import { createOffsetClock, openRig } from "./scheduler-rig.js";
import { startPhaseProfile } from "./phase-profile.js";
import { readdirSync, readFileSync } from "node:fs";
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
/** Bytes this process handed to write calls so far (all threads), NaN where /proc is missing. */
function writtenBytes(): number {
  try {
    const io = readFileSync("/proc/self/io", "latin1");
    return Number(/^wchar: (\d+)$/m.exec(io)?.[1] ?? Number.NaN);
  } catch {
    return Number.NaN;
  }
}
/** CPU ms of every thread of this process by thread id (Linux), empty elsewhere. */
function threadCpu(): Map<string, number> {
  const out = new Map<string, number>();
  try {
    for (const tid of readdirSync("/proc/self/task")) {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, "latin1");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      out.set(tid, ((Number(fields[11]) + Number(fields[12])) * 1_000) / 100);
    }
  } catch {
    // Not Linux: no per-thread figures.
  }
  return out;
}
const writeBytes: number[] = [];
let lastWritten = Number.NaN;
let lastSha = "";
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
    if (event.commitSha !== lastSha) {
      lastSha = event.commitSha;
      const written = writtenBytes();
      writeBytes.push(written - lastWritten);
      lastWritten = written;
    }
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
lastWritten = writtenBytes();
const threadsAtStart = threadCpu();
// The due timers' fireAts are within the hour after BASE_MS; the deployment's others, a year on, stay armed.
clock.offsetMs = BASE_MS + 3_600_000 - Date.now();
await allFired;
const threadsAtEnd = threadCpu();
await stopCpuProfile();
await rig.scheduler.idle();
const commits = rig.scheduler.stats().commits;
const main = String(process.pid);
const threadCpuMs = [...threadsAtEnd]
  .map(([tid, ms]) => [tid, ms - (threadsAtStart.get(tid) ?? 0)] as const)
  .filter(([tid, ms]) => tid === main || ms > 0)
  .sort((a, b) => (a[0] === main ? -1 : b[0] === main ? 1 : b[1] - a[1]))
  .map(([, ms]) => ms);
await rig.close();
process.stdout.write(`${JSON.stringify({ commits, batches: timings.batches, wallMs: timings.wallMs, cpuMs: timings.cpuMs, mainCpuMs: timings.mainCpuMs, writeBytes, threadCpuMs, recoverMs })}\n`);
