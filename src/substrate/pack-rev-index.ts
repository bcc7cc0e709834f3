/**
 * Git's reverse index of a pack (`pack-<checksum>.rev`, format "RIDX" version 1, see git's
 * gitformat-pack): the index positions of the pack's entries in the order they sit in the pack.
 *
 * Reading an object out of a pack needs where its entry ends (the next entry's start): without a
 * reverse index that means sorting every entry's offset once per process, 100–150 ms of CPU for
 * the merged pack of a deployment holding 100,000 ended runs, paid by every cold start. Merged
 * packs get one when they are written (pack-maintenance.ts), and a big pack without one (written
 * by git, or by an older version) gets one the first time a reader sorts its offsets anyway.
 *
 * Layout (all numbers big-endian): "RIDX", version 1, hash id 1 (SHA-1), one 4-byte index
 * position per object sorted by the object's offset, the pack's checksum, then the SHA-1 of
 * everything before it. A file that is not exactly that (torn, truncated, from another pack, a
 * table not in offset order) is never used: it is replaced by a correct one.
 */
import { createHash } from "node:crypto";
import type { PackIndex } from "./pack-index.js";

export const RIDX_MAGIC = 0x52494458;
const HEADER_BYTES = 12;
const TRAILER_BYTES = 40;

/**
 * The entries of a pack's index in the order they sit in the pack. Sorted as numbers
 * (offset × 2^21 + position, exact in a double for packs under 4 GiB of up to 2^21 objects),
 * not through a comparator reading two offsets per compare: for a merged pack of 600 000
 * objects that sort was a second of CPU.
 */
export function packOrder(index: Pick<PackIndex, "count" | "offsetAt">): Uint32Array {
  const n = index.count;
  if (n >= 2 ** 21) return Uint32Array.from(Array.from({ length: n }, (_, i) => i).sort((a, b) => index.offsetAt(a) - index.offsetAt(b)));
  const keys = new Float64Array(n);
  for (let i = 0; i < n; i++) keys[i] = index.offsetAt(i) * 2 ** 21 + i;
  keys.sort();
  const order = new Uint32Array(n);
  for (let k = 0; k < n; k++) order[k] = (keys[k] as number) % 2 ** 21;
  return order;
}

/** The `.rev` file of the pack `index` describes, given its entries in pack order (see {@link packOrder}). */
export function encodeReverseIndex(index: Pick<PackIndex, "count" | "packChecksum">, order: Uint32Array): Buffer {
  const n = index.count;
  const out = Buffer.alloc(HEADER_BYTES + 4 * n + TRAILER_BYTES);
  out.writeUInt32BE(RIDX_MAGIC, 0);
  out.writeUInt32BE(1, 4);
  out.writeUInt32BE(1, 8);
  const view = new DataView(out.buffer, out.byteOffset, out.byteLength);
  for (let k = 0; k < n; k++) view.setUint32(HEADER_BYTES + 4 * k, order[k] as number);
  const checksumAt = HEADER_BYTES + 4 * n;
  out.write(index.packChecksum, checksumAt, "hex");
  createHash("sha1").update(out.subarray(0, checksumAt + 20)).digest().copy(out, checksumAt + 20);
  return out;
}

/** Largest `.rev` a pack of `count` objects has (bytes). */
export function reverseIndexBytes(count: number): number {
  return HEADER_BYTES + 4 * count + TRAILER_BYTES;
}

/**
 * The entries' starts in pack order (their offsets, ascending) read from a `.rev` file, checked
 * whole: size, header, the pack's checksum, the file's own checksum, and that every position is
 * an entry and their offsets strictly grow (so it is the pack's order, not merely a well-formed
 * file). What `PackIndex.endOf` would otherwise sort the offsets for.
 * @returns the starts (4 bytes each while they fit, else 8), or null when the file is not a
 *   correct reverse index of this pack
 */
export function parseReverseIndex(bytes: Uint8Array, index: Pick<PackIndex, "count" | "packChecksum" | "offsetAt">): Uint32Array | Float64Array | null {
  const n = index.count;
  if (bytes.byteLength !== reverseIndexBytes(n)) return null;
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (buf.readUInt32BE(0) !== RIDX_MAGIC || buf.readUInt32BE(4) !== 1 || buf.readUInt32BE(8) !== 1) return null;
  const checksumAt = HEADER_BYTES + 4 * n;
  if (buf.toString("hex", checksumAt, checksumAt + 20) !== index.packChecksum) return null;
  if (!createHash("sha1").update(buf.subarray(0, checksumAt + 20)).digest().equals(buf.subarray(checksumAt + 20))) return null;
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  let starts: Uint32Array | Float64Array = new Uint32Array(n);
  let previous = -1;
  for (let k = 0; k < n; k++) {
    const position = view.getUint32(HEADER_BYTES + 4 * k);
    if (position >= n) return null;
    const offset = index.offsetAt(position);
    if (offset <= previous) return null;
    // A pack past 4 GiB: eight bytes a start from here on.
    if (offset > 0xffffffff && starts instanceof Uint32Array) starts = Float64Array.from(starts);
    previous = offset;
    starts[k] = offset;
  }
  return starts;
}
