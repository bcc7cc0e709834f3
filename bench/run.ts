/**
 * `npm run bench [-- --quick] [-- --only <name>[,<name>…]]`
 *
 * Runs each benchmark (our path beside a naive baseline, in this process or in child
 * processes where a cold start is the point), prints one Markdown table per benchmark on
 * stdout, progress on stderr. A full run of every benchmark rewrites `bench/RESULTS.md`;
 * `--quick` (the CI smoke run) uses small sizes and writes nothing. No figure is asserted.
 */
import { writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Benchmark } from "./bench-context.js";
import { fireThroughput } from "./fire-throughput.js";
import { lateness } from "./lateness.js";
import { describeMachine } from "./machine.js";
import { memory } from "./memory.js";
import { recovery } from "./recovery.js";
import { RepoCache } from "./repo-generator.js";
import { renderResults } from "./results.js";
import { signals } from "./signals.js";
import { nowMs } from "./stats.js";
import { formatTable, type BenchTable } from "./table.js";

/** Every benchmark, in the order they run. */
export const BENCHMARKS: readonly Benchmark[] = [fireThroughput, lateness, recovery, memory, signals];

export interface RunOptions {
  readonly quick: boolean;
  /** Names to run; empty: all. */
  readonly only: readonly string[];
  /** Where tables go (default stdout). */
  readonly print?: (text: string) => void;
  /** Where progress goes (default stderr). */
  readonly log?: (text: string) => void;
}

/**
 * Runs the selected benchmarks and returns their tables.
 * @throws an Error naming an unknown benchmark before anything runs
 */
export async function runBenchmarks(opts: RunOptions): Promise<BenchTable[]> {
  const print = opts.print ?? ((text: string) => process.stdout.write(`${text}\n`));
  const log = opts.log ?? ((text: string) => process.stderr.write(`[bench] ${text}\n`));
  const unknown = opts.only.filter((name) => !BENCHMARKS.some((b) => b.name === name));
  if (unknown.length > 0) {
    throw new Error(`unknown benchmark ${unknown.join(", ")}; known: ${BENCHMARKS.map((b) => b.name).join(", ")}`);
  }
  const selected = opts.only.length === 0 ? BENCHMARKS : BENCHMARKS.filter((b) => opts.only.includes(b.name));
  const cache = new RepoCache();
  const tables: BenchTable[] = [];
  try {
    for (const bench of selected) {
      const t0 = nowMs();
      log(`${bench.name}: start`);
      const table = await bench.run({ quick: opts.quick, cache, log });
      tables.push(table);
      print(`${formatTable(table)}\n`);
      log(`${bench.name}: done in ${((nowMs() - t0) / 1_000).toFixed(1)} s`);
    }
  } finally {
    await cache.dispose();
  }
  return tables;
}

function parseArgs(argv: readonly string[]): { quick: boolean; only: string[] } {
  let quick = false;
  let only: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === "--quick") quick = true;
    else if (arg === "--only") only = only.concat((argv[++i] ?? "").split(",").filter((s) => s !== ""));
    else if (arg.startsWith("--only=")) only = only.concat(arg.slice(7).split(",").filter((s) => s !== ""));
    else throw new Error(`unknown argument ${arg}; usage: npm run bench [-- --quick] [-- --only fire,lateness,recovery,memory,signals]`);
  }
  return { quick, only };
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const machine = describeMachine();
  process.stdout.write(`${machine.join("\n")}\n\n`);
  const tables = await runBenchmarks(args);
  if (!args.quick && args.only.length === 0) {
    const path = join(dirname(fileURLToPath(import.meta.url)), "RESULTS.md");
    await writeFile(path, renderResults(machine, tables));
    process.stderr.write(`[bench] wrote ${path}\n`);
  }
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().catch((error: unknown) => {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exitCode = 1;
  });
}
