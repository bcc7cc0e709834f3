/**
 * `npm run bench:startup [-- --reps N]`
 *
 * Start-up time of the command line as users run it (the built `bin/workflow-host.js`, so run
 * `npm run build` first; the npm script does): `--version`, `--help` and `timers` on a small
 * data dir (2 deployments, 6 runs, 12 timers), each beside a bare `node -e 0`. The four
 * commands run in interleaved rounds, so a burst of load elsewhere on the machine hits them
 * alike; the table gives medians and each median's ratio to bare node's. Measures, asserts
 * nothing. Targets (issue 12): `--help` ≤ 2×, `timers` ≤ 4×.
 */
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const bin = join(root, "bin", "workflow-host.js");

interface Case {
  readonly name: string;
  readonly args: readonly string[];
}

function run(args: readonly string[]): number {
  const t0 = performance.now();
  const result = spawnSync(process.execPath, args, { stdio: ["ignore", "ignore", "pipe"], encoding: "utf8" });
  const ms = performance.now() - t0;
  if (result.status !== 0) throw new Error(`node ${args.join(" ")} exited ${String(result.status)}: ${result.stderr}`);
  return ms;
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

async function seed(dataDir: string): Promise<void> {
  for (const repo of ["payments", "reports"]) {
    run([bin, "repo", "create", "--data-dir", dataDir, "--repo", repo]);
    for (let r = 1; r <= 3; r++) {
      run([bin, "timer", "set", "--data-dir", dataDir, "--repo", repo, "--run", `run-${r}`, "--timer", "due", "--delay-ms", String(r * 86_400_000)]);
      run([bin, "timer", "set", "--data-dir", dataDir, "--repo", repo, "--run", `run-${r}`, "--timer", "nightly", "--cron", "0 2 * * *", "--timezone", "Europe/Berlin"]);
    }
  }
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const repsAt = argv.indexOf("--reps");
  const reps = repsAt >= 0 ? Number(argv[repsAt + 1]) : 15;
  if (!Number.isInteger(reps) || reps < 1) throw new Error("usage: npm run bench:startup [-- --reps N]");
  if (!existsSync(join(root, "dist", "src", "cli", "main.js"))) throw new Error("dist/ is missing: run npm run build first");
  const dataDir = await mkdtemp(join(tmpdir(), "workflow-host-startup-"));
  try {
    await seed(dataDir);
    const cases: Case[] = [
      { name: "node -e 0", args: ["-e", "0"] },
      { name: "workflow-host --version", args: [bin, "--version"] },
      { name: "workflow-host --help", args: [bin, "--help"] },
      { name: "workflow-host timers (2 deployments, 6 runs)", args: [bin, "timers", "--data-dir", dataDir] },
    ];
    for (const c of cases) run(c.args); // warm the file cache
    const times = cases.map(() => [] as number[]);
    for (let i = 0; i < reps; i++) cases.forEach((c, k) => times[k]?.push(run(c.args)));
    const base = median(times[0] ?? []);
    const lines = [
      `### Start-up (median of ${reps} runs each, interleaved; built CLI, node ${process.version})`,
      "",
      "| command | median ms | × node -e 0 |",
      "|---|---:|---:|",
      ...cases.map((c, k) => {
        const m = median(times[k] ?? []);
        return `| \`${c.name}\` | ${m.toFixed(0)} | ${(m / base).toFixed(2)} |`;
      }),
    ];
    process.stdout.write(`${lines.join("\n")}\n`);
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
}

await main();
