/**
 * Git's object formats, as pure functions: hashing (`<type> <len>\0<content>` under SHA-1)
 * and commits (trees are in tree-object.ts). The encodings match what git itself writes byte
 * for byte, so `git fsck --strict` accepts every object and the oids agree with git's.
 */
import * as nodeCrypto from "node:crypto";
import { createHash } from "node:crypto";
import { WorkflowHostError } from "../errors.js";
import type { Oid } from "./types.js";

export type ObjectType = "blob" | "tree" | "commit" | "tag";

/** One object ready to store: its oid is the SHA-1 of the header plus `content`. */
export interface GitObject {
  readonly oid: Oid;
  readonly type: ObjectType;
  readonly content: Uint8Array;
}

export interface ParsedCommit {
  readonly oid: Oid;
  readonly tree: Oid;
  /** Parents in order; the first is the first parent. */
  readonly parents: readonly Oid[];
  readonly message: string;
}

export interface Identity {
  readonly name: string;
  readonly email: string;
}

function corrupt(oid: string, reason: string): WorkflowHostError {
  return new WorkflowHostError("object_corrupt", `git object ${oid} is corrupt: ${reason}`, { oid, reason });
}

/**
 * The `object_corrupt` error of an object that is there but fails its own check (its zlib stream
 * does not inflate, its content hashes to another oid, its pack entry does not match the CRC-32
 * its index records, a truncated loose file): `data.damaged` true, `data.oid` the oid asked for,
 * plus `extra` (`pack`, `path`). Its bytes are never served. See {@link isDamagedObject}.
 */
export function damagedObject(oid: string, reason: string, extra: Record<string, unknown> = {}, cause?: unknown): WorkflowHostError {
  return new WorkflowHostError("object_corrupt", `git object ${oid} is damaged: ${reason}`, { oid, reason, damaged: true, ...extra }, cause === undefined ? {} : { cause });
}

/** True for {@link damagedObject}'s error: the object is there but fails its own check. */
export function isDamagedObject(error: unknown): error is WorkflowHostError {
  return error instanceof WorkflowHostError && error.code === "object_corrupt" && error.data.damaged === true;
}

/** Hashes `content` as a git object of `type`. */
export function hashObject(type: ObjectType, content: Uint8Array): GitObject {
  if (oneShotHash !== undefined && content.byteLength <= ONE_SHOT_MAX_BYTES) {
    // Header and content in one buffer, one native call: a Hash object per event blob and
    // per small folder cost about as much as the rest of hashing them.
    const head = `${type} ${content.byteLength}\0`;
    const whole = Buffer.allocUnsafe(head.length + content.byteLength);
    whole.write(head, 0, "latin1");
    whole.set(content, head.length);
    return { oid: oneShotHash("sha1", whole, "hex"), type, content };
  }
  const hash = createHash("sha1");
  hash.update(`${type} ${content.byteLength}\0`);
  hash.update(content);
  return { oid: hash.digest("hex"), type, content };
}

/** node's one-shot `crypto.hash` (node ≥ 20.12), or undefined on an older node. */
const oneShotHash = (nodeCrypto as { hash?: (algorithm: string, data: Uint8Array, encoding: "hex") => string }).hash;
/** Objects up to this size are hashed with {@link oneShotHash} (bigger ones are not copied). */
const ONE_SHOT_MAX_BYTES = 16 * 1024;

/** The loose-object form before deflate: header plus content. */
export function wrapObject(object: GitObject): Buffer {
  return Buffer.concat([Buffer.from(`${object.type} ${object.content.byteLength}\0`), object.content]);
}

/**
 * Parses the inflated loose-object form and checks its length and oid.
 * @throws `object_corrupt` naming `oid` when the header, length or hash is wrong (a
 *   {@link damagedObject}).
 */
export function unwrapObject(oid: Oid, wrapped: Uint8Array): GitObject {
  const buf = Buffer.from(wrapped.buffer, wrapped.byteOffset, wrapped.byteLength);
  const nul = buf.indexOf(0);
  if (nul < 0 || nul > 32) throw damagedObject(oid, "no object header");
  const header = buf.toString("latin1", 0, nul);
  const match = /^(blob|tree|commit|tag) (\d+)$/.exec(header);
  if (match === null) throw damagedObject(oid, `bad header ${JSON.stringify(header)}`);
  const content = buf.subarray(nul + 1);
  if (Number(match[2]) !== content.byteLength) throw damagedObject(oid, "length does not match header");
  const object = hashObject(match[1] as ObjectType, content);
  if (object.oid !== oid) throw damagedObject(oid, `content hashes to ${object.oid}`);
  return object;
}

/** Maps a UTF-16 code unit so that comparing mapped units orders strings by code point. */
export function codePointRank(unit: number): number {
  // UTF-16 puts surrogates (U+D800..DFFF) below U+E000..FFFF; code point order puts them above.
  if (unit < 0xd800) return unit;
  return unit >= 0xe000 ? unit - 0x800 : unit + 0x2000;
}

/** Compares strings by code point, which is UTF-8 byte order (git compares bytes). */
export function compareCodePoints(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return codePointRank(x) - codePointRank(y);
  }
  return a.length - b.length;
}

/**
 * Encodes a commit as git does: `tree`, one `parent` line per parent, `author` and
 * `committer` with seconds since the epoch and `+0000`, a blank line, then the message
 * (given a trailing "\n" when missing).
 */
export function encodeCommit(fields: {
  readonly tree: Oid;
  readonly parents: readonly Oid[];
  readonly author: Identity;
  readonly committer: Identity;
  readonly timestampSec: number;
  readonly message: string;
}): GitObject {
  const stamp = `${Math.floor(fields.timestampSec)} +0000`;
  const lines = [`tree ${fields.tree}`];
  for (const parent of fields.parents) lines.push(`parent ${parent}`);
  lines.push(`author ${fields.author.name} <${fields.author.email}> ${stamp}`);
  lines.push(`committer ${fields.committer.name} <${fields.committer.email}> ${stamp}`);
  const message = fields.message.endsWith("\n") ? fields.message : `${fields.message}\n`;
  return hashObject("commit", Buffer.from(`${lines.join("\n")}\n\n${message}`, "utf8"));
}

/**
 * Parses the headers of a commit (tree, parents) and its message.
 * @throws `object_corrupt` naming `oid` when there is no valid `tree` line.
 */
export function decodeCommit(oid: Oid, content: Uint8Array): ParsedCommit {
  const text = Buffer.from(content.buffer, content.byteOffset, content.byteLength).toString("utf8");
  const split = text.indexOf("\n\n");
  const head = split < 0 ? text : text.slice(0, split);
  let tree: string | undefined;
  const parents: string[] = [];
  for (const line of head.split("\n")) {
    if (line.startsWith("tree ")) tree = line.slice(5);
    else if (line.startsWith("parent ")) parents.push(line.slice(7));
  }
  if (tree === undefined || !/^[0-9a-f]{40}$/.test(tree)) throw corrupt(oid, "commit has no tree");
  if (parents.some((p) => !/^[0-9a-f]{40}$/.test(p))) throw corrupt(oid, "commit has a bad parent");
  return { oid, tree, parents, message: split < 0 ? "" : text.slice(split + 2) };
}
