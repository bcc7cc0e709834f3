/**
 * The crash scenario shared by the crash test (CI size) and the soak (`npm run soak`):
 *
 * A deployment with `timers` one-shots due over `spreadMs` and one cron series ticking every
 * second (misfire `skip`) is served by `workflow-host serve` in a child process, while another
 * process keeps setting, rescheduling and cancelling timers. The host is SIGKILLed `kills`
 * times and restarted each time. Kill moments are drawn from a seeded source:
 * - during start-up (before or while recovering),
 * - at a random moment while serving,
 * - inside a commit (every fourth kill): when `refs/heads/main.lock` appears while only the
 *   host writes, the host is frozen, and if the lock is still there it is killed at once or a
 *   few milliseconds later (objects half written, the lock filled, the rename pending).
 * Meanwhile the ref file is read every couple of milliseconds. Afterwards a last host runs until
 * every due timer is handled and is stopped with SIGTERM, and the log is checked (see
 * `./timer-invariants.ts`), with git's own view of the history and `git fsck --strict`.
 */
import { existsSync, watch, type FSWatcher } from "node:fs";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { checkDeployments } from "../../../src/host/check-deployments.js";
import { openWorkflowStore } from "../../../src/host/open-workflow-store.js";
import { nextTick } from "../../../src/workflow/cron.js";
import { eventPath } from "../../../src/workflow/paths.js";
import { WORKFLOW_RUN_KIND } from "../../../src/workflow/workflow-run-kind.js";
import { fsckViolations, gitHistory, historyViolations, readDeploymentLog } from "./deployment-log.js";
import { createPrng, type Prng } from "./prng.js";
import { startRefSampler, type RefSamples } from "./ref-sampler.js";
import { sleep, spawnServe, type WatchedChild } from "./serve-process.js";
import { checkTimerLog, type TimerCheckStats } from "./timer-invariants.js";
import { startTimerWorkload, type TimerWorkloadStats } from "./timer-workload.js";

export const CRASH_REPO = "crash";
const CRON_RUN = "cron";
const CRON_TIMER = "tick";
const CRON_GRACE_MS = 1_000;

export interface CrashScenarioOptions {
  /** An empty folder; the data dir is made inside it. */
  readonly root: string;
  readonly seed: number;
  /** One-shots written before the first start (default 2 000). */
  readonly timers?: number;
  /** They fall due evenly over this long, starting `leadMs` after setup (ms, default 5 000). */
  readonly spreadMs?: number;
  readonly leadMs?: number;
  /** SIGKILLs (default 25). */
  readonly kills?: number;
  /** Longest time a host serves before a random kill (ms, default 1 500). */
  readonly serveMsMax?: number;
  /**
   * Spread the kills over about this long (ms): each host then serves for a random time around
   * what is left per kill, instead of up to `serveMsMax` (the soak's mode).
   */
  readonly durationMs?: number;
  /** The host's ref poll (ms, default 150). */
  readonly pollMs?: number;
  /** Runs the one-shots are spread over (default 40). */
  readonly runs?: number;
  /** Progress lines (default: none). */
  readonly log?: (line: string) => void;
}

export interface CrashReport {
  readonly seed: number;
  readonly violations: readonly string[];
  readonly kills: number;
  readonly killsByMode: Readonly<Record<KillMode, number>>;
  /** Kills that left `main.lock` behind: the host died between taking the ref lock and moving the ref. */
  readonly killsInsideCommit: number;
  /** Starts that ended on their own before the kill (with their last line). */
  readonly unexpectedExits: readonly string[];
  readonly refSamples: { readonly reads: number; readonly distinct: number; readonly torn: number };
  readonly commits: number;
  readonly timers: TimerCheckStats;
  readonly workload: TimerWorkloadStats;
  readonly elapsedMs: number;
  readonly drainMs: number;
}

export type KillMode = "startup" | "serving" | "commit";

/** Runs the scenario; never throws for a broken invariant (they are in `violations`). */
export async function runCrashScenario(opts: CrashScenarioOptions): Promise<CrashReport> {
  const startedMs = Date.now();
  const log = opts.log ?? (() => undefined);
  const rng = createPrng(opts.seed);
  const timers = opts.timers ?? 2_000;
  const spreadMs = opts.spreadMs ?? 5_000;
  const kills = opts.kills ?? 25;
  const serveMsMax = opts.serveMsMax ?? 1_500;
  const pollMs = opts.pollMs ?? 150;
  const runCount = opts.runs ?? 40;
  const dataDir = join(opts.root, "data");
  const gitdir = join(dataDir, "deployments", `${CRASH_REPO}.git`);
  const refPath = join(gitdir, "refs", "heads", "main");
  const lockPath = `${refPath}.lock`;
  const violations: string[] = [];
  const unexpectedExits: string[] = [];
  const killsByMode: Record<KillMode, number> = { startup: 0, serving: 0, commit: 0 };
  let killsInsideCommit = 0;

  await mkdir(dataDir, { recursive: true });
  const store = openWorkflowStore({ dataDir, watch: false });
  const rid = { kind: WORKFLOW_RUN_KIND, id: CRASH_REPO };
  const runIds = Array.from({ length: runCount }, (_, i) => `r${String(i).padStart(2, "0")}`);
  await store.initRepo(null, rid);

  // All one-shots and the series' first tick in one commit, due from `leadMs` after now.
  const firstDueMs = Date.now() + (opts.leadMs ?? 2_000);
  const puts = new Map<string, string>();
  const perRun = new Map<string, number>();
  for (let i = 0; i < timers; i += 1) {
    const runId = runIds[i % runCount] as string;
    const seq = (perRun.get(runId) ?? 0) + 1;
    perRun.set(runId, seq);
    const fireAt = new Date(firstDueMs + Math.floor((i * spreadMs) / Math.max(1, timers))).toISOString();
    puts.set(eventPath(runId, seq), JSON.stringify({ seq, type: "TimerSet", data: { timerId: `t${i}`, fireAt } }));
  }
  const cronFireAt = nextTick("* * * * * *", "UTC", new Date(firstDueMs).toISOString()) as string;
  puts.set(eventPath(CRON_RUN, 1), JSON.stringify({ seq: 1, type: "TimerSet", data: { timerId: CRON_TIMER, fireAt: cronFireAt, cron: "* * * * * *" } }));
  await store.writeTreeDelta(null, rid, "refs/heads/main", { message: `Set ${timers} timers and a series`, computeDelta: async () => ({ puts }) });
  log(`setup: ${timers} timers due ${new Date(firstDueMs).toISOString()} + ${spreadMs} ms, cron from ${cronFireAt}`);

  // When hosts ran: a recorded take-up of a late-committed cron tick must fall inside one.
  const hostUp: [number, number][] = [];
  const sampler = startRefSampler(refPath);
  const workload = startTimerWorkload({ store, repoId: CRASH_REPO, runIds, rng: createPrng(opts.seed ^ 0x5bd1e995), everyMs: [40, 160], aheadMs: [0, 3_000] });

  try {
    const killPhaseEndMs = opts.durationMs === undefined ? null : Date.now() + opts.durationMs;
    for (let kill = 0; kill < kills; kill += 1) {
      // Every fourth kill aims inside a commit; the others fall during start-up or service.
      const mode: KillMode = kill % 4 === 3 ? "commit" : rng.pick<KillMode>(["startup", "serving", "serving"]);
      // With a duration, the kills of the "serving" kind (half of them) absorb what is left per
      // kill beyond the ~2.3 s a kill of any kind costs on average (start-up, ref-lock waits).
      const perKillMs = killPhaseEndMs === null ? 0 : (killPhaseEndMs - Date.now()) / (kills - kill);
      const servingMax = killPhaseEndMs === null ? serveMsMax : Math.max(500, 4 * (perKillMs - 2_300));
      const upFromMs = Date.now();
      const serve = await startServe(dataDir, pollMs, unexpectedExits);
      const outcome = await killAt(serve, mode, rng, servingMax, lockPath, () => workload.pause());
      killsByMode[outcome.mode] += 1;
      await serve.exited;
      hostUp.push([upFromMs, Date.now()]);
      if (outcome.mode === "commit" && existsSync(lockPath)) killsInsideCommit += 1;
      workload.resume();
      log(`kill ${kill + 1}/${kills}: ${outcome.mode}${outcome.mode === "commit" && existsSync(lockPath) ? " (ref lock left behind)" : ""}`);
    }
  } finally {
    await workload.stop();
  }

  // A last host handles everything due (serving out the duration, if any is left), then stops
  // gracefully.
  const drainStartMs = Date.now();
  const last = await startServe(dataDir, pollMs, unexpectedExits);
  await last.waitForLine(/"event":"serving"/, 60_000).catch((error: unknown) => violations.push(`the last host never served: ${String(error)}`));
  if (opts.durationMs !== undefined) await sleep(Math.max(0, startedMs + opts.durationMs - Date.now()));
  const drained = await drain(dataDir, drainStartMs);
  if (!drained) violations.push("timers still due 120 s after the last start");
  const endMs = Date.now();
  last.kill("SIGTERM");
  const exit = await last.exited;
  hostUp.push([drainStartMs, Date.now()]);
  if (exit.code !== 0) violations.push(`the last host exited ${String(exit.code ?? exit.signal)} on SIGTERM: ${last.lines().slice(-5).join(" | ")}`);
  const samples = sampler.stop();

  const deployment = await readDeploymentLog(dataDir, CRASH_REPO);
  const history = await gitHistory(gitdir);
  const checked = checkTimerLog({ runs: deployment.runs, history, refSamples: samples, endMs, dueGraceMs: 2_000, cronGraceMs: CRON_GRACE_MS, hostUp });
  violations.push(...checked.violations);
  violations.push(...(await historyViolations(gitdir, history, samples)));
  violations.push(...(await fsckViolations(gitdir)));
  const report = await checkDeployments(store);
  for (const problem of report.problems) violations.push(`check: ${problem.path}: ${problem.message}`);
  await store.close();

  return {
    seed: opts.seed,
    violations,
    kills,
    killsByMode,
    killsInsideCommit,
    unexpectedExits,
    refSamples: summary(samples),
    commits: history.length,
    timers: checked.stats,
    workload: workload.stats,
    elapsedMs: Date.now() - startedMs,
    drainMs: endMs - drainStartMs,
  };
}

function summary(samples: RefSamples): CrashReport["refSamples"] {
  return { reads: samples.reads, distinct: samples.values.length, torn: samples.torn.length };
}

/**
 * Starts a host. A start that fails at once (for instance `host_locked` while a dead host's
 * lock is judged) is recorded and retried: a crashed host must never keep the next one out.
 */
async function startServe(dataDir: string, pollMs: number, unexpectedExits: string[]): Promise<WatchedChild> {
  for (let attempt = 0; ; attempt += 1) {
    const serve = spawnServe(dataDir, ["--poll-ms", String(pollMs)]);
    // Give a failing start a moment to show itself; a healthy one is still starting.
    const early = await Promise.race([serve.exited, sleep(50).then(() => null)]);
    if (early === null) return serve;
    unexpectedExits.push(`start exited ${String(early.code ?? early.signal)}: ${serve.lines().slice(-3).join(" | ")}`);
    if (attempt >= 20) throw new Error(`serve keeps exiting: ${unexpectedExits.slice(-3).join("\n")}`);
    await sleep(500);
  }
}

async function killAt(serve: WatchedChild, mode: KillMode, rng: Prng, serveMsMax: number, lockPath: string, pauseWrites: () => Promise<void>): Promise<{ mode: KillMode }> {
  if (mode === "startup") {
    await Promise.race([sleep(rng.int(0, 2_500)), serve.exited]);
    serve.kill("SIGKILL");
    return { mode };
  }
  const serving = await serve.waitForLine(/"event":"serving"/, 60_000).then(
    () => true,
    () => false,
  );
  if (!serving) {
    serve.kill("SIGKILL");
    return { mode: "startup" };
  }
  if (mode === "serving") {
    await Promise.race([sleep(rng.int(0, serveMsMax)), serve.exited]);
    serve.kill("SIGKILL");
    return { mode };
  }
  // Only the host may take the ref lock now, so a lock that appears is the host's commit. On
  // each sign of it the host is frozen (SIGSTOP) and the lock looked at: there, the host is
  // inside a commit — killed at once, or let run a few milliseconds more first (later phases:
  // objects written, lock filled, rename pending); gone, the host runs on to its next commit.
  await pauseWrites();
  const immediate = rng.chance(0.5);
  const afterMs = rng.int(1, 10);
  const hit = await new Promise<boolean>((resolve) => {
    let watcher: FSWatcher | null = null;
    const done = (value: boolean): void => {
      clearTimeout(timeout);
      watcher?.close();
      watcher = null;
      resolve(value);
    };
    const timeout = setTimeout(() => done(false), 4_000);
    watcher = watch(lockPath.slice(0, lockPath.lastIndexOf("/")), (_event, name) => {
      if (name !== "main.lock" || watcher === null || serve.done) return;
      serve.kill("SIGSTOP");
      if (!existsSync(lockPath)) {
        serve.kill("SIGCONT");
        return;
      }
      if (immediate) serve.kill("SIGKILL");
      else {
        serve.kill("SIGCONT");
        setTimeout(() => serve.kill("SIGKILL"), afterMs);
      }
      done(true);
    });
    void serve.exited.then(() => done(false));
  });
  if (!hit) {
    serve.kill("SIGKILL");
    return { mode: "serving" };
  }
  return { mode };
}

/** Waits until the log arms no one-shot due more than a moment ago and the series ticks on. */
async function drain(dataDir: string, sinceMs: number): Promise<boolean> {
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    await sleep(500);
    const { runs } = await readDeploymentLog(dataDir, CRASH_REPO);
    const nowMs = Date.now();
    let due = 0;
    let seriesFresh = false;
    for (const [runId, runLog] of runs) {
      for (const timer of runLog.state.pendingTimers.values()) {
        if (timer.cron === undefined && Date.parse(timer.fireAt) < nowMs - 500) due += 1;
      }
      if (runId === CRON_RUN) {
        const fires = runLog.events.filter((e) => e.type === "TimerFired");
        const lastFire = fires.at(-1) as { data: { scheduledFor: string } } | undefined;
        seriesFresh = lastFire !== undefined && Date.parse(lastFire.data.scheduledFor) > sinceMs;
      }
    }
    if (due === 0 && seriesFresh) return true;
  }
  return false;
}
