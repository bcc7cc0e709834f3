/**
 * A per-commit timeline of the lateness child's fire phase, for finding where a late fire's
 * milliseconds went. Enabled by `LATENESS_TIMELINE=<file>` (see lateness-child.ts); nothing here
 * runs otherwise, and nothing in `src/` or `seams/` knows of it: it wraps what the child hands
 * the host (the store's `writeTreeDelta`, the timers) and patches `node:fs`'s rename and flush
 * calls for the process.
 *
 * Every instant is `performance.now()` (ms). Per commit: when the fire loop cut the batch (the
 * `writeTreeDelta` call), when the plan (`computeDelta`) started and ended, the pack's and the
 * ref lock's renames, the flushes, when the write returned (the ref moved) and when its fires were
 * reported. Per timer wake: when it was armed, for when, and when it ran, split into the queue's
 * arms and the group-commit throttle's. GC pauses from a `gc` PerformanceObserver.
 *
 * `node --import tsx bench/lateness-timeline.ts <file>` prints the breakdown of the median and
 * the p99 fires: due → its commit's cut (split into waiting behind the commit ahead, the
 * throttle, the queue's delivery), cut → plan end, plan end → pack placed, → ref renamed, →
 * reported; and what overlapped the p99 fires' windows (GC, timer wake-ups that ran late).
 */
import * as fs from "node:fs";
import { syncBuiltinESMExports } from "node:module";
import { PerformanceObserver, performance } from "node:perf_hooks";
import { Worker } from "node:worker_threads";
import type { Timers } from "../src/time/clock.js";
import type { RepoStore } from "../src/substrate/types.js";

export interface CommitSpan {
  cut: number;
  planStart?: number;
  planEnd?: number;
  packRename?: number;
  lockRename?: number;
  lockRenameMs?: number;
  flushes: [number, number, string][];
  /** [start, end] of the commit's temp pack file's open (through the thread pool) */
  tmpOpen?: [number, number];
  /** [start, end] of the ref lock's creation */
  lockOpen?: [number, number];
  returned?: number;
  reported?: number;
  sha?: string;
  fires: number;
}

export interface Timeline {
  /** performance.now() − Date.now(): maps epoch ms (shifted by the child's clock offset) to the monotonic clock. */
  monoMinusEpoch: number;
  commits: CommitSpan[];
  /** [armedAt, wantedAt, ranAt, kind] */
  wakes: [number, number, number, "queue" | "throttle"][];
  gc: [number, number, number][];
  /** Every flush of the process: [start, end, what] ("pack", "idx", "lock", "dir", other) */
  allFlushes: [number, number, string][];
  /** CPU ms per thread over the phase (from /proc/self/task; Linux only): [tid, name, nice, ms] */
  threads: [string, string, number, number][];
  /** Per fire: [dueMono, reportedMono, commit index] */
  fires: [number, number, number][];
  /** Jobs handed to a worker thread (the pack merges): [posted, replied] (replied −1: none by the end) */
  merges: [number, number][];
  /** When the first worker thread of the process was created (−1: none in the phase) */
  threadStart: number;
  /** `process.hrtime` (ms) − `performance.now()`: places a CPU profile's samples (V8's monotonic µs) on this timeline. */
  hrMinusPerf: number;
}

export interface TimelineRecorder {
  readonly timers: Timers;
  wrapStore(store: RepoStore): void;
  /** The measured phase starts: per-thread CPU is counted from here. */
  markPhase(): void;
  /** A fire reported: its due instant on the child's clock (epoch ms) and its commit. */
  fired(dueEpochMs: number, clockNowEpochMs: number, commitSha: string): void;
  write(path: string): void;
}

export function startTimeline(): TimelineRecorder {
  const t: Timeline = { monoMinusEpoch: 0, commits: [], wakes: [], gc: [], fires: [], allFlushes: [], threads: [], merges: [], threadStart: -1, hrMinusPerf: Number(process.hrtime.bigint()) / 1e6 - performance.now() };
  // The merge thread's jobs ({id, job} posted, {id, kind} back), seen from this side; other
  // threads' messages (a module loader's hooks thread) are not counted.
  const workerProto = Worker.prototype as unknown as { postMessage(value: unknown, ...rest: unknown[]): void; emit(event: string | symbol, ...args: unknown[]): boolean };
  const postMessage = workerProto.postMessage;
  const jobsOpen = new Map<number, number>();
  workerProto.postMessage = function (this: unknown, value: unknown, ...rest: unknown[]) {
    const message = value as { id?: unknown; job?: unknown } | null;
    if (typeof message?.id === "number" && message.job !== undefined) {
      if (t.threadStart < 0) t.threadStart = performance.now();
      jobsOpen.set(message.id, t.merges.push([performance.now(), -1]) - 1);
    }
    return postMessage.call(this, value, ...rest);
  };
  const emit = workerProto.emit;
  workerProto.emit = function (this: unknown, event: string | symbol, ...args: unknown[]) {
    const reply = args[0] as { id?: unknown; kind?: unknown } | null | undefined;
    if (event === "message" && typeof reply?.id === "number" && typeof reply.kind === "string") {
      const index = jobsOpen.get(reply.id);
      jobsOpen.delete(reply.id);
      if (index !== undefined) (t.merges[index] as [number, number])[1] = performance.now();
    }
    return emit.call(this, event, ...args);
  };
  let threadsAtStart = threadCpu();
  const what = (path: string): string => (path.includes("tmp_pack") || path.endsWith(".pack") ? "pack" : path.includes("tmp_idx") || path.endsWith(".idx") ? "idx" : path.endsWith(".lock") ? "lock" : path.endsWith(".rev") ? "rev" : "dir");
  const fdPath = new Map<number, string>();
  let current: CommitSpan | undefined;
  const bySha = new Map<string, number>();
  const raw = (fs as unknown as { default: typeof fs }).default;
  const renameSync = raw.renameSync;
  raw.renameSync = ((from: fs.PathLike, to: fs.PathLike) => {
    const start = performance.now();
    renameSync(from, to);
    const end = performance.now();
    const name = String(to);
    if (current !== undefined && name.endsWith(".pack")) current.packRename = end;
    if (current !== undefined && String(from).endsWith("heads/main.lock")) {
      current.lockRename = end;
      current.lockRenameMs = end - start;
    }
  }) as typeof fs.renameSync;
  const fsync = raw.fsync;
  raw.fsync = ((fd: number, cb: (e: NodeJS.ErrnoException | null) => void) => {
    const start = performance.now();
    const span = current;
    fsync(fd, (error) => {
      span?.flushes.push([start, performance.now(), "fd"]);
      t.allFlushes.push([start, performance.now(), what(fdPath.get(fd) ?? "")]);
      cb(error);
    });
  }) as typeof fs.fsync;
  const openSync = raw.openSync;
  raw.openSync = ((path: fs.PathLike, flags?: fs.OpenMode, mode?: fs.Mode) => {
    const start = performance.now();
    const fd = openSync(path, flags as fs.OpenMode, mode);
    fdPath.set(fd, String(path));
    if (current !== undefined && String(path).endsWith("heads/main.lock")) current.lockOpen = [start, performance.now()];
    return fd;
  }) as typeof fs.openSync;
  const promises = raw.promises;
  const open = promises.open;
  promises.open = (async (path: fs.PathLike, flags?: string | number, mode?: fs.Mode) => {
    const start = performance.now();
    const span = current;
    const handle = await open(path, flags, mode);
    const sync = handle.sync.bind(handle);
    handle.sync = async () => {
      const at = performance.now();
      await sync();
      t.allFlushes.push([at, performance.now(), what(String(path))]);
    };
    if (span !== undefined && String(path).includes("tmp_pack")) span.tmpOpen = [start, performance.now()];
    return handle;
  }) as typeof promises.open;
  syncBuiltinESMExports();
  const gcObserver = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) t.gc.push([entry.startTime, entry.duration, ((entry as { detail?: { kind?: number } }).detail)?.kind ?? 0]);
  });
  gcObserver.observe({ entryTypes: ["gc"] });
  const timers: Timers = {
    setTimeout(fn, delayMs) {
      const armedAt = performance.now();
      const kind = fn.name === "wake" ? "throttle" : "queue";
      const handle = setTimeout(() => {
        t.wakes.push([armedAt, armedAt + Math.max(0, delayMs), performance.now(), kind]);
        return fn();
      }, Math.max(0, Math.ceil(delayMs)));
      handle.unref();
      return handle;
    },
    clearTimeout(handle) {
      if (handle !== null && typeof handle === "object") clearTimeout(handle as NodeJS.Timeout);
    },
    now: () => performance.now(),
  };
  return {
    timers,
    wrapStore(store) {
      const original = store.writeTreeDelta.bind(store);
      (store as { writeTreeDelta: RepoStore["writeTreeDelta"] }).writeTreeDelta = (async (principal, repoId, ref, opts) => {
        const span: CommitSpan = { cut: performance.now(), flushes: [], fires: 0 };
        t.commits.push(span);
        current = span;
        const result = await original(principal, repoId, ref, {
          ...opts,
          computeDelta: async (parentSha, reads) => {
            span.planStart ??= performance.now();
            const out = await opts.computeDelta(parentSha, reads);
            span.planEnd = performance.now();
            return out;
          },
        });
        span.returned = performance.now();
        if (result.committed && result.commitSha !== null) {
          span.sha = result.commitSha;
          bySha.set(result.commitSha, t.commits.length - 1);
        }
        if (current === span) current = undefined;
        return result;
      }) as RepoStore["writeTreeDelta"];
    },
    markPhase() {
      threadsAtStart = threadCpu();
    },
    fired(dueEpochMs, clockNowEpochMs, commitSha) {
      const now = performance.now();
      if (t.fires.length === 0) t.monoMinusEpoch = now - clockNowEpochMs;
      const index = bySha.get(commitSha) ?? -1;
      const span = t.commits[index];
      if (span !== undefined) {
        span.reported ??= now;
        span.fires += 1;
      }
      t.fires.push([dueEpochMs + t.monoMinusEpoch, now, index]);
    },
    write(path) {
      gcObserver.disconnect();
      for (const [tid, name, nice, ms] of threadCpu()) t.threads.push([tid, name, nice, ms - (threadsAtStart.find((x) => x[0] === tid)?.[3] ?? 0)]);
      fs.writeFileSync(path, JSON.stringify(t));
    },
  };
}

/** Each thread of this process: [tid, name, nice, CPU ms so far] (empty where /proc is missing). */
function threadCpu(): [string, string, number, number][] {
  const out: [string, string, number, number][] = [];
  let tids: string[] = [];
  try {
    tids = fs.readdirSync("/proc/self/task");
  } catch {
    return out;
  }
  const tick = 10; // USER_HZ 100
  for (const tid of tids) {
    try {
      const stat = fs.readFileSync(`/proc/self/task/${tid}/stat`, "utf8");
      const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      out.push([tid, name, Number(f[16]), (Number(f[11]) + Number(f[12])) * tick]);
    } catch {
      // ended
    }
  }
  return out;
}

function quantile(sorted: readonly number[], q: number): number {
  return sorted.length === 0 ? Number.NaN : (sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] as number);
}

/** The breakdown of each fire's lateness, in ms, by phase. */
interface FireParts {
  late: number;
  behind: number;
  throttle: number;
  delivery: number;
  plan: number;
  stage: number;
  ref: number;
  report: number;
  fires: number;
  gc: number;
  /** ms of the fire's wait (due → reported) during which a merge ran on the merge thread */
  merge: number;
  lateWake: number;
  /** Commits cut after the fire was due that did not take it (0 when it went out in the first one). */
  missed: number;
}

function partsOf(t: Timeline): FireParts[] {
  const out: FireParts[] = [];
  const throttles = t.wakes.filter((w) => w[3] === "throttle");
  const queueWakes = t.wakes.filter((w) => w[3] === "queue");
  for (const [due, reported, index] of t.fires) {
    const c = t.commits[index];
    const prev = t.commits[index - 1];
    if (c === undefined || c.planEnd === undefined || c.returned === undefined) continue;
    const prevEnd = prev?.returned ?? Number.NEGATIVE_INFINITY;
    const behind = Math.max(0, Math.min(c.cut, prevEnd) - due);
    const from = Math.max(due, Math.min(c.cut, prevEnd));
    // The throttle the cut waited on: a throttle wake that ran just before the cut.
    const th = throttles.find((w) => w[2] <= c.cut && w[2] >= c.cut - 2 && w[0] >= from - 50);
    const throttle = th === undefined ? 0 : Math.max(0, th[2] - Math.max(from, th[0]));
    const delivery = Math.max(0, c.cut - from - throttle);
    const placed = c.lockRename ?? c.packRename ?? c.returned;
    let gc = 0;
    for (const [start, duration] of t.gc) gc += Math.max(0, Math.min(start + duration, reported) - Math.max(start, due));
    let merge = 0;
    for (const [start, end] of t.merges ?? []) merge += Math.max(0, Math.min(end < 0 ? reported : end, reported) - Math.max(start, due));
    let lateWake = 0;
    for (const w of queueWakes) if (w[1] >= due - 1 && w[1] <= reported) lateWake = Math.max(lateWake, w[2] - w[1]);
    let missed = 0;
    for (let k = index - 1; k >= 0 && (t.commits[k] as CommitSpan).cut > due; k--) missed += 1;
    out.push({
      missed,
      late: reported - due,
      behind,
      throttle,
      delivery,
      plan: c.planEnd - c.cut,
      stage: (c.packRename ?? c.planEnd) - c.planEnd,
      ref: placed - (c.packRename ?? c.planEnd),
      report: reported - placed,
      fires: c.fires,
      gc,
      merge,
      lateWake,
    });
  }
  return out;
}

function printReport(path: string): void {
  const t = JSON.parse(fs.readFileSync(path, "utf8")) as Timeline;
  const parts = partsOf(t).sort((a, b) => a.late - b.late);
  const keys = ["late", "behind", "throttle", "delivery", "plan", "stage", "ref", "report", "fires", "gc", "merge", "lateWake", "missed"] as const;
  const band = (lo: number, hi: number): FireParts => {
    const slice = parts.slice(Math.floor(lo * parts.length), Math.max(Math.floor(lo * parts.length) + 1, Math.floor(hi * parts.length)));
    const mean = {} as FireParts;
    for (const k of keys) mean[k] = slice.reduce((s, p) => s + p[k], 0) / slice.length;
    return mean;
  };
  const row = (label: string, p: FireParts): string => `${label.padEnd(10)} ${keys.map((k) => `${k}=${p[k].toFixed(1)}`).join(" ")}`;
  const missedAny = parts.filter((p) => p.missed > 0).length;
  console.log(`${path}: ${parts.length} fires, ${t.commits.length} commits; fires not in the first commit cut after they were due: ${missedAny} (${((100 * missedAny) / parts.length).toFixed(1)}%)`);
  console.log(row("p45-p55", band(0.45, 0.55)));
  console.log(row("p90-p98", band(0.9, 0.98)));
  console.log(row("p99+", band(0.99, 1)));
  const commitMs = t.commits.filter((c) => c.returned !== undefined).map((c) => (c.returned as number) - c.cut).sort((a, b) => a - b);
  const gaps = t.commits.slice(1).map((c, i) => c.cut - ((t.commits[i] as CommitSpan).returned ?? c.cut)).sort((a, b) => a - b);
  const renames = t.commits.map((c) => c.lockRenameMs ?? 0).sort((a, b) => a - b);
  const wakeLate = (kind: string): number[] => t.wakes.filter((w) => w[3] === kind).map((w) => w[2] - w[1]).sort((a, b) => a - b);
  const q = (a: number[]): string => `p50=${quantile(a, 0.5).toFixed(1)} p90=${quantile(a, 0.9).toFixed(1)} p99=${quantile(a, 0.99).toFixed(1)} max=${quantile(a, 1).toFixed(1)}`;
  console.log(`commit cut→returned ms: ${q(commitMs)}`);
  console.log(`gap previous returned→next cut ms: ${q(gaps)}`);
  console.log(`lock rename ms: ${q(renames)}`);
  console.log(`queue wake late ms: ${q(wakeLate("queue"))} (${wakeLate("queue").length} wakes)`);
  console.log(`throttle wake late ms: ${q(wakeLate("throttle"))} (${wakeLate("throttle").length} wakes)`);
  const slow = t.commits.filter((c) => c.returned !== undefined).sort((a, b) => (b.returned as number) - b.cut - ((a.returned as number) - a.cut)).slice(0, 8);
  const rel = (c: CommitSpan, x: number | undefined): string => (x === undefined ? "-" : (x - c.cut).toFixed(1));
  for (const c of slow) {
    let gc = 0;
    for (const [start, duration] of t.gc) gc += Math.max(0, Math.min(start + duration, c.returned as number) - Math.max(start, c.cut));
    console.log(`slow commit fires=${c.fires} planStart=${rel(c, c.planStart)} planEnd=${rel(c, c.planEnd)} tmpOpen=${rel(c, c.tmpOpen?.[0])}..${rel(c, c.tmpOpen?.[1])} lockOpen=${rel(c, c.lockOpen?.[0])}..${rel(c, c.lockOpen?.[1])} packRename=${rel(c, c.packRename)} lockRename=${rel(c, c.lockRename)} returned=${rel(c, c.returned)} gc=${gc.toFixed(1)}`);
  }
  const flushMs = t.allFlushes.map((f) => f[1] - f[0]).sort((a, b) => a - b);
  console.log(`flushes: ${t.allFlushes.length} (${[...new Set(t.allFlushes.map((f) => f[2]))].map((k) => `${k} ${t.allFlushes.filter((f) => f[2] === k).length}`).join(", ")}), ms ${q(flushMs)}`);
  let overlapped = 0;
  let slowOpens = 0;
  for (const c of t.commits) {
    if (c.tmpOpen === undefined || c.tmpOpen[1] - c.tmpOpen[0] < 5) continue;
    slowOpens += 1;
    const [a, b] = c.tmpOpen;
    if (t.allFlushes.some((f) => f[0] < b && f[1] > a && f[1] - f[0] > 3)) overlapped += 1;
  }
  console.log(`temp pack opens over 5 ms: ${slowOpens}, of which overlapping a flush over 3 ms: ${overlapped}`);
  const all = t.commits.filter((c) => c.returned !== undefined && c.tmpOpen !== undefined);
  const med = (f: (c: CommitSpan) => number): string => quantile(all.map(f).sort((a, b) => a - b), 0.5).toFixed(2);
  console.log(`median commit: planEnd=${med((c) => (c.planEnd as number) - c.cut)} tmpOpenStart=${med((c) => (c.tmpOpen as [number, number])[0] - c.cut)} tmpOpenMs=${med((c) => (c.tmpOpen as [number, number])[1] - (c.tmpOpen as [number, number])[0])} lockOpenEnd=${med((c) => (c.lockOpen?.[1] ?? c.cut) - c.cut)} packRename=${med((c) => (c.packRename ?? c.cut) - c.cut)} lockRename=${med((c) => (c.lockRename ?? c.cut) - c.cut)} returned=${med((c) => (c.returned as number) - c.cut)}`);
  const byName = new Map<string, number>();
  for (const [tid, name, nice, ms] of t.threads ?? []) {
    const key = tid === String(t.threads?.[0]?.[0]) ? "main" : nice > 0 ? `${name} (nice ${nice})` : name;
    byName.set(key, (byName.get(key) ?? 0) + ms);
  }
  console.log(`thread CPU ms over the phase: ${[...byName].map(([k, v]) => `${k} ${v}`).join(", ")}`);
  const first = t.fires.reduce((m, f) => Math.min(m, f[0]), Number.POSITIVE_INFINITY);
  const last = t.fires.reduce((m, f) => Math.max(m, f[1]), Number.NEGATIVE_INFINITY);
  let mergeMs = 0;
  for (const [start, end] of t.merges ?? []) mergeMs += Math.max(0, Math.min(end < 0 ? last : end, last) - Math.max(start, first));
  const overlapping = (lo: number, hi: number): number => {
    const slice = parts.slice(Math.floor(lo * parts.length), Math.max(Math.floor(lo * parts.length) + 1, Math.floor(hi * parts.length)));
    return (100 * slice.filter((p) => p.merge > 0).length) / slice.length;
  };
  const merges = t.merges ?? [];
  console.log(
    `merges on the thread: ${merges.length}, running ${((100 * mergeMs) / (last - first)).toFixed(0)}% of the phase; first posted ${t.threadStart === undefined || t.threadStart < 0 ? "-" : `${(t.threadStart - first).toFixed(0)} ms after the first due`}, took ${merges[0] === undefined ? "-" : (merges[0][1] - merges[0][0]).toFixed(0)} ms, later p50 ${quantile(merges.slice(1).map((m) => m[1] - m[0]).sort((a, b) => a - b), 0.5).toFixed(0)} ms; fires overlapping a merge: p45-p55 ${overlapping(0.45, 0.55).toFixed(0)}%, p99+ ${overlapping(0.99, 1).toFixed(0)}%`,
  );
  const gcMs = t.gc.map((g) => g[1]).sort((a, b) => a - b);
  console.log(`gc: ${t.gc.length} pauses, total ${gcMs.reduce((s, x) => s + x, 0).toFixed(0)} ms, ${q(gcMs)}`);
}

if (process.argv[1]?.endsWith("lateness-timeline.ts")) {
  for (const path of process.argv.slice(2)) printReport(path);
}
