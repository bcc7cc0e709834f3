/**
 * A big tree's oid hashed on a thread of its own while the caller's thread does other work
 * (design notes §81): a fire commit at 100,000 runs hashes its 3.8 MB `runs/` folder twice, once
 * for the folder's oid and once inside the pack's trailer, 3.6 ms each. The pack's hash over
 * everything up to the end of the folder's entry does not need the folder's oid, so the main
 * thread runs it (`beside`) while the hasher thread computes the oid.
 *
 * The hand-over is synchronous: the content is copied into a shared slot (reused, grown as
 * needed; content that lies in a `SharedArrayBuffer` already is read where it is), the hasher
 * thread is woken through an `Atomics` word, `beside` runs, and the
 * main thread waits on another word for the 20 bytes. No promise, so the tree edit that asked
 * stays synchronous. Until the thread has started (the first call starts it), after it failed,
 * or when it does not answer within {@link ANSWER_WAIT_MS}, the oid is hashed here: the bytes are
 * always git's SHA-1 of `tree <size>\0<content>`, only the thread that computes them differs.
 */
import { createHash } from "node:crypto";
import { MessageChannel, type MessagePort, Worker } from "node:worker_threads";
import type { Oid } from "./types.js";

/**
 * Control words (Int32 indexes): requests made, requests answered, ready, the content's byte
 * offset and length in the shared buffer last posted.
 */
const REQUEST = 0;
const ANSWERED = 1;
const READY = 2;
const OFFSET = 3;
const LENGTH = 4;
/** Where the answer's 20 bytes are in the control buffer. */
const ANSWER_AT = 20;

/**
 * How long (ms) the main thread waits for the hasher thread before hashing the tree itself (the
 * thread is then not used again). An answer takes ~4 ms at 100,000 runs; the wait blocks the
 * event loop, so it is kept to what a busy machine's scheduler may hold a runnable thread back,
 * not seconds.
 */
const ANSWER_WAIT_MS = 250;

/** The hasher thread: plain JavaScript (no loader), blocked in `Atomics.wait` between requests. */
const THREAD_SOURCE = `
const { workerData, receiveMessageOnPort } = require("node:worker_threads");
const { createHash } = require("node:crypto");
const control = new Int32Array(workerData.control);
const answer = new Uint8Array(workerData.control, ${ANSWER_AT}, 20);
const port = workerData.port;
let shared = null;
let seen = 0;
Atomics.store(control, ${READY}, 1);
Atomics.notify(control, ${READY});
for (;;) {
  Atomics.wait(control, ${REQUEST}, seen);
  seen = Atomics.load(control, ${REQUEST});
  for (let m = receiveMessageOnPort(port); m !== undefined; m = receiveMessageOnPort(port)) shared = m.message;
  const offset = Atomics.load(control, ${OFFSET});
  const length = Atomics.load(control, ${LENGTH});
  answer.set(createHash("sha1").update("tree " + length + "\\0", "latin1").update(new Uint8Array(shared, offset, length)).digest());
  Atomics.store(control, ${ANSWERED}, seen);
  Atomics.notify(control, ${ANSWERED});
}
`;

interface HasherThread {
  readonly control: Int32Array;
  readonly answer: Uint8Array;
  readonly port: MessagePort;
  readonly worker: Worker;
  /** The thread's own slot content is copied into. */
  slot: SharedArrayBuffer | null;
  /** The shared buffer last posted to the thread. */
  posted: SharedArrayBuffer | null;
  requests: number;
}

let thread: HasherThread | null = null;
/** Set once the thread failed or did not answer: every later oid is hashed on the caller's thread. */
let broken = false;
let besideCount = 0;

function startThread(): HasherThread | null {
  if (broken) return null;
  try {
    const control = new SharedArrayBuffer(ANSWER_AT + 20);
    const channel = new MessageChannel();
    const worker = new Worker(THREAD_SOURCE, { eval: true, workerData: { control, port: channel.port2 }, transferList: [channel.port2] });
    worker.unref();
    channel.port1.unref();
    const started: HasherThread = { control: new Int32Array(control), answer: new Uint8Array(control, ANSWER_AT, 20), port: channel.port1, worker, slot: null, posted: null, requests: 0 };
    // A thread that fails or exits is not used again.
    worker.on("error", () => retire(started));
    worker.on("exit", () => retire(started));
    return started;
  } catch {
    broken = true;
    return null;
  }
}

function retire(which: HasherThread): void {
  if (thread !== which) return;
  broken = true;
  thread = null;
  void which.worker.terminate().catch(() => undefined);
}

/** The hasher thread, when it is up (started on the first call; null until it is ready). */
function readyThread(): HasherThread | null {
  if (thread === null) {
    thread = startThread();
    return null;
  }
  return Atomics.load(thread.control, READY) === 1 ? thread : null;
}

/**
 * The oid of a tree with `content` (git's SHA-1 of `tree <size>\0` and the content, as 40 hex
 * digits), computed on the hasher thread while `beside` runs here; `beside` runs exactly once,
 * before this returns, whichever thread hashed. Throws what `beside` throws (the oid is then not
 * computed).
 */
export function treeOidBeside(content: Uint8Array, beside: () => void): Oid {
  const head = `tree ${content.byteLength}\0`;
  const hasher = readyThread();
  if (hasher === null) {
    beside();
    return createHash("sha1").update(head, "latin1").update(content).digest("hex");
  }
  const length = content.byteLength;
  let where: Uint8Array;
  if (content.buffer instanceof SharedArrayBuffer) {
    where = content;
  } else {
    if (hasher.slot === null || hasher.slot.byteLength < length) {
      // Grown by half again: a folder that grows a run at a time does not get a new slot each commit.
      hasher.slot = new SharedArrayBuffer(Math.ceil(length * 1.5));
    }
    where = new Uint8Array(hasher.slot, 0, length);
    where.set(content);
  }
  const buffer = where.buffer as SharedArrayBuffer;
  if (hasher.posted !== buffer) {
    // Queued before the thread is woken: it takes the buffer from its port when it wakes.
    hasher.port.postMessage(buffer);
    hasher.posted = buffer;
  }
  const request = ++hasher.requests;
  Atomics.store(hasher.control, OFFSET, where.byteOffset);
  Atomics.store(hasher.control, LENGTH, length);
  Atomics.store(hasher.control, REQUEST, request);
  Atomics.notify(hasher.control, REQUEST);
  try {
    beside();
  } finally {
    // Always waited for: the bytes must not change while the thread reads them.
    if (!awaitAnswer(hasher, request)) retire(hasher);
  }
  if (thread !== hasher) return createHash("sha1").update(head, "latin1").update(where).digest("hex");
  besideCount++;
  return Buffer.from(hasher.answer).toString("hex");
}

/**
 * Waits for the answer to `request`; false when the thread did not answer within
 * {@link ANSWER_WAIT_MS}. The answered count changes only for this request (one at a time), so
 * one wait that sees no change has timed out. Blocked, not spinning (design notes §81: spinning
 * here and in the thread was measured no faster on the 2-core VM, and burns the other core).
 */
function awaitAnswer(hasher: HasherThread, request: number): boolean {
  const answered = Atomics.load(hasher.control, ANSWERED);
  if (answered === request) return true;
  Atomics.wait(hasher.control, ANSWERED, answered, ANSWER_WAIT_MS);
  return Atomics.load(hasher.control, ANSWERED) === request;
}

/** `Atomics.waitAsync` (node ≥ 16; not in this project's TypeScript lib). */
const waitAsync = (Atomics as unknown as { waitAsync(array: Int32Array, index: number, value: number, timeoutMs: number): { value: Promise<string> | string } }).waitAsync;

/** Resolves once the hasher thread is up (starting it), false when it cannot be; for tests and benches. */
export async function treeHasherReady(): Promise<boolean> {
  readyThread();
  const starting = thread;
  if (starting === null) return false;
  if (Atomics.load(starting.control, READY) !== 1) await waitAsync(starting.control, READY, 0, 5_000).value;
  return !broken && thread === starting && Atomics.load(starting.control, READY) === 1;
}

/** How many oids the hasher thread computed in this process (see {@link treeOidBeside}). */
export function treeOidsHashedBeside(): number {
  return besideCount;
}
