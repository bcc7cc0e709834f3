/**
 * Profiles one phase of a bench child through the inspector, when an environment variable names
 * the file to write: `const stop = await startPhaseProfile("BURST_CPU_PROFILE")`, the phase,
 * then `await stop()`. A CPU profile (`.cpuprofile`, for Chrome DevTools or `--cpu-prof` tools)
 * or, with `kind: "heap"`, a sampling heap profile (`.heapprofile`): every allocation of the
 * phase, also those collected since, or with `HEAP_LIVE=1` only those still alive when it ends
 * (what survived into the old generation), or with `HEAP_PROMOTED=1` those alive at the end and
 * those a full collection reclaimed (objects that outlived the young generation: the garbage
 * that makes mark-compacts, design notes §78). Unset or empty: nothing is started and `stop` does nothing.
 */
import { writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";

/**
 * @param tag inserted before the file's extension (`p.cpuprofile` → `p-<tag>.cpuprofile`), for
 *   a process that profiles several phases
 * @returns a function that stops the profile and writes it to the named file
 */
export async function startPhaseProfile(envVar: string, kind: "cpu" | "heap" = "cpu", tag?: string): Promise<() => Promise<void>> {
  const named = process.env[envVar];
  if (named === undefined || named === "") return async () => undefined;
  const path = tag === undefined ? named : named.replace(/(\.[a-z]+)?$/, (ext) => `-${tag}${ext}`);
  const session = new Session();
  session.connect();
  if (kind === "cpu") {
    await session.post("Profiler.enable");
    await session.post("Profiler.start");
  } else {
    await session.post("HeapProfiler.enable");
    // Objects collected by GC are kept in the samples (the churn), unless HEAP_LIVE=1 asks for the
    // survivors, or HEAP_PROMOTED=1 for what outlived the young generation.
    await session.post("HeapProfiler.startSampling", { samplingInterval: 4096, includeObjectsCollectedByMajorGC: process.env.HEAP_LIVE !== "1", includeObjectsCollectedByMinorGC: process.env.HEAP_LIVE !== "1" && process.env.HEAP_PROMOTED !== "1" } as never);
  }
  return async () => {
    const { profile } = kind === "cpu" ? await session.post("Profiler.stop") : await session.post("HeapProfiler.stopSampling");
    writeFileSync(path, JSON.stringify(profile));
    session.disconnect();
  };
}
