/**
 * Reading what a deployment holds after a run of a reliability suite: every run's log at the
 * tip (through a fresh store, as a restarted host reads it) and the first-parent history as the
 * real `git` CLI lists it, with the paths each commit touched.
 */
import { openWorkflowStore } from "../../../src/host/open-workflow-store.js";
import { REPO_OR_RUN_ID_PATTERN } from "../../../src/workflow/ids.js";
import { runsPrefix } from "../../../src/workflow/paths.js";
import { readRunLog, type RunLog } from "../../../src/workflow/run-log.js";
import { WORKFLOW_RUN_KIND } from "../../../src/workflow/workflow-run-kind.js";
import { gitAt, runGit } from "../../helpers/git-cli.js";
import type { RefSamples } from "./ref-sampler.js";

export interface DeploymentLog {
  readonly tip: string | null;
  readonly runs: ReadonlyMap<string, RunLog>;
}

/** Every run's log at the tip of main, read through a new store. */
export async function readDeploymentLog(dataDir: string, repoId: string): Promise<DeploymentLog> {
  const store = openWorkflowStore({ dataDir, watch: false });
  try {
    const rid = { kind: WORKFLOW_RUN_KIND, id: repoId };
    const tip = await store.resolveRef(null, rid, "refs/heads/main");
    const runs = new Map<string, RunLog>();
    if (tip === null) return { tip, runs };
    const reads = await store.openCommittedReads(null, rid, tip);
    for (const entry of await reads.listDir(runsPrefix.slice(0, -1))) {
      // Folders that cannot be runs (hostile names) hold no log to read.
      if (entry.type !== "tree" || !REPO_OR_RUN_ID_PATTERN.test(entry.name)) continue;
      runs.set(entry.name, await readRunLog(reads, entry.name));
    }
    return { tip, runs };
  } finally {
    await store.close();
  }
}

export interface HistoryCommit {
  readonly sha: string;
  readonly parents: readonly string[];
  /** Committer time, seconds. */
  readonly timeSec: number;
  readonly changes: readonly { readonly status: string; readonly path: string }[];
}

/** main's first-parent history, oldest first, with each commit's name-status against its parent. */
export async function gitHistory(gitdir: string): Promise<HistoryCommit[]> {
  const out = await gitAt(gitdir, ["log", "--first-parent", "--reverse", "--no-renames", "--format=%x01%H %ct %P", "--name-status", "main"]);
  const commits: HistoryCommit[] = [];
  for (const block of out.split("\x01").slice(1)) {
    const [header = "", ...rest] = block.split("\n");
    const [sha = "", time = "0", ...parents] = header.trim().split(" ");
    const changes = rest
      .filter((line) => line.includes("\t"))
      .map((line) => {
        const [status = "", path = ""] = line.split("\t");
        return { status, path };
      });
    commits.push({ sha, parents: parents.filter((p) => p !== ""), timeSec: Number(time), changes });
  }
  return commits;
}

/**
 * What git says is wrong with the history: merges, a first-parent chain that does not link up,
 * event files modified or deleted, and sampled ref values that are not commits of the final
 * history (a torn or rewritten ref).
 */
export async function historyViolations(gitdir: string, history: readonly HistoryCommit[], samples?: RefSamples): Promise<string[]> {
  const violations: string[] = [];
  for (const [i, commit] of history.entries()) {
    if (commit.parents.length > 1) violations.push(`commit ${commit.sha} is a merge; history must be linear`);
    const expectedParent = i === 0 ? undefined : history[i - 1]?.sha;
    if (commit.parents[0] !== expectedParent) violations.push(`commit ${commit.sha} has parent ${commit.parents[0] ?? "none"}, expected ${expectedParent ?? "none"}`);
    for (const change of commit.changes) {
      if (change.path.startsWith(runsPrefix) && change.status !== "A") violations.push(`commit ${commit.sha} ${change.status} ${change.path}: event files are only ever added`);
    }
  }
  if (samples !== undefined) {
    for (const torn of samples.torn) violations.push(`ref read at ${new Date(torn.atMs).toISOString()} held ${JSON.stringify(torn.bytes)}`);
    const onHistory = new Set(history.map((c) => c.sha));
    const values = samples.values.map((s) => s.value);
    const check = await runGit([`--git-dir=${gitdir}`, "cat-file", "--batch-check"], { input: `${values.join("\n")}\n` });
    const types = check.stdout.split("\n").filter(Boolean);
    values.forEach((value, i) => {
      if (!(types[i] ?? "").startsWith(`${value} commit `)) violations.push(`sampled ref value ${value} does not open as a commit (${types[i] ?? "no answer"})`);
      else if (!onHistory.has(value)) violations.push(`sampled ref value ${value} is not on main's final history (the ref was rewritten)`);
    });
  }
  return violations;
}

/** `git fsck --strict` problems (dangling objects left by a killed writer are not problems). */
export async function fsckViolations(gitdir: string): Promise<string[]> {
  const result = await runGit([`--git-dir=${gitdir}`, "fsck", "--strict", "--no-dangling", "--no-progress"]);
  if (result.code === 0 && result.stdout.trim() === "" && result.stderr.trim() === "") return [];
  return [`git fsck --strict exited ${result.code}: ${`${result.stdout}\n${result.stderr}`.trim().slice(0, 2_000)}`];
}
