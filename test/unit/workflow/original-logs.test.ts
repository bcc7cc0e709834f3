/**
 * Events as the original system writes them: its timer envelope declares the optional fields
 * `stepId`, `cron`, `timezone` and `misfire` as `string | null`.
 */
import { describe, expect, it } from "vitest";
import { checkCompactedLog } from "../../../src/workflow/compacted-log.js";
import { parseEvent, serializeEvent } from "../../../src/workflow/events.js";
import { reduceRunState } from "../../../src/workflow/run-state.js";
import type { RunEvent } from "../../../src/workflow/types.js";

const enc = (text: string): Uint8Array => new TextEncoder().encode(text);
const withNulls = { seq: 0, type: "TimerSet", data: { timerId: "a", fireAt: "2026-05-01T10:00:00Z", stepId: null, cron: null, timezone: null, misfire: null } };

describe("null optional timer fields", () => {
  it("reads null stepId, cron, timezone and misfire as absent", () => {
    const event = parseEvent(JSON.stringify(withNulls), { expectedSeq: 0 });
    expect(event).toEqual({ seq: 0, type: "TimerSet", data: { timerId: "a", fireAt: "2026-05-01T10:00:00.000Z" } });
    const state = reduceRunState("r", [event]);
    expect(state.pendingTimers.get("a")).toEqual({ timerId: "a", fireAt: "2026-05-01T10:00:00.000Z", setSeq: 0 });
  });

  it("keeps a series whose zone and misfire are null on UTC and the default policy", () => {
    const event = parseEvent(JSON.stringify({ ...withNulls, data: { ...withNulls.data, cron: "0 * * * *" } }));
    expect(reduceRunState("r", [event]).pendingTimers.get("a")).toMatchObject({ cron: "0 * * * *", timezone: "UTC" });
    expect((event as { data: Record<string, unknown> }).data).not.toHaveProperty("misfire");
  });

  it("writes events without the nulls", () => {
    expect(new TextDecoder().decode(serializeEvent(withNulls as unknown as RunEvent))).toBe('{"seq":0,"type":"TimerSet","data":{"timerId":"a","fireAt":"2026-05-01T10:00:00.000Z"}}');
  });

  it("still refuses null where a value is required, and checks the other fields", () => {
    expect(() => parseEvent(JSON.stringify({ ...withNulls, data: { ...withNulls.data, timerId: null } }))).toThrow(expect.objectContaining({ code: "event_invalid" }));
    expect(() => parseEvent(JSON.stringify({ ...withNulls, data: { ...withNulls.data, cron: "0 * * * *", timezone: "Mars/Olympus" } }))).toThrow(expect.objectContaining({ code: "cron_invalid" }));
    expect(() => parseEvent(JSON.stringify({ ...withNulls, data: { ...withNulls.data, stepId: "../x" } }))).toThrow(expect.objectContaining({ code: "id_invalid" }));
  });
});

describe("checkCompactedLog", () => {
  const line = (event: object): string => `${JSON.stringify(event)}\n`;
  it("accepts a whole ended log, from seq 0 or 1", () => {
    for (const first of [0, 1]) {
      const bytes = enc(line({ seq: first, type: "StepDone" }) + line({ seq: first + 1, type: "RunFailed" }));
      expect(checkCompactedLog("r", bytes).problem).toBeNull();
    }
  });

  it("names the line that breaks it", () => {
    const cases: [string, number | null][] = [
      ["", null],
      [line({ seq: 1, type: "RunCompleted" }).trimEnd(), null],
      [line({ seq: 1, type: "StepDone" }) + line({ seq: 3, type: "RunCompleted" }), 3],
      [line({ seq: 2, type: "RunCompleted" }), 2],
      [line({ seq: 1, type: "RunCompleted" }) + line({ seq: 2, type: "StepDone" }), 2],
      [line({ seq: 1, type: "StepDone" }), null],
      [`{"seq":1,\n`, null],
    ];
    for (const [text, seq] of cases) {
      const { problem, events } = checkCompactedLog("r", enc(text));
      expect({ text, path: problem?.path, seq: problem?.seq, code: problem?.error.code, events }).toEqual({ text, path: "runs/r/events.jsonl", seq, code: "event_invalid", events: [] });
    }
  });
});
