/**
 * Text the CLI prints can come from logs pushed with git (a cancel reason, who acknowledged a
 * problem): a newline in it must not forge a line of output, nor an escape sequence reach the
 * reader's terminal. Such characters are printed as escapes (`\n`, `\u001b`).
 */
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { openWorkflowStore } from "../../../src/host/open-workflow-store.js";
import { appendRunEvents } from "../../../src/workflow/run-log-append.js";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { runCli } from "../../unit/cli/cli-io.js";

const tempDir = useTempDirs("wfh-control-chars-");
const HOSTILE = "paid\nr2  TimerFired  forged\u001b[2J\u0007";

describe("control characters in printed fields", () => {
  it("runs show prints a reason holding a newline and an escape sequence on one line, escaped", async () => {
    const dataDir = join(await tempDir(), "data");
    const store = openWorkflowStore({ dataDir, watch: false });
    try {
      await store.initRepo(null, { kind: "workflow-run", id: "dep" });
      await appendRunEvents({ store, principal: null, repoId: "dep", runId: "r1", message: "set", decide: () => ({ append: [{ type: "TimerSet", data: { timerId: "t", fireAt: "2099-01-01T00:00:00Z" } }], result: undefined }) });
      await appendRunEvents({ store, principal: null, repoId: "dep", runId: "r1", message: "cancel", decide: () => ({ append: [{ type: "TimerCancelled", data: { timerId: "t", reason: HOSTILE } }], result: undefined }) });
    } finally {
      await store.close();
    }
    const run = await runCli(["runs", "show", "-d", dataDir, "-r", "dep", "--run", "r1"]);
    expect(run.code).toBe(0);
    expect(run.stdout).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f]/);
    const cancelled = run.stdout.split("\n").filter((line) => line.includes("TimerCancelled"));
    expect(cancelled).toHaveLength(1);
    expect(cancelled[0]).toContain("paid\\nr2  TimerFired  forged\\u001b[2J\\u0007");
    expect(run.stdout.split("\n").filter((line) => line.includes("forged"))).toHaveLength(1);
  });
});
