/**
 * `npm run bench [-- --quick] [-- --huge] [-- --only <name>[,<name>…]] [-- --help]`
 *
 * Runs each benchmark (our path beside a naive baseline, in this process or in child
 * processes where a cold start is the point), prints one Markdown table per benchmark on
 * stdout, progress on stderr, and the machine's load before and after each. A full run of
 * every benchmark rewrites `bench/RESULTS.md`; `--quick` (the CI smoke run) uses small sizes
 * and writes nothing; `--huge` adds the 1,000,000-pending-timer rows (memory, restart, dispatch
 * memory: several minutes each), and a `--huge` run of only those writes `bench/RESULTS-huge.md` instead.
 * No figure is asserted.
 */
import { readFile, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Benchmark } from "./bench-context.js";
import { append } from "./append.js";
import { catchUp } from "./catch-up.js";
import { cluster } from "./cluster.js";
import { dispatch } from "./dispatch.js";
import { fireThroughput } from "./fire-throughput.js";
import { fireCommit } from "./fire-commit.js";
import { http } from "./http.js";
import { lateness } from "./lateness.js";
import { describeMachine } from "./machine.js";
import { coreCount, formatLoad, loadNow, type SectionLoad, underLoad, waitForCalm } from "./section-load.js";
import { memory } from "./memory.js";
import { peer } from "./peer.js";
import { recovery } from "./recovery.js";
import { restart } from "./restart.js";
import { retention } from "./retention.js";
import { RepoCache } from "./repo-generator.js";
import { renderResults, tableSectionsOf } from "./results.js";
import { signals } from "./signals.js";
import { nowMs } from "./stats.js";
import { formatTable, type BenchTable } from "./table.js";

/** Sections with 1,000,000-pending-timer rows (or retention's 100,000-ended-run point) behind `--huge`. */
const HUGE_SECTIONS: readonly string[] = ["memory", "restart", "recovery", "dispatch", "retention"];

const HUGE_NOTE =
  "This run stops at 100,000 pending timers and 100,000 events per recovery: the 1,000,000-timer memory, restart and dispatch " +
  "memory rows and the 1,000,000-event recovery rows take minutes each (a cold start with 1,000,000 pending timers takes several " +
  "minutes) and run only with `npm run bench -- --huge` (`-- --huge --only memory,restart,recovery,dispatch` writes them to " +
  "`bench/RESULTS-huge.md`; a run of some of them keeps the others' last tables there).";

/** Every benchmark, in the order they run. */
export const BENCHMARKS: readonly Benchmark[] = [fireThroughput, lateness, recovery, memory, signals, restart, catchUp, append, http, dispatch, peer, retention, cluster, fireCommit];

export interface RunOptions {
  readonly quick: boolean;
  /** Add the 1,000,000-timer rows (see BenchContext.huge); default false. */
  readonly huge?: boolean;
  /** Wait up to this long (ms) before each section for the load to fall to the core count; default 0. */
  readonly calmWaitMs?: number;
  /** Names to run; empty: all. */
  readonly only: readonly string[];
  /** Where tables go (default stdout). */
  readonly print?: (text: string) => void;
  /** Where progress goes (default stderr). */
  readonly log?: (text: string) => void;
}

/**
 * Runs the selected benchmarks and returns their tables and the load around each.
 * @throws an Error naming an unknown benchmark before anything runs
 */
export async function runBenchmarks(opts: RunOptions): Promise<{ tables: BenchTable[]; loads: SectionLoad[] }> {
  const print = opts.print ?? ((text: string) => process.stdout.write(`${text}\n`));
  const log = opts.log ?? ((text: string) => process.stderr.write(`[bench] ${text}\n`));
  const unknown = opts.only.filter((name) => !BENCHMARKS.some((b) => b.name === name));
  if (unknown.length > 0) {
    throw new Error(`unknown benchmark ${unknown.join(", ")}; known: ${BENCHMARKS.map((b) => b.name).join(", ")}`);
  }
  const selected = opts.only.length === 0 ? BENCHMARKS : BENCHMARKS.filter((b) => opts.only.includes(b.name));
  const cache = new RepoCache();
  const tables: BenchTable[] = [];
  const loads: SectionLoad[] = [];
  try {
    for (const bench of selected) {
      const waitedMs = await waitForCalm(opts.calmWaitMs ?? 0, log);
      const before = loadNow();
      const t0 = nowMs();
      log(`${bench.name}: start (load ${formatLoad(before)})`);
      const measured = await bench.run({ quick: opts.quick, huge: opts.huge ?? false, cache, log });
      // Sections are numbered by their place in the run, so adding a benchmark renumbers nothing by hand.
      const table = { ...measured, title: `${tables.length + 1}. ${measured.title}` };
      const load: SectionLoad = { name: bench.name, before, after: loadNow(), cores: coreCount(), durationMs: nowMs() - t0, waitedMs };
      tables.push(table);
      loads.push(load);
      print(`${formatTable(table)}\n`);
      print(`- load before / after (1/5/15 min): ${formatLoad(load.before)} → ${formatLoad(load.after)} on ${load.cores} cores${underLoad(load) ? " — **under load**" : ""}\n`);
      log(`${bench.name}: done in ${(load.durationMs / 1_000).toFixed(1)} s (load ${formatLoad(load.after)})`);
    }
  } finally {
    await cache.dispose();
  }
  return { tables, loads };
}

/** A bad `npm run bench` argument: printed as one line (no stack trace), exit 1, nothing run. */
export class BenchUsageError extends Error {}

/**
 * Reads `npm run bench` arguments: `--quick`, `--huge`, `--only NAMES` / `--only=NAMES` (comma-separated,
 * may repeat). `--only` must name at least one benchmark: without one the run would silently be
 * the full one (27 minutes, rewriting bench/RESULTS.md).
 * @throws BenchUsageError for an unknown flag, an `--only` naming nothing, or an unknown benchmark
 */
export function parseBenchArgs(argv: readonly string[]): { quick: boolean; huge: boolean; only: string[] } {
  let quick = false;
  let huge = false;
  let only: string[] = [];
  const names = (value: string | undefined): string[] => {
    const given = (value ?? "").split(",").filter((s) => s !== "");
    if (given.length === 0) throw new BenchUsageError(`--only needs one or more benchmark names (comma-separated), e.g. --only lateness; known: ${BENCHMARKS.map((b) => b.name).join(", ")}`);
    return given;
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === "--quick") quick = true;
    else if (arg === "--huge") huge = true;
    else if (arg === "--only") only = only.concat(names(argv[++i]));
    else if (arg.startsWith("--only=")) only = only.concat(names(arg.slice(7)));
    else throw new BenchUsageError(`unknown argument ${arg}; usage: npm run bench [-- --quick] [-- --huge] [-- --only ${BENCHMARKS.map((b) => b.name).join(",")}] (npm run bench -- --help)`);
  }
  const unknown = only.filter((name) => !BENCHMARKS.some((b) => b.name === name));
  if (unknown.length > 0) throw new BenchUsageError(`unknown benchmark ${unknown.join(", ")}; known: ${BENCHMARKS.map((b) => b.name).join(", ")}`);
  return { quick, huge, only };
}

/** `npm run bench -- --help`: the flags, what a run writes, and every benchmark in run order. */
export function benchHelp(): string {
  return `Usage: npm run bench [-- --quick] [-- --huge] [-- --only NAME[,NAME...]]

Runs each benchmark (our path beside a naive baseline) and prints one Markdown table per
benchmark on stdout, progress and the machine's load on stderr. No figure is asserted.

Options:
  --quick        small sizes, few repeats: the smoke run (figures not meaningful); writes nothing
  --huge         add the 1,000,000-pending-timer and 1,000,000-event rows (${HUGE_SECTIONS.join(", ")}) and
                 the 100,000-ended-run point of retention: minutes each
  --only NAMES   run only these benchmarks (comma-separated; the flag may repeat)
  -h, --help     print this and run nothing

A full run (no --quick, no --only) rewrites bench/RESULTS.md; a --huge run of only
${HUGE_SECTIONS.join(", ")} writes bench/RESULTS-huge.md. Other runs write nothing.

Benchmarks, in run order:
${BENCHMARKS.map((b) => `  ${b.name}`).join("\n")}
`;
}

async function main(): Promise<void> {
  if (process.argv.slice(2).some((arg) => arg === "--help" || arg === "-h")) {
    process.stdout.write(benchHelp());
    return;
  }
  const args = parseBenchArgs(process.argv.slice(2));
  const machine = describeMachine();
  process.stdout.write(`${machine.join("\n")}\n\n`);
  const full = !args.quick && args.only.length === 0;
  // A full run waits (a while) for other jobs' load to pass before each section; it is marked anyway.
  const { tables, loads } = await runBenchmarks({ ...args, calmWaitMs: full ? 10_000 : 0 });
  const hugeOnly = !args.quick && args.huge && args.only.length > 0 && args.only.every((name) => HUGE_SECTIONS.includes(name));
  if (full || hugeOnly) {
    const path = join(dirname(fileURLToPath(import.meta.url)), full ? "RESULTS.md" : "RESULTS-huge.md");
    const intro = full && !args.huge ? [HUGE_NOTE] : hugeOnly ? ["", "This file holds a `--huge` run of only the sections with 1,000,000-timer or 1,000,000-event rows; `RESULTS.md` holds the full run."] : [];
    // A `--huge` run of some of those sections keeps the last tables of the others.
    const previous = hugeOnly ? await readFile(path, "utf8").catch(() => "") : "";
    const carried = tableSectionsOf(previous, tables.map((t) => t.title));
    await writeFile(path, renderResults(machine, tables, loads, intro, carried));
    process.stderr.write(`[bench] wrote ${path}\n`);
  }
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().catch((error: unknown) => {
    if (error instanceof BenchUsageError) process.stderr.write(`bench: ${error.message}\n`);
    else process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exitCode = 1;
  });
}
