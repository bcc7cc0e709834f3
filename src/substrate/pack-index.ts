/**
 * A pack's index (version 2) parsed for lookups: fan-out, sorted oids, CRC-32s, offsets (see
 * pack-file.ts for the layout). Parsed once per pack; a recovery looks a million objects up in it.
 */
import { createHash } from "node:crypto";
import { corrupt } from "./pack-entry.js";
import { packOrder } from "./pack-rev-index.js";
import type { Oid } from "./types.js";

export const IDX_MAGIC = 0xff744f63;
export const LARGE_OFFSET_FLAG = 0x80000000;

/** `PackIndex.find` calls answered from the index bytes before the oids' first words are copied out. */
const HEADS_AFTER_FINDS = 64;

/** `PackIndex.endOf` calls answered by a pass over the offsets before they are sorted once. */
const LINEAR_ENDS = 4;

/** A parsed pack index: lookups by oid, and every entry's offset, end and CRC-32. */
export interface PackIndex {
  readonly count: number;
  /** Checksum of the pack this index belongs to (its trailer), hex. */
  readonly packChecksum: string;
  /** Entry number of `oid` (hex, or its 20 raw bytes), or -1. */
  find(oid: Oid | Uint8Array): number;
  /**
   * Sets `found[i]` to 1 for each of the `found.length` oids of `oids` (20 bytes each, end to
   * end) this index holds; leaves the others as they are. One loop for many lookups (a start
   * checks every run's objects), without a call, copy or view per oid.
   */
  markFound(oids: Uint8Array, found: Uint8Array): void;
  /** Oid of entry `i` (index order: sorted by oid). */
  oidAt(i: number): Oid;
  /** Byte offset of entry `i` in the pack. */
  offsetAt(i: number): number;
  /** CRC-32 of entry `i`'s bytes. */
  crcAt(i: number): number;
  /** Where the entry starting at `offset` ends: the next entry's start, or the trailer. */
  endOf(offset: number): number;
  /**
   * Takes the entries' starts in pack order (offsets, ascending) from a checked reverse index
   * (`parseReverseIndex`, see pack-rev-index.ts), so {@link endOf} needs no sort. Ignored once
   * the starts are known.
   */
  useReverseIndex(starts: Uint32Array | Float64Array): void;
}

/**
 * Parses index bytes (version 2) of a pack of `packSize` bytes.
 * @param onSorted called once with the entries' pack order (index positions by offset) when
 *   {@link PackIndex.endOf} had to sort them, for lack of a reverse index (see pack-rev-index.ts)
 * @throws `object_corrupt` naming `name` for a bad magic, version, size or checksum
 */
export function parsePackIndex(name: string, bytes: Uint8Array, packSize: number, onSorted?: (order: Uint32Array) => void): PackIndex {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (buf.length < 8 + 1024 + 40 || buf.readUInt32BE(0) !== IDX_MAGIC || buf.readUInt32BE(4) !== 2) {
    throw corrupt(name, "not a version 2 pack index");
  }
  const n = buf.readUInt32BE(8 + 255 * 4);
  const oidsAt = 8 + 1024;
  const crcAt = oidsAt + n * 20;
  const offsetsAt = crcAt + n * 4;
  const largeAt = offsetsAt + n * 4;
  if (buf.length < largeAt + 40) throw corrupt(name, "index shorter than its object count");
  const checksumAt = buf.length - 40;
  const expected = createHash("sha1").update(buf.subarray(0, checksumAt + 20)).digest();
  if (!expected.equals(buf.subarray(checksumAt + 20))) throw corrupt(name, "index checksum mismatch");
  // Words are read through a DataView: a recovery looks a million objects up, and the Buffer
  // methods' checks per call were a tenth of its lookups.
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  // Offsets are read out of the index when asked, not copied out of it up front: a warm start
  // reads a few objects from a pack of a million entries.
  const offsetOf = (i: number): number => {
    const raw = view.getUint32(offsetsAt + i * 4);
    return raw & LARGE_OFFSET_FLAG ? Number(buf.readBigUInt64BE(largeAt + (raw & 0x7fffffff) * 8)) : raw;
  };
  // Sorted entry starts, for `endOf`; built only once many entries were asked for: a warm start
  // reads a handful of objects (the root, `runs/`) from a pack of a million, and sorting every
  // offset for those cost more than the rest of the lookup. Until then each end is one pass.
  let starts: Float64Array | Uint32Array | null = null;
  let endsAsked = 0;
  const trailerAt = packSize - 20;
  const fanoutAt = (byte: number): number => (byte < 0 ? 0 : view.getUint32(8 + byte * 4));
  const probe = Buffer.alloc(20);
  const probeView = new DataView(probe.buffer, probe.byteOffset, 20);
  /** The first 32 bits of every oid, in index order; built once lookups are many (see find). */
  let heads: Uint32Array | null = null;
  let finds = 0;
  return {
    count: n,
    packChecksum: buf.toString("hex", checksumAt, checksumAt + 20),
    find(oid) {
      if (typeof oid !== "string") probe.set(oid.length === 20 ? oid : oid.subarray(0, 20));
      else if (probe.write(oid, 0, "hex") !== 20) return -1;
      const first = probe[0] as number;
      let lo = fanoutAt(first - 1);
      let hi = fanoutAt(first);
      // Word compares: Buffer.compare's per-call overhead was most of a lookup.
      const w0 = probeView.getUint32(0);
      const w1 = probeView.getUint32(4);
      const w2 = probeView.getUint32(8);
      const w3 = probeView.getUint32(12);
      const w4 = probeView.getUint32(16);
      if (heads === null && ++finds > HEADS_AFTER_FINDS) {
        heads = new Uint32Array(n);
        for (let i = 0; i < n; i++) heads[i] = view.getUint32(oidsAt + i * 20);
      }
      if (heads !== null) {
        // The first word of an oid, from a plain typed array, settles almost every probe;
        // the other four are compared only for entries that share it.
        while (lo < hi) {
          const mid = (lo + hi) >>> 1;
          if ((heads[mid] as number) < w0) lo = mid + 1;
          else hi = mid;
        }
        for (; lo < n && heads[lo] === w0; lo++) {
          const at = oidsAt + lo * 20;
          if (view.getUint32(at + 4) === w1 && view.getUint32(at + 8) === w2 && view.getUint32(at + 12) === w3 && view.getUint32(at + 16) === w4) return lo;
        }
        return -1;
      }
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        const at = oidsAt + mid * 20;
        let order = view.getUint32(at) - w0;
        if (order === 0) order = view.getUint32(at + 4) - w1;
        if (order === 0) order = view.getUint32(at + 8) - w2;
        if (order === 0) order = view.getUint32(at + 12) - w3;
        if (order === 0) order = view.getUint32(at + 16) - w4;
        if (order === 0) return mid;
        if (order > 0) hi = mid;
        else lo = mid + 1;
      }
      return -1;
    },
    markFound(oids, found) {
      // Byte compares on plain typed arrays: a start calls this once per column, before the code
      // is optimised, and indexed reads cost less than DataView calls there.
      const count = Math.min(found.length, Math.floor(oids.byteLength / 20));
      for (let k = 0; k < count; k++) {
        if (found[k] === 1) continue;
        const p = k * 20;
        const first = oids[p] as number;
        let lo = fanoutAt(first - 1);
        let hi = fanoutAt(first);
        while (lo < hi) {
          const mid = (lo + hi) >>> 1;
          const at = oidsAt + mid * 20;
          let j = 1;
          while (j < 20 && buf[at + j] === oids[p + j]) j++;
          if (j === 20) {
            found[k] = 1;
            break;
          }
          if ((buf[at + j] as number) > (oids[p + j] as number)) hi = mid;
          else lo = mid + 1;
        }
      }
    },
    oidAt: (i) => buf.toString("hex", oidsAt + i * 20, oidsAt + i * 20 + 20),
    offsetAt: offsetOf,
    crcAt: (i) => view.getUint32(crcAt + i * 4),
    useReverseIndex(given) {
      if (starts === null && given.length === n) starts = given;
    },
    endOf(offset) {
      if (starts === null && ++endsAsked <= LINEAR_ENDS) {
        let end = trailerAt;
        for (let i = 0; i < n; i++) {
          const start = offsetOf(i);
          if (start > offset && start < end) end = start;
        }
        return end;
      }
      if (starts === null) {
        // Four bytes an entry while every offset fits (a pack under 4 GiB), else eight.
        const sorted = packSize <= 0xffffffff ? new Uint32Array(n) : new Float64Array(n);
        if (onSorted !== undefined) {
          const made = packOrder({ count: n, offsetAt: offsetOf });
          for (let k = 0; k < n; k++) sorted[k] = offsetOf(made[k] as number);
          onSorted(made);
        } else {
          for (let i = 0; i < n; i++) sorted[i] = offsetOf(i);
          sorted.sort();
        }
        starts = sorted;
      }
      let lo = 0;
      let hi = starts.length;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if ((starts[mid] as number) <= offset) lo = mid + 1;
        else hi = mid;
      }
      return lo < starts.length ? (starts[lo] as number) : trailerAt;
    },
  };
}
