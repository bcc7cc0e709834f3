/**
 * Signal delivery over HTTP: `POST /v1/wake` under autocannon at 50 concurrent clients, spread
 * over 1,000 runs of one deployment (each request a new signalId), against a host in a child
 * process; beside it, the in-process `deliver` of the same host code at the same concurrency
 * (50 concurrent callers, same runs, same count) in this process. Figures: deliveries/s and the
 * p50/p99 latency of one delivery.
 */
import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import autocannon from "autocannon";
import { createWorkflowHost } from "../src/host/host.js";
import type { BenchContext, Benchmark } from "./bench-context.js";
import { nowMs, percentile } from "./stats.js";
import { ms, num, row, target, type TargetCheck } from "./table.js";

const benchDir = dirname(fileURLToPath(import.meta.url));
const CONNECTIONS = 50;
const REPO = "bench";
const BENCH_TOKEN = "bench-token-0123456789abcdef";

async function startServer(dataDir: string, runs: number) {
  const child = spawn(process.execPath, ["--import", "tsx", join(benchDir, "http-child.ts"), dataDir, REPO, String(runs), BENCH_TOKEN], { stdio: ["pipe", "pipe", "inherit"] });
  const lines = createInterface({ input: child.stdout });
  const port = await new Promise<number>((resolve, reject) => {
    lines.once("line", (line) => resolve((JSON.parse(line) as { port: number }).port));
    child.once("exit", (code) => reject(new Error(`the HTTP bench server exited with ${String(code)}`)));
  });
  return {
    port,
    async close() {
      child.stdin.end();
      await new Promise((resolve) => child.once("close", resolve));
    },
  };
}

async function overHttp(port: number, runs: number, amount: number) {
  let i = 0;
  const result = await autocannon({
    url: `http://127.0.0.1:${port}`,
    connections: CONNECTIONS,
    amount,
    requests: [
      {
        method: "POST",
        path: "/v1/wake",
        headers: { authorization: `Bearer ${BENCH_TOKEN}`, "content-type": "application/json" },
        setupRequest: (request) => {
          const n = i++;
          return { ...request, body: JSON.stringify({ repoId: REPO, runId: `run-${n % runs}`, signalId: `h-${n}`, payload: { n } }) };
        },
      },
    ],
  });
  const ok = result["2xx"];
  return { perSecond: ok / (result.duration || 1), p50: result.latency.p50, p99: result.latency.p99, ok, failed: result.non2xx + result.errors + result.timeouts };
}

async function inProcess(runs: number, amount: number) {
  const dataDir = await mkdtemp(join(tmpdir(), "wh-bench-http-direct-"));
  const host = createWorkflowHost({ dataDir, watch: false, durability: "none" });
  try {
    await host.start();
    await host.createDeployment(REPO);
    const runtime = host.runtime(REPO);
    for (let r = 0; r < runs; r++) await runtime.setTimer(`run-${r}`, { timerId: "far", fireAt: "2099-01-01T00:00:00Z" });
    const latencies: number[] = [];
    let next = 0;
    const t0 = nowMs();
    await Promise.all(
      Array.from({ length: CONNECTIONS }, async () => {
        for (let n = next++; n < amount; n = next++) {
          const started = nowMs();
          await host.channel(REPO, `run-${n % runs}`).deliver("wake", { n }, `d-${n}`);
          latencies.push(nowMs() - started);
        }
      }),
    );
    const seconds = (nowMs() - t0) / 1_000;
    return { perSecond: amount / seconds, p50: percentile(latencies, 50), p99: percentile(latencies, 99) };
  } finally {
    await host.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

export const http: Benchmark = {
  name: "http",
  async run(ctx: BenchContext) {
    const runs = ctx.quick ? 100 : 1_000;
    const amount = ctx.quick ? 500 : 10_000;
    const dataDir = await mkdtemp(join(tmpdir(), "wh-bench-http-"));
    let web: Awaited<ReturnType<typeof overHttp>>;
    try {
      ctx.log(`http: starting the server with ${num(runs)} runs`);
      const server = await startServer(dataDir, runs);
      try {
        ctx.log(`http: ${num(amount)} wake-ups at ${CONNECTIONS} connections`);
        web = await overHttp(server.port, runs, amount);
      } finally {
        await server.close();
      }
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
    ctx.log(`http: ${num(amount)} in-process deliveries at ${CONNECTIONS} concurrent callers`);
    const direct = await inProcess(runs, amount);
    const targets: TargetCheck[] = [];
    if (!ctx.quick) {
      targets.push(target("≥ 1,000 deliveries/s over HTTP", web.perSecond, 1_000, "min", (v) => `${num(v)}/s`));
      targets.push(target("p99 < 100 ms over HTTP", web.p99, 100, "max", ms));
    }
    return {
      name: "http",
      title: `Signal delivery over HTTP (POST /v1/wake, ${CONNECTIONS} clients, ${num(runs)} runs, ${num(amount)} deliveries)`,
      baseline: `in-process deliver, ${CONNECTIONS} concurrent callers`,
      rows: [
        row("deliveries/s", { value: web.perSecond, text: num(web.perSecond) }, { value: direct.perSecond, text: num(direct.perSecond) }, "higher"),
        row("latency p50 / p99", { value: web.p50, text: `${ms(web.p50)} / ${ms(web.p99)}` }, { value: direct.p50, text: `${ms(direct.p50)} / ${ms(direct.p99)}` }, "lower"),
      ],
      notes: [
        `"ours" is the HTTP route (autocannon in this process, the host in a child process); the baseline is the same host code called in-process, so a ratio below 1 is the cost of HTTP.`,
        `${num(web.ok)} answered 2xx, ${num(web.failed)} not; durability "none" (serve's default is fsync).`,
        "Deliveries to one deployment that arrive while a commit is in flight share the next commit (group commit in the run-log append layer, at most 1,000 appends a commit).",
      ],
      targets,
    };
  },
};
