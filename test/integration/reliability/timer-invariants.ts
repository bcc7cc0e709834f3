/**
 * The timer guarantees, checked from a deployment's log alone (never from what a host printed).
 *
 * One-shot generations (every TimerSet without cron opens one; it ends at the next TimerSet or
 * TimerCancelled of its timer, a terminal event, or its TimerFired):
 * - exactly one TimerFired for every generation that was still armed once its fireAt had
 *   passed by `dueGraceMs` before the end, and none for a generation that had already ended
 *   (cancelled, replaced, fired, run over);
 * - the TimerFired names the generation's fireAt as scheduledFor, and is never early: neither by
 *   its own firedAt, nor by the commit's time, nor by when the ref was first seen holding it.
 * Cron series (policy `skip`): every tick from the first armed one on is handled exactly once,
 * in order — fired on time or covered by a TimerSkipped whose count matches its range — each
 * follow-on TimerSet arms the next unhandled tick, and the series is still armed at the end with
 * a tick no older than the grace allows. On time means taken up by a running host at most
 * `cronGraceMs` after the tick was due (`jitteredFor ?? scheduledFor`): by `firedAt`, or, for a
 * fire committed later behind a backlog, by the `takenUpAt` it records, which must lie between
 * the due time and `firedAt` (and inside a host's up interval, when those are given).
 * Logs: seqs dense from 0 or 1, every file readable, nothing after a terminal event.
 */
import { ticksBetween, nextTick } from "../../../src/workflow/cron.js";
import { eventPath } from "../../../src/workflow/paths.js";
import type { RunLog } from "../../../src/workflow/run-log.js";
import { isoFromMs } from "../../../src/workflow/time.js";
import type { RunEvent } from "../../../src/workflow/types.js";
import type { HistoryCommit } from "./deployment-log.js";
import type { RefSamples } from "./ref-sampler.js";

export interface TimerCheckInput {
  readonly runs: ReadonlyMap<string, RunLog>;
  /** First-parent history, oldest first: which commit added each event, and its time. */
  readonly history?: readonly HistoryCommit[];
  /** When each ref value was first seen: an upper bound on when its commit landed. */
  readonly refSamples?: RefSamples;
  /** When the last host was stopped (epoch ms). */
  readonly endMs: number;
  /** A one-shot due this long before `endMs` must have fired (ms). */
  readonly dueGraceMs: number;
  /** How late an on-time cron fire may be under `skip` (ms, the host's misfire grace). */
  readonly cronGraceMs: number;
  /**
   * When hosts ran (epoch ms, `[fromMs, toMs]`, toMs the exit), if known: a `takenUpAt` outside
   * all of them claims a take-up no host made.
   */
  readonly hostUp?: readonly (readonly [number, number])[];
  /** Runs expected to hold bad files on purpose (hostile inputs); others must have none. */
  readonly badAllowed?: (runId: string) => boolean;
}

export interface TimerCheckStats {
  readonly runs: number;
  readonly events: number;
  readonly oneShotGenerations: number;
  readonly fired: number;
  readonly cancelled: number;
  readonly replaced: number;
  readonly cronFired: number;
  readonly cronSkippedTicks: number;
  readonly cronSkipEvents: number;
  /** Largest firedAt − scheduledFor of a one-shot (ms). */
  readonly maxLateMs: number;
}

export interface TimerCheckResult {
  readonly violations: string[];
  readonly stats: TimerCheckStats;
}

interface Generation {
  readonly setSeq: number;
  readonly fireAt: string;
}

interface Series {
  readonly cron: string;
  readonly timezone: string;
  /** The next tick nothing has handled yet. */
  expected: string;
  /** A fire or skip since the last TimerSet: the next TimerSet must be the follow-on. */
  handledSinceSet: boolean;
  setSeq: number;
}

type DataOf = Record<string, unknown>;

const dataOf = (event: RunEvent): DataOf => ((event as { data?: DataOf }).data ?? {});
const str = (value: unknown): string => (typeof value === "string" ? value : String(value));

/** Checks every run of a deployment; see the module comment for the rules. */
export function checkTimerLog(input: TimerCheckInput): TimerCheckResult {
  const violations: string[] = [];
  const stats = { runs: 0, events: 0, oneShotGenerations: 0, fired: 0, cancelled: 0, replaced: 0, cronFired: 0, cronSkippedTicks: 0, cronSkipEvents: 0, maxLateMs: 0 };
  const observedBy = observationTimes(input.history, input.refSamples);

  for (const [runId, log] of input.runs) {
    stats.runs += 1;
    stats.events += log.events.length;
    if (input.badAllowed?.(runId) !== true) {
      for (const bad of log.bad) violations.push(`${bad.path}: unreadable (${bad.error.code}: ${bad.error.message})`);
      for (const problem of log.problems) violations.push(`${problem.path}: ${problem.error.message}`);
    }
    const seqs = [...log.events.map((e) => e.seq), ...log.bad.flatMap((b) => (b.seq === null ? [] : [b.seq]))].sort((a, b) => a - b);
    if (seqs.length > 0 && seqs[0] !== 0 && seqs[0] !== 1) violations.push(`run ${runId}: first seq is ${seqs[0]}, not 0 or 1`);
    for (let i = 1; i < seqs.length; i += 1) {
      if (seqs[i] !== (seqs[i - 1] as number) + 1) violations.push(`run ${runId}: seq ${seqs[i - 1]} is followed by ${seqs[i]}; seqs must be dense`);
    }

    const armed = new Map<string, Generation>();
    const series = new Map<string, Series>();
    let terminalSeq: number | null = null;
    for (const event of log.events) {
      const where = `${eventPath(runId, event.seq)} (${event.type})`;
      if (terminalSeq !== null) {
        violations.push(`${where} follows the terminal event at seq ${terminalSeq}`);
        continue;
      }
      const data = dataOf(event);
      const timerId = str(data["timerId"]);
      switch (event.type) {
        case "TimerSet": {
          if (typeof data["cron"] === "string") {
            const fireAt = str(data["fireAt"]);
            const known = series.get(timerId);
            if (known !== undefined && known.handledSinceSet && fireAt !== known.expected) {
              violations.push(`${where}: series ${timerId} re-armed at ${fireAt}; the next unhandled tick is ${known.expected}`);
            }
            series.set(timerId, { cron: data["cron"], timezone: str(data["timezone"] ?? "UTC"), expected: fireAt, handledSinceSet: false, setSeq: event.seq });
            break;
          }
          if (armed.has(timerId)) stats.replaced += 1;
          armed.set(timerId, { setSeq: event.seq, fireAt: str(data["fireAt"]) });
          stats.oneShotGenerations += 1;
          break;
        }
        case "TimerFired": {
          const scheduledFor = str(data["scheduledFor"]);
          const firedAt = str(data["firedAt"]);
          checkNotEarly(violations, where, scheduledFor, firedAt, observedBy.get(eventPath(runId, event.seq)));
          const s = series.get(timerId);
          if (s !== undefined) {
            if (scheduledFor !== s.expected) violations.push(`${where}: series ${timerId} fired ${scheduledFor}; the next unhandled tick is ${s.expected} (a tick lost or doubled)`);
            checkTakenUp(violations, where, timerId, data, input);
            s.expected = nextTick(s.cron, s.timezone, scheduledFor) ?? "none";
            s.handledSinceSet = true;
            stats.cronFired += 1;
            break;
          }
          const generation = armed.get(timerId);
          if (generation === undefined) {
            violations.push(`${where}: fired ${timerId} (scheduledFor ${scheduledFor}) with no armed generation (never set, cancelled, already fired or replaced)`);
            break;
          }
          if (scheduledFor !== generation.fireAt) {
            // A fire of an earlier generation: the armed one is still owed its own.
            violations.push(`${where}: fired ${timerId} for ${scheduledFor}, but the armed generation (seq ${generation.setSeq}) is due ${generation.fireAt}`);
            break;
          }
          stats.maxLateMs = Math.max(stats.maxLateMs, Date.parse(firedAt) - Date.parse(scheduledFor));
          armed.delete(timerId);
          stats.fired += 1;
          break;
        }
        case "TimerSkipped": {
          const s = series.get(timerId);
          if (s === undefined) {
            violations.push(`${where}: skipped ${timerId}, which is not a cron series`);
            break;
          }
          const first = str(data["firstMissed"]);
          const last = str(data["lastMissed"]);
          if (first !== s.expected) violations.push(`${where}: series ${timerId} skips from ${first}; the next unhandled tick is ${s.expected}`);
          const count = ticksBetween(s.cron, s.timezone, isoFromMs(Date.parse(first) - 1), last, 0).count;
          if (count !== data["count"]) violations.push(`${where}: TimerSkipped count ${str(data["count"])} but ${count} ticks lie in ${first}..${last}`);
          s.expected = nextTick(s.cron, s.timezone, last) ?? "none";
          s.handledSinceSet = true;
          stats.cronSkippedTicks += count;
          stats.cronSkipEvents += 1;
          break;
        }
        case "TimerCancelled":
          if (armed.delete(timerId) || series.delete(timerId)) stats.cancelled += 1;
          break;
        case "RunCompleted":
        case "RunFailed":
        case "RunCancelled":
          terminalSeq = event.seq;
          armed.clear();
          series.clear();
          break;
      }
    }
    for (const [timerId, generation] of armed) {
      if (Date.parse(generation.fireAt) <= input.endMs - input.dueGraceMs) {
        violations.push(`run ${runId}: timer ${timerId} (seq ${generation.setSeq}) was due ${generation.fireAt} and never fired (lost)`);
      }
    }
    for (const [timerId, s] of series) {
      if (s.expected === "none" || Date.parse(s.expected) <= input.endMs - input.dueGraceMs - input.cronGraceMs) {
        violations.push(`run ${runId}: series ${timerId} stalled; its next unhandled tick is ${s.expected}`);
      }
    }
  }
  return { violations, stats };
}

/** A series fire under skip: taken up within the grace of its due time, never before it. */
function checkTakenUp(violations: string[], where: string, timerId: string, data: DataOf, input: TimerCheckInput): void {
  const scheduledFor = str(data["scheduledFor"]);
  const dueMs = Date.parse(typeof data["jitteredFor"] === "string" ? data["jitteredFor"] : scheduledFor);
  const firedAtMs = Date.parse(str(data["firedAt"]));
  const takenUp = data["takenUpAt"];
  if (takenUp === undefined) {
    const lateMs = firedAtMs - dueMs;
    if (lateMs > input.cronGraceMs) violations.push(`${where}: series ${timerId} fired ${scheduledFor} ${lateMs} ms late; under skip it should have been skipped`);
    return;
  }
  const takenUpMs = Date.parse(str(takenUp));
  if (!(takenUpMs >= dueMs && takenUpMs <= firedAtMs)) {
    violations.push(`${where}: series ${timerId} takenUpAt ${str(takenUp)} is not between its due time ${isoFromMs(dueMs)} and firedAt ${str(data["firedAt"])}`);
    return;
  }
  const lateMs = takenUpMs - dueMs;
  if (lateMs > input.cronGraceMs) violations.push(`${where}: series ${timerId} was taken up ${lateMs} ms after ${scheduledFor} was due; under skip it should have been skipped`);
  if (input.hostUp !== undefined && !input.hostUp.some(([fromMs, toMs]) => takenUpMs >= fromMs && takenUpMs <= toMs)) {
    violations.push(`${where}: series ${timerId} takenUpAt ${str(takenUp)} lies outside every host's up interval`);
  }
}

function checkNotEarly(violations: string[], where: string, scheduledFor: string, firedAt: string, observed: { atMs: number; commitSec: number } | undefined): void {
  const dueMs = Date.parse(scheduledFor);
  if (!(Date.parse(firedAt) >= dueMs)) violations.push(`${where}: firedAt ${firedAt} is before scheduledFor ${scheduledFor}`);
  if (observed === undefined) return;
  if (observed.commitSec < Math.floor(dueMs / 1_000)) violations.push(`${where}: committed at ${observed.commitSec}s, before scheduledFor ${scheduledFor}`);
  if (observed.atMs < dueMs) violations.push(`${where}: on main at ${isoFromMs(observed.atMs)}, before scheduledFor ${scheduledFor}`);
}

/**
 * For every event path, the commit that added it: its time, and the earliest moment the ref was
 * seen at that commit or a later one (so the commit had landed by then).
 */
function observationTimes(history: readonly HistoryCommit[] | undefined, samples: RefSamples | undefined): Map<string, { atMs: number; commitSec: number }> {
  const out = new Map<string, { atMs: number; commitSec: number }>();
  if (history === undefined) return out;
  const position = new Map(history.map((c, i) => [c.sha, i]));
  const seenAt: number[] = history.map(() => Number.POSITIVE_INFINITY);
  for (const sample of samples?.values ?? []) {
    const i = position.get(sample.value);
    if (i !== undefined) seenAt[i] = Math.min(seenAt[i] as number, sample.firstSeenMs);
  }
  for (let i = seenAt.length - 2; i >= 0; i -= 1) seenAt[i] = Math.min(seenAt[i] as number, seenAt[i + 1] as number);
  history.forEach((commit, i) => {
    for (const change of commit.changes) if (change.status === "A") out.set(change.path, { atMs: seenAt[i] as number, commitSec: commit.timeSec });
  });
  return out;
}
