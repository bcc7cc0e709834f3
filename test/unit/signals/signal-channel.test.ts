import { afterEach, describe, expect, it } from "vitest";
import { createRunEventFeed } from "../../../seams/signals/run-event-feed.js";
import { createWorkflowHostSignalChannel } from "../../../seams/signals/signal-channel.js";
import { allowAll, createRepoStore } from "../../../src/substrate/index.js";
import type { RepoStore } from "../../../src/substrate/types.js";
import { serializeEvent } from "../../../src/workflow/events.js";
import { reduceRunState } from "../../../src/workflow/run-state.js";
import { workflowRunKind } from "../../../src/workflow/workflow-run-kind.js";
import { createSignalHarness, ofType, REPO, watched, type SignalHarness } from "./harness.js";

let h: SignalHarness | undefined;

afterEach(async () => {
  await h?.close();
  h = undefined;
});

const AT = "2026-03-01T08:00:00.000Z";
const received = (signalId: string, signalName: string, payload: unknown = null): Record<string, unknown> => ({
  type: "SignalReceived",
  signalName,
  signalId,
  payload,
  at: AT,
});

describe("awaitNext", () => {
  it("resolves at once with a signal already in the log, and again after a restart while unconsumed (H1)", async () => {
    h = await createSignalHarness();
    await h.append("r1", received("s-1", "approve", { ok: true }));
    const first = await h.node.channel("r1").awaitNext("approve");
    expect(first).toEqual({ signalId: "s-1", signalName: "approve", payload: { ok: true }, seq: 1, at: AT });

    await h.restart();
    const again = await h.node.channel("r1").awaitNext("approve");
    expect(again).toEqual(first);

    await h.node.channel("r1").consume("s-1");
    await h.restart();
    const afterConsume = watched(h.node.channel("r1").awaitNext("approve"));
    await h.node.channel("r1").deliver("marker", null, "m-1");
    await h.node.channel("r1").awaitNext("marker");
    expect(afterConsume.state()).toBe("pending");
  });

  it("hands out signals of one name in numeric seq order: seq 2 before seq 10 (H2)", async () => {
    h = await createSignalHarness();
    const other = (n: number): Record<string, unknown> => ({ type: "StepStarted", step: n });
    await h.append("r1", other(1), received("s-a", "approve", "first"), other(3), other(4), other(5), other(6), other(7), other(8), other(9), received("s-b", "approve", "second"));
    const channel = h.node.channel("r1");
    const a = await channel.awaitNext("approve");
    const b = await channel.awaitNext("approve");
    expect([a.seq, a.signalId, b.seq, b.signalId]).toEqual([2, "s-a", 10, "s-b"]);
  });

  it("serves awaiters of one name first-in, first-out, one signal each", async () => {
    h = await createSignalHarness();
    const channel = h.node.channel("r1");
    const waits = [channel.awaitNext("go"), channel.awaitNext("go"), channel.awaitNext("go")];
    const other = watched(channel.awaitNext("stop"));
    for (const id of ["g-1", "g-2", "g-3"]) await channel.deliver("go", id, id);
    expect((await Promise.all(waits)).map((s) => s.signalId)).toEqual(["g-1", "g-2", "g-3"]);
    expect(other.state()).toBe("pending");
    await channel.deliver("stop", null, "x-1");
    expect((await other.promise).signalId).toBe("x-1");
  });

  it("does not lose a signal delivered between the first read and the wait (live delivery)", async () => {
    h = await createSignalHarness();
    const channel = h.node.channel("r1");
    const waiting = channel.awaitNext("approve");
    const delivered = await h.node.channel("r1").deliver("approve", { n: 1 }, "s-live");
    expect(delivered).toEqual({ signalId: "s-live", seq: 1, duplicate: false });
    expect(await waiting).toMatchObject({ signalId: "s-live", payload: { n: 1 }, seq: 1 });
  });

  it("sees a signal committed by another process once the store notices the ref moved", async () => {
    h = await createSignalHarness();
    const channel = h.node.channel("r1");
    const waiting = channel.awaitNext("approve");
    const other = createWorkflowHostSignalChannel({ repoStore: h.otherStore(), principal: null, repoId: REPO, runId: "r1", clock: h.clock.clock });
    await other.deliver("approve", "from-afar", "s-far");
    h.node.store.poke();
    expect(await waiting).toMatchObject({ signalId: "s-far", payload: "from-afar" });
    await other.stop();
  });

  it("rejects with aborted and removes the awaiter, so the next awaiter gets the signal", async () => {
    h = await createSignalHarness();
    const channel = h.node.channel("r1");
    const controller = new AbortController();
    const first = channel.awaitNext("go", controller.signal);
    const second = channel.awaitNext("go");
    controller.abort();
    await expect(first).rejects.toMatchObject({ code: "aborted" });
    await channel.deliver("go", 1, "g-1");
    expect((await second).signalId).toBe("g-1");
    const already = new AbortController();
    already.abort();
    await expect(channel.awaitNext("go", already.signal)).rejects.toMatchObject({ code: "aborted" });
  });

  it("skips signals the runtime's readState reports as consumed", async () => {
    h = await createSignalHarness();
    await h.append("r1", received("s-1", "go"), received("s-2", "go"));
    const events = await h.log("r1");
    const state = reduceRunState("r1", [...events, { seq: 3, type: "SignalConsumed", data: { signalId: "s-1" } }]);
    const channel = h.node.channel("r1", { readState: () => state });
    expect((await channel.awaitNext("go")).signalId).toBe("s-2");
  });

  it("gives a released signal to the oldest waiter, and refuses to claim what it handed out", async () => {
    h = await createSignalHarness();
    await h.append("r1", received("s-1", "go"));
    const channel = h.node.channel("r1");
    const got = await channel.awaitNext("go");
    expect(channel.claim(got.signalId)).toBe(false);
    const next = channel.awaitNext("go");
    channel.release(got.signalId);
    expect((await next).signalId).toBe("s-1");
    expect(channel.claim("not-seen-yet")).toBe(true);
    await channel.deliver("go", null, "not-seen-yet");
    const later = watched(channel.awaitNext("go"));
    await channel.deliver("go", null, "s-3");
    expect((await later.promise).signalId).toBe("s-3");
  });

  it("serves a run that does not exist yet once its first event arrives", async () => {
    h = await createSignalHarness();
    const wait = h.node.channel("new-run").awaitNext("go");
    await h.node.channel("new-run").deliver("go", 1, "s-1");
    expect((await wait).seq).toBe(1);
  });

  it("rejects id_invalid for a bad name without touching the store", async () => {
    h = await createSignalHarness();
    await expect(h.node.channel("r1").awaitNext("../x")).rejects.toMatchObject({ code: "id_invalid" });
  });
});

describe("deliver", () => {
  it("commits one SignalReceived per signalId; a retry reports duplicate and commits nothing (H3)", async () => {
    h = await createSignalHarness();
    const channel = h.node.channel("r1");
    expect(await channel.deliver("approve", { ok: true }, "s-1")).toEqual({ signalId: "s-1", seq: 1, duplicate: false });
    const first = watched(channel.awaitNext("approve"));
    const second = watched(channel.awaitNext("approve"));
    const tip = await h.tip();
    expect(await channel.deliver("approve", { ok: true }, "s-1")).toEqual({ signalId: "s-1", seq: 1, duplicate: true });
    expect(await h.tip()).toBe(tip);
    expect((await first.promise).signalId).toBe("s-1");
    await channel.deliver("marker", null, "m-1");
    await channel.awaitNext("marker");
    expect(second.state()).toBe("pending");
    expect(ofType(await h.log("r1"), "SignalReceived").filter((e) => (e as { signalId?: string }).signalId === "s-1")).toHaveLength(1);
  });

  it("treats a consumed signalId as a duplicate too", async () => {
    h = await createSignalHarness();
    const channel = h.node.channel("r1");
    await channel.deliver("go", 1, "s-1");
    await channel.consume("s-1");
    const tip = await h.tip();
    expect(await channel.deliver("go", 2, "s-1")).toEqual({ signalId: "s-1", seq: 1, duplicate: true });
    expect(await h.tip()).toBe(tip);
  });

  it("makes a signalId with newId when none is given", async () => {
    h = await createSignalHarness();
    let n = 0;
    const channel = createWorkflowHostSignalChannel({ repoStore: h.node.store, principal: null, repoId: REPO, runId: "r1", clock: h.clock.clock, newId: () => `auto-${++n}` });
    expect(await channel.deliver("go", null)).toEqual({ signalId: "auto-1", seq: 1, duplicate: false });
    await channel.stop();
  });

  it("refuses a 5 MiB payload before writing and keeps the signalId free; accepts one byte under the limit intact (I5)", async () => {
    h = await createSignalHarness();
    const channel = h.node.channel("r1");
    const tip = await h.tip();
    await expect(channel.deliver("big", "x".repeat(5 * 1024 * 1024), "s-big")).rejects.toMatchObject({ code: "payload_too_large" });
    expect(await h.tip()).toBe(tip);
    expect(await h.log("r1")).toEqual([]);

    const limit = 1_048_576;
    const at = h.clock.clock().toISOString();
    const frame = JSON.stringify({ type: "SignalReceived", signalName: "big", signalId: "s-big", payload: "", at, seq: 1 });
    const payload = "é".repeat(10) + "y".repeat(limit - 1 - Buffer.byteLength(frame) - 20);
    const result = await channel.deliver("big", payload, "s-big");
    expect(result).toEqual({ signalId: "s-big", seq: 1, duplicate: false });
    const reads = await h.node.store.openCommittedReads(null, { kind: "workflow-run", id: REPO }, "refs/heads/main");
    expect((await reads.readBlob("runs/r1/events/1.json"))?.length).toBe(limit - 1);
    expect((await channel.awaitNext("big")).payload).toBe(payload);
  });

  it("refuses bad names, ids and non-JSON payloads before writing", async () => {
    h = await createSignalHarness();
    const channel = h.node.channel("r1");
    const tip = await h.tip();
    await expect(channel.deliver("a/b", 1, "s-1")).rejects.toMatchObject({ code: "id_invalid" });
    await expect(channel.deliver("go", 1, "..")).rejects.toMatchObject({ code: "id_invalid" });
    await expect(channel.deliver("go", { n: Number.NaN }, "s-1")).rejects.toMatchObject({ code: "event_invalid" });
    expect(await h.tip()).toBe(tip);
    expect(() => createWorkflowHostSignalChannel({ repoStore: h!.node.store, principal: null, repoId: REPO, runId: "../x", clock: h!.clock.clock })).toThrow(
      expect.objectContaining({ code: "id_invalid" }),
    );
  });
});

describe("consume", () => {
  it("appends SignalConsumed once and reports null for a repeat or an unknown id", async () => {
    h = await createSignalHarness();
    const channel = h.node.channel("r1");
    await channel.deliver("go", 1, "s-1");
    expect(await channel.consume("s-1", "step-1")).toEqual({ seq: 2 });
    expect(await channel.consume("s-1")).toEqual({ seq: null });
    expect(await channel.consume("nope")).toEqual({ seq: null });
    const consumed = ofType(await h.log("r1"), "SignalConsumed");
    expect(consumed).toHaveLength(1);
    expect(consumed[0]).toMatchObject({ seq: 2, data: { signalId: "s-1", stepId: "step-1" } });
  });
});

describe("stop", () => {
  it("rejects pending awaits with channel_stopped and refuses later calls", async () => {
    h = await createSignalHarness();
    const channel = h.node.channel("r1");
    // Observed before stop() runs: the rejections come while stop() is still awaiting.
    const waits = [channel.awaitNext("go"), channel.awaitNext("other")].map((wait) => expect(wait).rejects.toMatchObject({ code: "channel_stopped" }));
    await channel.stop();
    await Promise.all(waits);
    await expect(channel.awaitNext("go")).rejects.toMatchObject({ code: "channel_stopped" });
    await expect(channel.deliver("go", 1)).rejects.toMatchObject({ code: "channel_stopped" });
    await channel.stop();
  });

  it("rejects awaiters with store_stopped when the store closes under them", async () => {
    h = await createSignalHarness();
    const channel = h.node.channel("r1");
    const wait = expect(channel.awaitNext("go")).rejects.toMatchObject({ code: "store_stopped" });
    await channel.deliver("warm-up", null, "w-1");
    await channel.awaitNext("warm-up");
    await h.node.store.close();
    await wait;
  });
});

describe("watching (G1, G2)", () => {
  it("applies an event observed twice once: a repeated notification hands the signal out once (G1)", async () => {
    h = await createSignalHarness();
    const store = h.node.store;
    const doubling: RepoStore = {
      ...store,
      subscribe(principal, repoId, ref, opts) {
        const inner = store.subscribe(principal, repoId, ref, opts);
        return (async function* () {
          for await (const commit of inner) {
            yield commit;
            yield commit;
          }
        })();
      },
    };
    const channel = createWorkflowHostSignalChannel({ repoStore: doubling, principal: null, repoId: REPO, runId: "r1", clock: h.clock.clock });
    const first = channel.awaitNext("approve");
    const second = watched(channel.awaitNext("approve"));
    await channel.deliver("approve", 1, "s-1");
    store.poke();
    store.poke();
    expect((await first).signalId).toBe("s-1");
    await channel.deliver("marker", null, "m-1");
    await channel.awaitNext("marker");
    expect(second.state()).toBe("pending");
    await channel.deliver("approve", 2, "s-2");
    expect((await second.promise).signalId).toBe("s-2");
    await channel.stop();
  });

  it("has all 1,000 events of 50 new runs within one poll interval while every 20th notification is dropped (G2)", async () => {
    const pollMs = 1_000;
    h = await createSignalHarness();
    const writer = h.otherStore();
    // The channels read through their own store: it learns of the writer's commits only from
    // the notifications below (the OS-watcher stand-in) and from its poll timer on the fake clock.
    const polling = createRepoStore({
      dataDir: "/data",
      fs: h.fs,
      kindHandlers: [workflowRunKind()],
      authorize: allowAll,
      clock: h.clock.clock,
      timers: h.clock.timers,
      watch: { pollMs, chokidar: false },
    });
    let notifications = 0;
    let dropped = 0;
    const notify = (): void => {
      notifications += 1;
      if (notifications % 20 === 0) {
        dropped += 1;
        return;
      }
      polling.poke();
    };
    const runs = Array.from({ length: 50 }, (_, i) => `g-${i}`);
    const feed = createRunEventFeed({ repoStore: polling, principal: null, repoId: REPO });
    const channels = runs.map((runId) => createWorkflowHostSignalChannel({ repoStore: polling, principal: null, repoId: REPO, runId, clock: h!.clock.clock, feed }));
    const waits = channels.map((channel) => Array.from({ length: 20 }, () => channel.awaitNext("go")));

    const startedMs = h.clock.now();
    // 40 commits of 25 event files: every run gets its 20 events over 20 rounds of two commits.
    for (let round = 0; round < 20; round += 1) {
      for (let half = 0; half < 2; half += 1) {
        const puts = new Map<string, Uint8Array>();
        for (const runId of runs.slice(half * 25, half * 25 + 25)) {
          const seq = round + 1;
          puts.set(`runs/${runId}/events/${seq}.json`, serializeEvent({ seq, ...received(`${runId}-s${seq}`, "go", seq) } as never));
        }
        await writer.writeTreeDelta(null, { kind: "workflow-run", id: REPO }, "refs/heads/main", { message: "batch", computeDelta: () => ({ puts }) });
        notify();
      }
    }
    // The burst takes no time at all on the injected clock: no poll ran while it was written.
    expect(h.clock.now() - startedMs).toBe(0);
    expect(dropped).toBe(2);
    expect(notifications % 20).toBe(0); // the last notification was one of the dropped ones

    await h.clock.advance(pollMs);
    const got = await Promise.all(waits.map((list) => Promise.all(list)));
    for (const [i, list] of got.entries()) {
      expect(list.map((s) => s.seq)).toEqual(Array.from({ length: 20 }, (_, k) => k + 1));
      expect(new Set(list.map((s) => s.signalId)).size).toBe(20);
      expect(list[0]?.signalId).toBe(`g-${i}-s1`);
    }
    await Promise.all(channels.map((c) => c.stop()));
    expect(feed.listeners()).toBe(0);
    await polling.close();
  });
});
