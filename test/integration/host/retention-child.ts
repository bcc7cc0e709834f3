/**
 * Child process of the retention crash test: runs retention passes over one deployment, a few
 * runs per commit, until none is due. Prints `pass <n>` before each pass and `done` at the end.
 * Usage: retention-child.ts <dataDir> <repoId> <runsPerCommit>
 */
import { archiveEndedRuns } from "../../../src/host/archive-ended-runs.js";
import { openWorkflowStore } from "../../../src/host/open-workflow-store.js";

const [dataDir = "", repoId = "", perCommit = "10"] = process.argv.slice(2);
const store = openWorkflowStore({ dataDir, watch: false, durability: "fsync" });
for (let n = 1; ; n += 1) {
  process.stdout.write(`pass ${n}\n`);
  const result = await archiveEndedRuns({ store, principal: null, repoId, nowMs: Date.now(), endedRunsAfterMs: 60_000, maxRuns: Number(perCommit) });
  if (result.archived.length === 0 && result.remaining === 0) break;
}
await store.close();
process.stdout.write("done\n");
