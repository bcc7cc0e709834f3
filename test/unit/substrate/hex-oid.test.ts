/**
 * The object-id check the committed reads and the object store make (hex-oid.ts) accepts
 * exactly what `^[0-9a-f]{40}$` accepts.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isHexOid } from "../../../src/substrate/hex-oid.js";

const OID = /^[0-9a-f]{40}$/;
const HEX = "0123456789abcdef";

describe("isHexOid", () => {
  it("accepts 40 lowercase hex digits and nothing else", () => {
    expect(isHexOid("0123456789abcdef0123456789abcdef01234567")).toBe(true);
    expect(isHexOid("0123456789ABCDEF0123456789abcdef01234567")).toBe(false);
    expect(isHexOid("0123456789abcdef0123456789abcdef0123456")).toBe(false);
    expect(isHexOid("0123456789abcdef0123456789abcdef012345678")).toBe(false);
    expect(isHexOid("0123456789abcdef0123456789abcdef0123456g")).toBe(false);
    expect(isHexOid("0123456789abcdef0123456789abcdef0123456\n")).toBe(false);
    expect(isHexOid(`${"a".repeat(40)}\n`)).toBe(false);
    for (const value of [undefined, null, 40, {}, ["a".repeat(40)]]) expect(isHexOid(value)).toBe(false);
  });

  it("agrees with the regular expression on strings near an oid", () => {
    // Mostly hex digits, with the characters just outside each range ("/", ":", "`", "g") and others mixed in.
    const char = fc.oneof(fc.constantFrom(...HEX), fc.constantFrom("/", ":", "`", "g", "A", "F", "G", " ", "é", "\u0000"));
    const nearOid = fc.array(char, { minLength: 38, maxLength: 42 }).map((cs) => cs.join(""));
    fc.assert(
      fc.property(fc.oneof(nearOid, fc.string()), (value) => {
        expect(isHexOid(value)).toBe(OID.test(value));
      }),
      { numRuns: 5_000 },
    );
  });
});
