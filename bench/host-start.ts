/**
 * Whole host starts on a deployment of N runs, each with one pending timer (2 events a run,
 * the shape of the 1,000,000-timer measurement behind issue 22), shared by the restart and the
 * all-in memory benchmarks: each start is one fresh process (bench/restart-child.ts) with a
 * store at durability `fsync` and the scheduler, exactly one of whose timers is overdue.
 * - cold: no recovery index (deleted first), every run's log is read;
 * - warm: the same repository right after the cold start stopped (its index written).
 * Milestones are stamped by this process as the child reports them, from the spawn: module
 * loading (tsx compiles the sources at each start), first due timer fired, all armed.
 */
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { DERIVED_DIR_NAME } from "../src/substrate/derived-files.js";
import { BASE_MS, type BenchContext } from "./bench-context.js";
import { runMilestones } from "./child-process.js";
import type { RepoCache, RepoSpec } from "./repo-generator.js";

const HOUR_MS = 3_600_000;

/** Run 0's timer is due for the cold start, run 1's for the warm one, the rest in 30 days. */
export function restartSpec(pending: number): RepoSpec {
  return {
    label: "restart",
    runs: pending,
    eventsPerRun: 2,
    pending: (run) => [run === 0 ? BASE_MS : run === 1 ? BASE_MS + HOUR_MS : BASE_MS + 30 * 86_400_000 + run],
  };
}

interface ChildDone {
  readonly firedMs: number;
  readonly armedMs: number;
  readonly runs: number;
  readonly pending: number;
  readonly queued: number;
  readonly rss: number;
  readonly heapUsed: number;
  readonly external: number;
  readonly arrayBuffers: number;
  readonly rssLoaded: number;
}

/** One start: times from spawn on this process's clock, the child's own durations and memory. */
export interface HostStart extends ChildDone {
  readonly spawnToLoadedMs: number;
  readonly spawnToFiredMs: number;
  readonly spawnToArmedMs: number;
}

export interface HostStarts {
  readonly pending: number;
  /** The section that ran these starts (the other one reuses them, with that section's load). */
  readonly measuredIn: string;
  readonly cold: HostStart;
  readonly warm: HostStart;
  /** Every try (cold, warm), for the notes. */
  readonly tries: readonly { cold: HostStart; warm: HostStart }[];
}

async function startOnce(dataDir: string, repoId: string, clockMs: number, expectPending: number): Promise<HostStart> {
  const { at, result } = await runMilestones<ChildDone>("restart-child.ts", [dataDir, repoId, String(clockMs)], ["--expose-gc", "--max-old-space-size=8192"]);
  if (result.pending !== expectPending || result.queued !== expectPending - 1) {
    throw new Error(`host start recovered ${result.pending} pending timers and kept ${result.queued} queued; expected ${expectPending} and ${expectPending - 1}`);
  }
  return {
    ...result,
    spawnToLoadedMs: at.get("loaded") ?? Number.NaN,
    spawnToFiredMs: at.get("fired") ?? Number.NaN,
    spawnToArmedMs: at.get("armed") ?? Number.NaN,
  };
}

function medianStart(starts: readonly HostStart[]): HostStart {
  // The try with the median time to all armed, reported whole (its figures belong together).
  return [...starts].sort((a, b) => a.spawnToArmedMs - b.spawnToArmedMs)[starts.length >> 1] as HostStart;
}

const memo = new WeakMap<RepoCache, Map<number, Promise<HostStarts>>>();

/**
 * Cold and warm starts with `pending` timers (median of `repeats` tries); measured once per
 * bench run, by the first section (`section`) that asks.
 */
export function hostStarts(ctx: BenchContext, pending: number, repeats: number, section: string): Promise<HostStarts> {
  let byCount = memo.get(ctx.cache);
  if (byCount === undefined) {
    byCount = new Map();
    memo.set(ctx.cache, byCount);
  }
  let made = byCount.get(pending);
  if (made === undefined) {
    made = measure(ctx, pending, repeats, section);
    byCount.set(pending, made);
  }
  return made;
}

async function measure(ctx: BenchContext, pending: number, repeats: number, section: string): Promise<HostStarts> {
  ctx.log(`host start: generating ${pending.toLocaleString("en-US")} runs × 2 events`);
  const tries: { cold: HostStart; warm: HostStart }[] = [];
  for (let i = 0; i < repeats; i++) {
    const repo = await ctx.cache.checkout(restartSpec(pending));
    try {
      await rm(join(repo.gitdir, DERIVED_DIR_NAME), { recursive: true, force: true });
      ctx.log(`host start: ${pending.toLocaleString("en-US")} pending, cold ${i + 1}/${repeats}`);
      const cold = await startOnce(repo.dataDir, repo.repoId, BASE_MS + 1_000, pending);
      ctx.log(`host start: ${pending.toLocaleString("en-US")} pending, warm ${i + 1}/${repeats}`);
      // Run 0 fired in the cold start; run 1's timer is the one due now.
      const warm = await startOnce(repo.dataDir, repo.repoId, BASE_MS + HOUR_MS + 1_000, pending - 1);
      tries.push({ cold, warm });
    } finally {
      await ctx.cache.release(repo);
    }
  }
  return { pending, measuredIn: section, cold: medianStart(tries.map((t) => t.cold)), warm: medianStart(tries.map((t) => t.warm)), tries };
}

