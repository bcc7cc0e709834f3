/**
 * The peer a user would pick instead: pg-boss on a loopback PostgreSQL, beside our path, on the
 * same workloads in the same run.
 *
 * - Burst: N timers due at once on an N-run deployment (one timer per run). Ours: the scheduler
 *   in a fresh process (burst-child.ts), durability fsync, TimerFired committed per second from
 *   the moment all are due. pg-boss: N jobs inserted with one `startAfter`, then fetched and
 *   completed in batches (several batch sizes; its best is the row's figure), jobs per second
 *   from that `startAfter`.
 * - Burst, warm host: the same burst in a process that has fired an earlier burst of N (a second
 *   timer on every run, due earlier: {@link warmBurstSpec}) before the measured N come due, so
 *   the fire path is already compiled, as in a host that has been running. An extra row beside
 *   the fresh-process one, against the same pg-boss figure; the target stays on the fresh row.
 * - Spread: timers due evenly at 500 and 1,000 per second on a 10,000-run deployment; for each,
 *   the time it was committed (ours) or handed to the worker (pg-boss `work`, polling at its
 *   minimum interval) minus when it was due, p50 and p99.
 *
 * PostgreSQL runs with its defaults (fsync on, synchronous commit). When no PostgreSQL binaries
 * are found (or pg-boss cannot be loaded) the section prints that the peer was skipped.
 */
import { BASE_MS, type BenchContext, type Benchmark } from "./bench-context.js";
import { runChild } from "./child-process.js";
import { runIdOf, type RepoSpec } from "./repo-generator.js";
import { percentile, sleep } from "./stats.js";
import { ms, num, row, target, times, type TableRow, type TargetCheck } from "./table.js";
import { findPostgresBin, startPostgres, type PostgresServer } from "../test/support/postgres-server.js";

/** The parts of pg-boss 10 used here. */
interface Boss {
  start(): Promise<unknown>;
  stop(opts: { graceful: boolean; wait: boolean }): Promise<void>;
  on(event: "error", handler: (error: unknown) => void): unknown;
  createQueue(name: string): Promise<void>;
  insert(jobs: { name: string; data?: object; startAfter?: Date }[]): Promise<void>;
  fetch(name: string, opts: { batchSize: number }): Promise<{ id: string }[]>;
  complete(name: string, ids: string[]): Promise<void>;
  work(name: string, opts: { batchSize: number; pollingIntervalSeconds: number }, handler: (jobs: { data: object }[]) => Promise<void>): Promise<string>;
}
type BossClass = new (opts: { connectionString: string; max?: number }) => Boss;

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

let queues = 0;

async function bossBurst(Boss: BossClass, url: string, jobs: number, batchSize: number): Promise<number> {
  const boss = new Boss({ connectionString: url, max: 4 });
  boss.on("error", () => undefined);
  await boss.start();
  const name = `burst-${queues++}`;
  try {
    await boss.createQueue(name);
    // Inserted ahead of time, all due at one instant a little later (like our timers).
    const dueAt = new Date(Date.now() + 3_000 + Math.ceil(jobs / 5_000) * 1_000);
    for (let i = 0; i < jobs; i += 5_000) {
      await boss.insert(Array.from({ length: Math.min(5_000, jobs - i) }, (_, k) => ({ name, data: { runId: runIdOf(i + k) }, startAfter: dueAt })));
    }
    return await deliverAll(boss, name, jobs, batchSize, dueAt.getTime());
  } finally {
    await boss.stop({ graceful: false, wait: true });
  }
}

/**
 * Waits until `dueAtMs`, then fetches and completes batches until `jobs` were delivered; jobs/s
 * from `dueAtMs` (or from now, when inserting ran past it).
 */
async function deliverAll(boss: Boss, name: string, jobs: number, batchSize: number, dueAtMs: number): Promise<number> {
  await sleep(Math.max(0, dueAtMs - Date.now() + 5));
  const t0 = Date.now();
  const fromMs = Math.max(dueAtMs, t0 - 5);
  let done = 0;
  while (done < jobs) {
    const batch = await boss.fetch(name, { batchSize });
    if (batch.length === 0) {
      if (Date.now() - t0 > 120_000) break;
      continue;
    }
    await boss.complete(name, batch.map((j) => j.id));
    done += batch.length;
  }
  return (done / Math.max(1, Date.now() - fromMs)) * 1_000;
}

async function bossSpread(Boss: BossClass, url: string, timers: number, windowMs: number): Promise<number[]> {
  const boss = new Boss({ connectionString: url, max: 4 });
  boss.on("error", () => undefined);
  await boss.start();
  const name = `spread-${queues++}`;
  const late: number[] = [];
  try {
    await boss.createQueue(name);
    const startMs = Date.now() + 3_000 + Math.ceil(timers / 5_000) * 1_000;
    const dueOf = (i: number): number => startMs + Math.round((i * windowMs) / timers);
    for (let i = 0; i < timers; i += 5_000) {
      await boss.insert(Array.from({ length: Math.min(5_000, timers - i) }, (_, k) => ({ name, data: { dueMs: dueOf(i + k) }, startAfter: new Date(dueOf(i + k)) })));
    }
    let finished!: () => void;
    const all = new Promise<void>((resolve) => {
      finished = resolve;
    });
    await boss.work(name, { batchSize: 100, pollingIntervalSeconds: 0.5 }, async (jobs) => {
      const now = Date.now();
      for (const job of jobs) late.push(now - (job.data as { dueMs: number }).dueMs);
      if (late.length >= timers) finished();
    });
    await Promise.race([all, sleep(startMs - Date.now() + windowMs + 30_000)]);
    return late;
  } finally {
    await boss.stop({ graceful: false, wait: true });
  }
}

async function loadBoss(): Promise<BossClass | string> {
  try {
    const mod = (await import("pg-boss")) as unknown as { default: BossClass };
    return mod.default;
  } catch (error) {
    return `pg-boss could not be loaded (${error instanceof Error ? error.message : String(error)})`;
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
      const bossRates = new Map<number, number[]>();
      for (let i = 0; i < repeats; i++) {
        for (const batchSize of batchSizes) {
          ctx.log(`peer: pg-boss burst, batchSize ${num(batchSize)}, try ${i + 1}/${repeats}`);
          bossRates.set(batchSize, [...(bossRates.get(batchSize) ?? []), await bossBurst(Boss, pg.url, burstRuns, batchSize)]);
        }
      }
      const oursRate = Math.max(...oursTries.map((t) => t.rate));
      let bestSize = batchSizes[0] as number;
      for (const size of batchSizes) if (Math.max(...(bossRates.get(size) ?? [0])) > Math.max(...(bossRates.get(bestSize) ?? [0]))) bestSize = size;
      const bossBest = Math.max(...(bossRates.get(bestSize) ?? [Number.NaN]));
      const burst = row(
        `burst: ${num(burstRuns)} due at once on ${num(burstRuns)} runs`,
        { value: oursRate, text: `${num(oursRate)} fires/s` },
        { value: bossBest, text: `${num(bossBest)} jobs/s (batchSize ${num(bestSize)})` },
        "higher",
      );
      rows.push(burst);
      notes.push(
        `burst, ours: ${oursTries.map((t) => `${num(t.rate)} fires/s in ${num(t.commits)} commits`).join(", ")} (best of ${repeats} shown, as for pg-boss).`,
        `burst, pg-boss jobs/s by batchSize: ${batchSizes.map((s) => `${num(s)}: ${(bossRates.get(s) ?? []).map((r) => num(r)).join(" / ")}`).join("; ")} (fetch a batch, complete it, repeat; from the jobs' startAfter to the last completion).`,
      );
      if (!ctx.quick) {
        targets.push(target("burst of 20,000 due at once on a 20,000-run deployment ≥ pg-boss's best batch setting (fsync)", burst.ratio, 1, "min", times, [oursRate, bossBest]));
      }
      // The same burst in a host that has fired before (no target: the fresh row above keeps it).
      ctx.log(`peer: generating ${num(burstRuns)} runs with a warm-up timer each`);
      await ctx.cache.pristine(warmBurstSpec(burstRuns));
      const warmTries: { rate: number; commits: number }[] = [];
      for (let i = 0; i < repeats; i++) {
        ctx.log(`peer: ours burst, warm host, try ${i + 1}/${repeats}`);
        warmTries.push(await oursBurst(ctx, burstRuns, true));
      }
      const warmRate = Math.max(...warmTries.map((t) => t.rate));
      rows.push(
        row(
          `burst, warm host: ${num(burstRuns)} due at once on ${num(burstRuns)} runs, after an earlier burst of ${num(burstRuns)} in the same process`,
          { value: warmRate, text: `${num(warmRate)} fires/s` },
          { value: bossBest, text: `${num(bossBest)} jobs/s (batchSize ${num(bestSize)})` },
          "higher",
        ),
      );
      notes.push(
        `burst, warm host (a second timer per run fired as an untimed burst first, so the fire path is compiled; each run then holds 6 events, not 4): ${warmTries.map((t) => `${num(t.rate)} fires/s in ${num(t.commits)} commits`).join(", ")} (best of ${repeats}). The fresh-process row is what a restart under a backlog sees, this one a host that has been firing.`,
      );

      for (const rate of rates) {
        const timers = Math.round((rate * windowMs) / 1_000);
        ctx.log(`peer: generating ${num(spreadRuns)} runs for ${num(rate)}/s`);
        await ctx.cache.pristine(spreadSpec(spreadRuns, timers, windowMs));
        ctx.log(`peer: ours spread at ${num(rate)}/s`);
        const ours = await oursSpread(ctx, spreadRuns, timers, windowMs);
        ctx.log(`peer: pg-boss spread at ${num(rate)}/s`);
        const theirs = await bossSpread(Boss, pg.url, timers, windowMs);
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
    notes.push("ours: the scheduler in a fresh process per try; pg-boss: a client in the bench process, PostgreSQL 15 in its own processes (fsync on).");
    return { name: "peer", title, baseline, rows, notes, targets };
  },
};
