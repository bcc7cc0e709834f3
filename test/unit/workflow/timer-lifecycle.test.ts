import { describe, expect, it } from "vitest";
import { reduceRunState } from "../../../src/workflow/run-state.js";
import { foldTimerEvents } from "../../../src/workflow/timer-lifecycle.js";
import type { RunEvent } from "../../../src/workflow/types.js";

const T10 = "2026-05-01T10:00:00.000Z";
const T11 = "2026-05-01T11:00:00.000Z";
const T12 = "2026-05-01T12:00:00.000Z";

const set = (seq: number, fireAt: string, extra: Record<string, unknown> = {}): RunEvent =>
  ({ seq, type: "TimerSet", data: { timerId: "t1", fireAt, ...extra } }) as RunEvent;
const fired = (seq: number, scheduledFor?: string): RunEvent =>
  ({ seq, type: "TimerFired", data: scheduledFor === undefined ? { timerId: "t1" } : { timerId: "t1", scheduledFor, firedAt: scheduledFor } }) as RunEvent;
const skipped = (seq: number, firstMissed: string, lastMissed: string, count: number): RunEvent =>
  ({ seq, type: "TimerSkipped", data: { timerId: "t1", firstMissed, lastMissed, count, reason: "missed" } }) as RunEvent;
const cancelled = (seq: number): RunEvent => ({ seq, type: "TimerCancelled", data: { timerId: "t1" } }) as RunEvent;
const completed = (seq: number): RunEvent => ({ seq, type: "RunCompleted" }) as RunEvent;
const manual = (seq: number, scheduledFor: string): RunEvent =>
  ({ seq, type: "TimerFired", data: { timerId: "t1", scheduledFor, firedAt: scheduledFor, manual: true, requestId: "q1" } }) as RunEvent;
const ended = (seq: number): RunEvent => ({ seq, type: "ScheduleEnded", data: { timerId: "t1", reason: "maxTicks" } }) as RunEvent;
const paused = (seq: number): RunEvent => ({ seq, type: "SchedulePaused", at: T10, data: { timerId: "t1" } }) as RunEvent;

const hourly = { cron: "0 * * * *" };

const logs: Record<string, RunEvent[]> = {
  "a one-shot whose tick a TimerSkipped covers": [set(1, T11), skipped(2, T10, T12, 3)],
  "a one-shot a TimerSkipped misses": [set(1, T12), skipped(2, T10, T11, 2)],
  "a one-shot that fired": [set(1, T10), fired(2, T10)],
  "a stale fire of an earlier generation": [set(1, T10), set(2, T12), fired(3, T10)],
  "a cancelled one-shot": [set(1, T10), cancelled(2)],
  "a series past a skip": [set(1, T10, hourly), skipped(2, T10, T11, 2)],
  "a run that ended": [set(1, T10), completed(2)],
  "a set after a skip": [set(1, T10), skipped(2, T10, T10, 1), set(3, T12)],
  "a series fired by hand": [set(1, T12, hourly), manual(2, T11)],
  "a series that reached its bound": [set(1, T11, hourly), ended(2)],
  "a paused series": [set(1, T11, hourly), paused(2)],
};

describe("the timer lifecycle", () => {
  it.each(Object.entries(logs))("reads %s the same in the reducer and the one-timer fold", (_name, events) => {
    const armedByReducer = reduceRunState("r1", events).pendingTimers.has("t1");
    expect(foldTimerEvents(events, "t1").status === "armed").toBe(armedByReducer);
  });

  it("ends a one-shot whose tick a TimerSkipped covers, as the reducer does", () => {
    const events = logs["a one-shot whose tick a TimerSkipped covers"] ?? [];
    expect(reduceRunState("r1", events).pendingTimers.size).toBe(0);
    expect(foldTimerEvents(events, "t1")).toMatchObject({ status: "skipped", setSeq: 1, fired: null });
  });

  it("leaves a series armed at its tick after a manual fire, and ends it at ScheduleEnded, as the reducer does", () => {
    const byHand = logs["a series fired by hand"] ?? [];
    expect(reduceRunState("r1", byHand).pendingTimers.get("t1")?.fireAt).toBe(T12);
    expect(foldTimerEvents(byHand, "t1")).toMatchObject({ status: "armed", fired: null });
    const over = logs["a series that reached its bound"] ?? [];
    expect(reduceRunState("r1", over).pendingTimers.size).toBe(0);
    expect(foldTimerEvents(over, "t1").status).toBe("over");
  });
});
