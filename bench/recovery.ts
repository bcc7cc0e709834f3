/**
 * Recovery: a deployment of runs × 10 events, each run with one pending timer.
 * - cold: a new process, nothing cached, no derived index (deleted first): every run's log is
 *   read. Baseline: a new process reading every blob through isomorphic-git, from the same
 *   logs stored as loose objects (the original code's format).
 * - warm: a new process on the unchanged repo, where the derived recovery index left by the
 *   previous start may be used. Compared with our own cold start.
 * Each figure is the time of `scheduler.start()` inside the child (module loading excluded),
 * median of several children, with the child's peak RSS (its whole life: modules, recovery and
 * writing the index at stop).
 * Sizes: 1,000 and 10,000 runs; with `--huge` also 100,000 runs × 10 (1,000,000 events: about a
 * minute to generate, one cold and one warm start; its naive baseline would take ~15 minutes, so
 * its cold row is compared with ten times the 10,000-run cold start instead: linear growth).
 */
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { DERIVED_DIR_NAME } from "../src/substrate/derived-files.js";
import { BASE_MS, type BenchContext, type Benchmark } from "./bench-context.js";
import { runChild } from "./child-process.js";
import type { GeneratedRepo, RepoSpec } from "./repo-generator.js";
import { median } from "./stats.js";
import { ms, num, row, target, times, type TableRow, type TargetCheck } from "./table.js";

/** Runs of the biggest size, behind `--huge`. */
const HUGE_RUNS = 100_000;

const EVENTS_PER_RUN = 10;

function spec(runs: number): RepoSpec {
  return { label: "recovery", runs, eventsPerRun: EVENTS_PER_RUN, pending: (run) => [BASE_MS + 30 * 86_400_000 + run] };
}

interface ChildRecovery {
  readonly ms: number;
  /** CPU time of the child during start() (NaN for the naive baseline). */
  readonly cpuMs: number;
  readonly runs: number;
  readonly pending: number;
  readonly peakRssBytes: number;
}

const mib = (bytes: number): string => `${num(bytes / 2 ** 20)} MiB`;

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
    const sizes = ctx.quick ? [200] : ctx.huge ? [1_000, 10_000, HUGE_RUNS] : [1_000, 10_000];
    const rows: TableRow[] = [];
    const notes: string[] = [];
    const targets: TargetCheck[] = [];
    /** Median cold start per size, for the linear-growth comparison of the biggest. */
    const coldBySize = new Map<number, number>();
    for (const runs of sizes) {
      const events = runs * EVENTS_PER_RUN;
      const huge = runs === HUGE_RUNS;
      const repeats = ctx.quick || huge ? 1 : 3;
      ctx.log(`recovery: generating ${num(runs)} runs × ${EVENTS_PER_RUN} events`);
      const repo = await ctx.cache.checkout(spec(runs));
      try {
        const indexDir = join(repo.gitdir, DERIVED_DIR_NAME);
        const cold: ChildRecovery[] = [];
        const warm: ChildRecovery[] = [];
        for (let i = 0; i < repeats; i++) {
          ctx.log(`recovery: ${num(runs)} runs cold ${i + 1}/${repeats}`);
          await rm(indexDir, { recursive: true, force: true });
          cold.push(await recoverOnce(repo, "ours"));
          ctx.log(`recovery: ${num(runs)} runs warm ${i + 1}/${repeats}`);
          warm.push(await recoverOnce(repo, "ours"));
        }
        const coldMs = median(cold.map((c) => c.ms));
        const warmMs = median(warm.map((c) => c.ms));
        const coldRss = median(cold.map((c) => c.peakRssBytes));
        const warmRss = median(warm.map((c) => c.peakRssBytes));
        coldBySize.set(runs, coldMs);
        const size = `${num(runs)} runs × ${EVENTS_PER_RUN} (${num(events)} events)`;
        const tenth = coldBySize.get(runs / 10);
        if (huge) {
          const linear = tenth === undefined ? Number.NaN : tenth * 10;
          rows.push(row(`${size}, cold`, { value: coldMs, text: ms(coldMs) }, { value: linear, text: `${ms(linear)} (10 × the ${num(runs / 10)}-run cold start)` }, "lower"));
        } else {
          ctx.log(`recovery: ${num(runs)} runs baseline (loose objects)`);
          const looseRepo = await ctx.cache.checkout(spec(runs), "bench", true);
          const naive = (await recoverOnce(looseRepo, "naive")).ms;
          await ctx.cache.release(looseRepo);
          rows.push(row(`${size}, cold`, { value: coldMs, text: ms(coldMs) }, { value: naive, text: `${ms(naive)} (read every blob)` }, "lower"));
        }
        rows.push(row(`${size}, warm`, { value: warmMs, text: ms(warmMs) }, { value: coldMs, text: `${ms(coldMs)} (our cold start)` }, "lower"));
        rows.push(row(`${size}, peak RSS cold / warm`, { value: coldRss, text: `${mib(coldRss)} / ${mib(warmRss)}` }, { value: Number.NaN, text: "—" }, "lower"));
        if (!ctx.quick && runs === 10_000) {
          targets.push(target("cold recovery of 100,000 events < 10 s", coldMs, 10_000, "max", ms));
          targets.push(target("warm recovery ≥ 10× faster than cold", coldMs / warmMs, 10, "min", times, [coldMs, warmMs]));
        }
        if (huge) {
          targets.push(target("cold recovery of 1,000,000 events (100,000 runs × 10) < 20 s", coldMs, 20_000, "max", ms));
          targets.push(target("warm recovery of 1,000,000 events < 1 s", warmMs, 1_000, "max", ms));
          targets.push(target("peak RSS of a 1,000,000-event recovery < 600 MB", Math.max(coldRss, warmRss) / 1e6, 600, "max", (v) => `${num(v)} MB`));
          if (tenth !== undefined) notes.push(`${num(runs)} runs: cold ${ms(coldMs)} is ${times(coldMs / tenth)} the ${num(runs / 10)}-run cold start for 10× the events.`);
        }
        notes.push(
          `${num(runs)} runs: cold ${cold.map((c) => ms(c.ms)).join(", ")}; warm ${warm.map((c) => ms(c.ms)).join(", ")} (median shown); ` +
            `CPU time of start() cold ${cold.map((c) => ms(c.cpuMs)).join(", ")}, warm ${warm.map((c) => ms(c.cpuMs)).join(", ")}; ` +
            `peak RSS cold ${cold.map((c) => mib(c.peakRssBytes)).join(", ")}, warm ${warm.map((c) => mib(c.peakRssBytes)).join(", ")} (whole child process, modules included).`,
        );
      } finally {
        await ctx.cache.release(repo);
      }
    }
    if (!ctx.huge && !ctx.quick) notes.push("The 100,000-run × 10 rows (1,000,000 events) run only with `npm run bench -- --huge`; the last such run is in `bench/RESULTS-huge.md`.");
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
