import { afterEach, describe, expect, it } from "vitest";
import { isWorkflowHostError, type WorkflowHostError } from "../../../src/errors.js";
import { createWorkflowHost, type WorkflowHost, type WorkflowHostOptions } from "../../../src/host/host.js";
import { createFakeClock, type FakeClock } from "../../../src/testing/fake-clock.js";
import { readRunLog } from "../../../src/workflow/run-log.js";
import type { RunEvent } from "../../../src/workflow/types.js";
import { WORKFLOW_RUN_KIND } from "../../../src/workflow/workflow-run-kind.js";
import { createManualTimers, type ManualTimers } from "../../helpers/manual-timers.js";
import { createMemFs, type MemFs } from "../../helpers/memfs.js";

const hosts: WorkflowHost[] = [];

afterEach(async () => {
  await Promise.all(hosts.splice(0).map((h) => h.stop()));
});

interface Setup {
  readonly fs: MemFs;
  readonly clock: FakeClock;
  readonly lockTimers: ManualTimers;
  make(extra?: Partial<WorkflowHostOptions>): WorkflowHost;
}

function setup(): Setup {
  const fs = createMemFs();
  const clock = createFakeClock("2026-05-01T10:00:00.000Z");
  const lockTimers = createManualTimers();
  return {
    fs,
    clock,
    lockTimers,
    make(extra = {}) {
      const host = createWorkflowHost({ dataDir: "/data", fs, clock: clock.clock, timers: clock.timers, watch: false, lock: { timers: lockTimers }, ...extra });
      hosts.push(host);
      return host;
    },
  };
}

async function logOf(host: WorkflowHost, repoId: string, runId: string): Promise<RunEvent[]> {
  const reads = await host.store.openCommittedReads(null, { kind: WORKFLOW_RUN_KIND, id: repoId }, "refs/heads/main");
  return [...(await readRunLog(reads, runId)).events];
}

async function rejection(promise: Promise<unknown>): Promise<WorkflowHostError> {
  try {
    await promise;
  } catch (error) {
    if (isWorkflowHostError(error)) return error;
    throw error;
  }
  throw new Error("expected a rejection");
}

describe("createWorkflowHost", () => {
  it("takes the lock on start, fires a runtime timer of a deployment created while running, and releases the lock on stop", async () => {
    const s = setup();
    const host = s.make();
    await host.start();
    expect(host.state).toBe("running");
    expect(s.fs.existsSync("/data/host.lock")).toBe(true);
    expect(await host.createDeployment("dep")).toMatchObject({ created: true });
    await host.runtime("dep").setTimer("r1", { timerId: "t1", delayMs: 1_000 });
    await s.clock.advance(1_000);
    await host.scheduler.idle();
    const fired = (await logOf(host, "dep", "r1")).filter((e) => e.type === "TimerFired");
    expect(fired).toHaveLength(1);
    expect(fired[0]).toMatchObject({ data: { timerId: "t1", scheduledFor: "2026-05-01T10:00:01.000Z" } });
    await host.stop();
    expect(host.state).toBe("stopped");
    expect(s.fs.existsSync("/data/host.lock")).toBe(false);
    expect(s.fs.existsSync("/data/host.lock.json")).toBe(false);
    await host.stop();
  });

  it("refuses a second host on the same data dir with host_locked naming the first, which keeps running", async () => {
    const s = setup();
    const first = s.make();
    await first.start();
    const second = s.make();
    const error = await rejection(second.start());
    expect(error.code).toBe("host_locked");
    expect(error.data["pid"]).toBe(process.pid);
    expect(second.state).toBe("stopped");
    expect(first.state).toBe("running");
    await first.createDeployment("dep");
    await first.runtime("dep").setTimer("r1", { timerId: "t1", delayMs: 10 });
    await s.clock.advance(10);
    await first.scheduler.idle();
    expect((await logOf(first, "dep", "r1")).map((e) => e.type)).toEqual(["TimerSet", "TimerFired"]);
  });

  it("passes the group-commit interval to its scheduler, refusing one out of range with time_invalid", () => {
    const s = setup();
    for (const bad of [-1, 60_001, Number.NaN]) {
      let thrown: unknown;
      try {
        s.make({ minCommitIntervalMs: bad });
      } catch (error) {
        thrown = error;
      }
      expect(isWorkflowHostError(thrown) ? thrown.code : thrown).toBe("time_invalid");
    }
    expect(s.make({ minCommitIntervalMs: 0, blockingRefIo: false }).state).toBe("created");
  });

  it("starts once: start() again, and channel()/runtime() after stop, throw host_stopped", async () => {
    const s = setup();
    const host = s.make();
    await host.start();
    expect((await rejection(host.start())).code).toBe("host_stopped");
    await host.stop();
    expect(() => host.channel("dep", "r1")).toThrow(expect.objectContaining({ code: "host_stopped" }));
    expect(() => host.runtime("dep")).toThrow(expect.objectContaining({ code: "host_stopped" }));
    expect((await rejection(host.createDeployment("dep"))).code).toBe("host_stopped");
  });

  it("keeps one channel per (repo, run) and one runtime per repo, and checks ids first", async () => {
    const s = setup();
    const host = s.make();
    expect(host.channel("dep", "r1")).toBe(host.channel("dep", "r1"));
    expect(host.channel("dep", "r1")).not.toBe(host.channel("dep", "r2"));
    expect(host.runtime("dep")).toBe(host.runtime("dep"));
    expect(() => host.channel("../x", "r1")).toThrow(expect.objectContaining({ code: "repo_id_invalid" }));
    expect(() => host.channel("dep", "a/b")).toThrow(expect.objectContaining({ code: "id_invalid" }));
  });

  it("hands a delivered signal to a run waiting in the runtime and records it consumed", async () => {
    const s = setup();
    const host = s.make();
    await host.start();
    await host.createDeployment("dep");
    const waiting = host.runtime("dep").waitForSignal("r1", "approve", { timeoutMs: 60_000 });
    await host.channel("dep", "r1").deliver("approve", { ok: true }, "s-1");
    const received = await waiting;
    expect(received).toMatchObject({ signalId: "s-1", payload: { ok: true } });
    const types = (await logOf(host, "dep", "r1")).map((e) => e.type);
    expect(types).toContain("SignalConsumed");
  });

  it("ends pending waits with host_stopped on stop", async () => {
    const s = setup();
    const host = s.make();
    await host.start();
    await host.createDeployment("dep");
    const waiting = host.runtime("dep").waitForSignal("r1", "approve");
    const settled = waiting.then(() => null, (error: unknown) => error);
    await host.stop();
    expect(await settled).toMatchObject({ code: "host_stopped" });
  });

  it("stops itself when its lock is taken over by another process", async () => {
    const s = setup();
    const host = s.make();
    await host.start();
    const record = JSON.parse(String(s.fs.readFileSync("/data/host.lock.json", "utf8"))) as Record<string, unknown>;
    s.fs.writeFileSync("/data/host.lock.json", JSON.stringify({ ...record, pid: 4242, token: "other-host" }));
    s.lockTimers.fireAll();
    await host.stopped;
    expect(host.state).toBe("stopped");
    // The new holder's record is left alone.
    expect(JSON.parse(String(s.fs.readFileSync("/data/host.lock.json", "utf8")))).toMatchObject({ pid: 4242 });
  });

  it("stop() during start() waits for the start and then releases the lock", async () => {
    const s = setup();
    const host = s.make();
    const started = host.start();
    const stopped = host.stop();
    await started;
    await stopped;
    expect(host.state).toBe("stopped");
    expect(s.fs.existsSync("/data/host.lock")).toBe(false);
  });
});
