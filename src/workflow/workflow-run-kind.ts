/**
 * The `workflow-run` kind handler: what a valid commit to a deployment repo is (docs/design.md §2–§4).
 * The store calls `validatePush` with readers of the current tip and of the tree about to be
 * committed; it throws the first violation and nothing moves.
 */
import { WorkflowHostError } from "../errors.js";
import type { CommittedReads, KindHandler, PathChange, PushContext } from "../substrate/types.js";
import { isTerminalEventType } from "./event-schemas.js";
import { DEFAULT_MAX_EVENT_BYTES, parseEvent } from "./events.js";
import { compactedLogPath, parseCompactedLogPath, parseEventPath, parseEventPathName, runEventsPrefix, runsPrefix } from "./paths.js";

/** Kind name of deployment repos. */
export const WORKFLOW_RUN_KIND = "workflow-run";

/** Folder under the data dir holding deployment repos. */
export const WORKFLOW_RUN_DIRECTORY_PREFIX = "deployments";

export interface WorkflowRunKindOptions {
  /** Largest accepted event file (bytes of UTF-8, default 1 MiB). */
  readonly maxEventBytes?: number;
}

interface RunChanges {
  readonly added: { readonly seq: number; readonly change: PathChange }[];
  readonly deleted: { readonly seq: number; readonly change: PathChange }[];
  compacted: PathChange | null;
}

function rejected(path: string, seq: number | null, detail: string): WorkflowHostError {
  return new WorkflowHostError("event_invalid", `${path}: ${detail}`, { path, seq });
}

/**
 * The handler for deployment repos: kind `"workflow-run"`, directoryPrefix `"deployments"`.
 *
 * `validatePush` accepts a commit when, for every changed path under `runs/`:
 * - the path is an event file `runs/<runId>/events/<seq>.json` (seq without leading zeros) or a
 *   compacted log `runs/<runId>/events.jsonl`; anything else under `runs/` is refused;
 * - event files are only added (append-only: an existing event is never modified or deleted);
 * - a run's new seqs continue its prior maximum densely (the first event of a run is 0 or 1);
 * - each new event parses ({@link parseEvent}: body seq equals the file name, schema, ids,
 *   instants, a TimerSet's cron and zone probed with croner, size ≤ `maxEventBytes`);
 * - nothing follows a terminal event (`RunCompleted`, `RunFailed`, `RunCancelled`), nor a
 *   compacted log;
 * - the one allowed deletion is compaction of a terminal run: every event file is deleted in the
 *   commit that adds `events.jsonl`, whose bytes are each prior event's bytes plus `\n`, in seq
 *   order.
 * Paths outside `runs/` are not this handler's concern. Only the changed runs are read (their
 * event folder listing, the prior last event, and the new blobs), so the cost is O(changed
 * runs), not O(repo). Signal ids are not checked for duplicates here: that needs the whole log
 * and is the signal channel's job, under the repo lock.
 *
 * @throws the first violation, in run-id then seq order: `event_invalid` (path rules, seq rules,
 *   after-terminal, bad JSON or shape), or the field's own code (`id_invalid`, `time_invalid`,
 *   `cron_invalid`), or `payload_too_large`; `data` holds `path` and `seq` (null for a path rule).
 */
export function workflowRunKind(opts: WorkflowRunKindOptions = {}): KindHandler {
  const maxEventBytes = opts.maxEventBytes ?? DEFAULT_MAX_EVENT_BYTES;
  return {
    kind: WORKFLOW_RUN_KIND,
    directoryPrefix: WORKFLOW_RUN_DIRECTORY_PREFIX,
    async validatePush(ctx: PushContext): Promise<void> {
      const runs = groupByRun(ctx.changes);
      for (const runId of [...runs.keys()].sort()) {
        const run = runs.get(runId);
        if (run === undefined) continue;
        if (run.compacted !== null || run.deleted.length > 0) await checkCompaction(ctx, runId, run);
        else await checkAppend(ctx, runId, run, maxEventBytes);
      }
    },
  };
}

function groupByRun(changes: readonly PathChange[]): Map<string, RunChanges> {
  const runs = new Map<string, RunChanges>();
  const runOf = (runId: string): RunChanges => {
    let run = runs.get(runId);
    if (run === undefined) {
      run = { added: [], deleted: [], compacted: null };
      runs.set(runId, run);
    }
    return run;
  };
  for (const change of [...changes].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))) {
    if (!change.path.startsWith(runsPrefix)) continue;
    const event = parseEventPath(change.path);
    if (event !== null) {
      if (change.status === "modified") throw rejected(change.path, event.seq, "event files are append-only; an existing event was modified");
      const run = runOf(event.runId);
      (change.status === "added" ? run.added : run.deleted).push({ seq: event.seq, change });
      continue;
    }
    const compacted = parseCompactedLogPath(change.path);
    if (compacted === null) {
      throw rejected(change.path, null, "not an event file; allowed under runs/: runs/<runId>/events/<seq>.json and runs/<runId>/events.jsonl");
    }
    if (change.status !== "added") throw rejected(change.path, null, `a compacted log is never ${change.status}`);
    runOf(compacted.runId).compacted = change;
  }
  return runs;
}

// Every entry named `<seq>.json` holds its seq, whatever it is: a folder or a symlink pushed
// by git in place of an event file is unreadable, but the next event must still come after it,
// or the reader (which counts it, see `readRunLog`) and this check disagree on the next seq and
// every later append to the run is refused.
async function priorEventSeqs(prior: CommittedReads | null, runId: string): Promise<number[]> {
  if (prior === null) return [];
  const entries = await prior.listDir(runEventsPrefix(runId).slice(0, -1));
  const seqs: number[] = [];
  for (const entry of entries) {
    const seq = parseEventPathName(entry.name);
    if (seq !== null) seqs.push(seq);
  }
  return seqs.sort((a, b) => a - b);
}

// The prior log was validated on the way in, except for commits that arrived by `git push`; an
// unreadable last event is therefore judged not terminal rather than blocking every append.
function isTerminalBytes(bytes: Uint8Array | null): boolean {
  if (bytes === null) return false;
  try {
    const value: unknown = JSON.parse(new TextDecoder().decode(bytes));
    return typeof value === "object" && value !== null && isTerminalEventType(String((value as { type?: unknown }).type));
  } catch {
    return false;
  }
}

async function checkAppend(ctx: PushContext, runId: string, run: RunChanges, maxEventBytes: number): Promise<void> {
  const added = [...run.added].sort((a, b) => a.seq - b.seq);
  const first = added[0];
  if (first === undefined) return;
  if (ctx.prior !== null && (await ctx.prior.treeOid(compactedLogPath(runId))) !== null) {
    throw rejected(first.change.path, first.seq, "the run is compacted (ended); nothing may follow");
  }
  const priorSeqs = await priorEventSeqs(ctx.prior, runId);
  const priorMax = priorSeqs.at(-1) ?? -1;
  let terminalSeq: number | null =
    priorMax >= 0 && isTerminalBytes((await ctx.prior?.readBlob(`${runEventsPrefix(runId)}${priorMax}.json`)) ?? null) ? priorMax : null;
  let expected = priorMax + 1;
  if (priorMax < 0 && first.seq === 1) expected = 1;
  for (const { seq, change } of added) {
    if (seq !== expected) {
      throw rejected(change.path, seq, `seq ${seq} breaks the dense sequence; expected ${expected}${priorMax < 0 && expected === 0 ? " or 1" : ""}`);
    }
    expected += 1;
    if (terminalSeq !== null) throw rejected(change.path, seq, `nothing may follow the terminal event at seq ${terminalSeq}`);
    const event = parseEvent(await ctx.prospective.readBlobByOid(change.oid), { path: change.path, expectedSeq: seq, maxEventBytes });
    if (isTerminalEventType(event.type)) terminalSeq = seq;
  }
}

async function checkCompaction(ctx: PushContext, runId: string, run: RunChanges): Promise<void> {
  const deleted = [...run.deleted].sort((a, b) => a.seq - b.seq);
  const compacted = run.compacted;
  if (compacted === null) {
    const d = deleted[0];
    throw rejected(d?.change.path ?? runEventsPrefix(runId), d?.seq ?? null, "event files are append-only; an existing event was deleted");
  }
  const path = compacted.path;
  const added = run.added[0];
  if (added !== undefined) throw rejected(added.change.path, added.seq, "events may not be added in the commit that compacts the run");
  const priorSeqs = await priorEventSeqs(ctx.prior, runId);
  const deletedSeqs = deleted.map((d) => d.seq);
  if (priorSeqs.length === 0 || priorSeqs.join(",") !== deletedSeqs.join(",")) {
    throw rejected(path, null, "compaction must delete exactly every event file of the run");
  }
  if ((await ctx.prospective.listDir(runEventsPrefix(runId).slice(0, -1))).length > 0) {
    throw rejected(path, null, "compaction must leave the run's events folder empty");
  }
  const parts: Uint8Array[] = [];
  for (const { change } of deleted) parts.push(await (ctx.prior as CommittedReads).readBlobByOid(change.oid));
  if (!isTerminalBytes(parts.at(-1) ?? null)) throw rejected(path, null, "only an ended run (last event terminal) may be compacted");
  const expected = joinLines(parts);
  const actual = await ctx.prospective.readBlobByOid(compacted.oid);
  if (actual.length !== expected.length || actual.some((byte, i) => byte !== expected[i])) {
    throw rejected(path, null, "the compacted log must be each event's bytes followed by \\n, in seq order");
  }
}

function joinLines(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length + 1, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
    out[at] = 0x0a;
    at += 1;
  }
  return out;
}
