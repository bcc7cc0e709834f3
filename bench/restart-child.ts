/**
 * One host start in a fresh process, for the restart and all-in memory rows:
 * `node --expose-gc --import tsx restart-child.ts <dataDir> <repoId> <clockMs>`.
 *
 * Prints one JSON line per milestone the moment it happens, so the parent can stamp each on
 * its own clock (no clock is compared between processes):
 *   `{"at":"loaded"}`  modules loaded, nothing opened yet;
 *   `{"at":"fired"}`   the first TimerFired committed;
 *   `{"at":"armed"}`   `scheduler.start()` resolved: every pending timer read and armed;
 * and last `{"at":"done", …}` with durations on this process's monotonic clock (from calling
 * `start()`), the recovered counts and, once both milestones passed and garbage was collected
 * (`--expose-gc`), the process's memory: `rss`, `heapUsed`, `external`, `arrayBuffers` (bytes)
 * and `rssLoaded` (RSS at `loaded`). Then it stops the host, which writes the recovery index
 * a warm start reads. The wall clock is the system's shifted to start at `clockMs`.
 */
import { createOffsetClock, openRig } from "./scheduler-rig.js";
import { nowMs } from "./stats.js";

const [dataDir, repoId, clockArg] = process.argv.slice(2);
const clockMs = Number(clockArg);
const gc = (globalThis as { gc?: () => void }).gc;
if (dataDir === undefined || repoId === undefined || !Number.isFinite(clockMs) || gc === undefined) {
  process.stderr.write("usage: node --expose-gc --import tsx restart-child.ts <dataDir> <repoId> <clockMs>\n");
  process.exit(2);
}

const say = (line: Record<string, unknown>): void => {
  process.stdout.write(`${JSON.stringify(line)}\n`);
};

const rssLoaded = process.memoryUsage.rss();
say({ at: "loaded" });
const clock = createOffsetClock(clockMs - Date.now());
let firedMs = Number.NaN;
let recovered = { runs: 0, pending: 0 };
let firstFire!: () => void;
const fired = new Promise<void>((resolve) => {
  firstFire = resolve;
});
const t0 = nowMs();
const rig = openRig(
  dataDir,
  [repoId],
  clock.clock,
  (event) => {
    if (event.type === "recovered") recovered = { runs: event.runs, pending: event.pending };
    if (event.type === "fired" && Number.isNaN(firedMs)) {
      firedMs = nowMs() - t0;
      say({ at: "fired" });
      firstFire();
    }
  },
  {},
  // As `serve` runs by default.
  { durability: "fsync" },
);
await rig.scheduler.start();
const armedMs = nowMs() - t0;
const armedCpu = process.cpuUsage();
say({ at: "armed" });
await fired;
await rig.scheduler.idle();
const queued = rig.scheduler.stats().queued;
for (let i = 0; i < 4; i++) gc();
const memory = process.memoryUsage();
say({
  at: "done",
  firedMs,
  armedMs,
  armedCpuMs: (armedCpu.user + armedCpu.system) / 1000,
  runs: recovered.runs,
  pending: recovered.pending,
  queued,
  rss: memory.rss,
  heapUsed: memory.heapUsed,
  external: memory.external,
  arrayBuffers: memory.arrayBuffers,
  rssLoaded,
});
await rig.close();
process.exit(0);
