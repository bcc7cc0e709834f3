/**
 * `npm start` (the demo) end to end, as a fresh clone runs it.
 */
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCommand } from "../../helpers/child-process.js";
import { gitAt } from "../../helpers/git-cli.js";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { runCli } from "../../unit/cli/cli-io.js";
import { REPO_ROOT, runCliProcess, lockLeft } from "../host/cli-child.js";

const tempDir = useTempDirs("wfh-demo-");

function npmStart(args: readonly string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return runCommand("npm", ["start", "--silent", "--", ...args], { cwd: REPO_ROOT });
}

describe("workflow-host demo", () => {
  it("runs as `npm start`, exit 0, showing fires, a skipped cron tick, a signal delivered, and the git command; runs again on the same folder", async () => {
    const dataDir = join(await tempDir(), "demo");
    const run = await npmStart(["--data-dir", dataDir]);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/ fired +invoice-7 +payment-due +scheduledFor .* late \d[\d.]* (ms|s|min|h|d)\b/);
    expect(run.stdout).toMatch(/ fired +welcome-42 +send-email /);
    expect(run.stdout).toMatch(/ fired +report-berlin +every-2s .* in Europe\/Berlin/);
    expect(run.stdout).toMatch(/ skipped +report-berlin +every-2s +\d+ missed ticks? .*misfire: skip/);
    expect(run.stdout).toMatch(/ signal +approval-9 +approve +deliverSignal: SignalReceived committed at seq \d+/);
    expect(run.stdout).toMatch(/ received +approval-9 +approve +waitForSignal resolved with \{"approvedBy":"ops@example.com"\}/);
    expect(run.stdout).toMatch(/ timed out +approval-10 /);
    expect(run.stdout).toMatch(/^ +RUN +WHAT IT SHOWS +EVENTS +FIRED +SKIPPED +SIGNALS +STATE$/m);
    expect(run.stdout).toContain(`git --git-dir=${join(dataDir, "deployments", "demo.git")} log --stat`);
    // The hint runs as printed here: the repository's script, not a command that is not on the PATH.
    expect(run.stdout).toContain(`  npm run cli -- timers --data-dir ${dataDir}\n`);
    expect(run.stdout).not.toMatch(/^ +workflow-host /m);
    expect(run.stdout).toMatch(/demo finished in [\d.]+ s: timers fired, missed cron ticks skipped, signal delivered/);
    const gitdir = join(dataDir, "deployments", "demo.git");
    await gitAt(gitdir, ["fsck", "--strict", "--no-progress"]);
    expect(await gitAt(gitdir, ["log", "--oneline"])).toMatch(/RunCompleted approval-9/);
    expect(lockLeft(dataDir)).toBe(false);

    const pending = await runCliProcess(["timers", "--data-dir", dataDir, "--json"]);
    expect(JSON.parse(pending.stdout)).toMatchObject({ timers: [{ runId: "welcome-42", timerId: "check-in-7d" }] });

    const again = await runCliProcess(["demo", "--data-dir", dataDir]);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain("(cleared the previous demo's data)");
  }, 180_000);

  it("refuses a folder it did not make, before touching it", async () => {
    const dataDir = join(await tempDir(), "mine");
    await mkdir(dataDir);
    await writeFile(join(dataDir, "notes.txt"), "keep me");
    const run = await runCli(["demo", "--data-dir", dataDir]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/^workflow-host: usage: --data-dir .* holds data the demo did not make/);
  });
});
