/**
 * Signal round trip: from the start of `deliver` to the moment a pending `awaitNext` of that
 * signal resolves, p50/p99.
 * - in-process: one signal channel delivers and awaits on one store;
 * - cross-process: a child process with its own store delivers; this process awaits, seeing
 *   the commit through the store's ref watcher (OS file events as the hint, a 1 s poll as the
 *   safety net — the host's default).
 * Ours runs at durability `fsync` (what `serve` runs) and then `none`; targets are judged on
 * `fsync`. Every figure is read on this process's monotonic clock: cross-process, the clock starts
 * just before the command to deliver is written to the child's stdin and stops when the
 * awaiter here resolves, so the figure includes the pipe to the child (~0.1 ms) and never
 * compares two processes' clocks (which diverge when the wall clock is stepped).
 * Baseline (on the same logs as loose objects, the original format): delivery by one
 * isomorphic-git commit; the awaiter polls the ref every {@link NAIVE_POLL_MS} ms and re-reads
 * the run's log when it moved.
 */
import { spawn } from "node:child_process";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { createWorkflowHostSignalChannel } from "../seams/signals/signal-channel.js";
import type { WorkflowHostSignalChannel } from "../seams/signals/signal-channel-types.js";
import { BASE_MS, type BenchContext, type Benchmark } from "./bench-context.js";
import { naiveAwaitSignal, naiveDeliver } from "./naive-git.js";
import { runIdOf, type GeneratedRepo, type RepoSpec } from "./repo-generator.js";
import { DURABILITIES, type Durability, openStore } from "./scheduler-rig.js";
import { nowMs, percentile } from "./stats.js";
import { ms, num, row, target, validFigure, type TableRow, type TargetCheck } from "./table.js";

/** The naive awaiter's poll period. */
export const NAIVE_POLL_MS = 100;

const benchDir = dirname(fileURLToPath(import.meta.url));

function spec(runs: number): RepoSpec {
  return { label: "signals", runs, eventsPerRun: 6, pending: (run) => [BASE_MS + 30 * 86_400_000 + run] };
}

type Awaiter = (i: number) => Promise<void>;

/** Runs `rounds` round trips: arm the awaiter, deliver, measure until the awaiter resolves. */
async function inProcess(rounds: number, awaitOne: Awaiter, deliverOne: (i: number) => Promise<void>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const waiting = awaitOne(i);
    // Give the awaiter its first read before the clock starts, as a runtime waiting on a run would have.
    await new Promise((resolve) => setTimeout(resolve, 5));
    const t0 = nowMs();
    const delivered = deliverOne(i);
    await waiting;
    out.push(nowMs() - t0);
    await delivered;
  }
  return out;
}

/** What signal-child.ts prints: `{ready}` once, then `{i, deliverMs}` per delivery. */
interface ChildReply {
  readonly i?: number;
  /** The child's own time for the delivery call, on its clock (a duration, so comparable). */
  readonly deliverMs?: number;
  readonly ready?: boolean;
}

/** A child process delivering on command; see signal-child.ts. */
function startDeliverer(mode: "ours" | "naive", repo: GeneratedRepo, runId: string, durability: Durability) {
  const child = spawn(process.execPath, ["--import", "tsx", join(benchDir, "signal-child.ts"), mode, repo.dataDir, repo.repoId, runId, durability], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  const lines = createInterface({ input: child.stdout });
  const pending: ((value: ChildReply) => void)[] = [];
  lines.on("line", (line) => pending.shift()?.(JSON.parse(line) as ChildReply));
  const next = (): Promise<ChildReply> => new Promise((resolve) => pending.push(resolve));
  return {
    ready: next(),
    /**
     * Asks the child to deliver signal `i`: `sentAt` is this process's clock just before the
     * command is written; resolves with the child's reply once it committed.
     */
    deliver(i: number): { sentAt: number; reply: Promise<ChildReply> } {
      const reply = next();
      const sentAt = nowMs();
      child.stdin.write(`go ${i}\n`);
      return { sentAt, reply };
    },
    async close(): Promise<void> {
      child.stdin.end();
      await new Promise((resolve) => child.once("close", resolve));
    },
  };
}

/** Round trips (ms, this process's clock) and the child's own delivery times (its clock). */
interface CrossFigures {
  readonly roundTrips: number[];
  readonly deliverMs: number[];
}

async function crossProcess(rounds: number, mode: "ours" | "naive", repo: GeneratedRepo, runId: string, awaitOne: Awaiter, durability: Durability): Promise<CrossFigures> {
  const deliverer = startDeliverer(mode, repo, runId, durability);
  await deliverer.ready;
  const roundTrips: number[] = [];
  const deliverMs: number[] = [];
  try {
    for (let i = 0; i < rounds; i++) {
      let resolvedAt = Number.NaN;
      const waiting = awaitOne(i).then(() => {
        resolvedAt = nowMs();
      });
      await new Promise((resolve) => setTimeout(resolve, 5));
      const { sentAt, reply } = deliverer.deliver(i);
      const [answer] = await Promise.all([reply, waiting]);
      roundTrips.push(resolvedAt - sentAt);
      deliverMs.push(answer.deliverMs ?? Number.NaN);
    }
  } finally {
    await deliverer.close();
  }
  return { roundTrips, deliverMs };
}

function ourAwaiter(channel: WorkflowHostSignalChannel, prefix: string): Awaiter {
  return async (i) => {
    const got = await channel.awaitNext("go");
    if (got.signalId !== `${prefix}-${i}`) throw new Error(`expected signal ${prefix}-${i}, got ${got.signalId}`);
  };
}

function naiveAwaiter(repo: GeneratedRepo, runId: string, prefix: string): Awaiter {
  const seen = new Set<string>();
  return async (i) => {
    const controller = new AbortController();
    const timeout = setTimeout(() => controller.abort(), 30_000);
    try {
      const id = await naiveAwaitSignal(repo.gitdir, runId, "go", seen, NAIVE_POLL_MS, controller.signal);
      if (id !== `${prefix}-${i}`) throw new Error(`expected signal ${prefix}-${i}, got ${id}`);
    } finally {
      clearTimeout(timeout);
    }
  };
}

function figure(values: readonly number[]): { value: number; text: string } {
  const p50 = percentile(values, 50);
  const bad = values.filter((v) => !validFigure(v)).length;
  // A single impossible sample means the measurement is broken, whatever the percentiles say.
  if (bad > 0) return { value: Number.NaN, text: `INVALID (${bad} of ${values.length} samples negative or not finite)` };
  return { value: p50, text: `${ms(p50)} / ${ms(percentile(values, 99))}` };
}

/** The smallest of `values` (NaN when empty), to show the cross-process figures are plausible. */
function minOf(values: readonly number[]): number {
  return values.reduce((a, b) => Math.min(a, b), Number.POSITIVE_INFINITY);
}

export const signals: Benchmark = {
  name: "signals",
  async run(ctx: BenchContext) {
    const runs = ctx.quick ? 100 : 1_000;
    const rounds = ctx.quick ? 10 : 200;
    const naiveRounds = ctx.quick ? 5 : 50;
    ctx.log(`signals: generating ${num(runs)} runs`);
    const repo = await ctx.cache.checkout(spec(runs));
    const rows: TableRow[] = [];
    const targets: TargetCheck[] = [];
    const notes = ["ratio is of the p50s; every figure is on this process's monotonic clock (cross-process: from writing the command to the child to the awaiter resolving here)."];
    try {
      // Each mode uses its own run, so one's signals never satisfy the other's awaiter.
      const ours = new Map<Durability, { inProcess: number[]; cross: CrossFigures }>();
      for (const [d, durability] of DURABILITIES.entries()) {
        const store = openStore(repo.dataDir, () => new Date(), { durability });
        try {
          const inRun = runIdOf(10 + 2 * d);
          const channel = createWorkflowHostSignalChannel({ repoStore: store, principal: null, repoId: repo.repoId, runId: inRun, clock: () => new Date() });
          ctx.log(`signals: ours (${durability}) in-process × ${rounds}`);
          const inProcessTrips = await inProcess(rounds, ourAwaiter(channel, `s${d}`), async (i) => {
            await channel.deliver("go", { i }, `s${d}-${i}`);
          });
          await channel.stop();

          const crossRun = runIdOf(11 + 2 * d);
          const crossChannel = createWorkflowHostSignalChannel({ repoStore: store, principal: null, repoId: repo.repoId, runId: crossRun, clock: () => new Date() });
          ctx.log(`signals: ours (${durability}) cross-process × ${rounds}`);
          const cross = await crossProcess(rounds, "ours", repo, crossRun, ourAwaiter(crossChannel, "x"), durability);
          await crossChannel.stop();
          ours.set(durability, { inProcess: inProcessTrips, cross });
        } finally {
          await store.close();
        }
      }

      ctx.log(`signals: baseline in-process × ${naiveRounds}`);
      const loose = await ctx.cache.checkout(spec(runs), "bench", true);
      const naiveRun = runIdOf(3);
      const naiveIn = await inProcess(naiveRounds, naiveAwaiter(loose, naiveRun, "n"), async (i) => {
        await naiveDeliver(loose.gitdir, naiveRun, "go", `n-${i}`, { i });
      });
      ctx.log(`signals: baseline cross-process × ${naiveRounds}`);
      const naiveCrossRun = runIdOf(4);
      const naiveCross = (await crossProcess(naiveRounds, "naive", loose, naiveCrossRun, naiveAwaiter(loose, naiveCrossRun, "x"), "none")).roundTrips;
      await ctx.cache.release(loose);

      const counts = `${num(rounds)} / ${num(naiveRounds)} round trips`;
      for (const durability of DURABILITIES) {
        const figures = ours.get(durability);
        if (figures === undefined) continue;
        rows.push(row(`in-process, ${durability}, p50 / p99 (${counts})`, figure(figures.inProcess), figure(naiveIn), "lower"));
        rows.push(row(`cross-process, ${durability}, p50 / p99 (${counts})`, figure(figures.cross.roundTrips), figure(naiveCross), "lower"));
        notes.push(
          `cross-process, ${durability}: fastest round trip ${ms(minOf(figures.cross.roundTrips))}; the child's own deliver() call took p50 ${ms(percentile(figures.cross.deliverMs, 50))} ` +
            "(a duration on its clock; the awaiter here can resolve before that call returns, since the ref moves before deliver() finishes its own bookkeeping).",
        );
      }
      const durable = ours.get("fsync");
      if (!ctx.quick && durable !== undefined) {
        targets.push(target("signal round trip p50 < 5 ms in-process (fsync)", figure(durable.inProcess).value, 5, "max", ms));
        targets.push(target("signal round trip p50 < 250 ms across processes (fsync)", figure(durable.cross.roundTrips).value, 250, "max", ms));
      }
      notes.push("The baseline flushes nothing (isomorphic-git does not): one figure for both durabilities. Targets are judged on fsync, what `serve` runs.");
    } finally {
      await ctx.cache.release(repo);
    }
    return {
      name: "signals",
      targets,
      title: `Signal round trip (deliver → awaitNext resolved, on a ${num(runs)}-run deployment; durability fsync, then none)`,
      baseline: `isomorphic-git commit, awaiter polls every ${NAIVE_POLL_MS} ms`,
      rows,
      notes,
    };
  },
};
