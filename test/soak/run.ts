/**
 * The soak: the crash scenario of `test/integration/reliability/crash.test.ts`, longer — by
 * default 10 minutes and 100 SIGKILLs of `workflow-host serve` while timers fall due, a cron
 * series ticks every second and another process sets, reschedules and cancels timers. Not part
 * of CI (`npm run soak`).
 *
 * Environment: SOAK_MINUTES (10), SOAK_KILLS (100), SOAK_TIMERS (2000), SOAK_SEED (random;
 * printed, so a failure can be replayed). Exit code 0 when every invariant held, 1 otherwise;
 * the data dir of a failed run is kept for inspection.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runCrashScenario } from "../integration/reliability/crash-scenario.js";
import { seedFromEnv } from "../integration/reliability/prng.js";
import { killAllWatched } from "../integration/reliability/serve-process.js";

function numberFromEnv(name: string, fallback: number): number {
  const value = Number(process.env[name]);
  return Number.isFinite(value) && value > 0 ? value : fallback;
}

const minutes = numberFromEnv("SOAK_MINUTES", 10);
const kills = Math.round(numberFromEnv("SOAK_KILLS", 100));
const timers = Math.round(numberFromEnv("SOAK_TIMERS", 2_000));
const seed = seedFromEnv("SOAK_SEED");
const root = await mkdtemp(join(tmpdir(), "wfh-soak-"));
const startedMs = Date.now();
const stamp = (): string => `${((Date.now() - startedMs) / 1_000).toFixed(0).padStart(4)} s`;

console.log(`soak: ${minutes} min, ${kills} kills, ${timers} timers, seed ${seed}, data in ${root}`);
let ok = false;
try {
  const report = await runCrashScenario({
    root,
    seed,
    timers,
    kills,
    durationMs: minutes * 60_000,
    log: (line) => console.log(`${stamp()}  ${line}`),
  });
  ok = report.violations.length === 0;
  console.log(JSON.stringify({ ...report, violations: report.violations.length }, null, 2));
  for (const violation of report.violations.slice(0, 50)) console.log(`VIOLATION ${violation}`);
  console.log(
    ok
      ? `soak passed: ${report.kills} kills (${report.killsInsideCommit} inside a commit), ${report.timers.fired} one-shot fires, ${report.timers.cronFired} cron fires + ${report.timers.cronSkippedTicks} skipped ticks, ${report.commits} commits, ${report.refSamples.reads} ref reads, none torn, in ${Math.round(report.elapsedMs / 1_000)} s (seed ${seed})`
      : `soak FAILED with ${report.violations.length} violations (seed ${seed}); data kept in ${root}`,
  );
} catch (error) {
  console.log(`soak FAILED: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}; data kept in ${root}`);
} finally {
  await killAllWatched();
  if (ok) await rm(root, { recursive: true, force: true });
}
process.exitCode = ok ? 0 : 1;
