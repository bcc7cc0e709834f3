/**
 * SHA-1 of a pack's pieces, on a helper thread when most of the bytes are in shared memory.
 *
 * A fire commit at 100,000 runs writes a new 4 MB `runs/` folder into its pack, and the pack's
 * trailer is the SHA-1 of every byte before it: a whole pass over the folder (~2.6 ms on this
 * machine's SHA extensions) that nothing else in the commit waits for until the pack is put in
 * place, which happens after the ref lock is taken. Big folders made by a splice live in
 * shared memory ({@link sharedBytes}), so a helper thread can read them without a copy: the
 * pass runs on the other core while the event loop takes the ref lock and serves timers. The
 * pieces that are not shared (entry headers, small entries: a few hundred KB) are copied into
 * one buffer handed over with the message.
 *
 * States of the helper: none (never needed, or failed: hashing stays on this thread), idle
 * (unref'd: it never keeps the process alive), busy (ref'd while answers are owed). A helper
 * that fails or exits fails the requests it owes; each of them is then hashed here, so a
 * failure costs time, never a result.
 */
import { createHash } from "node:crypto";
import { Worker } from "node:worker_threads";

/** Shared bytes below this are hashed on this thread: a message costs more than the pass. */
export const SHARED_HASH_MIN_BYTES = 1024 * 1024;

/**
 * Zeroed bytes in shared memory (a helper thread can read them without a copy) when `length`
 * is at least {@link SHARED_HASH_MIN_BYTES}, else ordinary bytes (`Buffer.allocUnsafe`: not zeroed).
 */
export function sharedBytes(length: number): Buffer {
  if (length < SHARED_HASH_MIN_BYTES) return Buffer.allocUnsafe(length);
  return Buffer.from(new SharedArrayBuffer(length));
}

const HELPER_SOURCE = `
const { parentPort } = require("node:worker_threads");
const { createHash } = require("node:crypto");
parentPort.on("message", ({ id, local, layout }) => {
  try {
    const hash = createHash("sha1");
    for (const [shared, offset, length] of layout) hash.update(new Uint8Array(shared ?? local, offset, length));
    parentPort.postMessage({ id, digest: hash.digest() });
  } catch (error) {
    parentPort.postMessage({ id, error: String(error) });
  }
});
`;

interface Owed {
  readonly resolve: (digest: Buffer) => void;
  readonly reject: (error: Error) => void;
}

let helper: Worker | null | undefined;
let nextId = 0;
const owed = new Map<number, Owed>();

function failAll(error: Error): void {
  const waiting = [...owed.values()];
  owed.clear();
  for (const w of waiting) w.reject(error);
}

function helperThread(): Worker | null {
  if (helper !== undefined) return helper;
  try {
    const worker = new Worker(HELPER_SOURCE, { eval: true });
    worker.unref();
    worker.on("message", (reply: { id: number; digest?: Uint8Array; error?: string }) => {
      const w = owed.get(reply.id);
      if (w === undefined) return;
      owed.delete(reply.id);
      if (owed.size === 0) worker.unref();
      if (reply.digest !== undefined) w.resolve(Buffer.from(reply.digest.buffer, reply.digest.byteOffset, reply.digest.byteLength));
      else w.reject(new Error(reply.error ?? "no digest"));
    });
    const gone = (error: Error): void => {
      if (helper === worker) helper = null;
      failAll(error);
    };
    worker.on("error", gone);
    worker.on("exit", () => gone(new Error("hash helper exited")));
    helper = worker;
  } catch {
    helper = null;
  }
  return helper;
}

function hashHere(parts: readonly Uint8Array[]): Buffer {
  const hash = createHash("sha1");
  for (const part of parts) hash.update(part);
  return hash.digest();
}

/** Bytes of `parts` that live in shared memory. */
function sharedLength(parts: readonly Uint8Array[]): number {
  let n = 0;
  for (const part of parts) if (part.buffer instanceof SharedArrayBuffer) n += part.byteLength;
  return n;
}

/**
 * The SHA-1 of the concatenation of `parts`: on the helper thread when at least
 * {@link SHARED_HASH_MIN_BYTES} of them are in shared memory, else (or when the helper is not
 * available) on this thread. The parts must not change until the promise settles.
 */
export async function sha1OfParts(parts: readonly Uint8Array[]): Promise<Buffer> {
  if (sharedLength(parts) < SHARED_HASH_MIN_BYTES) return hashHere(parts);
  const worker = helperThread();
  if (worker === null) return hashHere(parts);
  let localBytes = 0;
  for (const part of parts) if (!(part.buffer instanceof SharedArrayBuffer)) localBytes += part.byteLength;
  const local = new ArrayBuffer(localBytes);
  const localView = new Uint8Array(local);
  const layout: [SharedArrayBuffer | null, number, number][] = [];
  let at = 0;
  for (const part of parts) {
    if (part.byteLength === 0) continue;
    if (part.buffer instanceof SharedArrayBuffer) {
      layout.push([part.buffer, part.byteOffset, part.byteLength]);
    } else {
      localView.set(part, at);
      layout.push([null, at, part.byteLength]);
      at += part.byteLength;
    }
  }
  const id = nextId++;
  try {
    return await new Promise<Buffer>((resolve, reject) => {
      owed.set(id, { resolve, reject });
      worker.ref();
      worker.postMessage({ id, local, layout }, [local]);
    });
  } catch {
    // The helper failed (or is gone): the same bytes, hashed here.
    owed.delete(id);
    return hashHere(parts);
  }
}
