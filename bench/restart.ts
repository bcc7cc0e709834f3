/**
 * Restart: a host process started on a deployment of N runs × 2 events, one pending timer each,
 * one of them overdue (see bench/host-start.ts). Two figures per start, from the spawn of the
 * process, read on this (the parent's) clock as the child reports each milestone:
 * - start → first due timer fired (its TimerFired committed, durability fsync);
 * - start → all armed (`scheduler.start()` resolved: every pending timer read and armed).
 * Cold: no recovery index; warm: the next start, reading the index the cold start left. The
 * warm rows' baseline is our own cold start. Sizes: 100,000 pending; 1,000,000 with `--huge`.
 * Every start includes node and tsx loading the sources (~1 s here; noted per size).
 */
import type { BenchContext, Benchmark } from "./bench-context.js";
import { hostStarts, type HostStart, type HostStarts } from "./host-start.js";
import { ms, num, row, type TableRow } from "./table.js";

const NO_BASELINE = { value: Number.NaN, text: "—" };

export const restart: Benchmark = {
  name: "restart",
  async run(ctx: BenchContext) {
    const sizes = ctx.quick ? [5_000] : ctx.huge ? [100_000, 1_000_000] : [100_000];
    const rows: TableRow[] = [];
    const notes: string[] = [];
    for (const count of sizes) {
      const size = `${num(count)} pending`;
      let starts: HostStarts;
      try {
        starts = await hostStarts(ctx, count, ctx.quick || count > 100_000 ? 1 : 2, "restart");
      } catch (error) {
        // A start that fails (out of memory at the biggest size) is shown, not hidden.
        rows.push(row(`${size}: start failed`, { value: Number.NaN, text: "failed" }, NO_BASELINE, "lower"));
        notes.push(`${num(count)}: the start failed: ${error instanceof Error ? error.message.slice(0, 300) : String(error)}`);
        continue;
      }
      const { cold, warm } = starts;
      if (starts.measuredIn !== "restart") notes.push(`${num(count)}: these starts were measured once, during the ${starts.measuredIn} section (its load applies), and shared with it.`);
      const fig = (v: number) => ({ value: v, text: ms(v) });
      rows.push(row(`${size}, cold: start → first due timer fired`, fig(cold.spawnToFiredMs), NO_BASELINE, "lower"));
      rows.push(row(`${size}, cold: start → all armed`, fig(cold.spawnToArmedMs), NO_BASELINE, "lower"));
      rows.push(
        row(`${size}, warm: start → first due timer fired`, fig(warm.spawnToFiredMs), { value: cold.spawnToFiredMs, text: `${ms(cold.spawnToFiredMs)} (our cold start)` }, "lower"),
      );
      rows.push(row(`${size}, warm: start → all armed`, fig(warm.spawnToArmedMs), { value: cold.spawnToArmedMs, text: `${ms(cold.spawnToArmedMs)} (our cold start)` }, "lower"));
      const detail = (s: HostStart): string =>
        `modules loaded at ${ms(s.spawnToLoadedMs)}, then start() → all armed ${ms(s.armedMs)}, → first fired ${ms(s.firedMs)} (child's clock)`;
      notes.push(`${num(count)}, cold: ${detail(cold)}; warm: ${detail(warm)}.`);
      if (starts.tries.length > 1) {
        notes.push(
          `${num(count)}: ${starts.tries.length} tries, start → all armed cold ${starts.tries.map((t) => ms(t.cold.spawnToArmedMs)).join(", ")}, ` +
            `warm ${starts.tries.map((t) => ms(t.warm.spawnToArmedMs)).join(", ")} (the try with the median time to all armed shown whole; of two, the slower).`,
        );
      }
      const order = (s: HostStart): string => (s.firedMs >= s.armedMs ? "after every pending timer was armed" : "before every pending timer was armed");
      notes.push(`${num(count)}: the due timer fired ${order(cold)} (cold) and ${order(warm)} (warm).`);
    }
    if (!ctx.huge) notes.push("The 1,000,000-pending rows run only with `npm run bench -- --huge` (a cold start of that size takes several minutes); the last such run is in `bench/RESULTS-huge.md`.");
    notes.push("Measured outside this suite (issue 22): pg-boss armed 1,000,000 pending jobs 0.87 s after start and fired the first due one of 100,000 at 0.31 s.");
    return {
      name: "restart",
      title: "Restart (host process start → first due timer fired, → all armed; durability fsync)",
      baseline: "see row",
      rows,
      notes,
    };
  },
};
