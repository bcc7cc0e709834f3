/**
 * One answer for every write to a run that retention archived: the append's validation refuses a
 * new event under an archived run id (`event_invalid`, `data.reason` "run_archived", naming the
 * event file it would have written); the verbs say `run_archived` naming the run instead, as
 * ending or compacting an archived run does.
 */
import { isWorkflowHostError, WorkflowHostError } from "../src/errors.js";
import { ARCHIVE_REF } from "../src/workflow/run-archive.js";

/**
 * `error` as `run_archived` (`data`: repoId, runId, ref) when it is the append's refusal of an
 * archived run id; any other error as it is.
 */
export function asRunArchived(error: unknown, repoId: string, runId: string): unknown {
  if (!isWorkflowHostError(error, "event_invalid") || error.data["reason"] !== "run_archived") return error;
  return new WorkflowHostError(
    "run_archived",
    `run ${runId} of ${repoId} was archived by retention (${ARCHIVE_REF}); read it with workflow-host runs show, it cannot be changed`,
    { repoId, runId, ref: ARCHIVE_REF },
    { cause: error },
  );
}
