/**
 * Properties of the timer ledger (`planDueTimer`) driven over whole timer lifetimes: the plan
 * is folded back into the run state with the reducer, as the scheduler commits it, and the next
 * wake-up plans from that state. A wake-up may come early or late by many ticks, a planned
 * commit may be lost (a crash before the ref moved) and a delivered timer may be planned again
 * (a retry, a duplicate queue entry, a second host that slipped past the lock).
 *
 * Checked, for cron series in several zones (DST gaps and repeats included) and every misfire
 * policy:
 * - never early: before the armed tick nothing is appended;
 * - every due tick, from the first armed one to the newest one a wake-up saw, is fired or
 *   skipped exactly once over the whole lifetime — none lost, none doubled, whatever was lost or
 *   replayed in between;
 * - the policy decides which: `skip` fires only an on-time newest tick, `latest` always the
 *   newest, `all` the newest `maxCatchUp`;
 * - the follow-on TimerSet arms the first tick after the newest due one, computed from the
 *   ticks, and lies after "now";
 * - a generation that was planned and committed is stale afterwards (exactly once);
 * - every planned event passes the event schema, so a commit is never refused for its content.
 * And for one-shots: one TimerFired with the original scheduledFor however late, none for a
 * cancelled, re-set or ended generation.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { validateEvent } from "../../../src/workflow/events.js";
import { nextTick } from "../../../src/workflow/cron.js";
import { applyEvent, reduceRunState } from "../../../src/workflow/run-state.js";
import { planDueTimer, type FirePlan } from "../../../src/workflow/timer-ledger.js";
import { isoFromMs } from "../../../src/workflow/time.js";
import type { MisfirePolicy, RunEvent, RunState } from "../../../src/workflow/types.js";
import { propertyRuns } from "./property-runs.js";

const RUNS = propertyRuns();

/** A series with a start near something awkward, and its typical tick spacing. */
interface SeriesCase {
  readonly cron: string;
  readonly timezone: string;
  readonly start: string;
  readonly periodMs: number;
}

const SECOND = 1_000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

export const SERIES: readonly SeriesCase[] = [
  { cron: "* * * * * *", timezone: "UTC", start: "2026-05-01T10:00:00.000Z", periodMs: SECOND },
  { cron: "*/7 * * * * *", timezone: "UTC", start: "2026-05-01T10:00:00.000Z", periodMs: 7 * SECOND },
  { cron: "*/5 * * * *", timezone: "UTC", start: "2026-05-01T10:00:00.000Z", periodMs: 5 * MINUTE },
  { cron: "0 */2 * * *", timezone: "Africa/Cairo", start: "2026-04-23T17:00:00.000Z", periodMs: 2 * HOUR },
  { cron: "30 2 * * *", timezone: "America/New_York", start: "2026-03-06T00:00:00.000Z", periodMs: DAY },
  { cron: "30 1 * * *", timezone: "America/New_York", start: "2026-10-30T00:00:00.000Z", periodMs: DAY },
  { cron: "0 * * * *", timezone: "Europe/Berlin", start: "2026-10-25T00:00:00.000Z", periodMs: HOUR },
  { cron: "0 9 * * 1-5", timezone: "Europe/Berlin", start: "2026-05-01T00:00:00.000Z", periodMs: DAY },
  { cron: "15,45 * * * *", timezone: "Asia/Kolkata", start: "2026-05-01T00:00:00.000Z", periodMs: 30 * MINUTE },
];

type Wake = {
  /** < 0: that far before the armed tick; ≥ 0: that far after it. */
  readonly lateMs: number;
  /** The commit of this plan is lost (crash before the ref moved). */
  readonly lost: boolean;
  /** After committing, the same due generation is delivered once more. */
  readonly replay: boolean;
};

const policy = fc.constantFrom<MisfirePolicy | undefined>(undefined, "skip", "latest", "all");

function wakeArb(periodMs: number): fc.Arbitrary<Wake> {
  const lateMs = fc.oneof(
    { weight: 2, arbitrary: fc.integer({ min: -periodMs, max: -1 }) },
    { weight: 3, arbitrary: fc.integer({ min: 0, max: 2 * SECOND }) },
    { weight: 1, arbitrary: fc.constantFrom(0, 999, 1_000, 1_001) },
    {
      weight: 3,
      arbitrary: fc.tuple(fc.integer({ min: 1, max: 12 }), fc.integer({ min: 0, max: periodMs - 1 })).map(([ticks, extra]) => ticks * periodMs + extra),
    },
  );
  // One wake-up in six loses its commit.
  return fc
    .record({ lateMs, lostRoll: fc.integer({ min: 0, max: 5 }), replay: fc.boolean() })
    .map((w) => ({ lateMs: w.lateMs, lost: w.lostRoll === 0, replay: w.replay }));
}

const seriesScenario = fc
  .constantFrom(...SERIES)
  .chain((series) =>
    fc.record({
      series: fc.constant(series),
      aligned: fc.boolean(),
      offsetMs: fc.integer({ min: 0, max: series.periodMs * 3 }),
      setPolicy: policy,
      defaultPolicy: fc.constantFrom<MisfirePolicy>("skip", "latest", "all"),
      maxCatchUp: fc.option(fc.integer({ min: 1, max: 4 }), { nil: undefined }),
      graceMs: fc.option(fc.constantFrom(0, 1, 1_000, 5_000, series.periodMs), { nil: undefined }),
      wakes: fc.array(wakeArb(series.periodMs), { minLength: 1, maxLength: 8 }),
    }),
  );

/** The armed tick and every tick after it up to `nowMs`, walked one by one with croner. */
function dueTicks(cron: string, timezone: string, fireAt: string, nowMs: number): string[] {
  const ticks = [fireAt];
  let at = fireAt;
  for (;;) {
    const next = nextTick(cron, timezone, at);
    if (next === null || Date.parse(next) > nowMs) return ticks;
    ticks.push(next);
    at = next;
  }
}

/** Numbers, stamps and validates planned events as the scheduler does before committing. */
function commit(plan: FirePlan & { kind: "append" }, firstSeq: number): RunEvent[] {
  return plan.events.map((planned, i) => validateEvent({ seq: firstSeq + i, type: planned.type, at: plan.firedAt, data: planned.data }));
}

describe("timer ledger properties", () => {
  // Many generated histories: under load on a shared machine it needs more than the default 30 s.
  it("fires or skips every due tick of a series exactly once, by its misfire policy, across lost commits and replays", { timeout: 180_000 }, () => {
    fc.assert(
      fc.property(seriesScenario, (sc) => {
        const { cron, timezone } = sc.series;
        const startMs = Date.parse(sc.series.start) + sc.offsetMs;
        const firstFireAt = sc.aligned ? (nextTick(cron, timezone, isoFromMs(startMs)) as string) : isoFromMs(startMs);
        const log: RunEvent[] = [
          validateEvent({
            seq: 1,
            type: "TimerSet",
            data: { timerId: "s", fireAt: firstFireAt, cron, timezone, ...(sc.setPolicy === undefined ? {} : { misfire: sc.setPolicy }) },
          }),
        ];
        let state: RunState = reduceRunState("r", log);
        const effective = sc.setPolicy ?? sc.defaultPolicy;
        const maxCatchUp = sc.maxCatchUp ?? 100;
        const graceMs = sc.graceMs ?? 1_000;
        /** tick → how it was handled; a second entry for one tick is a double. */
        const handled = new Map<string, "fired" | "skipped">();
        let previousNewest: string | null = null;

        for (const wake of sc.wakes) {
          const pending = state.pendingTimers.get("s");
          expect(pending).toBeDefined();
          if (pending === undefined) return;
          const due = { timerId: "s", fireAt: pending.fireAt, setSeq: pending.setSeq };
          const nowMs = Date.parse(pending.fireAt) + wake.lateMs;
          const plan = planDueTimer(state, due, {
            nowMs,
            misfire: sc.defaultPolicy,
            ...(sc.maxCatchUp === undefined ? {} : { maxCatchUp: sc.maxCatchUp }),
            ...(sc.graceMs === undefined ? {} : { misfireGraceMs: sc.graceMs }),
          });
          if (wake.lateMs < 0) {
            expect(plan).toEqual({ kind: "not_due", fireAt: pending.fireAt, dueMs: Date.parse(pending.fireAt) });
            continue;
          }
          expect(plan.kind).toBe("append");
          if (plan.kind !== "append") return;

          const ticks = dueTicks(cron, timezone, pending.fireAt, nowMs);
          const newest = ticks.at(-1) as string;
          const onTime = nowMs - Date.parse(newest) <= graceMs;
          const expectedFired =
            effective === "all" ? ticks.slice(-maxCatchUp) : effective === "latest" || onTime ? [newest] : [];
          expect(plan.fired).toEqual(expectedFired);
          expect(plan.firedAt).toBe(isoFromMs(nowMs));
          const skippedTicks = ticks.slice(0, ticks.length - expectedFired.length);
          expect(plan.skipped).toEqual(
            skippedTicks.length === 0
              ? null
              : { firstMissed: skippedTicks[0], lastMissed: skippedTicks.at(-1), count: skippedTicks.length },
          );
          const next = nextTick(cron, timezone, newest);
          expect(plan.nextFireAt).toBe(next);
          if (next !== null) expect(Date.parse(next)).toBeGreaterThan(nowMs);

          const events = commit(plan, state.lastSeq + 1);
          expect(events.map((e) => e.type)).toEqual([
            ...(skippedTicks.length > 0 ? ["TimerSkipped"] : []),
            ...expectedFired.map(() => "TimerFired"),
            ...(next === null ? [] : ["TimerSet"]),
          ]);
          if (wake.lost) continue;

          for (const tick of skippedTicks) {
            expect(handled.has(tick), `tick ${tick} handled twice`).toBe(false);
            handled.set(tick, "skipped");
          }
          for (const tick of expectedFired) {
            expect(handled.has(tick), `tick ${tick} handled twice`).toBe(false);
            handled.set(tick, "fired");
          }
          // No gap: this wake-up handles the ticks right after the ones the last one handled.
          if (previousNewest !== null) expect(ticks[0]).toBe(nextTick(cron, timezone, previousNewest));
          previousNewest = newest;
          log.push(...events);
          const folded = events.reduce(applyEvent, state);
          state = reduceRunState("r", log);
          expect(folded).toEqual(state);
          if (next !== null) {
            expect(state.pendingTimers.get("s")).toMatchObject({ fireAt: next, setSeq: events.at(-1)?.seq });
          }
          if (wake.replay) {
            expect(planDueTimer(state, due, { nowMs: nowMs + 1 })).toEqual({ kind: "stale", reason: next === null ? "not_armed" : "rearmed" });
          }
          if (next === null) return;
        }

      }),
      RUNS,
    );
  });

  it("fires a one-shot once with its original scheduledFor however late, and never a cancelled, re-set or ended generation", () => {
    type Interference = "none" | "cancel" | "reset" | "terminal" | "other";
    const scenario = fc.record({
      fireAtMs: fc.integer({ min: Date.parse("2026-01-01T00:00:00Z"), max: Date.parse("2027-01-01T00:00:00Z") }),
      firstSeq: fc.constantFrom(0, 1),
      lateMs: fc.oneof(fc.integer({ min: -DAY, max: -1 }), fc.integer({ min: 0, max: 400 * DAY })),
      interference: fc.constantFrom<Interference>("none", "cancel", "reset", "terminal", "other"),
      resetByMs: fc.integer({ min: -HOUR, max: HOUR }),
      legacyFire: fc.boolean(),
    });
    fc.assert(
      fc.property(scenario, (sc) => {
        const fireAt = isoFromMs(sc.fireAtMs);
        const log: RunEvent[] = [validateEvent({ seq: sc.firstSeq, type: "TimerSet", data: { timerId: "t", fireAt } })];
        const due = { timerId: "t", fireAt, setSeq: sc.firstSeq };
        let seq = sc.firstSeq + 1;
        if (sc.interference === "cancel") log.push(validateEvent({ seq: seq++, type: "TimerCancelled", data: { timerId: "t" } }));
        if (sc.interference === "reset") log.push(validateEvent({ seq: seq++, type: "TimerSet", data: { timerId: "t", fireAt: isoFromMs(sc.fireAtMs + sc.resetByMs) } }));
        if (sc.interference === "terminal") log.push(validateEvent({ seq: seq++, type: "RunFailed", reason: "x" }));
        if (sc.interference === "other") log.push(validateEvent({ seq: seq++, type: "StepStarted", step: "a" }));
        const state = reduceRunState("r", log);
        const nowMs = sc.fireAtMs + sc.lateMs;
        const plan = planDueTimer(state, due, { nowMs });

        const refused: Partial<Record<Interference, FirePlan>> = {
          cancel: { kind: "stale", reason: "not_armed" },
          reset: { kind: "stale", reason: "rearmed" },
          terminal: { kind: "stale", reason: "terminal" },
        };
        const expectedRefusal = refused[sc.interference] ?? (sc.lateMs < 0 ? { kind: "not_due", fireAt, dueMs: sc.fireAtMs } : undefined);
        if (expectedRefusal !== undefined) {
          expect(plan).toEqual(expectedRefusal);
          return;
        }

        expect(plan).toMatchObject({ kind: "append", fired: [fireAt], skipped: null, nextFireAt: null, firedAt: isoFromMs(nowMs) });
        if (plan.kind !== "append") return;
        const events = commit(plan, seq);
        expect(events).toEqual([{ seq, type: "TimerFired", at: isoFromMs(nowMs), data: { timerId: "t", scheduledFor: fireAt, firedAt: isoFromMs(nowMs) } }]);
        // A log from the original system names no tick; it disarms all the same.
        const fired = sc.legacyFire ? [validateEvent({ seq, type: "TimerFired", data: { timerId: "t" } })] : events;
        const after = reduceRunState("r", [...log, ...fired]);
        expect(after.pendingTimers.has("t")).toBe(false);
        expect(planDueTimer(after, due, { nowMs: nowMs + 1 })).toEqual({ kind: "stale", reason: "not_armed" });
      }),
      RUNS,
    );
  });

  it("plans nothing for a generation the queue holds when the log has moved on, for every way it can move", () => {
    // A queue entry outlives its generation when the tail is behind: the ledger alone must
    // refuse it, whatever the log now says.
    const scenario = fc.record({
      setSeq: fc.integer({ min: 0, max: 5 }),
      fireAtMs: fc.integer({ min: 0, max: 10 * DAY }),
      heldSeqDelta: fc.integer({ min: -3, max: 3 }),
      heldFireAtDelta: fc.constantFrom(0, 0, -1, 1, MINUTE),
      lateMs: fc.integer({ min: 0, max: DAY }),
    });
    fc.assert(
      fc.property(scenario, (sc) => {
        const base = Date.parse("2026-05-01T00:00:00Z");
        const fireAt = isoFromMs(base + sc.fireAtMs);
        const log: RunEvent[] = [];
        for (let s = 0; s < sc.setSeq; s += 1) log.push(validateEvent({ seq: s, type: "StepStarted" }));
        log.push(validateEvent({ seq: sc.setSeq, type: "TimerSet", data: { timerId: "t", fireAt } }));
        const state = reduceRunState("r", log);
        const held = { timerId: "t", fireAt: isoFromMs(base + sc.fireAtMs + sc.heldFireAtDelta), setSeq: sc.setSeq + sc.heldSeqDelta };
        const plan = planDueTimer(state, held, { nowMs: base + sc.fireAtMs + sc.heldFireAtDelta + sc.lateMs });
        const same = sc.heldSeqDelta === 0 && sc.heldFireAtDelta === 0;
        if (same) expect(plan.kind).toBe("append");
        else expect(plan).toEqual({ kind: "stale", reason: "rearmed" });
      }),
      RUNS,
    );
  });
});
