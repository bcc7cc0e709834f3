/**
 * Catch-up planning: the time from "this series is due" to the planned TimerSkipped (count,
 * first, last) and next TimerSet, as the scheduler does it (`prepareTicksBetween` in 10 ms
 * slices, then the pure `planDueTimer`), against the number of missed ticks. It should stay flat:
 * the count costs O(months + offset changes), never O(ticks). Also shown: the longest slice
 * between two yields (the event-loop turn the planning holds).
 * Baseline: counting by walking croner tick by tick, as before; measured up to 20 000 ticks
 * and extrapolated beyond (marked "est."), since a long window would take minutes to hours.
 */
import { compileCron, prepareTicksBetween } from "../src/workflow/cron.js";
import { firstTickAfter } from "../src/workflow/cron.js";
import { applyEvent, emptyRunState } from "../src/workflow/run-state.js";
import { planDueTimer } from "../src/workflow/timer-ledger.js";
import type { RunEvent } from "../src/workflow/types.js";
import type { BenchContext, Benchmark } from "./bench-context.js";
import { median } from "./stats.js";
import { ms, num, row, type TableRow } from "./table.js";

interface Case {
  readonly label: string;
  readonly cron: string;
  readonly zone: string;
  readonly fireAt: string;
}

const UNTIL = "2026-11-30T12:00:30.000Z";
const WALK_LIMIT = 20_000;

const CASES: readonly Case[] = [
  { label: "daily UTC, 10 days", cron: "0 0 * * *", zone: "UTC", fireAt: "2026-11-20T00:00:00.000Z" },
  { label: "daily UTC, 3 years", cron: "0 0 * * *", zone: "UTC", fireAt: "2023-12-01T00:00:00.000Z" },
  { label: "daily UTC, since year 0001", cron: "0 0 * * *", zone: "UTC", fireAt: "0001-01-01T00:00:00.000Z" },
  { label: "02:30 New York, since year 1900", cron: "30 2 * * *", zone: "America/New_York", fireAt: "1900-01-01T07:30:00.000Z" },
  { label: "every minute UTC, 1 day", cron: "* * * * *", zone: "UTC", fireAt: "2026-11-29T12:00:00.000Z" },
  { label: "every minute UTC, 1 year", cron: "* * * * *", zone: "UTC", fireAt: "2025-11-30T12:00:00.000Z" },
  { label: "every second Berlin, since year 0000", cron: "* * * * * *", zone: "Europe/Berlin", fireAt: "0000-01-01T00:00:00.000Z" },
];

function stateWith(c: Case): ReturnType<typeof emptyRunState> {
  const set = { seq: 1, type: "TimerSet", data: { timerId: "tick", fireAt: c.fireAt, cron: c.cron, timezone: c.zone } } as unknown as RunEvent;
  return applyEvent(emptyRunState("bench"), set);
}

/** One plan as the scheduler makes it; returns [total ms, longest slice ms, missed ticks]. */
async function planOnce(c: Case, untilMs: number): Promise<[number, number, number]> {
  const state = stateWith(c);
  const until = new Date(untilMs).toISOString();
  let sliceStart = performance.now();
  let longest = 0;
  const pause = async (): Promise<void> => {
    const now = performance.now();
    if (now - sliceStart < 10) return;
    longest = Math.max(longest, now - sliceStart);
    await new Promise((resolve) => setImmediate(resolve));
    sliceStart = performance.now();
  };
  const t0 = performance.now();
  sliceStart = t0;
  await prepareTicksBetween(c.cron, c.zone, c.fireAt, until, pause);
  const plan = planDueTimer(state, { timerId: "tick", fireAt: c.fireAt, setSeq: 1 }, { nowMs: untilMs, misfire: "skip" });
  const end = performance.now();
  longest = Math.max(longest, end - sliceStart);
  const missed = plan.kind === "append" ? (plan.skipped?.count ?? 0) + plan.fired.length : 0;
  return [end - t0, longest, missed];
}

/** The old way: one croner call per tick. [ms, ticks walked, complete?] */
function walk(c: Case, untilMs: number): [number, number, boolean] {
  const compiled = compileCron(c.cron, c.zone);
  const t0 = performance.now();
  let n = 0;
  let at: number | null = Date.parse(c.fireAt);
  while (at !== null && at <= untilMs && n < WALK_LIMIT) {
    n += 1;
    at = firstTickAfter(compiled, at);
  }
  return [performance.now() - t0, n, at === null || at > untilMs];
}

export const catchUp: Benchmark = {
  name: "catch-up",
  async run(ctx: BenchContext) {
    const cases = ctx.quick ? CASES.filter((_, i) => i % 2 === 0) : CASES;
    const repeats = ctx.quick ? 2 : 5;
    const rows: TableRow[] = [];
    const notes: string[] = [];
    let worstSlice = 0;
    for (const c of cases) {
      ctx.log(`catch-up: ${c.label}`);
      const totals: number[] = [];
      let missed = 0;
      let first = 0;
      let caseSlice = 0;
      for (let r = 0; r < repeats; r++) {
        // A new "now" each time, so nothing is served from the count memo; zone tables stay warm
        // after the first run, whose time is shown apart.
        const [total, longest, count] = await planOnce(c, Date.parse(UNTIL) + r * 1_000);
        if (r === 0) first = total;
        else totals.push(total);
        worstSlice = Math.max(worstSlice, longest);
        caseSlice = Math.max(caseSlice, longest);
        missed = count;
      }
      const [walkMs, walked, complete] = walk(c, Date.parse(UNTIL));
      const perTick = walkMs / walked;
      const baselineMs = complete ? walkMs : perTick * missed;
      const ours = median(totals.length > 0 ? totals : [first]);
      rows.push(
        row(
          `${c.label}: ${num(missed)} missed ticks`,
          { value: ours, text: `${ms(ours)} (first ${ms(first)}; turn ≤ ${ms(caseSlice)})` },
          { value: baselineMs, text: complete ? ms(baselineMs) : `${ms(baselineMs)} est.` },
          "lower",
        ),
      );
    }
    notes.push(`ours: prepareTicksBetween (10 ms slices) + planDueTimer, median of ${repeats - 1} runs with warm zone tables; "first" is the first run in this process (zone transitions and month shapes looked up).`);
    notes.push(`longest slice between two yields over all runs: ${ms(worstSlice)} (the planning's longest event-loop turn).`);
    notes.push(`baseline walked croner up to ${num(WALK_LIMIT)} ticks; "est." rows extrapolate its per-tick cost.`);
    return { name: "catch-up", title: "Catch-up planning (missed ticks counted and planned, skip policy)", baseline: "croner walk, one call per tick", rows, notes };
  },
};
