/**
 * `workflow-host signal send` from one process resolving a wait in another: the waiting run
 * lives in a small program that embeds `createWorkflowHost` (fixtures/waiting-host.ts), as a
 * workflow engine would; the signal comes from the CLI.
 */
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { gitAt } from "../../helpers/git-cli.js";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { killAllChildren, lockLeft, runCliProcess, spawnTs, REPO_ROOT } from "./cli-child.js";
import { gitRunLog } from "./git-log.js";

const tempDir = useTempDirs("wfh-signal-");
const WAITING_HOST = join(REPO_ROOT, "test/integration/host/fixtures/waiting-host.ts");

afterEach(() => {
  killAllChildren();
});

describe("signals across processes", () => {
  it("`signal send` from another process resolves a run waiting in the host, once", async () => {
    const dataDir = join(await tempDir(), "data");
    const waiter = spawnTs(WAITING_HOST, [dataDir, "30000"]);
    await waiter.waitFor(/"event":"waiting"/);

    const sentMs = Date.now();
    const sent = await runCliProcess(["signal", "send", "--data-dir", dataDir, "--repo", "dep", "--run", "r1", "--name", "approve", "--payload", '{"ok":true}', "--id", "approval-1"]);
    expect(sent.code).toBe(0);
    expect(sent.stdout).toMatch(/^delivered approve to r1 as seq \d+ \(signalId approval-1\)/);

    const line = await waiter.waitFor(/"event":"received"/, 10_000);
    const latencyMs = Date.now() - sentMs;
    const received = JSON.parse(line) as { signal: { signalId: string; payload: unknown } };
    expect(received.signal).toMatchObject({ signalId: "approval-1", payload: { ok: true } });
    expect((await waiter.exited).code).toBe(0);
    expect(lockLeft(dataDir)).toBe(false);

    const again = await runCliProcess(["signal", "send", "--data-dir", dataDir, "--repo", "dep", "--run", "r1", "--name", "approve", "--id", "approval-1", "--json"]);
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ signalId: "approval-1", duplicate: true });

    const gitdir = join(dataDir, "deployments", "dep.git");
    const types = (await gitRunLog(gitdir, "r1")).map((e) => e.type);
    expect(types.filter((t) => t === "SignalReceived")).toHaveLength(1);
    expect(types).toContain("SignalConsumed");
    expect(types).toContain("TimerCancelled");
    await gitAt(gitdir, ["fsck", "--strict", "--no-progress"]);
    console.info(`signal: waiting run resolved ${latencyMs} ms after \`signal send\` started (includes CLI start-up)`);
  });
});
