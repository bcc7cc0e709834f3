/**
 * Reading and appending one run's log through the repo store. Reads are lenient (a bad event
 * is reported and skipped, never fatal); appends are strict (every new event is validated and
 * written at the next dense seq, under the store's repo lock, re-checked against the log).
 */
import { WorkflowHostError } from "../errors.js";
import type { CommittedReads, Principal, RepoStore, WriteResult } from "../substrate/types.js";
import { parseEvent, serializeEvent } from "./events.js";
import { parseEventPathName, runEventsPrefix } from "./paths.js";
import { reduceRunState } from "./run-state.js";
import type { RunEvent, RunState } from "./types.js";
import { WORKFLOW_RUN_KIND } from "./workflow-run-kind.js";

/** An event file that could not be read as an event: reported, skipped, never fatal. */
export interface BadEvent {
  readonly runId: string;
  readonly path: string;
  /** The seq from the file name, or null when the name itself is not `<seq>.json`. */
  readonly seq: number | null;
  readonly error: WorkflowHostError;
}

/** One run's log as read at one commit. */
export interface RunLog {
  readonly runId: string;
  /** Valid events in numeric seq order. */
  readonly events: readonly RunEvent[];
  readonly bad: readonly BadEvent[];
  /**
   * Highest seq among the event file names, valid or not, or -1 for none. The next append
   * goes to `maxFileSeq + 1`, so a bad file is never overwritten and seqs stay dense.
   */
  readonly maxFileSeq: number;
  readonly state: RunState;
}

export interface ReadRunLogOptions {
  /** Largest event accepted on read (bytes, default 1 MiB). */
  readonly maxEventBytes?: number;
}

/**
 * Reads a run's events from the blobs directly under `runs/<runId>/events/`.
 * @param files name → bytes (e.g. what `writeTreePreservingPrefix` hands to `merge`)
 * @returns the run log; bad files are listed in `bad` with path and seq, never thrown
 */
export function readRunLogFromFiles(
  runId: string,
  files: ReadonlyMap<string, Uint8Array>,
  options: ReadRunLogOptions = {},
): RunLog {
  const prefix = runEventsPrefix(runId);
  const events: RunEvent[] = [];
  const bad: BadEvent[] = [];
  let maxFileSeq = -1;
  for (const [name, bytes] of files) {
    const path = `${prefix}${name}`;
    const seq = parseEventPathName(name);
    if (seq === null) {
      bad.push({
        runId,
        path,
        seq: null,
        error: new WorkflowHostError("event_invalid", `event file name ${JSON.stringify(name)} is not <seq>.json`, { path }),
      });
      continue;
    }
    if (seq > maxFileSeq) maxFileSeq = seq;
    try {
      events.push(parseEvent(bytes, withLimit({ path, expectedSeq: seq }, options.maxEventBytes)));
    } catch (error) {
      bad.push({ runId, path, seq, error: asEventError(error, path, seq) });
    }
  }
  events.sort((a, b) => a.seq - b.seq);
  bad.sort((a, b) => (a.seq ?? -1) - (b.seq ?? -1));
  return { runId, events, bad, maxFileSeq, state: reduceRunState(runId, events) };
}

/**
 * Reads a run's log at the commit `reads` is pinned to. Entries that are not blobs (a folder or
 * a symlink where an event should be) are reported as bad events.
 */
export async function readRunLog(reads: CommittedReads, runId: string, options: ReadRunLogOptions = {}): Promise<RunLog> {
  const prefix = runEventsPrefix(runId);
  const entries = await reads.listDir(prefix.slice(0, -1));
  const files = new Map<string, Uint8Array>();
  const notBlobs: BadEvent[] = [];
  for (const entry of entries) {
    if (entry.type !== "blob") {
      const path = `${prefix}${entry.name}`;
      notBlobs.push({
        runId,
        path,
        seq: parseEventPathName(entry.name),
        error: new WorkflowHostError("event_invalid", `${path} is a ${entry.type}, not an event file`, { path }),
      });
      continue;
    }
    files.set(entry.name, await reads.readBlobByOid(entry.oid));
  }
  const log = readRunLogFromFiles(runId, files, options);
  if (notBlobs.length === 0) return log;
  const maxFileSeq = Math.max(log.maxFileSeq, ...notBlobs.map((b) => b.seq ?? -1));
  return { ...log, bad: [...log.bad, ...notBlobs], maxFileSeq };
}

/** What an append decides, given the log under the repo lock. */
export interface AppendDecision<R> {
  /** Events to append, without `seq`: they get `maxFileSeq + 1`, `+ 2`, … in order. */
  readonly append: readonly Record<string, unknown>[];
  /** Returned to the caller whether or not anything was appended. */
  readonly result: R;
}

export interface AppendRunEventsOptions<R> {
  readonly store: RepoStore;
  readonly principal: Principal;
  readonly repoId: string;
  readonly runId: string;
  /** Default "refs/heads/main". */
  readonly ref?: string;
  readonly message: string;
  readonly maxEventBytes?: number;
  /**
   * Runs under the repo lock with the log at the current tip (and again after a lost
   * compare-and-swap). Returning `append: []` commits nothing.
   */
  readonly decide: (log: RunLog) => AppendDecision<R>;
}

/**
 * Appends events to one run's log in one commit, at the next dense seqs, after `decide` has
 * re-checked the log under the repo lock (so concurrent appenders never reuse a seq and a
 * check-then-append is atomic).
 * @returns the store's write result; `result` is what `decide` returned on the winning attempt
 * @throws event_invalid / payload_too_large / time_invalid when a new event is invalid
 *   (nothing is written), plus every error of `writeTreePreservingPrefix`
 */
export async function appendRunEvents<R>(options: AppendRunEventsOptions<R>): Promise<WriteResult<R>> {
  const { store, principal, runId } = options;
  const prefix = runEventsPrefix(runId);
  return store.writeTreePreservingPrefix<R>(
    principal,
    { kind: WORKFLOW_RUN_KIND, id: options.repoId },
    options.ref ?? "refs/heads/main",
    {
      preservePrefix: prefix,
      message: options.message,
      merge: (existing) => {
        const log = readRunLogFromFiles(runId, existing, withLimit({}, options.maxEventBytes));
        const decision = options.decide(log);
        if (decision.append.length === 0) return { files: existing, result: decision.result };
        const files = new Map<string, Uint8Array | string>(existing);
        let seq = log.maxFileSeq + 1;
        if (seq === 0) seq = 1;
        for (const body of decision.append) {
          const event = parseEvent(serializeEvent({ ...body, seq } as RunEvent, withLimit({}, options.maxEventBytes)), withLimit({ expectedSeq: seq }, options.maxEventBytes));
          files.set(`${seq}.json`, serializeEvent(event, withLimit({}, options.maxEventBytes)));
          seq += 1;
        }
        return { files, result: decision.result };
      },
    },
  );
}

function withLimit<T extends object>(base: T, maxEventBytes: number | undefined): T & { maxEventBytes?: number } {
  return maxEventBytes === undefined ? base : { ...base, maxEventBytes };
}

function asEventError(error: unknown, path: string, seq: number): WorkflowHostError {
  if (error instanceof WorkflowHostError) return error;
  return new WorkflowHostError("event_invalid", `${path} could not be read as an event`, { path, seq }, { cause: error });
}
