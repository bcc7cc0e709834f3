import { afterEach, describe, expect, it } from "vitest";
import { createRunEventFeed, type RunEventListener } from "../../../seams/signals/run-event-feed.js";
import { createWorkflowHostSignalChannel } from "../../../seams/signals/signal-channel.js";
import { allowAll, createRepoStore } from "../../../src/substrate/index.js";
import type { RunEvent } from "../../../src/workflow/types.js";
import { workflowRunKind } from "../../../src/workflow/workflow-run-kind.js";
import { createSignalHarness, REPO, type SignalHarness } from "./harness.js";

let h: SignalHarness | undefined;

afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** A listener that records batches and lets a test wait for the n-th one. */
function recorder(): RunEventListener & { batches: RunEvent[][]; errors: unknown[]; next(count: number): Promise<void> } {
  const batches: RunEvent[][] = [];
  const errors: unknown[] = [];
  const waiters: { count: number; resolve: () => void }[] = [];
  const check = (): void => {
    for (const w of [...waiters]) {
      if (batches.length + errors.length >= w.count) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
    }
  };
  return {
    batches,
    errors,
    events(events) {
      batches.push([...events]);
      check();
    },
    failed(error) {
      errors.push(error);
      check();
    },
    next(count) {
      return new Promise((resolve) => {
        waiters.push({ count, resolve });
        check();
      });
    },
  };
}

const signal = (signalId: string): Record<string, unknown> => ({ type: "SignalReceived", signalName: "go", signalId, payload: null, at: "2026-03-01T09:00:00.000Z" });

describe("run event feed", () => {
  it("hands each listener its run's events once per commit, whole, after the commit it attached at", async () => {
    h = await createSignalHarness();
    await h.append("r1", signal("before"));
    const feed = createRunEventFeed({ repoStore: h.node.store, principal: null, repoId: REPO });
    const a = recorder();
    const b = recorder();
    const c = recorder();
    const tip = await h.tip();
    const attachedA = await feed.attach("r1", a);
    const attachedB = await feed.attach("r1", b);
    await feed.attach("r2", c);
    expect(attachedA.from).toBe(tip);
    expect(attachedB.from).toBe(tip);
    await h.append("r1", signal("one"), signal("two"));
    await h.append("r2", signal("three"));
    await Promise.all([a.next(1), b.next(1), c.next(1)]);
    expect(a.batches.map((batch) => batch.map((e) => e.seq))).toEqual([[2, 3]]);
    expect(b.batches).toEqual(a.batches);
    expect(c.batches.map((batch) => batch.map((e) => (e as { signalId?: string }).signalId))).toEqual([["three"]]);
    expect(feed.listeners()).toBe(3);
    await feed.close();
    expect(a.errors).toEqual([expect.objectContaining({ code: "store_stopped" })]);
    await expect(feed.attach("r1", recorder())).rejects.toMatchObject({ code: "store_stopped" });
  });

  it("releases the store's watcher and poll timer when the last listener detaches", async () => {
    h = await createSignalHarness();
    const store = createRepoStore({ dataDir: "/data", fs: h.fs, kindHandlers: [workflowRunKind()], authorize: allowAll, clock: h.clock.clock, timers: h.clock.timers, watch: { pollMs: 500, chokidar: false } });
    const feed = createRunEventFeed({ repoStore: store, principal: null, repoId: REPO });
    const before = h.clock.pending();
    const listener = recorder();
    const attached = await feed.attach("r1", listener);
    await h.append("r1", signal("one"));
    store.poke();
    await listener.next(1);
    expect(h.clock.pending()).toBe(before + 1);
    await attached.detach();
    expect(h.clock.pending()).toBe(before);
    expect(feed.listeners()).toBe(0);
    await attached.detach();
    // Attaching again starts a new subscription from the tip.
    const again = recorder();
    const second = await feed.attach("r1", again);
    expect(second.from).toBe(await h.tip());
    await second.detach();
    await store.close();
  });

  it("tells listeners store_stopped when the store closes under it", async () => {
    h = await createSignalHarness();
    const store = createRepoStore({ dataDir: "/data", fs: h.fs, kindHandlers: [workflowRunKind()], authorize: allowAll, clock: h.clock.clock, watch: false });
    const feed = createRunEventFeed({ repoStore: store, principal: null, repoId: REPO });
    const listener = recorder();
    await feed.attach("r1", listener);
    await store.close();
    await listener.next(1);
    expect(listener.errors).toEqual([expect.objectContaining({ code: "store_stopped" })]);
    expect(feed.listeners()).toBe(0);
  });

  it("rejects a channel's pending awaitNext when the subscription fails (a torn ref), with nothing left unhandled", async () => {
    h = await createSignalHarness();
    const store = createRepoStore({ dataDir: "/data", fs: h.fs, kindHandlers: [workflowRunKind()], authorize: allowAll, clock: h.clock.clock, watch: false });
    const channel = createWorkflowHostSignalChannel({ repoStore: store, principal: null, repoId: REPO, runId: "r1", clock: h.clock.clock });
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown): void => {
      unhandled.push(reason);
    };
    process.on("unhandledRejection", onUnhandled);
    try {
      const waiting = channel.awaitNext("go");
      const outcome = waiting.then(
        () => "resolved",
        (error: unknown) => error,
      );
      await h.append("r1", { type: "TimerSet", data: { timerId: "t", fireAt: "2026-03-02T00:00:00.000Z" } });
      store.poke();
      // The subscription reads a torn ref: the feed fails, every listener is told.
      h.fs.writeFileSync("/data/deployments/dep.git/refs/heads/main", "0123");
      store.poke();
      expect(await outcome).toMatchObject({ code: "ref_corrupt" });
      // Give stray rejections a few turns to surface.
      for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
      expect(unhandled).toEqual([]);
    } finally {
      process.off("unhandledRejection", onUnhandled);
      await channel.stop();
      await store.close();
    }
  });
});
