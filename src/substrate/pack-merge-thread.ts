/**
 * The merge thread, as the stores of a process see it: {@link mergeOnThread} hands a merge job
 * (pack-merge-job.ts) to one worker thread shared by every repository of the process, so the
 * megabytes a merge reads, compares, hashes and lays out never hold the event loop that fires
 * timers. Only the result comes back (its buffers moved, not copied); placing it, and deleting
 * the packs it replaces, stay with the caller (pack-maintenance.ts).
 *
 * States: no thread → starting (first job) → ready; a thread that fails to start or dies
 * rejects the jobs it holds with {@link MergeThreadUnavailable} and is not started again (the
 * caller then merges on its own thread, as a store on memfs always does). The thread is unref'd:
 * it never keeps a process alive.
 *
 * Commits first: while a commit of this process is in flight ({@link holdMerges}, taken by the
 * write engine from the plan to the ref's move), a job posted with `yieldToCommits` waits at its
 * next entry, so on a 2-core machine the merge does not take the core a fire commit (its plan,
 * its pack's file calls through the pool) is waiting for. The wait is bounded: at most
 * {@link YIELD_WAIT_MS} per entry and {@link YIELD_MAX_WAITS} waits per job, after which the job runs
 * through; the caller posts without `yieldToCommits` once packs pile up (pack-maintenance.ts).
 */
import { readlinkSync } from "node:fs";
import { getPriority, setPriority } from "node:os";
import { Worker } from "node:worker_threads";
import { WorkflowHostError } from "../errors.js";
import type { EncodedPack } from "./pack-file.js";
import { PackGone } from "./pack-reader.js";
import type { MergeJob } from "./pack-merge-job.js";

/** What the thread posts back for job `id`. */
export type MergeReply =
  | { readonly id: number; readonly kind: "merged"; readonly pack: ArrayBuffer; readonly idx: ArrayBuffer; readonly checksum: string; readonly count: number; readonly rev?: ArrayBuffer }
  | { readonly id: number; readonly kind: "ref-deltas" }
  | { readonly id: number; readonly kind: "gone" }
  | { readonly id: number; readonly kind: "failed"; readonly message: string; /** A source found damaged (see pack-merge.ts), by name. */ readonly damagedPack?: string };

/** A merged pack, with its reverse index when the thread made one. */
export type MergedOnThread = EncodedPack & { readonly rev?: Buffer };

/** The thread could not be started, or died: merge on the caller's thread instead. */
export class MergeThreadUnavailable extends Error {}

interface Pending {
  resolve(pack: MergedOnThread | null): void;
  reject(error: unknown): void;
}

/** Longest wait (ms) of the thread at one entry for the commits in flight to end. */
export const YIELD_WAIT_MS = 20;
/** Most waits of one job for commits (so at most 1 s of waiting); then it runs through. */
export const YIELD_MAX_WAITS = 50;

/**
 * The nice value the merge thread takes (its own, not the process's; see
 * {@link lowerThreadPriority}): a merge is background work, and on a machine with fewer free cores
 * than busy threads the event loop that fires timers should win the core. Measured (design notes
 * §84): with one busy loop beside it on the 2-core machine, lateness p99 at 1,000 fires/s 22–29 ms
 * against 25–31 ms at the process's priority.
 */
export const MERGE_THREAD_NICE = 10;

/**
 * Lowers the calling thread's CPU priority to `nice` where the platform allows one thread's: on
 * Linux `setpriority(PRIO_PROCESS, tid)` sets that thread's nice value alone (the thread id read
 * from `/proc/thread-self`); the process's main thread is never changed (called there, nothing
 * happens), nor a thread already at `nice` or lower priority. Raising a nice value needs no
 * privilege. Elsewhere, or when refused, nothing changes: it is an optimisation.
 */
export function lowerThreadPriority(nice: number): void {
  if (process.platform !== "linux") return;
  try {
    const tid = Number(readlinkSync("/proc/thread-self").split("/").pop());
    if (!Number.isSafeInteger(tid) || tid <= 0 || tid === process.pid) return;
    if (getPriority(tid) < nice) setPriority(tid, nice);
  } catch {
    // The thread keeps the process's priority.
  }
}

/**
 * Shared with the thread: [0] commits in flight in this process, [1] times the thread waited for
 * them (for tests and benchmarks).
 */
const commitState = new Int32Array(new SharedArrayBuffer(2 * Int32Array.BYTES_PER_ELEMENT));

/**
 * Marks a commit in flight until the returned release is called (once; later calls do nothing):
 * merge jobs that yield to commits wait meanwhile (see the module comment). Costs two atomic
 * operations; fine with no thread running.
 */
export function holdMerges(): () => void {
  Atomics.add(commitState, 0, 1);
  let released = false;
  return () => {
    if (released) return;
    released = true;
    if (Atomics.sub(commitState, 0, 1) === 1) Atomics.notify(commitState, 0);
  };
}

/** Commits of this process in flight now (holds taken by {@link holdMerges} and not released). */
export function commitsInFlight(): number {
  return Atomics.load(commitState, 0);
}

/** How many times the merge thread has waited for commits in flight, since the process started. */
export function mergeYields(): number {
  return Atomics.load(commitState, 1);
}

let worker: Worker | null = null;
let broken = false;
let nextId = 1;
const pending = new Map<number, Pending>();

function failAll(error: unknown): void {
  for (const job of pending.values()) job.reject(error);
  pending.clear();
}

function start(): Worker {
  // Run from sources (tests, `node --import tsx`) the entry is TypeScript: the thread registers
  // the same loader before importing it. Built, it is the .js beside this file.
  const fromSources = import.meta.url.endsWith(".ts");
  const entry = new URL(fromSources ? "./pack-merge-worker.ts" : "./pack-merge-worker.js", import.meta.url).href;
  const source = fromSources
    ? `import("tsx/esm/api").then((tsx) => { tsx.register(); return import(${JSON.stringify(entry)}); });`
    : `import(${JSON.stringify(entry)});`;
  const thread = new Worker(source, { eval: true, workerData: { commitState: commitState.buffer } });
  thread.unref();
  thread.on("message", (reply: MergeReply) => {
    const job = pending.get(reply.id);
    if (job === undefined) return;
    pending.delete(reply.id);
    if (reply.kind === "merged") {
      job.resolve({ pack: Buffer.from(reply.pack), idx: Buffer.from(reply.idx), checksum: reply.checksum, count: reply.count, ...(reply.rev === undefined ? {} : { rev: Buffer.from(reply.rev) }) });
    } else if (reply.kind === "ref-deltas") {
      job.resolve(null);
    } else if (reply.kind === "gone") {
      job.reject(new PackGone("a merged pack vanished"));
    } else if (reply.damagedPack !== undefined) {
      job.reject(new WorkflowHostError("object_corrupt", reply.message, { pack: reply.damagedPack, damagedSource: true }));
    } else {
      job.reject(new Error(reply.message));
    }
  });
  const die = (error: unknown): void => {
    broken = true;
    worker = null;
    failAll(new MergeThreadUnavailable("the merge thread stopped", { cause: error }));
  };
  thread.on("error", die);
  thread.on("exit", (code) => die(new Error(`exit ${code}`)));
  return thread;
}

/**
 * Runs `job` on the merge thread.
 * @returns the merged pack (not yet written anywhere) with its reverse index (`rev`, see
 *   pack-rev-index.ts; for packs of at least REVERSE_INDEX_MIN_OBJECTS), or null when a source
 *   holds a ref-delta
 * @throws MergeThreadUnavailable when there is no thread to run it (merge here instead);
 *   PackGone when a source vanished; Error for a source that cannot be decoded
 */
export function mergeOnThread(job: MergeJob): Promise<MergedOnThread | null> {
  if (broken) return Promise.reject(new MergeThreadUnavailable("the merge thread is not available"));
  worker ??= start();
  const id = nextId++;
  const thread = worker;
  return new Promise<MergedOnThread | null>((resolve, reject) => {
    pending.set(id, { resolve, reject });
    thread.ref();
    thread.postMessage({ id, job });
  }).finally(() => {
    if (pending.size === 0) worker?.unref();
  });
}
