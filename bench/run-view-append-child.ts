/**
 * What `GET /v1/deployments/:repo/runs/:run` costs on a long run that keeps growing: the run
 * cold, then, `--rounds` times, one event appended (by a child process, through the store, as a
 * fire or a signal would be) and the run asked for again. CPU time of each request alone; run it
 * against two checkouts, interleaved, to compare them. Uses the deployment `run-view-child.ts
 * --build` makes (each round adds a signal to its run `long`).
 *
 *   node --import tsx bench/run-view-child.ts --build 200000 --data /tmp/rv   (once)
 *   node --expose-gc --import tsx bench/run-view-append-child.ts --root /path/to/checkout --data /tmp/rv --rounds 3
 *
 * Each request also reports the longest stretch it held the event loop (`loopDelayMaxMs`,
 * `longestGapMs`), and each round asks for a page past the middle of the log after the run.
 *
 * With RUN_VIEW_APPEND_CPU_PROFILE=<file>, the requests after an append (not the cold one) are
 * profiled into <file> (a .cpuprofile).
 */
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { watchLoopHolds } from "./stats.js";

const { values } = parseArgs({ options: { root: { type: "string" }, data: { type: "string" }, rounds: { type: "string" }, append: { type: "boolean" } } });
const dataDir = resolve(values.data ?? "/tmp/run-view");
const here = new URL("..", import.meta.url).pathname;
const root = resolve(values.root ?? here);
const load = <T>(path: string): Promise<T> => import(pathToFileURL(`${root}/${path}`).href) as Promise<T>;

if (values.append === true) {
  // One signal after the run's last event, committed through the store (validated as a push would be).
  const { openWorkflowStore } = await load<typeof import("../src/host/open-workflow-store.js")>("src/host/open-workflow-store.ts");
  const { WORKFLOW_RUN_KIND } = await load<typeof import("../src/workflow/workflow-run-kind.js")>("src/workflow/workflow-run-kind.ts");
  const store = openWorkflowStore({ dataDir, watch: false });
  const repo = { kind: WORKFLOW_RUN_KIND, id: "bench" };
  const reads = await store.openCommittedReads(null, repo, "refs/heads/main");
  let last = 0;
  for (const entry of await reads.listDir("runs/long/events")) last = Math.max(last, Number.parseInt(entry.name, 10) || 0);
  const seq = last + 1;
  const event = { seq, type: "SignalReceived", signalName: "poke", signalId: `late-${seq}`, payload: { n: seq }, at: "2026-06-01T00:00:00.000Z" };
  await store.writeTree(null, repo, "refs/heads/main", { files: { [`runs/long/events/${seq}.json`]: JSON.stringify(event) }, message: `append ${seq}` });
  await store.close();
  process.exit(0);
}

const { createWorkflowHost } = await load<typeof import("../src/host/host.js")>("src/host/host.ts");
const { createHttpHandler } = await load<typeof import("../src/http/http-handler.js")>("src/http/http-handler.ts");
const { createHostMonitor } = await load<typeof import("../src/http/host-monitor.js")>("src/http/host-monitor.ts");
const host = createWorkflowHost({ dataDir, watch: false });
const app = createHttpHandler(host, { authenticate: () => "bench", authorize: () => true, monitor: createHostMonitor() });
await app.ready();

async function measure(label: string, url = "/v1/deployments/bench/runs/long"): Promise<void> {
  (globalThis as { gc?: () => void }).gc?.();
  // How long the event loop was held at a stretch while the request was served (as in
  // run-view-child.ts): the histogram's max and the longest gap between 1 ms ticks.
  const stopWatching = watchLoopHolds();
  const cpu = process.cpuUsage();
  const wall = performance.now();
  const answer = await app.inject({ method: "GET", url, headers: { authorization: "Bearer x" } });
  const wallMs = performance.now() - wall;
  const used = process.cpuUsage(cpu);
  const holds = stopWatching();
  const body = JSON.parse(answer.body) as { eventCount?: number; summary?: { eventCount?: number }; events?: unknown[] };
  console.log(
    JSON.stringify({
      label,
      status: answer.statusCode,
      cpuMs: Math.round((used.user + used.system) / 1000),
      wallMs: Math.round(wallMs),
      loopDelayMaxMs: Math.round(holds.loopDelayMaxMs),
      longestGapMs: Math.round(holds.longestGapMs),
      eventCount: body.summary?.eventCount ?? body.eventCount ?? body.events?.length,
    }),
  );
}

const profileTo = process.env.RUN_VIEW_APPEND_CPU_PROFILE;
const session = profileTo === undefined ? null : new Session();
session?.connect();
await session?.post("Profiler.enable");
await measure("GET run (cold)");
for (let round = 1; round <= Number(values.rounds ?? "3"); round += 1) {
  execFileSync(process.execPath, ["--import", "tsx", fileURLToPath(import.meta.url), "--append", "--data", dataDir], { stdio: "inherit" });
  await session?.post("Profiler.start");
  await measure(`GET run after one appended event (${round})`);
  await measure(`GET events?after=150000 after it (${round})`, "/v1/deployments/bench/runs/long/events?after=150000&limit=100");
  await session?.post("Profiler.stop").then(({ profile }) => writeFileSync(`${profileTo}.${round}`, JSON.stringify(profile)));
}
await app.close();
await host.stop().catch(() => undefined);
