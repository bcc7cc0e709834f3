/**
 * Fire throughput: a deployment whose runs each hold two armed timers, all due at once.
 * Ours: the scheduler recovers the repo while nothing is due, then the wall clock moves past
 * every fireAt; we count TimerFired per second from that moment until the last one is
 * committed. Baseline: one isomorphic-git commit per fire, on the same logs stored as loose
 * objects (the original code's format), measured over a sample of fires (at ~15 commits/s,
 * 20 000 fires would take over twenty minutes).
 * Ours runs at both durabilities, `fsync` first (what `serve` runs) and `none`; the baseline
 * never flushes (isomorphic-git does not), so it is measured once. The targets are judged on
 * the `fsync` rows. A side measure counts the flushes a durable commit makes (fsync-child.ts).
 */
import { BASE_MS, type BenchContext, type Benchmark } from "./bench-context.js";
import { runChild } from "./child-process.js";
import type { FlushCounts } from "./counting-fs.js";
import { naiveFire } from "./naive-git.js";
import { runIdOf, type RepoSpec } from "./repo-generator.js";
import { createOffsetClock, DURABILITIES, type Durability, openRig } from "./scheduler-rig.js";
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

async function runOurs(ctx: BenchContext, runs: number, durability: Durability): Promise<OursResult> {
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
  }, { maxArmMs: 20 }, { durability });
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

/** Flushes per durable one-event commit (a signal delivery on a 1,000-run deployment), in a child. */
async function flushesPerCommit(ctx: BenchContext): Promise<{ commits: number; counts: FlushCounts; deliverMsP50: number }> {
  const spec: RepoSpec = { label: "flushes", runs: 1_000, eventsPerRun: 6, pending: (run) => [BASE_MS + 30 * 86_400_000 + run] };
  const repo = await ctx.cache.checkout(spec);
  try {
    const commits = ctx.quick ? 20 : 200;
    const { result } = await runChild<{ commits: number; total: number; byKind: FlushCounts["byKind"]; deliverMsP50: number }>("fsync-child.ts", [
      repo.dataDir,
      repo.repoId,
      runIdOf(1),
      String(commits),
    ]);
    return { commits: result.commits, counts: { total: result.total, byKind: result.byKind }, deliverMsP50: result.deliverMsP50 };
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
    const fsyncRates = new Map<number, { rate: number; ratio: number; base: number }>();
    for (const runs of sizes) {
      const timers = runs * TIMERS_PER_RUN;
      ctx.log(`fire: generating ${num(runs)} runs`);
      await ctx.cache.pristine(spec(runs));
      const ours = new Map<Durability, OursResult[]>();
      for (const durability of DURABILITIES) {
        const tries: OursResult[] = [];
        for (let i = 0; i < repeats; i++) {
          ctx.log(`fire: ours (${durability}) ${num(runs)} runs, ${num(timers)} timers, try ${i + 1}/${repeats}`);
          tries.push(await runOurs(ctx, runs, durability));
        }
        ours.set(durability, tries);
      }
      ctx.log(`fire: baseline ${num(runs)} runs`);
      const base = await runBaseline(ctx, runs, ctx.quick ? 2_000 : 20_000, ctx.quick ? 20 : 400);
      for (const durability of DURABILITIES) {
        const tries = ours.get(durability) ?? [];
        const rate = median(tries.map((o) => o.firesPerSec));
        const made = row(
          `${num(runs)} runs, ${num(timers)} timers due, ${durability}`,
          { value: rate, text: `${num(rate)} fires/s` },
          { value: base.firesPerSec, text: `${num(base.firesPerSec, 1)} fires/s` },
          "higher",
        );
        rows.push(made);
        if (durability === "fsync") fsyncRates.set(runs, { rate, ratio: made.ratio, base: base.firesPerSec });
        const sample = tries[tries.length >> 1] ?? tries[0];
        notes.push(
          `${num(runs)} runs, ${durability}: ours ${tries.map((o) => num(o.firesPerSec)).join(", ")} fires/s over ${repeats} tries (median shown); ` +
            `${num(timers)} fires in ${ms(sample?.fireMs ?? Number.NaN)} and ${num(sample?.commits ?? 0)} commits; recovery before firing ${ms(median(tries.map((o) => o.recoverMs)))}.`,
        );
      }
      notes.push(`${num(runs)} runs: baseline sampled over ${num(base.fires)} fires (isomorphic-git flushes nothing: one figure for both rows).`);
    }
    ctx.log("fire: flushes per durable commit");
    const flushes = await flushesPerCommit(ctx);
    const per = (n: number): string => (n / flushes.commits).toFixed(2);
    const k = flushes.counts.byKind;
    notes.push(
      `flushes (fsync calls) per durable commit, counted by an fs wrapper over ${num(flushes.commits)} one-event commits (signal deliveries on a 1,000-run deployment), pack merges included: ` +
        `${per(flushes.counts.total)} (pack ${per(k.pack)}, index ${per(k.idx)}, ref ${per(k.ref)}, folders ${per(k.folder)}, other ${per(k.other)}); ` +
        `a durable delivery took p50 ${ms(flushes.deliverMsP50)} there (no watcher).`,
    );
    const targets: TargetCheck[] = [];
    const big = fsyncRates.get(10_000);
    if (!ctx.quick && big !== undefined) {
      targets.push(target("fire throughput ≥ 2,000 TimerFired/s on the 10,000-run repo (fsync)", big.rate, 2_000, "min", (v) => `${num(v)} fires/s`));
      targets.push(target("fire throughput ≥ 100× the one-commit-per-fire baseline (fsync)", big.ratio, 100, "min", times, [big.rate, big.base]));
    }
    return {
      name: "fire",
      targets,
      title: "Fire throughput (TimerFired committed per second, all timers due; durability fsync, then none)",
      baseline: "one isomorphic-git commit per fire",
      rows,
      notes,
    };
  },
};
