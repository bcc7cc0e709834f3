/**
 * The durable delivery of a signal: a SignalReceived appended to the run's log, exactly once per
 * signalId (the dedupe check and the append happen together under the repo lock, against the
 * whole log). A run's channel calls it for `deliver`, so the runtime, the CLI's `signal send` and
 * the HTTP API all deliver through here.
 */
import { newSignalReceived, signalReceivedEvent } from "../../src/workflow/event-constructors.js";
import { isSignalReceived } from "../../src/workflow/event-guards.js";
import { serializeEvent } from "../../src/workflow/events.js";
import type { RunLogWriter } from "../../src/workflow/run-log-writer.js";
import { asRunArchived } from "../run-archived-error.js";

/** A delivery: validated name and id, the payload (plain JSON data) and its `at` (RFC 3339). */
export interface SignalDelivery {
  readonly signalName: string;
  readonly signalId: string;
  readonly payload: unknown;
  readonly at: string;
}

/**
 * Appends SignalReceived for `delivery` unless the log already holds its signalId.
 * @returns the seq of the (new or earlier) SignalReceived, and whether it was a duplicate
 * @throws `payload_too_large` / `event_invalid` before any write (the size is checked at seq 1,
 *   the shortest seq an append can get, and again at the real seq under the lock); every error
 *   of the run-log append (`event_invalid` for a run that has ended, `run_archived` for one retention archived,
 *   `repo_not_found`, …)
 */
export async function deliverSignalDurably(log: RunLogWriter, runId: string, delivery: SignalDelivery): Promise<{ seq: number; duplicate: boolean }> {
  const { signalName, signalId } = delivery;
  serializeEvent(signalReceivedEvent(1, delivery), { maxEventBytes: log.maxEventBytes });
  const written = await log
    .append<{ seq: number; duplicate: boolean }>(runId, `Signal ${signalName} (${signalId}) to run ${runId}`, (current) => {
      const existing = current.events.find((e) => isSignalReceived(e) && e.signalId === signalId);
      if (existing !== undefined) return { append: [], result: { seq: existing.seq, duplicate: true } };
      return { append: [newSignalReceived(delivery)], result: { seq: current.nextSeq, duplicate: false } };
    })
    .catch((error: unknown) => {
      throw asRunArchived(error, log.repoId, runId);
    });
  return written.result as { seq: number; duplicate: boolean };
}
