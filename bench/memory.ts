/**
 * Memory per pending timer: what the scheduler's queue adds on top of the runs' state, against
 * one `setTimeout` per timer. Each figure comes from its own fresh process (`--expose-gc`), so
 * nothing else on the heap moves the measurement. "ours" counts the JS heap plus the queue's
 * typed arrays, which live outside the heap; the baseline has none.
 */
import type { BenchContext, Benchmark } from "./bench-context.js";
import { runChild } from "./child-process.js";
import { median } from "./stats.js";
import { num, row, target, times, type TableRow, type TargetCheck } from "./table.js";

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
        `${num(count)}: ours ${num(ours.heapBytesPerTimer)} B heap + ${num(ours.arrayBufferBytesPerTimer)} B typed arrays (RSS +${num(ours.rssBytesPerTimer)} B); ` +
          `baseline ${num(base.heapBytesPerTimer)} B heap (RSS +${num(base.rssBytesPerTimer)} B); ` +
          `the run state both share (run id + PendingTimer) is ${num(ours.runStateBytesPerTimer)} B/timer and not counted; median of ${repeats} processes.`,
      );
    }
    return {
      name: "memory",
      targets,
      title: "4. Memory (bytes per pending timer held by the scheduler, key and payload included)",
      baseline: "one setTimeout per timer + key → handle map",
      rows,
      notes,
    };
  },
};
