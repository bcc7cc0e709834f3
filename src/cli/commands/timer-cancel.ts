import { WorkflowHostError } from "../../errors.js";
import { checkReason } from "../../workflow/event-constructors.js";
import { parseRepoId, parseRunId, parseTimerId } from "../../workflow/ids.js";
import { checkFlags, dataDirFlag, dataDirOption, requiredFlag, stringFlag } from "../args.js";
import type { CliCommand } from "../command.js";
import { shortSha } from "../format.js";
import { printJson, printLine } from "../io.js";
import { withStore } from "../with-store.js";

const NAME = "timer cancel";

/** `timer cancel`: appends TimerCancelled unless the timer already fired. */
export const timerCancelCommand: CliCommand = {
  name: ["timer", "cancel"],
  summary: "cancel an armed timer or cron series durably (appends TimerCancelled)",
  options: {
    ...dataDirOption,
    repo: { type: "string", short: "r" },
    run: { type: "string" },
    timer: { type: "string", short: "t" },
    reason: { type: "string" },
    json: { type: "boolean" },
  },
  help: `Usage: workflow-host timer cancel --data-dir DIR --repo R --run X --timer T [--reason TEXT] [--json]

Appends TimerCancelled for an armed timer (a one-shot or a whole cron series). The log is
re-checked under the repo lock, so against a host firing the same timer exactly one wins:
the outcome says which.

Outcomes (exit 0): cancelled, already_fired, already_cancelled, run_terminal.
A timer id that was never set is timer_not_found (exit 1); a run that retention moved to
refs/archive/runs is run_archived (exit 1: its log is closed). A run with an object of its
log missing or damaged is object_missing or object_corrupt (exit 1, nothing written: the lost
event could be this timer's fire); workflow-host check lists what is lost.

Options:
  -d, --data-dir DIR   data dir (default: $WORKFLOW_HOST_DATA_DIR)
  -r, --repo R         deployment id
      --run X          run id
  -t, --timer T        timer id
      --reason TEXT    recorded in the event (at most 1000 characters)
      --json           print {repoId, runId, timerId, outcome, commitSha}

Example:
  workflow-host timer cancel -d ./data -r payments --run order-17 -t reminder --reason "paid"
`,
  async run(values, io) {
    const dataDir = dataDirFlag(NAME, values, io);
    const repoId = checkFlags(NAME, () => parseRepoId(requiredFlag(NAME, values, "repo")));
    const runId = checkFlags(NAME, () => parseRunId(requiredFlag(NAME, values, "run")));
    const timerId = checkFlags(NAME, () => parseTimerId(requiredFlag(NAME, values, "timer")));
    const reason = stringFlag(values, "reason");
    checkFlags(NAME, () => checkReason(reason));
    const { cancelTimerDurably } = await import("../../../seams/scheduler/timer-cancel.js");
    const result = await withStore(dataDir, io, async (store) => {
      const outcome = await cancelTimerDurably({ store, principal: null, repoId, runId, timerId, ...(reason === undefined ? {} : { reason }), clock: io.clock });
      if (outcome.outcome !== "not_armed") return outcome;
      // A run retention archived has no timer left on main: say so rather than "not armed".
      const { archivedRunError } = await import("../../workflow/run-archive.js");
      const archived = await archivedRunError(store, null, { kind: "workflow-run", id: repoId }, runId);
      if (archived !== null) throw archived;
      return outcome;
    });
    if (result.outcome === "not_armed") {
      throw new WorkflowHostError("timer_not_found", `timer ${timerId} of run ${runId} in ${repoId} is not armed (never set, or ended otherwise); nothing cancelled`, { repoId, runId, timerId });
    }
    if (values["json"] === true) printJson(io, { repoId, runId, timerId, ...result });
    else printLine(io, `${result.outcome.replace("_", " ")}: timer ${timerId} of ${runId}${result.commitSha === null ? "" : ` (commit ${shortSha(result.commitSha)})`}`);
    return 0;
  },
};
