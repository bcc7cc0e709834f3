/**
 * Memory per pending timer, two ways.
 * - Queue only: what the scheduler's queue adds on top of the runs' state, against one
 *   `setTimeout` per timer. Each figure comes from its own fresh process (`--expose-gc`), so
 *   nothing else on the heap moves the measurement. "ours" counts the JS heap plus the queue's
 *   typed arrays, which live outside the heap; the baseline has none.
 * - All-in: the whole host process (store, caches, run states, queue, node and tsx themselves)
 *   after a cold start on a deployment of N runs × 2 events with one pending timer each
 *   (bench/host-start.ts): RSS and heap divided by N. This is what a user provisions for. No
 *   baseline runs here; the notes give the figures a deployment on PostgreSQL was measured at
 *   outside this suite. 1,000,000 timers only with `--huge`.
 */
import type { BenchContext, Benchmark } from "./bench-context.js";
import { runChild } from "./child-process.js";
import { hostStarts, type HostStarts } from "./host-start.js";
import { median } from "./stats.js";
import { ms, num, row, target, times, type TableRow, type TargetCheck } from "./table.js";

interface ChildMemory {
  readonly heapBytesPerTimer: number;
  readonly arrayBufferBytesPerTimer: number;
  readonly rssBytesPerTimer: number;
  readonly runStateBytesPerTimer: number;
}

async function measure(mode: "ours" | "baseline", count: number, repeats: number): Promise<ChildMemory> {
  const runs: ChildMemory[] = [];
  for (let i = 0; i < repeats; i++) {
    runs.push((await runChild<ChildMemory>("memory-child.ts", [mode, String(count)], ["--expose-gc", "--max-old-space-size=4096"])).result);
  }
  const pick = (f: (m: ChildMemory) => number): number => median(runs.map(f));
  return {
    heapBytesPerTimer: pick((m) => m.heapBytesPerTimer),
    arrayBufferBytesPerTimer: pick((m) => m.arrayBufferBytesPerTimer),
    rssBytesPerTimer: pick((m) => m.rssBytesPerTimer),
    runStateBytesPerTimer: pick((m) => m.runStateBytesPerTimer),
  };
}

export const memory: Benchmark = {
  name: "memory",
  async run(ctx: BenchContext) {
    const sizes = ctx.quick ? [20_000] : [100_000, 1_000_000];
    const repeats = ctx.quick ? 1 : 3;
    const rows: TableRow[] = [];
    const notes: string[] = [];
    const targets: TargetCheck[] = [];
    for (const count of sizes) {
      ctx.log(`memory: ${num(count)} timers`);
      const ours = await measure("ours", count, repeats);
      const base = await measure("baseline", count, repeats);
      const oursBytes = ours.heapBytesPerTimer + ours.arrayBufferBytesPerTimer;
      const baseBytes = base.heapBytesPerTimer + base.arrayBufferBytesPerTimer;
      rows.push(
        row(
          `${num(count)} pending timers`,
          { value: oursBytes, text: `${num(oursBytes)} B/timer` },
          { value: baseBytes, text: `${num(baseBytes)} B/timer` },
          "lower",
        ),
      );
      if (!ctx.quick && count === 1_000_000) {
        targets.push(target("≤ 200 bytes per pending timer (1,000,000 timers)", oursBytes, 200, "max", (v) => `${num(v)} B`));
        targets.push(target("≥ 3× less memory than one setTimeout per timer", baseBytes / oursBytes, 3, "min", times, [baseBytes, oursBytes]));
      }
      notes.push(
        `${num(count)}, queue only: ours ${num(ours.heapBytesPerTimer)} B heap + ${num(ours.arrayBufferBytesPerTimer)} B typed arrays (RSS +${num(ours.rssBytesPerTimer)} B); ` +
          `baseline ${num(base.heapBytesPerTimer)} B heap (RSS +${num(base.rssBytesPerTimer)} B); ` +
          `the run state both share (run id + PendingTimer) is ${num(ours.runStateBytesPerTimer)} B/timer and not counted; median of ${repeats} processes.`,
      );
    }
    const allInSizes = ctx.quick ? [5_000] : ctx.huge ? [100_000, 1_000_000] : [100_000];
    for (const count of allInSizes) {
      let starts: HostStarts;
      try {
        starts = await hostStarts(ctx, count, ctx.quick || count > 100_000 ? 1 : 2, "memory");
      } catch (error) {
        // A start that fails (out of memory at the biggest size) is shown, not hidden.
        rows.push(row(`${num(count)} pending timers, whole host process: start failed`, { value: Number.NaN, text: "failed" }, { value: Number.NaN, text: "—" }, "lower"));
        notes.push(`${num(count)}, whole host process: the start failed: ${error instanceof Error ? error.message.slice(0, 300) : String(error)}`);
        continue;
      }
      const cold = starts.cold;
      const rssPer = cold.rss / count;
      const heapPer = cold.heapUsed / count;
      rows.push(
        row(
          `${num(count)} pending timers, whole host process (RSS / heap per timer)`,
          { value: rssPer, text: `${num(rssPer)} B / ${num(heapPer)} B` },
          { value: Number.NaN, text: "—" },
          "lower",
        ),
      );
      const mib = (bytes: number): string => `${num(bytes / 2 ** 20)} MiB`;
      notes.push(
        `${num(count)}, whole host process after a cold start (${num(count)} runs × 2 events, durability fsync): RSS ${mib(cold.rss)}, heap ${mib(cold.heapUsed)}, ` +
          `external ${mib(cold.external)} (array buffers ${mib(cold.arrayBuffers)}); the process with only its modules loaded had RSS ${mib(cold.rssLoaded)}, ` +
          `so ${num((cold.rss - cold.rssLoaded) / count)} B/timer above it. After a warm start: RSS ${mib(starts.warm.rss)}, heap ${mib(starts.warm.heapUsed)}. ` +
          `Start to all armed ${ms(cold.spawnToArmedMs)} cold (see table 6).`,
      );
    }
    if (!ctx.huge) notes.push("The whole-process row at 1,000,000 timers runs only with `npm run bench -- --huge` (a cold start of that size takes several minutes); the last such run is in `bench/RESULTS-huge.md`.");
    notes.push(
      "Measured outside this suite (issue 22): a host holding 1,000,000 pending timers used 2.8 GB RSS (~2.6 KB/timer); pg-boss with its PostgreSQL held the same in 215 MB.",
    );
    return {
      name: "memory",
      targets,
      title: "Memory per pending timer (queue only, key and payload included; and the whole host process)",
      baseline: "one setTimeout per timer + key → handle map",
      rows,
      notes,
    };
  },
};
