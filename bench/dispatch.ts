/**
 * Dispatch: from the fire commit to the start of the consumer's handler, and how many events a
 * no-op handler gets through.
 * - lag: `rate` one-shot timers a second fall due (one per run, 1 ms apart); the lag of each is
 *   the time from the scheduler's `fired` report (the fire commit is on disk) to the handler's
 *   start — in-process (a function consumer) and to a loopback HTTP target (server receipt);
 * - throughput: a consumer with a no-op handler reads a log that already holds `events`
 *   SignalReceived (10 commits), from its start to the last event handled.
 * Baseline (the user-written alternative): a `subscribeKind` loop that calls the handler, then
 * acks by committing its cursor (one commit per event on its own ref), on the same store.
 * The host writes with durability "none" (its default) in both.
 * - memory: a whole host (durability fsync, as `serve`) on N runs with a pending timer each and
 *   one consumer (no per-run awaiter), after a warm start in which 1,000 timers came due and
 *   were handled, against the same host running the baseline loop, and the host alone
 *   (bench/dispatch-memory-child.ts, one fresh process each). 1,000,000 timers only with `--huge`.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ConsumerOptions } from "../seams/dispatch/dispatch-types.js";
import { createWorkflowHost, type WorkflowHost } from "../src/host/host.js";
import type { RepoStore } from "../src/substrate/types.js";
import { subscribeKind } from "../src/workflow/subscribe-kind.js";
import { WORKFLOW_RUN_KIND } from "../src/workflow/workflow-run-kind.js";
import { DERIVED_DIR_NAME } from "../src/substrate/derived-files.js";
import { BASE_MS, type BenchContext, type Benchmark } from "./bench-context.js";
import { runMilestones } from "./child-process.js";
import type { RepoSpec } from "./repo-generator.js";
import { nowMs, percentile, sleep } from "./stats.js";
import { ms, num, row, target, type TableRow, type TargetCheck } from "./table.js";

const REPO = "bench";
const rid = { kind: WORKFLOW_RUN_KIND, id: REPO };
const SECRET = "bench-secret-0123456789";

type Mode = "function" | "http" | "baseline-function" | "baseline-http";

interface Target {
  readonly url: string;
  /** Epoch ms each POSTed key arrived. */
  readonly arrivals: Map<string, number>;
  close(): Promise<void>;
}

async function startTarget(): Promise<Target> {
  const arrivals = new Map<string, number>();
  const server: Server = createServer((req, res) => {
    const at = nowMs();
    const key = String(req.headers["idempotency-key"] ?? "");
    req.resume();
    req.on("end", () => {
      if (!arrivals.has(key)) arrivals.set(key, at);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    arrivals,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** Attempts of one cursor write before the baseline loop gives up. */
const ACK_ATTEMPTS = 20;

/**
 * The baseline: subscribeKind from `from`, handler, then one cursor commit per event. A cursor
 * write that fails (a host refusing commits while its lock is unconfirmed, on a loaded machine)
 * is tried again, as a careful user would. Never rejects: it resolves with the error that ended
 * it early, or undefined (aborted or ended).
 */
function baselineLoop(store: RepoStore, from: string, handle: (key: string, event: { runId: string; seq: number }) => Promise<void>, signal: AbortSignal): Promise<unknown> {
  return (async () => {
    const events = subscribeKind(store, null, rid, "main", undefined, { from, kinds: ["TimerFired", "SignalReceived"], signal });
    for await (const found of events) {
      const data = (found.event as { data?: { timerId?: string; scheduledFor?: string } }).data;
      const key = found.event.type === "TimerFired" ? `${REPO}/${found.runId}/${data?.timerId}/${data?.scheduledFor}` : `${REPO}/${found.runId}/${found.seq}`;
      await handle(key, found);
      for (let attempt = 1; ; attempt++) {
        try {
          await store.writeTree(null, rid, "refs/consumers/baseline", { files: { "cursor.json": JSON.stringify({ commitSha: found.commitSha, runId: found.runId, seq: found.seq }) }, message: "ack" });
          break;
        } catch (error) {
          if (signal.aborted || attempt >= ACK_ATTEMPTS) throw error;
          await sleep(Math.min(100 * attempt, 1_000));
        }
      }
    }
    return undefined;
  })().catch((error: unknown) => (signal.aborted ? undefined : error));
}

async function withHost<T>(onFired: (key: string, atMs: number) => void, work: (host: WorkflowHost, dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), "workflow-host-bench-dispatch-"));
  const host = createWorkflowHost({
    dataDir: dir,
    watch: false,
    onEvent: (e) => {
      if (e.type === "fired") onFired(`${e.repoId}/${e.runId}/${e.timerId}/${e.scheduledFor}`, nowMs());
    },
  });
  try {
    return await work(host, dir);
  } finally {
    await host.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

/** Lag of `fires` timers falling due at `rate`/s, fire report → handler start (ms each). */
async function lag(mode: Mode, fires: number, rate: number, log: (m: string) => void): Promise<number[]> {
  const firedAt = new Map<string, number>();
  const startedAt = new Map<string, number>();
  const http = mode.endsWith("http") ? await startTarget() : null;
  try {
    return await withHost(
      (key, at) => firedAt.set(key, at),
      async (host) => {
        await host.createDeployment(REPO);
        const firstDueMs = Date.now() + 3_000;
        // One TimerSet per run, written in one commit before the host starts.
        const puts = new Map<string, string>();
        for (let i = 0; i < fires; i++) {
          const fireAt = new Date(firstDueMs + Math.floor((i * 1_000) / rate)).toISOString();
          puts.set(`runs/r${i}/events/1.json`, JSON.stringify({ seq: 1, type: "TimerSet", at: new Date().toISOString(), data: { timerId: "t", fireAt } }));
        }
        await host.store.writeTreeDelta(null, rid, "main", { message: "timers", computeDelta: () => ({ puts }) });
        const from = (await host.store.resolveRef(null, rid, "main")) as string;
        const abort = new AbortController();
        let loop: Promise<unknown> = Promise.resolve();
        const consumer: Omit<ConsumerOptions, "name"> = { concurrency: 16, filter: { types: ["TimerFired"] }, startFrom: "head" };
        if (mode === "function") host.dispatch({ ...consumer, name: "bench", handler: (d) => void startedAt.set(d.idempotencyKey, nowMs()) });
        if (mode === "http") host.dispatch({ ...consumer, name: "bench", http: { url: (http as Target).url, secret: SECRET } });
        await host.start();
        if (mode === "baseline-function") loop = baselineLoop(host.store, from, async (key) => void startedAt.set(key, nowMs()), abort.signal);
        if (mode === "baseline-http") {
          loop = baselineLoop(host.store, from, async (key, e) => {
            const res = await fetch((http as Target).url, { method: "POST", body: JSON.stringify(e), headers: { "idempotency-key": key } });
            await res.arrayBuffer();
          }, abort.signal);
        }
        const seen = http === null ? startedAt : http.arrivals;
        const deadline = Date.now() + 3_000 + (fires * 1_000) / rate + 120_000;
        while (seen.size < fires && Date.now() < deadline) await sleep(50);
        abort.abort();
        const ended = await loop;
        if (ended !== undefined) log(`dispatch: the ${mode} loop ended early: ${String(ended)}`);
        if (seen.size < fires) log(`dispatch: ${mode} handled only ${seen.size} of ${fires} in time`);
        const out: number[] = [];
        for (const [key, at] of seen) {
          const fired = firedAt.get(key);
          if (fired !== undefined) out.push(at - fired);
        }
        return out;
      },
    );
  } finally {
    await http?.close();
  }
}

/** Events a second a no-op consumer (or the baseline loop) gets through from a ready backlog. */
async function throughput(baseline: boolean, events: number): Promise<number> {
  return withHost(
    () => {},
    async (host) => {
      await host.createDeployment(REPO);
      const runs = 200;
      const perRun = Math.ceil(events / runs);
      const at = new Date().toISOString();
      const perCommit = Math.ceil(perRun / 10);
      for (let first = 1; first <= perRun; first += perCommit) {
        const puts = new Map<string, string>();
        for (let r = 0; r < runs; r++) {
          for (let seq = first; seq < first + perCommit && seq <= perRun; seq++) {
            puts.set(`runs/r${r}/events/${seq}.json`, JSON.stringify({ seq, type: "SignalReceived", signalName: "go", signalId: `s-${seq}`, payload: null, at }));
          }
        }
        await host.store.writeTreeDelta(null, rid, "main", { message: `signals from ${first}`, computeDelta: () => ({ puts }) });
      }
      const total = runs * perRun;
      let handled = 0;
      const t0 = nowMs();
      if (baseline) {
        const abort = new AbortController();
        const ended = await baselineLoop(host.store, "genesis", async () => {
          handled += 1;
          if (handled === total) abort.abort();
        }, abort.signal);
        if (ended !== undefined) throw ended;
      } else {
        let done: () => void = () => {};
        const finished = new Promise<void>((resolve) => (done = resolve));
        host.dispatch({ name: "noop", concurrency: 16, handler: () => {
          handled += 1;
          if (handled === total) done();
        } });
        await host.start();
        await finished;
      }
      return (total * 1_000) / (nowMs() - t0);
    },
  );
}

interface MemoryStart {
  readonly mode: "none" | "ours" | "baseline";
  /** start() to resolved, and to every due timer fired and handled (ms, the child's clock). */
  readonly startMs: number;
  readonly handledMs: number;
  readonly fired: number;
  readonly handled: number;
  /** Longest event-loop delay from start() to every due timer handled (ms). */
  readonly maxLoopDelayMs: number;
  /** Fire commits refused (reported commit_failed) and retried. */
  readonly commitFailures: number;
  readonly rss: number;
  readonly heapUsed: number;
  readonly external: number;
  readonly arrayBuffers: number;
  readonly rssLoaded: number;
}

const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;

/**
 * The memory row's deployment: `pending` runs with one pending timer each. Run 0's timer is due
 * for the cold start, run 1's for the warm start of the host alone, runs 2 … due+1 (one ms
 * apart from BASE_MS + 30 days) for the start with one consumer, the next `due` runs (from
 * BASE_MS + 31 days) for the start with the baseline loop, the rest from BASE_MS + 60 days. The
 * children's clocks run (a host retries a refused commit at a later wall-clock instant, which
 * a stopped clock never reaches), and a day between groups keeps each start's count exact.
 */
export function dispatchMemorySpec(pending: number, due: number): RepoSpec {
  return {
    label: `dispatch-memory-${due}`,
    runs: pending,
    eventsPerRun: 2,
    pending: (run) => [run === 0 ? BASE_MS : run === 1 ? BASE_MS + HOUR_MS : run <= due + 1 ? BASE_MS + 30 * DAY_MS + run : run <= 2 * due + 1 ? BASE_MS + 31 * DAY_MS + run : BASE_MS + 60 * DAY_MS + run],
  };
}

/**
 * One cold start (host alone; it writes the recovery index), then warm starts of the host
 * alone, with one consumer, and with the baseline loop, on a copy of the N-run deployment
 * ({@link dispatchMemorySpec}). In each warm start with a reader, `due` timers come due.
 * Exported so the row can be measured alone, without the lag and throughput rows before it.
 * @throws when a start fires or handles other than the expected count (its stderr included)
 */
export async function memoryStarts(ctx: BenchContext, pending: number, due: number): Promise<Record<"cold" | "none" | "ours" | "baseline", MemoryStart>> {
  const repo = await ctx.cache.checkout(dispatchMemorySpec(pending, due));
  const start = async (mode: MemoryStart["mode"], clockMs: number, expect: number): Promise<MemoryStart> => {
    ctx.log(`dispatch: memory, ${num(pending)} pending, ${mode}`);
    const { result } = await runMilestones<MemoryStart>("dispatch-memory-child.ts", [repo.dataDir, repo.repoId, String(clockMs), mode, String(expect)], ["--expose-gc", "--max-old-space-size=8192"]);
    if (result.fired !== expect || (mode !== "none" && result.handled !== expect)) throw new Error(`dispatch memory ${mode}: fired ${result.fired}, handled ${result.handled}, expected ${expect}`);
    ctx.log(`dispatch: memory, ${num(pending)} pending, ${mode}: ${JSON.stringify(result)}`);
    return result;
  };
  try {
    await rm(join(repo.gitdir, DERIVED_DIR_NAME), { recursive: true, force: true });
    const cold = await start("none", BASE_MS + 1_000, 1);
    const none = await start("none", BASE_MS + HOUR_MS + 1_000, 1);
    const ours = await start("ours", BASE_MS + 30 * DAY_MS + due + 2, due);
    const baseline = await start("baseline", BASE_MS + 31 * DAY_MS + 2 * due + 2, due);
    return { cold, none, ours, baseline };
  } finally {
    await ctx.cache.release(repo);
  }
}

function figure(values: readonly number[]): { value: number; text: string } {
  const p99 = percentile(values, 99);
  return { value: p99, text: `${ms(percentile(values, 50))} / ${ms(p99)}` };
}

export const dispatch: Benchmark = {
  name: "dispatch",
  async run(ctx: BenchContext) {
    const fires = ctx.quick ? 200 : 5_000;
    const rate = 1_000;
    const events = ctx.quick ? 2_000 : 20_000;
    const baselineEvents = ctx.quick ? 1_000 : 5_000;
    const rows: TableRow[] = [];
    const targets: TargetCheck[] = [];
    ctx.log(`dispatch: in-process lag, ${num(fires)} fires at ${num(rate)}/s`);
    const oursIn = await lag("function", fires, rate, ctx.log);
    ctx.log("dispatch: baseline in-process lag");
    const baseIn = await lag("baseline-function", fires, rate, ctx.log);
    rows.push(row(`in-process handler, lag p50 / p99 (${num(fires)} fires at ${num(rate)}/s)`, figure(oursIn), figure(baseIn), "lower"));
    ctx.log("dispatch: HTTP lag");
    const oursHttp = await lag("http", fires, rate, ctx.log);
    ctx.log("dispatch: baseline HTTP lag");
    const baseHttp = await lag("baseline-http", fires, rate, ctx.log);
    rows.push(row(`loopback HTTP target, lag p50 / p99 (${num(fires)} fires at ${num(rate)}/s)`, figure(oursHttp), figure(baseHttp), "lower"));
    ctx.log(`dispatch: no-op throughput, ${num(events)} events`);
    const oursRate = await throughput(false, events);
    ctx.log(`dispatch: baseline throughput, ${num(baselineEvents)} events`);
    const baseRate = await throughput(true, baselineEvents);
    rows.push(row(`no-op handler, events/s (backlog of ${num(events)} / ${num(baselineEvents)})`, { value: oursRate, text: num(oursRate) }, { value: baseRate, text: num(baseRate) }, "higher"));
    if (!ctx.quick) targets.push(target("dispatch lag p99 < 20 ms in-process at 1,000 fires/s", percentile(oursIn, 99), 20, "max", ms));
    const memoryNotes: string[] = [];
    const mib = (bytes: number): string => `${num(bytes / 2 ** 20)} MiB`;
    const due = ctx.quick ? 100 : 1_000;
    for (const pending of ctx.quick ? [5_000] : ctx.huge ? [100_000, 1_000_000] : [100_000]) {
      let m: Awaited<ReturnType<typeof memoryStarts>>;
      try {
        m = await memoryStarts(ctx, pending, due);
      } catch (error) {
        rows.push(row(`${num(pending)} pending timers + one consumer, whole host: failed`, { value: Number.NaN, text: "failed" }, { value: Number.NaN, text: "failed" }, "lower"));
        memoryNotes.push(`${num(pending)} pending, memory: a start failed: ${error instanceof Error ? error.message.slice(0, 300) : String(error)}`);
        continue;
      }
      rows.push(
        row(
          `${num(pending)} pending timers + one consumer, whole host RSS / heap (${num(due)} fired and handled)`,
          { value: m.ours.rss, text: `${mib(m.ours.rss)} / ${mib(m.ours.heapUsed)}` },
          { value: m.baseline.rss, text: `${mib(m.baseline.rss)} / ${mib(m.baseline.heapUsed)}` },
          "lower",
        ),
      );
      memoryNotes.push(
        `${num(pending)} pending, memory (warm starts, durability fsync, one process each): the host alone RSS ${mib(m.none.rss)}, heap ${mib(m.none.heapUsed)}; ` +
          `with one consumer RSS ${mib(m.ours.rss)} (${m.ours.rss >= m.none.rss ? "+" : "−"}${mib(Math.abs(m.ours.rss - m.none.rss))}), heap ${mib(m.ours.heapUsed)}, ${num(m.ours.handled)} handled ${ms(m.ours.handledMs - m.ours.startMs)} after start() resolved; ` +
          `with the baseline loop RSS ${mib(m.baseline.rss)}, heap ${mib(m.baseline.heapUsed)}, ${num(m.baseline.handled)} handled ${ms(m.baseline.handledMs - m.baseline.startMs)} after. ` +
          `Warm start() took ${ms(m.none.startMs)} / ${ms(m.ours.startMs)} / ${ms(m.baseline.startMs)}; the cold start before them (host alone, writing the recovery index) ${ms(m.cold.startMs)}, RSS ${mib(m.cold.rss)}. No per-run awaiter in any of them. ` +
          `Longest event-loop delay from start() to handled: ${ms(m.cold.maxLoopDelayMs)} cold, ${ms(m.none.maxLoopDelayMs)} / ${ms(m.ours.maxLoopDelayMs)} / ${ms(m.baseline.maxLoopDelayMs)} warm; ` +
          `fire commits refused and retried (host lock unconfirmed after such a delay): ${[m.cold, m.none, m.ours, m.baseline].map((s) => s.commitFailures).join(" / ")}.`,
      );
    }
    if (!ctx.huge && !ctx.quick) memoryNotes.push("The memory row at 1,000,000 pending timers runs only with `npm run bench -- --huge` (its cold start takes minutes); `npm run bench -- --huge --only dispatch` writes it to `bench/RESULTS-huge.md`.");
    return {
      name: "dispatch",
      targets,
      title: "Dispatch (fire commit → handler start; no-op throughput; memory with one consumer)",
      baseline: "subscribeKind loop, cursor committed after each event",
      rows,
      notes: [
        "lag: from the scheduler's fired report (the fire commit is written) to the handler's start (HTTP: the server's receipt); ratio is of the p99s.",
        "ours: a consumer with concurrency 16 whose progress is group-committed on refs/consumers/<name>; durability \"none\" (the host's default) for both.",
        "HTTP: ours posts with node's http client on kept-alive connections; the baseline loop with fetch, as a user would write it. The loopback server runs in the measuring process.",
        ...memoryNotes,
      ],
    };
  },
};
