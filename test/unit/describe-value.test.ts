/** Error messages name the bad value as given: a non-finite number is not shown as JSON's null. */
import { describe, expect, it } from "vitest";
import { describeValue } from "../../src/errors.js";

describe("describeValue", () => {
  it.each([
    [Number.POSITIVE_INFINITY, "Infinity"],
    [Number.NEGATIVE_INFINITY, "-Infinity"],
    [Number.NaN, "NaN"],
    [null, "null"],
    [1.5, "1.5"],
  ])("shows %s as %s", (value, shown) => {
    expect(describeValue(value)).toBe(shown);
  });
});
