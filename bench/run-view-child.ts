/**
 * What one `GET /v1/deployments/:repo/runs/:run` costs on a long run: CPU time, wall time, peak
 * RSS and peak heap while it is served, the size of the answer, and the longest stretch the
 * event loop was held meanwhile (what the host's fire loop would wait behind it). A child of its own, so the
 * figures are this request's alone; run it against two checkouts, interleaved, to compare them.
 *
 *   node --import tsx bench/run-view-child.ts --build 200000 --data /tmp/rv   (once: the deployment)
 *   node --expose-gc --import tsx bench/run-view-child.ts --root /path/to/checkout --data /tmp/rv
 *   node --expose-gc --import tsx bench/run-view-child.ts --root … --data <a copy> --append whole|commit|deliver
 *
 * The run (`bench/long`) is a cron series that fired every minute, a signal every 100 events,
 * committed in one unvalidated commit, as a long-lived run's log is after months. The host is
 * not started (recovery would read the log first): the request is served by the handler
 * alone, through fastify's `inject`. Prints one JSON line per request: a page of the events
 * route with nothing cached (404 where the checkout has no such route), the run cold, the run
 * again, the page again.
 */
import * as os from "node:os";
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { pathToFileURL } from "node:url";
import { watchLoopHolds } from "./stats.js";

const { values } = parseArgs({ options: { root: { type: "string" }, data: { type: "string" }, build: { type: "string" }, append: { type: "string" } } });
const dataDir = resolve(values.data ?? "/tmp/run-view");
const root = resolve(values.root ?? new URL("..", import.meta.url).pathname);
const load = <T>(path: string): Promise<T> => import(pathToFileURL(`${root}/${path}`).href) as Promise<T>;

if (values.build !== undefined) {
  const count = Number(values.build);
  const { openWorkflowStore } = await load<typeof import("../src/host/open-workflow-store.js")>("src/host/open-workflow-store.ts");
  const { buildFixtureRepo } = await load<typeof import("../src/testing/fixture-repo.js")>("src/testing/fixture-repo.ts");
  const store = openWorkflowStore({ dataDir, watch: false });
  const files = new Map<string, string>();
  const minute = (i: number): string => new Date(Date.parse("2026-01-01T00:00:00.000Z") + i * 60_000).toISOString();
  const cron = { cron: "* * * * *", timezone: "UTC" };
  files.set("runs/long/events/1.json", JSON.stringify({ seq: 1, type: "TimerSet", data: { timerId: "tick", fireAt: minute(1), ...cron } }));
  let tick = 1;
  for (let seq = 2; seq <= count; seq += 1) {
    let event: object;
    if (seq % 100 === 0) event = { seq, type: "SignalReceived", signalName: "poke", signalId: `s-${seq}`, payload: { n: seq }, at: minute(tick) };
    else if (seq % 2 === 0) event = { seq, type: "TimerFired", data: { timerId: "tick", scheduledFor: minute(tick), firedAt: minute(tick) } };
    else event = { seq, type: "TimerSet", data: { timerId: "tick", fireAt: minute(++tick), ...cron } };
    files.set(`runs/long/events/${seq}.json`, JSON.stringify(event));
  }
  const started = Date.now();
  await buildFixtureRepo(store, "bench", Object.fromEntries(files));
  await store.close();
  console.log(JSON.stringify({ built: count, dataDir, ms: Date.now() - started }));
  process.exit(0);
}

if (values.append !== undefined) {
  const mode = values.append;
  if (mode !== "whole" && mode !== "commit" && mode !== "deliver") throw new Error(`--append takes whole, commit or deliver, not ${mode}`);
  const { openWorkflowStore } = await load<typeof import("../src/host/open-workflow-store.js")>("src/host/open-workflow-store.ts");
  const { appendRunEvents } = await load<typeof import("../src/workflow/run-log-append.js")>("src/workflow/run-log-append.ts");
  const store = openWorkflowStore({ dataDir, watch: false });
  const append = (label: string, events: Record<string, unknown>[]): Promise<void> =>
    measureAppend(label, async () => (await appendRunEvents({ store, principal: null, repoId: "bench", runId: "long", message: label, decide: () => ({ append: events, result: null }) })).committed);
  const measureAppend = async (label: string, action: () => Promise<boolean>): Promise<void> => {
    (globalThis as { gc?: () => void }).gc?.();
    const stopWatching = watchLoopHolds();
    let lastCpu = process.cpuUsage();
    let cpuBetweenTicksMaxMs = 0;
    const ticker = setInterval(() => {
      const cpu = process.cpuUsage();
      cpuBetweenTicksMaxMs = Math.max(cpuBetweenTicksMaxMs, (cpu.user - lastCpu.user + cpu.system - lastCpu.system) / 1000);
      lastCpu = cpu;
    }, 1);
    const cpu = process.cpuUsage();
    const wall = performance.now();
    const committed = await action();
    const wallMs = performance.now() - wall;
    const used = process.cpuUsage(cpu);
    clearInterval(ticker);
    const tail = process.cpuUsage();
    cpuBetweenTicksMaxMs = Math.max(cpuBetweenTicksMaxMs, (tail.user - lastCpu.user + tail.system - lastCpu.system) / 1000);
    const holds = stopWatching();
    console.log(JSON.stringify({
      label,
      committed,
      cpuMs: Math.round((used.user + used.system) / 1000),
      wallMs: Math.round(wallMs),
      longestGapMs: Math.round(holds.longestGapMs),
      cpuBetweenTicksMaxMs: Math.round(cpuBetweenTicksMaxMs),
      loopDelayMaxMs: Math.round(holds.loopDelayMaxMs),
      load: os.loadavg()[0]?.toFixed(1),
    }));
  };
  const signal = (n: number): Record<string, unknown> => ({ type: "SignalReceived", signalName: "poke", signalId: `bench-${n}`, payload: { n }, at: "2026-06-01T00:00:00.000Z" });
  if (mode === "deliver") {
    // Through a host's run channel (not started: no recovery reads the log first).
    const { createWorkflowHost: createHost } = await load<typeof import("../src/host/host.js")>("src/host/host.ts");
    const host = createHost({ dataDir, watch: false });
    const channel = host.channel("bench", "long");
    for (const [label, n] of [["first deliver (read and commit)", 1], ["next deliver", 2]] as const) {
      await measureAppend(label, async () => !(await channel.deliver("poke", { n }, `bench-${n}`)).duplicate);
    }
    await host.stop();
    await store.close();
    process.exit(0);
  }
  if (mode === "commit") await append("append of nothing (the log read and kept)", []);
  await append(mode === "whole" ? "first append (read and commit)" : "append (commit alone)", [signal(1)]);
  await append("next append", [signal(2)]);
  await store.close();
  process.exit(0);
}

const { createWorkflowHost } = await load<typeof import("../src/host/host.js")>("src/host/host.ts");
const { createHttpHandler } = await load<typeof import("../src/http/http-handler.js")>("src/http/http-handler.ts");
const { createHostMonitor } = await load<typeof import("../src/http/host-monitor.js")>("src/http/host-monitor.ts");
const host = createWorkflowHost({ dataDir, watch: false });
const app = createHttpHandler(host, { authenticate: () => "bench", authorize: () => true, monitor: createHostMonitor() });
await app.ready();

async function measure(label: string, url: string): Promise<void> {
  (globalThis as { gc?: () => void }).gc?.();
  const base = process.memoryUsage();
  let peakRss = base.rss;
  let peakHeap = base.heapUsed;
  const sampler = setInterval(() => {
    const m = process.memoryUsage();
    peakRss = Math.max(peakRss, m.rss);
    peakHeap = Math.max(peakHeap, m.heapUsed);
  }, 5);
  // How long the event loop was held at a stretch while the request was served: what a host's
  // fire loop would wait behind it. Both a histogram and the longest gap between 1 ms ticks.
  const stopWatching = watchLoopHolds();
  const cpu = process.cpuUsage();
  const wall = performance.now();
  const answer = await app.inject({ method: "GET", url, headers: { authorization: "Bearer x" } });
  const wallMs = performance.now() - wall;
  const used = process.cpuUsage(cpu);
  clearInterval(sampler);
  const holds = stopWatching();
  const m = process.memoryUsage();
  peakRss = Math.max(peakRss, m.rss);
  peakHeap = Math.max(peakHeap, m.heapUsed);
  const mb = (n: number): number => Math.round(n / 1e5) / 10;
  console.log(JSON.stringify({
    label,
    status: answer.statusCode,
    cpuMs: Math.round((used.user + used.system) / 1000),
    wallMs: Math.round(wallMs),
    peakRssMb: mb(peakRss),
    rssGrowthMb: mb(peakRss - base.rss),
    peakHeapGrowthMb: mb(peakHeap - base.heapUsed),
    bodyKb: Math.round(answer.body.length / 1024),
    loopDelayMaxMs: Math.round(holds.loopDelayMaxMs),
    loopDelayP99Ms: Math.round(holds.loopDelayP99Ms),
    longestGapMs: Math.round(holds.longestGapMs),
  }));
}

// The first request of a process loads modules and the pack's index: measured apart, so the
// figures below are the long run's own.
await measure("GET a run with no log (warm-up)", "/v1/deployments/bench/runs/none");
const page = "/v1/deployments/bench/runs/long/events?after=150000&limit=100";
await measure("GET events page (cold)", page);
await measure("GET run (cold)", "/v1/deployments/bench/runs/long");
await measure("GET run (again)", "/v1/deployments/bench/runs/long");
await measure("GET events page (again)", page);
await app.close();
await host.stop().catch(() => undefined);
