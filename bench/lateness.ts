/**
 * Lateness: timers spread evenly over a window on a large deployment; for each, commit time
 * minus fireAt (the clock read when the scheduler reports the committed TimerFired). Two rates on
 * the 10,000-run deployment: 5 000 timers over 10 s (500 fires/s, the rows kept from earlier
 * runs) and 5 000 over 5 s (1,000 fires/s, the rate the issue's targets name). Ours: the
 * scheduler, each try in a new process. Baseline: one node `setTimeout` per timer,
 * each firing one isomorphic-git commit (on loose objects, the original format), serialised (concurrent commits to one ref would
 * conflict). The baseline cannot keep up, so it is stopped a few seconds after the last fireAt
 * and every timer it had not committed by then counts with the time it had waited so far: its
 * figures are lower bounds (shown with ≥).
 * Ours runs at both durabilities, `fsync` first (what `serve` runs) and `none`. Targets
 * ({@link LATENESS_SHAPES}): p99 < 50 ms at 500/s with fsync; at 1,000/s p99 < 20 ms without
 * fsync and < 50 ms with it. The baseline never flushes (isomorphic-git does not): one figure
 * for both.
 */
import { BASE_MS, type BenchContext, type Benchmark } from "./bench-context.js";
import { naiveFire } from "./naive-git.js";
import { runIdOf, type RepoSpec } from "./repo-generator.js";
import { runChild } from "./child-process.js";
import { DURABILITIES, type Durability } from "./scheduler-rig.js";
import { maxOf, percentile, sleep } from "./stats.js";
import { ms, num, row, target, type TableRow, type TargetCheck } from "./table.js";

/** How far ahead of the first fireAt the clock is moved once recovery is over. */
const LEAD_MS = 500;

/** One rate: `timers` due evenly over `windowMs` on a deployment of `runs` runs. */
export interface Shape {
  readonly runs: number;
  readonly timers: number;
  readonly windowMs: number;
  /** The p99 limit (ms) judged per durability on the full run; a durability not named has none. */
  readonly p99TargetMs?: Partial<Readonly<Record<Durability, number>>>;
}

/**
 * The full run's rates, in the order they run and are shown: 500 fires/s for 10 s (the rows of
 * earlier runs, same shape, same target) and 1,000 fires/s for 5 s, the issue's rate, judged at
 * both durabilities.
 */
export const LATENESS_SHAPES: readonly Shape[] = [
  { runs: 10_000, timers: 5_000, windowMs: 10_000, p99TargetMs: { fsync: 50 } },
  { runs: 10_000, timers: 5_000, windowMs: 5_000, p99TargetMs: { none: 20, fsync: 50 } },
];

/**
 * The same two rates, 500 and 1,000 fires/s, with the same limits, at smoke-test sizes
 * (`--quick`): the limits are printed beside the figures but not judged.
 */
export const QUICK_SHAPES: readonly Shape[] = LATENESS_SHAPES.map((s) => ({ ...s, runs: 300, timers: 250, windowMs: (250 / s.timers) * s.windowMs }));

/** Fires per second of `shape`. */
export function rateOf(shape: Shape): number {
  return (shape.timers / shape.windowMs) * 1_000;
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

export interface Lateness {
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

/** @param deployment the loose deployment it commits to: `shape`'s runs or more */
async function runBaseline(ctx: BenchContext, shape: Shape, deployment: RepoSpec, graceMs: number): Promise<Lateness> {
  const repo = await ctx.cache.checkout(deployment, "bench", true);
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

/**
 * The targets `shape` declares, judged on the p99 of the try shown for each durability
 * (`chosen`); a durability with a limit but no figure is judged invalid, never met.
 */
export function latenessTargets(shape: Shape, chosen: ReadonlyMap<Durability, Lateness>): TargetCheck[] {
  const checks: TargetCheck[] = [];
  for (const durability of DURABILITIES) {
    const limit = shape.p99TargetMs?.[durability];
    if (limit === undefined) continue;
    const p99 = chosen.get(durability)?.p99 ?? Number.NaN;
    checks.push(target(`p99 lateness < ${num(limit)} ms at ${num(rateOf(shape))} fires/s (${durability})`, p99, limit, "max", ms));
  }
  return checks;
}

/**
 * The targets `shape` declares, as note lines beside the p99 of the try shown for each
 * durability, not judged: what a `--quick` run prints (its sizes say nothing about the targets).
 */
export function latenessTargetNotes(shape: Shape, chosen: ReadonlyMap<Durability, Lateness>): string[] {
  const notes: string[] = [];
  for (const durability of DURABILITIES) {
    const limit = shape.p99TargetMs?.[durability];
    if (limit === undefined) continue;
    const p99 = chosen.get(durability)?.p99 ?? Number.NaN;
    notes.push(`target p99 lateness < ${num(limit)} ms at ${num(rateOf(shape))} fires/s (${durability}): p99 ${ms(p99)} (not judged: --quick sizes)`);
  }
  return notes;
}

export const lateness: Benchmark = {
  name: "lateness",
  async run(ctx) {
    const shapes = ctx.quick ? QUICK_SHAPES : LATENESS_SHAPES;
    const repeats = ctx.quick ? 1 : 3;
    const rows: TableRow[] = [];
    const notes: string[] = [];
    const targets: TargetCheck[] = [];
    // The baseline's deployment: the first shape's, stored loose. The baseline reads no timer
    // from it (it commits a TimerFired to run i at the instant it computes), so the faster rate
    // runs on the same runs; only the TimerSets' fireAt in the logs differ from that rate's own.
    const baseSpec = spec(shapes[0] as Shape);
    for (const shape of shapes) {
      const rate = rateOf(shape);
      ctx.log(`lateness: generating ${num(shape.runs)} runs for ${num(rate)}/s`);
      await ctx.cache.pristine(spec(shape));
      const chosen = new Map<Durability, Lateness & { commits: number }>();
      for (const durability of DURABILITIES) {
        const tries: (Lateness & { commits: number })[] = [];
        for (let i = 0; i < repeats; i++) {
          ctx.log(`lateness: ${num(rate)}/s, ours (${durability}) try ${i + 1}/${repeats}`);
          tries.push(await runOurs(ctx, shape, durability));
        }
        // The try with the median p99 is reported whole (percentiles of one run belong together).
        const ours = [...tries].sort((a, b) => a.p99 - b.p99)[tries.length >> 1] as Lateness & { commits: number };
        chosen.set(durability, ours);
        notes.push(
          `${num(rate)}/s, ours, ${durability}: ${repeats} tries, p99 per try ${tries.map((t) => ms(t.p99)).join(", ")}; the try with the median p99 is shown; ${num(ours.commits)} commits for ${num(shape.timers)} fires; ${ours.unfinished} unfinished.`,
        );
      }
      ctx.log(`lateness: ${num(rate)}/s, baseline`);
      const graceMs = ctx.quick ? 1_000 : 5_000;
      const base = await runBaseline(ctx, shape, baseSpec, graceMs);
      const bound = base.unfinished > 0 ? "≥ " : "";
      const size = `${num(shape.runs)} runs, ${num(shape.timers)} timers at ${num(rate)}/s`;
      for (const durability of DURABILITIES) {
        const ours = chosen.get(durability) as Lateness;
        for (const k of ["p50", "p99", "max"] as const) {
          rows.push(row(`${size}, ${durability}: ${k}`, { value: ours[k], text: ms(ours[k]) }, { value: base[k], text: `${bound}${ms(base[k])}` }, "lower"));
        }
      }
      notes.push(
        `${num(rate)}/s, baseline: committed ${num(shape.timers - base.unfinished)} of ${num(shape.timers)} before it was stopped ${num(graceMs / 1_000)} s after the last fireAt; the rest count with the wait so far (lower bounds); it flushes nothing (one figure for both durabilities)${shape === shapes[0] ? "" : `; it ran on the ${num(rateOf(shapes[0] as Shape))}/s deployment's loose copy (same runs; it reads no timer from the logs)`}.`,
      );
      if (ctx.quick) notes.push(...latenessTargetNotes(shape, chosen));
      else targets.push(...latenessTargets(shape, chosen));
    }
    const rates = shapes.map((s) => `${num(rateOf(s))} fires/s for ${s.windowMs % 1_000 === 0 ? `${num(s.windowMs / 1_000)} s` : ms(s.windowMs)}`).join(" and ");
    return {
      name: "lateness",
      targets,
      title: `Lateness (commit time − fireAt, ${rates}; durability fsync, then none)`,
      baseline: "setTimeout per timer + one isomorphic-git commit per fire",
      rows,
      notes,
    };
  },
};
