import { describe, expect, it } from "vitest";
import { WorkflowHostError } from "../../../src/errors.js";
import { instantMs, isoFromMs, parseInstant } from "../../../src/workflow/time.js";

function errorOf(fn: () => unknown): WorkflowHostError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(WorkflowHostError);
    return error as WorkflowHostError;
  }
  throw new Error("expected a throw");
}

describe("parseInstant", () => {
  // Case I1: dates that do not exist in the calendar, and hour 24.
  it.each([
    "2026-02-30T00:00:00Z",
    "2026-02-29T00:00:00Z",
    "2026-04-31T09:00:00Z",
    "2026-13-01T00:00:00Z",
    "2026-03-08T24:00:00Z",
    "2026-00-10T00:00:00Z",
    "2026-01-00T00:00:00Z",
    "2100-02-29T00:00:00Z",
    "2026-01-01T00:60:00Z",
  ])("rejects %s with time_invalid naming the field", (value) => {
    const error = errorOf(() => parseInstant(value, "fireAt"));
    expect(error.code).toBe("time_invalid");
    expect(error.data).toEqual({ field: "fireAt", value });
  });

  it("accepts leap days of leap years", () => {
    expect(parseInstant("2028-02-29T00:00:00Z", "fireAt")).toBe("2028-02-29T00:00:00.000Z");
    expect(parseInstant("2000-02-29T12:00:00Z", "fireAt")).toBe("2000-02-29T12:00:00.000Z");
  });

  // Case I2: an offset is required; with one, the result does not depend on the process zone.
  it.each(["2026-03-08T02:30:00", "2026-03-08", "2026-03-08T02:30Z", "2026-03-08T02:30:00+0500", "2026-03-08T02:30:00+05"])(
    "rejects %s (no offset or not RFC 3339)",
    (value) => {
      expect(errorOf(() => parseInstant(value, "fireAt")).code).toBe("time_invalid");
    },
  );

  it("normalises Z and numeric offsets to the same UTC instant", () => {
    expect(parseInstant("2026-03-08T07:30:00Z", "fireAt")).toBe("2026-03-08T07:30:00.000Z");
    expect(parseInstant("2026-03-08T02:30:00-05:00", "fireAt")).toBe("2026-03-08T07:30:00.000Z");
    expect(parseInstant("2026-03-08T09:00:00+01:30", "fireAt")).toBe("2026-03-08T07:30:00.000Z");
    expect(parseInstant("2026-03-08T07:30:00-00:00", "fireAt")).toBe("2026-03-08T07:30:00.000Z");
  });

  it("accepts a lower-case t and z and a space separator (RFC 3339 §5.6)", () => {
    expect(parseInstant("2026-03-08t07:30:00z", "at")).toBe("2026-03-08T07:30:00.000Z");
    expect(parseInstant("2026-03-08 07:30:00Z", "at")).toBe("2026-03-08T07:30:00.000Z");
  });

  it("truncates fractional seconds of any length to milliseconds", () => {
    expect(parseInstant("2026-03-08T07:30:00.5Z", "at")).toBe("2026-03-08T07:30:00.500Z");
    expect(parseInstant("2026-03-08T07:30:00.123456789Z", "at")).toBe("2026-03-08T07:30:00.123Z");
    expect(parseInstant("2026-03-08T07:30:59.9999Z", "at")).toBe("2026-03-08T07:30:59.999Z");
    expect(errorOf(() => parseInstant("2026-03-08T07:30:00.Z", "at")).code).toBe("time_invalid");
  });

  it("rejects a leap second, which a JavaScript Date cannot represent", () => {
    expect(errorOf(() => parseInstant("2016-12-31T23:59:60Z", "at")).code).toBe("time_invalid");
  });

  it("accepts offsets up to ±23:59 and rejects larger ones", () => {
    expect(parseInstant("2026-03-08T23:59:00+23:59", "at")).toBe("2026-03-08T00:00:00.000Z");
    expect(parseInstant("2026-03-08T00:00:00-23:59", "at")).toBe("2026-03-08T23:59:00.000Z");
    expect(errorOf(() => parseInstant("2026-03-08T00:00:00+24:00", "at")).code).toBe("time_invalid");
    expect(errorOf(() => parseInstant("2026-03-08T00:00:00+05:60", "at")).code).toBe("time_invalid");
  });

  it("reads years 0000-0099 literally and keeps results within 0000-9999", () => {
    expect(parseInstant("0050-06-01T00:00:00Z", "at")).toBe("0050-06-01T00:00:00.000Z");
    expect(parseInstant("9999-12-31T23:59:59.999Z", "at")).toBe("9999-12-31T23:59:59.999Z");
    expect(errorOf(() => parseInstant("0000-01-01T00:00:00+01:00", "at")).code).toBe("time_invalid");
    expect(errorOf(() => parseInstant("9999-12-31T23:00:00-01:00", "at")).code).toBe("time_invalid");
  });

  it.each([undefined, null, 1_700_000_000_000, new Date(0), " 2026-03-08T07:30:00Z", "2026-03-08T07:30:00Z\n", "２０２６-03-08T07:30:00Z"])(
    "rejects %j",
    (value) => {
      expect(errorOf(() => parseInstant(value, "at")).code).toBe("time_invalid");
    },
  );
});

describe("instantMs and isoFromMs", () => {
  it("convert between instants and epoch milliseconds", () => {
    expect(instantMs("2026-03-08T02:30:00-05:00")).toBe(Date.UTC(2026, 2, 8, 7, 30));
    expect(isoFromMs(Date.UTC(2026, 2, 8, 7, 30))).toBe("2026-03-08T07:30:00.000Z");
    expect(errorOf(() => isoFromMs(Number.NaN)).code).toBe("time_invalid");
    expect(errorOf(() => instantMs("soon")).code).toBe("time_invalid");
  });
});
