import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  compactedLogPath,
  eventPath,
  parseCompactedLogPath,
  parseEventPath,
  parseEventPathName,
  runEventsPrefix,
  runsPrefix,
} from "../../../src/workflow/paths.js";

describe("run log paths", () => {
  it("builds the event folder, event file and compacted log paths", () => {
    expect(runsPrefix).toBe("runs/");
    expect(runEventsPrefix("r1")).toBe("runs/r1/events/");
    expect(eventPath("r1", 0)).toBe("runs/r1/events/0.json");
    expect(eventPath("r1", 12)).toBe("runs/r1/events/12.json");
    expect(compactedLogPath("r1")).toBe("runs/r1/events.jsonl");
  });

  it("refuses bad run ids and seqs", () => {
    expect(() => runEventsPrefix("../x")).toThrow(expect.objectContaining({ code: "id_invalid" }));
    expect(() => eventPath("r1", -1)).toThrow(RangeError);
    expect(() => eventPath("r1", 1.5)).toThrow(RangeError);
  });

  it("parses event paths with seqs written without leading zeros", () => {
    expect(parseEventPath("runs/r1/events/0.json")).toEqual({ runId: "r1", seq: 0 });
    expect(parseEventPath("runs/run-2_b/events/107.json")).toEqual({ runId: "run-2_b", seq: 107 });
    for (const bad of [
      "runs/r1/events/01.json",
      "runs/r1/events/-1.json",
      "runs/r1/events/1.JSON",
      "runs/r1/events/1.json.tmp",
      "runs/r1/events/a.json",
      "runs/r.1/events/1.json",
      "runs/r1/events/sub/1.json",
      "runs//events/1.json",
      "/runs/r1/events/1.json",
      "runs/r1/events/99999999999999999.json",
      "runs/r1/events.jsonl",
    ]) {
      expect(parseEventPath(bad)).toBeNull();
    }
  });

  it("parses event file names and compacted log paths", () => {
    expect(parseEventPathName("0.json")).toBe(0);
    expect(parseEventPathName("42.json")).toBe(42);
    expect(parseEventPathName("042.json")).toBeNull();
    expect(parseEventPathName("x.json")).toBeNull();
    expect(parseEventPathName("9007199254740991.json")).toBe(9007199254740991);
    expect(parseEventPathName("9007199254740992.json")).toBeNull();
    expect(parseEventPathName(".json")).toBeNull();
    expect(parseEventPathName("1.jsonl")).toBeNull();
    // The same rule as the pattern it is written for, on names near it.
    const pattern = /^(0|[1-9][0-9]{0,15})\.json$/;
    fc.assert(
      fc.property(fc.oneof(fc.stringMatching(/^[0-9]{0,18}\.json$/), fc.stringMatching(/^[0-9a-z.+-]{0,8}(\.json)?$/)), (name) => {
        const m = pattern.exec(name);
        const expected = m === null || !Number.isSafeInteger(Number(m[1])) ? null : Number(m[1]);
        expect(parseEventPathName(name)).toBe(expected);
      }),
    );
    expect(parseCompactedLogPath("runs/r1/events.jsonl")).toEqual({ runId: "r1" });
    expect(parseCompactedLogPath("runs/r1/events.json")).toBeNull();
  });
});
