/**
 * Ending runs from the CLI and retention on real disk, with the real `git` CLI checking what
 * was written (issue 16): `runs complete|fail|cancel` end runs; a retention pass moves ended
 * runs, including a run of the original layout sealed by the original system, to
 * refs/archive/runs; `git` reads every archived file byte for byte as it was on main, `runs
 * show` gives the same log before and after, `git fsck --strict` is clean, and an archived id
 * cannot start again.
 */
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { archiveEndedRuns } from "../../../src/host/archive-ended-runs.js";
import { openWorkflowStore } from "../../../src/host/open-workflow-store.js";
import { buildFixtureRepo } from "../../../src/testing/fixture-repo.js";
import { appendRunEvents } from "../../../src/workflow/run-log-append.js";
import { gitAt } from "../../helpers/git-cli.js";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { errorCodeOf } from "../reliability/cli-in-process.js";
import { runCli } from "../../unit/cli/cli-io.js";

const tempDir = useTempDirs("wfh-retention-");
const FIXTURE = fileURLToPath(new URL("../../../fixtures/original-layout/", import.meta.url));
const REPO = "legacy";

async function json<T>(argv: readonly string[]): Promise<{ code: number; body: T }> {
  const run = await runCli([...argv, "--json"]);
  return { code: run.code, body: JSON.parse(run.stdout) as T };
}

interface Shown {
  archived: string | null;
  events: unknown[];
  problems: unknown[];
  state: unknown;
}

/** Every file under `runs/<runId>/` at `rev`, path → bytes as git prints them. */
async function gitFiles(gitdir: string, rev: string, runId: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const listing = await gitAt(gitdir, ["ls-tree", "-r", "--full-tree", rev, `runs/${runId}/`]);
  for (const line of listing.split("\n").filter((l) => l !== "")) {
    const path = line.slice(line.indexOf("\t") + 1);
    out.set(path, await gitAt(gitdir, ["cat-file", "blob", `${rev}:${path}`]));
  }
  return out;
}

describe("ending runs and retention on real disk", () => {
  it("archives ended runs byte for byte where plain git and runs show read them, and refuses their ids afterwards", async () => {
    const dataDir = join(await tempDir(), "data");
    const gitdir = join(dataDir, "deployments", `${REPO}.git`);
    let store = openWorkflowStore({ dataDir, watch: false });
    try {
      await buildFixtureRepo(store, REPO, FIXTURE);
      for (const runId of ["a", "b", "c", "live"]) {
        await appendRunEvents({ store, principal: null, repoId: REPO, runId, message: `start ${runId}`, decide: () => ({ append: [{ type: "RunStarted", data: { text: "naïve\u2028" } }], result: undefined }) });
      }
    } finally {
      await store.close();
    }
    expect((await json<{ type: string; committed: boolean }>(["runs", "complete", "-d", dataDir, "-r", REPO, "--run", "a", "--data", '{"result":1}'])).body).toMatchObject({ type: "RunCompleted", committed: true });
    expect((await json<{ type: string }>(["runs", "fail", "-d", dataDir, "-r", REPO, "--run", "b"])).body.type).toBe("RunFailed");
    expect((await json<{ type: string }>(["runs", "cancel", "-d", dataDir, "-r", REPO, "--run", "c"])).body.type).toBe("RunCancelled");
    expect((await json<{ committed: boolean }>(["runs", "cancel", "-d", dataDir, "-r", REPO, "--run", "c"])).body.committed).toBe(false);
    expect((await runCli(["runs", "complete", "-d", dataDir, "-r", REPO, "--run", "c"])).code).toBe(1);
    expect((await runCli(["runs", "complete", "-d", dataDir, "-r", REPO, "--run", "a", "--data", "[1]"])).code).toBe(2);
    // A run with no events is not started by its end.
    const missing = await runCli(["runs", "complete", "-d", dataDir, "-r", REPO, "--run", "never-existed"]);
    expect({ code: missing.code, error: errorCodeOf(missing.stderr) }).toEqual({ code: 1, error: "run_not_found" });
    expect(await gitAt(gitdir, ["ls-tree", "--name-only", "main", "runs/never-existed"])).toBe("");

    const ended = ["a", "b", "c", "sealed-1"];
    const before = new Map<string, { files: Map<string, string>; shown: Shown }>();
    for (const runId of ended) {
      before.set(runId, { files: await gitFiles(gitdir, "main", runId), shown: (await json<Shown>(["runs", "show", "-d", dataDir, "-r", REPO, "--run", runId])).body });
    }

    store = openWorkflowStore({ dataDir, watch: false });
    try {
      const pass = await archiveEndedRuns({ store, principal: null, repoId: REPO, nowMs: Date.now() + 60_000, endedRunsAfterMs: 1_000 });
      expect([...pass.archived]).toEqual(ended);
    } finally {
      await store.close();
    }

    expect(await gitAt(gitdir, ["ls-tree", "--name-only", "main", "runs/"])).toBe("runs/live-2\nruns/live\nruns/pending-3\n");
    for (const runId of ended) {
      const was = before.get(runId);
      expect(await gitFiles(gitdir, "refs/archive/runs", runId)).toEqual(was?.files);
      const shown = (await json<Shown>(["runs", "show", "-d", dataDir, "-r", REPO, "--run", runId])).body;
      expect(shown.archived).toBe("refs/archive/runs");
      expect(shown.events).toEqual(was?.shown.events);
      expect(shown.state).toEqual(was?.shown.state);
    }
    await gitAt(gitdir, ["fsck", "--strict"]);
    const check = await json<{ problems: unknown[] }>(["check", "-d", dataDir]);
    expect(check.body.problems).toEqual([]);
    expect((await runCli(["runs", "cancel", "-d", dataDir, "-r", REPO, "--run", "a"])).code).toBe(1);
    expect((await runCli(["signal", "send", "-d", dataDir, "-r", REPO, "--run", "b", "--name", "go", "--payload", "{}"])).code).toBe(1);
  });
});
