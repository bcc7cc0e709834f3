/**
 * A big tree's oid hashed on a thread of its own while the caller's thread does other work
 * (design notes §81): a fire commit at 100,000 runs hashes its 3.8 MB `runs/` folder twice, once
 * for the folder's oid and once inside the pack's trailer, 3.6 ms each. The pack's hash over
 * everything up to the end of the folder's entry does not need the folder's oid, so the main
 * thread runs it (`beside`) while the hasher thread computes the oid.
 *
 * The hand-over is synchronous: the header and content are copied into a shared slot (reused,
 * grown as needed), the hasher thread is woken through an `Atomics` word, `beside` runs, and the
 * main thread waits on another word for the 20 bytes. No promise, so the tree edit that asked
 * stays synchronous. Until the thread has started (the first call starts it), after it failed,
 * or when it does not answer within {@link ANSWER_WAIT_MS}, the oid is hashed here: the bytes are
 * always git's SHA-1 of `tree <size>\0<content>`, only the thread that computes them differs.
 */
import { createHash } from "node:crypto";
import { MessageChannel, type MessagePort, Worker } from "node:worker_threads";
import type { Oid } from "./types.js";

/** Control words (Int32 indexes): requests made, requests answered, ready, the request's byte length. */
const REQUEST = 0;
const ANSWERED = 1;
const READY = 2;
const LENGTH = 3;
/** Where the answer's 20 bytes are in the control buffer. */
const ANSWER_AT = 16;

/** How long (ms) the main thread waits for the hasher thread before hashing the tree itself. */
const ANSWER_WAIT_MS = 2_000;

/** The hasher thread: plain JavaScript (no loader), blocked in `Atomics.wait` between requests. */
const THREAD_SOURCE = `
const { workerData, receiveMessageOnPort } = require("node:worker_threads");
const { createHash } = require("node:crypto");
const control = new Int32Array(workerData.control);
const answer = new Uint8Array(workerData.control, ${ANSWER_AT}, 20);
const port = workerData.port;
let slot = null;
let seen = 0;
Atomics.store(control, ${READY}, 1);
for (;;) {
  Atomics.wait(control, ${REQUEST}, seen);
  seen = Atomics.load(control, ${REQUEST});
  for (let m = receiveMessageOnPort(port); m !== undefined; m = receiveMessageOnPort(port)) slot = m.message;
  const length = Atomics.load(control, ${LENGTH});
  answer.set(createHash("sha1").update(new Uint8Array(slot, 0, length)).digest());
  Atomics.store(control, ${ANSWERED}, seen);
  Atomics.notify(control, ${ANSWERED});
}
`;

interface HasherThread {
  readonly control: Int32Array;
  readonly answer: Uint8Array;
  readonly port: MessagePort;
  readonly worker: Worker;
  slot: SharedArrayBuffer | null;
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
    const started: HasherThread = { control: new Int32Array(control), answer: new Uint8Array(control, ANSWER_AT, 20), port: channel.port1, worker, slot: null, requests: 0 };
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
  const length = head.length + content.byteLength;
  if (hasher.slot === null || hasher.slot.byteLength < length) {
    // Grown by half again: a folder that grows a run at a time is not copied into a new slot each commit.
    hasher.slot = new SharedArrayBuffer(Math.ceil(length * 1.5));
    hasher.port.postMessage(hasher.slot);
  }
  const slot = new Uint8Array(hasher.slot, 0, length);
  for (let i = 0; i < head.length; i++) slot[i] = head.charCodeAt(i);
  slot.set(content, head.length);
  const request = ++hasher.requests;
  Atomics.store(hasher.control, LENGTH, length);
  Atomics.store(hasher.control, REQUEST, request);
  Atomics.notify(hasher.control, REQUEST);
  try {
    beside();
  } finally {
    // Always waited for: the slot must not be written again while the thread reads it.
    if (!awaitAnswer(hasher, request)) retire(hasher);
  }
  if (thread !== hasher) return createHash("sha1").update(slot).digest("hex");
  besideCount++;
  return Buffer.from(hasher.answer).toString("hex");
}

/** Waits for the answer to `request`; false when the thread did not answer in time. */
function awaitAnswer(hasher: HasherThread, request: number): boolean {
  const until = performance.now() + ANSWER_WAIT_MS;
  for (;;) {
    const answered = Atomics.load(hasher.control, ANSWERED);
    if (answered === request) return true;
    const left = until - performance.now();
    if (left <= 0) return false;
    Atomics.wait(hasher.control, ANSWERED, answered, left);
  }
}

/** Resolves once the hasher thread is up (starting it), false when it cannot be; for tests and benches. */
export async function treeHasherReady(): Promise<boolean> {
  readyThread();
  for (let i = 0; i < 500; i++) {
    if (broken || thread === null) return false;
    if (Atomics.load(thread.control, READY) === 1) return true;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return false;
}

/** How many oids the hasher thread computed in this process (see {@link treeOidBeside}). */
export function treeOidsHashedBeside(): number {
  return besideCount;
}
