import { afterEach, describe, expect, it } from "vitest";
import { RELEASE_POLL_MS } from "../../../seams/dispatch/consumer-lane.js";
import { releaseParked } from "../../../seams/dispatch/consumer-state.js";
import type { Delivery } from "../../../seams/dispatch/dispatch-types.js";
import { WORKFLOW_RUN_KIND } from "../../../src/workflow/workflow-run-kind.js";
import { dispatchSetup, type DispatchSetup } from "./dispatch-harness.js";

let s: DispatchSetup;

afterEach(async () => {
  await s?.stopAll();
});

const T0 = Date.parse("2026-05-01T10:00:00.000Z");

describe("dispatch retries and dead letters (fake clock)", () => {
  it("calls a handler that fails twice then succeeds three times, with attempts 1, 2, 3 at the configured backoff", async () => {
    s = dispatchSetup();
    const host = s.make();
    const calls: { attempt: number; atMs: number; key: string }[] = [];
    host.dispatch({
      name: "billing",
      backoff: [100, 200],
      maxAttempts: 5,
      handler: (d: Delivery) => {
        calls.push({ attempt: d.attempt, atMs: s.clock.now(), key: d.idempotencyKey });
        if (calls.length <= 2) throw new Error(`boom ${calls.length}`);
      },
    });
    await host.start();
    await host.createDeployment("dep");
    await host.runtime("dep").setTimer("r1", { timerId: "t1", delayMs: 1_000 });
    await s.clock.advance(1_000);
    await s.reports.next((r) => r.type === "attempt_failed");
    expect(calls.map((c) => c.atMs - T0)).toEqual([1_000]);
    await s.clock.advance(99);
    expect(calls).toHaveLength(1);
    await s.clock.advance(1);
    await s.reports.next((r) => r.type === "attempt_failed", 2);
    expect(calls.map((c) => c.atMs - T0)).toEqual([1_000, 1_100]);
    await s.clock.advance(199);
    expect(calls).toHaveLength(2);
    await s.clock.advance(1);
    await s.reports.next((r) => r.type === "delivered");
    expect(calls.map((c) => c.attempt)).toEqual([1, 2, 3]);
    expect(calls.map((c) => c.atMs - T0)).toEqual([1_000, 1_100, 1_300]);
    expect(new Set(calls.map((c) => c.key))).toEqual(new Set(["dep/r1/t1/2026-05-01T10:00:01.000Z"]));
    const mainTip = await host.store.resolveRef(null, { kind: WORKFLOW_RUN_KIND, id: "dep" }, "main");
    await host.stop();
    const state = await s.state(host, "dep", "billing");
    expect(state.cursor).toBe(mainTip);
    expect(state.done.size).toBe(0);
    expect(state.failing.size).toBe(0);
    expect(state.parked.size).toBe(0);
  });

  it("parks an always-failing event after maxAttempts, keeps it parked across a restart, and delivers it again once released by dispatch retry", async () => {
    s = dispatchSetup();
    const first = s.make();
    const attempts: number[] = [];
    first.dispatch({ name: "billing", backoff: [10], maxAttempts: 3, handler: (d) => {
      attempts.push(d.attempt);
      throw new Error("always");
    } });
    await first.start();
    await first.createDeployment("dep");
    await first.runtime("dep").setTimer("r1", { timerId: "t1", delayMs: 50 });
    await s.clock.advance(50);
    await s.clock.advance(10);
    await s.clock.advance(10);
    const parked = await s.reports.next((r) => r.type === "parked");
    expect(parked).toMatchObject({ attempts: 3, idempotencyKey: "dep/r1/t1/2026-05-01T10:00:00.050Z" });
    expect(attempts).toEqual([1, 2, 3]);
    await first.stop();
    const stored = await s.state(first, "dep", "billing");
    expect([...stored.parked.values()]).toMatchObject([{ runId: "r1", seq: 2, attempts: 3, lastError: "Error: always", event: { type: "TimerFired" } }]);

    // A restart does not hand the parked event over again.
    const second = s.make();
    const delivered: Delivery[] = [];
    const handle = second.dispatch({ name: "billing", backoff: [10], maxAttempts: 3, handler: (d) => void delivered.push(d) });
    await second.start();
    await s.clock.advance(5_000);
    expect(delivered).toEqual([]);
    expect(handle.status()).toMatchObject([{ repoId: "dep", pending: 0, inFlight: 0 }]);

    // Released (what `workflow-host dispatch retry` does): delivered with fresh attempts.
    expect(await releaseParked(second.store, null, "dep", "billing", "all", "retry", s.clock.clock().toISOString())).toEqual(["r1/2"]);
    // The running host looks for released events every RELEASE_POLL_MS.
    await s.clock.advance(RELEASE_POLL_MS);
    await s.reports.next((r) => r.type === "delivered");
    expect(delivered.map((d) => [d.attempt, d.seq, d.idempotencyKey])).toEqual([[1, 2, "dep/r1/t1/2026-05-01T10:00:00.050Z"]]);
    await second.stop();
    const after = await s.state(second, "dep", "billing");
    expect(after.parked.size + after.retry.size + after.failing.size).toBe(0);
  });

  it("releases a parked event while the host is down: the next start delivers it", async () => {
    s = dispatchSetup();
    const first = s.make();
    first.dispatch({ name: "c1", backoff: [1], maxAttempts: 1, handler: () => Promise.reject(new Error("down")) });
    await first.start();
    await first.createDeployment("dep");
    await first.runtime("dep").deliverSignal("r1", "approve", { ok: true }, "s-1");
    await s.reports.next((r) => r.type === "parked");
    await first.stop();
    const second = s.make();
    const keys: string[] = [];
    second.dispatch({ name: "c1", handler: (d) => void keys.push(d.idempotencyKey) });
    expect(await releaseParked(second.store, null, "dep", "c1", ["r1/1"], "retry", "2026-05-01T10:00:00.000Z")).toEqual(["r1/1"]);
    await second.start();
    await s.reports.next((r) => r.type === "delivered");
    expect(keys).toEqual(["dep/r1/signal/s-1"]);
  });

  it("counts failed attempts on across a restart, so maxAttempts bounds the attempts of all lives together", async () => {
    s = dispatchSetup();
    const first = s.make();
    first.dispatch({ name: "c1", backoff: [1_000], maxAttempts: 3, handler: () => {
      throw new Error("first life");
    } });
    await first.start();
    await first.createDeployment("dep");
    await first.runtime("dep").setTimer("r1", { timerId: "t1", delayMs: 10 });
    await s.clock.advance(10);
    await s.reports.next((r) => r.type === "attempt_failed");
    await first.stop();
    expect([...(await s.state(first, "dep", "c1")).failing.values()]).toMatchObject([{ attempts: 1 }]);
    const second = s.make();
    const seen: number[] = [];
    second.dispatch({ name: "c1", backoff: [1], maxAttempts: 3, handler: (d) => {
      seen.push(d.attempt);
      throw new Error("second life");
    } });
    await second.start();
    await s.reports.next((r) => r.type === "attempt_failed", 2);
    await s.clock.advance(1);
    await s.reports.next((r) => r.type === "parked");
    expect(seen).toEqual([2, 3]);
  });

  it("skip removes a parked event for good; releasing one that is not parked is record_not_found", async () => {
    s = dispatchSetup();
    const host = s.make();
    host.dispatch({ name: "c1", maxAttempts: 1, handler: () => {
      throw new Error("no");
    } });
    await host.start();
    await host.createDeployment("dep");
    await host.runtime("dep").deliverSignal("r1", "approve", {}, "s-1");
    await s.reports.next((r) => r.type === "parked");
    expect(await releaseParked(host.store, null, "dep", "c1", ["r1/1"], "skip", "2026-05-01T10:00:00.000Z")).toEqual(["r1/1"]);
    const error = await releaseParked(host.store, null, "dep", "c1", ["r1/1"], "retry", "2026-05-01T10:00:00.000Z").catch((e: unknown) => e);
    expect((error as { code?: string }).code).toBe("record_not_found");
    const never = await releaseParked(host.store, null, "dep", "nobody", "all", "retry", "2026-05-01T10:00:00.000Z").catch((e: unknown) => e);
    expect((never as { code?: string }).code).toBe("record_not_found");
    expect((await s.state(host, "dep", "c1")).parked.size).toBe(0);
  });

  it("times out an attempt after timeoutMs (aborting its signal) and retries it", async () => {
    s = dispatchSetup();
    const host = s.make();
    const signals: AbortSignal[] = [];
    host.dispatch({ name: "slow", backoff: [5], timeoutMs: 1_000, handler: (d, signal) => {
      signals.push(signal);
      return d.attempt === 1 ? new Promise(() => {}) : undefined;
    } });
    await host.start();
    await host.createDeployment("dep");
    await host.runtime("dep").deliverSignal("r1", "go", {}, "s-1");
    await s.clock.advance(999);
    expect(signals).toHaveLength(1);
    expect(signals[0]?.aborted).toBe(false);
    await s.clock.advance(1);
    const failed = await s.reports.next((r) => r.type === "attempt_failed");
    expect((failed as { error: { code?: string } }).error.code).toBe("delivery_failed");
    expect(signals[0]?.aborted).toBe(true);
    await s.clock.advance(5);
    await s.reports.next((r) => r.type === "delivered");
    expect(signals).toHaveLength(2);
  });
});

describe("dispatch order and progress", () => {
  it("hands a run's events over in seq order while other runs go in parallel, and records events done ahead of the cursor", async () => {
    s = dispatchSetup();
    const host = s.make();
    const started: string[] = [];
    let releaseA: () => void = () => {};
    const gateA = new Promise<void>((resolve) => (releaseA = resolve));
    host.dispatch({ name: "c1", concurrency: 4, filter: { types: ["SignalReceived"] }, handler: async (d) => {
      started.push(`${d.runId}/${d.seq}`);
      if (d.runId === "a" && d.seq === 1) await gateA;
    } });
    await host.start();
    await host.createDeployment("dep");
    const rt = host.runtime("dep");
    await rt.deliverSignal("a", "x", 1, "a-1");
    await rt.deliverSignal("a", "x", 2, "a-2");
    await rt.deliverSignal("b", "x", 1, "b-1");
    await rt.deliverSignal("b", "x", 2, "b-2");
    await s.reports.next((r) => r.type === "delivered" && r.runId === "b" && r.seq === 2);
    expect(started).toEqual(["a/1", "b/1", "b/2"]);
    // Checkpoints are committed as they come; wait for the one recording b's events.
    await s.clock.advance(0);
    let state = await s.state(host, "dep", "c1");
    for (let i = 0; i < 1_000 && state.done.size < 2; i += 1) {
      await new Promise((resolve) => setImmediate(resolve));
      state = await s.state(host, "dep", "c1");
    }
    expect([...state.done].sort()).toEqual(["b/1", "b/2"]);
    releaseA();
    await s.reports.next((r) => r.type === "delivered" && r.runId === "a" && r.seq === 2);
    expect(started).toEqual(["a/1", "b/1", "b/2", "a/2"]);
    const mainTip = await host.store.resolveRef(null, { kind: WORKFLOW_RUN_KIND, id: "dep" }, "main");
    await host.stop();
    const end = await s.state(host, "dep", "c1");
    expect(end.done.size).toBe(0);
    expect(end.cursor).toBe(mainTip);
  });

  it("delivers TimerFired, SignalReceived and RunCompleted with their idempotency keys, filtered by run and type", async () => {
    s = dispatchSetup();
    const host = s.make();
    const all: string[] = [];
    const onlyB: string[] = [];
    host.dispatch({ name: "all", handler: (d) => void all.push(`${d.event.type} ${d.idempotencyKey} ${d.attempt}`) });
    host.dispatch({ name: "fires-of-b", filter: { runIds: ["b"], types: ["TimerFired"] }, handler: (d) => void onlyB.push(d.idempotencyKey) });
    await host.start();
    await host.createDeployment("dep");
    const rt = host.runtime("dep");
    await rt.setTimer("a", { timerId: "t", delayMs: 10 });
    await rt.setTimer("b", { timerId: "t", delayMs: 10 });
    await s.clock.advance(10);
    await rt.deliverSignal("a", "go", {}, "sig-1");
    await host.store.writeTree(null, { kind: WORKFLOW_RUN_KIND, id: "dep" }, "main", { files: { "runs/a/events/4.json": JSON.stringify({ seq: 4, type: "RunCompleted", at: "2026-05-01T10:00:01.000Z" }) }, message: "done" });
    await s.reports.next((r) => r.type === "delivered" && r.consumer === "all", 4);
    await s.reports.next((r) => r.type === "delivered" && r.consumer === "fires-of-b");
    expect(all.sort()).toEqual([
      "RunCompleted dep/a/RunCompleted 1",
      "SignalReceived dep/a/signal/sig-1 1",
      "TimerFired dep/a/t/2026-05-01T10:00:00.010Z 1",
      "TimerFired dep/b/t/2026-05-01T10:00:00.010Z 1",
    ]);
    expect(onlyB).toEqual(["dep/b/t/2026-05-01T10:00:00.010Z"]);
  });

  it("starts a consumer registered with startFrom head after what the log already holds", async () => {
    s = dispatchSetup();
    const host = s.make();
    await host.start();
    await host.createDeployment("dep");
    await host.runtime("dep").deliverSignal("r1", "old", {}, "old-1");
    const keys: string[] = [];
    host.dispatch({ name: "late", startFrom: "head", handler: (d) => void keys.push(d.idempotencyKey) });
    await host.dispatcher.refresh();
    await host.runtime("dep").deliverSignal("r1", "new", {}, "new-1");
    await s.reports.next((r) => r.type === "delivered");
    expect(keys).toEqual(["dep/r1/signal/new-1"]);
  });

  it("refuses bad consumer options with id_invalid, config_invalid and consumer_exists before anything runs", () => {
    s = dispatchSetup();
    const host = s.make();
    const code = (f: () => unknown): unknown => {
      try {
        f();
      } catch (error) {
        return (error as { code?: unknown }).code;
      }
      return "no error";
    };
    const handler = (): void => {};
    expect(code(() => host.dispatch({ name: "../x", handler }))).toBe("id_invalid");
    expect(code(() => host.dispatch({ name: "a.lock", handler }))).toBe("id_invalid");
    expect(code(() => host.dispatch({ name: "a" }))).toBe("config_invalid");
    expect(code(() => host.dispatch({ name: "a", handler, http: { url: "http://127.0.0.1:1/", secret: "0123456789abcdef" } }))).toBe("config_invalid");
    expect(code(() => host.dispatch({ name: "a", http: { url: "ftp://x/", secret: "0123456789abcdef" } }))).toBe("config_invalid");
    expect(code(() => host.dispatch({ name: "a", http: { url: "http://127.0.0.1:1/", secret: "short" } }))).toBe("config_invalid");
    expect(code(() => host.dispatch({ name: "a", handler, concurrency: 0 }))).toBe("config_invalid");
    expect(code(() => host.dispatch({ name: "a", handler, backoff: [] }))).toBe("config_invalid");
    expect(code(() => host.dispatch({ name: "a", handler, backoff: [-1] }))).toBe("config_invalid");
    expect(code(() => host.dispatch({ name: "a", handler, filter: { types: ["TimerSet" as "TimerFired"] } }))).toBe("config_invalid");
    expect(code(() => host.dispatch({ name: "a", handler, filter: { runIds: ["a/b"] } }))).toBe("id_invalid");
    expect(code(() => host.dispatch({ name: "a", handler }))).toBe("no error");
    expect(code(() => host.dispatch({ name: "a", handler }))).toBe("consumer_exists");
  });
});
