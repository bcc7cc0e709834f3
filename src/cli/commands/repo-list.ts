import { dataDirFlag, dataDirOption } from "../args.js";
import type { CliCommand } from "../command.js";
import { printJson, printLine } from "../io.js";
import { withStore } from "../with-store.js";
import { oneLine, plural } from "../format.js";
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
      --json           print {dataDir, repos: [{repoId, gitdir}], ignored: [folder],
                       failedRepos: [{repoId, gitdir, code, message}]}

A folder under deployments/ not named <id>.git is no deployment: it is named once (on stderr,
or in ignored) and passed over. A deployment whose main ref cannot be read (a symbolic link
that dangles or leads out of the data dir: path_escapes_data_dir; a torn ref: ref_corrupt) is
named on stderr (and in failedRepos) and makes the exit code 1; the others are still listed.

Example:
  workflow-host repo list --data-dir ./data
`,
  async run(values, io) {
    const dataDir = dataDirFlag(NAME, values, io);
    const { readable, failed } = await withStore(dataDir, io, async (store) => {
      const [{ WORKFLOW_RUN_KIND }, { DEFAULT_REF }, { isWorkflowHostError }] = await Promise.all([
        import("../../workflow/workflow-run-kind.js"),
        import("../../substrate/ref-name.js"),
        import("../../errors.js"),
      ]);
      const ids = await store.listRepos(null, WORKFLOW_RUN_KIND);
      const ok: string[] = [];
      const bad: { repoId: string; code: string; message: string }[] = [];
      for (const repoId of ids) {
        // Reading the main ref goes through the repository's folder: a link that dangles or
        // leads out of the data dir, or a torn ref, is found here, as a host would find it.
        try {
          await store.resolveRef(null, { kind: WORKFLOW_RUN_KIND, id: repoId }, DEFAULT_REF);
          ok.push(repoId);
        } catch (error) {
          if (!isWorkflowHostError(error) || error.code === "authorize_denied" || error.code === "store_stopped") throw error;
          bad.push({ repoId, code: error.code, message: error.message });
        }
      }
      return { readable: ok, failed: bad };
    });
    const repos = readable.map((repoId) => ({ repoId, gitdir: gitdirOf(dataDir, repoId) }));
    const failedRepos = failed.map((f) => ({ repoId: f.repoId, gitdir: gitdirOf(dataDir, f.repoId), code: f.code, message: f.message }));
    const ignored = await ignoredDeploymentFolders(dataDir);
    for (const f of failedRepos) io.stderr.write(`workflow-host: ${oneLine(f.message)}\n`);
    const code = failedRepos.length === 0 ? 0 : 1;
    if (values["json"] === true) {
      printJson(io, { dataDir, repos, ignored, failedRepos });
      return code;
    }
    const warning = ignoredDeploymentsLine(ignored);
    if (warning !== null) io.stderr.write(`${oneLine(warning)}\n`);
    if (repos.length === 0 && failedRepos.length === 0) printLine(io, `no deployments in ${dataDir}`);
    else for (const r of repos) printLine(io, `${r.repoId}  ${r.gitdir}`);
    // Never left to look like a data dir without them.
    if (failedRepos.length > 0) printLine(io, `${plural(failedRepos.length, "deployment")} could not be read: ${failedRepos.map((f) => f.repoId).join(", ")}`);
    return code;
  },
};
