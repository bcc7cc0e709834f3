/**
 * A one-shot's TimerFired is laid out directly by the timer ledger: it must be the event
 * `newTimerFired` makes for the same timer (same fields, same key order), so the event file's
 * bytes are the same as before, through both serialisers a fire commit uses.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { newTimerFired } from "../../../src/workflow/event-constructors.js";
import { serializeEvent, serializePlainTimerFired, validateEvent } from "../../../src/workflow/events.js";
import { reduceRunState } from "../../../src/workflow/run-state.js";
import { planDueTimer } from "../../../src/workflow/timer-ledger.js";
import { isoFromMs } from "../../../src/workflow/time.js";
import type { RunEvent } from "../../../src/workflow/types.js";

const ID_CHARS = "abcXYZ019_.:-".split("");

describe("a one-shot's TimerFired", () => {
  it("is newTimerFired's event for the same timer, and serialises to the same bytes", () => {
    const timerId = fc.array(fc.constantFrom(...ID_CHARS), { minLength: 1, maxLength: 40 }).map((chars) => chars.join(""));
    const offset = fc.constantFrom("Z", "+02:00", "-05:30", "+00:00");
    fc.assert(
      fc.property(timerId, fc.integer({ min: 0, max: 4_000_000_000_000 }), fc.integer({ min: 0, max: 10 ** 9 }), offset, fc.integer({ min: 1, max: 1_000 }), (id, fireMs, lateMs, zone, setSeq) => {
        const iso = isoFromMs(fireMs);
        const fireAt = zone === "Z" ? iso : `${iso.slice(0, -1)}${zone}`;
        let set: RunEvent;
        try {
          set = validateEvent({ seq: setSeq, type: "TimerSet", data: { timerId: id, fireAt } });
        } catch {
          return; // an instant the schema refuses (a negative offset before year 1): not a timer
        }
        const state = reduceRunState("run-1", [set]);
        const pending = state.pendingTimers.get(id);
        if (pending === undefined) return;
        const nowMs = Date.parse(pending.fireAt) + lateMs;
        const plan = planDueTimer(state, { timerId: id, fireAt: pending.fireAt, setSeq: pending.setSeq }, { nowMs });
        expect(plan.kind).toBe("append");
        if (plan.kind !== "append") return;
        const before = newTimerFired({ timerId: pending.timerId, scheduledFor: pending.fireAt, firedAt: isoFromMs(nowMs) });
        expect(plan.events).toHaveLength(1);
        expect(JSON.stringify(plan.events[0])).toBe(JSON.stringify(before));
        const at = isoFromMs(nowMs);
        const now = { seq: setSeq + 1, type: plan.events[0]?.type, at, data: plan.events[0]?.data } as RunEvent;
        const then = { seq: setSeq + 1, type: before.type, at, data: before.data } as RunEvent;
        expect(Buffer.from(serializeEvent(now)).toString()).toBe(Buffer.from(serializeEvent(then)).toString());
        expect(Buffer.from(serializePlainTimerFired(now)?.bytes ?? []).toString()).toBe(Buffer.from(serializePlainTimerFired(then)?.bytes ?? []).toString());
      }),
      { numRuns: 300 },
    );
  });
});
