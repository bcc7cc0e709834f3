/**
 * The durable cancel of a timer or cron series: a TimerCancelled appended to the run's log,
 * decided under the repo lock against the log at the tip (so a concurrent fire or cancel is
 * seen, and a timer is never both fired and cancelled). No scheduler is needed: the CLI calls
 * this directly, a running scheduler calls it and then drops its queued generation.
 */
import { clockOf } from "../../src/time/clock-option.js";
import type { Clock } from "../../src/time/clock.js";
import { parseRepoId, parseRunId, parseTimerId } from "../../src/workflow/ids.js";
import { checkReason, newTimerCancelled } from "../../src/workflow/event-constructors.js";
import { openRunLog } from "../../src/workflow/run-log-writer.js";
import { isoFromMs } from "../../src/workflow/time.js";
import { foldTimerEvents } from "../../src/workflow/timer-lifecycle.js";
import type { Principal, RepoStore } from "../../src/substrate/types.js";
import type { CancelOutcome } from "./scheduler-types.js";

export interface CancelTimerDurablyOptions {
  readonly store: RepoStore;
  readonly principal: Principal;
  readonly repoId: string;
  readonly runId: string;
  readonly timerId: string;
  /** Recorded in the event's data; omitted when undefined. */
  readonly reason?: string;
  /** Default `DEFAULT_REF` ("refs/heads/main"). */
  readonly ref?: string;
  readonly maxEventBytes?: number;
  /** Wall clock, for the event's `at`. One of `clock` and `nowMs` is required. */
  readonly clock?: Clock;
  /** @deprecated Use `clock`. Now in ms since the epoch. */
  readonly nowMs?: () => number;
}

/**
 * Appends TimerCancelled for `timerId` when it is armed in the run's log.
 * @returns `cancelled` with the new commit; otherwise (nothing written, `commitSha` null)
 *   `already_fired`, `already_cancelled`, `run_terminal` (the run has ended) or `not_armed`
 *   (never set)
 * @throws `repo_id_invalid`, `id_invalid` (run or timer id), `config_invalid` (no clock) before any read; every error of
 *   the run-log append (`repo_not_found`, `ref_locked`, `payload_too_large` for a long reason…);
 *   `object_missing`/`object_corrupt` (`unreadableRun: true`, nothing written) when any object of
 *   the run's log cannot be read: the lost event could be the timer's fire or cancel
 */
export async function cancelTimerDurably(opts: CancelTimerDurablyOptions): Promise<{ outcome: CancelOutcome; commitSha: string | null }> {
  const { repoId, runId, timerId, reason } = opts;
  parseRepoId(repoId);
  parseRunId(runId);
  parseTimerId(timerId);
  checkReason(reason);
  const clock = clockOf(opts, "cancelTimerDurably");
  // The lost event could be the timer's fire or cancel (design notes §69): refused, not guessed.
  const log = openRunLog({ store: opts.store, principal: opts.principal, repoId, requireWhole: true, ...(opts.ref === undefined ? {} : { ref: opts.ref }), ...(opts.maxEventBytes === undefined ? {} : { maxEventBytes: opts.maxEventBytes }) });
  const result = await log.append<CancelOutcome>(runId, `Cancel timer ${timerId} of ${runId}`, (current) => {
    if (current.state.terminal !== null) return { append: [], result: "run_terminal" };
    if (current.state.pendingTimers.has(timerId)) {
      return { append: [newTimerCancelled({ timerId, reason }, isoFromMs(clock().getTime()))], result: "cancelled" };
    }
    const { status } = foldTimerEvents(current.events, timerId);
    if (status === "fired") return { append: [], result: "already_fired" };
    if (status === "cancelled") return { append: [], result: "already_cancelled" };
    return { append: [], result: "not_armed" };
  });
  const outcome = result.result ?? "not_armed";
  return { outcome, commitSha: result.committed ? result.commitSha : null };
}
