import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { runTsScript } from "../../helpers/child-process.js";
import { gitAt } from "../../helpers/git-cli.js";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { startNode } from "./fixtures/restart-node.js";

const tempDir = useTempDirs("wh-signal-waits-");
const here = fileURLToPath(new URL(".", import.meta.url));
const REPO = "dep";

/** Event types of run r1 in commit order, read with the git CLI. */
async function gitLogTypes(dataDir: string, runId = "r1"): Promise<{ type: string; timerId?: string; signalId?: string }[]> {
  const gitdir = join(dataDir, "deployments", `${REPO}.git`);
  const names = (await gitAt(gitdir, ["ls-tree", "--name-only", `main:runs/${runId}/events`])).trim().split("\n");
  const seqs = names.map((n) => Number(n.replace(".json", ""))).sort((a, b) => a - b);
  const out: { type: string; timerId?: string; signalId?: string }[] = [];
  for (const seq of seqs) {
    const event = JSON.parse(await gitAt(gitdir, ["show", `main:runs/${runId}/events/${seq}.json`])) as {
      type: string;
      signalId?: string;
      data?: { timerId?: string; signalId?: string };
    };
    const signalId = event.signalId ?? event.data?.signalId;
    out.push({ type: event.type, ...(event.data?.timerId === undefined ? {} : { timerId: event.data.timerId }), ...(signalId === undefined ? {} : { signalId }) });
  }
  return out;
}

async function deliverFromChild(dataDir: string, signalId: string): Promise<void> {
  const child = await runTsScript(join(here, "fixtures", "deliver-signal.ts"), [dataDir, REPO, "r1", "approve", signalId, "{\"ok\":true}"], { timeoutMs: 20_000 });
  expect(child.code).toBe(0);
}

describe("waitForSignal with a timeout across restarts (real disk, real timers)", () => {
  it("signal first, then a restart before the deadline: the signal was returned and the timer stays cancelled", async () => {
    const dataDir = await tempDir();
    const first = await startNode(dataDir, REPO);
    const waiting = first.runtime.waitForSignal("r1", "approve", { timeoutMs: 30_000 });
    await deliverFromChild(dataDir, "s-1");
    expect(await waiting).toMatchObject({ signalId: "s-1", payload: { ok: true } });
    await first.stop();

    const second = await startNode(dataDir, REPO);
    expect(second.scheduler.queuedTimers()).toEqual([]);
    expect(await gitLogTypes(dataDir)).toEqual([
      { type: "TimerSet", timerId: "wait:approve:1" },
      { type: "SignalReceived", signalId: "s-1" },
      { type: "TimerCancelled", timerId: "wait:approve:1" },
      { type: "SignalConsumed", signalId: "s-1" },
    ]);
    await second.stop();
  });

  it("timeout first, then a restart, then the signal: the next wait gets it", async () => {
    const dataDir = await tempDir();
    const first = await startNode(dataDir, REPO);
    expect(await first.runtime.waitForSignal("r1", "approve", { timeoutMs: 300 })).toEqual({ timedOut: true, timerId: "wait:approve:1" });
    await first.stop();

    const second = await startNode(dataDir, REPO);
    await deliverFromChild(dataDir, "s-late");
    expect(await second.runtime.waitForSignal("r1", "approve", { timeoutMs: 60_000 })).toMatchObject({ signalId: "s-late" });
    expect(await gitLogTypes(dataDir)).toEqual([
      { type: "TimerSet", timerId: "wait:approve:1" },
      { type: "TimerFired", timerId: "wait:approve:1" },
      { type: "SignalReceived", signalId: "s-late" },
      { type: "SignalConsumed", signalId: "s-late" },
    ]);
    await second.stop();
  });

  it("a restart while waiting: the re-issued wait resumes the armed deadline, and a signal after it stays for the next wait", async () => {
    const dataDir = await tempDir();
    const first = await startNode(dataDir, REPO);
    // The host stops channels first, so the interrupted wait ends with channel_stopped.
    const interrupted = expect(first.runtime.waitForSignal("r1", "approve", { timeoutMs: 700 })).rejects.toMatchObject({ code: "channel_stopped" });
    await first.armed("r1", "wait:approve:1");
    await first.stop();
    await interrupted;

    const second = await startNode(dataDir, REPO);
    const resumed = await second.runtime.waitForSignal("r1", "approve", { timeoutMs: 60_000 });
    expect(resumed).toEqual({ timedOut: true, timerId: "wait:approve:1" });
    await deliverFromChild(dataDir, "s-after");
    await second.stop();

    const third = await startNode(dataDir, REPO);
    expect(await third.runtime.waitForSignal("r1", "approve")).toMatchObject({ signalId: "s-after" });
    const types = await gitLogTypes(dataDir);
    expect(types.filter((e) => e.type === "TimerSet")).toHaveLength(1);
    expect(types.map((e) => e.type)).toEqual(["TimerSet", "TimerFired", "SignalReceived", "SignalConsumed"]);
    await third.stop();
  });
});
