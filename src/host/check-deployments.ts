/**
 * A read-only health check of deployment repos, as `workflow-host check` runs it: the ref
 * resolves, HEAD names a ref or holds an oid (else plain git refuses the folder), every run folder is well formed (the original layout is accepted), every event
 * parses, seqs are dense, nothing follows a terminal event, a sealed events.jsonl is valid, no
 * run folder reuses the id of a run the archive ref holds (`run_archived`), no symbolic link in the repository's folder leads
 * outside that folder, and the folder itself is no link (`path_escapes_data_dir`, its path relative to the data dir). Each problem names its repo, path and seq, so a person can find it with
 * `git show main:<path>`.
 *
 * The archive ref (`refs/archive/runs`, where retention moves ended runs) is checked the same
 * way when it exists: it resolves, every entry is a run folder, every log reads whole, and every
 * archived run has ended (`event_invalid`, `data.reason` "archived_not_ended": retention only
 * moves ended runs). Its problems' paths are `refs/archive/runs:<path>`, as `git show` takes them.
 *
 * The check reads committed state at the tips only; object-level integrity of the whole history
 * is `git fsck`'s job.
 */
import { DEFAULT_REF } from "../substrate/ref-name.js";
import { WorkflowHostError, type ErrorCode } from "../errors.js";
import type { CommittedReads, Principal, RepoStore } from "../substrate/types.js";
import { REPO_OR_RUN_ID_PATTERN, parseRepoId } from "../workflow/ids.js";
import { runsEntryProblem } from "../workflow/log-problems.js";
import { runsPrefix } from "../workflow/paths.js";
import { ARCHIVE_REF, openArchive, reusedArchivedRunProblem } from "../workflow/run-archive.js";
import { summarizeRunLog } from "../workflow/run-log-summary.js";
import { readRunOrReport } from "../workflow/unreadable-runs.js";
import { WORKFLOW_RUN_KIND } from "../workflow/workflow-run-kind.js";

/** One thing wrong in one repo. */
export interface DeploymentProblem {
  readonly repoId: string;
  /**
   * Path inside the repo (`runs/r1/events/3.json`), or the ref name for a ref problem, or for
   * `path_escapes_data_dir` the link's path relative to the data dir (`deployments/d.git/refs/heads`).
   */
  readonly path: string;
  /** The event's seq when the problem is one event, else null. */
  readonly seq: number | null;
  readonly code: ErrorCode;
  /** One sentence, starting with the code. */
  readonly message: string;
  /**
   * True when this problem kept the whole of main from being read (a torn ref, a torn or
   * missing object, a pack that fails its checksum, an I/O failure): it is no event's, nothing in
   * the deployment is served until it is repaired, and it cannot be acknowledged. Absent otherwise.
   */
  readonly deploymentUnreadable?: true;
  /**
   * True when this problem is a run that could not be read at all: its folder or its `events/`
   * folder is missing (`object_missing`) or damaged (`object_corrupt`), `path` naming which
   * (`runs/<runId>`, `runs/<runId>/events`). The deployment's other runs are checked; the host
   * skips and reports this run until the object is restored, so it cannot be acknowledged
   * either. Absent otherwise.
   */
  readonly runUnreadable?: true;
}

export interface DeploymentSummary {
  readonly repoId: string;
  /** The tip checked, or null when the ref could not be read. */
  readonly commitSha: string | null;
  readonly runs: number;
  /** Events that parsed. */
  readonly events: number;
  readonly problems: number;
  /** The archive ref checked: its tip (null when it does not exist or could not be read), runs, events that parsed. */
  readonly archive: { readonly commitSha: string | null; readonly runs: number; readonly events: number };
}

export interface CheckReport {
  readonly repos: readonly DeploymentSummary[];
  /** Every problem, by repo, then path order. */
  readonly problems: readonly DeploymentProblem[];
}

export interface CheckDeploymentsOptions {
  readonly principal?: Principal;
  /** Only this deployment. Default: every deployment in the store. */
  readonly repoId?: string;
  /** Default `DEFAULT_REF` ("refs/heads/main"). */
  readonly ref?: string;
  /** Largest event accepted (bytes, default 1 MiB). */
  readonly maxEventBytes?: number;
}

/**
 * Checks deployment repos.
 * @returns a summary per repo and every problem found; problems are data, never thrown
 * @throws repo_id_invalid for a bad `repoId`; authorize_denied; store_stopped
 */
export async function checkDeployments(store: RepoStore, opts: CheckDeploymentsOptions = {}): Promise<CheckReport> {
  const principal = opts.principal ?? null;
  const ref = opts.ref ?? DEFAULT_REF;
  const repoIds = opts.repoId === undefined ? await store.listRepos(principal, WORKFLOW_RUN_KIND) : [parseRepoId(opts.repoId)];
  const repos: DeploymentSummary[] = [];
  const problems: DeploymentProblem[] = [];
  for (const repoId of repoIds) {
    const found: DeploymentProblem[] = [];
    const report = (path: string, seq: number | null, error: WorkflowHostError, unreadable: boolean | "run" = false): void => {
      found.push({ repoId, path, seq, code: error.code, message: error.message, ...(unreadable === true ? { deploymentUnreadable: true as const } : unreadable === "run" ? { runUnreadable: true as const } : {}) });
    };
    let commitSha: string | null = null;
    let runs = 0;
    let events = 0;
    let archive: CommittedReads | null = null;
    let archiveSummary: DeploymentSummary["archive"] = { commitSha: null, runs: 0, events: 0 };
    let archiveError: WorkflowHostError | null = null;
    const archiveProblems: DeploymentProblem[] = [];
    // Links leading out of the data dir, wherever they are: the reads below meet only those on
    // their own paths (and say so in the same words), a write may meet any of them.
    for (const path of (await store.escapingLinks?.(principal, { kind: WORKFLOW_RUN_KIND, id: repoId })) ?? []) {
      report(path, null, new WorkflowHostError("path_escapes_data_dir", `${path} is a symbolic link leading outside its repository's folder; the host refuses to read or write through it; replace it with the folder or file itself`, { repoId, path }));
    }
    const alreadySaid = (error: WorkflowHostError): boolean =>
      error.code === "path_escapes_data_dir" && found.some((p) => p.code === error.code && typeof error.data["path"] === "string" && (error.data["path"] === p.path || error.data["path"].startsWith(`${p.path}/`)));
    try {
      archive = await openArchive(store, principal, { kind: WORKFLOW_RUN_KIND, id: repoId });
      if (archive !== null) {
        const prefixed: Report = (path, seq, error, run) =>
          archiveProblems.push({ repoId, path: `${ARCHIVE_REF}:${path}`, seq, code: error.code, message: error.message, ...(run === "run" ? { runUnreadable: true as const } : {}) });
        const counted = await checkRuns(archive, null, prefixed, opts.maxEventBytes, true);
        archiveSummary = { commitSha: archive.commitSha, runs: counted.runs, events: counted.events };
      }
    } catch (error) {
      if (!(error instanceof WorkflowHostError) || error.code === "authorize_denied" || error.code === "store_stopped") throw error;
      // A torn archive ref: its runs cannot be read (recovery never reads them); main still can.
      archiveError = error;
      archive = null;
    }
    try {
      commitSha = await store.resolveRef(principal, { kind: WORKFLOW_RUN_KIND, id: repoId }, ref);
      if (commitSha === null) {
        report(ref, null, new WorkflowHostError("ref_corrupt", `${ref} of ${repoId} has no commit; every deployment has at least its genesis commit`, { repoId, ref }), true);
      } else {
        const reads = await store.openCommittedReads(principal, { kind: WORKFLOW_RUN_KIND, id: repoId }, commitSha);
        const counted = await checkRuns(reads, archive, report, opts.maxEventBytes, false);
        runs = counted.runs;
        events = counted.events;
      }
    } catch (error) {
      if (!(error instanceof WorkflowHostError) || error.code === "authorize_denied" || error.code === "store_stopped") throw error;
      // Main could not be read whole: the host serves none of this deployment (repo-failed) until
      // it is repaired, so this is never an event problem an operator may acknowledge away.
      if (!alreadySaid(error)) report(typeof error.data["path"] === "string" ? error.data["path"] : ref, null, error, true);
    }
    // HEAD: git takes a folder for a repository only when its HEAD names a ref or holds an oid,
    // so a damaged one leaves the deployment unreadable to plain git even while main is sound
    // (the store reads main by name). A HEAD naming another branch, or detached, is fine.
    try {
      await store.resolveRef(principal, { kind: WORKFLOW_RUN_KIND, id: repoId }, "HEAD");
    } catch (error) {
      if (!(error instanceof WorkflowHostError) || error.code === "authorize_denied" || error.code === "store_stopped") throw error;
      // A damaged ref store (packed-refs) breaks HEAD as it breaks main: said once.
      if (!found.some((p) => p.message === error.message) && !alreadySaid(error)) report("HEAD", null, error);
    }
    // The archive after main. A damaged ref store (packed-refs) breaks both refs alike: said once.
    if (archiveError !== null && !found.some((p) => p.message === archiveError.message) && !alreadySaid(archiveError)) report(ARCHIVE_REF, null, archiveError);
    found.push(...archiveProblems);
    repos.push({ repoId, commitSha, runs, events, problems: found.length, archive: archiveSummary });
    for (const problem of found) problems.push(problem);
  }
  return { repos, problems };
}

/** Reports one problem; `"run"` for a run that could not be read at all (see DeploymentProblem.runUnreadable). */
type Report = (path: string, seq: number | null, error: WorkflowHostError, run?: "run") => void;

/**
 * Every run folder under runs/ of one tree (main's, or the archive's with `archived` true: each
 * run must have ended there).
 */
async function checkRuns(reads: CommittedReads, archive: CommittedReads | null, report: Report, maxEventBytes: number | undefined, archived: boolean): Promise<{ runs: number; events: number }> {
  let runs = 0;
  let events = 0;
  for (const entry of await reads.listDir(runsPrefix.slice(0, -1))) {
    const runPath = `${runsPrefix}${entry.name}`;
    if (entry.type !== "tree") {
      // Worded as serve reports it (a file, a gitlink).
      const problem = runsEntryProblem(entry.name, entry.type);
      if (problem !== null) report(runPath, null, problem.error);
      continue;
    }
    if (!REPO_OR_RUN_ID_PATTERN.test(entry.name)) {
      report(runPath, null, new WorkflowHostError("id_invalid", `${runPath}: run id ${JSON.stringify(entry.name)} is not valid; allowed: 1-128 characters of A-Z a-z 0-9 _ -`, { path: runPath }));
      continue;
    }
    runs += 1;
    const reused = await reusedArchivedRunProblem(archive, entry.name, entry.oid);
    if (reused !== null) report(reused.path, reused.seq, reused.error);
    events += await checkRun(reads, entry.name, report, maxEventBytes, archived);
  }
  return { runs, events };
}

/**
 * One run: every problem its log has, as every reader sees it (`readRunLog`): unreadable event
 * files, breaks of density, events after the terminal one, entries outside the run folder's
 * layout (original layout accepted, see run-folder.ts) and a sealed events.jsonl that is not
 * valid (see compacted-log.ts).
 */
async function checkRun(reads: CommittedReads, runId: string, report: Report, maxEventBytes: number | undefined, archived: boolean): Promise<number> {
  // Folded a chunk of blobs at a time (no event held; every report listed, in readRunLog's order).
  // A run whose folder or events/ folder cannot be read is its own problem: the others are checked.
  const read = await readRunOrReport(runId, () => summarizeRunLog(reads, runId, { ...(maxEventBytes === undefined ? {} : { maxEventBytes }), maxReports: Number.MAX_SAFE_INTEGER, summaries: null }));
  if (read.unreadable !== null) {
    report(read.unreadable.path, null, read.unreadable.error, "run");
    return 0;
  }
  const log = read.value;
  for (const bad of log.bad) report(bad.path, bad.seq, bad.error);
  for (const problem of log.problems) report(problem.path, problem.seq, problem.error);
  if (archived && log.state.terminal === null && log.badCount === 0) {
    const path = `${runsPrefix}${runId}`;
    report(path, null, new WorkflowHostError("event_invalid", `${ARCHIVE_REF}:${path}: archived run ${runId} has not ended (last seq ${log.state.lastSeq}); retention archives ended runs only`, { path, reason: "archived_not_ended" }));
  }
  return log.eventCount;
}
