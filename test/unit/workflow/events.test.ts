import { describe, expect, it } from "vitest";
import { WorkflowHostError } from "../../../src/errors.js";
import {
  signalConsumedEvent,
  signalReceivedEvent,
  timerCancelledEvent,
  timerFiredEvent,
  timerSetEvent,
  timerSkippedEvent,
} from "../../../src/workflow/event-constructors.js";
import { DEFAULT_MAX_EVENT_BYTES, parseEvent, serializeEvent } from "../../../src/workflow/events.js";

function errorOf(fn: () => unknown): WorkflowHostError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(WorkflowHostError);
    return error as WorkflowHostError;
  }
  throw new Error("expected a throw");
}

const json = (value: unknown): string => JSON.stringify(value);
const decode = (bytes: Uint8Array): string => new TextDecoder().decode(bytes);

const valid = {
  TimerSet: { seq: 1, type: "TimerSet", at: "2026-05-01T10:00:00Z", data: { timerId: "t1", fireAt: "2026-05-01T12:00:00+02:00", stepId: "s.1" } },
  CronTimerSet: { seq: 1, type: "TimerSet", data: { timerId: "c5", fireAt: "2026-05-01T10:00:00Z", cron: "*/5 * * * *", timezone: "Europe/Rome", misfire: "all" } },
  TimerFired: { seq: 2, type: "TimerFired", data: { timerId: "t1", scheduledFor: "2026-05-01T10:00:00Z", firedAt: "2026-05-01T10:00:00.120Z" } },
  TimerSkipped: { seq: 3, type: "TimerSkipped", data: { timerId: "c5", firstMissed: "2026-05-01T10:05:00Z", lastMissed: "2026-05-01T11:00:00Z", count: 12, reason: "missed" } },
  TimerCancelled: { seq: 4, type: "TimerCancelled", data: { timerId: "t1", reason: "user" } },
  SignalReceived: { seq: 5, type: "SignalReceived", signalName: "approve", signalId: "s-1", payload: { ok: true }, at: "2026-05-01T10:00:00Z" },
  SignalConsumed: { seq: 6, type: "SignalConsumed", data: { signalId: "s-1", stepId: "wait" } },
  RunCompleted: { seq: 7, type: "RunCompleted", at: "2026-05-01T10:00:00Z", result: { any: "thing" } },
  RunFailed: { seq: 7, type: "RunFailed", error: "boom" },
  RunCancelled: { seq: 7, type: "RunCancelled" },
  Other: { seq: 8, type: "StepStarted", stepId: "whatever goes", nested: { a: [1, 2] } },
} as const;

describe("parseEvent: valid events", () => {
  it.each(Object.entries(valid))("accepts %s", (_name, event) => {
    const parsed = parseEvent(json(event));
    expect(parsed.seq).toBe(event.seq);
    expect(parsed.type).toBe(event.type);
  });

  it("normalises instants and keeps every other field", () => {
    expect(parseEvent(json(valid.TimerSet))).toEqual({
      seq: 1,
      type: "TimerSet",
      at: "2026-05-01T10:00:00.000Z",
      data: { timerId: "t1", fireAt: "2026-05-01T10:00:00.000Z", stepId: "s.1" },
    });
    expect(parseEvent(json({ ...valid.TimerCancelled, data: { ...valid.TimerCancelled.data, extra: 1 } }))).toMatchObject({ data: { extra: 1 } });
  });

  it("passes unknown event types through untouched", () => {
    expect(parseEvent(json(valid.Other))).toEqual(valid.Other);
  });

  it("reads the original system's TimerFired without scheduledFor and firedAt, at seq 0", () => {
    expect(parseEvent(json({ seq: 0, type: "TimerFired", data: { timerId: "t1" } }))).toEqual({ seq: 0, type: "TimerFired", data: { timerId: "t1" } });
  });

  it("accepts bytes as well as text", () => {
    expect(parseEvent(new TextEncoder().encode(json(valid.SignalReceived)))).toMatchObject({ signalId: "s-1", payload: { ok: true } });
  });
});

describe("parseEvent: invalid events", () => {
  it.each([
    ["bad JSON (case G3)", '{"type":"TimerSet",}'],
    ["not an object", "[1,2]"],
    ["null", "null"],
    ["missing seq", json({ type: "TimerSet" })],
    ["negative seq", json({ seq: -1, type: "X" })],
    ["fractional seq", json({ seq: 1.5, type: "X" })],
    ["string seq", json({ seq: "1", type: "X" })],
    ["unsafe seq", json({ seq: 2 ** 60, type: "X" })],
    ["empty type", json({ seq: 1, type: "" })],
    ["TimerSet without data", json({ seq: 1, type: "TimerSet" })],
    ["TimerSet without fireAt", json({ seq: 1, type: "TimerSet", data: { timerId: "t" } })],
    ["TimerSet with a numeric fireAt", json({ seq: 1, type: "TimerSet", data: { timerId: "t", fireAt: 1 } })],
    ["TimerSet with an unknown misfire", json({ seq: 1, type: "TimerSet", data: { timerId: "t", fireAt: "2026-05-01T10:00:00Z", misfire: "never" } })],
    ["TimerFired without timerId", json({ seq: 1, type: "TimerFired", data: {} })],
    ["TimerSkipped with count 0", json({ ...valid.TimerSkipped, data: { ...valid.TimerSkipped.data, count: 0 } })],
    ["TimerSkipped with another reason", json({ ...valid.TimerSkipped, data: { ...valid.TimerSkipped.data, reason: "late" } })],
    ["TimerSkipped with last before first", json({ ...valid.TimerSkipped, data: { ...valid.TimerSkipped.data, lastMissed: "2026-05-01T10:00:00Z" } })],
    ["TimerSkipped with count 1 over a range", json({ ...valid.TimerSkipped, data: { ...valid.TimerSkipped.data, count: 1 } })],
    ["TimerCancelled with a numeric reason", json({ seq: 1, type: "TimerCancelled", data: { timerId: "t", reason: 3 } })],
    ["SignalReceived without payload", json({ seq: 1, type: "SignalReceived", signalName: "a", signalId: "b", at: "2026-05-01T10:00:00Z" })],
    ["SignalReceived without at", json({ seq: 1, type: "SignalReceived", signalName: "a", signalId: "b", payload: 1 })],
    ["SignalConsumed without signalId", json({ seq: 1, type: "SignalConsumed", data: {} })],
    ["RunCompleted with a numeric at", json({ seq: 1, type: "RunCompleted", at: 5 })],
  ])("rejects %s with event_invalid", (_name, text) => {
    expect(errorOf(() => parseEvent(text, { path: "runs/r/events/1.json" })).code).toBe("event_invalid");
  });

  it("puts arktype's summary in the message and the path and seq in data", () => {
    const error = errorOf(() => parseEvent(json({ seq: 4, type: "TimerSet", data: { timerId: 3 } }), { path: "runs/r/events/4.json" }));
    expect(error.code).toBe("event_invalid");
    expect(error.message).toContain("data.timerId must be a string");
    expect(error.data).toMatchObject({ path: "runs/r/events/4.json", seq: 4 });
  });

  it("rejects invalid UTF-8", () => {
    expect(errorOf(() => parseEvent(new Uint8Array([0x7b, 0xff, 0x7d]))).code).toBe("event_invalid");
  });

  it("rejects a body seq that differs from the file name's", () => {
    const error = errorOf(() => parseEvent(json(valid.TimerCancelled), { path: "runs/r/events/5.json", expectedSeq: 5 }));
    expect(error.code).toBe("event_invalid");
    expect(error.data).toMatchObject({ path: "runs/r/events/5.json", seq: 4, expectedSeq: 5 });
  });

  it.each([
    ["timerId", { ...valid.TimerSet, data: { ...valid.TimerSet.data, timerId: "../x" } }, "id_invalid", "data.timerId"],
    ["stepId", { ...valid.TimerSet, data: { ...valid.TimerSet.data, stepId: ".x" } }, "id_invalid", "data.stepId"],
    ["fireAt", { ...valid.TimerSet, data: { ...valid.TimerSet.data, fireAt: "2026-02-30T00:00:00Z" } }, "time_invalid", "data.fireAt"],
    ["fireAt without offset", { ...valid.TimerSet, data: { ...valid.TimerSet.data, fireAt: "2026-03-08T02:30:00" } }, "time_invalid", "data.fireAt"],
    ["at", { ...valid.TimerSet, at: "yesterday" }, "time_invalid", "at"],
    ["cron without ticks", { ...valid.CronTimerSet, data: { ...valid.CronTimerSet.data, cron: "0 0 30 2 *" } }, "cron_invalid", "data.cron"],
    ["cron zone", { ...valid.CronTimerSet, data: { ...valid.CronTimerSet.data, timezone: "America/New_Yrok" } }, "cron_invalid", "data.cron"],
    ["one-shot zone", { ...valid.TimerSet, data: { ...valid.TimerSet.data, timezone: "Mars/Olympus" } }, "time_invalid", "data.timezone"],
    ["scheduledFor", { ...valid.TimerFired, data: { ...valid.TimerFired.data, scheduledFor: "2026-04-31T09:00:00Z" } }, "time_invalid", "data.scheduledFor"],
    ["firstMissed", { ...valid.TimerSkipped, data: { ...valid.TimerSkipped.data, firstMissed: "2026-13-01T00:00:00Z" } }, "time_invalid", "data.firstMissed"],
    ["signalName", { ...valid.SignalReceived, signalName: "a/b" }, "id_invalid", "signalName"],
    ["signalId", { ...valid.SignalReceived, signalId: "" }, "id_invalid", "signalId"],
    ["consumed signalId", { ...valid.SignalConsumed, data: { signalId: ".." } }, "id_invalid", "data.signalId"],
  ])("rejects a bad %s with the field's own code", (_name, event, code, field) => {
    const error = errorOf(() => parseEvent(json(event), { path: "runs/r/events/9.json" }));
    expect(error.code).toBe(code);
    expect(error.data).toMatchObject({ field, path: "runs/r/events/9.json", seq: event.seq });
  });
});

describe("size limit", () => {
  /** A SignalReceived whose serialised form is exactly `size` bytes. */
  function signalOfSize(size: number): ReturnType<typeof signalReceivedEvent> {
    const base = signalReceivedEvent(1, { signalName: "big", signalId: "s-1", payload: "", at: "2026-05-01T10:00:00Z" });
    const overhead = serializeEvent(base).length;
    // "é" is two bytes of UTF-8: the limit counts bytes, not characters.
    const fill = size - overhead;
    const payload = "é".repeat(Math.floor(fill / 2)) + "a".repeat(fill % 2);
    return signalReceivedEvent(1, { signalName: "big", signalId: "s-1", payload, at: "2026-05-01T10:00:00Z" });
  }

  it("accepts an event of exactly the limit and rejects one byte more", () => {
    const atLimit = serializeEvent(signalOfSize(DEFAULT_MAX_EVENT_BYTES));
    expect(atLimit.length).toBe(1_048_576);
    expect(parseEvent(atLimit)).toMatchObject({ signalId: "s-1" });
    const over = signalOfSize(DEFAULT_MAX_EVENT_BYTES + 1);
    const error = errorOf(() => serializeEvent(over));
    expect(error.code).toBe("payload_too_large");
    expect(error.data).toMatchObject({ seq: 1, sizeBytes: 1_048_577, maxEventBytes: 1_048_576 });
    const text = json(over);
    expect(errorOf(() => parseEvent(text, { path: "runs/r/events/1.json" })).code).toBe("payload_too_large");
  });

  it("applies a configured limit", () => {
    const bytes = serializeEvent(valid.TimerCancelled);
    expect(parseEvent(bytes, { maxEventBytes: bytes.length })).toMatchObject({ seq: 4 });
    expect(errorOf(() => parseEvent(bytes, { maxEventBytes: bytes.length - 1 })).code).toBe("payload_too_large");
    expect(errorOf(() => serializeEvent(valid.TimerCancelled, { maxEventBytes: bytes.length - 1 })).code).toBe("payload_too_large");
  });

  it("refuses a 5 MiB signal payload (case I5)", () => {
    const event = signalReceivedEvent(1, { signalName: "big", signalId: "s-1", payload: "x".repeat(5 * 1024 * 1024), at: "2026-05-01T10:00:00Z" });
    expect(errorOf(() => serializeEvent(event)).code).toBe("payload_too_large");
  });
});

describe("serializeEvent", () => {
  it("writes compact JSON with no trailing newline, instants normalised", () => {
    const text = decode(serializeEvent(valid.TimerSet));
    expect(text).toBe('{"seq":1,"type":"TimerSet","at":"2026-05-01T10:00:00.000Z","data":{"timerId":"t1","fireAt":"2026-05-01T10:00:00.000Z","stepId":"s.1"}}');
    expect(text.endsWith("\n")).toBe(false);
  });

  it("round-trips every event type", () => {
    for (const event of Object.values(valid)) {
      expect(parseEvent(serializeEvent(event))).toEqual(parseEvent(json(event)));
    }
  });

  it.each([
    ["undefined", { a: undefined }],
    ["NaN", Number.NaN],
    ["a Date", new Date(0)],
    ["a bigint", 1n],
    ["an array hole", [1, , 3]],
    ["a Map", new Map()],
  ])("refuses a payload holding %s", (_name, payload) => {
    const event = { ...valid.SignalReceived, payload } as const;
    expect(errorOf(() => serializeEvent(event)).code).toBe("event_invalid");
  });

  it("refuses a cyclic payload", () => {
    const payload: Record<string, unknown> = {};
    payload["self"] = payload;
    expect(errorOf(() => serializeEvent({ ...valid.SignalReceived, payload })).code).toBe("event_invalid");
  });
});

describe("event constructors", () => {
  it("build validated events with normalised instants", () => {
    expect(timerSetEvent(1, { timerId: "t1", fireAt: "2026-05-01T12:00:00+02:00" })).toEqual({
      seq: 1,
      type: "TimerSet",
      data: { timerId: "t1", fireAt: "2026-05-01T10:00:00.000Z" },
    });
    expect(timerSetEvent(2, { timerId: "c", fireAt: "2026-05-01T10:00:00Z", cron: "*/5 * * * *", misfire: "skip" }, "2026-05-01T09:00:00Z")).toEqual({
      seq: 2,
      type: "TimerSet",
      at: "2026-05-01T09:00:00.000Z",
      data: { timerId: "c", fireAt: "2026-05-01T10:00:00.000Z", cron: "*/5 * * * *", misfire: "skip" },
    });
    expect(timerFiredEvent(3, { timerId: "t1", scheduledFor: "2026-05-01T10:00:00Z", firedAt: "2026-05-01T10:00:01Z" }).data).toEqual({
      timerId: "t1",
      scheduledFor: "2026-05-01T10:00:00.000Z",
      firedAt: "2026-05-01T10:00:01.000Z",
    });
    expect(timerSkippedEvent(4, { timerId: "c", firstMissed: "2026-05-01T10:05:00Z", lastMissed: "2026-05-01T11:00:00Z", count: 12 }).data).toMatchObject({
      reason: "missed",
      count: 12,
    });
    expect(timerCancelledEvent(5, { timerId: "t1" })).toEqual({ seq: 5, type: "TimerCancelled", data: { timerId: "t1" } });
    expect(signalReceivedEvent(6, { signalName: "approve", signalId: "s-1", payload: { ok: true }, at: "2026-05-01T10:00:00Z" })).toEqual({
      seq: 6,
      type: "SignalReceived",
      signalName: "approve",
      signalId: "s-1",
      payload: { ok: true },
      at: "2026-05-01T10:00:00.000Z",
    });
    expect(signalConsumedEvent(7, { signalId: "s-1", stepId: "w" })).toEqual({ seq: 7, type: "SignalConsumed", data: { signalId: "s-1", stepId: "w" } });
  });

  it("refuse what parseEvent would refuse", () => {
    expect(errorOf(() => timerSetEvent(1, { timerId: "t", fireAt: "2026-02-30T00:00:00Z" })).code).toBe("time_invalid");
    expect(errorOf(() => timerSetEvent(1, { timerId: "t", fireAt: "2026-05-01T10:00:00Z", cron: "0 0 31 4 *" })).code).toBe("cron_invalid");
    expect(errorOf(() => timerSetEvent(-1, { timerId: "t", fireAt: "2026-05-01T10:00:00Z" })).code).toBe("event_invalid");
    expect(errorOf(() => timerCancelledEvent(1, { timerId: "a/b" })).code).toBe("id_invalid");
    expect(errorOf(() => timerSkippedEvent(1, { timerId: "c", firstMissed: "2026-05-01T10:05:00Z", lastMissed: "2026-05-01T11:00:00Z", count: 0 })).code).toBe(
      "event_invalid",
    );
    expect(errorOf(() => signalReceivedEvent(1, { signalName: "a", signalId: "b", payload: undefined, at: "2026-05-01T10:00:00Z" })).code).toBe("event_invalid");
    expect(errorOf(() => signalConsumedEvent(1, { signalId: "" })).code).toBe("id_invalid");
  });
});
