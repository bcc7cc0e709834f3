import { parseRepoId } from "../../workflow/ids.js";
import { checkFlags, dataDirFlag, dataDirOption, requiredFlag } from "../args.js";
import type { CliCommand } from "../command.js";
import { printJson, printLine } from "../io.js";
import { withStore } from "../with-store.js";
import { gitdirOf } from "./paths.js";

const NAME = "repo create";

/** `repo create`: a new deployment repo (idempotent). */
export const repoCreateCommand: CliCommand = {
  name: ["repo", "create"],
  summary: "create a deployment repo (idempotent)",
  options: { ...dataDirOption, repo: { type: "string", short: "r" }, json: { type: "boolean" } },
  help: `Usage: workflow-host repo create --data-dir DIR --repo R [--json]

Creates the bare git repo <DIR>/deployments/<R>.git with a genesis commit on main (and the
data dir DIR itself when it does not exist yet). An existing repo is left as it is. A running host picks the new repo up within its discovery
interval (2 s).

Options:
  -d, --data-dir DIR   data dir (default: $WORKFLOW_HOST_DATA_DIR)
  -r, --repo R         deployment id: 1-128 of A-Z a-z 0-9 _ -
      --json           print {repoId, gitdir, created, commitSha}

Examples:
  workflow-host repo create --data-dir ./data --repo payments
  git clone ./data/deployments/payments.git payments-log
`,
  async run(values, io) {
    const dataDir = dataDirFlag(NAME, values, io);
    const repoId = checkFlags(NAME, () => parseRepoId(requiredFlag(NAME, values, "repo")));
    const result = await withStore(
      dataDir,
      io,
      async (store) => {
        const { WORKFLOW_RUN_KIND } = await import("../../workflow/workflow-run-kind.js");
        return store.initRepo(null, { kind: WORKFLOW_RUN_KIND, id: repoId });
      },
      { create: true },
    );
    const gitdir = gitdirOf(dataDir, repoId);
    if (values["json"] === true) printJson(io, { repoId, gitdir, ...result });
    else printLine(io, `${result.created ? "created" : "exists:"} deployment ${repoId} at ${gitdir} (main ${result.commitSha.slice(0, 7)})`);
    return 0;
  },
};
