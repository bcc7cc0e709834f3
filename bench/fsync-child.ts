/**
 * Flushes per durable commit, in a fresh process: `fsync-child.ts <dataDir> <repoId> <runId> <commits>`.
 * Opens a store with `durability: "fsync"` over {@link createCountingFs} (no watcher) and
 * delivers `commits` signals to one run, one commit each, as `serve` would; pack merges that
 * the commits trigger are waited for and counted. Prints one JSON line:
 * `{commits, total, byKind, deliverMsP50}` (flush counts over all commits; the median time of
 * one delivery, commit included, ms).
 */
import { createWorkflowHostSignalChannel } from "../seams/signals/signal-channel.js";
import { createCountingFs } from "./counting-fs.js";
import { openStore } from "./scheduler-rig.js";
import { nowMs, percentile } from "./stats.js";

const [dataDir, repoId, runId, commitsArg] = process.argv.slice(2);
const commits = Number(commitsArg);
if (dataDir === undefined || repoId === undefined || runId === undefined || !Number.isInteger(commits) || commits <= 0) {
  process.stderr.write("usage: fsync-child.ts <dataDir> <repoId> <runId> <commits>\n");
  process.exit(2);
}

const { fs, counts } = createCountingFs();
const store = openStore(dataDir, () => new Date(), { fs, durability: "fsync", watch: false });
const channel = createWorkflowHostSignalChannel({ repoStore: store, principal: null, repoId, runId, clock: () => new Date() });
// The first delivery reads the repository in; flushes are counted from the second on.
await channel.deliver("go", { i: -1 }, "warm-up");
const startTotal = counts.total;
const startByKind = { ...counts.byKind };
const times: number[] = [];
for (let i = 0; i < commits; i++) {
  const t0 = nowMs();
  await channel.deliver("go", { i }, `f-${i}`);
  times.push(nowMs() - t0);
}
await channel.stop();
await store.close();
const byKind = Object.fromEntries(Object.entries(counts.byKind).map(([k, v]) => [k, v - (startByKind[k as keyof typeof startByKind] ?? 0)]));
process.stdout.write(`${JSON.stringify({ commits, total: counts.total - startTotal, byKind, deliverMsP50: percentile(times, 50) })}\n`);
