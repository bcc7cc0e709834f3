/**
 * A whole host (as `serve` runs it: durability fsync, file watching) on a deployment of N runs
 * with a pending timer each, plus what runs the user's code when one fires, in a fresh process:
 * `node --expose-gc --import tsx dispatch-memory-child.ts <dataDir> <repoId> <clockMs> none|ours|baseline <due>`.
 * - none: the host alone;
 * - ours: one dispatch consumer (`host.dispatch`, a no-op handler), its ref at the tip;
 * - baseline: the user-written alternative, a `subscribeKind` loop from the tip that calls the
 *   handler and then commits its cursor on its own ref after each event, from the tip.
 * No per-run awaiter in any mode. The wall clock is the system's shifted to start at `clockMs`,
 * when exactly `due` timers are overdue and the next one is a day away (bench/dispatch.ts): the
 * host fires them and the consumer (or loop) handles each. The clock runs: a fire commit the
 * host refuses (its lock unconfirmed after a long start) is retried at a later wall-clock
 * instant, which a stopped clock would never reach.
 *
 * Prints `{"at":"armed"}` once the host started, then `{"at":"done", …}` with the handled count,
 * the longest event-loop delay seen from `start()` to done (`maxLoopDelayMs`), the fire commits
 * refused and retried (`commitFailures`) and, after garbage collection, `rss`, `heapUsed`,
 * `external`, `arrayBuffers` and `rssLoaded` (bytes), then stops the host (which writes the
 * recovery index for a warm start). Scheduler problems are written to stderr as they happen.
 */
import { monitorEventLoopDelay } from "node:perf_hooks";
import { createWorkflowHost } from "../src/host/host.js";
import { subscribeKind } from "../src/workflow/subscribe-kind.js";
import { WORKFLOW_RUN_KIND } from "../src/workflow/workflow-run-kind.js";
import { nowMs, sleep } from "./stats.js";

const [dataDir, repoId, clockArg, mode, dueArg] = process.argv.slice(2);
const clockMs = Number(clockArg);
const due = Number(dueArg);
const gc = (globalThis as { gc?: () => void }).gc;
if (dataDir === undefined || repoId === undefined || !Number.isFinite(clockMs) || (mode !== "none" && mode !== "ours" && mode !== "baseline") || !Number.isInteger(due) || gc === undefined) {
  process.stderr.write("usage: node --expose-gc --import tsx dispatch-memory-child.ts <dataDir> <repoId> <clockMs> none|ours|baseline <due>\n");
  process.exit(2);
}

const say = (line: Record<string, unknown>): void => {
  process.stdout.write(`${JSON.stringify(line)}\n`);
};

const rssLoaded = process.memoryUsage.rss();
const offsetMs = clockMs - Date.now();
const clock = { clock: () => new Date(Date.now() + offsetMs) };
let fired = 0;
let handled = 0;
let commitFailures = 0;
const host = createWorkflowHost({
  dataDir,
  clock: clock.clock,
  durability: "fsync",
  onEvent: (e) => {
    if (e.type === "fired") fired += 1;
    if (e.type === "commit_failed") commitFailures += 1;
    // What keeps a due timer from firing is told (the parent shows stderr when a start fails).
    if (e.type === "commit_failed" || e.type === "repo_failed" || e.type === "timer_rejected" || e.type === "bad_event") {
      process.stderr.write(`${e.type} in ${e.repoId}: ${"error" in e ? String(e.error) : ""}\n`);
    }
  },
});
const rid = { kind: WORKFLOW_RUN_KIND, id: repoId };
// Both readers start at the tip before the host starts (the due timers fire during its start),
// as a consumer that had been running would: ours from its ref, the loop from its cursor.
const tip = (await host.store.resolveRef(null, rid, "main")) as string;
if (mode === "ours") {
  const file = { version: 1, consumer: "memory", cursor: tip, done: [], updatedAt: clock.clock().toISOString() };
  await host.store.writeTree(null, rid, "refs/consumers/memory", { files: { "consumer.json": `${JSON.stringify(file)}\n` }, message: "dispatch memory: from the tip" });
  host.dispatch({ name: "memory", filter: { types: ["TimerFired"] }, handler: () => void (handled += 1) });
}
const loopDelay = monitorEventLoopDelay({ resolution: 20 });
loopDelay.enable();
const t0 = nowMs();
await host.start();
const startMs = nowMs() - t0;
say({ at: "armed" });
const abort = new AbortController();
let loop: Promise<void> = Promise.resolve();
if (mode === "baseline") {
  loop = (async () => {
    for await (const found of subscribeKind(host.store, null, rid, "main", undefined, { from: tip, kinds: ["TimerFired"], signal: abort.signal })) {
      handled += 1;
      // A cursor write the host refuses (its lock unconfirmed after a long start) is tried again.
      for (let attempt = 1; ; attempt++) {
        try {
          await host.store.writeTree(null, rid, "refs/consumers/baseline", { files: { "cursor.json": JSON.stringify({ commitSha: found.commitSha, runId: found.runId, seq: found.seq }) }, message: "ack" });
          break;
        } catch (error) {
          if (abort.signal.aborted || attempt >= 20) throw error;
          await sleep(Math.min(100 * attempt, 1_000));
        }
      }
    }
  })().catch((error: unknown) => {
    if (!abort.signal.aborted) throw error;
  });
}
const deadline = nowMs() + 600_000;
while ((fired < due || (mode !== "none" && handled < fired)) && nowMs() < deadline) await sleep(100);
const handledMs = nowMs() - t0;
loopDelay.disable();
const maxLoopDelayMs = loopDelay.max / 1e6;
for (let i = 0; i < 4; i++) gc();
const memory = process.memoryUsage();
say({ at: "done", mode, startMs, handledMs, fired, handled, maxLoopDelayMs, commitFailures, rss: memory.rss, heapUsed: memory.heapUsed, external: memory.external, arrayBuffers: memory.arrayBuffers, rssLoaded });
abort.abort();
await loop;
await host.stop();
process.exit(0);
