/**
 * Fire throughput: a deployment whose runs each hold two armed timers, all due at once.
 * Ours: the scheduler recovers the repo while nothing is due, then the wall clock moves past
 * every fireAt; we count TimerFired per second from that moment until the last one is
 * committed. Baseline: one isomorphic-git commit per fire, on the same logs stored as loose
 * objects (the original code's format), measured over a sample of fires (at ~15 commits/s,
 * 20 000 fires would take over twenty minutes).
 */
import { BASE_MS, type BenchContext, type Benchmark } from "./bench-context.js";
import { naiveFire } from "./naive-git.js";
import { runIdOf, type RepoSpec } from "./repo-generator.js";
import { createOffsetClock, openRig } from "./scheduler-rig.js";
import { median, nowMs } from "./stats.js";
import { ms, num, row, target, times, type TableRow, type TargetCheck } from "./table.js";

const TIMERS_PER_RUN = 2;

function spec(runs: number): RepoSpec {
  return {
    label: "fire",
    runs,
    eventsPerRun: 2 + TIMERS_PER_RUN,
    pending: (run) => Array.from({ length: TIMERS_PER_RUN }, (_, i) => BASE_MS + run * TIMERS_PER_RUN + i),
  };
}

interface OursResult {
  readonly firesPerSec: number;
  readonly fireMs: number;
  readonly recoverMs: number;
  readonly commits: number;
}

async function runOurs(ctx: BenchContext, runs: number): Promise<OursResult> {
  const repo = await ctx.cache.checkout(spec(runs));
  const expected = runs * TIMERS_PER_RUN;
  const clock = createOffsetClock(BASE_MS - 3_600_000 - Date.now());
  let fired = 0;
  let done!: () => void;
  const allFired = new Promise<void>((resolve) => {
    done = resolve;
  });
  const rig = openRig(repo.dataDir, [repo.repoId], clock.clock, (event) => {
    if (event.type === "fired" && ++fired === expected) done();
  }, { maxArmMs: 20 });
  try {
    const r0 = nowMs();
    await rig.scheduler.start();
    const recoverMs = nowMs() - r0;
    const t0 = nowMs();
    clock.offsetMs = BASE_MS + 3_600_000 - Date.now();
    await allFired;
    const fireMs = nowMs() - t0;
    await rig.scheduler.idle();
    const commits = rig.scheduler.stats().commits;
    return { firesPerSec: (expected / fireMs) * 1_000, fireMs, recoverMs, commits };
  } finally {
    await rig.close();
    await ctx.cache.release(repo);
  }
}

async function runBaseline(ctx: BenchContext, runs: number, budgetMs: number, maxFires: number): Promise<{ firesPerSec: number; fires: number }> {
  const repo = await ctx.cache.checkout(spec(runs), "bench", true);
  try {
    let fires = 0;
    const t0 = nowMs();
    for (let run = 0; run < runs && fires < maxFires && nowMs() - t0 < budgetMs; run++) {
      const scheduledFor = new Date(BASE_MS + run * TIMERS_PER_RUN).toISOString();
      if (await naiveFire(repo.gitdir, runIdOf(run), "t-0", scheduledFor, new Date().toISOString())) fires += 1;
    }
    return { firesPerSec: (fires / (nowMs() - t0)) * 1_000, fires };
  } finally {
    await ctx.cache.release(repo);
  }
}

export const fireThroughput: Benchmark = {
  name: "fire",
  async run(ctx) {
    const sizes = ctx.quick ? [100, 300] : [1_000, 10_000];
    const repeats = ctx.quick ? 1 : 3;
    const rows: TableRow[] = [];
    const notes: string[] = [];
    for (const runs of sizes) {
      const timers = runs * TIMERS_PER_RUN;
      ctx.log(`fire: generating ${num(runs)} runs`);
      await ctx.cache.pristine(spec(runs));
      const ours: OursResult[] = [];
      for (let i = 0; i < repeats; i++) {
        ctx.log(`fire: ours ${num(runs)} runs, ${num(timers)} timers, try ${i + 1}/${repeats}`);
        ours.push(await runOurs(ctx, runs));
      }
      ctx.log(`fire: baseline ${num(runs)} runs`);
      const base = await runBaseline(ctx, runs, ctx.quick ? 2_000 : 20_000, ctx.quick ? 20 : 400);
      const rate = median(ours.map((o) => o.firesPerSec));
      rows.push(
        row(
          `${num(runs)} runs, ${num(timers)} timers due`,
          { value: rate, text: `${num(rate)} fires/s` },
          { value: base.firesPerSec, text: `${num(base.firesPerSec, 1)} fires/s` },
          "higher",
        ),
      );
      const sample = ours[ours.length >> 1] ?? ours[0];
      notes.push(
        `${num(runs)} runs: ours ${ours.map((o) => num(o.firesPerSec)).join(", ")} fires/s over ${repeats} tries (median shown); ` +
          `${num(timers)} fires in ${ms(sample?.fireMs ?? Number.NaN)} and ${num(sample?.commits ?? 0)} commits; recovery before firing ${ms(median(ours.map((o) => o.recoverMs)))}; ` +
          `baseline sampled over ${num(base.fires)} fires.`,
      );
    }
    const targets: TargetCheck[] = [];
    const big = rows.find((r) => r.size.startsWith("10,000 runs"));
    if (!ctx.quick && big !== undefined) {
      targets.push(target("fire throughput ≥ 2,000 TimerFired/s on the 10,000-run repo", big.ours.value, 2_000, "min", (v) => `${num(v)} fires/s`));
      targets.push(target("fire throughput ≥ 100× the one-commit-per-fire baseline", big.ratio, 100, "min", times, [big.ours.value, big.baseline.value]));
    }
    return {
      name: "fire",
      targets,
      title: "1. Fire throughput (TimerFired committed per second, all timers due)",
      baseline: "one isomorphic-git commit per fire",
      rows,
      notes,
    };
  },
};
