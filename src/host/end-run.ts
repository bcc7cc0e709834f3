/**
 * Ending a run: one terminal event (`RunCompleted`, `RunFailed` or `RunCancelled`) appended to its
 * log, after which nothing may follow. The terminal event disarms every timer of the run (the
 * scheduler drops them as it tails the commit) and makes the run due for retention once it is
 * older than the deployment's `endedRunsAfterMs` (its `at` is when it ended).
 */
import { WorkflowHostError } from "../errors.js";
import { clockOf, type ClockOption } from "../time/clock-option.js";
import type { Principal, RepoStore } from "../substrate/types.js";
import { parseRepoId, parseRunId } from "../workflow/ids.js";
import { assertJsonValue } from "../workflow/json-value.js";
import { newTerminalEvent } from "../workflow/event-constructors.js";
import { archivedRunError } from "../workflow/run-archive.js";
import { openRunLog } from "../workflow/run-log-writer.js";
import { WORKFLOW_RUN_KIND } from "../workflow/workflow-run-kind.js";
import { isoFromMs } from "../workflow/time.js";
import type { TerminalEventType } from "../workflow/types.js";

/** How a run ended. */
export type RunOutcome = "completed" | "failed" | "cancelled";

/** The terminal event type of each outcome. */
export const TERMINAL_TYPE_OF: Readonly<Record<RunOutcome, TerminalEventType>> = {
  completed: "RunCompleted",
  failed: "RunFailed",
  cancelled: "RunCancelled",
};

/** `clock` (or the deprecated `nowMs`, epoch ms) stamps the event's `at`; retention counts from it. */
export interface EndRunOptions extends ClockOption {
  readonly store: RepoStore;
  readonly principal: Principal;
  readonly repoId: string;
  readonly runId: string;
  readonly outcome: RunOutcome;
  /**
   * Recorded as the event's `data` (plain JSON: a result, an error, a reason). Default none.
   * A second call that differs only here commits nothing: the run has ended.
   */
  readonly data?: Record<string, unknown>;
  /** Default `DEFAULT_REF` ("refs/heads/main"). */
  readonly ref?: string;
  readonly maxEventBytes?: number;
}

export interface EndRunResult {
  /** The run's terminal event type. */
  readonly type: TerminalEventType;
  /** Its seq. */
  readonly seq: number;
  /** False when the run had already ended this way: nothing was committed. */
  readonly committed: boolean;
  /** The commit holding the terminal event (the tip when nothing was committed). */
  readonly commitSha: string | null;
}

/**
 * Appends the run's terminal event, decided under the repo lock. Idempotent: a run that already
 * ended with the same outcome commits nothing. A run with no event on the live ref is not
 * ended: that would start a run holding nothing but its end (a mistyped id, say).
 * @returns see {@link EndRunResult}
 * @throws repo_id_invalid, id_invalid, event_invalid (`data` not plain JSON), config_invalid (no
 *   clock) before any write;
 *   run_not_found when the run has no event on the live ref (nothing is written); run_archived
 *   when retention moved it to the archive ref (it ended already; nothing is written);
 *   event_invalid with `data.reason` "already_ended" when the run ended with another outcome;
 *   payload_too_large; object_missing/object_corrupt (`unreadableRun: true`, nothing written) when
 *   any object of the run's log cannot be read (design notes §69); the store's write errors
 */
export async function endRun(opts: EndRunOptions): Promise<EndRunResult> {
  const repoId = parseRepoId(opts.repoId);
  const runId = parseRunId(opts.runId);
  const clock = clockOf(opts, "endRun");
  const type = TERMINAL_TYPE_OF[opts.outcome];
  if (type === undefined) {
    throw new WorkflowHostError("event_invalid", `outcome ${JSON.stringify(opts.outcome)} is not one of completed, failed, cancelled`, { repoId, runId, outcome: opts.outcome });
  }
  if (opts.data !== undefined) assertJsonValue(opts.data, "data");
  const runLog = openRunLog({
    store: opts.store,
    principal: opts.principal,
    repoId,
    // The lost event could be the run's end: a second terminal event is never written on a guess.
    requireWhole: true,
    ...(opts.ref === undefined ? {} : { ref: opts.ref }),
    ...(opts.maxEventBytes === undefined ? {} : { maxEventBytes: opts.maxEventBytes }),
  });
  const written = await runLog
    .append<{ seq: number; committed: boolean }>(runId, `End run ${runId}: ${type}`, (log) => {
      if (log.events.length === 0 && log.maxFileSeq < 0) {
        throw new WorkflowHostError("run_not_found", `run ${runId} has no events in deployment ${repoId}; only a run that exists can end`, { repoId, runId });
      }
      const terminal = log.state.terminal;
      if (terminal !== null) {
        const last = log.events.at(-1);
        if (terminal === type && last !== undefined) return { append: [], result: { seq: last.seq, committed: false } };
        throw new WorkflowHostError("event_invalid", `run ${runId} of ${repoId} has already ended (${terminal}); it cannot end again as ${type}`, {
          repoId,
          runId,
          terminal,
          reason: "already_ended",
        });
      }
      const event = newTerminalEvent(type, isoFromMs(clock().getTime()), opts.data === undefined ? {} : { data: opts.data });
      return { append: [event], result: { seq: log.nextSeq, committed: true } };
    })
    .catch(async (error: unknown) => {
      // A run with no event: not found, or archived (its id is never used again).
      if (!(error instanceof WorkflowHostError) || error.code !== "run_not_found") throw error;
      const archived = await archivedRunError(opts.store, opts.principal, { kind: WORKFLOW_RUN_KIND, id: repoId }, runId, opts.ref).catch(() => null);
      throw archived ?? error;
    });
  const result = written.result ?? { seq: -1, committed: false };
  return { type, seq: result.seq, committed: written.committed && result.committed, commitSha: written.commitSha };
}
