import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { parsePackIndex, sealPack, type EntryRecord } from "../../../src/substrate/pack-file.js";

const hex = (bytes: readonly number[]): string => Buffer.from(bytes).toString("hex");

describe("pack index order", () => {
  it("lists oids in byte order with their offsets and CRCs, also when many share their first bytes and offsets pass 2 GiB", () => {
    // Oids drawn from few leading bytes, so whole runs of them tie on the first 32 (and more) bits.
    const oid = fc.tuple(fc.constantFrom(0, 1, 0xff), fc.constantFrom(7, 0x80), fc.constantFrom(0, 0xfe), fc.constantFrom(3, 0x90), fc.array(fc.integer({ min: 0, max: 255 }), { minLength: 16, maxLength: 16 })).map(([a, b, c, d, rest]) => hex([a, b, c, d, ...rest]));
    const entry = fc.record({ oid, offset: fc.oneof(fc.integer({ min: 12, max: 0x7fffffff }), fc.integer({ min: 0x80000000, max: 2 ** 40 })), crc: fc.integer({ min: 0, max: 0xffffffff }) });
    fc.assert(
      fc.property(fc.uniqueArray(entry, { minLength: 1, maxLength: 300, selector: (e) => e.oid }), (entries: EntryRecord[]) => {
        const packSize = 2 ** 41;
        const pack = Buffer.alloc(32);
        const trailer = Buffer.alloc(20, 7);
        const { idx } = sealPack(pack, 12, trailer, entries);
        const index = parsePackIndex("test", idx, packSize);
        const sorted = [...entries].sort((x, y) => (x.oid < y.oid ? -1 : x.oid > y.oid ? 1 : 0));
        expect(index.count).toBe(sorted.length);
        for (let i = 0; i < sorted.length; i++) {
          const e = sorted[i] as EntryRecord;
          expect(index.oidAt(i)).toBe(e.oid);
          expect(index.offsetAt(i)).toBe(e.offset);
          expect(index.crcAt(i)).toBe(e.crc);
          expect(index.find(e.oid)).toBe(i);
        }
      }),
      { numRuns: 200 },
    );
  });
});
