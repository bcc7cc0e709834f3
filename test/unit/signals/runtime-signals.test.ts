import { afterEach, describe, expect, it } from "vitest";
import { appendRunEvents } from "../../../src/workflow/run-log-append.js";
import type { RunEvent } from "../../../src/workflow/types.js";
import { createSignalHarness, ofType, REPO, watched, type SignalHarness } from "./harness.js";

let h: SignalHarness | undefined;

afterEach(async () => {
  await h?.close();
  h = undefined;
});

const START = "2026-03-01T09:00:00.000Z";
const MINUTE = 60_000;

function timerEvents(log: readonly RunEvent[], timerId: string): string[] {
  return log.filter((e) => (e as { data?: { timerId?: string } }).data?.timerId === timerId).map((e) => e.type);
}

function consumedIds(log: readonly RunEvent[]): string[] {
  return ofType(log, "SignalConsumed").map((e) => (e as { data: { signalId: string } }).data.signalId);
}

describe("waitForSignal without a timeout", () => {
  it("returns the next signal and records it consumed, so no later wait gets it again", async () => {
    h = await createSignalHarness(START);
    const rt = h.node.runtime;
    const waiting = rt.waitForSignal("r1", "approve", { stepId: "review" });
    await rt.deliverSignal("r1", "approve", { ok: true }, "s-1");
    expect(await waiting).toMatchObject({ signalId: "s-1", payload: { ok: true }, seq: 1 });
    const log = await h.log("r1");
    expect(ofType(log, "SignalConsumed")).toEqual([expect.objectContaining({ seq: 2, data: { signalId: "s-1", stepId: "review" } })]);

    await h.restart();
    const next = watched(h.node.runtime.waitForSignal("r1", "approve"));
    await h.node.runtime.deliverSignal("r1", "approve", 2, "s-2");
    expect((await next.promise) as { signalId: string }).toMatchObject({ signalId: "s-2" });
  });

  it("rejects channel_stopped when the channel stops, aborted on abort, id_invalid and time_invalid up front", async () => {
    h = await createSignalHarness(START);
    const rt = h.node.runtime;
    const controller = new AbortController();
    const aborted = rt.waitForSignal("r1", "approve", { signal: controller.signal });
    controller.abort();
    await expect(aborted).rejects.toMatchObject({ code: "aborted" });
    // Each expectation is attached before the stop that rejects it, which may take several turns.
    const pending = expect(rt.waitForSignal("r1", "approve")).rejects.toMatchObject({ code: "channel_stopped" });
    await h.node.channel("r1").stop();
    await pending;
    await expect(rt.waitForSignal("r1", "a/b")).rejects.toMatchObject({ code: "id_invalid" });
    await expect(rt.waitForSignal("r1", "go", { timeoutMs: -5 })).rejects.toMatchObject({ code: "time_invalid" });
    await expect(rt.waitForSignal("r1", "go", { timerId: ".x" })).rejects.toMatchObject({ code: "id_invalid" });
  });
});

describe("waitForSignal with a timeout", () => {
  it("signal first: returns it, and one commit consumes it and cancels the timer", async () => {
    h = await createSignalHarness(START);
    const rt = h.node.runtime;
    const waiting = rt.waitForSignal("r1", "approve", { timeoutMs: MINUTE });
    await h.node.armed("r1", "wait:approve:1");
    await rt.deliverSignal("r1", "approve", { ok: true }, "s-1");
    expect(await waiting).toMatchObject({ signalId: "s-1", payload: { ok: true } });
    const log = await h.log("r1");
    expect(log.map((e) => e.type)).toEqual(["TimerSet", "SignalReceived", "TimerCancelled", "SignalConsumed"]);
    expect(h.node.scheduler.queuedTimers()).toEqual([]);
    await h.clock.advance(2 * MINUTE);
    expect(timerEvents(await h.log("r1"), "wait:approve:1")).toEqual(["TimerSet", "TimerCancelled"]);
  });

  it("timeout first: returns timedOut, and a later signal stays unconsumed for the next wait", async () => {
    h = await createSignalHarness(START);
    const rt = h.node.runtime;
    const waiting = rt.waitForSignal("r1", "approve", { timeoutMs: MINUTE });
    await h.node.armed("r1", "wait:approve:1");
    await h.clock.advance(MINUTE);
    expect(await waiting).toEqual({ timedOut: true, timerId: "wait:approve:1" });
    await rt.deliverSignal("r1", "approve", { late: true }, "s-late");
    expect(consumedIds(await h.log("r1"))).toEqual([]);
    // The next wait finds it in the log and settles in its first commit: no timer is armed.
    expect(await rt.waitForSignal("r1", "approve", { timeoutMs: MINUTE })).toMatchObject({ signalId: "s-late" });
    const log = await h.log("r1");
    expect(consumedIds(log)).toEqual(["s-late"]);
    expect(ofType(log, "TimerSet")).toHaveLength(1);
  });

  it("timeout first survives a restart before the signal arrives", async () => {
    h = await createSignalHarness(START);
    const waiting = h.node.runtime.waitForSignal("r1", "approve", { timeoutMs: MINUTE });
    await h.node.armed("r1", "wait:approve:1");
    await h.clock.advance(MINUTE);
    expect(await waiting).toMatchObject({ timedOut: true });
    await h.restart();
    await h.node.runtime.deliverSignal("r1", "approve", 1, "s-1");
    const next = h.node.runtime.waitForSignal("r1", "approve", { timeoutMs: MINUTE });
    expect(await next).toMatchObject({ signalId: "s-1" });
    // A new wait after a fired timer never reuses its id.
    const third = h.node.runtime.waitForSignal("r1", "approve", { timeoutMs: MINUTE });
    await h.node.armed("r1", "wait:approve:2");
    await h.clock.advance(MINUTE);
    expect(await third).toEqual({ timedOut: true, timerId: "wait:approve:2" });
  });

  it("signal first survives a restart before the deadline: the cancelled timer never fires", async () => {
    h = await createSignalHarness(START);
    const waiting = h.node.runtime.waitForSignal("r1", "approve", { timeoutMs: MINUTE });
    await h.node.armed("r1", "wait:approve:1");
    await h.node.runtime.deliverSignal("r1", "approve", 1, "s-1");
    expect(await waiting).toMatchObject({ signalId: "s-1" });
    await h.restart();
    await h.clock.advance(2 * MINUTE);
    await h.node.scheduler.idle();
    expect(timerEvents(await h.log("r1"), "wait:approve:1")).toEqual(["TimerSet", "TimerCancelled"]);
    expect(h.node.scheduler.stats().fired).toBe(0);
  });

  it("a wait re-issued after a restart resumes the deadline its predecessor armed", async () => {
    h = await createSignalHarness(START);
    const interrupted = expect(h.node.runtime.waitForSignal("r1", "approve", { timeoutMs: MINUTE })).rejects.toMatchObject({ code: "host_stopped" });
    await h.node.armed("r1", "wait:approve:1");
    await h.clock.advance(20_000);
    await h.restart();
    await interrupted;
    const resumed = h.node.runtime.waitForSignal("r1", "approve", { timeoutMs: 10 * MINUTE });
    await h.node.armed("r1", "wait:approve:1");
    await h.clock.advance(40_000);
    expect(await resumed).toEqual({ timedOut: true, timerId: "wait:approve:1" });
    expect(ofType(await h.log("r1"), "TimerSet")).toHaveLength(1);
  });

  it("decides by log order when the fire and the signal arrive together: the lower seq wins", async () => {
    h = await createSignalHarness(START);
    const rt = h.node.runtime;
    const other = h.otherStore();
    const append = (...bodies: Record<string, unknown>[]) =>
      appendRunEvents({ store: other, principal: null, repoId: REPO, runId: "r1", message: "elsewhere", decide: () => ({ append: bodies, result: undefined }) });
    const at = "2026-03-01T09:00:30.000Z";
    const fired = (timerId: string, scheduledFor: string) => ({ type: "TimerFired", at, data: { timerId, scheduledFor, firedAt: at } });
    const signal = (signalId: string) => ({ type: "SignalReceived", signalName: "approve", signalId, payload: signalId, at });

    // Fire (lower seq) and signal committed together: the timeout wins, the signal stays.
    const first = rt.waitForSignal("r1", "approve", { timeoutMs: MINUTE });
    await h.node.armed("r1", "wait:approve:1");
    const [set1] = ofType(await h.log("r1"), "TimerSet");
    await append(fired("wait:approve:1", (set1 as { data: { fireAt: string } }).data.fireAt), signal("s-after"));
    h.node.store.poke();
    expect(await first).toEqual({ timedOut: true, timerId: "wait:approve:1" });
    expect(consumedIds(await h.log("r1"))).toEqual([]);

    // Signal (lower seq) and fire committed together: the signal wins; the fired timer needs no cancel.
    const second = rt.waitForSignal("r1", "other", { timeoutMs: MINUTE });
    await h.node.armed("r1", "wait:other:1");
    const set2 = ofType(await h.log("r1"), "TimerSet").find((e) => (e as { data: { timerId: string } }).data.timerId === "wait:other:1");
    await append({ ...signal("s-before"), signalName: "other" }, fired("wait:other:1", (set2 as { data: { fireAt: string } }).data.fireAt));
    h.node.store.poke();
    expect(await second).toMatchObject({ signalId: "s-before" });
    const log = await h.log("r1");
    expect(consumedIds(log)).toEqual(["s-before"]);
    expect(timerEvents(log, "wait:other:1")).toEqual(["TimerSet", "TimerFired"]);

    // The signal left behind by the first race goes to the next wait.
    expect(await rt.waitForSignal("r1", "approve")).toMatchObject({ signalId: "s-after" });
  });

  it("with a timerId that already fired, decides from the log at once", async () => {
    h = await createSignalHarness(START);
    const at = "2026-03-01T08:00:00.000Z";
    await h.append(
      "r1",
      { type: "TimerSet", at, data: { timerId: "deadline", fireAt: at } },
      { type: "SignalReceived", signalName: "approve", signalId: "s-early", payload: 1, at },
      { type: "TimerFired", at, data: { timerId: "deadline", scheduledFor: at, firedAt: at } },
      { type: "SignalReceived", signalName: "approve", signalId: "s-late", payload: 2, at },
    );
    const rt = h.node.runtime;
    expect(await rt.waitForSignal("r1", "approve", { timerId: "deadline" })).toMatchObject({ signalId: "s-early" });
    expect(await rt.waitForSignal("r1", "approve", { timerId: "deadline" })).toEqual({ timedOut: true, timerId: "deadline" });
    await expect(rt.waitForSignal("r1", "approve", { timerId: "never-set" })).rejects.toMatchObject({ code: "timer_not_found" });
    expect(consumedIds(await h.log("r1"))).toEqual(["s-early"]);
  });

  it("gives concurrent waits of one name their own timers and one signal each", async () => {
    h = await createSignalHarness(START);
    const rt = h.node.runtime;
    const a = rt.waitForSignal("r1", "go", { timeoutMs: MINUTE });
    const b = watched(rt.waitForSignal("r1", "go", { timeoutMs: 2 * MINUTE }));
    await h.node.armed("r1", "wait:go:1");
    await h.node.armed("r1", "wait:go:2");
    await rt.deliverSignal("r1", "go", 1, "g-1");
    expect(await a).toMatchObject({ signalId: "g-1" });
    await h.clock.advance(MINUTE);
    expect(b.state()).toBe("pending");
    await h.clock.advance(MINUTE);
    expect(await b.promise).toEqual({ timedOut: true, timerId: "wait:go:2" });
  });

  it("an aborted wait gives its signal back and cancels its timer durably", async () => {
    h = await createSignalHarness(START);
    const rt = h.node.runtime;
    const controller = new AbortController();
    const waiting = rt.waitForSignal("r1", "approve", { timeoutMs: MINUTE, signal: controller.signal });
    await h.node.armed("r1", "wait:approve:1");
    controller.abort();
    await expect(waiting).rejects.toMatchObject({ code: "aborted" });
    expect(timerEvents(await h.log("r1"), "wait:approve:1")).toEqual(["TimerSet", "TimerCancelled"]);
    await rt.deliverSignal("r1", "approve", 1, "s-1");
    expect(await rt.waitForSignal("r1", "approve", { timeoutMs: MINUTE })).toMatchObject({ signalId: "s-1" });
  });

  it("stop rejects pending waits with host_stopped and keeps their timers armed", async () => {
    h = await createSignalHarness(START);
    const rt = h.node.runtime;
    const waiting = expect(rt.waitForSignal("r1", "approve", { timeoutMs: MINUTE })).rejects.toMatchObject({ code: "host_stopped" });
    await h.node.armed("r1", "wait:approve:1");
    await rt.stop();
    await waiting;
    expect(timerEvents(await h.log("r1"), "wait:approve:1")).toEqual(["TimerSet"]);
    await expect(rt.deliverSignal("r1", "approve", 1)).rejects.toMatchObject({ code: "host_stopped" });
  });
});
