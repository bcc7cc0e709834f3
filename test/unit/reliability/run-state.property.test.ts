/**
 * Properties of the RunState reducer beyond `test/unit/workflow/run-state.property.test.ts`
 * (which checks fold-equivalence, order independence and a coarse pending rule with one fixed
 * fireAt per timer). Here:
 * - an independent model computes the exact state (every pending timer's fireAt, setSeq, cron,
 *   zone, misfire, stepId; signals) for logs with reschedules to other instants, stale fires of
 *   earlier generations, fires and skips naming any tick, legacy fires without a tick, cron
 *   series in zones with DST, seq gaps and events after a terminal event;
 * - a tailer that sees events again (repeated notifications, a re-walk after a force push)
 *   ends in the same state as one that saw each event once;
 * - folding never modifies a state it was given (states are shared between readers);
 * - recovery at any commit followed by tailing the rest equals reading the whole log.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { nextTick } from "../../../src/workflow/cron.js";
import { validateEvent } from "../../../src/workflow/events.js";
import { applyEvent, emptyRunState, reduceRunState } from "../../../src/workflow/run-state.js";
import type { MisfirePolicy, PendingTimer, RunEvent, RunState, TerminalEventType } from "../../../src/workflow/types.js";
import { propertyRuns } from "./property-runs.js";

const RUNS = propertyRuns();

interface SeriesDef {
  readonly cron: string;
  readonly timezone: string;
  /** Candidate ticks (and near-ticks) events may name. */
  readonly instants: readonly string[];
}

function ticksFrom(cron: string, timezone: string, startIso: string, n: number): string[] {
  const out: string[] = [];
  let at = startIso;
  for (let i = 0; i < n; i += 1) {
    const next = nextTick(cron, timezone, at);
    if (next === null) break;
    out.push(next);
    at = next;
  }
  return out;
}

function seriesDef(cron: string, timezone: string, startIso: string): SeriesDef {
  const ticks = ticksFrom(cron, timezone, startIso, 6);
  // Off-schedule instants too: a TimerSet written by hand need not sit on a tick.
  const offTick = ticks.slice(0, 3).map((t) => new Date(Date.parse(t) + 1_234).toISOString());
  return { cron, timezone, instants: [...ticks, ...offTick].sort() };
}

const SERIES: readonly SeriesDef[] = [
  seriesDef("*/5 * * * *", "UTC", "2026-05-01T10:00:00.000Z"),
  seriesDef("30 2 * * *", "America/New_York", "2026-03-06T12:00:00.000Z"),
  seriesDef("0 */2 * * *", "Africa/Cairo", "2026-04-23T17:00:00.000Z"),
  seriesDef("0 * * * *", "Europe/Berlin", "2026-10-25T00:00:00.000Z"),
  seriesDef("*/10 * * * * *", "UTC", "2026-05-01T10:00:00.000Z"),
];

const ONE_SHOT_INSTANTS = ["2026-05-01T10:00:00.000Z", "2026-05-01T10:00:00.001Z", "2026-05-01T11:30:00.000Z", "2026-06-01T00:00:00.000Z"];
const ONE_SHOTS = ["a", "b"] as const;
const SERIES_ID = "c";
const SIGNALS = ["s1", "s2", "s3"] as const;

type Step =
  | { readonly kind: "set"; readonly timer: string; readonly at: number; readonly stepId: boolean; readonly misfire: MisfirePolicy | null }
  | { readonly kind: "fire"; readonly timer: string; readonly at: number | null }
  | { readonly kind: "skip"; readonly timer: string; readonly from: number; readonly span: number }
  | { readonly kind: "cancel"; readonly timer: string }
  | { readonly kind: "received"; readonly signal: string; readonly name: string }
  | { readonly kind: "consumed"; readonly signal: string }
  | { readonly kind: "other" }
  | { readonly kind: "terminal"; readonly type: TerminalEventType };

const timer = fc.constantFrom<string>(...ONE_SHOTS, SERIES_ID);
const instantIndex = fc.integer({ min: 0, max: 8 });
const stepArb: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant("set" as const),
      timer,
      at: instantIndex,
      stepId: fc.boolean(),
      misfire: fc.constantFrom<MisfirePolicy | null>(null, "skip", "latest", "all"),
    }),
  },
  { weight: 5, arbitrary: fc.record({ kind: fc.constant("fire" as const), timer, at: fc.option(instantIndex, { nil: null }) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("skip" as const), timer, from: instantIndex, span: fc.integer({ min: 0, max: 3 }) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("cancel" as const), timer }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("received" as const), signal: fc.constantFrom(...SIGNALS), name: fc.constantFrom("approve", "reject") }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("consumed" as const), signal: fc.constantFrom(...SIGNALS) }) },
  { weight: 1, arbitrary: fc.constant({ kind: "other" as const }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("terminal" as const), type: fc.constantFrom<TerminalEventType>("RunCompleted", "RunFailed", "RunCancelled") }) },
);

interface Scenario {
  readonly series: SeriesDef;
  readonly events: readonly RunEvent[];
}

/** Instants a step may name: the series' own for the series, fixed ones for one-shots. */
function instantsFor(series: SeriesDef, timerId: string): readonly string[] {
  return timerId === SERIES_ID ? series.instants : ONE_SHOT_INSTANTS;
}

function pick(list: readonly string[], index: number): string {
  return list[index % list.length] as string;
}

function toEvent(series: SeriesDef, step: Step, seq: number): RunEvent {
  switch (step.kind) {
    case "set": {
      const fireAt = pick(instantsFor(series, step.timer), step.at);
      const data: Record<string, unknown> = { timerId: step.timer, fireAt };
      if (step.stepId) data["stepId"] = `step-${step.timer}`;
      if (step.timer === SERIES_ID) {
        data["cron"] = series.cron;
        if (series.timezone !== "UTC") data["timezone"] = series.timezone;
        if (step.misfire !== null) data["misfire"] = step.misfire;
      }
      return validateEvent({ seq, type: "TimerSet", data });
    }
    case "fire": {
      if (step.at === null) return validateEvent({ seq, type: "TimerFired", data: { timerId: step.timer } });
      const scheduledFor = pick(instantsFor(series, step.timer), step.at);
      return validateEvent({ seq, type: "TimerFired", data: { timerId: step.timer, scheduledFor, firedAt: scheduledFor } });
    }
    case "skip": {
      const list = instantsFor(series, step.timer);
      const first = pick(list, step.from);
      const last = pick(list, Math.min(step.from + step.span, list.length - 1));
      const [lo, hi] = first <= last ? [first, last] : [last, first];
      return validateEvent({ seq, type: "TimerSkipped", data: { timerId: step.timer, firstMissed: lo, lastMissed: hi, count: lo === hi ? 1 : 2, reason: "missed" } });
    }
    case "cancel":
      return validateEvent({ seq, type: "TimerCancelled", data: { timerId: step.timer, reason: "test" } });
    case "received":
      return validateEvent({ seq, type: "SignalReceived", signalName: step.name, signalId: step.signal, payload: { seq }, at: "2026-05-01T10:00:00.000Z" });
    case "consumed":
      return validateEvent({ seq, type: "SignalConsumed", data: { signalId: step.signal } });
    case "other":
      return validateEvent({ seq, type: "StepCompleted", result: { seq } });
    case "terminal":
      return validateEvent({ seq, type: step.type });
  }
}

const scenarioArb: fc.Arbitrary<Scenario> = fc
  .record({
    series: fc.constantFrom(...SERIES),
    first: fc.constantFrom(0, 1),
    steps: fc.array(fc.tuple(stepArb, fc.integer({ min: 1, max: 3 })), { maxLength: 30 }),
  })
  .map(({ series, first, steps }) => {
    const events: RunEvent[] = [];
    let seq = first;
    for (const [step, gap] of steps) {
      events.push(toEvent(series, step, seq));
      // Mostly dense; a gap now and then (logs written elsewhere may have them).
      seq += gap === 3 ? 2 : 1;
    }
    return { series, events };
  });

/** The reducer's contract (docs/design.md §3) written out plainly, computing cron ticks eagerly. */
function modelState(runId: string, events: readonly RunEvent[]): RunState {
  const pending = new Map<string, PendingTimer>();
  const observed = new Set<string>();
  const unconsumed = new Map<string, { signalId: string; signalName: string; payload: unknown; seq: number; at: string }>();
  let terminal: TerminalEventType | null = null;
  let lastSeq = -1;
  const advance = (t: PendingTimer, after: string): void => {
    const next = nextTick(t.cron as string, t.timezone ?? "UTC", after);
    if (next === null) pending.delete(t.timerId);
    else pending.set(t.timerId, { ...t, fireAt: next });
  };
  for (const event of [...events].sort((x, y) => x.seq - y.seq)) {
    if (event.seq <= lastSeq) continue;
    lastSeq = event.seq;
    if (terminal !== null) continue;
    const data = (event as { data?: Record<string, string | undefined> }).data ?? {};
    const timerId = data["timerId"] ?? "";
    const armed = pending.get(timerId);
    switch (event.type) {
      case "TimerSet": {
        const t: Record<string, unknown> = { timerId, fireAt: data["fireAt"], setSeq: event.seq };
        if (data["stepId"] !== undefined) t["stepId"] = data["stepId"];
        if (data["cron"] !== undefined) {
          t["cron"] = data["cron"];
          t["timezone"] = data["timezone"] ?? "UTC";
        }
        if (data["misfire"] !== undefined) t["misfire"] = data["misfire"];
        pending.set(timerId, t as unknown as PendingTimer);
        break;
      }
      case "TimerFired": {
        if (armed === undefined) break;
        const scheduledFor = data["scheduledFor"];
        if (armed.cron === undefined) {
          if (scheduledFor === undefined || scheduledFor === armed.fireAt) pending.delete(timerId);
        } else if (scheduledFor === undefined) advance(armed, armed.fireAt);
        else if (scheduledFor >= armed.fireAt) advance(armed, scheduledFor);
        break;
      }
      case "TimerSkipped": {
        if (armed === undefined) break;
        const first = data["firstMissed"] as string;
        const last = data["lastMissed"] as string;
        if (armed.cron === undefined) {
          if (first <= armed.fireAt && armed.fireAt <= last) pending.delete(timerId);
        } else if (last >= armed.fireAt) advance(armed, last);
        break;
      }
      case "TimerCancelled":
        pending.delete(timerId);
        break;
      case "SignalReceived": {
        const e = event as { signalId: string; signalName: string; payload: unknown; at: string };
        if (observed.has(e.signalId)) break;
        observed.add(e.signalId);
        unconsumed.set(e.signalId, { signalId: e.signalId, signalName: e.signalName, payload: e.payload, seq: event.seq, at: e.at });
        break;
      }
      case "SignalConsumed":
        unconsumed.delete((data as { signalId?: string }).signalId ?? "");
        break;
      case "RunCompleted":
      case "RunFailed":
      case "RunCancelled":
        terminal = event.type;
        pending.clear();
        break;
    }
  }
  return { runId, lastSeq, terminal, pendingTimers: pending, observedSignalIds: observed, unconsumedSignals: [...unconsumed.values()] };
}

/** A deep, comparable copy of a state (maps and sets as sorted arrays). */
function snapshot(state: RunState): unknown {
  return {
    runId: state.runId,
    lastSeq: state.lastSeq,
    terminal: state.terminal,
    pendingTimers: [...state.pendingTimers.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, v]) => [k, { ...v }]),
    observedSignalIds: [...state.observedSignalIds].sort(),
    unconsumedSignals: state.unconsumedSignals.map((s) => ({ ...s })),
  };
}

describe("RunState reducer properties (exact model)", () => {
  it("computes exactly the state the log defines: fireAt, generation, series tick, signals", () => {
    fc.assert(
      fc.property(scenarioArb, ({ events }) => {
        expect(snapshot(reduceRunState("r", events))).toEqual(snapshot(modelState("r", events)));
      }),
      RUNS,
    );
  });

  it("ends in the same state when events are seen again, in any later position", () => {
    const withRepeats = scenarioArb.chain((sc) =>
      fc
        .array(fc.tuple(fc.nat(), fc.nat()), { maxLength: sc.events.length })
        .map((repeats) => {
          // Deliver each event once, and re-deliver earlier ones after some of them.
          const delivered: RunEvent[] = [];
          sc.events.forEach((event, i) => {
            delivered.push(event);
            for (const [at, which] of repeats) if (at % (sc.events.length || 1) === i) delivered.push(sc.events[which % (i + 1)] as RunEvent);
          });
          return { ...sc, delivered };
        }),
    );
    fc.assert(
      fc.property(withRepeats, ({ events, delivered }) => {
        const once = reduceRunState("r", events);
        expect(snapshot(delivered.reduce(applyEvent, emptyRunState("r")))).toEqual(snapshot(once));
      }),
      RUNS,
    );
  });

  it("never modifies a state it folds from, so readers sharing a state are never surprised", () => {
    const withSplit = scenarioArb.chain((sc) => fc.nat({ max: sc.events.length }).map((split) => ({ ...sc, split })));
    fc.assert(
      fc.property(withSplit, ({ events, split }) => {
        let state = reduceRunState("r", events.slice(0, split));
        for (const event of events.slice(split)) {
          const before = snapshot(state);
          const next = applyEvent(state, event);
          expect(snapshot(state)).toEqual(before);
          state = next;
        }
      }),
      RUNS,
    );
  });

  it("recovering at any commit and tailing the rest equals reading the whole log", () => {
    const withSplit = scenarioArb.chain((sc) => fc.nat({ max: sc.events.length }).map((split) => ({ ...sc, split })));
    fc.assert(
      fc.property(withSplit, ({ events, split }) => {
        const recovered = reduceRunState("r", events.slice(0, split));
        const tailed = events.slice(split).reduce(applyEvent, recovered);
        expect(snapshot(tailed)).toEqual(snapshot(reduceRunState("r", events)));
      }),
      RUNS,
    );
  });
});
