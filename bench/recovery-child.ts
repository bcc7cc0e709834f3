/**
 * One recovery in a fresh process: `recovery-child.ts ours|naive <dataDir> <repoId>`.
 * `ours`: a store and scheduler as the host wires them; times `start()` (every run read or
 * taken from the derived index, every pending timer armed) and then stops, which lets the
 * scheduler persist its index. `naive`: isomorphic-git reads every event blob.
 * Prints one JSON line: `{ms, cpuMs, runs, pending, peakRssBytes}` (`cpuMs`: the process's CPU
 * time during `start()`, which a busy machine does not inflate as it does `ms`); the peak resident set is the
 * process's whole life up to the print (the kernel's high-water mark), module loading included.
 * `maxLoopDelayMs`: the longest the event loop was held during `start()` (the host lock's
 * heartbeat runs on it). With `RECOVERY_CPU_PROFILE=<file>` set, `start()` alone is profiled
 * through the inspector and written there as a `.cpuprofile`.
 */
import { join } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { naiveRecover } from "./naive-git.js";
import { openRig } from "./scheduler-rig.js";
import { startPhaseProfile } from "./phase-profile.js";
import { nowMs } from "./stats.js";

const [mode, dataDir, repoId] = process.argv.slice(2);
if ((mode !== "ours" && mode !== "naive") || dataDir === undefined || repoId === undefined) {
  process.stderr.write("usage: recovery-child.ts ours|naive <dataDir> <repoId>\n");
  process.exit(2);
}

if (mode === "naive") {
  const t0 = nowMs();
  const counts = await naiveRecover(join(dataDir, "deployments", `${repoId}.git`));
  const ms = nowMs() - t0;
  process.stdout.write(`${JSON.stringify({ ms, cpuMs: Number.NaN, runs: counts.runs, pending: counts.pending, peakRssBytes: process.resourceUsage().maxRSS * 1024 })}\n`);
} else {
  let recovered = { runs: 0, pending: 0 };
  // Pending timers of the recovery repo are far in the future: nothing fires here.
  const rig = openRig(dataDir, [repoId], () => new Date(), (event) => {
    if (event.type === "recovered") recovered = { runs: event.runs, pending: event.pending };
  });
  const stopCpuProfile = await startPhaseProfile("RECOVERY_CPU_PROFILE");
  const loopDelay = monitorEventLoopDelay({ resolution: 10 });
  loopDelay.enable();
  const cpu0 = process.cpuUsage();
  const t0 = nowMs();
  await rig.scheduler.start();
  const ms = nowMs() - t0;
  const cpu = process.cpuUsage(cpu0);
  loopDelay.disable();
  await stopCpuProfile();
  const queued = rig.scheduler.stats().queued;
  await rig.close();
  // After close: a cold start writes the recovery index there, which belongs to its cost.
  const peakRssBytes = process.resourceUsage().maxRSS * 1024;
  process.stdout.write(`${JSON.stringify({ ms, cpuMs: (cpu.user + cpu.system) / 1_000, runs: recovered.runs, pending: recovered.pending, queued, peakRssBytes, maxLoopDelayMs: loopDelay.max / 1e6 })}\n`);
}
