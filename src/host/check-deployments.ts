/**
 * A read-only health check of deployment repos, as `workflow-host check` runs it: the ref
 * resolves, every run folder is well formed, every event parses, seqs are dense, nothing follows
 * a terminal event. Each problem names its repo, path and seq, so a person can find it with
 * `git show main:<path>`.
 *
 * The check reads committed state at the tip only; object-level integrity of the whole history
 * is `git fsck`'s job.
 */
import { WorkflowHostError, type ErrorCode } from "../errors.js";
import type { CommittedReads, Principal, RepoStore } from "../substrate/types.js";
import { isTerminalEventType } from "../workflow/event-schemas.js";
import { parseEvent } from "../workflow/events.js";
import { REPO_OR_RUN_ID_PATTERN, parseRepoId } from "../workflow/ids.js";
import { compactedLogPath, parseEventPathName, runEventsPrefix, runsPrefix } from "../workflow/paths.js";
import { readRunLog } from "../workflow/run-log.js";
import { WORKFLOW_RUN_KIND } from "../workflow/workflow-run-kind.js";

/** One thing wrong in one repo. */
export interface DeploymentProblem {
  readonly repoId: string;
  /** Path inside the repo (`runs/r1/events/3.json`), or the ref name for a ref problem. */
  readonly path: string;
  /** The event's seq when the problem is one event, else null. */
  readonly seq: number | null;
  readonly code: ErrorCode;
  /** One sentence, starting with the code. */
  readonly message: string;
}

export interface DeploymentSummary {
  readonly repoId: string;
  /** The tip checked, or null when the ref could not be read. */
  readonly commitSha: string | null;
  readonly runs: number;
  /** Events that parsed. */
  readonly events: number;
  readonly problems: number;
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
  /** Default "refs/heads/main". */
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
  const ref = opts.ref ?? "refs/heads/main";
  const repoIds = opts.repoId === undefined ? await store.listRepos(principal, WORKFLOW_RUN_KIND) : [parseRepoId(opts.repoId)];
  const repos: DeploymentSummary[] = [];
  const problems: DeploymentProblem[] = [];
  for (const repoId of repoIds) {
    const found: DeploymentProblem[] = [];
    const report = (path: string, seq: number | null, error: WorkflowHostError): void => {
      found.push({ repoId, path, seq, code: error.code, message: error.message });
    };
    let commitSha: string | null = null;
    let runs = 0;
    let events = 0;
    try {
      commitSha = await store.resolveRef(principal, { kind: WORKFLOW_RUN_KIND, id: repoId }, ref);
      if (commitSha === null) {
        report(ref, null, new WorkflowHostError("ref_corrupt", `${ref} of ${repoId} has no commit; every deployment has at least its genesis commit`, { repoId, ref }));
      } else {
        const reads = await store.openCommittedReads(principal, { kind: WORKFLOW_RUN_KIND, id: repoId }, commitSha);
        const counted = await checkRuns(reads, report, opts.maxEventBytes);
        runs = counted.runs;
        events = counted.events;
      }
    } catch (error) {
      if (!(error instanceof WorkflowHostError) || error.code === "authorize_denied" || error.code === "store_stopped") throw error;
      report(typeof error.data["path"] === "string" ? error.data["path"] : ref, null, error);
    }
    repos.push({ repoId, commitSha, runs, events, problems: found.length });
    for (const problem of found) problems.push(problem);
  }
  return { repos, problems };
}

type Report = (path: string, seq: number | null, error: WorkflowHostError) => void;

const invalid = (path: string, seq: number | null, detail: string): WorkflowHostError =>
  new WorkflowHostError("event_invalid", `${path}: ${detail}`, { path, seq });

async function checkRuns(reads: CommittedReads, report: Report, maxEventBytes: number | undefined): Promise<{ runs: number; events: number }> {
  let runs = 0;
  let events = 0;
  for (const entry of await reads.listDir(runsPrefix.slice(0, -1))) {
    const runPath = `${runsPrefix}${entry.name}`;
    if (entry.type !== "tree") {
      report(runPath, null, invalid(runPath, null, "not a run folder; allowed under runs/: one folder per run"));
      continue;
    }
    if (!REPO_OR_RUN_ID_PATTERN.test(entry.name)) {
      report(runPath, null, new WorkflowHostError("id_invalid", `${runPath}: run id ${JSON.stringify(entry.name)} is not valid; allowed: 1-128 characters of A-Z a-z 0-9 _ -`, { path: runPath }));
      continue;
    }
    runs += 1;
    events += await checkRun(reads, entry.name, report, maxEventBytes);
  }
  return { runs, events };
}

async function checkRun(reads: CommittedReads, runId: string, report: Report, maxEventBytes: number | undefined): Promise<number> {
  const runPath = `${runsPrefix}${runId}`;
  const compactedPath = compactedLogPath(runId);
  let hasEventsDir = false;
  let compacted: Uint8Array | null = null;
  for (const entry of await reads.listDir(runPath)) {
    if (entry.name === "events" && entry.type === "tree") hasEventsDir = true;
    else if (entry.name === "events.jsonl" && entry.type === "blob") compacted = await reads.readBlobByOid(entry.oid);
    else report(`${runPath}/${entry.name}`, null, invalid(`${runPath}/${entry.name}`, null, "unexpected entry; allowed in a run folder: events/ and events.jsonl"));
  }
  if (compacted !== null) {
    if (hasEventsDir) report(compactedPath, null, invalid(compactedPath, null, "a compacted run must have no events/ folder left"));
    return checkCompacted(compactedPath, compacted, report, maxEventBytes);
  }
  const log = await readRunLog(reads, runId, maxEventBytes === undefined ? {} : { maxEventBytes });
  for (const bad of log.bad) report(bad.path, bad.seq, bad.error);
  const seqs = (await reads.listDir(runEventsPrefix(runId).slice(0, -1)))
    .map((e) => parseEventPathName(e.name))
    .filter((seq): seq is number => seq !== null)
    .sort((a, b) => a - b);
  checkDense(runId, seqs, report);
  const terminal = log.events.find((e) => isTerminalEventType(e.type));
  if (terminal !== undefined) {
    for (const seq of seqs) {
      if (seq > terminal.seq) {
        const path = `${runEventsPrefix(runId)}${seq}.json`;
        report(path, seq, invalid(path, seq, `follows the terminal ${terminal.type} at seq ${terminal.seq}; nothing may follow a terminal event`));
      }
    }
  }
  return log.events.length;
}

function checkDense(runId: string, seqs: readonly number[], report: Report): void {
  const first = seqs[0];
  if (first === undefined) return;
  const prefix = runEventsPrefix(runId);
  if (first > 1) report(`${prefix}${first}.json`, first, invalid(`${prefix}${first}.json`, first, `the first event has seq ${first}; allowed: 0 or 1`));
  for (let i = 1; i < seqs.length; i += 1) {
    const previous = seqs[i - 1] as number;
    const seq = seqs[i] as number;
    if (seq !== previous + 1) {
      const missing = previous + 1 === seq - 1 ? `seq ${previous + 1} is` : `seqs ${previous + 1}..${seq - 1} are`;
      report(`${prefix}${previous + 1}.json`, previous + 1, invalid(`${prefix}${previous + 1}.json`, previous + 1, `${missing} missing; seqs must be dense`));
    }
  }
}

function checkCompacted(path: string, bytes: Uint8Array, report: Report, maxEventBytes: number | undefined): number {
  const text = new TextDecoder().decode(bytes);
  if (!text.endsWith("\n")) report(path, null, invalid(path, null, "a compacted log ends with a newline after its last event"));
  const lines = text.split("\n");
  if (lines.at(-1) === "") lines.pop();
  let expected: number | null = null;
  let count = 0;
  let terminal: number | null = null;
  for (const [index, line] of lines.entries()) {
    let seq: number | null = null;
    try {
      const event = parseEvent(line, { path: `${path}:${index + 1}`, ...(maxEventBytes === undefined ? {} : { maxEventBytes }) });
      seq = event.seq;
      count += 1;
      if (expected !== null && seq !== expected) report(path, seq, invalid(path, seq, `line ${index + 1} has seq ${seq}; expected ${expected}`));
      if (terminal !== null) report(path, seq, invalid(path, seq, `line ${index + 1} follows the terminal event at seq ${terminal}`));
      if (isTerminalEventType(event.type)) terminal = seq;
      expected = seq + 1;
    } catch (error) {
      report(path, seq, error instanceof WorkflowHostError ? error : invalid(path, null, `line ${index + 1} could not be read`));
      if (expected !== null) expected += 1;
    }
  }
  if (lines.length > 0 && terminal === null) report(path, null, invalid(path, null, "a compacted run must end with a terminal event"));
  return count;
}
