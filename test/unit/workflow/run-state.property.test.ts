import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { applyEvent, createRunStateFold, emptyRunState, reduceRunState, reduceRunStateWithProblems } from "../../../src/workflow/run-state.js";
import type { RunEvent } from "../../../src/workflow/types.js";

// One-shot timers each always set to the same fireAt, so a fire naming that fireAt (or naming
// none) is never stale; a fire naming STALE is always stale.
const ONE_SHOT_FIRE_AT: Record<string, string> = { a: "2026-05-01T10:00:00.000Z", b: "2026-05-01T11:00:00.000Z" };
const STALE = "2020-01-01T00:00:00.000Z";
const CRON = "*/5 * * * *";
const SIGNALS = ["s1", "s2", "s3", "s4"];

type Step =
  | { kind: "set" | "cancel"; timerId: string }
  | { kind: "fire"; timerId: string; scheduledFor: "armed" | "absent" | "stale" | number }
  | { kind: "skip"; minutes: number; count: number }
  | { kind: "received" | "consumed"; signalId: string }
  | { kind: "other" }
  | { kind: "terminal"; type: "RunCompleted" | "RunFailed" | "RunCancelled" };

const timerId = fc.constantFrom("a", "b", "c");
const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant("set" as const), timerId }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("cancel" as const), timerId }) },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant("fire" as const),
      timerId,
      scheduledFor: fc.oneof(fc.constantFrom("armed" as const, "absent" as const, "stale" as const), fc.integer({ min: 0, max: 24 })),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("skip" as const), minutes: fc.integer({ min: 0, max: 24 }), count: fc.integer({ min: 1, max: 4 }) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constantFrom("received" as const, "consumed" as const), signalId: fc.constantFrom(...SIGNALS) }) },
  { weight: 1, arbitrary: fc.constant({ kind: "other" as const }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("terminal" as const), type: fc.constantFrom("RunCompleted" as const, "RunFailed" as const, "RunCancelled" as const) }) },
);

const tick = (n: number): string => new Date(Date.UTC(2026, 4, 1, 10, 5 * n)).toISOString();

function toEvent(s: Step, seq: number): RunEvent {
  switch (s.kind) {
    case "set":
      return s.timerId === "c"
        ? { seq, type: "TimerSet", data: { timerId: "c", fireAt: tick(0), cron: CRON } }
        : { seq, type: "TimerSet", data: { timerId: s.timerId, fireAt: ONE_SHOT_FIRE_AT[s.timerId] ?? STALE } };
    case "cancel":
      return { seq, type: "TimerCancelled", data: { timerId: s.timerId } };
    case "fire": {
      if (s.scheduledFor === "absent") return { seq, type: "TimerFired", data: { timerId: s.timerId } };
      const scheduledFor =
        s.scheduledFor === "stale" ? STALE : s.scheduledFor === "armed" ? (ONE_SHOT_FIRE_AT[s.timerId] ?? tick(0)) : s.timerId === "c" ? tick(s.scheduledFor) : STALE;
      return { seq, type: "TimerFired", data: { timerId: s.timerId, scheduledFor, firedAt: scheduledFor } };
    }
    case "skip":
      return { seq, type: "TimerSkipped", data: { timerId: "c", firstMissed: tick(s.minutes), lastMissed: tick(s.minutes + s.count - 1), count: s.count, reason: "missed" } };
    case "received":
      return { seq, type: "SignalReceived", signalName: "n", signalId: s.signalId, payload: seq, at: tick(0) };
    case "consumed":
      return { seq, type: "SignalConsumed", data: { signalId: s.signalId } };
    case "other":
      return { seq, type: "StepStarted", note: seq };
    case "terminal":
      return { seq, type: s.type };
  }
}

const log = fc
  .tuple(fc.array(step, { maxLength: 40 }), fc.constantFrom(0, 1))
  .map(([steps, first]) => steps.map((s, i) => ({ step: s, event: toEvent(s, first + i) })));

/** The same log in a random order. */
const shuffledLog = log.chain((entries) =>
  fc.array(fc.double({ noNaN: true }), { minLength: entries.length, maxLength: entries.length }).map((keys) => ({
    entries,
    shuffled: entries
      .map((e, i) => ({ e, k: keys[i] ?? 0 }))
      .sort((x, y) => x.k - y.k)
      .map((x) => x.e.event),
  })),
);

const RUNS = { numRuns: 1_000 };

describe("reduceRunState properties", () => {
  it("equals folding applyEvent over the log, and does not depend on input order", () => {
    fc.assert(
      fc.property(shuffledLog, ({ entries, shuffled }) => {
        const events = entries.map((e) => e.event);
        const reduced = reduceRunState("r", events);
        expect(events.reduce(applyEvent, emptyRunState("r"))).toEqual(reduced);
        expect(reduceRunState("r", shuffled)).toEqual(reduced);
        expect(reduced.lastSeq).toBe(events.at(-1)?.seq ?? -1);
      }),
      RUNS,
    );
  });

  it("keeps a timer pending iff its last TimerSet comes after its last disarming event", () => {
    fc.assert(
      fc.property(log, (entries) => {
        const state = reduceRunState("r", entries.map((e) => e.event));
        const terminalAt = entries.find((e) => e.step.kind === "terminal")?.event.seq ?? Infinity;
        const live = entries.filter((e) => e.event.seq < terminalAt);
        for (const id of ["a", "b", "c"]) {
          const lastSet = Math.max(-1, ...live.filter((e) => e.step.kind === "set" && e.step.timerId === id).map((e) => e.event.seq));
          // Fires of a one-shot disarm unless stale; a series ends only by cancellation.
          const disarms = live.filter(
            (e) =>
              (e.step.kind === "cancel" && e.step.timerId === id) ||
              (id !== "c" && e.step.kind === "fire" && e.step.timerId === id && (e.step.scheduledFor === "armed" || e.step.scheduledFor === "absent")),
          );
          const lastDisarm = Math.max(-1, ...disarms.map((e) => e.event.seq));
          const pending = state.pendingTimers.get(id);
          const expected = terminalAt === Infinity && lastSet >= 0 && lastSet > lastDisarm;
          expect(pending !== undefined).toBe(expected);
          if (pending !== undefined && id !== "c") expect(pending).toEqual({ timerId: id, fireAt: ONE_SHOT_FIRE_AT[id], setSeq: lastSet });
          if (pending !== undefined && id === "c") {
            expect(pending.cron).toBe(CRON);
            expect(Date.parse(pending.fireAt) % 300_000).toBe(0);
            expect(pending.fireAt >= tick(0)).toBe(true);
          }
        }
        if (terminalAt !== Infinity) expect(state.terminal).not.toBeNull();
      }),
      RUNS,
    );
  });

  it("lists each received signal once and the unconsumed ones in seq order", () => {
    fc.assert(
      fc.property(log, (entries) => {
        const state = reduceRunState("r", entries.map((e) => e.event));
        const terminalAt = entries.find((e) => e.step.kind === "terminal")?.event.seq ?? Infinity;
        const live = entries.filter((e) => e.event.seq < terminalAt);
        const firstReceived = new Map<string, number>();
        for (const e of live) if (e.step.kind === "received" && !firstReceived.has(e.step.signalId)) firstReceived.set(e.step.signalId, e.event.seq);
        const unconsumed = [...firstReceived]
          .filter(([id, seq]) => !live.some((e) => e.step.kind === "consumed" && e.step.signalId === id && e.event.seq > seq))
          .sort((x, y) => x[1] - y[1])
          .map(([id, seq]) => ({ signalId: id, signalName: "n", payload: seq, seq, at: tick(0) }));
        expect(new Set(state.observedSignalIds)).toEqual(new Set(firstReceived.keys()));
        expect(state.unconsumedSignals).toEqual(unconsumed);
      }),
      RUNS,
    );
  });
});

describe("createRunStateFold from a point", () => {
  it("goes on as the fold it came from would, as often as asked, leaving the point and earlier states alone", () => {
    fc.assert(
      fc.property(log, fc.nat(), (entries, cut) => {
        const events = entries.map((e) => e.event);
        const at = events.length === 0 ? 0 : cut % (events.length + 1);
        const head = createRunStateFold("r");
        const problems = events.slice(0, at).map((e) => head.apply(e));
        const point = head.point();
        const before = head.finish();
        const whole = reduceRunStateWithProblems("r", events);
        const beforeWhole = reduceRunState("r", events.slice(0, at));
        for (let round = 0; round < 2; round += 1) {
          const tail = createRunStateFold("r", point);
          const all = [...problems, ...events.slice(at).map((e) => tail.apply(e))].filter((p) => p !== null);
          expect({ state: tail.finish(), problems: all }).toEqual(whole);
        }
        expect(before).toEqual(beforeWhole);
      }),
      { numRuns: 300 },
    );
  });
});
