/**
 * The durable set of a timer or cron series: a TimerSet appended to the run's log, decided under
 * the repo lock against the log at the tip. The runtime's `setTimer`/`scheduleIn` and the CLI's
 * `timer set` both call it, so they share one idempotence rule:
 * - the same request already armed (same fireAt, cron, zone, step and misfire) commits nothing
 *   and answers with the armed generation;
 * - a one-shot that already fired at the same instant (and was not re-armed since) commits
 *   nothing either: arming it again would fire it a second time;
 * - anything else appends a TimerSet (a reschedule when the timer is armed differently).
 * A run that has ended takes nothing more: the append throws `event_invalid`.
 */
import type { RunLogWriter } from "../../src/workflow/run-log-writer.js";
import { asRunArchived } from "../run-archived-error.js";
import { newTimerSet } from "../../src/workflow/event-constructors.js";
import { foldTimerEvents } from "../../src/workflow/timer-lifecycle.js";
import { sameTimerRequest } from "../../src/workflow/timer-spec.js";
import type { TimerSetData } from "../../src/workflow/types.js";

export interface SetTimerOutcome {
  readonly timerId: string;
  /** The armed generation's fireAt (RFC 3339, UTC). */
  readonly fireAt: string;
  /** Seq of the TimerSet that armed it (the generation). */
  readonly setSeq: number;
  /** False when the same request was already armed (or had fired) and nothing was committed. */
  readonly committed: boolean;
  /** The new commit, or the tip seen when nothing was committed. */
  readonly commitSha: string | null;
}

/**
 * Arms `data.timerId` of `runId` (see the module comment for when nothing is written).
 * @param data - validated TimerSet data (see `resolveTimerSpec`).
 * @param at - the event's `at` (RFC 3339).
 * @param message - commit message; default `Set timer <timerId> of run <runId> at <fireAt>`.
 * @throws `event_invalid` when the run has ended; `run_archived` when retention archived it; every error of `appendRunEvents`
 *   (`repo_not_found`, `ref_locked`, `payload_too_large`…)
 */
export async function setTimerDurably(log: RunLogWriter, runId: string, data: TimerSetData, at: string, message?: string): Promise<SetTimerOutcome> {
  const written = await log
    .append(runId, message ?? `Set timer ${data.timerId} of run ${runId} at ${data.fireAt}`, (current) => {
      const pending = current.state.pendingTimers.get(data.timerId);
      if (pending !== undefined && sameTimerRequest(pending, data)) {
        return { append: [], result: { fireAt: pending.fireAt, setSeq: pending.setSeq, committed: false } };
      }
      const last = foldTimerEvents(current.events, data.timerId);
      if (pending === undefined && data.cron === undefined && last.status === "fired" && !last.cron && last.setSeq !== null && last.fireAt !== null && Date.parse(last.fireAt) === Date.parse(data.fireAt)) {
        return { append: [], result: { fireAt: data.fireAt, setSeq: last.setSeq, committed: false } };
      }
      return { append: [newTimerSet(data, at)], result: { fireAt: data.fireAt, setSeq: current.nextSeq, committed: true } };
    })
    .catch((error: unknown) => {
      throw asRunArchived(error, log.repoId, runId);
    });
  const result = written.result as { fireAt: string; setSeq: number; committed: boolean };
  return { timerId: data.timerId, ...result, commitSha: written.commitSha };
}
