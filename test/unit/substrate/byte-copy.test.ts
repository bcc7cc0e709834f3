import { describe, expect, it } from "vitest";
import { copyBytes, writeAsciiChars } from "../../../src/substrate/byte-copy.js";

describe("copyBytes", () => {
  it("copies a range of a buffer or a plain Uint8Array, short and long, as Buffer.copy does", () => {
    for (const length of [0, 1, 20, 511, 512, 513, 4_000]) {
      const bytes = Uint8Array.from({ length: length + 40 }, (_, i) => (i * 7 + 3) & 0xff);
      for (const source of [bytes, Buffer.from(bytes)]) {
        const target = Buffer.alloc(length + 60, 0xee);
        const expected = Buffer.alloc(length + 60, 0xee);
        Buffer.from(bytes).copy(expected, 10, 17, 17 + length);
        expect(copyBytes(source, 17, 17 + length, target, 10)).toBe(length);
        expect(target.equals(expected), `length ${length}`).toBe(true);
      }
    }
  });
});

describe("writeAsciiChars", () => {
  it("writes printable ASCII names and ids as Buffer.write(latin1) does, at an offset, touching nothing else", () => {
    const printable = String.fromCharCode(...Array.from({ length: 0x7f - 0x20 }, (_, i) => 0x20 + i));
    for (const text of ["", "a", "10.json", "x.y:z-w_v", "T".repeat(256), printable]) {
      const target = Buffer.alloc(text.length + 20, 0xee);
      const expected = Buffer.alloc(text.length + 20, 0xee);
      expected.write(text, 7, "latin1");
      expect(writeAsciiChars(text, target, 7)).toBe(text.length);
      expect(target.equals(expected), JSON.stringify(text)).toBe(true);
    }
  });
});
