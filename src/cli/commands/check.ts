import { checkDeployments } from "../../host/check-deployments.js";
import { dataDirFlag, dataDirOption, stringFlag } from "../args.js";
import type { CliCommand } from "../command.js";
import { plural, shortSha } from "../format.js";
import { printJson, printLine } from "../io.js";
import { withStore } from "../with-store.js";
import { gitdirOf } from "./paths.js";

const NAME = "check";

/** `check`: validates every deployment; exit 1 when anything is wrong. */
export const checkCommand: CliCommand = {
  name: ["check"],
  summary: "validate every deployment repo (exit 1 on any problem)",
  options: { ...dataDirOption, repo: { type: "string", short: "r" }, json: { type: "boolean" } },
  help: `Usage: workflow-host check --data-dir DIR [--repo R] [--json]

Validates each deployment at the tip of main: the ref resolves to a commit, every entry under
runs/ is a run folder, every event file parses (JSON, schema, ids, instants, cron) with a body
seq equal to its file name, seqs are dense from 0 or 1, nothing follows a terminal event, a
compacted events.jsonl is well formed. Each problem is printed with its repo, path and seq.
Read-only and safe next to a running host. Object-level integrity of the whole history is
what \`git fsck --strict\` checks.

Exit codes: 0 no problems, 1 problems found (or the check could not run), 2 usage.

Options:
  -d, --data-dir DIR   data dir (default: $WORKFLOW_HOST_DATA_DIR)
  -r, --repo R         only this deployment
      --json           print {ok, repos: [{repoId, commitSha, runs, events, problems}],
                       problems: [{repoId, path, seq, code, message}]}

Example:
  workflow-host check --data-dir ./data
`,
  async run(values, io) {
    const dataDir = dataDirFlag(NAME, values, io);
    const repoId = stringFlag(values, "repo");
    const report = await withStore(dataDir, io, (store) => checkDeployments(store, repoId === undefined ? {} : { repoId }));
    const ok = report.problems.length === 0;
    if (values["json"] === true) {
      printJson(io, { ok, ...report });
      return ok ? 0 : 1;
    }
    for (const repo of report.repos) {
      printLine(io, `${repo.problems === 0 ? "ok     " : "PROBLEM"}  ${repo.repoId}  main ${shortSha(repo.commitSha)}  ${plural(repo.runs, "run")}, ${plural(repo.events, "event")}  (${gitdirOf(dataDir, repo.repoId)})`);
    }
    for (const p of report.problems) {
      printLine(io, `${p.repoId}: ${p.path}${p.seq === null ? "" : ` (seq ${p.seq})`}: ${p.message}`);
    }
    printLine(io, `${plural(report.repos.length, "deployment")} checked, ${ok ? "no problems" : plural(report.problems.length, "problem")}`);
    return ok ? 0 : 1;
  },
};
