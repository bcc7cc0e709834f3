/**
 * `PackIndex.find` answers the same before and after it builds its lookup tables (the oids'
 * first words and their 16-bit fan-out, built after the first 64 lookups), for an oid given as
 * lowercase or uppercase hex or as raw bytes, and misses what the index does not hold,
 * including text that is not hex (read as Buffer reads hex: up to the first pair that is not).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parsePackIndex, sealPack, type EntryRecord } from "../../../src/substrate/pack-file.js";

const hex = (bytes: readonly number[]): string => Buffer.from(bytes).toString("hex");

describe("PackIndex.find", () => {
  it("finds every oid and misses the others, through its first 64 lookups and after, oids crowded on their first 16 and 32 bits", () => {
    // Few leading byte values: many oids share their first 16 bits, some their first 32.
    const oid = fc.tuple(fc.constantFrom(0, 1, 0x7f, 0x80, 0xff), fc.constantFrom(0, 7, 0xff), fc.constantFrom(0, 0xfe), fc.constantFrom(3, 0x90), fc.array(fc.integer({ min: 0, max: 255 }), { minLength: 16, maxLength: 16 })).map(([a, b, c, d, rest]) => hex([a, b, c, d, ...rest]));
    fc.assert(
      fc.property(fc.uniqueArray(oid, { minLength: 1, maxLength: 400 }), fc.array(oid, { maxLength: 40 }), (oids, probes) => {
        const entries: EntryRecord[] = oids.map((o, i) => ({ oid: o, offset: 12 + i * 10, crc: i }));
        const { idx } = sealPack(Buffer.alloc(32), 12, Buffer.alloc(20, 7), entries);
        const index = parsePackIndex("test", idx, 12 + oids.length * 10 + 20);
        const held = new Set(oids);
        // Twice round: the first pass crosses the point where the tables are built.
        for (let round = 0; round < 2; round++) {
          for (const o of oids) {
            const i = index.find(o);
            expect(index.oidAt(i)).toBe(o);
            expect(index.find(o.toUpperCase())).toBe(i);
            expect(index.find(Buffer.from(o, "hex"))).toBe(i);
          }
          for (const p of probes) if (!held.has(p)) expect(index.find(p)).toBe(-1);
          expect(index.find("zz".repeat(20))).toBe(-1);
          expect(index.find(`${oids[0] as string}`.slice(0, 38))).toBe(-1);
          // Hex up to a pair that is not: a 40-character string that is not 40 hex digits is read as Buffer reads it.
          expect(index.find(`${(oids[0] as string).slice(0, 38)}zz`)).toBe(-1);
        }
      }),
      { numRuns: 100 },
    );
  });
});
