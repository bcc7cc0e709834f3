/**
 * A fire commit lays out a plain TimerFired from a template (serializePlainTimerFired) instead of
 * serializeEvent: the bytes must be the same, its fields still checked, the limit still applied,
 * and any other shape left to serializeEvent.
 */
import { describe, expect, it } from "vitest";
import { parseEvent, serializeEvent, serializePlainTimerFired, serializePlainTimerFiredOf } from "../../../src/workflow/events.js";
import { newTimerFired } from "../../../src/workflow/event-constructors.js";
import type { RunEvent } from "../../../src/workflow/types.js";
import { WorkflowHostError } from "../../../src/errors.js";

const fired = (seq: number, at: string, data: Record<string, unknown>): RunEvent => ({ seq, type: "TimerFired", at, data }) as unknown as RunEvent;

function codeOf(run: () => unknown): string | undefined {
  try {
    run();
  } catch (error) {
    return error instanceof WorkflowHostError ? error.code : "not a WorkflowHostError";
  }
  return undefined;
}

describe("serializePlainTimerFired", () => {
  it("writes the bytes serializeEvent writes, for ids using every allowed character and far instants", () => {
    const cases = [
      fired(1, "2026-05-01T00:00:00.000Z", { timerId: "t", scheduledFor: "2026-05-01T00:00:00.000Z", firedAt: "2026-05-01T00:00:00.123Z" }),
      fired(123456, "9999-12-31T23:59:59.999Z", { timerId: "Az09_.:-x", scheduledFor: "0001-01-01T00:00:00.000Z", firedAt: "9999-12-31T23:59:59.999Z" }),
      fired(0, "2030-01-01T00:00:00.000Z", { timerId: "a".repeat(256), scheduledFor: "2030-01-01T00:00:00.000Z", firedAt: "2030-01-01T00:00:00.000Z" }),
      // As the fire committer builds it from the planner's event.
      fired(7, "2026-05-01T00:00:01.000Z", newTimerFired({ timerId: "wait-1", scheduledFor: "2026-05-01T00:00:00.000Z", firedAt: "2026-05-01T00:00:01.000Z" }).data),
    ];
    for (const event of cases) {
      const plain = serializePlainTimerFired(event);
      expect(plain).not.toBeNull();
      expect(Buffer.from(plain?.bytes ?? []).toString("utf8")).toBe(Buffer.from(serializeEvent(event)).toString("utf8"));
      expect(plain?.event).toEqual(parseEvent(plain?.bytes ?? new Uint8Array()));
      expect(Object.isFrozen(plain?.event)).toBe(true);
    }
  });

  it("writes normalised instants, as serializeEvent does", () => {
    const event = fired(3, "2026-05-01T02:00:00+02:00", { timerId: "t", scheduledFor: "2026-05-01T00:00:00Z", firedAt: "2026-05-01T00:00:00.5Z" });
    expect(Buffer.from(serializePlainTimerFired(event)?.bytes ?? []).toString("utf8")).toBe(Buffer.from(serializeEvent(event)).toString("utf8"));
  });

  it("leaves any other shape to serializeEvent (null)", () => {
    expect(serializePlainTimerFired({ seq: 1, type: "TimerSet", at: "2026-05-01T00:00:00.000Z", data: { timerId: "t", fireAt: "2026-05-01T00:00:00.000Z" } } as RunEvent)).toBeNull();
    expect(serializePlainTimerFired(fired(1, "2026-05-01T00:00:00.000Z", { timerId: "t", scheduledFor: "2026-05-01T00:00:00.000Z", firedAt: "2026-05-01T00:00:00.000Z", jitteredFor: "2026-05-01T00:00:00.000Z" }))).toBeNull();
    expect(serializePlainTimerFired(fired(1, "2026-05-01T00:00:00.000Z", { scheduledFor: "2026-05-01T00:00:00.000Z", timerId: "t", firedAt: "2026-05-01T00:00:00.000Z" }))).toBeNull();
    // Keys in another order: serializeEvent keeps that order, so the template does not apply.
    expect(serializePlainTimerFired({ seq: 7, ...newTimerFired({ timerId: "t", scheduledFor: "2026-05-01T00:00:00.000Z", firedAt: "2026-05-01T00:00:00.000Z" }, "2026-05-01T00:00:00.000Z") } as RunEvent)).toBeNull();
    expect(serializePlainTimerFired({ seq: 1, type: "TimerFired", data: { timerId: "t", scheduledFor: "2026-05-01T00:00:00.000Z", firedAt: "2026-05-01T00:00:00.000Z" } } as RunEvent)).toBeNull();
  });

  it("checks the fields and the size limit with serializeEvent's codes", () => {
    const ok = { timerId: "t", scheduledFor: "2026-05-01T00:00:00.000Z", firedAt: "2026-05-01T00:00:00.000Z" };
    expect(codeOf(() => serializePlainTimerFired(fired(1, "2026-05-01T00:00:00.000Z", { ...ok, timerId: "bad id" })))).toBe("id_invalid");
    expect(codeOf(() => serializePlainTimerFired(fired(1, "2026-05-01T00:00:00.000Z", { ...ok, scheduledFor: "2026-02-30T00:00:00Z" })))).toBe("time_invalid");
    expect(codeOf(() => serializePlainTimerFired(fired(1, "2026-05-01T00:00:00", ok)))).toBe("time_invalid");
    expect(codeOf(() => serializePlainTimerFired(fired(-1, "2026-05-01T00:00:00.000Z", ok)))).toBe("event_invalid");
    expect(codeOf(() => serializePlainTimerFired(fired(1, "2026-05-01T00:00:00.000Z", ok), { maxEventBytes: 50 }))).toBe("payload_too_large");
    expect(codeOf(() => serializeEvent(fired(1, "2026-05-01T00:00:00.000Z", ok), { maxEventBytes: 50 }))).toBe("payload_too_large");
  });

  it("gives the same bytes, event and errors when the event comes as its four fields (serializePlainTimerFiredOf)", () => {
    const ok = { timerId: "t-1", scheduledFor: "2026-05-01T00:00:00Z", firedAt: "2026-05-01T00:00:00.5Z" };
    for (const seq of [0, 9, 10, 99, 100, 123_456, 2 ** 40]) {
      const whole = serializePlainTimerFired(fired(seq, "2026-05-01T02:00:00+02:00", ok));
      const fields = serializePlainTimerFiredOf(seq, "TimerFired", "2026-05-01T02:00:00+02:00", ok);
      expect(Buffer.from(fields?.bytes ?? []).equals(Buffer.from(whole?.bytes ?? [0])), `seq ${seq}`).toBe(true);
      expect(fields?.event).toEqual(whole?.event);
      expect(Object.isFrozen(fields?.event)).toBe(true);
    }
    expect(serializePlainTimerFiredOf(1, "TimerSet", "2026-05-01T00:00:00.000Z", ok)).toBeNull();
    expect(serializePlainTimerFiredOf(1, "TimerFired", "2026-05-01T00:00:00.000Z", { ...ok, jitteredFor: "2026-05-01T00:00:00.000Z" })).toBeNull();
    expect(codeOf(() => serializePlainTimerFiredOf(1, "TimerFired", "2026-05-01T00:00:00", ok))).toBe("time_invalid");
    expect(codeOf(() => serializePlainTimerFiredOf(1, "TimerFired", "2026-05-01T00:00:00.000Z", { ...ok, timerId: "bad id" }))).toBe("id_invalid");
    expect(codeOf(() => serializePlainTimerFiredOf(-1, "TimerFired", "2026-05-01T00:00:00.000Z", ok))).toBe("event_invalid");
    expect(codeOf(() => serializePlainTimerFiredOf(1, "TimerFired", "2026-05-01T00:00:00.000Z", ok, { maxEventBytes: 50 }))).toBe("payload_too_large");
  });
  it("lays out each event from its own instants when consecutive events share some and differ in others (the kept stretches)", () => {
    const instants = ["2026-05-01T00:00:00.000Z", "2026-05-01T00:00:00.001Z", "2026-05-01T02:00:00+02:00", "2027-01-01T00:00:00Z"];
    // Every order of (at, scheduledFor, firedAt) over these instants, one after another: each
    // event's bytes must be serializeEvent's for that event, whatever the previous one was.
    let seq = 1;
    for (const at of instants) {
      for (const scheduledFor of instants) {
        for (const firedAt of instants) {
          const event = fired(seq, at, { timerId: `t-${seq}`, scheduledFor, firedAt });
          const fields = serializePlainTimerFiredOf(seq, "TimerFired", at, { timerId: `t-${seq}`, scheduledFor, firedAt });
          expect(Buffer.from(fields?.bytes ?? []).toString("utf8"), `${at} ${scheduledFor} ${firedAt}`).toBe(Buffer.from(serializeEvent(event)).toString("utf8"));
          expect(fields?.event).toEqual(parseEvent(fields?.bytes ?? new Uint8Array()));
          seq += 1;
        }
      }
    }
  });

  it("still checks an instant that follows a valid one (nothing is taken as checked unless it is the same value)", () => {
    const ok = { timerId: "t", scheduledFor: "2026-05-01T00:00:00.000Z", firedAt: "2026-05-01T00:00:00.000Z" };
    expect(serializePlainTimerFiredOf(1, "TimerFired", "2026-05-01T00:00:00.000Z", ok)).not.toBeNull();
    expect(codeOf(() => serializePlainTimerFiredOf(2, "TimerFired", "2026-05-01T00:00:00", ok))).toBe("time_invalid");
    expect(codeOf(() => serializePlainTimerFiredOf(2, "TimerFired", undefined as unknown as string, ok))).toBe("time_invalid");
    expect(codeOf(() => serializePlainTimerFiredOf(2, "TimerFired", "2026-05-01T00:00:00.000Z", { ...ok, scheduledFor: "2026-02-30T00:00:00.000Z" }))).toBe("time_invalid");
    expect(codeOf(() => serializePlainTimerFiredOf(2, "TimerFired", "2026-05-01T00:00:00.000Z", { ...ok, scheduledFor: 5 }))).toBe("time_invalid");
    expect(codeOf(() => serializePlainTimerFiredOf(2, "TimerFired", "2026-05-01T00:00:00.000Z", { ...ok, firedAt: "2026-13-01T00:00:00.000Z" }))).toBe("time_invalid");
    // The failed values were not kept: the valid ones still pass after them.
    expect(serializePlainTimerFiredOf(3, "TimerFired", "2026-05-01T00:00:00.000Z", ok)).not.toBeNull();
    expect(codeOf(() => serializePlainTimerFiredOf(4, "TimerFired", "2026-05-01T00:00:00.000Z", ok, { maxEventBytes: 50 }))).toBe("payload_too_large");
  });
});
