/**
 * A `delayMs` that cannot become a fire time is `time_invalid` about the delay the caller gave,
 * not about the instant computed from it: `data` names `delayMs` and holds the given value (a
 * fractional 1.5 was reported as "delayMs 1796164626475.5 is not a valid instant").
 */
import { describe, expect, it } from "vitest";
import { isWorkflowHostError } from "../../../src/errors.js";
import { resolveTimerSpec } from "../../../src/workflow/timer-spec.js";

const NOW_MS = Date.parse("2026-12-01T00:00:00Z");

function refusal(delayMs: number): { code: string; data: Record<string, unknown> } {
  try {
    resolveTimerSpec({ timerId: "t", delayMs }, NOW_MS);
  } catch (error) {
    if (isWorkflowHostError(error)) return { code: error.code, data: error.data };
    throw error;
  }
  throw new Error(`delayMs ${delayMs} was accepted`);
}

describe("delayMs that cannot become a fire time", () => {
  it.each([1.5, 0.25, 1e300, 9_007_199_254_740_993, 253_402_300_800_000])("refuses %s as time_invalid naming the delay as given", (delayMs) => {
    expect(refusal(delayMs)).toEqual({ code: "time_invalid", data: { field: "delayMs", value: delayMs } });
  });

  it("accepts whole milliseconds up to the last instant of year 9999", () => {
    const last = Date.parse("9999-12-31T23:59:59.999Z") - NOW_MS;
    expect(resolveTimerSpec({ timerId: "t", delayMs: last }, NOW_MS).fireAt).toBe("9999-12-31T23:59:59.999Z");
    expect(resolveTimerSpec({ timerId: "t", delayMs: 0 }, NOW_MS).fireAt).toBe("2026-12-01T00:00:00.000Z");
  });
});

describe("misfire without cron", () => {
  it("is refused for a one-shot, as timezone is (the HTTP API wrote misfire into one-shot TimerSets; the CLI refused it)", () => {
    for (const spec of [{ timerId: "t", delayMs: 1_000, misfire: "all" }, { timerId: "t", fireAt: "2026-12-02T00:00:00Z", misfire: "skip" }] as const) {
      let code = "accepted";
      try {
        resolveTimerSpec(spec, NOW_MS);
      } catch (error) {
        code = isWorkflowHostError(error) ? `${error.code} ${String(error.data["field"])}` : String(error);
      }
      expect(code).toBe("event_invalid misfire");
    }
    expect(resolveTimerSpec({ timerId: "t", cron: "0 * * * *", misfire: "all" }, NOW_MS).misfire).toBe("all");
  });
});
