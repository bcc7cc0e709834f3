import { isScheduleEnded, isSchedulePaused, isScheduleResumed, isSignalConsumed, isSignalReceived, isTimerCancelled, isTimerFired, isTimerSet, isTimerSkipped } from "../../workflow/event-guards.js";
import { WorkflowHostError } from "../../errors.js";
import { DEFAULT_REF } from "../../substrate/ref-name.js";
import { parseRepoId, parseRunId } from "../../workflow/ids.js";
import type { RunEvent, RunState } from "../../workflow/types.js";
import { checkFlags, dataDirFlag, dataDirOption, requiredFlag } from "../args.js";
import type { CliCommand } from "../command.js";
import { shortSha } from "../format.js";
import { printJson, printLine } from "../io.js";
import { withStore } from "../with-store.js";

const NAME = "runs show";

/** `runs show`: one run's events and the state they fold to. */
export const runsShowCommand: CliCommand = {
  name: ["runs", "show"],
  summary: "show a run's events and state",
  options: { ...dataDirOption, repo: { type: "string", short: "r" }, run: { type: "string" }, json: { type: "boolean" } },
  help: `Usage: workflow-host runs show --data-dir DIR --repo R --run X [--json]

Prints the run's events in seq order (from runs/<X>/events/ at the tip of main, or from its
sealed runs/<X>/events.jsonl: the same events either way; a run that retention moved out of
main is read from refs/archive/runs, unchanged), the events that could not be read,
breaks of the log's rules (missing seqs, events after the terminal one, which are skipped; a
sealed log that is not valid; entries outside the run folder's layout), and the state they
fold to: last seq, terminal event, armed timers, signals not yet consumed. A run with no folder
on main nor in the archive is run_not_found (exit 1).

Options:
  -d, --data-dir DIR   data dir (default: $WORKFLOW_HOST_DATA_DIR)
  -r, --repo R         deployment id
      --run X          run id
      --json           print {repoId, runId, commitSha, archived (the archive ref, or null),
                       events, bad, problems, state}

Example:
  workflow-host runs show -d ./data -r payments --run order-17
`,
  async run(values, io) {
    const dataDir = dataDirFlag(NAME, values, io);
    const repoId = checkFlags(NAME, () => parseRepoId(requiredFlag(NAME, values, "repo")));
    const runId = checkFlags(NAME, () => parseRunId(requiredFlag(NAME, values, "run")));
    const { commitSha, log, archived } = await withStore(dataDir, io, async (store) => {
      const [{ readRunLog }, { WORKFLOW_RUN_KIND }, { ARCHIVE_REF }] = await Promise.all([
        import("../../workflow/run-log.js"),
        import("../../workflow/workflow-run-kind.js"),
        import("../../workflow/run-archive.js"),
      ]);
      const repo = { kind: WORKFLOW_RUN_KIND, id: repoId };
      const reads = await store.openCommittedReads(null, repo, DEFAULT_REF);
      // A run retention moved out of main is read from the archive ref, as it was.
      if ((await reads.treeOid(`runs/${runId}`)) === null) {
        const archive = await store.openCommittedReads(null, repo, ARCHIVE_REF);
        if (archive.commitSha !== null && (await archive.treeOid(`runs/${runId}`)) !== null) {
          return { commitSha: archive.commitSha, log: await readRunLog(archive, runId), archived: ARCHIVE_REF };
        }
        // No folder on main nor in the archive: a mistyped id, or a run not started yet.
        throw new WorkflowHostError("run_not_found", `run ${runId} has no log in deployment ${repoId} (neither on main nor in ${ARCHIVE_REF}); see workflow-host runs list`, { repoId, runId });
      }
      return { commitSha: reads.commitSha, log: await readRunLog(reads, runId), archived: null };
    });
    const state = stateJson(log.state);
    if (values["json"] === true) {
      printJson(io, {
        repoId,
        runId,
        commitSha,
        archived,
        events: log.events,
        bad: log.bad.map((b) => ({ path: b.path, seq: b.seq, code: b.error.code, message: b.error.message })),
        problems: log.problems.map((p) => ({ path: p.path, seq: p.seq, code: p.error.code, message: p.error.message })),
        state,
      });
      return 0;
    }
    printLine(io, `run ${runId} in ${repoId} at ${shortSha(commitSha)}${archived === null ? "" : ` (archived: ${archived})`}: ${log.events.length} events`);
    for (const event of log.events) printLine(io, `  ${String(event.seq).padStart(4)}  ${event.type.padEnd(15)} ${describeEvent(event)}`);
    for (const bad of log.bad) printLine(io, `  ${String(bad.seq ?? "?").padStart(4)}  UNREADABLE      ${bad.path}: ${bad.error.message}`);
    for (const problem of log.problems) printLine(io, `  ${String(problem.seq ?? "?").padStart(4)}  PROBLEM         ${problem.path}: ${problem.error.message}`);
    printLine(io, `state: lastSeq ${state.lastSeq}, ${state.terminal === null ? "running" : `ended (${state.terminal})`}`);
    for (const t of state.pendingTimers) {
      printLine(io, `  timer ${t.timerId} ${t.pausedAt === undefined ? "armed" : "paused at slot"} for ${t.fireAt}${t.cron === undefined ? "" : ` (cron "${t.cron}" ${t.timezone ?? "UTC"})`}`);
    }
    for (const s of state.unconsumedSignals) printLine(io, `  signal ${s.signalName} (${s.signalId}, seq ${s.seq}) not consumed yet`);
    return 0;
  },
};

function stateJson(state: RunState) {
  return {
    lastSeq: state.lastSeq,
    terminal: state.terminal,
    pendingTimers: [...state.pendingTimers.values()],
    observedSignalIds: [...state.observedSignalIds],
    unconsumedSignals: state.unconsumedSignals,
  };
}

/** The interesting fields of an event, on one line. */
function describeEvent(event: RunEvent): string {
  const at = typeof event["at"] === "string" ? `  at ${event["at"]}` : "";
  if (isTimerSet(event)) {
    const d = event.data;
    return `${d.timerId} fireAt ${d.fireAt}${d.cron === undefined ? "" : ` cron "${d.cron}" ${d.timezone ?? "UTC"}`}${at}`;
  }
  if (isTimerFired(event)) {
    const d = event.data;
    const kind = d.manual === true ? ` (manual, request ${String(d.requestId)})` : d.backfill === true ? " (backfill)" : "";
    const jitter = d.jitteredFor === undefined ? "" : ` jitteredFor ${d.jitteredFor}`;
    // Committed late behind a backlog, taken up on time: why it fired rather than being skipped.
    const takenUp = d.takenUpAt === undefined ? "" : ` (taken up ${d.takenUpAt})`;
    return `${d.timerId} scheduledFor ${d.scheduledFor ?? "-"}${jitter} firedAt ${d.firedAt ?? "-"}${takenUp}${kind}`;
  }
  if (isTimerSkipped(event)) {
    // Why the slots did not fire: "missed" (host down, clock jump) or "paused".
    const d = event.data;
    return `${d.timerId} ${d.count} skipped ${d.firstMissed}..${d.lastMissed}: ${d.reason ?? "missed"}`;
  }
  if (isSchedulePaused(event)) return `${event.data.timerId}${event.data.reason === undefined ? "" : ` (${event.data.reason})`}${at}`;
  if (isScheduleResumed(event)) return `${event.data.timerId}${event.data.catchUp === true ? " (catch up by misfire policy)" : ""}${at}`;
  if (isScheduleEnded(event)) return `${event.data.timerId} reached ${event.data.reason}${event.data.lastTick === undefined ? "" : ` after ${event.data.lastTick}`}${at}`;
  if (isTimerCancelled(event)) return `${event.data.timerId}${event.data.reason === undefined ? "" : ` (${event.data.reason})`}${at}`;
  if (isSignalReceived(event)) return `${event.signalName} ${event.signalId} payload ${JSON.stringify(event.payload)}${at}`;
  if (isSignalConsumed(event)) return `${event.data.signalId}${event.data.stepId === undefined ? "" : ` step ${event.data.stepId}`}${at}`;
  return at.trim();
}
