import { afterEach, describe, expect, it } from "vitest";
import type { RepoStore } from "../../../src/substrate/types.js";
import { nextTick } from "../../../src/workflow/cron.js";
import { createHarness, firedOf, ofType, REPO, type Harness } from "./harness.js";

let h: Harness | undefined;

afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe("recovery and live tail", () => {
  it("sees a TimerSet committed between the recovery walk and the start of the tail", async () => {
    h = await createHarness("2026-05-01T00:00:00.000Z");
    await h.append("r1", { type: "TimerSet", data: { timerId: "before", fireAt: "2026-05-01T00:00:05.000Z" } });
    const inner = h.store;
    const racing: RepoStore = Object.create(inner) as RepoStore;
    let injected = false;
    racing.openCommittedReads = async (...args) => {
      const reads = await inner.openCommittedReads(...args);
      if (!injected) {
        injected = true;
        await h!.append("r2", { type: "TimerSet", data: { timerId: "during", fireAt: "2026-05-01T00:00:05.000Z" } });
      }
      return reads;
    };
    await h.restart({ repoStore: racing });
    await h.clock.advance(10_000);
    await h.scheduler.idle();
    expect(firedOf(await h.log("r1"))).toHaveLength(1);
    expect(firedOf(await h.log("r2"))).toHaveLength(1);
  });

  it("reports a malformed event with path and seq and still arms the healthy run (G3)", async () => {
    h = await createHarness("2026-05-01T00:00:00.000Z");
    await h.append("run-b", { type: "SomethingHappened" }, { type: "SomethingHappened" }, { type: "SomethingHappened" });
    await h.rawWrite({ "runs/run-b/events/4.json": '{"type":"TimerSet",}' });
    await h.append("run-c", { type: "TimerSet", data: { timerId: "t", fireAt: "2026-05-01T00:00:05.000Z" } });
    await h.scheduler.start();
    const bad = h.events.filter((e) => e.type === "bad_event");
    expect(bad).toHaveLength(1);
    expect(bad[0]).toMatchObject({ runId: "run-b", seq: 4, path: "runs/run-b/events/4.json", error: { code: "event_invalid" } });
    expect(h.scheduler.stats().badEvents).toBe(1);
    expect(h.scheduler.queuedTimers().map((t) => `${t.runId}/${t.timerId}`)).toEqual(["run-c/t"]);
    await h.clock.advance(5_000);
    await h.scheduler.idle();
    expect(firedOf(await h.log("run-c"))).toHaveLength(1);
  });

  it("reports a bad event arriving on the live tail and keeps firing others", async () => {
    h = await createHarness("2026-05-01T00:00:00.000Z");
    await h.scheduler.start();
    await h.rawWrite({
      "runs/bad/events/1.json": JSON.stringify({ seq: 1, type: "TimerSet", data: { timerId: "t", fireAt: "2026-02-30T00:00:00Z" } }),
      "runs/good/events/1.json": JSON.stringify({ seq: 1, type: "TimerSet", data: { timerId: "t", fireAt: "2026-05-01T00:00:02.000Z" } }),
    });
    await h.clock.advance(3_000);
    await h.scheduler.idle();
    expect(h.events.filter((e) => e.type === "bad_event").map((e) => (e.type === "bad_event" ? [e.path, e.error.code] : []))).toEqual([
      ["runs/bad/events/1.json", "time_invalid"],
    ]);
    expect(firedOf(await h.log("good"))).toHaveLength(1);
    // A bad file still takes its seq: the next append goes after it.
    await h.append("bad", { type: "TimerSet", data: { timerId: "t", fireAt: "2026-05-01T00:00:04.000Z" } });
    await h.clock.advance(2_000);
    await h.scheduler.idle();
    expect(firedOf(await h.log("bad"))).toMatchObject([{ seq: 3 }]);
  });

  it("arms one timer and fires once per tick for a cron TimerSet re-applied at every boot, across a crash (C3)", async () => {
    h = await createHarness("2026-05-01T00:00:00.000Z");
    const boot = async (crashOnFirstCommit: boolean) => {
      const now = new Date(h!.clock.now()).toISOString();
      const fireAt = nextTick("*/10 * * * *", "UTC", now)!;
      // The runtime re-applies its series at boot: the same TimerSet when nothing fired yet.
      const log = await h!.log("r1");
      const pending = ofType(log, "TimerSet").at(-1) as { data: { fireAt: string } } | undefined;
      await h!.append("r1", { type: "TimerSet", data: { timerId: "c", fireAt: pending?.data.fireAt ?? fireAt, cron: "*/10 * * * *" } });
      if (!crashOnFirstCommit) return h!.restart();
      const crashing: RepoStore = Object.create(h!.store) as RepoStore;
      crashing.writeTreeDelta = async (p, repoId, ref, opts) => {
        // Decide the commit (as a process would before writing objects), then die before the ref moves.
        const reads = await h!.store.openCommittedReads(p, repoId, ref);
        await opts.computeDelta(await h!.store.resolveRef(p, repoId, ref), reads);
        throw new Error("process killed before the ref moved");
      };
      return h!.restart({ repoStore: crashing, retryInitialMs: 3_600_000 });
    };
    await boot(false);
    expect(h.scheduler.queuedTimers()).toHaveLength(1);
    await h.clock.advance(10 * 60_000);
    await h.scheduler.idle();
    await boot(true);
    expect(h.scheduler.queuedTimers()).toHaveLength(1);
    await h.clock.advance(10 * 60_000); // the tick at 00:20 is decided, then the crash
    await h.scheduler.idle();
    await boot(false);
    expect(h.scheduler.queuedTimers()).toHaveLength(1);
    await h.clock.advance(10 * 60_000);
    await h.scheduler.idle();
    const fired = firedOf(await h.log("r1")).map((f) => f.scheduledFor);
    expect(fired).toEqual(["2026-05-01T00:10:00.000Z", "2026-05-01T00:20:00.000Z", "2026-05-01T00:30:00.000Z"]);
  });

  it("reports a corrupt ref, arms nothing from it, and recovers once it is repaired (F2b)", async () => {
    h = await createHarness("2026-05-01T00:00:00.000Z", { discoverEveryMs: 1_000, retryInitialMs: 1_000 });
    await h.append("r1", { type: "TimerSet", data: { timerId: "t", fireAt: "2026-05-01T00:00:05.000Z" } });
    const good = await h.store.resolveRef(null, { kind: "workflow-run", id: REPO }, "refs/heads/main");
    expect(good).toMatch(/^[0-9a-f]{40}$/);
    const refPath = `/data/deployments/${REPO}.git/refs/heads/main`;
    await h.writeFile(refPath, "");
    await h.scheduler.start();
    const failed = h.events.filter((e) => e.type === "repo_failed");
    expect(failed[0]).toMatchObject({ repoId: REPO, error: { code: "ref_corrupt" } });
    expect(h.scheduler.queuedTimers()).toEqual([]);
    await h.writeFile(refPath, `${good}\n`);
    await h.clock.advance(6_000);
    await h.scheduler.idle();
    expect(firedOf(await h.log("r1"))).toHaveLength(1);
  });
});
