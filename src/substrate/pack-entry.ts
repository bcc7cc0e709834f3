/**
 * Reading one entry of a git pack (version 2): its header, its inflated payload, and the
 * resolution of a delta against its base (see pack-file.ts for the format).
 */
import { inflateSync } from "node:zlib";
import { WorkflowHostError } from "../errors.js";
import { copyBytes } from "./byte-copy.js";
import type { ObjectType } from "./git-object.js";
import type { PackIndex } from "./pack-file.js";
import type { Oid } from "./types.js";

const TYPE_NAMES: readonly (ObjectType | null)[] = [null, "commit", "tree", "blob", "tag", null, null, null];
export const OFS_DELTA = 6;
export const REF_DELTA = 7;

export function corrupt(what: string, reason: string): WorkflowHostError {
  return new WorkflowHostError("object_corrupt", `pack ${what} is corrupt: ${reason}`, { pack: what, reason });
}

/** The content of a zlib stream made only of stored blocks, or null when it is not one. */
function unstore(stream: Buffer, size: number): Buffer | null {
  if (stream.length < 7 || stream[0] !== 0x78 || ((stream[0] << 8) | (stream[1] as number)) % 31 !== 0 || ((stream[1] as number) & 0x20) !== 0) return null;
  const out = Buffer.allocUnsafe(size);
  let at = 2;
  let written = 0;
  for (;;) {
    const head = stream[at];
    if (head === undefined || (head & 0xfe) !== 0 || at + 5 > stream.length) return null;
    const len = stream.readUInt16LE(at + 1);
    if ((stream.readUInt16LE(at + 3) ^ 0xffff) !== len || written + len > size || at + 5 + len > stream.length) return null;
    // No view of the block for a small one (Buffer.copy of a range makes one per call).
    copyBytes(stream, at + 5, at + 5 + len, out, written);
    written += len;
    at += 5 + len;
    if (head === 1) break;
  }
  return written === size ? out : null;
}

/** A packed entry's header: its type code, its size and where its payload starts. */
export interface EntryHead {
  readonly typeCode: number;
  readonly size: number;
  /** Offset (within the bytes given) of the zlib stream. */
  readonly dataAt: number;
  /** For an ofs-delta: how far back (bytes) its base starts. */
  readonly baseDistance?: number;
  /** For a ref-delta: the base's oid. */
  readonly baseOid?: Oid;
}

/**
 * Parses an entry header at the start of `bytes`.
 * @throws `object_corrupt` for a truncated header or an unknown type
 */
export function parseEntryHead(name: string, bytes: Buffer): EntryHead {
  // No closure for the byte reader: a recovery parses a million entry headers.
  let at = 0;
  if (at >= bytes.length) throw corrupt(name, "truncated entry header");
  let c = bytes[at++] as number;
  const typeCode = (c >> 4) & 7;
  let size = c & 0x0f;
  let shift = 16;
  while (c & 0x80) {
    if (at >= bytes.length) throw corrupt(name, "truncated entry header");
    c = bytes[at++] as number;
    size += (c & 0x7f) * shift;
    shift *= 128;
  }
  if (typeCode === OFS_DELTA) {
    if (at >= bytes.length) throw corrupt(name, "truncated entry header");
    c = bytes[at++] as number;
    let distance = c & 0x7f;
    while (c & 0x80) {
      if (at >= bytes.length) throw corrupt(name, "truncated entry header");
      c = bytes[at++] as number;
      distance = (distance + 1) * 128 + (c & 0x7f);
    }
    return { typeCode, size, dataAt: at, baseDistance: distance };
  }
  if (typeCode === REF_DELTA) {
    if (at + 20 > bytes.length) throw corrupt(name, "truncated ref-delta base");
    return { typeCode, size, dataAt: at + 20, baseOid: bytes.toString("hex", at, at + 20) };
  }
  if (TYPE_NAMES[typeCode] === null) throw corrupt(name, `unknown entry type ${typeCode}`);
  return { typeCode, size, dataAt: at };
}

/** Whether an entry type code is a delta (its content needs a base). */
export function isDelta(typeCode: number): boolean {
  return typeCode === OFS_DELTA || typeCode === REF_DELTA;
}

/** The object type of a whole (non-delta) entry type code. */
export function typeOfCode(typeCode: number): ObjectType {
  const type = TYPE_NAMES[typeCode];
  if (type === null || type === undefined) throw new RangeError(`type code ${typeCode} is not a whole object`);
  return type;
}

/**
 * Inflates an entry's payload and checks it has the size its header promised.
 * @throws `object_corrupt` when it does not inflate or has another size
 */
export function inflateEntry(name: string, bytes: Buffer, head: EntryHead): Buffer {
  const stored = unstore(bytes.subarray(head.dataAt), head.size);
  if (stored !== null) return stored;
  let out: Buffer;
  try {
    out = inflateSync(bytes.subarray(head.dataAt));
  } catch (error) {
    throw new WorkflowHostError("object_corrupt", `pack ${name} is corrupt: an entry does not inflate`, { pack: name }, { cause: error });
  }
  if (out.length !== head.size) throw corrupt(name, `entry inflates to ${out.length} bytes, header says ${head.size}`);
  return out;
}

function readVarint(delta: Buffer, at: { i: number }): number {
  let value = 0;
  let shift = 1;
  let c: number;
  do {
    c = delta[at.i++] as number;
    value += (c & 0x7f) * shift;
    shift *= 128;
  } while (c & 0x80 && at.i < delta.length);
  return value;
}

/**
 * Applies a git delta (source size, target size, then copy/insert instructions) to `base`.
 * @throws `object_corrupt` when the delta does not fit its base or its declared size
 */
export function applyDelta(name: string, base: Uint8Array, delta: Buffer): Buffer {
  const at = { i: 0 };
  const sourceSize = readVarint(delta, at);
  const targetSize = readVarint(delta, at);
  if (sourceSize !== base.length) throw corrupt(name, `delta expects a ${sourceSize}-byte base, got ${base.length}`);
  const out = Buffer.allocUnsafe(targetSize);
  let written = 0;
  while (at.i < delta.length) {
    const op = delta[at.i++] as number;
    if (op & 0x80) {
      let offset = 0;
      let size = 0;
      for (let bit = 0; bit < 4; bit++) if (op & (1 << bit)) offset += (delta[at.i++] as number) * 2 ** (8 * bit);
      for (let bit = 0; bit < 3; bit++) if (op & (16 << bit)) size += (delta[at.i++] as number) * 2 ** (8 * bit);
      if (size === 0) size = 0x10000;
      if (offset + size > base.length || written + size > targetSize) throw corrupt(name, "delta copies out of range");
      out.set(base.subarray(offset, offset + size), written);
      written += size;
    } else if (op > 0) {
      if (written + op > targetSize || at.i + op > delta.length) throw corrupt(name, "delta inserts out of range");
      delta.copy(out, written, at.i, at.i + op);
      at.i += op;
      written += op;
    } else {
      throw corrupt(name, "delta has a reserved instruction");
    }
  }
  if (written !== targetSize) throw corrupt(name, `delta produced ${written} bytes, expected ${targetSize}`);
  return out;
}

/** Whether any entry of the pack is a ref-delta (its base may live elsewhere: not merged here). */
export function packHasRefDeltas(bytes: Buffer, index: PackIndex): boolean {
  for (let i = 0; i < index.count; i++) {
    if ((((bytes[index.offsetAt(i)] ?? 0) >> 4) & 7) === REF_DELTA) return true;
  }
  return false;
}

/** A source pack for `mergePacks` (pack-merge.ts): its parsed index and a reader of its entries. */
export interface PackSource {
  readonly name: string;
  readonly index: PackIndex;
  /** The bytes [start, end) of the pack (one whole entry). */
  entry(start: number, end: number): Buffer | Promise<Buffer>;
}

/** A {@link PackSource} over the pack's bytes in memory. */
export function packSourceOf(name: string, bytes: Buffer, index: PackIndex): PackSource {
  return { name, index, entry: (start, end) => bytes.subarray(start, end) };
}
