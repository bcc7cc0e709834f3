import type { Acknowledgement } from "../../host/acknowledgements.js";
import type { DeploymentProblem } from "../../host/check-deployments.js";
import { isWorkflowHostError } from "../../errors.js";
import { parseRepoId } from "../../workflow/ids.js";
import { checkFlags, dataDirFlag, dataDirOption, stringFlag, usageError } from "../args.js";
import type { CliCommand } from "../command.js";
import { oneLine, plural, shortSha } from "../format.js";
import { ignoredDeploymentFolders, ignoredDeploymentsLine } from "../ignored-deployments.js";
import { printJson, printLine } from "../io.js";
import { withStore } from "../with-store.js";
import { gitdirOf, shellQuote } from "./paths.js";

const NAME = "check";

/** The archive ref (src/workflow/run-archive.ts), named here so `--help` loads nothing. */
const ARCHIVE = "refs/archive/runs";

/** A problem as `check` prints it: with the blob it is about, and its acknowledgement if any. */
type CheckedProblem = DeploymentProblem & { readonly oid: string | null; readonly acknowledged?: Pick<Acknowledgement, "at" | "by"> };

/** `check`: validates every deployment; exit 1 when anything is wrong and not acknowledged. */
export const checkCommand: CliCommand = {
  name: ["check"],
  summary: "validate every deployment repo (exit 1 on any problem not acknowledged)",
  options: { ...dataDirOption, repo: { type: "string", short: "r" }, acknowledge: { type: "boolean" }, by: { type: "string" }, json: { type: "boolean" } },
  help: `Usage: workflow-host check --data-dir DIR [--repo R] [--acknowledge [--by NAME]] [--json]

Validates each deployment at the tip of main: the ref resolves to a commit, HEAD names a ref
or holds an oid (else plain git refuses the repo), every entry under runs/ is a run folder, every event file parses (JSON, schema, ids, instants, cron) with a body
seq equal to its file name, seqs are dense from 0 or 1, nothing follows a terminal event, a
compacted events.jsonl is well formed. The archive ref ${ARCHIVE} (where retention moves
ended runs) is checked the same way when it exists, and each run it holds must have ended
(event_invalid, reason archived_not_ended); its problems' paths read ${ARCHIVE}:<path>, as
git show takes them. Each problem is printed with its repo, path and seq.
Read-only (without --acknowledge) and safe next to a running host. Object-level integrity of
the whole history is what \`git fsck --strict\` checks.

Acknowledging: a bad event pushed with git stays in the log (nothing is ever rewritten).
--acknowledge records every problem found as seen by an operator, in the deployment repo itself:
one commit on the ref refs/workflow-host/acknowledged, whose file acknowledged.json lists
{path, code, oid, seq, at, by}. An acknowledged problem is listed as such and no longer fails
check; serve does not report it at its next start. A new bad file at the same path is a new
problem. A deployment that cannot be read (ref_corrupt, path_escapes_data_dir, or main's
tree unreadable: a torn object, object_corrupt, io_failed) is served by no host and takes no
record: that problem stays open until repaired. So does a run whose folder or events/ folder
is missing (object_missing) or damaged (object_corrupt): the other runs are checked, the host
skips that run until the object is restored (json: runUnreadable true). Read the record with:
  git --git-dir=DIR/deployments/R.git show refs/workflow-host/acknowledged:acknowledged.json

Exit codes: 0 no problems (or all acknowledged), 1 problems found (or the check could not
run), 2 a bad flag.

Options:
  -d, --data-dir DIR   data dir (default: $WORKFLOW_HOST_DATA_DIR)
  -r, --repo R         only this deployment
      --acknowledge    record every problem found as acknowledged (see above)
      --by NAME        who acknowledges, recorded with it (default: $USER)
      --json           print {ok, repos: [{repoId, commitSha, runs, events, problems,
                       archive: {commitSha, runs, events}}],
                       problems: [{repoId, path, seq, code, message, oid,
                       deploymentUnreadable?, runUnreadable?}],
                       acknowledged: [{repoId, path, seq, code, message, oid, at, by}],
                       newlyAcknowledged, ignored: [folder]}; ignored names the folders
                       under deployments/ not named <id>.git (passed over; they do not fail)

Examples:
  workflow-host check --data-dir ./data
  workflow-host check --data-dir ./data --repo payments --acknowledge --by ana
`,
  async run(values, io) {
    const dataDir = dataDirFlag(NAME, values, io);
    const rawRepo = stringFlag(values, "repo");
    const repoId = rawRepo === undefined ? undefined : checkFlags(NAME, () => parseRepoId(rawRepo));
    const acknowledge = values["acknowledge"] === true;
    if (!acknowledge && values["by"] !== undefined) throw usageError(NAME, "--by names who acknowledges; it needs --acknowledge");
    const by = stringFlag(values, "by") ?? io.env["USER"] ?? "unknown";
    const { report, problems, newlyAcknowledged, unrecordable } = await withStore(dataDir, io, async (store) => {
      const [{ checkDeployments }, acks] = await Promise.all([import("../../host/check-deployments.js"), import("../../host/acknowledgements.js")]);
      const report = await checkDeployments(store, repoId === undefined ? {} : { repoId });
      const checked: CheckedProblem[] = [];
      // Problems whose acknowledgement can be neither read nor recorded: advising --acknowledge
      // for them would send the operator round in a circle.
      const unrecordable = new Set<CheckedProblem>();
      let newlyAcknowledged = 0;
      for (const repo of report.repos) {
        const mine = report.problems.filter((p) => p.repoId === repo.repoId);
        if (mine.length === 0) continue;
        if (repo.commitSha === null) {
          // The ref store could not be read (ref_corrupt): the acknowledgements live in the same
          // ref store, so none can be read or recorded; the problem stays open until repaired.
          const stuck = mine.map((p) => ({ ...p, oid: null }));
          for (const p of stuck) unrecordable.add(p);
          checked.push(...stuck);
          continue;
        }
        const reads = await store.openCommittedReads(null, { kind: "workflow-run", id: repo.repoId }, repo.commitSha);
        // A problem in the archive ref is named `refs/archive/runs:<path>`; its blob is read there.
        const archivePrefix = `${ARCHIVE}:`;
        const archive = repo.archive.commitSha === null ? null : await store.openCommittedReads(null, { kind: "workflow-run", id: repo.repoId }, repo.archive.commitSha);
        const oidOf = async (path: string): Promise<string | null> =>
          path.startsWith(archivePrefix) ? (archive === null ? null : await acks.blobOidAt(archive, path.slice(archivePrefix.length))) : await acks.blobOidAt(reads, path);
        // A problem that kept main from being read is not an event's: the host serves nothing of
        // this deployment until it is repaired, so it is neither recorded nor hidden by a record.
        // Nor is a run that cannot be read at all (its folder or events/ folder lost or damaged):
        // the host skips that run until the object is restored.
        const isBlocking = (p: DeploymentProblem): boolean => p.deploymentUnreadable === true || p.runUnreadable === true;
        const blocking = mine.filter(isBlocking).map((p) => ({ ...p, oid: null }));
        for (const p of blocking) unrecordable.add(p);
        checked.push(...blocking);
        const withOid = await Promise.all(mine.filter((p) => !isBlocking(p)).map(async (p) => ({ ...p, oid: await oidOf(p.path) })));
        let known: Map<string, Acknowledgement>;
        try {
          if (acknowledge) {
            const at = io.clock().toISOString();
            newlyAcknowledged += (await acks.acknowledgeProblems(store, repo.repoId, withOid, { at, by })).added;
          }
          known = new Map((await acks.readAcknowledgements(store, repo.repoId)).map((a) => [acks.acknowledgementKey(a), a]));
        } catch (error) {
          // Acknowledgements that cannot be read (a torn ref, a damaged file) hide nothing: the
          // problems stay open, and the unreadable record is one more of them.
          if (!isWorkflowHostError(error) || error.code === "authorize_denied" || error.code === "store_stopped") throw error;
          const path = typeof error.data["ref"] === "string" ? error.data["ref"] : acks.ACKNOWLEDGED_REF;
          const torn: CheckedProblem = { repoId: repo.repoId, path, seq: null, code: error.code, message: error.message, oid: null };
          for (const p of [...withOid, torn]) unrecordable.add(p);
          checked.push(...withOid, torn);
          continue;
        }
        for (const p of withOid) {
          const ack = known.get(acks.acknowledgementKey(p));
          checked.push(ack === undefined ? p : { ...p, acknowledged: { at: ack.at, by: ack.by } });
        }
      }
      return { report, problems: checked, newlyAcknowledged, unrecordable };
    });
    // Only when every deployment is checked: a folder passed over is then worth naming.
    const ignored = repoId === undefined ? await ignoredDeploymentFolders(dataDir) : [];
    const open = problems.filter((p) => p.acknowledged === undefined);
    const acknowledged = problems.filter((p) => p.acknowledged !== undefined);
    const ok = open.length === 0;
    if (values["json"] === true) {
      printJson(io, {
        ok,
        repos: report.repos.map((r) => ({ ...r, problems: open.filter((p) => p.repoId === r.repoId).length })),
        problems: open,
        acknowledged: acknowledged.map(({ acknowledged: a, ...p }) => ({ ...p, at: a?.at, by: a?.by })),
        newlyAcknowledged,
        ignored,
      });
      return ok ? 0 : 1;
    }
    const warning = ignoredDeploymentsLine(ignored);
    if (warning !== null) io.stderr.write(`${oneLine(warning)}\n`);
    for (const repo of report.repos) {
      const count = open.filter((p) => p.repoId === repo.repoId).length;
      const archived = repo.archive.commitSha === null ? "" : `; archive ${shortSha(repo.archive.commitSha)}  ${plural(repo.archive.runs, "run")}, ${plural(repo.archive.events, "event")}`;
      printLine(io, `${count === 0 ? "ok     " : "PROBLEM"}  ${repo.repoId}  main ${shortSha(repo.commitSha)}  ${plural(repo.runs, "run")}, ${plural(repo.events, "event")}${archived}  (${gitdirOf(dataDir, repo.repoId)})`);
    }
    for (const p of open) printLine(io, `${p.repoId}: ${p.path}${p.seq === null ? "" : ` (seq ${p.seq})`}: ${p.message}`);
    for (const p of acknowledged) {
      printLine(io, `${p.repoId}: ${p.path}${p.seq === null ? "" : ` (seq ${p.seq})`}: acknowledged by ${p.acknowledged?.by ?? "?"} at ${p.acknowledged?.at ?? "?"} (${p.code})`);
    }
    const tail = acknowledged.length === 0 ? "" : `, ${plural(acknowledged.length, "acknowledged problem")}`;
    printLine(io, `${plural(report.repos.length, "deployment")} checked, ${ok ? "no problems" : plural(open.length, "problem")}${tail}`);
    const recordable = open.filter((p) => !unrecordable.has(p)).length;
    if (recordable > 0) printLine(io, `to record that you have seen them: workflow-host check --data-dir ${shellQuote(dataDir)}${repoId === undefined ? "" : ` --repo ${repoId}`} --acknowledge`);
    if (recordable < open.length) {
      printLine(io, `${plural(open.length - recordable, "problem")} cannot be acknowledged (a deployment or a run that cannot be read: nothing can be recorded in it, or the host skips the run until it is repaired): repair what each line names, then check again`);
    }
    return ok ? 0 : 1;
  },
};
