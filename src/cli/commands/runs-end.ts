import { DuplicateJsonKeyError, parseJsonText } from "../../config-json.js";
import type { RunOutcome } from "../../host/end-run.js";
import { parseRepoId, parseRunId } from "../../workflow/ids.js";
import { checkFlags, dataDirFlag, dataDirOption, requiredFlag, stringFlag, usageError } from "../args.js";
import type { CliCommand } from "../command.js";
import { shortSha } from "../format.js";
import { printJson, printLine } from "../io.js";
import { withStore } from "../with-store.js";

const VERB: Readonly<Record<RunOutcome, { verb: string; type: string; what: string }>> = {
  completed: { verb: "complete", type: "RunCompleted", what: "result" },
  failed: { verb: "fail", type: "RunFailed", what: "error" },
  cancelled: { verb: "cancel", type: "RunCancelled", what: "reason" },
};

/** `runs complete|fail|cancel`: ends a run with its terminal event. */
function runsEndCommand(outcome: RunOutcome): CliCommand {
  const { verb, type, what } = VERB[outcome];
  const name = `runs ${verb}`;
  return {
    name: ["runs", verb],
    summary: `end a run as ${outcome} (appends ${type})`,
    options: { ...dataDirOption, repo: { type: "string", short: "r" }, run: { type: "string" }, data: { type: "string" }, json: { type: "boolean" } },
    help: `Usage: workflow-host ${name} --data-dir DIR --repo R --run X [--data JSON] [--json]

Ends the run: appends ${type} (stamped with the time now, which retention counts from) after
its last event. Nothing may follow it; every armed timer of the run is disarmed. A run that
already ended as ${outcome} commits nothing (exit 0); one that ended otherwise is refused.
Safe next to a running host. Once older than the deployment's retention
(serve --retention-ms, default 7 days), the run moves to refs/archive/runs.

Exit codes: 0 ended (or already ended so), 1 the run ended otherwise or its id belongs to an
archived run (event_invalid), or an object of its log is missing or damaged (object_missing,
object_corrupt: the lost event could be its end; nothing written), 2 usage.

Options:
  -d, --data-dir DIR   data dir (default: $WORKFLOW_HOST_DATA_DIR)
  -r, --repo R         deployment id
      --run X          run id
      --data JSON      a JSON object recorded as the event's data (the ${what})
      --json           print {repoId, runId, type, seq, committed, commitSha}

Example:
  workflow-host ${name} -d ./data -r payments --run order-17${outcome === "completed" ? "" : ` --data '{"${what}":"..."}'`}
`,
    async run(values, io) {
      const dataDir = dataDirFlag(name, values, io);
      const repoId = checkFlags(name, () => parseRepoId(requiredFlag(name, values, "repo")));
      const runId = checkFlags(name, () => parseRunId(requiredFlag(name, values, "run")));
      const raw = stringFlag(values, "data");
      const data = raw === undefined ? undefined : parseDataFlag(name, raw);
      const { endRun } = await import("../../host/end-run.js");
      const result = await withStore(dataDir, io, (store) =>
        endRun({ store, principal: null, repoId, runId, outcome, clock: io.clock, ...(data === undefined ? {} : { data }) }),
      );
      if (values["json"] === true) printJson(io, { repoId, runId, ...result });
      else if (result.committed) printLine(io, `run ${runId} of ${repoId} ${outcome}: ${result.type} at seq ${result.seq} (commit ${shortSha(result.commitSha)})`);
      else printLine(io, `run ${runId} of ${repoId} had already ${outcome === "completed" ? "completed" : outcome === "failed" ? "failed" : "been cancelled"} (${result.type} at seq ${result.seq}); nothing committed`);
      return 0;
    },
  };
}

function parseDataFlag(command: string, raw: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = parseJsonText(raw);
  } catch (error) {
    if (error instanceof DuplicateJsonKeyError) throw usageError(command, `--data is not valid: ${error.message}`);
    value = undefined;
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw usageError(command, `--data ${JSON.stringify(raw)} is not a JSON object`);
  }
  return value as Record<string, unknown>;
}

export const runsCompleteCommand = runsEndCommand("completed");
export const runsFailCommand = runsEndCommand("failed");
export const runsCancelCommand = runsEndCommand("cancelled");
