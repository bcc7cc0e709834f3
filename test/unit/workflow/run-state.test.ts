import { describe, expect, it } from "vitest";
import { applyEvent, createRunStateFold, emptyRunState, reduceRunState, reduceRunStateWithProblems } from "../../../src/workflow/run-state.js";
import type { RunEvent } from "../../../src/workflow/types.js";
import { seededRandom } from "../../helpers/seeded-random.js";

const set = (seq: number, timerId: string, fireAt: string, extra: Record<string, unknown> = {}): RunEvent =>
  ({ seq, type: "TimerSet", data: { timerId, fireAt, ...extra } }) as RunEvent;
const fired = (seq: number, timerId: string, scheduledFor?: string): RunEvent =>
  ({ seq, type: "TimerFired", data: scheduledFor === undefined ? { timerId } : { timerId, scheduledFor, firedAt: scheduledFor } }) as RunEvent;
const cancelled = (seq: number, timerId: string): RunEvent => ({ seq, type: "TimerCancelled", data: { timerId } }) as RunEvent;
const skipped = (seq: number, timerId: string, firstMissed: string, lastMissed: string, count: number): RunEvent =>
  ({ seq, type: "TimerSkipped", data: { timerId, firstMissed, lastMissed, count, reason: "missed" } }) as RunEvent;
const received = (seq: number, signalId: string, signalName = "approve", payload: unknown = { ok: true }): RunEvent =>
  ({ seq, type: "SignalReceived", signalName, signalId, payload, at: "2026-05-01T10:00:00.000Z" }) as RunEvent;
const consumed = (seq: number, signalId: string): RunEvent => ({ seq, type: "SignalConsumed", data: { signalId } }) as RunEvent;

const T10 = "2026-05-01T10:00:00.000Z";
const T12 = "2026-05-01T12:00:00.000Z";

describe("emptyRunState", () => {
  it("has no events, timers or signals", () => {
    const state = emptyRunState("r1");
    expect(state).toEqual({ runId: "r1", lastSeq: -1, terminal: null, pendingTimers: new Map(), observedSignalIds: new Set(), unconsumedSignals: [] });
    expect(reduceRunState("r1", [])).toEqual(state);
  });
});

describe("one-shot timers", () => {
  it("arms on TimerSet with its seq as the generation", () => {
    const state = reduceRunState("r1", [set(1, "t1", T10, { stepId: "s1" })]);
    expect(state.pendingTimers.get("t1")).toEqual({ timerId: "t1", fireAt: T10, setSeq: 1, stepId: "s1" });
    expect(state.lastSeq).toBe(1);
  });

  it("re-arms on a later TimerSet (a reschedule)", () => {
    const state = reduceRunState("r1", [set(1, "t1", T10), set(2, "t1", T12)]);
    expect(state.pendingTimers.get("t1")).toMatchObject({ fireAt: T12, setSeq: 2 });
  });

  it("disarms on a TimerFired of the armed generation", () => {
    expect(reduceRunState("r1", [set(1, "t1", T10), fired(2, "t1", T10)]).pendingTimers.size).toBe(0);
  });

  it("disarms on the original system's TimerFired, which names no tick", () => {
    expect(reduceRunState("r1", [set(0, "t1", T10), fired(1, "t1")]).pendingTimers.size).toBe(0);
  });

  it("keeps a rescheduled generation armed when a stale fire of the earlier one follows", () => {
    const state = reduceRunState("r1", [set(1, "t1", T10), set(2, "t1", T12), fired(3, "t1", T10)]);
    expect(state.pendingTimers.get("t1")).toMatchObject({ fireAt: T12, setSeq: 2 });
  });

  it("re-arms after a fire when set again", () => {
    const state = reduceRunState("r1", [set(1, "t1", T10), fired(2, "t1", T10), set(3, "t1", T12)]);
    expect(state.pendingTimers.get("t1")).toMatchObject({ fireAt: T12, setSeq: 3 });
  });

  it("disarms on TimerCancelled", () => {
    expect(reduceRunState("r1", [set(1, "t1", T10), cancelled(2, "t1")]).pendingTimers.size).toBe(0);
  });

  it("ignores fires and cancels of timers that are not armed", () => {
    const state = reduceRunState("r1", [fired(1, "nope", T10), cancelled(2, "nope"), set(3, "t1", T10)]);
    expect([...state.pendingTimers.keys()]).toEqual(["t1"]);
  });
});

describe("cron series", () => {
  const c5 = (seq: number, fireAt: string): RunEvent => set(seq, "c5", fireAt, { cron: "*/5 * * * *" });

  // Case C1's log: no follow-on TimerSet after the fire.
  it("stays armed at the next tick after a fire with no follow-on TimerSet", () => {
    const state = reduceRunState("r1", [c5(1, T10), fired(2, "c5", T10)]);
    expect(state.pendingTimers.get("c5")).toEqual({
      timerId: "c5",
      fireAt: "2026-05-01T10:05:00.000Z",
      setSeq: 1,
      cron: "*/5 * * * *",
      timezone: "UTC",
    });
  });

  it("advances from the armed tick when the original system's fire names none", () => {
    const state = reduceRunState("r1", [c5(0, T10), fired(1, "c5"), fired(2, "c5")]);
    expect(state.pendingTimers.get("c5")?.fireAt).toBe("2026-05-01T10:10:00.000Z");
  });

  it("takes the follow-on TimerSet committed with the fire", () => {
    const state = reduceRunState("r1", [c5(1, T10), fired(2, "c5", T10), c5(3, "2026-05-01T10:05:00.000Z")]);
    expect(state.pendingTimers.get("c5")).toMatchObject({ fireAt: "2026-05-01T10:05:00.000Z", setSeq: 3 });
  });

  it("advances past a fire of a later tick (misfire latest) and ignores a fire of an earlier one", () => {
    expect(reduceRunState("r1", [c5(1, T10), fired(2, "c5", "2026-05-01T11:00:00.000Z")]).pendingTimers.get("c5")?.fireAt).toBe(
      "2026-05-01T11:05:00.000Z",
    );
    expect(reduceRunState("r1", [c5(1, T10), fired(2, "c5", "2026-05-01T09:55:00.000Z")]).pendingTimers.get("c5")?.fireAt).toBe(T10);
  });

  it("advances past the last missed tick on TimerSkipped", () => {
    const state = reduceRunState("r1", [
      c5(1, T10),
      fired(2, "c5", T10),
      skipped(3, "c5", "2026-05-01T10:05:00.000Z", "2026-05-01T11:00:00.000Z", 12),
    ]);
    expect(state.pendingTimers.get("c5")?.fireAt).toBe("2026-05-01T11:05:00.000Z");
  });

  it("ends only on TimerCancelled or a terminal event", () => {
    expect(reduceRunState("r1", [c5(1, T10), fired(2, "c5", T10), cancelled(3, "c5")]).pendingTimers.size).toBe(0);
    expect(reduceRunState("r1", [c5(1, T10), { seq: 2, type: "RunCompleted" }]).pendingTimers.size).toBe(0);
  });

  it("keeps the series zone and misfire policy", () => {
    const state = reduceRunState("r1", [
      set(1, "ny", "2026-03-08T07:00:00.000Z", { cron: "30 2 * * *", timezone: "America/New_York", misfire: "latest" }),
      fired(2, "ny", "2026-03-08T07:00:00.000Z"),
    ]);
    expect(state.pendingTimers.get("ny")).toMatchObject({ fireAt: "2026-03-09T06:30:00.000Z", timezone: "America/New_York", misfire: "latest" });
  });

  it("disarms a series whose expression cannot be computed rather than throwing", () => {
    const state = reduceRunState("r1", [set(1, "bad", T10, { cron: "0 0 30 2 *" }), fired(2, "bad", T10)]);
    expect(state.pendingTimers.size).toBe(0);
  });

  it("disarms a skipped one-shot only when the skip covers its fireAt", () => {
    expect(reduceRunState("r1", [set(1, "t1", T10), skipped(2, "t1", T10, T10, 1)]).pendingTimers.size).toBe(0);
    expect(reduceRunState("r1", [set(1, "t1", T12), skipped(2, "t1", T10, T10, 1)]).pendingTimers.size).toBe(1);
  });
});

describe("terminal events", () => {
  it.each(["RunCompleted", "RunFailed", "RunCancelled"])("%s disarms every timer and ends the run", (type) => {
    const state = reduceRunState("r1", [set(1, "t1", T10), set(2, "t2", T12), { seq: 3, type }]);
    expect(state.terminal).toBe(type);
    expect(state.pendingTimers.size).toBe(0);
  });

  it("ignores everything after the terminal event except lastSeq", () => {
    const state = reduceRunState("r1", [{ seq: 1, type: "RunCompleted" }, set(2, "t1", T10), received(3, "s-1")]);
    expect(state.pendingTimers.size).toBe(0);
    expect(state.observedSignalIds.size).toBe(0);
    expect(state.lastSeq).toBe(3);
  });
});

describe("signals", () => {
  it("tracks every signal id and the unconsumed ones in seq order", () => {
    const state = reduceRunState("r1", [received(2, "s-2"), received(10, "s-10", "approve", 10), received(5, "s-5", "other"), consumed(11, "s-5")]);
    expect([...state.observedSignalIds].sort()).toEqual(["s-10", "s-2", "s-5"]);
    expect(state.unconsumedSignals.map((s) => [s.signalId, s.seq])).toEqual([
      ["s-2", 2],
      ["s-10", 10],
    ]);
    expect(state.unconsumedSignals[1]).toEqual({ signalId: "s-10", signalName: "approve", payload: 10, seq: 10, at: "2026-05-01T10:00:00.000Z" });
  });

  it("treats a second SignalReceived of the same id as a duplicate delivery", () => {
    const state = reduceRunState("r1", [received(1, "s-1", "a", 1), consumed(2, "s-1"), received(3, "s-1", "a", 2)]);
    expect(state.unconsumedSignals).toEqual([]);
    expect(state.observedSignalIds.has("s-1")).toBe(true);
  });

  it("does not consume a signal with a SignalConsumed that came before it", () => {
    const state = reduceRunState("r1", [consumed(1, "s-1"), received(2, "s-1")]);
    expect(state.unconsumedSignals.map((s) => s.signalId)).toEqual(["s-1"]);
  });
});

describe("ordering and tailing", () => {
  it("sorts by numeric seq, not by file name", () => {
    const state = reduceRunState("r1", [fired(10, "t1", T10), set(2, "t1", T10)]);
    expect(state.pendingTimers.size).toBe(0);
    expect(state.lastSeq).toBe(10);
  });

  it("passes unknown event types through, moving only lastSeq", () => {
    const before = reduceRunState("r1", [set(1, "t1", T10)]);
    const after = applyEvent(before, { seq: 2, type: "StepStarted", stepId: "x" });
    expect(after.lastSeq).toBe(2);
    expect(after.pendingTimers).toBe(before.pendingTimers);
    expect(after.observedSignalIds).toBe(before.observedSignalIds);
    expect(after.unconsumedSignals).toBe(before.unconsumedSignals);
  });

  it("never modifies the state it is given", () => {
    const before = reduceRunState("r1", [set(1, "t1", T10), received(2, "s-1")]);
    const snapshot = { ...before, pendingTimers: new Map(before.pendingTimers), observedSignalIds: new Set(before.observedSignalIds), unconsumedSignals: [...before.unconsumedSignals] };
    applyEvent(before, fired(3, "t1", T10));
    applyEvent(before, consumed(3, "s-1"));
    applyEvent(before, received(3, "s-2"));
    applyEvent(before, { seq: 3, type: "RunFailed" });
    expect(before).toEqual(snapshot);
  });

  it("keeps one fold's deferred cron tick and manual requestIds out of every other run's state", () => {
    const other = reduceRunState("r2", [set(1, "c", T10), set(2, "m", T12)]);
    // A fold left holding a deferred tick of series "c" and a manual fire's requestId of "m".
    const fold = createRunStateFold("r1");
    fold.apply(set(1, "c", T10, { cron: "*/5 * * * *" }));
    fold.apply(fired(2, "c", T10));
    fold.apply(set(3, "m", T10, { cron: "0 * * * *" }));
    fold.apply({ seq: 4, type: "TimerFired", data: { timerId: "m", manual: true, requestId: "q1", firedAt: T10 } } as RunEvent);
    // Another run's one-shots of the same ids are left as they are by an unrelated event.
    const after = applyEvent(other, { seq: 3, type: "StepStarted", stepId: "x" });
    expect(after.pendingTimers).toBe(other.pendingTimers);
    expect([...after.pendingTimers.values()]).toEqual([
      { timerId: "c", fireAt: T10, setSeq: 1 },
      { timerId: "m", fireAt: T12, setSeq: 2 },
    ]);
    // And a fresh fold sees no earlier requestId: its manual fire is no repeat.
    const problems = reduceRunStateWithProblems("r3", [set(1, "m", T10, { cron: "0 * * * *" }), { seq: 2, type: "TimerFired", data: { timerId: "m", manual: true, requestId: "q1", firedAt: T10 } } as RunEvent]).problems;
    expect(problems).toEqual([]);
    expect(fold.finish().pendingTimers.get("c")).toMatchObject({ fireAt: "2026-05-01T10:05:00.000Z" });
  });

  it("ignores an event it has already applied (a repeated notification)", () => {
    const state = reduceRunState("r1", [set(1, "t1", T10), fired(2, "t1", T10)]);
    expect(applyEvent(state, set(1, "t1", T10))).toBe(state);
    expect(applyEvent(state, fired(2, "t1", T10))).toBe(state);
  });

  it("applies a one-shot's fire (made without a draft) exactly as the whole fold does, and leaves every other fire to the draft", () => {
    const T10_OFFSET = "2026-05-01T12:00:00+02:00";
    const cases: [string, RunEvent[], RunEvent][] = [
      ["the run's only timer", [set(1, "t1", T10)], fired(2, "t1", T10)],
      ["one of two timers", [set(1, "t1", T10), set(2, "t2", T12)], fired(3, "t1", T10)],
      ["a later timer of two", [set(1, "t1", T10), set(2, "t2", T12)], fired(3, "t2", T12)],
      ["with signals kept", [set(1, "t1", T10), received(2, "s-1")], fired(3, "t1", T10)],
      ["the same instant written otherwise", [set(1, "t1", T10)], fired(2, "t1", T10_OFFSET)],
      ["an older generation's instant (stale)", [set(1, "t1", T12)], fired(2, "t1", T10)],
      ["no scheduledFor", [set(1, "t1", T10)], fired(2, "t1")],
      ["a timer not armed", [set(1, "t1", T10)], fired(2, "t2", T10)],
      ["a series", [set(1, "c", T10, { cron: "*/5 * * * *" })], fired(2, "c", T10)],
      ["a manual fire of a one-shot", [set(1, "t1", T10)], { seq: 2, type: "TimerFired", data: { timerId: "t1", manual: true, requestId: "q", scheduledFor: T10, firedAt: T10 } } as RunEvent],
      ["a backfill fire of a one-shot", [set(1, "t1", T10)], { seq: 2, type: "TimerFired", data: { timerId: "t1", backfill: true, scheduledFor: T10, firedAt: T10 } } as RunEvent],
      ["a run that ended", [set(1, "t1", T10), { seq: 2, type: "RunCompleted" } as RunEvent], fired(3, "t1", T10)],
    ];
    for (const [name, log, event] of cases) {
      const before = reduceRunState("r1", log);
      const snapshot = JSON.stringify([...before.pendingTimers]);
      const after = applyEvent(before, event);
      expect(after, name).toEqual(reduceRunState("r1", [...log, event]));
      expect(after.observedSignalIds, name).toBe(before.observedSignalIds);
      expect(after.unconsumedSignals, name).toBe(before.unconsumedSignals);
      expect(JSON.stringify([...before.pendingTimers]), name).toBe(snapshot);
    }
    // A state that ended yet lists a timer (as a summary may hold it): the fire changes nothing but lastSeq.
    const ended = { ...reduceRunState("r1", [set(1, "t1", T10)]), terminal: "RunCompleted" as const };
    expect(applyEvent(ended, fired(2, "t1", T10))).toEqual({ ...ended, lastSeq: 2 });
  });

  it("folds to the same state as reduceRunState for a cron log", () => {
    const events = [set(1, "c", T10, { cron: "*/5 * * * *" }), fired(2, "c", T10), received(3, "s"), fired(4, "c", "2026-05-01T10:05:00.000Z")];
    const folded = events.reduce(applyEvent, emptyRunState("r1"));
    expect(folded).toEqual(reduceRunState("r1", events));
    expect(folded.pendingTimers.get("c")?.fireAt).toBe("2026-05-01T10:10:00.000Z");
  });
});

describe("many runs folded side by side in one process", () => {
  it("each run's state depends on its own events only: tailing, folds continued from points and whole folds agree, and no input is changed", () => {
    const r = seededRandom(41);
    const pick = <T>(values: readonly T[]): T => values[Math.floor(r() * values.length)] as T;
    const times = [T10, "2026-05-01T10:05:00.000Z", "2026-05-01T10:10:00.000Z", T12];
    const event = (seq: number): RunEvent => {
      const timerId = pick(["c", "m", "t"]);
      const roll = r();
      const at = pick(times);
      if (roll < 0.25) return set(seq, timerId, at, r() < 0.5 ? { cron: pick(["*/5 * * * *", "0 * * * *"]) } : {});
      if (roll < 0.35) return { seq, type: "TimerFired", data: { timerId, manual: true, requestId: pick(["q1", "q2"]), firedAt: at } } as RunEvent;
      if (roll < 0.5) return fired(seq, timerId, at);
      if (roll < 0.56) return skipped(seq, timerId, T10, "2026-05-01T10:05:00.000Z", 2);
      if (roll < 0.66) return cancelled(seq, timerId);
      if (roll < 0.7) return { seq, type: "ScheduleEnded", data: { timerId } } as RunEvent;
      if (roll < 0.74) return { seq, type: pick(["SchedulePaused", "ScheduleResumed"]), data: { timerId } } as RunEvent;
      if (roll < 0.84) return received(seq, pick(["s1", "s2"]));
      if (roll < 0.9) return consumed(seq, pick(["s1", "s2"]));
      if (roll < 0.97) return { seq, type: "StepStarted", stepId: "x" } as RunEvent;
      return { seq, type: pick(["RunCompleted", "RunFailed", "RunCancelled"]) } as RunEvent;
    };
    const shape = (state: ReturnType<typeof emptyRunState>) => JSON.stringify({ ...state, pendingTimers: [...state.pendingTimers], observedSignalIds: [...state.observedSignalIds] });
    const runs = Array.from({ length: 30 }, (_, i) => {
      const runId = `r${i}`;
      return { runId, events: [] as RunEvent[], state: emptyRunState(runId), fold: createRunStateFold(runId), problems: [] as unknown[], seen: [] as [ReturnType<typeof emptyRunState>, string][] };
    });
    for (let step = 0; step < 6000; step++) {
      const run = pick(runs);
      const next = event(run.events.length + 1);
      run.events.push(next);
      run.seen.push([run.state, shape(run.state)]);
      run.state = applyEvent(run.state, next);
      const problem = run.fold.apply(next);
      if (problem !== null) run.problems.push(problem);
      if (r() < 0.1) {
        const point = run.fold.point();
        run.fold = createRunStateFold(run.runId, point);
        // Another fold from the same point, fed events of its own, changes nothing of this run.
        const other = createRunStateFold(run.runId, point);
        for (let k = 1; k <= 3; k++) other.apply(event(run.events.length + k));
        other.finish();
      }
      if (r() < 0.03) {
        const whole = reduceRunStateWithProblems(run.runId, run.events);
        expect(shape(run.state), `${run.runId} after ${run.events.length}`).toBe(shape(whole.state));
        expect(run.problems).toEqual(whole.problems);
      }
    }
    for (const run of runs) {
      const whole = reduceRunStateWithProblems(run.runId, run.events);
      expect(shape(run.state), run.runId).toBe(shape(whole.state));
      expect(shape(run.fold.finish()), run.runId).toBe(shape(whole.state));
      expect(run.problems, run.runId).toEqual(whole.problems);
      for (const [state, before] of run.seen) expect(shape(state), run.runId).toBe(before);
    }
    // After them all, a new run's first manual fires are no repeats, and it has no deferred tick.
    const fresh = createRunStateFold("new");
    fresh.apply(set(1, "m", T10, { cron: "0 * * * *" }));
    fresh.apply(set(2, "t", T12));
    for (const [seq, requestId] of [[3, "q1"], [4, "q2"]] as const) {
      expect(fresh.apply({ seq, type: "TimerFired", data: { timerId: "m", manual: true, requestId, firedAt: T10 } } as RunEvent)).toBeNull();
    }
    const pending = fresh.finish().pendingTimers;
    expect([...pending.keys()]).toEqual(["m", "t"]);
    expect(pending.get("m")).toMatchObject({ fireAt: T10, setSeq: 1 });
  });
});
