/**
 * Lateness: timers spread evenly over a window (5 000 over 10 s = 500 fires/s) on a large
 * deployment; for each, commit time minus fireAt (the clock read when the scheduler reports
 * the committed TimerFired). Ours: the scheduler, each try in a new process. Baseline: one node `setTimeout` per timer,
 * each firing one isomorphic-git commit (on loose objects, the original format), serialised (concurrent commits to one ref would
 * conflict). The baseline cannot keep up, so it is stopped a few seconds after the last fireAt
 * and every timer it had not committed by then counts with the time it had waited so far: its
 * figures are lower bounds (shown with ≥).
 * Ours runs at both durabilities, `fsync` first (what `serve` runs) and `none`; the target is
 * judged on `fsync`. The baseline never flushes (isomorphic-git does not): one figure for both.
 */
import { BASE_MS, type BenchContext, type Benchmark } from "./bench-context.js";
import { naiveFire } from "./naive-git.js";
import { runIdOf, type RepoSpec } from "./repo-generator.js";
import { runChild } from "./child-process.js";
import { DURABILITIES, type Durability } from "./scheduler-rig.js";
import { maxOf, percentile, sleep } from "./stats.js";
import { ms, num, row, target, type TableRow } from "./table.js";

/** How far ahead of the first fireAt the clock is moved once recovery is over. */
const LEAD_MS = 500;

interface Shape {
  readonly runs: number;
  readonly timers: number;
  readonly windowMs: number;
}

function spec(shape: Shape): RepoSpec {
  const spacing = shape.windowMs / shape.timers;
  return {
    label: `late-${shape.timers}-${shape.windowMs}`,
    runs: shape.runs,
    eventsPerRun: 4,
    // The first `timers` runs have one timer in the window; the others one a year out, so the
    // queue holds a realistic number of entries.
    pending: (run) => [run < shape.timers ? BASE_MS + Math.round(run * spacing) : BASE_MS + 365 * 86_400_000],
  };
}

interface Lateness {
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
  /** Timers not committed when the measurement stopped (their figure is a lower bound). */
  readonly unfinished: number;
}

function summarise(values: readonly number[], unfinished: number): Lateness {
  return { p50: percentile(values, 50), p99: percentile(values, 99), max: maxOf(values), unfinished };
}

/**
 * One try of ours in a new process (bench/lateness-child.ts), as a host process runs: the
 * garbage this process made generating repositories and running other benchmarks would
 * otherwise set the garbage collector's pace for the host being measured.
 */
async function runOurs(ctx: BenchContext, shape: Shape, durability: Durability): Promise<Lateness & { commits: number }> {
  const repo = await ctx.cache.checkout(spec(shape));
  try {
    const args = [repo.dataDir, repo.repoId, shape.timers, BASE_MS, LEAD_MS, shape.windowMs, durability].map(String);
    const { result } = await runChild<{ late: number[]; commits: number }>("lateness-child.ts", args);
    return { ...summarise(result.late, shape.timers - result.late.length), commits: result.commits };
  } finally {
    await ctx.cache.release(repo);
  }
}

async function runBaseline(ctx: BenchContext, shape: Shape, graceMs: number): Promise<Lateness> {
  const repo = await ctx.cache.checkout(spec(shape), "bench", true);
  const late: number[] = [];
  const startMs = Date.now() + LEAD_MS;
  const fireAtOf = (i: number): number => startMs + Math.round((i * shape.windowMs) / shape.timers);
  const stopAtMs = fireAtOf(shape.timers - 1) + graceMs;
  let chain = Promise.resolve();
  let stopped = false;
  const handles: NodeJS.Timeout[] = [];
  try {
    for (let i = 0; i < shape.timers; i++) {
      handles.push(
        setTimeout(() => {
          chain = chain.then(async () => {
            if (stopped) return;
            const fireAt = new Date(BASE_MS + Math.round((i * shape.windowMs) / shape.timers)).toISOString();
            await naiveFire(repo.gitdir, runIdOf(i), "t-0", fireAt, new Date().toISOString());
            late.push(Date.now() - fireAtOf(i));
          });
        }, Math.max(0, fireAtOf(i) - Date.now())),
      );
    }
    await sleep(Math.max(0, stopAtMs - Date.now()));
    stopped = true;
    const cutMs = Date.now();
    for (const handle of handles) clearTimeout(handle);
    await chain;
    const bounds = [...late];
    for (let i = late.length; i < shape.timers; i++) bounds.push(Math.max(0, cutMs - fireAtOf(i)));
    return summarise(bounds, shape.timers - late.length);
  } finally {
    stopped = true;
    await chain;
    await ctx.cache.release(repo);
  }
}

export const lateness: Benchmark = {
  name: "lateness",
  async run(ctx) {
    const shape: Shape = ctx.quick ? { runs: 300, timers: 250, windowMs: 1_000 } : { runs: 10_000, timers: 5_000, windowMs: 10_000 };
    const rate = (shape.timers / shape.windowMs) * 1_000;
    const repeats = ctx.quick ? 1 : 3;
    ctx.log(`lateness: generating ${num(shape.runs)} runs`);
    await ctx.cache.pristine(spec(shape));
    const chosen = new Map<Durability, Lateness & { commits: number }>();
    const notes: string[] = [];
    for (const durability of DURABILITIES) {
      const tries: (Lateness & { commits: number })[] = [];
      for (let i = 0; i < repeats; i++) {
        ctx.log(`lateness: ours (${durability}) try ${i + 1}/${repeats}`);
        tries.push(await runOurs(ctx, shape, durability));
      }
      // The try with the median p99 is reported whole (percentiles of one run belong together).
      const ours = [...tries].sort((a, b) => a.p99 - b.p99)[tries.length >> 1] as Lateness & { commits: number };
      chosen.set(durability, ours);
      notes.push(
        `ours, ${durability}: ${repeats} tries, p99 per try ${tries.map((t) => ms(t.p99)).join(", ")}; the try with the median p99 is shown; ${num(ours.commits)} commits for ${num(shape.timers)} fires; ${ours.unfinished} unfinished.`,
      );
    }
    ctx.log("lateness: baseline");
    const base = await runBaseline(ctx, shape, ctx.quick ? 1_000 : 5_000);
    const bound = base.unfinished > 0 ? "≥ " : "";
    const size = `${num(shape.runs)} runs, ${num(shape.timers)} timers at ${num(rate)}/s`;
    const rows: TableRow[] = [];
    for (const durability of DURABILITIES) {
      const ours = chosen.get(durability) as Lateness;
      for (const k of ["p50", "p99", "max"] as const) {
        rows.push(row(`${size}, ${durability}: ${k}`, { value: ours[k], text: ms(ours[k]) }, { value: base[k], text: `${bound}${ms(base[k])}` }, "lower"));
      }
    }
    notes.push(
      `baseline: committed ${num(shape.timers - base.unfinished)} of ${num(shape.timers)} before it was stopped ${num(ctx.quick ? 1 : 5)} s after the last fireAt; the rest count with the wait so far (lower bounds); it flushes nothing (one figure for both durabilities).`,
    );
    const durable = chosen.get("fsync");
    return {
      name: "lateness",
      targets: ctx.quick || durable === undefined ? [] : [target("p99 lateness < 50 ms at 500 fires/s (fsync)", durable.p99, 50, "max", ms)],
      title: `Lateness (commit time − fireAt, ${num(rate)} fires/s for ${num(shape.windowMs / 1_000)} s; durability fsync, then none)`,
      baseline: "setTimeout per timer + one isomorphic-git commit per fire",
      rows,
      notes,
    };
  },
};
