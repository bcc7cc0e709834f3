/**
 * Retention: a deployment aged to N ended runs (4 events each: TimerSet, TimerFired, a step,
 * RunCompleted or RunFailed) plus L live runs with one pending timer each, against a deployment
 * holding only the L live runs. The aged one is written the way a host writes it: run logs
 * appended through the validated store, B runs per commit (one commit per event of a batch),
 * one simulated hour per batch, and a retention pass (`endedRunsAfterMs` one day) every
 * simulated day, so ended runs move to `refs/archive/runs` in batches as a serving host does.
 * Then, on fresh copies of each aged deployment and of the live-only one, measured alternately in
 * three rounds (one with `--quick`), each figure the median of its rounds (the load on a shared
 * machine moves within seconds):
 * - repo size on disk per ended run, against `git gc --aggressive` on a copy;
 * - cold and warm host start (fresh process, bench/restart-child.ts: start → all armed);
 * - `workflow-host timers --json` (fresh process, wall time);
 * - the `runs/` tree a fire commit writes (its bytes at the tip: the live tree);
 * - fire throughput: every remaining live timer made due at once, start → all fired.
 * Sizes: N = 10,000 and 30,000 (L = 1,000); 100,000 with `--huge`; `--quick` N = 600, L = 50.
 *
 * `RETENTION_KEEP_DIR=<folder>` keeps each aged deployment and the live-only one there (as
 * `aged-<N>/` and `live/`, each with a `deployment.json`) and reuses them when present, so the
 * start-up and read-side rows can be measured again without aging again (100,000 ended runs take
 * about half an hour). Every measurement runs on a fresh copy; the kept folders are never written.
 * A reused deployment is only valid for changes to the read side (start, recovery, `timers`, the
 * fire path reading the repo): it was written by the code of the run that made it, so the disk
 * row and anything about how the host writes (packing, retention commits) reflect that code.
 * Its size after `git gc --aggressive` (minutes at 100,000) is measured once and kept with it
 * (`gcBytes` in `deployment.json`): git's repack of the same objects does not depend on the code.
 */
import { spawn } from "node:child_process";
import { cp, mkdir, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { loadavg } from "node:os";
import { constants, PerformanceObserver } from "node:perf_hooks";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { archiveEndedRuns } from "../src/host/archive-ended-runs.js";
import { DERIVED_DIR_NAME } from "../src/substrate/derived-files.js";
import { serializeEvent } from "../src/workflow/events.js";
import type { RunEvent } from "../src/workflow/types.js";
import { WORKFLOW_RUN_KIND } from "../src/workflow/workflow-run-kind.js";
import { BASE_MS, type BenchContext, type Benchmark } from "./bench-context.js";
import { runMilestones } from "./child-process.js";
import { startPhaseProfile } from "./phase-profile.js";
import { createOffsetClock, openRig, openStore } from "./scheduler-rig.js";
import { median, nowMs } from "./stats.js";
import { ms, num, row, target, times, type TableRow, type TargetCheck } from "./table.js";

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
const REPO = "aged";
const CLI_MAIN = fileURLToPath(new URL("../src/cli/main.ts", import.meta.url));

interface Deployment {
  readonly dataDir: string;
  readonly gitdir: string;
  readonly ended: number;
  readonly live: number;
  readonly commits: number;
  readonly agingMs: number;
  /** Bytes of a copy after `git gc --aggressive`, when a kept deployment's earlier run measured it. */
  readonly gcBytes?: number;
}

const liveRunId = (i: number): string => `live-${String(i).padStart(6, "0")}`;
const endedRunId = (i: number): string => `done-${String(i).padStart(7, "0")}`;

/** Run 0's timer is due for the cold start, run 1's for the warm one, the rest 30 days on. */
function liveFireAtMs(i: number): number {
  return i === 0 ? BASE_MS : i === 1 ? BASE_MS + HOUR_MS : BASE_MS + 30 * DAY_MS + i * 1_000;
}

const iso = (msValue: number): string => new Date(msValue).toISOString();

/** Writes a deployment aged to `ended` runs (see the module comment) beside `live` live runs. */
export async function ageDeployment(dataDir: string, ended: number, live: number, batch: number): Promise<Deployment> {
  const startedMs = nowMs();
  let clockMs = BASE_MS - Math.ceil(ended / batch) * HOUR_MS - 2 * DAY_MS;
  const store = openStore(dataDir, () => new Date(clockMs), { watch: false });
  const rid = { kind: WORKFLOW_RUN_KIND, id: REPO };
  let commits = 0;
  const put = async (files: Map<string, Uint8Array>, message: string): Promise<void> => {
    await store.writeTreeDelta(null, rid, "refs/heads/main", { message, computeDelta: () => ({ puts: files }) });
    commits += 1;
  };
  const event = (body: Record<string, unknown>): Uint8Array => serializeEvent(body as unknown as RunEvent);
  try {
    await store.initRepo(null, rid);
    for (let from = 0; from < live; from += batch) {
      const files = new Map<string, Uint8Array>();
      for (let i = from; i < Math.min(live, from + batch); i += 1) {
        files.set(`runs/${liveRunId(i)}/events/1.json`, event({ seq: 1, type: "TimerSet", at: iso(clockMs), data: { timerId: "t", fireAt: iso(liveFireAtMs(i)) } }));
      }
      await put(files, `Start live runs from ${from}`);
    }
    const cache = new Map();
    for (let from = 0; from < ended; from += batch) {
      const ids: string[] = [];
      for (let i = from; i < Math.min(ended, from + batch); i += 1) ids.push(endedRunId(i));
      const fireAt = iso(clockMs + 60_000);
      const steps: [number, (runId: string, n: number) => Record<string, unknown>][] = [
        [1, () => ({ type: "TimerSet", at: iso(clockMs), data: { timerId: "wait", fireAt, stepId: "wait" } })],
        [2, () => ({ type: "TimerFired", at: fireAt, data: { timerId: "wait", scheduledFor: fireAt, firedAt: fireAt } })],
        [3, (_r, n) => ({ type: "StepCompleted", at: fireAt, data: { stepId: "charge", output: { ok: true, n } } })],
        [4, (_r, n) => ({ type: n % 10 === 0 ? "RunFailed" : "RunCompleted", at: iso(clockMs + 120_000) })],
      ];
      for (const [seq, body] of steps) {
        const files = new Map<string, Uint8Array>();
        ids.forEach((runId, k) => files.set(`runs/${runId}/events/${seq}.json`, event({ seq, ...body(runId, from + k) })));
        await put(files, `Batch ${from}: seq ${seq}`);
      }
      clockMs += HOUR_MS;
      if (Math.floor(from / batch) % 24 === 23) {
        // As the host's loop does: a pass that left due runs (over `maxRuns`) is followed by
        // another until none is left. One pass a day left 200 of the day's 1,200 due runs on
        // main, so main grew with the deployment's age and so did every commit's cost.
        for (;;) {
          const pass = await archiveEndedRuns({ store, principal: null, repoId: REPO, nowMs: clockMs, endedRunsAfterMs: DAY_MS, cache });
          if (pass.commitSha !== null) commits += 2;
          if (pass.remaining === 0 || pass.commitSha === null) break;
        }
      }
    }
    // The last pass as the host makes it at start: everything ended over a day ago.
    clockMs = BASE_MS - DAY_MS / 2;
    for (;;) {
      const pass = await archiveEndedRuns({ store, principal: null, repoId: REPO, nowMs: BASE_MS + 2 * DAY_MS, endedRunsAfterMs: DAY_MS, cache });
      if (pass.commitSha !== null) commits += 2;
      if (pass.remaining === 0) break;
    }
  } finally {
    await store.close();
  }
  return { dataDir, gitdir: join(dataDir, "deployments", `${REPO}.git`), ended, live, commits, agingMs: nowMs() - startedMs };
}

/**
 * The deployment kept under `keepDir/name` (see RETENTION_KEEP_DIR in the module comment), or a
 * new one made by `make` in `freshDir` and then copied there; `undefined` keepDir just makes one.
 */
async function keptDeployment(keepDir: string | undefined, name: string, freshDir: string, make: (dir: string) => Promise<Deployment>): Promise<Deployment & { readonly reused: boolean; readonly keptIn?: string }> {
  if (keepDir === undefined) return { ...(await make(freshDir)), reused: false };
  const kept = join(keepDir, name);
  const meta = await readFile(join(kept, "deployment.json"), "utf8").catch(() => null);
  if (meta !== null) {
    const saved = JSON.parse(meta) as Omit<Deployment, "dataDir" | "gitdir">;
    await cp(join(kept, "data"), freshDir, { recursive: true });
    return { ...saved, dataDir: freshDir, gitdir: join(freshDir, "deployments", `${REPO}.git`), reused: true, keptIn: kept };
  }
  const dep = await make(freshDir);
  await rm(kept, { recursive: true, force: true });
  await mkdir(kept, { recursive: true });
  await cp(freshDir, join(kept, "data"), { recursive: true });
  const { dataDir: _d, gitdir: _g, ...saved } = dep;
  await writeFile(join(kept, "deployment.json"), `${JSON.stringify(saved)}\n`);
  return { ...dep, reused: false, keptIn: kept };
}

/** Records the gc size of a kept deployment (see RETENTION_KEEP_DIR), once. */
async function keepGcBytes(dep: Deployment & { readonly keptIn?: string }, gcBytes: number): Promise<void> {
  if (dep.keptIn === undefined || dep.gcBytes !== undefined) return;
  const path = join(dep.keptIn, "deployment.json");
  const saved = JSON.parse(await readFile(path, "utf8")) as Record<string, unknown>;
  await writeFile(path, `${JSON.stringify({ ...saved, gcBytes })}\n`);
}

/** A full garbage collection of this process's heap (`gc`, made available without `--expose-gc`). */
function collectGarbage(): void {
  setFlagsFromString("--expose-gc");
  (runInNewContext("gc") as () => void)();
}

/** Bytes of every file under `dir`, recursively. */
async function diskBytes(dir: string): Promise<number> {
  let total = 0;
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    total += entry.isDirectory() ? await diskBytes(path) : Number((await stat(path)).size);
  }
  return total;
}

function runProcess(cmd: string, args: readonly string[]): Promise<{ code: number | null; stdout: string; stderr: string; wallMs: number }> {
  const t0 = nowMs();
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ["ignore", "pipe", "pipe"] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on("data", (c: Buffer) => out.push(c));
    child.stderr.on("data", (c: Buffer) => err.push(c));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout: Buffer.concat(out).toString("utf8"), stderr: Buffer.concat(err).toString("utf8"), wallMs: nowMs() - t0 }));
  });
}

/** Size of a copy of the repository after `git gc --aggressive`. */
async function gcAggressiveBytes(gitdir: string, scratch: string): Promise<number> {
  const copy = join(scratch, "gc-copy.git");
  await cp(gitdir, copy, { recursive: true });
  const gc = await runProcess("git", ["--git-dir", copy, "gc", "--aggressive", "--prune=now", "--quiet"]);
  if (gc.code !== 0) throw new Error(`git gc --aggressive failed: ${gc.stderr.slice(-500)}`);
  const bytes = await diskBytes(copy);
  await rm(copy, { recursive: true, force: true });
  return bytes;
}

interface Measured {
  /** CPU time of the cold and warm start processes up to `armed` (ms, loading included). */
  readonly coldCpuMs: number;
  readonly warmCpuMs: number;
  /** CPU time of this process from scheduler start to the last fire (ms). */
  readonly fireCpuMs: number;
  /** Wall and CPU time of this process until `scheduler.start()` resolved (ms; part of the above). */
  readonly startMs: number;
  readonly startCpuMs: number;
  /** Garbage collections on this thread from scheduler start to the last fire: major count, all ms. */
  readonly majorGcs: number;
  readonly gcMs: number;
  /** This process's V8 heap in use at scheduler start (bytes). */
  readonly heapAtStart: number;
  readonly bytes: number;
  readonly gcBytes: number;
  readonly coldMs: number;
  readonly warmMs: number;
  readonly timersMs: number;
  readonly runsTreeBytes: number;
  readonly firesPerSec: number;
  readonly fired: number;
}

interface StartDone {
  readonly pending: number;
  readonly armedCpuMs: number;
}

/**
 * @param tag names the fire phase's CPU profile (`RETENTION_CPU_PROFILE=<file>.cpuprofile` writes
 *   `<file>-<tag>.cpuprofile`, scheduler start to the last fire)
 */
async function measure(dep: Deployment, scratch: string, tag: string): Promise<Measured> {
  const bytes = await diskBytes(dep.gitdir);
  const gcBytes = dep.gcBytes ?? (await gcAggressiveBytes(dep.gitdir, scratch));
  const runsTree = await runProcess("git", ["--git-dir", dep.gitdir, "cat-file", "-s", "main:runs"]);
  const runsTreeBytes = Number(runsTree.stdout.trim());
  await rm(join(dep.gitdir, DERIVED_DIR_NAME), { recursive: true, force: true });
  const start = async (clockMs: number): Promise<[number, number]> => {
    const { at, result } = await runMilestones<StartDone>("restart-child.ts", [dep.dataDir, REPO, String(clockMs)], ["--expose-gc"]);
    if (result.pending < dep.live - 1) throw new Error(`a start recovered ${result.pending} pending timers; expected about ${dep.live}`);
    return [at.get("armed") ?? Number.NaN, result.armedCpuMs];
  };
  const [coldMs, coldCpuMs] = await start(BASE_MS + 1);
  const [warmMs, warmCpuMs] = await start(BASE_MS + HOUR_MS + 1);
  const timers = await runProcess(process.execPath, ["--import", "tsx", CLI_MAIN, "timers", "--data-dir", dep.dataDir, "--repo", REPO, "--json"]);
  if (timers.code !== 0) throw new Error(`workflow-host timers exited ${String(timers.code)}: ${timers.stderr.slice(-500)}`);
  // Fire throughput: every remaining live timer due at once.
  const clock = createOffsetClock(BASE_MS + 31 * DAY_MS + dep.live * 1_000 - Date.now());
  const due = dep.live - 2;
  let fired = 0;
  let allFired!: () => void;
  const done = new Promise<void>((resolve) => {
    allFired = resolve;
  });
  // Both deployments' fire phases start from a collected heap: this process aged a deployment
  // just before, and the live-only one was measured first with hundreds of MB of that garbage
  // still in the heap (no major collection while it ran), the aged one after a collection had
  // shrunk the heap's limit (two major collections in its fire phase): a difference of the
  // bench's order, not of the deployments.
  collectGarbage();
  const stopProfile = await startPhaseProfile("RETENTION_CPU_PROFILE", "cpu", tag);
  const gcs = { major: 0, ms: 0 };
  const gcWatch = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      gcs.ms += entry.duration;
      if ((entry as { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) gcs.major += 1;
    }
  });
  gcWatch.observe({ entryTypes: ["gc"] });
  const heapAtStart = process.memoryUsage().heapUsed;
  const t0 = nowMs();
  const cpu0 = process.cpuUsage();
  let startMs = Number.NaN;
  let startCpu = { user: Number.NaN, system: 0 };
  const rig = openRig(dep.dataDir, [REPO], clock.clock, (e) => {
    if (e.type === "fired") {
      fired += 1;
      if (fired >= due) allFired();
    }
  }, {}, { watch: false });
  try {
    await rig.scheduler.start();
    startMs = nowMs() - t0;
    startCpu = process.cpuUsage(cpu0);
    await done;
  } finally {
    await rig.close();
  }
  const fireMs = nowMs() - t0;
  const cpu = process.cpuUsage(cpu0);
  gcWatch.disconnect();
  await stopProfile();
  return { coldCpuMs, warmCpuMs, fireCpuMs: (cpu.user + cpu.system) / 1000, startMs, startCpuMs: (startCpu.user + startCpu.system) / 1000, majorGcs: gcs.major, gcMs: gcs.ms, heapAtStart, bytes, gcBytes, coldMs, warmMs, timersMs: timers.wallMs, runsTreeBytes, firesPerSec: (fired / fireMs) * 1_000, fired };
}

/** Live-only and aged measurements, alternated, per size (median of each figure); 1 with `--quick`. */
const ROUNDS = 3;

/** Each figure's median over the rounds (see ROUNDS). */
function medianMeasured(rounds: readonly Measured[]): Measured {
  const first = rounds[0];
  if (first === undefined) throw new Error("no measurement");
  const out: Record<string, number> = {};
  for (const key of Object.keys(first) as (keyof Measured)[]) out[key] = median(rounds.map((r) => r[key]));
  return out as unknown as Measured;
}

export const retention: Benchmark = {
  name: "retention",
  async run(ctx: BenchContext) {
    const live = ctx.quick ? 50 : 1_000;
    // RETENTION_SIZES=30000,… runs only those sizes (when looking into one of them).
    const only = (process.env.RETENTION_SIZES ?? "").split(",").filter((v) => v !== "").map(Number);
    const sizes = only.length > 0 ? only : ctx.quick ? [600] : ctx.huge ? [10_000, 30_000, 100_000] : [10_000, 30_000];
    const batch = ctx.quick ? 20 : 50;
    const rows: TableRow[] = [];
    const notes: string[] = [];
    const targets: TargetCheck[] = [];
    const keepDir = process.env.RETENTION_KEEP_DIR === undefined || process.env.RETENTION_KEEP_DIR === "" ? undefined : process.env.RETENTION_KEEP_DIR;
    const baseDir = await ctx.cache.scratch("retention-live");
    ctx.log(`retention: ${num(live)} live runs only`);
    const baseDep = await keptDeployment(keepDir, `live-${live}`, baseDir, (d) => ageDeployment(d, 0, live, batch));
    for (const ended of sizes) {
      ctx.log(`retention: aging to ${num(ended)} ended runs + ${num(live)} live`);
      const dir = await ctx.cache.scratch(`retention-${ended}`);
      const dep = await keptDeployment(keepDir, `aged-${ended}-${live}`, dir, (d) => ageDeployment(d, ended, live, batch));
      if (dep.reused) ctx.log(`retention: reusing the deployment kept in ${keepDir ?? ""} (aged ${ms(dep.agingMs)} by the run that made it)`);
      // The live-only deployment is measured beside each aged one, alternately, ROUNDS times, each
      // on a fresh copy (a measurement fires its timers), and each figure is the median of its
      // rounds: on a shared machine the load moves within seconds, and two measurements taken one
      // after the other once compare the load as much as the deployments.
      const rounds = ctx.quick ? 1 : ROUNDS;
      const bases: Measured[] = [];
      const ageds: Measured[] = [];
      const loads: number[] = [loadavg()[0] ?? Number.NaN];
      let baseKnown: Deployment = baseDep;
      let agedKnown: Deployment = dep;
      // One measurement on a fresh copy of `known` (which carries the gc size an earlier round found).
      const measureCopy = async (known: Deployment, name: string, tag: string): Promise<Measured> => {
        const copy = await ctx.cache.scratch(name);
        await cp(known.dataDir, copy, { recursive: true });
        const measured = await measure({ ...known, dataDir: copy, gitdir: join(copy, "deployments", `${REPO}.git`) }, await ctx.cache.scratch("retention-gc"), tag);
        await rm(copy, { recursive: true, force: true });
        return measured;
      };
      for (let round = 0; round < rounds; round++) {
        const b = await measureCopy(baseKnown, `retention-live-${ended}`, `${ended}-live-${round}`);
        bases.push(b);
        baseKnown = { ...baseKnown, gcBytes: b.gcBytes };
        const a = await measureCopy(agedKnown, `retention-aged-${ended}`, `${ended}-aged-${round}`);
        ageds.push(a);
        agedKnown = { ...agedKnown, gcBytes: a.gcBytes };
        loads.push(loadavg()[0] ?? Number.NaN);
      }
      const base = medianMeasured(bases);
      const m = medianMeasured(ageds);
      await keepGcBytes(baseDep, base.gcBytes);
      await keepGcBytes(dep, m.gcBytes);
      const label = `${num(ended)} ended + ${num(live)} live`;
      const perRun = (m.bytes - base.bytes) / ended;
      const gcPerRun = (m.gcBytes - base.gcBytes) / ended;
      rows.push(row(`${label}: disk bytes per ended run (vs git gc --aggressive)`, { value: perRun, text: `${num(perRun)} B` }, { value: gcPerRun, text: `${num(gcPerRun)} B (gc --aggressive)` }, "lower"));
      const vsLive = (what: string, ours: number, baseline: number, show: (v: number) => string, better: "lower" | "higher" = "lower"): TableRow =>
        row(`${label}: ${what}`, { value: ours, text: show(ours) }, { value: baseline, text: `${show(baseline)} (live only)` }, better);
      rows.push(vsLive("cold start → all armed", m.coldMs, base.coldMs, ms));
      rows.push(vsLive("warm start → all armed", m.warmMs, base.warmMs, ms));
      rows.push(vsLive("workflow-host timers", m.timersMs, base.timersMs, ms));
      rows.push(vsLive("runs/ tree bytes per fire commit", m.runsTreeBytes, base.runsTreeBytes, (v) => `${num(v)} B`));
      rows.push(vsLive("fire throughput", m.firesPerSec, base.firesPerSec, (v) => `${num(v)} fires/s`, "higher"));
      notes.push(
        `${label}: ${dep.reused ? "reused a kept deployment, aged earlier" : "aged"} in ${ms(dep.agingMs)} through ${num(dep.commits)} commits (${batch} runs a commit); on disk ${num(m.bytes)} B, after git gc --aggressive ${num(m.gcBytes)} B ` +
          `(${times(m.bytes / m.gcBytes)} of it, whole repo); live-only deployment ${num(base.bytes)} B (gc ${num(base.gcBytes)} B); fired ${num(m.fired)} timers; ` +
          `medians of ${rounds} rounds, live-only and aged measured alternately (1-min load ${loads.map((l) => l.toFixed(2)).join(" → ")}); ` +
          `by round, cold start ${ageds.map((r) => ms(r.coldMs)).join(" / ")} vs ${bases.map((r) => ms(r.coldMs)).join(" / ")}, warm start ${ageds.map((r) => ms(r.warmMs)).join(" / ")} vs ${bases.map((r) => ms(r.warmMs)).join(" / ")}, fires/s ${ageds.map((r) => num(r.firesPerSec)).join(" / ")} vs ${bases.map((r) => num(r.firesPerSec)).join(" / ")}. ` +
          `CPU time, aged vs live only: cold start ${ms(m.coldCpuMs)} vs ${ms(base.coldCpuMs)} (${times(m.coldCpuMs / base.coldCpuMs)}), warm start ${ms(m.warmCpuMs)} vs ${ms(base.warmCpuMs)} ` +
          `(${times(m.warmCpuMs / base.warmCpuMs)}), start to last fire ${ms(m.fireCpuMs)} vs ${ms(base.fireCpuMs)} (${times(m.fireCpuMs / base.fireCpuMs)}), ` +
          `of which scheduler start ${ms(m.startCpuMs)} vs ${ms(base.startCpuMs)} (wall ${ms(m.startMs)} vs ${ms(base.startMs)}); ` +
          `garbage collection meanwhile ${ms(m.gcMs)} (${m.majorGcs} major) vs ${ms(base.gcMs)} (${base.majorGcs} major), heap in use at start ${num(m.heapAtStart / 1e6)} MB vs ${num(base.heapAtStart / 1e6)} MB.`,
      );
      if (!ctx.quick && ended === sizes[sizes.length - 1]) {
        const ratio = (a: number, b: number): number => a / b;
        targets.push(target(`disk per ended run ≤ 1.5× git gc --aggressive (${num(ended)} ended)`, ratio(perRun, gcPerRun), 1.5, "max", times, [perRun, gcPerRun]));
        targets.push(target(`cold start within 1.5× of live only (${num(ended)} ended)`, ratio(m.coldMs, base.coldMs), 1.5, "max", times, [m.coldMs, base.coldMs]));
        targets.push(target(`warm start within 1.5× of live only (${num(ended)} ended)`, ratio(m.warmMs, base.warmMs), 1.5, "max", times, [m.warmMs, base.warmMs]));
        targets.push(target(`runs/ tree bytes per fire commit within 1.5× of live only (${num(ended)} ended)`, ratio(m.runsTreeBytes, base.runsTreeBytes), 1.5, "max", times, [m.runsTreeBytes, base.runsTreeBytes]));
        targets.push(target(`fire throughput within 1.5× of live only (${num(ended)} ended)`, ratio(base.firesPerSec, m.firesPerSec), 1.5, "max", times, [m.firesPerSec, base.firesPerSec]));
        targets.push(target(`workflow-host timers within 2× of live only (${num(ended)} ended)`, ratio(m.timersMs, base.timersMs), 2, "max", times, [m.timersMs, base.timersMs]));
      }
      await rm(dir, { recursive: true, force: true });
    }
    notes.push("Starts and `timers` are fresh processes (node and tsx loading the sources included); fire throughput is in this process, from scheduler start (recovery included) to the last fire.");
    if (!ctx.huge && !ctx.quick) notes.push("The 100,000-ended-run point runs only with `npm run bench -- --huge` (aging it takes several minutes).");
    notes.push("Today's behaviour without retention (issue 16): 2,000 ended runs took 18 MB (3.9× git gc --aggressive), and a cold start with 4,000 ended runs 7.6 s.");
    return {
      name: "retention",
      title: "Retention (an aged deployment against one holding only its live runs)",
      baseline: "see row",
      rows,
      notes,
      ...(targets.length > 0 ? { targets } : {}),
    };
  },
};
