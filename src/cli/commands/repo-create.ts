import { parseRepoId } from "../../workflow/ids.js";
import { checkFlags, dataDirFlag, dataDirOption, requiredFlag, usageError } from "../args.js";
import type { CliCommand } from "../command.js";
import { checkClusterUrl, checkRemoteBase } from "../cluster-flags.js";
import { printJson, printLine } from "../io.js";
import { withStore } from "../with-store.js";
import { gitdirOf } from "./paths.js";

const NAME = "repo create";

/** `repo create`: a new deployment repo (idempotent). */
export const repoCreateCommand: CliCommand = {
  name: ["repo", "create"],
  summary: "create a deployment repo (idempotent)",
  options: { ...dataDirOption, repo: { type: "string", short: "r" }, json: { type: "boolean" }, cluster: { type: "string" }, "remote-base": { type: "string" } },
  help: `Usage: workflow-host repo create --data-dir DIR --repo R [--json] [--cluster URL --remote-base URL]

Creates the bare git repo <DIR>/deployments/<R>.git with a genesis commit on main (and the
data dir DIR itself when it does not exist yet). An existing repo is left as it is. A running host picks the new repo up within its discovery
interval (2 s).

Options:
  -d, --data-dir DIR   data dir (default: $WORKFLOW_HOST_DATA_DIR)
  -r, --repo R         deployment id: 1-128 of A-Z a-z 0-9 _ -
      --json           print {repoId, gitdir, created, commitSha}
      --cluster URL    cluster mode (README "Running several hosts"): create the deployment's
                       remote <remote-base>/<R>.git (a local path is created with git init
                       --bare) with a genesis commit, and register it in the lease table of
                       PostgreSQL at URL; a host serving the cluster takes it within a renewal
      --remote-base U  where the remotes live (needed with --cluster)

Examples:
  workflow-host repo create --data-dir ./data --repo payments
  git clone ./data/deployments/payments.git payments-log
  workflow-host repo create --data-dir ./scratch --repo payments \\
                            --cluster postgres://postgres@127.0.0.1:5432/postgres --remote-base /srv/remotes
`,
  async run(values, io) {
    const dataDir = dataDirFlag(NAME, values, io);
    const repoId = checkFlags(NAME, () => parseRepoId(requiredFlag(NAME, values, "repo")));
    const url = values["cluster"];
    const remoteBase = values["remote-base"];
    if ((url === undefined) !== (remoteBase === undefined) || (url !== undefined && (typeof url !== "string" || typeof remoteBase !== "string"))) {
      throw usageError(NAME, "--cluster and --remote-base go together");
    }
    if (typeof url === "string" && typeof remoteBase === "string") {
      checkClusterUrl(NAME, url);
      checkRemoteBase(NAME, remoteBase);
      const { createWorkflowHost } = await import("../../host/host.js");
      // The data dir only holds a scratch clone; the deployment lives on its remote.
      const host = createWorkflowHost({ dataDir, cluster: { url, remoteBase } });
      let made;
      try {
        made = await host.createDeployment(repoId);
      } finally {
        await host.stop();
      }
      const remote = `${remoteBase.replace(/\/+$/, "")}/${repoId}.git`;
      if (values["json"] === true) printJson(io, { repoId, remote, ...made });
      else printLine(io, `${made.created ? "created" : "exists:"} deployment ${repoId} at ${remote} (main ${made.commitSha.slice(0, 7)}), registered in the lease table`);
      return 0;
    }
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
