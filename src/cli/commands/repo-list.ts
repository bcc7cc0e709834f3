import { dataDirFlag, dataDirOption } from "../args.js";
import type { CliCommand } from "../command.js";
import { printJson, printLine } from "../io.js";
import { withStore } from "../with-store.js";
import { oneLine } from "../format.js";
import { ignoredDeploymentFolders, ignoredDeploymentsLine } from "../ignored-deployments.js";
import { gitdirOf } from "./paths.js";

const NAME = "repo list";

/** `repo list`: the deployments of a data dir. */
export const repoListCommand: CliCommand = {
  name: ["repo", "list"],
  summary: "list the deployment repos of a data dir",
  options: { ...dataDirOption, json: { type: "boolean" } },
  help: `Usage: workflow-host repo list --data-dir DIR [--json]

Lists every deployment repo (<DIR>/deployments/<id>.git) with its git dir.

Options:
  -d, --data-dir DIR   data dir (default: $WORKFLOW_HOST_DATA_DIR)
      --json           print {dataDir, repos: [{repoId, gitdir}], ignored: [folder]}

A folder under deployments/ not named <id>.git is no deployment: it is named once (on stderr,
or in ignored) and passed over.

Example:
  workflow-host repo list --data-dir ./data
`,
  async run(values, io) {
    const dataDir = dataDirFlag(NAME, values, io);
    const ids = await withStore(dataDir, io, async (store) => {
      const { WORKFLOW_RUN_KIND } = await import("../../workflow/workflow-run-kind.js");
      return store.listRepos(null, WORKFLOW_RUN_KIND);
    });
    const repos = ids.map((repoId) => ({ repoId, gitdir: gitdirOf(dataDir, repoId) }));
    const ignored = await ignoredDeploymentFolders(dataDir);
    if (values["json"] === true) {
      printJson(io, { dataDir, repos, ignored });
      return 0;
    }
    const warning = ignoredDeploymentsLine(ignored);
    if (warning !== null) io.stderr.write(`${oneLine(warning)}\n`);
    if (repos.length === 0) printLine(io, `no deployments in ${dataDir}`);
    else for (const r of repos) printLine(io, `${r.repoId}  ${r.gitdir}`);
    return 0;
  },
};
