import { parseRepoId, parseRunId } from "../../workflow/ids.js";
import { checkFlags, dataDirFlag, dataDirOption, requiredFlag } from "../args.js";
import type { CliCommand } from "../command.js";
import { shortSha } from "../format.js";
import { printJson, printLine } from "../io.js";
import { withStore } from "../with-store.js";

const NAME = "runs compact";

/** `runs compact`: seals an ended run into runs/<X>/events.jsonl. */
export const runsCompactCommand: CliCommand = {
  name: ["runs", "compact"],
  summary: "seal an ended run into runs/<run>/events.jsonl",
  options: { ...dataDirOption, repo: { type: "string", short: "r" }, run: { type: "string" }, json: { type: "boolean" } },
  help: `Usage: workflow-host runs compact --data-dir DIR --repo R --run X [--json]

Seals an ended run (its last event is RunCompleted, RunFailed or RunCancelled) into
runs/<X>/events.jsonl: each event file's exact bytes followed by a newline, in seq order, as
the original system writes it. The event files stay beside it; every reader gets the same log
from either form. A run already sealed commits nothing. Safe next to a running host.

Exit codes: 0 sealed (or already sealed), 1 the run has no log, has not ended, or its log has
problems (event_invalid; see workflow-host runs show), or retention archived it (run_archived:
an archived log is never changed), 2 usage.

Options:
  -d, --data-dir DIR   data dir (default: $WORKFLOW_HOST_DATA_DIR)
  -r, --repo R         deployment id
      --run X          run id
      --json           print {repoId, runId, committed, commitSha, path, events, bytes}

Example:
  workflow-host runs compact -d ./data -r payments --run order-17
`,
  async run(values, io) {
    const dataDir = dataDirFlag(NAME, values, io);
    const repoId = checkFlags(NAME, () => parseRepoId(requiredFlag(NAME, values, "repo")));
    const runId = checkFlags(NAME, () => parseRunId(requiredFlag(NAME, values, "run")));
    const result = await withStore(dataDir, io, async (store) => {
      // Loaded here, not at start-up: `--help` and the read-only commands stay quick.
      const { compactRun } = await import("../../host/compact-run.js");
      return compactRun({ store, principal: null, repoId, runId });
    });
    if (values["json"] === true) printJson(io, { repoId, runId, ...result });
    else if (result.committed) printLine(io, `sealed run ${runId} of ${repoId}: ${result.path}, ${result.events} events, ${result.bytes} bytes (commit ${shortSha(result.commitSha)})`);
    else printLine(io, `run ${runId} of ${repoId} is already sealed (${result.path}); nothing committed`);
    return 0;
  },
};
