/**
 * Writes to a run that retention archived say `run_archived` (exit 1; HTTP 409) and name the
 * run, as `runs complete`, `runs compact` and `timer cancel` do: `timer set` and `signal send`
 * (and the runtime verbs behind them) too, never `event_invalid` naming an event file.
 */
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { archiveEndedRuns } from "../../../src/host/archive-ended-runs.js";
import { createWorkflowHost } from "../../../src/host/host.js";
import { openWorkflowStore } from "../../../src/host/open-workflow-store.js";
import { isWorkflowHostError } from "../../../src/errors.js";
import { appendRunEvents } from "../../../src/workflow/run-log-append.js";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { errorCodeOf } from "../reliability/cli-in-process.js";
import { runCli } from "../../unit/cli/cli-io.js";
import { jsonOf, startHttpHarness } from "../http/http-harness.js";

const tempDir = useTempDirs("wfh-archived-writes-");
const REPO = "payments";

async function dataDirWithArchivedRun(): Promise<string> {
  const dataDir = join(await tempDir(), "data");
  const store = openWorkflowStore({ dataDir, watch: false });
  try {
    await store.initRepo(null, { kind: "workflow-run", id: REPO });
    await appendRunEvents({ store, principal: null, repoId: REPO, runId: "old", message: "start old", decide: () => ({ append: [{ type: "TimerSet", data: { timerId: "t", fireAt: "2099-01-01T00:00:00Z" } }], result: undefined }) });
  } finally {
    await store.close();
  }
  expect((await runCli(["runs", "complete", "-d", dataDir, "-r", REPO, "--run", "old"])).code).toBe(0);
  const passStore = openWorkflowStore({ dataDir, watch: false });
  try {
    expect((await archiveEndedRuns({ store: passStore, principal: null, repoId: REPO, nowMs: Date.now() + 60_000, endedRunsAfterMs: 1_000 })).archived).toEqual(["old"]);
  } finally {
    await passStore.close();
  }
  return dataDir;
}

describe("writes to an archived run", () => {
  it("timer set and signal send are run_archived (exit 1) naming the run", async () => {
    const dataDir = await dataDirWithArchivedRun();
    for (const argv of [
      ["timer", "set", "-d", dataDir, "-r", REPO, "--run", "old", "-t", "t2", "--delay-ms", "60000"],
      ["signal", "send", "-d", dataDir, "-r", REPO, "--run", "old", "--name", "go", "--payload", "{}"],
    ]) {
      const run = await runCli(argv);
      expect({ argv, code: run.code, error: errorCodeOf(run.stderr) }).toEqual({ argv, code: 1, error: "run_archived" });
      expect(run.stderr).toContain("run old");
    }
  });

  it("the runtime's setTimer and deliverSignal throw run_archived with repoId and runId in data", async () => {
    const dataDir = await dataDirWithArchivedRun();
    const host = createWorkflowHost({ dataDir, watch: false, retention: false });
    await host.start();
    try {
      const runtime = host.runtime(REPO);
      for (const attempt of [() => runtime.setTimer("old", { timerId: "t2", delayMs: 60_000 }), () => runtime.deliverSignal("old", "go", {}, "sig-1")]) {
        const error = await attempt().then(
          () => null,
          (e: unknown) => e,
        );
        expect(isWorkflowHostError(error) ? [error.code, error.data["repoId"], error.data["runId"]] : error).toEqual(["run_archived", REPO, "old"]);
      }
    } finally {
      await host.stop();
    }
  });

  it("over HTTP: setting or cancelling a timer, a signal and a wake-up are 409 run_archived", async () => {
    const dataDir = await dataDirWithArchivedRun();
    const http = await startHttpHarness(dataDir, [REPO]);
    try {
      const base = `/v1/deployments/${REPO}/runs/old`;
      const answers = [
        await jsonOf(await http.request(`${base}/timers/t2`, { method: "PUT", body: JSON.stringify({ delayMs: 60_000 }) })),
        await jsonOf(await http.request(`${base}/timers/t`, { method: "DELETE" })),
        await jsonOf(await http.request(`${base}/signals`, { method: "POST", body: JSON.stringify({ signalName: "go", signalId: "s-1" }) })),
        await jsonOf(await http.request("/v1/wake", { method: "POST", body: JSON.stringify({ repoId: REPO, runId: "old", signalId: "w-1" }) })),
      ];
      expect(answers.map((a) => [a.status, a.body["code"]])).toEqual(Array.from({ length: 4 }, () => [409, "run_archived"]));
    } finally {
      await http.close();
    }
  });
});
