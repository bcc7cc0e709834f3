/**
 * How deep an event may nest. An event nested a few thousand levels deep was accepted on write
 * (the check was whether `JSON.stringify` managed it where the check ran) and, when pushed with
 * git, on read; every reader that serialises it again from a deeper stack (`runs show`, the
 * HTTP run view, the dispatch body) then overflowed the stack and the whole run became
 * unreadable. One limit, MAX_EVENT_DEPTH levels of objects and arrays counting the event
 * itself, now holds on write and on read, for every event type.
 */
import { describe, expect, it } from "vitest";
import { parseEvent, serializeEvent } from "../../../src/workflow/events.js";
import { assertJsonValue, MAX_EVENT_DEPTH } from "../../../src/workflow/json-value.js";
import type { RunEvent } from "../../../src/workflow/types.js";
import { expectCode } from "../../helpers/expect-code.js";

/** Arrays nested `depth` levels deep: `[]` is 1, `[[]]` is 2. */
function nested(depth: number): unknown {
  let value: unknown = [];
  for (let i = 1; i < depth; i += 1) value = [value];
  return value;
}

const signal = (payload: unknown): RunEvent =>
  ({ seq: 2, type: "SignalReceived", signalName: "approve", signalId: "s-1", at: "2026-01-01T00:00:00Z", payload }) as unknown as RunEvent;
const signalText = (depth: number): string =>
  `{"seq":2,"type":"SignalReceived","signalName":"approve","signalId":"s-1","at":"2026-01-01T00:00:00Z","payload":${"[".repeat(depth)}${"]".repeat(depth)}}`;
const ownEventText = (depth: number): string => `{"seq":2,"type":"StepDone","result":${"[".repeat(depth)}${"]".repeat(depth)}}`;

describe("the nesting limit of an event", () => {
  it("is a few hundred levels, far below where serialising again overflows the stack", () => {
    expect(MAX_EVENT_DEPTH).toBeGreaterThanOrEqual(256);
    expect(MAX_EVENT_DEPTH).toBeLessThanOrEqual(1_000);
  });

  it("refuses on write a payload nested 3,000 deep (event_invalid), which JSON.stringify still managed", () => {
    expect(() => JSON.stringify(nested(3_000))).not.toThrow();
    expectCode(() => serializeEvent(signal(nested(3_000))), "event_invalid");
    expectCode(() => assertJsonValue(nested(3_000), "payload"), "event_invalid");
  });

  it("accepts on write a payload that brings the event exactly to the limit, and reads it back", () => {
    // The event object is one level, the payload the rest.
    const bytes = serializeEvent(signal(nested(MAX_EVENT_DEPTH - 1)));
    const back = parseEvent(bytes, { expectedSeq: 2 }) as unknown as { payload: unknown };
    expect(back.payload).toEqual(nested(MAX_EVENT_DEPTH - 1));
    expectCode(() => serializeEvent(signal(nested(MAX_EVENT_DEPTH))), "event_invalid");
  });

  it("refuses on read a pushed SignalReceived whose payload nests 3,000 deep, naming the path", () => {
    expectCode(() => parseEvent(signalText(3_000), { path: "runs/r/events/2.json", expectedSeq: 2 }), "event_invalid");
  });

  it("refuses on read an engine's own event type nested 3,000 deep, which was passed through unchecked", () => {
    expectCode(() => parseEvent(ownEventText(3_000), { path: "runs/r/events/2.json", expectedSeq: 2 }), "event_invalid");
  });

  it("reads events at the limit, and counts brackets inside strings as text", () => {
    expect(() => parseEvent(ownEventText(MAX_EVENT_DEPTH - 1), { expectedSeq: 2 })).not.toThrow();
    expectCode(() => parseEvent(ownEventText(MAX_EVENT_DEPTH), { expectedSeq: 2 }), "event_invalid");
    const brackets = `{"seq":2,"type":"StepDone","note":"${"[{".repeat(2_000)}\\"]"}`;
    expect((parseEvent(brackets, { expectedSeq: 2 }) as unknown as { note: string }).note).toBe(`${"[{".repeat(2_000)}"]`);
  });
});

describe("a value nested deeper than the engine's stack", () => {
  it("is refused as nested too deep, naming the limit, not with the engine's stack overflow", () => {
    const deep = { payload: nested(100_000) };
    expectCode(() => assertJsonValue(deep, "payload"), "event_invalid");
    let message = "";
    try {
      assertJsonValue(deep, "payload");
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toContain(`more than ${MAX_EVENT_DEPTH - 1} levels deep`);
    expect(message).not.toMatch(/call stack/i);
  });
});
