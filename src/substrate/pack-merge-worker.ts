/**
 * The merge thread's entry (started by pack-merge-thread.ts): runs the merge jobs it is posted
 * (pack-merge-job.ts), one after another, reading the source packs itself and posting back the
 * merged pack's bytes (transferred, not copied). It writes no file.
 */
import { closeSync, constants, openSync, readFileSync, readSync } from "node:fs";
import { parentPort, workerData } from "node:worker_threads";
import { WorkflowHostError } from "../errors.js";
import { parsePackIndex } from "./pack-index.js";
import { encodeReverseIndex, packOrder } from "./pack-rev-index.js";
import { packLength } from "./pack-file.js";
import { PackGone, REVERSE_INDEX_MIN_OBJECTS } from "./pack-reader.js";
import { runMergeJob, type MergeJob, type MergeJobIo } from "./pack-merge-job.js";
import { lowerThreadPriority, MERGE_THREAD_NICE, type MergeReply, YIELD_MAX_WAITS, YIELD_WAIT_MS } from "./pack-merge-thread.js";

function isMissing(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === "ENOENT";
}

/**
 * Opens for reading without following a link at a pack's or index's place, as the store's own
 * adapters do (contained-fs.ts); the folder itself is checked before a job is posted.
 */
const READ_NOFOLLOW = constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0);

function readWhole(path: string): Buffer {
  const fd = openSync(path, READ_NOFOLLOW);
  try {
    return readFileSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Reads with blocking calls: this thread has nothing else to do meanwhile. */
const ioFor = (packDir: string): MergeJobIo => ({
  async readRange(path, start, length) {
    const fd = openSync(path, READ_NOFOLLOW);
    try {
      const out = Buffer.allocUnsafeSlow(length);
      let got = 0;
      while (got < length) {
        const n = readSync(fd, out, got, length - got, start + got);
        if (n === 0) break;
        got += n;
      }
      return out.subarray(0, got);
    } finally {
      closeSync(fd);
    }
  },
  async index(source) {
    return parsePackIndex(source.name, readWhole(`${packDir}/${source.name}.idx`), source.size);
  },
});

/** A buffer's bytes as a transferable ArrayBuffer of their own (copied when shared with others). */
function own(bytes: Buffer): ArrayBuffer {
  if (bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.buffer instanceof ArrayBuffer) return bytes.buffer;
  const copy = new ArrayBuffer(bytes.byteLength);
  new Uint8Array(copy).set(bytes);
  return copy;
}

/** [0] commits in flight in the process, [1] this thread's waits for them (pack-merge-thread.ts). */
const commitState = (workerData as { commitState?: SharedArrayBuffer } | null)?.commitState;
const commits = commitState === undefined ? null : new Int32Array(commitState);

/**
 * The job's pause: while a commit is in flight, waits for the last one to end (woken by its
 * release), at most YIELD_WAIT_MS at a time and YIELD_MAX_WAITS times over the job.
 */
function yieldingPause(): () => void {
  let waits = 0;
  return () => {
    if (commits === null || waits >= YIELD_MAX_WAITS) return;
    const inFlight = Atomics.load(commits, 0);
    if (inFlight === 0) return;
    waits += 1;
    Atomics.add(commits, 1, 1);
    Atomics.wait(commits, 0, inFlight, YIELD_WAIT_MS);
  };
}

async function answer(id: number, job: MergeJob): Promise<MergeReply> {
  try {
    const merged = await runMergeJob(job, ioFor(job.packDir), job.yieldToCommits === true ? { pause: yieldingPause() } : {});
    if (merged === null) return { id, kind: "ref-deltas" };
    // The merged pack's reverse index, sorted here rather than on the event loop (checked there
    // before it is written). Same bound as the reader's REVERSE_INDEX_MIN_OBJECTS.
    let rev: ArrayBuffer | undefined;
    if (merged.count >= REVERSE_INDEX_MIN_OBJECTS) {
      const index = parsePackIndex(`pack-${merged.checksum}`, merged.idx, packLength(merged));
      rev = own(encodeReverseIndex(index, packOrder(index)));
    }
    return { id, kind: "merged", pack: own(merged.pack), idx: own(merged.idx), checksum: merged.checksum, count: merged.count, ...(rev === undefined ? {} : { rev }) };
  } catch (error) {
    if (error instanceof PackGone || isMissing(error)) return { id, kind: "gone" };
    const damagedPack = error instanceof WorkflowHostError && error.data.damagedSource === true && typeof error.data.pack === "string" ? error.data.pack : undefined;
    return { id, kind: "failed", message: error instanceof Error ? error.message : String(error), ...(damagedPack === undefined ? {} : { damagedPack }) };
  }
}

// Background work: on a machine with fewer free cores than busy threads, the event loop that
// fires timers wins the core (see MERGE_THREAD_NICE).
lowerThreadPriority(MERGE_THREAD_NICE);

let chain = Promise.resolve();
parentPort?.on("message", (message: { id: number; job: MergeJob }) => {
  chain = chain.then(async () => {
    const reply = await answer(message.id, message.job);
    parentPort?.postMessage(reply, reply.kind === "merged" ? [reply.pack, reply.idx, ...(reply.rev === undefined ? [] : [reply.rev])] : []);
  });
});
