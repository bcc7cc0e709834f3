/**
 * Sealing an ended run: its log folded into `runs/<runId>/events.jsonl` by the original
 * system's rule, each event file's exact bytes followed by `\n`, in seq order.
 *
 * The event files are kept beside it, as the original does (its layout allows no log-less run
 * folder but one holding only grants.json and parts/): the commit only adds one file, readers
 * get the same log from either form, and `git log -- runs/<runId>/events/` keeps working. The
 * workflow-run kind's `validatePush` checks the fold again under the repo lock, so a seal that
 * drops or reorders an event is refused, and once written the file never changes.
 */
import { DEFAULT_REF } from "../substrate/ref-name.js";
import { WorkflowHostError } from "../errors.js";
import type { Principal, RepoStore } from "../substrate/types.js";
import { foldEventFiles, sameBytes } from "../workflow/compacted-log.js";
import { parseRepoId, parseRunId } from "../workflow/ids.js";
import { compactedLogPath, parseEventPathName, runEventsPrefix } from "../workflow/paths.js";
import { archivedRunError } from "../workflow/run-archive.js";
import { summarizeRunLog } from "../workflow/run-log-summary.js";
import { asUnreadableRunError, unreadableRunError } from "../workflow/unreadable-runs.js";
import { WORKFLOW_RUN_KIND } from "../workflow/workflow-run-kind.js";

export interface CompactRunOptions {
  readonly store: RepoStore;
  readonly principal: Principal;
  readonly repoId: string;
  readonly runId: string;
  /** Default `DEFAULT_REF` ("refs/heads/main"). */
  readonly ref?: string;
  /** Largest event read (bytes, default 1 MiB). */
  readonly maxEventBytes?: number;
}

export interface CompactRunResult {
  /** False when the run was already sealed: nothing was committed. */
  readonly committed: boolean;
  /** The ref's commit afterwards (the seal's commit, or the unchanged tip). */
  readonly commitSha: string | null;
  /** `runs/<runId>/events.jsonl`. */
  readonly path: string;
  /** Events in the sealed log. */
  readonly events: number;
  /** Size of the sealed log in bytes. */
  readonly bytes: number;
}

/**
 * Seals an ended run into `runs/<runId>/events.jsonl` in one commit, keeping its event files.
 * Idempotent: a run already sealed (a valid events.jsonl, in either form) commits nothing. A
 * pushed events.jsonl that is not a valid seal is replaced. Concurrent calls commit at most one
 * seal (the decision is re-made under the repo lock).
 * @returns what was written, see {@link CompactRunResult}
 * @throws repo_id_invalid, id_invalid before any store call; run_archived when retention moved
 *   the run to the archive ref (an archived log is never changed); object_missing /
 *   object_corrupt when an object of the run cannot be read (its folder, `events/` folder, an
 *   event, `blobs/`: `unreadableRunError`, naming the deployment, the run, what is lost, its
 *   path and oid, "nothing was written"); event_invalid when the run has no
 *   log (`data.reason` "no_log"), has not ended ("not_ended"), or its log has problems
 *   ("log_problems": bad event files, missing seqs, events after the terminal one: a seal of it
 *   would not be a valid log); the store's errors (authorize_denied, ref_locked, …)
 */
export async function compactRun(opts: CompactRunOptions): Promise<CompactRunResult> {
  const repoId = parseRepoId(opts.repoId);
  const runId = parseRunId(opts.runId);
  const path = compactedLogPath(runId);
  const refuse = (reason: string, detail: string): WorkflowHostError =>
    new WorkflowHostError("event_invalid", `run ${runId} of ${repoId} cannot be sealed: ${detail}`, { repoId, runId, reason });
  const repo = { kind: WORKFLOW_RUN_KIND, id: repoId };
  const written = await opts.store.writeTreeDelta<{ events: number; bytes: number }>(
    opts.principal,
    repo,
    opts.ref ?? DEFAULT_REF,
    {
      message: `Seal run ${runId} into events.jsonl`,
      computeDelta: async (_parentSha, reads) => {
        // The log's state and every report, folded a chunk of blobs at a time (no event held):
        // the seal itself then holds the files' bytes, which it is made of.
        const log = await summarizeRunLog(reads, runId, { ...(opts.maxEventBytes === undefined ? {} : { maxEventBytes: opts.maxEventBytes }), maxReports: Number.MAX_SAFE_INTEGER, summaries: null });
        const existing = await reads.readBlob(path);
        const others = [...log.bad, ...log.problems].filter((p) => p.path !== path);
        if (existing !== null && others.length === log.bad.length + log.problems.length && log.state.terminal !== null) {
          return { result: { events: log.eventCount, bytes: existing.length } };
        }
        // An event (or blobs/) that cannot be read: the seal would not hold it, and it is not the
        // log's fault but the repository's. Named as every write names it ("nothing was written").
        if (log.unreadable !== null) throw unreadableRunError(repoId, { runId, path: log.unreadable.path, error: log.unreadable.error }, "nothing was written");
        if (log.eventCount === 0 && others.length === 0) throw refuse("no_log", "it has no events");
        const first = others[0];
        if (first !== undefined) throw refuse("log_problems", `its log has ${others.length} problem(s), first ${first.error.message}`);
        if (log.state.terminal === null) throw refuse("not_ended", "it has not ended; only a run whose last event is RunCompleted, RunFailed or RunCancelled may be sealed");
        const files: { seq: number; oid: string }[] = [];
        for (const entry of await reads.listDir(runEventsPrefix(runId).slice(0, -1))) {
          const seq = parseEventPathName(entry.name);
          if (seq !== null) files.push({ seq, oid: entry.oid });
        }
        files.sort((a, b) => a.seq - b.seq);
        const sealed = foldEventFiles(await Promise.all(files.map((f) => reads.readBlobByOid(f.oid))));
        if (existing !== null && sameBytes(existing, sealed)) return { result: { events: files.length, bytes: sealed.length } };
        return { puts: new Map([[path, sealed]]), result: { events: files.length, bytes: sealed.length } };
      },
    },
  ).catch(async (error: unknown) => {
    // The run's folder or events/ folder cannot be read: named (deployment, run, what is lost,
    // path, oid), as the push check names a lost last event; the store's own message is not given.
    if (!(error instanceof WorkflowHostError) || error.data["reason"] !== "no_log") throw asUnreadableRunError(repoId, runId, error, "nothing was written");
    throw (await archivedRunError(opts.store, opts.principal, repo, runId, opts.ref).catch(() => null)) ?? error;
  });
  const result = written.result ?? { events: 0, bytes: 0 };
  return { committed: written.committed, commitSha: written.commitSha, path, events: result.events, bytes: result.bytes };
}
