/**
 * `cancelled` reports: the scheduler reports every cancellation of an armed timer that reaches
 * the log, whoever wrote it (its own cancelTimer, the CLI or another process through the
 * tail, a push), once each.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { SchedulerEvent } from "../../../seams/scheduler/scheduler-types.js";
import { createHarness, type Harness } from "./harness.js";

let h: Harness | undefined;

afterEach(async () => {
  await h?.close();
  h = undefined;
});

const START = "2026-05-01T10:00:00.000Z";
const cancelledOf = (events: readonly SchedulerEvent[]) => events.filter((e) => e.type === "cancelled");

describe("cancelled reports", () => {
  it("reports a TimerCancelled written by another writer, with its commit, once", async () => {
    h = await createHarness(START);
    await h.append("order-17", { type: "TimerSet", data: { timerId: "due", fireAt: "2026-05-02T10:00:00Z" } });
    await h.scheduler.start();
    await h.append("order-17", { type: "TimerCancelled", at: START, data: { timerId: "due", reason: "paid" } });
    await h.clock.advance(0);
    await h.scheduler.idle();
    const reports = cancelledOf(h.events);
    expect(reports).toEqual([{ type: "cancelled", repoId: "dep", runId: "order-17", timerId: "due", commitSha: expect.stringMatching(/^[0-9a-f]{40}$/) }]);
    expect(h.scheduler.queuedTimers()).toEqual([]);
    expect(h.scheduler.stats().cancelled).toBe(1);
  });

  it("reports its own cancelTimer once, although the tail sees the same commit", async () => {
    h = await createHarness(START);
    await h.append("order-17", { type: "TimerSet", data: { timerId: "due", fireAt: "2026-05-02T10:00:00Z" } });
    await h.scheduler.start();
    const result = await h.scheduler.cancelTimer("dep", "order-17", "due", "paid");
    await h.clock.advance(0);
    await h.scheduler.idle();
    expect(result.outcome).toBe("cancelled");
    expect(cancelledOf(h.events).map((e) => (e as { commitSha: string | null }).commitSha)).toEqual([result.commitSha]);
    expect(h.scheduler.stats().cancelled).toBe(1);
  });

  it("does not report a TimerCancelled for a timer that was not armed", async () => {
    h = await createHarness(START);
    await h.append("order-17", { type: "TimerSet", data: { timerId: "due", fireAt: "2026-05-02T10:00:00Z" } });
    await h.scheduler.start();
    await h.append("order-17", { type: "TimerCancelled", data: { timerId: "never-set" } });
    await h.clock.advance(0);
    await h.scheduler.idle();
    expect(cancelledOf(h.events)).toEqual([]);
  });
});
