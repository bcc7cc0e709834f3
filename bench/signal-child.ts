/**
 * The other process of the cross-process signal benchmark:
 * `signal-child.ts ours|naive <dataDir> <repoId> <runId> <fsync|none>` (the durability of ours). For each stdin line `go <i>` it
 * delivers signal `go` with id `x-<i>` (ours: its own store and signal channel; naive: one
 * isomorphic-git commit), then prints `{"i":…,"deliverMs":…}`, `deliverMs` being how long the
 * delivery call took on this process's monotonic clock. The round trip itself is timed by the
 * parent alone (it stamps the command and the awaiter's wake-up on one clock). Prints
 * `{"ready":true}` first.
 */
import { createInterface } from "node:readline";
import { createWorkflowHostSignalChannel } from "../seams/signals/signal-channel.js";
import { naiveDeliver } from "./naive-git.js";
import { openStore } from "./scheduler-rig.js";
import { nowMs } from "./stats.js";

const [mode, dataDir, repoId, runId, durability] = process.argv.slice(2);
if ((mode !== "ours" && mode !== "naive") || dataDir === undefined || repoId === undefined || runId === undefined || (durability !== "fsync" && durability !== "none")) {
  process.stderr.write("usage: signal-child.ts ours|naive <dataDir> <repoId> <runId> <fsync|none>\n");
  process.exit(2);
}

const store = mode === "ours" ? openStore(dataDir, () => new Date(), { durability }) : null;
const channel = store === null ? null : createWorkflowHostSignalChannel({ repoStore: store, principal: null, repoId, runId, clock: () => new Date() });
const gitdir = `${dataDir}/deployments/${repoId}.git`;

process.stdout.write(`${JSON.stringify({ ready: true })}\n`);
for await (const line of createInterface({ input: process.stdin })) {
  const match = /^go (\d+)$/.exec(line.trim());
  if (match === null) continue;
  const i = Number(match[1]);
  const t0 = nowMs();
  if (channel !== null) await channel.deliver("go", { i }, `x-${i}`);
  else await naiveDeliver(gitdir, runId, "go", `x-${i}`, { i });
  process.stdout.write(`${JSON.stringify({ i, deliverMs: nowMs() - t0 })}\n`);
}
await channel?.stop();
await store?.close();
