import { type } from "arktype";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { eventBaseSchema, knownEventSchemas } from "../../../src/workflow/event-schemas.js";
import { eventBaseProblem, KNOWN_EVENT_TYPES, knownEventProblem } from "../../../src/workflow/event-shapes.js";

// Values a field may hold: the right kind, near misses at every bound, and the wrong kinds.
const scalar = fc.oneof(
  fc.constantFrom<unknown>(
    0, 1, -1, 2.5, -0, Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER + 1, Number.NaN, Number.POSITIVE_INFINITY,
    "", "x", "2026-01-01T00:00:00Z", "skip", "latest", "all", "never", "missed", "TimerSet", "paused", "endAt", "maxTicks", 86_400_000, 86_400_001, 1_000_000, 1_000_001,
    null, undefined, true, false, [], {}, ["a"], { a: 1 },
  ),
  fc.string({ maxLength: 4 }),
  fc.integer({ min: -3, max: 3 }),
);

const typeName = fc.oneof(fc.constantFrom<unknown>(...KNOWN_EVENT_TYPES, "StepCompleted", "", 3, null), fc.string({ maxLength: 3 }));

const dataKeys = ["timerId", "fireAt", "stepId", "cron", "timezone", "misfire", "scheduledFor", "firedAt", "firstMissed", "lastMissed", "count", "reason", "signalId", "startAt", "endAt", "maxTicks", "slot", "jitterMs", "owner", "manual", "requestId", "backfill", "jitteredFor", "takenUpAt", "catchUp", "lastTick", "extra"] as const;

/** An object with any subset of `keys`, each holding any of `value`'s values. */
function someOf(keys: readonly string[], value: fc.Arbitrary<unknown>): fc.Arbitrary<Record<string, unknown>> {
  return fc.record(Object.fromEntries(keys.map((k) => [k, value])), { requiredKeys: [] });
}

const data = fc.oneof({ weight: 4, arbitrary: someOf(dataKeys, scalar) }, { weight: 1, arbitrary: scalar });

const event = fc.oneof(
  { weight: 8, arbitrary: fc.record({ seq: scalar, type: typeName, at: scalar, data, signalName: scalar, signalId: scalar, payload: scalar, note: scalar }, { requiredKeys: [] }) },
  { weight: 1, arbitrary: scalar },
);

/** Mostly valid events with one field changed: the values that matter most, near the boundary. */
const nearValid = fc
  .tuple(
    fc.constantFrom<Record<string, unknown>>(
      { seq: 1, type: "TimerSet", at: "a", data: { timerId: "t", fireAt: "f", stepId: "s", cron: null, timezone: "UTC", misfire: "skip" } },
      { seq: 2, type: "TimerFired", data: { timerId: "t", scheduledFor: "s", firedAt: "f" } },
      { seq: 3, type: "TimerSkipped", data: { timerId: "t", firstMissed: "a", lastMissed: "b", count: 2, reason: "missed" } },
      { seq: 4, type: "TimerCancelled", data: { timerId: "t", reason: "r" } },
      { seq: 1, type: "TimerSet", data: { timerId: "t", fireAt: "f", cron: "c", startAt: "a", endAt: "b", maxTicks: 3, slot: 2, jitterMs: 0, owner: "sync" } },
      { seq: 2, type: "TimerFired", data: { timerId: "t", manual: true, requestId: "r", backfill: false, jitteredFor: "j" } },
      { seq: 3, type: "TimerSkipped", data: { timerId: "t", firstMissed: "a", lastMissed: "b", count: 2, reason: "paused" } },
      { seq: 4, type: "SchedulePaused", data: { timerId: "t", reason: "r" } },
      { seq: 4, type: "ScheduleResumed", data: { timerId: "t", catchUp: true } },
      { seq: 4, type: "ScheduleEnded", data: { timerId: "t", reason: "maxTicks", lastTick: "l" } },
      { seq: 5, type: "SignalReceived", signalName: "n", signalId: "i", payload: { a: 1 }, at: "a" },
      { seq: 6, type: "SignalConsumed", data: { signalId: "i", stepId: "s" } },
      { seq: 7, type: "RunCompleted" },
      { seq: 8, type: "RunFailed", at: "a" },
    ),
    fc.constantFrom("seq", "type", "at", "data", "signalName", "signalId", "payload", ...dataKeys.map((k) => `data.${k}`)),
    fc.option(scalar, { nil: "<delete>" as const }),
  )
  .map(([base, key, value]) => {
    const copy: Record<string, unknown> = { ...base, ...(typeof base["data"] === "object" ? { data: { ...(base["data"] as object) } } : {}) };
    const [owner, name] = key.startsWith("data.") ? [copy["data"] as Record<string, unknown> | undefined, key.slice(5)] : [copy, key];
    if (owner === undefined || typeof owner !== "object") return copy;
    if (value === "<delete>") delete owner[name];
    else owner[name] = value;
    return copy;
  });

const passes = (checked: unknown): boolean => !(checked instanceof type.errors);

describe("hand-written event shapes", () => {
  it("accept exactly what the arktype base schema accepts", () => {
    fc.assert(
      fc.property(fc.oneof(event, nearValid), (value) => {
        expect(eventBaseProblem(value) === null).toBe(passes(eventBaseSchema(value)));
      }),
      { numRuns: 3_000 },
    );
  });

  it("accept exactly what each known type's arktype schema accepts", () => {
    fc.assert(
      fc.property(fc.oneof(event, nearValid), fc.constantFrom(...KNOWN_EVENT_TYPES), fc.boolean(), (value, name, retype) => {
        // Often given the type the schema expects, so the rest of the shape is what decides.
        const candidate = retype && typeof value === "object" && value !== null && !Array.isArray(value) ? { ...value, type: name } : value;
        expect(knownEventProblem(name, candidate) === null).toBe(passes(knownEventSchemas[name](candidate)));
      }),
      { numRuns: 5_000 },
    );
  });

  it("name what is wrong when a value is refused", () => {
    expect(eventBaseProblem({ seq: -1, type: "" })).toMatch(/seq[\s\S]*type/);
    expect(knownEventProblem("TimerSet", { seq: 1, type: "TimerSet", data: { timerId: 3 } })).toMatch(/data\.timerId[\s\S]*data\.fireAt/);
  });
});
