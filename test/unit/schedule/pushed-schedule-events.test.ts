import { describe, expect, it } from "vitest";
import { readRunLogFromFiles, type RunLog } from "../../../src/workflow/run-log.js";

// Logs as a plain `git push` can write them: the schedule controls never append these events,
// so reading the log reports each one (event_invalid, at its path), skips it, and keeps the rest.

function log(...events: Record<string, unknown>[]): RunLog {
  const files = new Map(events.map((e, i) => [`${i + 1}.json`, Buffer.from(JSON.stringify({ seq: i + 1, ...e }))]));
  return readRunLogFromFiles("r", files);
}

const ARMED = "2026-05-01T12:00:00.000Z";
const series = (timerId = "s") => ({ type: "TimerSet", data: { timerId, fireAt: ARMED, cron: "0 * * * *" } });
const oneShot = { type: "TimerSet", data: { timerId: "other", fireAt: "2026-05-01T13:30:00.000Z" } };
const manual = (requestId: string, timerId = "s") => ({ type: "TimerFired", data: { timerId, scheduledFor: "2026-05-01T11:30:00.000Z", firedAt: "2026-05-01T11:30:00.000Z", manual: true, requestId } });
const backfill = (scheduledFor: string, firedAt = "2026-05-01T11:30:00.000Z") => ({ type: "TimerFired", data: { timerId: "s", scheduledFor, firedAt, backfill: true } });

function problemSeqs(l: RunLog): (number | null)[] {
  for (const p of l.problems) expect(p.error.code).toBe("event_invalid");
  return l.problems.map((p) => p.seq);
}

describe("schedule events pushed with git are checked against the log", () => {
  it("reports a second manual fire with a requestId already used in that series, once", () => {
    const l = log(series(), oneShot, manual("r1"), manual("r2"), manual("r1"));
    expect(problemSeqs(l)).toEqual([5]);
    expect(l.problems[0]?.path).toBe("runs/r/events/5.json");
    expect(l.events.map((e) => e.seq)).toEqual([1, 2, 3, 4]);
    expect([...l.state.pendingTimers.keys()].sort()).toEqual(["other", "s"]);
  });

  it("accepts the same requestId on another series", () => {
    const l = log(series("a"), series("b"), manual("r1", "a"), manual("r1", "b"));
    expect(l.problems).toEqual([]);
  });

  it("reports a ScheduleResumed on a series never paused, and keeps the series armed", () => {
    const l = log(series(), oneShot, { type: "ScheduleResumed", data: { timerId: "s" } });
    expect(problemSeqs(l)).toEqual([3]);
    expect(l.state.pendingTimers.get("s")?.fireAt).toBe(ARMED);
    expect(l.state.pendingTimers.has("other")).toBe(true);
  });

  it("accepts a pause then a resume", () => {
    const l = log(series(), { type: "SchedulePaused", data: { timerId: "s" } }, { type: "ScheduleResumed", data: { timerId: "s" } });
    expect(l.problems).toEqual([]);
    expect(l.state.pendingTimers.get("s")?.pausedAt).toBeUndefined();
  });

  it("reports a backfill of a slot after its fire time, at or after the armed slot, or off the series", () => {
    const l = log(
      series(),
      backfill("2026-05-01T11:00:00.000Z"), // fine: a past slot
      backfill("2026-05-01T11:00:00.000Z", "2026-05-01T10:00:00.000Z"), // in the future when written
      backfill(ARMED, "2026-05-01T12:30:00.000Z"), // the armed slot itself
      backfill("2026-05-01T10:17:00.000Z"), // not a slot of "0 * * * *"
      oneShot,
    );
    expect(problemSeqs(l)).toEqual([3, 4, 5]);
    expect(l.state.pendingTimers.get("s")?.fireAt).toBe(ARMED);
    expect(l.state.pendingTimers.has("other")).toBe(true);
  });

  it("reports a SchedulePaused of a timer that does not exist or is a one-shot, and skips it", () => {
    const l = log(series(), oneShot, { type: "SchedulePaused", data: { timerId: "nope" } }, { type: "SchedulePaused", data: { timerId: "other" } }, { type: "SchedulePaused", data: { timerId: "s" } });
    expect(problemSeqs(l)).toEqual([3, 4]);
    expect(l.state.pendingTimers.get("s")?.pausedAt).toBeDefined();
    expect(l.state.pendingTimers.get("other")?.fireAt).toBe("2026-05-01T13:30:00.000Z");
  });
});
