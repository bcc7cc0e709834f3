import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { WorkflowHostError } from "../../../src/errors.js";
import { parseInstant } from "../../../src/workflow/time.js";

/** The result, or the error code. */
function outcome(value: string): string {
  try {
    return parseInstant(value, "at");
  } catch (error) {
    if (error instanceof WorkflowHostError) return `error:${error.code}`;
    throw error;
  }
}

const digits = (n: number, max = 9): fc.Arbitrary<string> => fc.array(fc.integer({ min: 0, max }), { minLength: n, maxLength: n }).map((d) => d.join(""));

describe("parseInstant on the stored form", () => {
  it("agrees with the field-by-field checks for every string of the stored shape", () => {
    // `…Z` takes the stored-form path; the same instant written `…+00:00` never does.
    const stored = fc
      .tuple(digits(4), digits(2, 3), digits(2, 3), digits(2, 2), digits(2, 6), digits(2, 6), digits(3))
      .map(([y, mo, d, h, mi, s, ms]) => `${y}-${mo}-${d}T${h}:${mi}:${s}.${ms}`);
    fc.assert(
      fc.property(stored, (prefix) => {
        expect(outcome(`${prefix}Z`)).toBe(outcome(`${prefix}+00:00`));
      }),
      { numRuns: 5_000 },
    );
  });

  it("returns every stored instant as it is", () => {
    fc.assert(
      fc.property(fc.integer({ min: Date.parse("0000-01-01T00:00:00.000Z"), max: Date.parse("9999-12-31T23:59:59.999Z") }), (ms) => {
        const iso = new Date(ms).toISOString();
        fc.pre(iso.length === 24);
        expect(parseInstant(iso, "at")).toBe(iso);
      }),
    );
  });

  it("refuses calendar dates and times that do not exist", () => {
    for (const value of ["2026-02-29T00:00:00.000Z", "2026-04-31T00:00:00.000Z", "2026-01-01T24:00:00.000Z", "2026-06-30T23:59:60.000Z"]) {
      expect(outcome(value)).toBe("error:time_invalid");
    }
  });
});
