/**
 * Recovery: a deployment of runs × 10 events, each run with one pending timer.
 * - cold: a new process, nothing cached, no derived index (deleted first): every run's log is
 *   read. Baseline: a new process reading every blob through isomorphic-git, from the same
 *   logs stored as loose objects (the original code's format).
 * - warm: a new process on the unchanged repo, where the derived recovery index left by the
 *   previous start may be used. Compared with our own cold start.
 * Each figure is the time of `scheduler.start()` inside the child (module loading excluded),
 * median of several children.
 */
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { DERIVED_DIR_NAME } from "../src/substrate/derived-files.js";
import { BASE_MS, type BenchContext, type Benchmark } from "./bench-context.js";
import { runChild } from "./child-process.js";
import type { GeneratedRepo, RepoSpec } from "./repo-generator.js";
import { median } from "./stats.js";
import { ms, num, row, target, times, type TableRow, type TargetCheck } from "./table.js";

const EVENTS_PER_RUN = 10;

function spec(runs: number): RepoSpec {
  return { label: "recovery", runs, eventsPerRun: EVENTS_PER_RUN, pending: (run) => [BASE_MS + 30 * 86_400_000 + run] };
}

interface ChildRecovery {
  readonly ms: number;
  readonly runs: number;
  readonly pending: number;
}

async function recoverOnce(repo: GeneratedRepo, mode: "ours" | "naive"): Promise<ChildRecovery> {
  const { result } = await runChild<ChildRecovery>("recovery-child.ts", [mode, repo.dataDir, repo.repoId]);
  if (result.runs !== repo.runs || result.pending !== repo.pendingTimers) {
    throw new Error(`recovery (${mode}) saw ${result.runs} runs / ${result.pending} timers; expected ${repo.runs} / ${repo.pendingTimers}`);
  }
  return result;
}

export const recovery: Benchmark = {
  name: "recovery",
  async run(ctx: BenchContext) {
    const sizes = ctx.quick ? [200] : [1_000, 10_000];
    const repeats = ctx.quick ? 1 : 3;
    const rows: TableRow[] = [];
    const notes: string[] = [];
    const targets: TargetCheck[] = [];
    for (const runs of sizes) {
      const events = runs * EVENTS_PER_RUN;
      ctx.log(`recovery: generating ${num(runs)} runs × ${EVENTS_PER_RUN} events`);
      const repo = await ctx.cache.checkout(spec(runs));
      try {
        const indexDir = join(repo.gitdir, DERIVED_DIR_NAME);
        const cold: number[] = [];
        const warm: number[] = [];
        for (let i = 0; i < repeats; i++) {
          ctx.log(`recovery: ${num(runs)} runs cold ${i + 1}/${repeats}`);
          await rm(indexDir, { recursive: true, force: true });
          cold.push((await recoverOnce(repo, "ours")).ms);
          ctx.log(`recovery: ${num(runs)} runs warm ${i + 1}/${repeats}`);
          warm.push((await recoverOnce(repo, "ours")).ms);
        }
        ctx.log(`recovery: ${num(runs)} runs baseline (loose objects)`);
        const looseRepo = await ctx.cache.checkout(spec(runs), "bench", true);
        const naive = (await recoverOnce(looseRepo, "naive")).ms;
        await ctx.cache.release(looseRepo);
        const coldMs = median(cold);
        const warmMs = median(warm);
        const size = `${num(runs)} runs × ${EVENTS_PER_RUN} (${num(events)} events)`;
        rows.push(row(`${size}, cold`, { value: coldMs, text: ms(coldMs) }, { value: naive, text: `${ms(naive)} (read every blob)` }, "lower"));
        rows.push(row(`${size}, warm`, { value: warmMs, text: ms(warmMs) }, { value: coldMs, text: `${ms(coldMs)} (our cold start)` }, "lower"));
        if (!ctx.quick && runs === 10_000) {
          targets.push(target("cold recovery of 100,000 events < 10 s", coldMs, 10_000, "max", ms));
          targets.push(target("warm recovery ≥ 10× faster than cold", coldMs / warmMs, 10, "min", times, [coldMs, warmMs]));
        }
        notes.push(`${num(runs)} runs: cold ${cold.map(ms).join(", ")}; warm ${warm.map(ms).join(", ")} (median shown).`);
      } finally {
        await ctx.cache.release(repo);
      }
    }
    return {
      name: "recovery",
      targets,
      title: "Recovery (scheduler.start() in a new process until every pending timer is armed)",
      baseline: "see row",
      rows,
      notes,
    };
  },
};
