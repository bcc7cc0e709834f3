/**
 * The cluster's git transport takes its time and its environment by injection: the limit on a
 * git call runs on the given timers (a FakeClock here, so nothing is killed until the test
 * advances it), every git process gets the given environment, and commit dates come from the
 * given clock. Real `git` processes, real disk.
 */
import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createGitRemote } from "../../../seams/cluster/git-remote.js";
import { WorkflowHostError } from "../../../src/errors.js";
import { createFakeClock } from "../../../src/testing/fake-clock.js";
import { git } from "../../helpers/git-cli.js";
import { useTempDirs } from "../../helpers/temp-dir.js";

const tempDir = useTempDirs("workflow-host-git-remote-");
const identity = { name: "workflow-host test.1", email: "test@workflow-host" };
const baseEnv = { PATH: process.env["PATH"] ?? "/usr/bin:/bin" };

describe("git remote (cluster transport)", () => {
  it("gives every git process the injected environment, and dates commits by the injected clock", async () => {
    const dir = await tempDir();
    const fake = createFakeClock("2030-01-02T03:04:05.000Z");
    const trace = join(dir, "trace.log");
    const remote = createGitRemote({ remoteBase: join(dir, "remotes"), identity, clock: fake.clock, timers: fake.timers, env: { ...baseEnv, GIT_TRACE: trace } });
    const made = await remote.ensureRemote(join(dir, "clone.git"), "d1");
    expect(made.created).toBe(true);
    // GIT_TRACE came from the injected environment, not from this process's.
    expect(process.env["GIT_TRACE"]).toBeUndefined();
    expect(existsSync(trace)).toBe(true);
    expect(await readFile(trace, "utf8")).toContain("commit-tree");
    const date = await git([`--git-dir=${join(dir, "remotes", "d1.git")}`, "log", "-1", "--format=%ct", "main"]);
    expect(Number(date.trim())).toBe(Date.parse("2030-01-02T03:04:05.000Z") / 1_000);
  });

  it("kills a git call that outlives timeoutMs on the injected timers (remote_unavailable), and not before they reach it", async () => {
    const dir = await tempDir();
    const fake = createFakeClock("2030-01-02T03:04:05.000Z");
    // A remote that never answers: the ssh command git runs only sleeps (`#` keeps the host and
    // command git appends away from sleep, which refused them as intervals and exited at once).
    const remote = createGitRemote({
      remoteBase: "ssh://127.0.0.1/never",
      identity,
      clock: fake.clock,
      timers: fake.timers,
      timeoutMs: 5_000,
      env: { ...baseEnv, GIT_SSH_COMMAND: "sleep 20 #" },
    });
    const gitdir = join(dir, "clone.git");
    await remote.ensureClone(gitdir);
    let settled = false;
    const fetching = remote.fetch(gitdir, "d1").finally(() => {
      settled = true;
    });
    fetching.catch(() => undefined);
    await fake.advance(4_999);
    expect(settled).toBe(false);
    await fake.advance(1);
    const error = await fetching.then(() => null, (e: unknown) => e);
    expect(error).toBeInstanceOf(WorkflowHostError);
    expect((error as WorkflowHostError).code).toBe("remote_unavailable");
    // Killed (no exit code), not refused by a real ssh: the injected GIT_SSH_COMMAND ran.
    expect((error as WorkflowHostError).data).toMatchObject({ code: -1 });
  });

  it("asks the caller's fence right before the takeover push: a refusal leaves the remote where it was, a pass puts the commit on its tip", async () => {
    const dir = await tempDir();
    const fake = createFakeClock("2030-01-02T03:04:05.000Z");
    const remote = createGitRemote({ remoteBase: join(dir, "remotes"), identity, clock: fake.clock, timers: fake.timers, env: baseEnv });
    const gitdir = join(dir, "clone.git");
    const { commitSha: genesis } = await remote.ensureRemote(gitdir, "d1");
    const remoteTip = async (): Promise<string> => (await git([`--git-dir=${join(dir, "remotes", "d1.git")}`, "rev-parse", "main"])).trim();
    let asked = 0;
    const refusal = await remote
      .takeOver(gitdir, "d1", "Lease of d1 taken by late.1 (epoch 6)", async () => {
        asked += 1;
        throw new WorkflowHostError("lease_not_held", "lapsed", {});
      })
      .then(() => null, (e: unknown) => e);
    expect(asked).toBe(1);
    expect((refusal as WorkflowHostError).code).toBe("lease_not_held");
    expect(await remoteTip()).toBe(genesis);
    const taken = await remote.takeOver(gitdir, "d1", "Lease of d1 taken by next.1 (epoch 7)", async () => {
      asked += 1;
    });
    expect(asked).toBe(2);
    expect(await remoteTip()).toBe(taken);
    const subjects = await git([`--git-dir=${join(dir, "remotes", "d1.git")}`, "log", "--format=%s", "main"]);
    expect(subjects.split("\n").filter(Boolean)).toEqual(["Lease of d1 taken by next.1 (epoch 7)", "genesis"]);
  });
});
