/**
 * Planning `syncSchedules`: reconcile a declared set of cron series with what the logs of one
 * deployment arm. Pure.
 *
 * Ownership: every series sync creates or updates carries `owner: "sync"` in its TimerSet. Sync
 * only ever touches series it owns: a declared series whose (runId, timerId) is armed without
 * that mark is a conflict, reported and left alone; an armed series without the mark is never
 * cancelled. Per declared series:
 * - not armed → create (TimerSet of its first slot after now, within its bounds);
 * - armed and owned, any of cron, timezone, misfire, startAt, endAt, maxTicks, jitterMs, stepId
 *   different → update (a TimerSet with the new fields: of the armed slot when cron, zone and
 *   startAt are unchanged, else of the first slot after now; a pause and the slot count are kept);
 * - armed and owned and equal, or ended by its own bounds with the same fields → unchanged.
 * Every armed owned series not declared → cancel (TimerCancelled, reason "sync: not declared").
 * A plan with no create, update or cancel commits nothing.
 */
import { type } from "arktype";
import { WorkflowHostError } from "../../errors.js";
import { compileCron, firstTickAfter, validateCron } from "../cron.js";
import { parseRunId, parseStepId, parseTimerId } from "../ids.js";
import { isoFromMs, parseInstant } from "../time.js";
import type { MisfirePolicy, PendingTimer, RunEvent, TimerSetData } from "../types.js";
import { newTimerCancelled, newTimerSet } from "../event-constructors.js";
import { seriesSetData, type SeriesEvent } from "./series-slots.js";

/** The owner mark of series that `syncSchedules` manages. */
export const SYNC_OWNER = "sync";

/** One series as declared in code (or in the CLI's `--file`). */
export interface DeclaredSchedule {
  readonly runId: string;
  readonly timerId: string;
  readonly cron: string;
  /** IANA zone, default "UTC". */
  readonly timezone?: string;
  readonly misfire?: MisfirePolicy;
  readonly startAt?: string;
  readonly endAt?: string;
  readonly maxTicks?: number;
  readonly jitterMs?: number;
  readonly stepId?: string;
}

/** An armed series of the deployment, as its run's state holds it. */
export interface CurrentSeries {
  readonly runId: string;
  readonly pending: PendingTimer;
}

/** A series that ended by its own bound, with the TimerSet data it last had. */
export interface EndedSeries {
  readonly runId: string;
  readonly data: TimerSetData;
}

export interface SyncPlan {
  readonly create: readonly DeclaredSchedule[];
  readonly update: readonly { readonly declared: DeclaredSchedule; readonly current: PendingTimer; readonly changed: readonly string[] }[];
  readonly cancel: readonly { readonly runId: string; readonly timerId: string }[];
  readonly unchanged: readonly { readonly runId: string; readonly timerId: string }[];
  /** Declared series armed without the sync mark (left alone), or without a slot in their bounds. */
  readonly conflicts: readonly { readonly runId: string; readonly timerId: string; readonly reason: string }[];
}

const declaredSchema = type({
  runId: "string",
  timerId: "string",
  cron: "string",
  "timezone?": "string",
  "misfire?": "'skip' | 'latest' | 'all'",
  "startAt?": "string",
  "endAt?": "string",
  "maxTicks?": "1 <= number.integer <= 1000000",
  "jitterMs?": "0 <= number.integer <= 86400000",
  "stepId?": "string",
  "+": "reject",
}).array();

/** Most series one declared set may hold; a larger set is refused before anything is read or written. */
export const MAX_DECLARED_SCHEDULES = 10_000;

/**
 * Checks a declared set: at most {@link MAX_DECLARED_SCHEDULES} entries; each entry's ids, cron
 * and zone, instants (normalised), numbers; no (runId, timerId) twice.
 * @throws `config_invalid` (more than {@link MAX_DECLARED_SCHEDULES} entries, shape, duplicate;
 *   arktype's summary), `id_invalid`, `cron_invalid`, `time_invalid` for a field
 */
export function parseDeclaredSchedules(value: unknown): DeclaredSchedule[] {
  if (Array.isArray(value) && value.length > MAX_DECLARED_SCHEDULES) {
    throw new WorkflowHostError("config_invalid", `schedules: ${value.length} series declared; allowed: at most ${MAX_DECLARED_SCHEDULES} (split the set across deployments)`, { count: value.length, max: MAX_DECLARED_SCHEDULES });
  }
  const checked = declaredSchema(value);
  if (checked instanceof type.errors) throw new WorkflowHostError("config_invalid", `schedules: ${checked.summary}`, { summary: checked.summary });
  const seen = new Set<string>();
  return checked.map((entry, i) => {
    const runId = parseRunId(entry.runId, `[${i}].runId`);
    const timerId = parseTimerId(entry.timerId, `[${i}].timerId`);
    const key = `${runId}/${timerId}`;
    if (seen.has(key)) throw new WorkflowHostError("config_invalid", `schedules: ${key} is declared twice; allowed: each (runId, timerId) once`, { runId, timerId });
    seen.add(key);
    const { cron, timezone } = validateCron(entry.cron, entry.timezone ?? "UTC");
    const out: Record<string, unknown> = { runId, timerId, cron, timezone };
    if (entry.misfire !== undefined) out["misfire"] = entry.misfire;
    if (entry.startAt !== undefined) out["startAt"] = parseInstant(entry.startAt, `[${i}].startAt`);
    if (entry.endAt !== undefined) out["endAt"] = parseInstant(entry.endAt, `[${i}].endAt`);
    if (entry.maxTicks !== undefined) out["maxTicks"] = entry.maxTicks;
    if (entry.jitterMs !== undefined) out["jitterMs"] = entry.jitterMs;
    if (entry.stepId !== undefined) out["stepId"] = parseStepId(entry.stepId, `[${i}].stepId`);
    return out as unknown as DeclaredSchedule;
  });
}

const COMPARED = ["cron", "timezone", "misfire", "startAt", "endAt", "maxTicks", "jitterMs", "stepId"] as const;

/** The fields in which an armed (or ended) series differs from its declaration. */
export function changedFields(declared: DeclaredSchedule, current: Pick<PendingTimer, (typeof COMPARED)[number]>): string[] {
  const norm = (name: (typeof COMPARED)[number], v: unknown): unknown => (name === "timezone" ? (v ?? "UTC") : v);
  return COMPARED.filter((name) => norm(name, declared[name]) !== norm(name, current[name]));
}

/** The series of a run's log that ended by a bound (`ScheduleEnded` after their last TimerSet). */
export function endedSeriesOf(runId: string, events: Iterable<RunEvent>): EndedSeries[] {
  const last = new Map<string, { data: TimerSetData; ended: boolean }>();
  for (const event of events) {
    const data = (event as { data?: { timerId?: unknown } }).data;
    if (typeof data?.timerId !== "string") continue;
    if (event.type === "TimerSet") last.set(data.timerId, { data: data as TimerSetData, ended: false });
    else if (event.type === "ScheduleEnded" || event.type === "TimerCancelled") {
      const entry = last.get(data.timerId);
      if (entry !== undefined) entry.ended = event.type === "ScheduleEnded";
    }
  }
  return [...last.values()].filter((e) => e.ended).map((e) => ({ runId, data: e.data }));
}

/**
 * The plan (see the module comment).
 * @param current - every armed cron series of the deployment
 * @param ended - series that ended by their bounds (so a declared, ended series is not re-created)
 * @param desired - a checked declared set ({@link parseDeclaredSchedules})
 */
export function planSync(current: readonly CurrentSeries[], ended: readonly EndedSeries[], desired: readonly DeclaredSchedule[]): SyncPlan {
  const key = (runId: string, timerId: string): string => `${runId}/${timerId}`;
  const armed = new Map(current.filter((c) => c.pending.cron !== undefined).map((c) => [key(c.runId, c.pending.timerId), c]));
  const over = new Map(ended.filter((e) => e.data.owner === SYNC_OWNER).map((e) => [key(e.runId, e.data.timerId), e]));
  const plan = { create: [] as DeclaredSchedule[], update: [] as SyncPlan["update"][number][], cancel: [] as SyncPlan["cancel"][number][], unchanged: [] as SyncPlan["unchanged"][number][], conflicts: [] as SyncPlan["conflicts"][number][] };
  const declared = new Set<string>();
  for (const d of desired) {
    const k = key(d.runId, d.timerId);
    declared.add(k);
    const found = armed.get(k);
    if (found === undefined) {
      const gone = over.get(k);
      if (gone !== undefined && changedFields(d, gone.data as unknown as PendingTimer).length === 0) plan.unchanged.push({ runId: d.runId, timerId: d.timerId });
      else plan.create.push(d);
    } else if (found.pending.owner !== SYNC_OWNER) {
      plan.conflicts.push({ runId: d.runId, timerId: d.timerId, reason: "armed without the sync mark; left alone" });
    } else {
      const changed = changedFields(d, found.pending);
      if (changed.length === 0) plan.unchanged.push({ runId: d.runId, timerId: d.timerId });
      else plan.update.push({ declared: d, current: found.pending, changed });
    }
  }
  for (const c of armed.values()) {
    if (c.pending.owner === SYNC_OWNER && !declared.has(key(c.runId, c.pending.timerId))) plan.cancel.push({ runId: c.runId, timerId: c.pending.timerId });
  }
  return plan;
}

/** True when the plan writes nothing. */
export function isEmptyPlan(plan: SyncPlan): boolean {
  return plan.create.length === 0 && plan.update.length === 0 && plan.cancel.length === 0;
}

/**
 * The events of one run for its part of a plan, at `nowMs`.
 * @returns the events and the declared series that have no slot within their bounds (not written)
 */
export function syncEventsForRun(plan: SyncPlan, runId: string, nowMs: number): { events: SeriesEvent[]; noSlot: DeclaredSchedule[] } {
  const events: SeriesEvent[] = [];
  const noSlot: DeclaredSchedule[] = [];
  const arm = (d: DeclaredSchedule, current: PendingTimer | undefined): void => {
    const zone = d.timezone ?? "UTC";
    let afterMs = nowMs;
    if (d.startAt !== undefined) afterMs = Math.max(afterMs, Date.parse(d.startAt) - 1);
    // Same slots (expression, zone, start): the armed slot stays, so an update of misfire,
    // bounds or jitter never drops a slot that is due; otherwise the first slot after now.
    const sameSlots = current !== undefined && current.cron === d.cron && (current.timezone ?? "UTC") === zone && current.startAt === d.startAt;
    const first = sameSlots ? Date.parse(current.fireAt) : firstTickAfter(compileCron(d.cron, zone), afterMs);
    const slot = d.maxTicks === undefined ? undefined : (current?.slot ?? 1);
    if (first === null || (d.endAt !== undefined && first > Date.parse(d.endAt)) || (slot !== undefined && slot > (d.maxTicks as number))) {
      noSlot.push(d);
      return;
    }
    const pending: PendingTimer = {
      timerId: d.timerId,
      fireAt: isoFromMs(first),
      setSeq: 0,
      cron: d.cron,
      timezone: zone,
      owner: SYNC_OWNER,
      ...(d.misfire === undefined ? {} : { misfire: d.misfire }),
      ...(d.startAt === undefined ? {} : { startAt: d.startAt }),
      ...(d.endAt === undefined ? {} : { endAt: d.endAt }),
      ...(d.maxTicks === undefined ? {} : { maxTicks: d.maxTicks }),
      ...(d.jitterMs === undefined ? {} : { jitterMs: d.jitterMs }),
      ...(d.stepId === undefined ? {} : { stepId: d.stepId }),
    };
    events.push(newTimerSet(seriesSetData(pending, pending.fireAt, slot)));
  };
  for (const d of plan.create) if (d.runId === runId) arm(d, undefined);
  for (const u of plan.update) if (u.declared.runId === runId) arm(u.declared, u.current);
  for (const c of plan.cancel) if (c.runId === runId) events.push(newTimerCancelled({ timerId: c.timerId, reason: "sync: not declared" }));
  return { events, noSlot };
}
