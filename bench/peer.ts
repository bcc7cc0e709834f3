/**
 * The peer a user would pick instead: pg-boss on a loopback PostgreSQL, beside our path, on the
 * same workloads in the same run.
 *
 * - Burst: N timers due at once on an N-run deployment (one timer per run). Ours: the scheduler
 *   in a fresh process (burst-child.ts), durability fsync, TimerFired committed per second from
 *   the moment all are due. pg-boss: N jobs inserted with one `startAfter`, then fetched and
 *   completed in batches (several batch sizes; its best is the row's figure), jobs per second
 *   from that `startAfter`, also in a fresh process per try (boss-burst-child.ts): both sides
 *   run their delivery code for the first time in the process, as after a restart.
 * - Burst, warm on both sides: ours in a process that has fired an earlier burst of N (a second
 *   timer on every run, due earlier: {@link warmBurstSpec}) before the measured N come due, so
 *   the fire path is already compiled, as in a host that has been running; pg-boss's client in
 *   the bench process, which earlier tries have warmed. A third row sets our fresh process
 *   against pg-boss's warm client, the pairing earlier runs targeted (no target now: it compares
 *   a cold process with a warm one). The target is on the two like-for-like rows.
 * - Spread: timers due evenly at 500 and 1,000 per second on a 10,000-run deployment; for each,
 *   the time it was committed (ours) or handed to the worker (pg-boss `work`, polling at its
 *   minimum interval) minus when it was due, p50 and p99.
 *
 * PostgreSQL runs with its defaults (fsync on, synchronous commit). When no PostgreSQL binaries
 * are found (or pg-boss cannot be loaded) the section prints that the peer was skipped.
 */
import { BASE_MS, type BenchContext, type Benchmark } from "./bench-context.js";
import { runChild } from "./child-process.js";
import { bossBurst, bossSpread, loadBoss } from "./peer-boss.js";
import type { RepoSpec } from "./repo-generator.js";
import { percentile } from "./stats.js";
import { ms, num, row, target, times, type TableRow, type TargetCheck } from "./table.js";
import { findPostgresBin, startPostgres, type PostgresServer } from "../test/support/postgres-server.js";

/**
 * One timer per run, every one due at the same instant `BASE_MS`, as pg-boss's jobs share one
 * `startAfter`: the child makes that instant come in real time (see burst-child.ts), so both sides
 * are timed from the moment their work is due.
 */
function burstSpec(runs: number): RepoSpec {
  return { label: `peer-burst-${runs}`, runs, eventsPerRun: 4, pending: () => [BASE_MS] };
}

/**
 * {@link burstSpec} with a second pending timer per run, due 30 min before the measured one:
 * the warm-up burst of burst-child.ts `--warm` (due before `BASE_MS` − 20 min). Each run then
 * holds 5 events to start with (one more TimerSet) and 6 once warmed; the measured timers are
 * the same N at the same instants.
 */
function warmBurstSpec(runs: number): RepoSpec {
  return { label: `peer-burst-warm-${runs}`, runs, eventsPerRun: 5, pending: (run) => [BASE_MS - 1_800_000 + run, BASE_MS] };
}

function spreadSpec(runs: number, timers: number, windowMs: number): RepoSpec {
  const spacing = windowMs / timers;
  return {
    label: `peer-spread-${timers}-${windowMs}`,
    runs,
    eventsPerRun: 4,
    pending: (run) => [run < timers ? BASE_MS + Math.round(run * spacing) : BASE_MS + 365 * 86_400_000],
  };
}

async function oursBurst(ctx: BenchContext, runs: number, warm = false): Promise<{ rate: number; commits: number }> {
  const repo = await ctx.cache.checkout(warm ? warmBurstSpec(runs) : burstSpec(runs));
  try {
    const args = [repo.dataDir, repo.repoId, String(runs), "fsync", ...(warm ? ["-", "--warm", String(runs)] : [])];
    const { result } = await runChild<{ firesPerSec: number; commits: number }>("burst-child.ts", args);
    return { rate: result.firesPerSec, commits: result.commits };
  } finally {
    await ctx.cache.release(repo);
  }
}

/** Queue names: a new queue per pg-boss try (also across processes: the child gets its name). */
let queues = 0;

/** pg-boss's best batch size in `rates` (jobs/s per try, by batch size) and its best try. */
function bestBatch(rates: ReadonlyMap<number, readonly number[]>): { size: number; rate: number } {
  let best = { size: Number.NaN, rate: Number.NaN };
  for (const [size, tries] of rates) {
    const rate = Math.max(...tries);
    if (!(rate <= best.rate)) best = { size, rate };
  }
  return best;
}

/** "500: a / b; 2,000: …": every try by batch size. */
function byBatch(sizes: readonly number[], rates: ReadonlyMap<number, readonly number[]>): string {
  return sizes.map((s) => `${num(s)}: ${(rates.get(s) ?? []).map((r) => num(r)).join(" / ")}`).join("; ");
}

async function oursSpread(ctx: BenchContext, runs: number, timers: number, windowMs: number): Promise<number[]> {
  const repo = await ctx.cache.checkout(spreadSpec(runs, timers, windowMs));
  try {
    const args = [repo.dataDir, repo.repoId, timers, BASE_MS, 500, windowMs, "fsync"].map(String);
    const { result } = await runChild<{ late: number[] }>("lateness-child.ts", args);
    return result.late;
  } finally {
    await ctx.cache.release(repo);
  }
}

export const peer: Benchmark = {
  name: "peer",
  async run(ctx) {
    const title = "Peer: pg-boss on a loopback PostgreSQL (burst: due → delivered/committed per second; spread: lateness), durability fsync on both";
    const baseline = "pg-boss 10 on PostgreSQL, same workload, same run";
    const bin = findPostgresBin();
    const Boss = await loadBoss();
    if (bin === null || typeof Boss === "string") {
      const why = bin === null ? "no PostgreSQL binaries (initdb) in /usr/lib/postgresql/*/bin or on PATH" : Boss;
      ctx.log(`peer: skipped (${why})`);
      return {
        name: "peer",
        title,
        baseline,
        rows: [row("peer section", { value: Number.NaN, text: "—" }, { value: Number.NaN, text: "skipped" }, "higher")],
        notes: [`The peer was skipped: ${why}.`],
      };
    }
    const burstRuns = ctx.quick ? 500 : 20_000;
    const batchSizes = ctx.quick ? [100, 500] : [500, 2_000, 5_000];
    const spreadRuns = ctx.quick ? 300 : 10_000;
    const windowMs = ctx.quick ? 1_000 : 5_000;
    const rates = ctx.quick ? [100] : [500, 1_000];
    const repeats = ctx.quick ? 1 : 2;
    const rows: TableRow[] = [];
    const notes: string[] = [];
    const targets: TargetCheck[] = [];

    ctx.log(`peer: generating ${num(burstRuns)} runs`);
    await ctx.cache.pristine(burstSpec(burstRuns));
    let pg: PostgresServer | null = null;
    try {
      ctx.log("peer: starting PostgreSQL");
      pg = await startPostgres({});
      const oursTries: { rate: number; commits: number }[] = [];
      for (let i = 0; i < repeats; i++) {
        ctx.log(`peer: ours burst try ${i + 1}/${repeats}`);
        oursTries.push(await oursBurst(ctx, burstRuns));
      }
      // pg-boss in both states ours is measured in: a fresh process per try (its fetch and
      // complete run for the first time there, as our fire path does in burst-child.ts), and
      // the bench process's client, which earlier tries have warmed.
      const bossFresh = new Map<number, number[]>();
      const bossWarm = new Map<number, number[]>();
      for (let i = 0; i < repeats; i++) {
        for (const batchSize of batchSizes) {
          ctx.log(`peer: pg-boss burst, batchSize ${num(batchSize)}, fresh process, try ${i + 1}/${repeats}`);
          const fresh = await runChild<{ jobsPerSec: number }>("boss-burst-child.ts", [pg.url, `burst-${queues++}`, String(burstRuns), String(batchSize)]);
          bossFresh.set(batchSize, [...(bossFresh.get(batchSize) ?? []), fresh.result.jobsPerSec]);
          ctx.log(`peer: pg-boss burst, batchSize ${num(batchSize)}, bench process, try ${i + 1}/${repeats}`);
          bossWarm.set(batchSize, [...(bossWarm.get(batchSize) ?? []), await bossBurst(Boss, pg.url, `burst-${queues++}`, burstRuns, batchSize)]);
        }
      }
      const oursRate = Math.max(...oursTries.map((t) => t.rate));
      const freshBest = bestBatch(bossFresh);
      const warmBest = bestBatch(bossWarm);
      const burst = row(
        `burst: ${num(burstRuns)} due at once on ${num(burstRuns)} runs, a fresh process on both sides`,
        { value: oursRate, text: `${num(oursRate)} fires/s` },
        { value: freshBest.rate, text: `${num(freshBest.rate)} jobs/s (batchSize ${num(freshBest.size)})` },
        "higher",
      );
      rows.push(burst);
      notes.push(
        `burst, ours in a fresh process: ${oursTries.map((t) => `${num(t.rate)} fires/s in ${num(t.commits)} commits`).join(", ")} (best of ${repeats} shown, as for pg-boss).`,
        `burst, pg-boss jobs/s by batchSize, a fresh process per try: ${byBatch(batchSizes, bossFresh)}; its client in the bench process: ${byBatch(batchSizes, bossWarm)} (fetch a batch, complete it, repeat; from the jobs' startAfter to the last completion).`,
      );
      // The same burst in a host that has fired before.
      ctx.log(`peer: generating ${num(burstRuns)} runs with a warm-up timer each`);
      await ctx.cache.pristine(warmBurstSpec(burstRuns));
      const warmTries: { rate: number; commits: number }[] = [];
      for (let i = 0; i < repeats; i++) {
        ctx.log(`peer: ours burst, warm host, try ${i + 1}/${repeats}`);
        warmTries.push(await oursBurst(ctx, burstRuns, true));
      }
      const warmRate = Math.max(...warmTries.map((t) => t.rate));
      const warmBurst = row(
        `burst, warm on both sides: ${num(burstRuns)} due at once on ${num(burstRuns)} runs, after an earlier burst in the same process`,
        { value: warmRate, text: `${num(warmRate)} fires/s` },
        { value: warmBest.rate, text: `${num(warmBest.rate)} jobs/s (batchSize ${num(warmBest.size)})` },
        "higher",
      );
      rows.push(warmBurst);
      // Earlier runs set our fresh process against pg-boss's warm client: kept as a row, no target.
      rows.push(
        row(
          `burst, ours in a fresh process against pg-boss's warm client (the pairing of earlier runs)`,
          { value: oursRate, text: `${num(oursRate)} fires/s` },
          { value: warmBest.rate, text: `${num(warmBest.rate)} jobs/s (batchSize ${num(warmBest.size)})` },
          "higher",
        ),
      );
      notes.push(
        `burst, warm host (a second timer per run fired as an untimed burst first, so the fire path is compiled; each run then holds 6 events, not 4): ${warmTries.map((t) => `${num(t.rate)} fires/s in ${num(t.commits)} commits`).join(", ")} (best of ${repeats}). The fresh rows are what a restart under a backlog sees, the warm ones a host that has been firing.`,
      );
      if (!ctx.quick) {
        targets.push(
          target("burst of 20,000 due at once on a 20,000-run deployment ≥ pg-boss's best batch setting (fsync), both in a fresh process", burst.ratio, 1, "min", times, [oursRate, freshBest.rate]),
          target("the same burst ≥ pg-boss's best batch setting (fsync), both warm", warmBurst.ratio, 1, "min", times, [warmRate, warmBest.rate]),
        );
      }

      for (const rate of rates) {
        const timers = Math.round((rate * windowMs) / 1_000);
        ctx.log(`peer: generating ${num(spreadRuns)} runs for ${num(rate)}/s`);
        await ctx.cache.pristine(spreadSpec(spreadRuns, timers, windowMs));
        ctx.log(`peer: ours spread at ${num(rate)}/s`);
        const ours = await oursSpread(ctx, spreadRuns, timers, windowMs);
        ctx.log(`peer: pg-boss spread at ${num(rate)}/s`);
        const theirs = await bossSpread(Boss, pg.url, `spread-${queues++}`, timers, windowMs);
        for (const p of [50, 99]) {
          const a = percentile(ours, p);
          const b = percentile(theirs, p);
          rows.push(row(`spread: ${num(rate)}/s for ${num(windowMs / 1_000)} s on ${num(spreadRuns)} runs, p${p}`, { value: a, text: ms(a) }, { value: b, text: ms(b) }, "lower"));
        }
        notes.push(`spread ${num(rate)}/s: ours ${num(ours.length)} of ${num(timers)} committed, pg-boss ${num(theirs.length)} of ${num(timers)} delivered (work(), batchSize 100, polling every 0.5 s, its minimum).`);
      }
    } finally {
      await pg?.stop();
    }
    notes.push("ours: the scheduler in a fresh process per try (a warm-up burst first in the warm rows); pg-boss: a client in a fresh process per try (boss-burst-child.ts) or in the bench process (warm rows, spread), PostgreSQL 15 in its own processes (fsync on).");
    return { name: "peer", title, baseline, rows, notes, targets };
  },
};
