/**
 * SIGKILL during retention (issue 16): a child process runs retention passes over a deployment
 * of 200 ended runs and 3 live ones, a few runs per commit, and is SIGKILLed mid-way several
 * times. After every kill: `git fsck --strict` is clean and every run's files are, byte for
 * byte (by blob oid), on main or in refs/archive/runs — nothing lost. A last run to completion
 * finishes the job: main holds only the live runs, the archive every ended one.
 */
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { openWorkflowStore } from "../../../src/host/open-workflow-store.js";
import { WORKFLOW_RUN_KIND } from "../../../src/workflow/workflow-run-kind.js";
import { gitAt } from "../../helpers/git-cli.js";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { killAllChildren, spawnTs } from "./cli-child.js";

const tempDir = useTempDirs("wfh-retention-crash-");
const CHILD = fileURLToPath(new URL("./retention-child.ts", import.meta.url));
const REPO = "aged";
const ENDED = 200;
const LIVE = ["live-0", "live-1", "live-2"];

afterEach(() => killAllChildren());

/** path → blob oid of every file under runs/ at `rev` ({} when the ref does not exist). */
async function filesAt(gitdir: string, rev: string): Promise<Map<string, string>> {
  const exists = await gitAt(gitdir, ["rev-parse", "--verify", "--quiet", rev]).then(() => true, () => false);
  if (!exists) return new Map();
  const out = new Map<string, string>();
  for (const line of (await gitAt(gitdir, ["ls-tree", "-r", "--full-tree", rev, "runs/"])).split("\n")) {
    if (line === "") continue;
    const tab = line.indexOf("\t");
    out.set(line.slice(tab + 1), line.slice(0, tab).split(" ")[2] ?? "");
  }
  return out;
}

function byRun(files: Map<string, string>): Map<string, string> {
  const runs = new Map<string, string[]>();
  for (const [path, oid] of files) {
    const runId = path.split("/")[1] ?? "";
    runs.set(runId, [...(runs.get(runId) ?? []), `${path} ${oid}`]);
  }
  return new Map([...runs].map(([runId, lines]) => [runId, lines.sort().join("\n")]));
}

describe("a SIGKILL during retention", () => {
  it("loses nothing, leaves a repo git fsck --strict accepts, and a restart finishes the job", async () => {
    const dataDir = join(await tempDir(), "data");
    const gitdir = join(dataDir, "deployments", `${REPO}.git`);
    const store = openWorkflowStore({ dataDir, watch: false });
    try {
      await store.initRepo(null, { kind: WORKFLOW_RUN_KIND, id: REPO });
      const files: Record<string, string> = {};
      const at = "2026-01-01T00:00:00.000Z";
      for (let i = 0; i < ENDED; i += 1) {
        const run = `runs/done-${String(i).padStart(4, "0")}/events`;
        files[`${run}/1.json`] = JSON.stringify({ seq: 1, type: "TimerSet", at, data: { timerId: "t", fireAt: at } });
        files[`${run}/2.json`] = JSON.stringify({ seq: 2, type: "TimerFired", at, data: { timerId: "t", scheduledFor: at, firedAt: at } });
        files[`${run}/3.json`] = JSON.stringify({ seq: 3, type: "StepDone", at, data: { n: i } });
        files[`${run}/4.json`] = JSON.stringify({ seq: 4, type: i % 3 === 0 ? "RunFailed" : "RunCompleted", at });
      }
      for (const runId of LIVE) files[`runs/${runId}/events/1.json`] = JSON.stringify({ seq: 1, type: "TimerSet", at, data: { timerId: "t", fireAt: "2099-01-01T00:00:00.000Z" } });
      await store.writeTree(null, { kind: WORKFLOW_RUN_KIND, id: REPO }, "main", { files, message: "an aged deployment" });
    } finally {
      await store.close();
    }
    const original = byRun(await filesAt(gitdir, "main"));
    expect(original.size).toBe(ENDED + LIVE.length);

    const checkNothingLost = async (): Promise<{ live: number; archived: number }> => {
      await gitAt(gitdir, ["fsck", "--strict"]);
      const main = byRun(await filesAt(gitdir, "main"));
      const archive = byRun(await filesAt(gitdir, "refs/archive/runs"));
      for (const [runId, files] of original) {
        const found = main.get(runId) ?? archive.get(runId);
        expect(found, `run ${runId}`).toBe(files);
        if (main.has(runId) && archive.has(runId)) expect(archive.get(runId), `run ${runId} archived`).toBe(files);
      }
      return { live: main.size, archived: archive.size };
    };

    // Kill a little into an early pass each time (at most 9 of the 10 passes are done by then).
    for (const [round, afterPass] of [2, 2, 3, 2].entries()) {
      const child = spawnTs(CHILD, [dataDir, REPO, "20"]);
      await child.waitFor(new RegExp(`^pass ${afterPass}$`), 60_000);
      await new Promise((resolve) => setTimeout(resolve, 5 * round));
      child.kill("SIGKILL");
      await child.exited;
      await checkNothingLost();
    }
    const last = spawnTs(CHILD, [dataDir, REPO, "20"]);
    await last.waitFor(/^done$/, 120_000);
    expect((await last.exited).code).toBe(0);
    expect(await checkNothingLost()).toEqual({ live: LIVE.length, archived: ENDED });
  }, 240_000);
});
