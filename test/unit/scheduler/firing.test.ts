import { afterEach, describe, expect, it } from "vitest";
import { WorkflowHostError } from "../../../src/errors.js";
import type { Timers } from "../../../src/time/clock.js";
import type { RepoStore } from "../../../src/substrate/types.js";
import { WORKFLOW_RUN_KIND } from "../../../src/workflow/workflow-run-kind.js";
import { cancelTimerDurably } from "../../../seams/scheduler/timer-cancel.js";
import { createHarness, firedOf, ofType, REPO, type Harness } from "./harness.js";

const DAY_MS = 86_400_000;
let h: Harness | undefined;

afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** Fake timers that record every delay they are given. */
function recordingTimers(inner: Timers, delays: number[], shiftMs = 0): Timers {
  return {
    setTimeout(fn, delayMs) {
      delays.push(delayMs);
      return inner.setTimeout(fn, delayMs > 1 ? delayMs + shiftMs : delayMs);
    },
    clearTimeout: (handle) => inner.clearTimeout(handle),
  };
}

describe("one-shot timers", () => {
  // The arm cap is node's own limit here, so the three timers straddle the longest delay a
  // setTimeout takes in a handful of wake-ups. (With the default 30 s cap the same span is about
  // 92,000 fake wake-ups: a run whose length followed the machine's speed.)
  it("fires timers beyond 2^31-1 ms exactly once at their fireAt, with every arm capped (A1)", async () => {
    const MAX_DELAY_MS = 2 ** 31 - 1;
    const delays: number[] = [];
    h = await createHarness("2026-01-01T00:00:00.000Z", { discoverEveryMs: 7 * DAY_MS });
    const timers = recordingTimers(h.clock.timers, delays);
    await h.restart({ timers, maxArmMs: MAX_DELAY_MS });
    const due = {
      "t-far": "2026-02-01T00:00:00.000Z",
      "t-edge": "2026-01-25T20:31:23.647Z",
      "t-edge1": "2026-01-25T20:31:23.648Z",
    };
    for (const [timerId, fireAt] of Object.entries(due)) {
      await h.append("r1", { type: "TimerSet", data: { timerId, fireAt } });
    }
    for (const step of [1, 1_000, DAY_MS]) {
      await h.clock.advance(step);
      expect(firedOf(await h.log("r1"))).toEqual([]);
    }
    await h.clock.advance(Date.parse(due["t-edge"]) - h.clock.now());
    await h.scheduler.idle();
    expect(firedOf(await h.log("r1")).map((f) => f.scheduledFor)).toEqual([due["t-edge"]]);
    await h.clock.advance(1);
    await h.scheduler.idle();
    await h.clock.advance(Date.parse(due["t-far"]) - h.clock.now() + 60_000);
    await h.scheduler.idle();
    const fired = firedOf(await h.log("r1"));
    expect(fired.map((f) => f.scheduledFor)).toEqual([due["t-edge"], due["t-edge1"], due["t-far"]]);
    for (const f of fired) expect(f.firedAt).toBe(f.scheduledFor);
    expect(delays.length).toBeGreaterThan(0);
    for (const d of delays) {
      expect(Number.isFinite(d)).toBe(true);
      expect(d).toBeGreaterThanOrEqual(0);
      expect(d).toBeLessThanOrEqual(MAX_DELAY_MS);
    }
    // t-edge was armed at node's limit itself, t-edge1 and t-far beyond it: capped.
    expect(delays).toContain(MAX_DELAY_MS);
  });

  it("caps every arm at 30 s by default, however far the timer is (A1)", async () => {
    const delays: number[] = [];
    h = await createHarness("2026-01-01T00:00:00.000Z", { discoverEveryMs: 7 * DAY_MS });
    await h.restart({ timers: recordingTimers(h.clock.timers, delays) });
    await h.append("r1", { type: "TimerSet", data: { timerId: "t-far", fireAt: "2026-02-01T00:00:00.000Z" } });
    await h.clock.advance(95_000);
    expect(firedOf(await h.log("r1"))).toEqual([]);
    const armDelays = delays.filter((d) => d !== 7 * DAY_MS);
    expect(armDelays.length).toBeGreaterThanOrEqual(3);
    for (const d of armDelays) {
      expect(d).toBeGreaterThanOrEqual(0);
      expect(d).toBeLessThanOrEqual(30_000);
    }
  });

  it("re-arms an early wake-up and fires on time, never early (E4)", async () => {
    h = await createHarness("2026-05-01T00:00:00.000Z");
    // Every fake arm wakes 1 ms before it was asked to.
    await h.restart({ timers: recordingTimers(h.clock.timers, [], -1) });
    await h.append("r1", { type: "TimerSet", data: { timerId: "t", fireAt: "2026-05-01T04:00:00.000Z" } });
    await h.clock.advance(4 * 3_600_000 - 1);
    await h.scheduler.idle();
    expect(firedOf(await h.log("r1"))).toEqual([]);
    await h.clock.advance(5);
    await h.scheduler.idle();
    const fired = firedOf(await h.log("r1"));
    expect(fired).toHaveLength(1);
    expect(Date.parse(fired[0]!.firedAt)).toBeGreaterThanOrEqual(Date.parse("2026-05-01T04:00:00.000Z"));
  });

  it("fires an overdue one-shot once on recovery with its original scheduledFor (C2b)", async () => {
    h = await createHarness("2026-05-01T00:00:00.000Z");
    await h.append("r1", { type: "TimerSet", data: { timerId: "t", fireAt: "2026-05-01T00:00:00.000Z" } });
    h.clock.jump("2026-05-01T09:00:00.000Z");
    await h.scheduler.start();
    await h.clock.advance(0);
    await h.scheduler.idle();
    const fired = firedOf(await h.log("r1"));
    expect(fired).toEqual([{ timerId: "t", scheduledFor: "2026-05-01T00:00:00.000Z", firedAt: "2026-05-01T09:00:00.000Z", seq: 2 }]);
    await h.restart();
    await h.clock.advance(60_000);
    await h.scheduler.idle();
    expect(firedOf(await h.log("r1"))).toHaveLength(1);
  });

  it("fires a timer whose arming was delayed past its fireAt, once (C2a)", async () => {
    h = await createHarness("2026-05-01T12:00:00.000Z");
    await h.append("r1", { type: "TimerSet", data: { timerId: "t", fireAt: "2026-05-01T12:00:02.000Z" } });
    const clock = h.clock;
    const slow: RepoStore = Object.create(h.store) as RepoStore;
    let first = true;
    slow.openCommittedReads = async (...args) => {
      const reads = await h!.store.openCommittedReads(...args);
      if (first) {
        first = false;
        clock.jump("2026-05-01T12:00:03.000Z"); // a slow disk during recovery
      }
      return reads;
    };
    await h.restart({ repoStore: slow });
    await h.clock.advance(0);
    await h.scheduler.idle();
    const fired = firedOf(await h.log("r1"));
    expect(fired).toHaveLength(1);
    expect(fired[0]!.scheduledFor).toBe("2026-05-01T12:00:02.000Z");
    expect(Date.parse(fired[0]!.firedAt)).toBeGreaterThanOrEqual(Date.parse("2026-05-01T12:00:03.000Z"));
  });

  it("commits timers of one repo that are due together in one commit, maxBatch at a time", async () => {
    h = await createHarness("2026-05-01T00:00:00.000Z", { maxBatch: 25 });
    for (let i = 0; i < 30; i += 1) {
      await h.append(`r${i}`, { type: "TimerSet", data: { timerId: "a", fireAt: "2026-05-01T00:01:00.000Z" } }, { type: "TimerSet", data: { timerId: "b", fireAt: "2026-05-01T00:01:00.000Z" } });
    }
    await h.scheduler.start();
    await h.clock.advance(60_000);
    await h.scheduler.idle();
    expect(h.scheduler.stats().fired).toBe(60);
    expect(h.scheduler.stats().commits).toBe(3);
    for (let i = 0; i < 30; i += 1) expect(firedOf(await h.log(`r${i}`))).toHaveLength(2);
  });

  it("fires once for duplicate TimerSets of the same generation and honours a reschedule", async () => {
    h = await createHarness("2026-05-01T00:00:00.000Z");
    await h.scheduler.start();
    const set = (fireAt: string) => ({ type: "TimerSet", data: { timerId: "t", fireAt } });
    await h.append("r1", set("2026-05-01T00:00:10.000Z"));
    await h.append("r1", set("2026-05-01T00:00:10.000Z"));
    await h.append("r2", set("2026-05-01T00:00:10.000Z"));
    await h.append("r2", set("2026-05-01T00:00:20.000Z"));
    await h.clock.advance(15_000);
    await h.scheduler.idle();
    expect(firedOf(await h.log("r1"))).toHaveLength(1);
    expect(firedOf(await h.log("r2"))).toHaveLength(0);
    await h.clock.advance(10_000);
    await h.scheduler.idle();
    expect(firedOf(await h.log("r2")).map((f) => f.scheduledFor)).toEqual(["2026-05-01T00:00:20.000Z"]);
    expect(h.scheduler.queuedTimers()).toEqual([]);
  });

  it("never fires the timers of a terminal run", async () => {
    h = await createHarness("2026-05-01T00:00:00.000Z");
    await h.append("r1", { type: "TimerSet", data: { timerId: "t", fireAt: "2026-05-01T00:00:10.000Z" } });
    await h.scheduler.start();
    expect(h.scheduler.queuedTimers()).toHaveLength(1);
    await h.append("r1", { type: "RunCompleted" });
    await h.clock.advance(60_000);
    await h.scheduler.idle();
    expect(firedOf(await h.log("r1"))).toEqual([]);
    expect(h.scheduler.queuedTimers()).toEqual([]);
  });

  it("retries a failed commit with growing backoff, reports it and fires once", async () => {
    h = await createHarness("2026-05-01T00:00:00.000Z");
    await h.append("r1", { type: "TimerSet", data: { timerId: "t", fireAt: "2026-05-01T00:00:01.000Z" } });
    const flaky: RepoStore = Object.create(h.store) as RepoStore;
    let failures = 2;
    flaky.writeTreeDelta = (...args) => {
      if (failures > 0) {
        failures -= 1;
        return Promise.reject(Object.assign(new Error("EIO: disk went away"), { code: "EIO" }));
      }
      return h!.store.writeTreeDelta(...args);
    };
    await h.restart({ repoStore: flaky, retryInitialMs: 100 });
    await h.clock.advance(1_000);
    await h.scheduler.idle();
    await h.clock.advance(100);
    await h.scheduler.idle();
    await h.clock.advance(200);
    await h.scheduler.idle();
    const failed = h.events.filter((e) => e.type === "commit_failed");
    expect(failed.map((e) => (e.type === "commit_failed" ? e.retryInMs : 0))).toEqual([100, 200]);
    expect(firedOf(await h.log("r1"))).toHaveLength(1);
    expect(h.scheduler.stats().commitFailures).toBe(2);
  });

  it("reports armed once per generation when a ref_locked commit is retried", async () => {
    h = await createHarness("2026-05-01T00:00:00.000Z");
    await h.append("r1", { type: "TimerSet", data: { timerId: "t", fireAt: "2026-05-01T00:00:01.000Z" } });
    const locked: RepoStore = Object.create(h.store) as RepoStore;
    let failures = 2;
    locked.writeTreeDelta = (...args) => {
      if (failures > 0) {
        failures -= 1;
        return Promise.reject(new WorkflowHostError("ref_locked", "refs/heads/main is locked by another writer"));
      }
      return h!.store.writeTreeDelta(...args);
    };
    await h.restart({ repoStore: locked, retryInitialMs: 100 });
    await h.clock.advance(1_000);
    await h.scheduler.idle();
    await h.clock.advance(100);
    await h.scheduler.idle();
    await h.clock.advance(200);
    await h.scheduler.idle();
    expect(h.events.filter((e) => e.type === "commit_failed")).toHaveLength(2);
    expect(firedOf(await h.log("r1"))).toHaveLength(1);
    const armed = h.events.filter((e) => e.type === "armed");
    expect(armed.map((e) => (e.type === "armed" ? `${e.runId}/${e.timerId}` : ""))).toEqual(["r1/t"]);
  });

  it("picks up deployments created after start without a restart", async () => {
    h = await createHarness("2026-05-01T00:00:00.000Z", { discoverEveryMs: 1_000 });
    await h.scheduler.start();
    await h.store.initRepo(null, { kind: WORKFLOW_RUN_KIND, id: "late" });
    await h.store.writeTree(null, { kind: WORKFLOW_RUN_KIND, id: "late" }, "refs/heads/main", {
      files: { "runs/r1/events/1.json": JSON.stringify({ seq: 1, type: "TimerSet", data: { timerId: "t", fireAt: "2026-05-01T00:00:05.000Z" } }) },
      message: "set",
    });
    await h.clock.advance(10_000);
    await h.scheduler.idle();
    expect(firedOf(await h.log("r1", "late"))).toHaveLength(1);
  });

  it("stop() leaves no fake timer armed and ignores later fires", async () => {
    h = await createHarness("2026-05-01T00:00:00.000Z");
    await h.append("r1", { type: "TimerSet", data: { timerId: "t", fireAt: "2026-05-01T00:10:00.000Z" } });
    await h.scheduler.start();
    expect(h.clock.pending()).toBeGreaterThan(0);
    await h.scheduler.stop();
    expect(h.clock.pending()).toBe(0);
    await h.clock.advance(3_600_000);
    expect(firedOf(await h.log("r1"))).toEqual([]);
  });
});

describe("cancel", () => {
  it("cancelTimer is durable: a restart does not bring the timer back", async () => {
    h = await createHarness("2026-05-01T00:00:00.000Z");
    await h.append("r1", { type: "TimerSet", data: { timerId: "t", fireAt: "2026-05-01T00:01:00.000Z" } });
    await h.scheduler.start();
    expect(await h.scheduler.cancelTimer(REPO, "r1", "t", "no longer needed")).toMatchObject({ outcome: "cancelled" });
    expect(h.scheduler.queuedTimers()).toEqual([]);
    await h.restart();
    expect(h.scheduler.queuedTimers()).toEqual([]);
    await h.clock.advance(120_000);
    await h.scheduler.idle();
    expect(firedOf(await h.log("r1"))).toEqual([]);
    expect(ofType(await h.log("r1"), "TimerCancelled")).toHaveLength(1);
    expect(await h.scheduler.cancelTimer(REPO, "r1", "t")).toEqual({ outcome: "already_cancelled", commitSha: null });
  });

  it("cancelTimerDurably cancels from the log alone, with no scheduler running", async () => {
    h = await createHarness("2026-05-01T00:00:00.000Z");
    await h.append("r1", { type: "TimerSet", data: { timerId: "t", fireAt: "2026-05-01T00:01:00.000Z" } });
    const { store } = h;
    const cancel = (timerId: string) =>
      cancelTimerDurably({ store, principal: null, repoId: REPO, runId: "r1", timerId, reason: "paid", nowMs: () => Date.parse("2026-05-01T00:00:30.000Z") });
    const first = await cancel("t");
    expect(first.outcome).toBe("cancelled");
    expect(first.commitSha).toMatch(/^[0-9a-f]{40}$/);
    expect(ofType(await h.log("r1"), "TimerCancelled")).toMatchObject([{ at: "2026-05-01T00:00:30.000Z", data: { timerId: "t", reason: "paid" } }]);
    expect(await cancel("t")).toEqual({ outcome: "already_cancelled", commitSha: null });
    expect(await cancel("other")).toEqual({ outcome: "not_armed", commitSha: null });
    await expect(cancel("../t")).rejects.toMatchObject({ code: "id_invalid" });
    // A scheduler started afterwards never arms it.
    await h.scheduler.start();
    expect(h.scheduler.queuedTimers()).toEqual([]);
  });

  it("cancelTimer after the fire reports already_fired and writes nothing", async () => {
    h = await createHarness("2026-05-01T00:00:00.000Z");
    await h.append("r1", { type: "TimerSet", data: { timerId: "t", fireAt: "2026-05-01T00:00:01.000Z" } });
    await h.scheduler.start();
    await h.clock.advance(1_000);
    await h.scheduler.idle();
    expect(await h.scheduler.cancelTimer(REPO, "r1", "t")).toEqual({ outcome: "already_fired", commitSha: null });
    expect(ofType(await h.log("r1"), "TimerCancelled")).toEqual([]);
  });

  it("cancel racing the fire has exactly one winner", async () => {
    for (let round = 0; round < 10; round += 1) {
      h = await createHarness("2026-05-01T00:00:00.000Z");
      await h.append("r1", { type: "TimerSet", data: { timerId: "t", fireAt: "2026-05-01T00:00:01.000Z" } });
      await h.scheduler.start();
      const advancing = h.clock.advance(1_000);
      const cancelling = h.scheduler.cancelTimer(REPO, "r1", "t");
      await Promise.all([advancing, cancelling]);
      await h.scheduler.idle();
      const log = await h.log("r1");
      expect(firedOf(log).length + ofType(log, "TimerCancelled").length).toBe(1);
      await h.close();
      h = undefined;
    }
  });

  it("cancelQueued drops the timer from memory only; a restart re-arms it", async () => {
    h = await createHarness("2026-05-01T00:00:00.000Z");
    await h.append("r1", { type: "TimerSet", data: { timerId: "t", fireAt: "2026-05-01T00:01:00.000Z" } });
    await h.scheduler.start();
    expect(h.scheduler.cancelQueued("r1", "t")).toBe(true);
    expect(h.scheduler.cancelQueued("r1", "t")).toBe(false);
    await h.append("r1", { type: "SomethingElse" });
    expect(h.scheduler.queuedTimers()).toEqual([]);
    await h.restart();
    expect(h.scheduler.queuedTimers().map((t) => t.timerId)).toEqual(["t"]);
  });

  it("cancelQueued with a setSeq suppresses a generation the tail has not seen yet, not a later one", async () => {
    h = await createHarness("2026-05-01T00:00:00.000Z");
    await h.append("r1", { type: "Started" });
    await h.scheduler.start();
    expect(h.scheduler.cancelQueued("r1", "t", REPO, 2)).toBe(false);
    await h.append("r1", { type: "TimerSet", data: { timerId: "t", fireAt: "2026-05-01T00:00:10.000Z" } });
    await h.clock.advance(0);
    expect(h.scheduler.queuedTimers()).toEqual([]);
    await h.append("r1", { type: "TimerSet", data: { timerId: "t", fireAt: "2026-05-01T00:00:20.000Z" } });
    await h.clock.advance(0);
    expect(h.scheduler.queuedTimers()).toMatchObject([{ timerId: "t", setSeq: 3 }]);
  });

  it("rejects bad ids before any write", async () => {
    h = await createHarness("2026-05-01T00:00:00.000Z");
    await expect(h.scheduler.cancelTimer(REPO, "../x", "t")).rejects.toMatchObject({ code: "id_invalid" });
    await expect(h.scheduler.cancelTimer(REPO, "r1", "")).rejects.toMatchObject({ code: "id_invalid" });
    await expect(h.scheduler.cancelTimer("a/b", "r1", "t")).rejects.toMatchObject({ code: "repo_id_invalid" });
  });
});
