/**
 * `seriesMarks`: what a list of series shows of each one's story in one pass over a run's log:
 * the reason of the pause in force and the last fire, per timer.
 */
import { describe, expect, it } from "vitest";
import { seriesHistory, seriesMarks } from "../../../src/workflow/schedule/series-history.js";
import type { RunEvent } from "../../../src/workflow/types.js";

const ev = (seq: number, type: string, data: Record<string, unknown>): RunEvent => ({ seq, type, at: "2026-05-01T10:00:00.000Z", data }) as unknown as RunEvent;

describe("seriesMarks", () => {
  it("keeps the reason of the pause in force and each timer's last fire, as the series' history would", () => {
    const events = [
      ev(1, "TimerSet", { timerId: "a", fireAt: "2026-05-01T11:00:00.000Z", cron: "0 * * * *" }),
      ev(2, "TimerSet", { timerId: "b", fireAt: "2026-05-01T11:00:00.000Z", cron: "0 * * * *" }),
      ev(3, "TimerFired", { timerId: "a", scheduledFor: "2026-05-01T11:00:00.000Z", firedAt: "2026-05-01T11:00:00.250Z" }),
      ev(4, "SchedulePaused", { timerId: "a", reason: "first" }),
      ev(5, "ScheduleResumed", { timerId: "a" }),
      ev(6, "TimerFired", { timerId: "a", manual: true, requestId: "deploy-1", firedAt: "2026-05-01T11:30:00.000Z" }),
      ev(7, "SchedulePaused", { timerId: "a", reason: "<b>migration</b>" }),
      ev(8, "SchedulePaused", { timerId: "b" }),
    ];
    const marks = seriesMarks(events);
    expect(marks.get("a")).toEqual({ pauseReason: "<b>migration</b>", lastFire: seriesHistory(events, "a").fires.at(-1) });
    expect(marks.get("a")?.lastFire).toMatchObject({ seq: 6, kind: "manual", requestId: "deploy-1" });
    expect(marks.get("b")).toEqual({ pauseReason: null, lastFire: null });
    expect(marks.has("c")).toBe(false);
    // Resumed: no reason in force.
    expect(seriesMarks([...events, ev(9, "ScheduleResumed", { timerId: "a" })]).get("a")?.pauseReason).toBeNull();
  });
});
