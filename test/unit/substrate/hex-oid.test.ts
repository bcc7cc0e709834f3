/**
 * The object-id check the committed reads and the object store make (hex-oid.ts) accepts
 * exactly what `^[0-9a-f]{40}$` accepts; the oid writer takes the same strings and writes the
 * bytes `Buffer.write(hex, at, 20, "hex")` writes.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isHexOid, writeHexOid } from "../../../src/substrate/hex-oid.js";

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

describe("writeHexOid", () => {
  it("writes an oid's 20 bytes where it is told, and nothing around them", () => {
    const out = Buffer.alloc(30, 0xee);
    expect(writeHexOid("00ff10a9b8c7d6e5f4030201fedcba9876543210", out, 5)).toBe(true);
    expect(out.subarray(5, 25).toString("hex")).toBe("00ff10a9b8c7d6e5f4030201fedcba9876543210");
    expect(out.subarray(0, 5).equals(Buffer.alloc(5, 0xee))).toBe(true);
    expect(out.subarray(25).equals(Buffer.alloc(5, 0xee))).toBe(true);
  });

  it("declines what is not 40 lowercase hex digits: upper case, other lengths, a wide char whose low byte is a digit", () => {
    const out = Buffer.alloc(20);
    const oid = "0123456789abcdef0123456789abcdef01234567";
    expect(writeHexOid(oid.toUpperCase(), out, 0)).toBe(false);
    expect(writeHexOid(oid.slice(1), out, 0)).toBe(false);
    expect(writeHexOid(`${oid}0`, out, 0)).toBe(false);
    expect(writeHexOid(`${oid.slice(0, 39)}g`, out, 0)).toBe(false);
    // U+0130 and U+0161: their low bytes are "0" and "a".
    expect(writeHexOid(`\u0130${oid.slice(1)}`, out, 0)).toBe(false);
    expect(writeHexOid(`${oid.slice(0, 39)}\u0161`, out, 0)).toBe(false);
  });

  it("agrees with isHexOid on strings near an oid, and with Buffer.write's bytes where it takes one", () => {
    const char = fc.oneof(fc.constantFrom(...HEX), fc.constantFrom("/", ":", "`", "g", "@", "A", "F", "G", " ", "é", "\u0000", "\u0130", "\u0161"));
    const nearOid = fc.array(char, { minLength: 39, maxLength: 41 }).map((cs) => cs.join(""));
    const hexOid = fc.array(fc.constantFrom(...HEX), { minLength: 40, maxLength: 40 }).map((cs) => cs.join(""));
    fc.assert(
      fc.property(fc.oneof(hexOid, nearOid, fc.string()), fc.nat(12), (value, at) => {
        const out = Buffer.alloc(40);
        const taken = writeHexOid(value, out, at);
        expect(taken).toBe(OID.test(value));
        if (taken) {
          const expected = Buffer.alloc(40);
          expected.write(value, at, 20, "hex");
          expect(out.equals(expected)).toBe(true);
        }
      }),
      { numRuns: 5_000 },
    );
  });
});
