/**
 * Schedules as first-class objects: the verbs over a deployment's cron series (pause, resume,
 * trigger now, backfill, list, describe, sync). Each is an append decided under the repo lock
 * from the run's log at the tip (the run-log writer, `openRunLog`), by the pure planners of
 * `src/workflow/schedule/`, so it is idempotent, safe next to a running scheduler (which sees
 * the commit through its tail) and needs none: the CLI calls these directly.
 *
 * Events written (see README "Schedules"): `SchedulePaused`, `ScheduleResumed` (+ `TimerSkipped`
 * reason `paused` + `TimerSet`), `TimerFired` with `manual: true` and `requestId`, `TimerFired`
 * with `backfill: true`, `TimerSet` with `owner: "sync"`, `TimerCancelled` reason
 * `sync: not declared`. Every event is validated before it is written.
 */
import { WorkflowHostError } from "../../src/errors.js";
import { parseRepoId, parseRunId, parseSignalId, parseTimerId } from "../../src/workflow/ids.js";
import { parseInstant } from "../../src/workflow/time.js";
import { checkReason } from "../../src/workflow/event-constructors.js";
import { openRunFolder, readRunLog, type RunLog } from "../../src/workflow/run-log.js";
import { openRunLog } from "../../src/workflow/run-log-writer.js";
import { asUnreadableRunError, readEachRun, requireRunFolderLog, requireRunLog, requireWholeRunLog, unreadablePartOf, type UnreadableRun } from "../../src/workflow/unreadable-runs.js";
import { WORKFLOW_RUN_KIND } from "../../src/workflow/workflow-run-kind.js";
import { armedSeries, backfillLimit, planBackfill, planPause, planResume, planTrigger } from "../../src/workflow/schedule/schedule-controls.js";
import { previewSeries, type PreviewTick } from "../../src/workflow/schedule/preview.js";
import { seriesHistory, seriesMarks, type SeriesFire, type SeriesHistory, type SeriesMarks } from "../../src/workflow/schedule/series-history.js";
import {
  endedSeriesOf,
  isEmptyPlan,
  parseDeclaredSchedules,
  planSync,
  syncEventsForRun,
  type CurrentSeries,
  type DeclaredSchedule,
  type EndedSeries,
  type SyncPlan,
} from "../../src/workflow/schedule/sync-plan.js";
import type { SeriesEvent } from "../../src/workflow/schedule/series-slots.js";
import { DEFAULT_REF } from "../../src/substrate/ref-name.js";
import type { Principal, RepoStore } from "../../src/substrate/types.js";
import type { Clock } from "../../src/time/clock.js";
import type { PendingTimer } from "../../src/workflow/types.js";
import { createTimeSlicer } from "../../src/time/time-slicer.js";

export interface ScheduleControlsOptions {
  readonly store: RepoStore;
  readonly principal: Principal;
  /** Default `DEFAULT_REF` ("refs/heads/main"). */
  readonly ref?: string;
  /** Wall clock: "now" for resume, trigger, backfill ranges, sync's first slots, and `at`. */
  readonly clock: Clock;
  readonly maxEventBytes?: number;
  /**
   * Awaited between units of a read or plan over a deployment (a run read, an event folded, a
   * declared series planned), so listing, describing or planning a sync of thousands of series
   * gives the event loop a turn every few ms. Default: a time slicer of `DEFAULT_SLICE_MS`
   * (src/time/time-slicer.ts) shared by these controls.
   */
  readonly pause?: () => Promise<void>;
}

/** One armed series as `list` shows it. */
export interface ScheduleSummary {
  readonly runId: string;
  readonly timerId: string;
  readonly cron: string;
  readonly timezone: string;
  /** The armed slot. */
  readonly nextAt: string;
  readonly paused: boolean;
  readonly pausedAt: string | null;
  readonly owner: string | null;
  readonly misfire: string | null;
  readonly startAt: string | null;
  readonly endAt: string | null;
  readonly maxTicks: number | null;
  readonly slot: number;
  readonly jitterMs: number | null;
  /** The reason given to the pause in force (`schedule pause --reason`), or null (running, or paused without one). */
  readonly pauseReason: string | null;
  /** The series' last fire in the run's log (scheduled, manual or backfill; `describe`'s last `history.fires`), or null. */
  readonly lastFire: SeriesFire | null;
}

export interface ScheduleDescription extends ScheduleSummary {
  /** The next slots from the armed one (UTC and local), as many as asked. */
  readonly next: readonly PreviewTick[];
  readonly history: SeriesHistory;
}

export interface ScheduleControls {
  /**
   * Pauses a series: appends `SchedulePaused` unless it is paused already.
   * @throws `schedule_not_found` (not an armed series, or the run ended); `event_invalid` for a
   *   run that holds no log (its `events` entry a file or a link); id errors; write errors
   */
  pause(repoId: string, runId: string, timerId: string, opts?: { reason?: string }): Promise<{ outcome: "paused" | "already_paused"; commitSha: string | null }>;
  /**
   * Resumes a paused series: `ScheduleResumed`, one `TimerSkipped` (reason `paused`) for the
   * slots due while paused, and the next future slot; with `catchUp`, only `ScheduleResumed`
   * (the series' misfire policy then applies to the stretch).
   * @throws as {@link pause}
   */
  resume(repoId: string, runId: string, timerId: string, opts?: { catchUp?: boolean }): Promise<{ outcome: "resumed" | "not_paused"; skipped: number; commitSha: string | null }>;
  /**
   * Fires a series now (`TimerFired` with `manual: true`, `requestId`); a `requestId` already
   * fired for this series appends nothing (`duplicate`, `commitSha` null) and answers that
   * fire's `firedAt` (null only for a fire recorded with no time, which this host never writes).
   * The armed slot does not move.
   * @throws as {@link pause}; `id_invalid` for a bad requestId
   */
  trigger(repoId: string, runId: string, timerId: string, requestId: string): Promise<{ outcome: "triggered" | "duplicate"; firedAt: string | null; commitSha: string | null }>;
  /**
   * Fires each slot of `[from, to]` (inclusive, in the past, before the armed slot) that has not
   * fired, as `TimerFired` with `backfill: true`; a second backfill of the range fires nothing.
   * The range is fired whole or not at all: a range of more slots than `maxTicks` is refused
   * before anything is written, never cut short.
   * @param opts.maxTicks - most slots, a whole number 1 … 1 000 (default 1 000)
   * @throws as {@link pause}; `time_invalid` (range); `usage` for a `maxTicks` out of range (it
   *   was lowered to 1 000 unsaid); `backfill_too_large` for a range of more slots than
   *   `maxTicks` (fired or not), nothing written, with `data.lastSlotWithin` (where a range that
   *   fits ends) and `data.nextSlot` (where the next starts), both in its message too
   */
  backfill(repoId: string, runId: string, timerId: string, range: { from: string; to: string; maxTicks?: number }): Promise<{ fired: readonly string[]; alreadyFired: readonly string[]; emptyBecause: string | null; commitSha: string | null }>;
  /**
   * Every armed cron series of a deployment, by run then timer, and the runs whose folder,
   * `events/` folder or an event of whose log could not be read (`object_missing`,
   * `object_corrupt`; `path` the first such object) or whose `events`
   * entry is a file or a link (`event_invalid`: no log); their series are not listed, the other
   * runs' are.
   * @throws `object_corrupt` for a missing or damaged `runs/` folder (nothing can be read); read errors
   */
  listSeries(repoId: string): Promise<{ series: ScheduleSummary[]; unreadableRuns: UnreadableRun[] }>;
  /**
   * Every armed cron series of a deployment, by run then timer ({@link listSeries}' `series`).
   * @throws the first unreadable run's error (`object_missing`, `object_corrupt`, `event_invalid`) when a run
   *   could not be read: a list without it would hide it; use {@link listSeries} to list the others
   */
  list(repoId: string): Promise<ScheduleSummary[]>;
  /**
   * One series: its summary, the next `next` slots (default 5) and its history (fires with
   * lateness, skips with reasons, pauses, end).
   * @throws `schedule_not_found`; `event_invalid` for a run that holds no log (its `events` entry
   *   a file or a link), as `runs show` names it
   */
  describe(repoId: string, runId: string, timerId: string, opts?: { next?: number }): Promise<ScheduleDescription>;
  /**
   * Reconciles the deployment's sync-owned series with `desired` (see
   * src/workflow/schedule/sync-plan.ts). Commits nothing when nothing changed, or with `dryRun`.
   * Each run's changes are one append, all in one commit or none; the appends of several runs
   * share commits (the group commit of `appendRunEvents`: those queued while a commit is in
   * flight go in the next, up to 1 000 a commit), so `commits` lists the distinct commits, fewer
   * than the runs. An interrupted sync leaves some runs synced; syncing the same set again
   * converges. `onRunWritten(done, total)` is called after each run's append settled written.
   * Conflicts (and declared series with no slot in their bounds) are left out and listed in
   * `plan.conflicts`.
   *
   * When the append to some runs fails (an I/O error, a run archived since the read), the call
   * waits for every other run's append to settle, then throws the first failure's code with
   * `data.writtenRuns`, `data.commits` and `data.failedRuns` (`[{runId, code}]`): nothing of
   * the sync is still written after it throws.
   *
   * A run that could not be read whole (its folder, `events/` folder or an event missing or
   * damaged: `object_missing`, `object_corrupt`; or no log, its `events` entry a file or a link:
   * `event_invalid`) is listed in `unreadableRuns` (with the first
   * object that could not be read) and nothing is written to it: its series are neither
   * compared, updated nor cancelled, and a series declared in it is a conflict ("could not be
   * read"). The same holds when the run's log read under the lock is not whole. A series
   * declared in a run that has ended is a conflict too ("its run has ended (<terminal>)"),
   * planned before any write, so the dry run shows it and the other runs are applied.
   * @throws `config_invalid` (also more than 10 000 series), `id_invalid`, `cron_invalid`,
   *   `time_invalid` for the declared set (before any write); `object_corrupt` for a missing or
   *   damaged `runs/` folder; write errors (`io_failed`, …) as described above
   */
  syncSchedules(
    repoId: string,
    desired: unknown,
    opts?: { dryRun?: boolean; onRunWritten?: (done: number, total: number) => void },
  ): Promise<{ plan: SyncPlan; commits: readonly string[]; unreadableRuns: readonly UnreadableRun[] }>;
}

/** The schedule verbs over one store (see the module comment). */
export function createScheduleControls(opts: ScheduleControlsOptions): ScheduleControls {
  const ref = opts.ref ?? DEFAULT_REF;
  const nowMs = (): number => opts.clock().getTime();
  const pause = opts.pause ?? createTimeSlicer().pause;
  const logOptions = { ...(opts.maxEventBytes === undefined ? {} : { maxEventBytes: opts.maxEventBytes }), pause };

  /**
   * Appends what `decide` planned, each event stamped with the clock's reading under the lock.
   * `decide` sees only a log read whole: a run with an event, `blobs/` or sealed log lost or
   * damaged is refused before it (`requireWhole`), as is one whose folders cannot be read.
   * Sync passes `refuse: false`: its `decide` writes nothing to such a run instead, so one run
   * lost between its read and the lock does not fail the others.
   */
  function append<R>(repoId: string, runId: string, message: string, decide: (log: RunLog, at: string) => { events: readonly SeriesEvent[]; result: R }, refuse = true) {
    const runLog = openRunLog({ store: opts.store, principal: opts.principal, repoId, ref, requireWhole: refuse, ...(opts.maxEventBytes === undefined ? {} : { maxEventBytes: opts.maxEventBytes }) });
    return runLog.append(runId, message, (log) => {
      const at = opts.clock().toISOString();
      const { events, result } = decide(log, at);
      return { append: events.map((event) => ({ ...event, at })), result };
    });
  }

  /**
   * Refuses a run that holds no log (its `events` entry a file or a link: `event_invalid`, as
   * `runs show` and `GET …/runs/:run` name it) before a verb decides "not found" from its empty
   * log; a run not there passes (the verb says `schedule_not_found`).
   * @throws event_invalid (noRunLogError); `object_missing`, `object_corrupt` for a run folder
   *   that cannot be read (unreadableRunError, "nothing was written")
   */
  async function requireLogOf(repoId: string, runId: string): Promise<void> {
    const reads = await opts.store.openCommittedReads(opts.principal, { kind: WORKFLOW_RUN_KIND, id: repoId }, ref);
    try {
      if ((await reads.treeOid(`runs/${runId}`)) === null) return;
      requireRunFolderLog(repoId, runId, await openRunFolder(reads, runId));
    } catch (error) {
      throw asUnreadableRunError(repoId, runId, error, "nothing was written");
    }
  }

  function ids(repoId: string, runId: string, timerId: string): void {
    parseRepoId(repoId);
    parseRunId(runId);
    parseTimerId(timerId);
  }

  /**
   * Every run's log at the tip read whole, and the runs whose folders could not be read, whose
   * log was not read whole (an event lost or damaged: it could be a series' fire, pause or end)
   * or that hold no log (their `events` entry a file or a link: `event_invalid`; see readEachRun,
   * requireWholeRunLog).
   */
  async function readLogs(repoId: string): Promise<{ logs: RunLog[]; unreadable: UnreadableRun[] }> {
    const reads = await opts.store.openCommittedReads(opts.principal, { kind: WORKFLOW_RUN_KIND, id: repoId }, ref);
    const read = await readEachRun(reads, async (runId) => requireWholeRunLog(repoId, await readRunLog(reads, runId, logOptions)), pause);
    return { logs: read.runs.map((r) => r.value), unreadable: [...read.unreadable] };
  }

  async function listSeries(repoId: string): Promise<{ series: ScheduleSummary[]; unreadableRuns: UnreadableRun[] }> {
    parseRepoId(repoId);
    const out: ScheduleSummary[] = [];
    const { logs, unreadable } = await readLogs(repoId);
    for (const log of logs) {
      if (log.state.terminal !== null) continue;
      const marks = seriesMarks(log.events);
      for (const pending of log.state.pendingTimers.values()) if (pending.cron !== undefined) out.push(summaryOf(log.runId, pending, marks.get(pending.timerId)));
    }
    const series = out.sort((a, b) => (a.runId < b.runId ? -1 : a.runId > b.runId ? 1 : a.timerId < b.timerId ? -1 : a.timerId > b.timerId ? 1 : 0));
    return { series, unreadableRuns: unreadable };
  }

  async function readOne(repoId: string, runId: string): Promise<RunLog> {
    const reads = await opts.store.openCommittedReads(opts.principal, { kind: WORKFLOW_RUN_KIND, id: repoId }, ref);
    return readRunLog(reads, runId, logOptions);
  }

  return {
    async pause(repoId, runId, timerId, o = {}) {
      ids(repoId, runId, timerId);
      checkReason(o.reason);
      await requireLogOf(repoId, runId);
      const written = await append(repoId, runId, `Pause schedule ${timerId} of ${runId}`, (log) => {
        const plan = planPause(log.state, timerId, o.reason);
        return { events: plan.events, result: plan.outcome };
      });
      return { outcome: written.result ?? "already_paused", commitSha: written.committed ? written.commitSha : null };
    },

    async resume(repoId, runId, timerId, o = {}) {
      ids(repoId, runId, timerId);
      await requireLogOf(repoId, runId);
      const written = await append(repoId, runId, `Resume schedule ${timerId} of ${runId}`, (log) => {
        const plan = planResume(log.state, timerId, nowMs(), o.catchUp === true);
        return { events: plan.events, result: { outcome: plan.outcome, skipped: plan.skipped } };
      });
      const r = written.result ?? { outcome: "not_paused" as const, skipped: 0 };
      return { ...r, commitSha: written.committed ? written.commitSha : null };
    },

    async trigger(repoId, runId, timerId, requestId) {
      ids(repoId, runId, timerId);
      parseSignalId(requestId, "requestId");
      await requireLogOf(repoId, runId);
      const written = await append(repoId, runId, `Trigger schedule ${timerId} of ${runId} (request ${requestId})`, (log, at) => {
        const plan = planTrigger(log.state, log.events, timerId, requestId, Date.parse(at));
        return { events: plan.events, result: { outcome: plan.outcome, firedAt: plan.outcome === "triggered" ? at : plan.firedAt } };
      });
      const r = written.result ?? { outcome: "duplicate" as const, firedAt: null };
      return { ...r, commitSha: written.committed ? written.commitSha : null };
    },

    async backfill(repoId, runId, timerId, range) {
      ids(repoId, runId, timerId);
      const fromIso = parseInstant(range.from, "from");
      const toIso = parseInstant(range.to, "to");
      backfillLimit(range.maxTicks);
      await requireLogOf(repoId, runId);
      const written = await append(repoId, runId, `Backfill schedule ${timerId} of ${runId} from ${fromIso} to ${toIso}`, (log, at) => {
        const plan = planBackfill(log.state, log.events, timerId, { fromIso, toIso, ...(range.maxTicks === undefined ? {} : { maxTicks: range.maxTicks }) }, Date.parse(at));
        return { events: plan.events, result: { fired: plan.slots, alreadyFired: plan.alreadyFired, emptyBecause: plan.emptyBecause } };
      });
      const r = written.result ?? { fired: [], alreadyFired: [], emptyBecause: null };
      return { ...r, commitSha: written.committed ? written.commitSha : null };
    },

    listSeries,

    async list(repoId) {
      const { series, unreadableRuns } = await listSeries(repoId);
      const first = unreadableRuns[0];
      if (first !== undefined) throw first.error;
      return series;
    },

    async describe(repoId, runId, timerId, o = {}) {
      ids(repoId, runId, timerId);
      // A run whose events entry is a file or a link holds no log: event_invalid, not "not found".
      const log = requireRunLog(repoId, await readOne(repoId, runId));
      const pending = armedSeries(log.state, timerId);
      return { ...summaryOf(runId, pending, seriesMarks(log.events).get(timerId)), next: previewSeries(runId, pending, o.next ?? 5), history: seriesHistory(log.events, timerId) };
    },

    async syncSchedules(repoId, desired, o = {}) {
      parseRepoId(repoId);
      const declared = parseDeclaredSchedules(desired);
      // A run read in part (an event lost or damaged) is as unreadable here as one not read at
      // all (readLogs names it): what is missing could be the series' last TimerSet or its
      // cancellation.
      const { logs, unreadable } = await readLogs(repoId);
      const unreadableRuns: UnreadableRun[] = [...unreadable].sort((a, b) => (a.runId < b.runId ? -1 : a.runId > b.runId ? 1 : 0));
      const blocked = new Map(unreadableRuns.map((u) => [u.runId, unreadableReason(u)]));
      // A run that has ended takes nothing more: a series declared in it is a conflict of the
      // plan (the dry run shows it), never an append that fails after other runs were written.
      for (const log of logs) if (log.state.terminal !== null) blocked.set(log.runId, endedReason(log.state.terminal));
      const { current, ended } = await seriesOf(logs, pause);
      const planned = planSync(current, ended, declared.filter((d) => !blocked.has(d.runId)));
      const refused = declared.flatMap((d) => {
        const reason = blocked.get(d.runId);
        return reason === undefined ? [] : [{ runId: d.runId, timerId: d.timerId, reason }];
      });
      const plan = await withoutSlotless(refused.length === 0 ? planned : { ...planned, conflicts: [...planned.conflicts, ...refused] }, nowMs(), pause);
      if (o.dryRun === true || isEmptyPlan(plan)) return { plan, commits: [], unreadableRuns };
      const runs = new Set<string>([...plan.create.map((d) => d.runId), ...plan.update.map((u) => u.declared.runId), ...plan.cancel.map((c) => c.runId)]);
      let done = 0;
      // Every run's append is awaited, failed or not, before the call answers: a failure is
      // reported once nothing of this sync is still being written, naming what was.
      const settled = await Promise.allSettled(
        [...runs].map(async (runId) => {
          const written = await append(repoId, runId, `Sync schedules of ${runId}`, (log, at) => {
            // Nothing is written to a run whose log under the lock is not whole, or that has ended
            // since the read above (an append to it would fail this run after others were written).
            if (unreadablePartOf(runId, log.bad, log.problems) !== null || log.state.terminal !== null) return { events: [], result: null };
            // Re-planned from the run's log under the lock: what changed since the read above wins.
            const fresh = seriesOfRun(log);
            const mine = declared.filter((d: DeclaredSchedule) => d.runId === runId);
            const runPlan = planSync(fresh.current, fresh.ended, mine);
            const events = syncEventsForRun({ ...runPlan, cancel: runPlan.cancel }, runId, Date.parse(at)).events;
            return { events, result: null };
          }, false);
          done += 1;
          o.onRunWritten?.(done, runs.size);
          return { runId, written };
        }),
      );
      const results = settled.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []));
      const commits = [...new Set(results.filter((r) => r.written.committed).map((r) => r.written.commitSha as string))];
      const failures = [...runs].flatMap((runId, i) => {
        const r = settled[i];
        return r?.status === "rejected" ? [{ runId, error: r.reason as unknown }] : [];
      });
      const first = failures[0];
      if (first !== undefined) {
        const writtenRuns = results.filter((r) => r.written.committed).map((r) => r.runId);
        throw syncFailedError(repoId, first.error, failures, writtenRuns, commits, runs.size);
      }
      return { plan, commits, unreadableRuns };
    },
  };
}

/**
 * A sync whose append to some runs failed (an I/O error, the run archived between the read and
 * the lock, …) after the others were written: the first failure's code (so `io_failed` stays
 * `io_failed`), its message naming how far the sync got, and in `data` the runs written
 * (`writtenRuns`), the commits that hold them (`commits`) and the runs that failed
 * (`failedRuns: [{runId, code}]`) beside the first failure's own data; the original error is
 * the `cause`. Each run's changes are in
 * one commit or in none, so syncing the same set again converges.
 */
function syncFailedError(repoId: string, cause: unknown, failures: readonly { runId: string; error: unknown }[], writtenRuns: readonly string[], commits: readonly string[], total: number): unknown {
  // A failure that is no WorkflowHostError is a fault of the code, not of a run: thrown as it is.
  if (!(cause instanceof WorkflowHostError)) return cause;
  const first = failures[0] as { runId: string; error: unknown };
  const failedRuns = failures.map((f) => ({ runId: f.runId, code: f.error instanceof WorkflowHostError ? f.error.code : f.error instanceof Error ? f.error.name : "Error" }));
  return new WorkflowHostError(
    cause.code,
    `sync of deployment ${repoId} wrote ${writtenRuns.length} of ${total} runs; ${failures.length} failed, nothing written to them (first: run ${first.runId}: ${cause.message}); syncing the same set again converges`,
    // The first failure's own data first (a lost object's runId and path keep it the run's
    // problem: 409 over HTTP, as when it failed alone), then how far the sync got.
    { ...cause.data, repoId, writtenRuns, commits, failedRuns },
    { cause },
  );
}

/** Why a series declared in a run that could not be read is left alone. */
function unreadableReason(run: UnreadableRun): string {
  return `its run could not be read (${run.error.code}) at ${run.path}; nothing written until it is restored`;
}

/** Why a series declared in a run that has ended is left alone. */
function endedReason(terminal: string): string {
  return `its run has ended (${terminal}); nothing written`;
}

/**
 * Moves declared series that have no slot within their bounds after now to the conflicts:
 * nothing is written for them. Each run's part of the plan is taken once (not the whole plan per
 * run), and `pause` is awaited before each run's slots are computed (a cron step each).
 */
async function withoutSlotless(plan: SyncPlan, atMs: number, pause: () => Promise<void>): Promise<SyncPlan> {
  const none = new Set<DeclaredSchedule>();
  for (const [runId, part] of planByRun(plan)) {
    await pause();
    for (const d of syncEventsForRun(part, runId, atMs).noSlot) none.add(d);
  }
  if (none.size === 0) return plan;
  const reason = "no slot within its bounds after now; nothing written";
  return {
    ...plan,
    create: plan.create.filter((d) => !none.has(d)),
    update: plan.update.filter((u) => !none.has(u.declared)),
    conflicts: [...plan.conflicts, ...[...none].map((d) => ({ runId: d.runId, timerId: d.timerId, reason }))],
  };
}

/** The create and update parts of `plan`, by run (cancels are left out: they need no slot). */
function planByRun(plan: SyncPlan): Map<string, SyncPlan> {
  const parts = new Map<string, { create: DeclaredSchedule[]; update: SyncPlan["update"][number][] }>();
  const part = (runId: string): { create: DeclaredSchedule[]; update: SyncPlan["update"][number][] } => {
    let p = parts.get(runId);
    if (p === undefined) parts.set(runId, (p = { create: [], update: [] }));
    return p;
  };
  for (const d of plan.create) part(d.runId).create.push(d);
  for (const u of plan.update) part(u.declared.runId).update.push(u);
  return new Map([...parts].map(([runId, p]) => [runId, { ...p, cancel: [], unchanged: [], conflicts: [] }]));
}

/** The armed and ended cron series of these logs, `pause` awaited before each run. */
async function seriesOf(logs: readonly RunLog[], pause: () => Promise<void>): Promise<{ current: CurrentSeries[]; ended: EndedSeries[] }> {
  const current: CurrentSeries[] = [];
  const ended: EndedSeries[] = [];
  for (const log of logs) {
    await pause();
    const one = seriesOfRun(log);
    current.push(...one.current);
    ended.push(...one.ended);
  }
  return { current, ended };
}

/** The armed and ended cron series of one run's log (none for an ended run). */
function seriesOfRun(log: RunLog): { current: CurrentSeries[]; ended: EndedSeries[] } {
  if (log.state.terminal !== null) return { current: [], ended: [] };
  const current: CurrentSeries[] = [];
  for (const pending of log.state.pendingTimers.values()) if (pending.cron !== undefined) current.push({ runId: log.runId, pending });
  return { current, ended: endedSeriesOf(log.runId, log.events) };
}

function summaryOf(runId: string, p: PendingTimer, marks: SeriesMarks | undefined): ScheduleSummary {
  return {
    runId,
    timerId: p.timerId,
    cron: p.cron ?? "",
    timezone: p.timezone ?? "UTC",
    nextAt: p.fireAt,
    paused: p.pausedAt !== undefined,
    pausedAt: p.pausedAt === undefined || p.pausedAt === "" ? null : p.pausedAt,
    owner: p.owner ?? null,
    misfire: p.misfire ?? null,
    startAt: p.startAt ?? null,
    endAt: p.endAt ?? null,
    maxTicks: p.maxTicks ?? null,
    slot: p.slot ?? 1,
    jitterMs: p.jitterMs ?? null,
    pauseReason: p.pausedAt === undefined ? null : (marks?.pauseReason ?? null),
    lastFire: marks?.lastFire ?? null,
  };
}
