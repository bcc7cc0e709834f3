/**
 * The checker the crash, concurrency and soak suites judge a log with must itself be able to
 * fail: each broken log here is one it has to catch, and a healthy one it has to pass.
 */
import { describe, expect, it } from "vitest";
import { readRunLogFromFiles, type RunLog } from "../../../src/workflow/run-log.js";
import { checkTimerLog } from "../../integration/reliability/timer-invariants.js";

const END_MS = Date.parse("2026-05-01T12:00:00.000Z");

function run(runId: string, ...events: Record<string, unknown>[]): [string, RunLog] {
  const files = new Map(events.map((e, i) => [`${i + 1}.json`, Buffer.from(JSON.stringify({ seq: i + 1, ...e }))]));
  return [runId, readRunLogFromFiles(runId, files)];
}

const set = (timerId: string, fireAt: string, extra: Record<string, unknown> = {}) => ({ type: "TimerSet", data: { timerId, fireAt, ...extra } });
const fired = (timerId: string, scheduledFor: string, firedAt = scheduledFor) => ({ type: "TimerFired", data: { timerId, scheduledFor, firedAt } });

function violationsOf(...runs: [string, RunLog][]): string[] {
  return checkTimerLog({ runs: new Map(runs), endMs: END_MS, dueGraceMs: 2_000, cronGraceMs: 1_000 }).violations;
}

describe("the timer log checker", () => {
  it("passes a log where every generation fired once, on time, and a cancelled one never", () => {
    expect(
      violationsOf(
        run("r1", set("a", "2026-05-01T10:00:00.000Z"), fired("a", "2026-05-01T10:00:00.000Z", "2026-05-01T10:00:00.020Z"), set("b", "2026-05-01T11:00:00.000Z"), { type: "TimerCancelled", data: { timerId: "b" } }),
        run(
          "c",
          set("t", "2026-05-01T10:00:00.000Z", { cron: "* * * * *" }),
          fired("t", "2026-05-01T10:00:00.000Z"),
          set("t", "2026-05-01T10:01:00.000Z", { cron: "* * * * *" }),
          { type: "TimerSkipped", data: { timerId: "t", firstMissed: "2026-05-01T10:01:00.000Z", lastMissed: "2026-05-01T11:59:00.000Z", count: 119, reason: "missed" } },
          set("t", "2026-05-01T12:00:00.000Z", { cron: "* * * * *" }),
        ),
      ),
    ).toEqual([]);
  });

  it("catches a doubled fire, a fire after a cancel, an early fire and a lost timer", () => {
    const found = violationsOf(
      run("double", set("a", "2026-05-01T10:00:00.000Z"), fired("a", "2026-05-01T10:00:00.000Z"), fired("a", "2026-05-01T10:00:00.000Z")),
      run("cancelled", set("a", "2026-05-01T10:00:00.000Z"), { type: "TimerCancelled", data: { timerId: "a" } }, fired("a", "2026-05-01T10:00:00.000Z")),
      run("early", set("a", "2026-05-01T10:00:00.000Z"), fired("a", "2026-05-01T10:00:00.000Z", "2026-05-01T09:59:59.999Z")),
      run("lost", set("a", "2026-05-01T10:00:00.000Z")),
      run("stale", set("a", "2026-05-01T10:00:00.000Z"), set("a", "2026-05-01T10:30:00.000Z"), fired("a", "2026-05-01T10:00:00.000Z"), fired("a", "2026-05-01T10:30:00.000Z")),
    );
    expect(found.map((v) => v.split(":")[0])).toEqual([
      // A fire of a timer that is not armed is a problem the log reader names (and skips).
      "runs/double/events/3.json",
      "runs/cancelled/events/3.json",
      "runs/early/events/2.json (TimerFired)",
      "run lost",
      "runs/stale/events/3.json (TimerFired)",
    ]);
  });

  it("catches a cron tick fired twice, a tick lost between handlings, a late fire under skip and a wrong skip count", () => {
    const cron = { cron: "* * * * *" };
    const found = violationsOf(
      run("twice", set("t", "2026-05-01T11:58:00.000Z", cron), fired("t", "2026-05-01T11:58:00.000Z"), fired("t", "2026-05-01T11:58:00.000Z")),
      run("gap", set("t", "2026-05-01T11:57:00.000Z", cron), fired("t", "2026-05-01T11:57:00.000Z"), fired("t", "2026-05-01T11:59:00.000Z")),
      run("late", set("t", "2026-05-01T11:59:00.000Z", cron), fired("t", "2026-05-01T11:59:00.000Z", "2026-05-01T11:59:05.000Z")),
      run("count", set("t", "2026-05-01T11:50:00.000Z", cron), { type: "TimerSkipped", data: { timerId: "t", firstMissed: "2026-05-01T11:50:00.000Z", lastMissed: "2026-05-01T11:59:00.000Z", count: 3, reason: "missed" } }),
    );
    expect(found.filter((v) => v.includes("series t")).length).toBeGreaterThanOrEqual(3);
    expect(found.some((v) => v.startsWith("runs/twice/events/3.json"))).toBe(true);
    expect(found.some((v) => v.startsWith("runs/gap/events/3.json"))).toBe(true);
    expect(found.some((v) => v.startsWith("runs/late/events/2.json"))).toBe(true);
    expect(found.some((v) => v.startsWith("runs/count/events/2.json") && v.includes("count 3"))).toBe(true);
  });

  it("passes a cron fire committed late behind a backlog when it records a take-up within the grace, and catches a take-up that was late, out of order or made by no host", () => {
    const cron = { cron: "* * * * *" };
    const due = "2026-05-01T11:59:00.000Z";
    const firedLate = (takenUpAt: string) => ({ type: "TimerFired", data: { timerId: "t", scheduledFor: due, firedAt: "2026-05-01T11:59:05.000Z", takenUpAt } });
    const next = set("t", "2026-05-01T12:00:00.000Z", cron);
    expect(violationsOf(run("ok", set("t", due, cron), firedLate("2026-05-01T11:59:00.400Z"), next))).toEqual([]);
    const found = violationsOf(
      run("late", set("t", due, cron), firedLate("2026-05-01T11:59:02.000Z"), next),
      run("after", set("t", due, cron), firedLate("2026-05-01T11:59:06.000Z"), next),
      run("before", set("t", due, cron), firedLate("2026-05-01T11:58:59.000Z"), next),
    );
    expect(found.map((v) => v.split(":")[0])).toEqual(["runs/late/events/2.json (TimerFired)", "runs/after/events/2.json (TimerFired)", "runs/before/events/2.json (TimerFired)"]);
    const hostUp: [number, number][] = [[Date.parse("2026-05-01T11:00:00.000Z"), Date.parse("2026-05-01T11:58:30.000Z")]];
    const outside = checkTimerLog({ runs: new Map([run("nohost", set("t", due, cron), firedLate("2026-05-01T11:59:00.400Z"), next)]), endMs: END_MS, dueGraceMs: 2_000, cronGraceMs: 1_000, hostUp }).violations;
    expect(outside.map((v) => v.split(":")[0])).toEqual(["runs/nohost/events/2.json (TimerFired)"]);
  });

  it("catches a seq gap and an unreadable event", () => {
    const files = new Map([
      ["1.json", Buffer.from(JSON.stringify({ seq: 1, type: "StepDone" }))],
      ["3.json", Buffer.from("{not json")],
      ["5.json", Buffer.from(JSON.stringify({ seq: 5, type: "StepDone" }))],
    ]);
    const found = violationsOf(["r", readRunLogFromFiles("r", files)]);
    expect(found.some((v) => v.includes("seq 1 is followed by 3"))).toBe(true);
    expect(found.some((v) => v.startsWith("runs/r/events/3.json: unreadable"))).toBe(true);
  });
});
