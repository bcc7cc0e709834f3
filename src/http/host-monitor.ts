/**
 * `createHostMonitor`: what the HTTP face knows about a running host beyond its logs. It is fed
 * by the host's `onEvent` reports (pass `onEvent: monitor.onEvent` to `createWorkflowHost`) and
 * by the HTTP routes, and keeps:
 * - the Prometheus metrics (a prom-client registry of its own, never the global one); labels
 *   are bounded: `deployment` at most, never run or timer ids;
 * - the most recent fires (a ring of `recentFires` entries) for the dashboard;
 * - which deployments have been recovered (for `/readyz`);
 * - a fan-out of live events to subscribers (the dashboard's server-sent events).
 */
import { Counter, Gauge, Histogram, Registry } from "prom-client";
import type { SchedulerEvent } from "../../seams/scheduler/scheduler-types.js";
import { systemClock, type Clock } from "../time/clock.js";

/** One timer fire as the dashboard shows it. */
export interface FireRecord {
  readonly repoId: string;
  readonly runId: string;
  readonly timerId: string;
  readonly scheduledFor: string;
  readonly firedAt: string;
  /** firedAt − scheduledFor (ms, ≥ 0 unless the log says otherwise). */
  readonly latenessMs: number;
  readonly commitSha: string;
}

/** What live subscribers receive: the scheduler's reports in JSON form, and signal deliveries. */
export type LiveEvent =
  | { readonly type: "fired"; readonly repoId: string; readonly fire: FireRecord }
  | { readonly type: "armed"; readonly repoId: string; readonly runId: string; readonly timerId: string; readonly fireAt: string }
  | { readonly type: "skipped"; readonly repoId: string; readonly runId: string; readonly timerId: string; readonly count: number; readonly firstMissed: string; readonly lastMissed: string; readonly reason: string }
  | { readonly type: "cancelled"; readonly repoId: string; readonly runId: string; readonly timerId: string }
  /** A cron series paused or resumed, whoever wrote it (the HTTP face, the CLI, a push), once the host applied it. */
  | { readonly type: "paused"; readonly repoId: string; readonly runId: string; readonly timerId: string; readonly reason?: string }
  | { readonly type: "resumed"; readonly repoId: string; readonly runId: string; readonly timerId: string }
  | { readonly type: "signal"; readonly repoId: string; readonly runId: string; readonly signalName: string; readonly signalId: string; readonly seq: number; readonly duplicate: boolean }
  | { readonly type: "bad_event"; readonly repoId: string; readonly path: string; readonly seq: number | null; readonly code: string }
  | { readonly type: "recovered"; readonly repoId: string }
  /**
   * A schedule changed through the HTTP face (a pause, resume, trigger or backfill that wrote
   * something; a sync that committed: no `runId`, `timerId`). Changes made by the CLI on the same
   * data dir are not reported here (a pause or resume of theirs is, as `paused` or `resumed`).
   */
  | { readonly type: "schedule"; readonly repoId: string; readonly runId?: string; readonly timerId?: string; readonly action: ScheduleAction; readonly outcome: string };

/** What a {@link LiveEvent} of type `schedule` reports. */
export type ScheduleAction = "pause" | "resume" | "trigger" | "backfill" | "sync";

export interface HostMonitorOptions {
  /** Clock for commit durations of fires (ms between the fire's stamp and its report). Default the system clock. */
  readonly clock?: Clock;
  /** How many fires `recentFires()` keeps (default 500, 1 … 100 000). */
  readonly recentFires?: number;
  /** Prefix of every metric name (default "workflow_host_"). */
  readonly prefix?: string;
}

export interface HostMonitor {
  /** Feed for `createWorkflowHost({onEvent})`; synchronous, never throws. */
  readonly onEvent: (event: SchedulerEvent) => void;
  /** The metrics; `registry.metrics()` is the Prometheus text exposition. */
  readonly registry: Registry;
  /** Newest last; at most `recentFires` entries. */
  recentFires(): readonly FireRecord[];
  /** Deployments whose recovery has completed since the host started. */
  recovered(): ReadonlySet<string>;
  /** Deployments whose last recovery or tail failed (`repo_failed`) and that have not recovered since: retried with backoff. */
  failing(): ReadonlySet<string>;
  /** Calls `listener` for every live event until the returned function is called. */
  subscribe(listener: (event: LiveEvent) => void): () => void;
  /** Records a signal delivery made through the HTTP face (counted, and sent to subscribers). */
  recordDelivery(delivery: { repoId: string; runId: string; signalName: string; signalId: string; seq: number; duplicate: boolean }): void;
  /** Sends a schedule change made through the HTTP face to subscribers (a `schedule` live event). */
  recordScheduleChange(change: { repoId: string; runId?: string; timerId?: string; action: ScheduleAction; outcome: string }): void;
  /** Records how long a write made through the HTTP face took (seconds), and whether it failed. */
  recordApiCommit(seconds: number, failed: boolean, repoId: string): void;
  /** Records one answered HTTP request; `route` is the route pattern, never the concrete URL. */
  recordRequest(route: string, method: string, status: number): void;
  /** Sets how pending timers are counted per deployment when `/metrics` is read. */
  setPendingSource(source: () => Iterable<{ repoId: string }>): void;
  /** Sets where the heavy reads running and waiting (heavy-read-gate.ts) are read when `/metrics` is read. */
  setHeavyReadSource(source: () => { readonly running: number; readonly waiting: number }): void;
}

const LATENESS_BUCKETS_S = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 3600];
const COMMIT_BUCKETS_S = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** Creates a monitor; see the module comment. */
export function createHostMonitor(opts: HostMonitorOptions = {}): HostMonitor {
  const clock = opts.clock ?? systemClock;
  const keep = Math.min(Math.max(Math.trunc(opts.recentFires ?? 500), 1), 100_000);
  const p = opts.prefix ?? "workflow_host_";
  const registry = new Registry();
  const registers = [registry];

  const fires = new Counter({ name: `${p}timer_fires_total`, help: "TimerFired events committed by the scheduler.", labelNames: ["deployment"], registers });
  const skipped = new Counter({ name: `${p}skipped_ticks_total`, help: "Cron ticks not fired, by reason (count of ticks, not of TimerSkipped events).", labelNames: ["deployment", "reason"], registers });
  const cancellations = new Counter({ name: `${p}timer_cancellations_total`, help: "Timers cancelled durably (TimerCancelled committed through the scheduler).", labelNames: ["deployment"], registers });
  const lateness = new Histogram({ name: `${p}fire_lateness_seconds`, help: "firedAt - scheduledFor of every fire, in seconds.", buckets: LATENESS_BUCKETS_S, registers });
  let pendingSource: () => Iterable<{ repoId: string }> = () => [];
  new Gauge({
    name: `${p}pending_timers`,
    help: "Timers armed in the scheduler's queue, per deployment.",
    labelNames: ["deployment"],
    registers,
    collect() {
      this.reset();
      const counts = new Map<string, number>();
      for (const t of pendingSource()) counts.set(t.repoId, (counts.get(t.repoId) ?? 0) + 1);
      for (const [deployment, n] of counts) this.set({ deployment }, n);
    },
  });
  let heavyReadSource: () => { readonly running: number; readonly waiting: number } = () => ({ running: 0, waiting: 0 });
  new Gauge({
    name: `${p}http_heavy_reads`,
    help: "Heavy HTTP reads (listings across runs, sync plans): state=running, and state=waiting for a turn (a full queue answers 503 busy).",
    labelNames: ["state"],
    registers,
    collect() {
      const load = heavyReadSource();
      this.set({ state: "running" }, load.running);
      this.set({ state: "waiting" }, load.waiting);
    },
  });
  const commitDuration = new Histogram({ name: `${p}commit_duration_seconds`, help: "Commit durations: source=fire from the fire's stamp to its report, source=api for writes made over HTTP.", labelNames: ["source"], buckets: COMMIT_BUCKETS_S, registers });
  const commitFailures = new Counter({ name: `${p}commit_failures_total`, help: "Failed commits (fire commits retried with backoff, and failed HTTP writes).", labelNames: ["deployment"], registers });
  const badEvents = new Counter({ name: `${p}bad_events_total`, help: "Unreadable or invalid events reported and skipped.", labelNames: ["deployment"], registers });
  const deliveries = new Counter({ name: `${p}signal_deliveries_total`, help: "Signals delivered over HTTP (API and wake-ups), by outcome: delivered or duplicate.", labelNames: ["deployment", "outcome"], registers });
  const requests = new Counter({ name: `${p}http_requests_total`, help: "HTTP requests answered, by route pattern, method and status.", labelNames: ["route", "method", "status"], registers });

  const ring: FireRecord[] = [];
  const recoveredRepos = new Set<string>();
  const failingRepos = new Set<string>();
  const listeners = new Set<(event: LiveEvent) => void>();
  /** Fire commits already timed: one commit holds many fires. */
  const timedCommits = new Set<string>();

  const publish = (event: LiveEvent): void => {
    for (const listener of listeners) {
      try {
        listener(event);
      } catch {
        // A subscriber's failure is its own.
      }
    }
  };

  const onEvent = (event: SchedulerEvent): void => {
    try {
      handle(event);
    } catch {
      // Never let bookkeeping disturb the scheduler.
    }
  };

  function handle(event: SchedulerEvent): void {
    switch (event.type) {
      case "fired": {
        const scheduledMs = Date.parse(event.scheduledFor);
        const firedMs = Date.parse(event.firedAt);
        const latenessMs = firedMs - scheduledMs;
        fires.inc({ deployment: event.repoId });
        lateness.observe(Math.max(latenessMs, 0) / 1000);
        if (!timedCommits.has(event.commitSha)) {
          timedCommits.add(event.commitSha);
          if (timedCommits.size > 1_000) timedCommits.delete(timedCommits.values().next().value as string);
          commitDuration.observe({ source: "fire" }, Math.max(clock().getTime() - firedMs, 0) / 1000);
        }
        const fire: FireRecord = { repoId: event.repoId, runId: event.runId, timerId: event.timerId, scheduledFor: event.scheduledFor, firedAt: event.firedAt, latenessMs, commitSha: event.commitSha };
        ring.push(fire);
        if (ring.length > keep) ring.shift();
        publish({ type: "fired", repoId: event.repoId, fire });
        break;
      }
      case "skipped": {
        const reason = (event as { reason?: unknown }).reason;
        const why = typeof reason === "string" && /^[a-z_]{1,32}$/.test(reason) ? reason : "missed";
        skipped.inc({ deployment: event.repoId, reason: why }, event.count);
        publish({ type: "skipped", repoId: event.repoId, runId: event.runId, timerId: event.timerId, count: event.count, firstMissed: event.firstMissed, lastMissed: event.lastMissed, reason: why });
        break;
      }
      case "cancelled":
        cancellations.inc({ deployment: event.repoId });
        publish({ type: "cancelled", repoId: event.repoId, runId: event.runId, timerId: event.timerId });
        break;
      case "armed":
        publish({ type: "armed", repoId: event.repoId, runId: event.runId, timerId: event.timerId, fireAt: event.fireAt });
        break;
      case "paused":
        publish({ type: "paused", repoId: event.repoId, runId: event.runId, timerId: event.timerId, ...(event.reason === undefined ? {} : { reason: event.reason }) });
        break;
      case "resumed":
        publish({ type: "resumed", repoId: event.repoId, runId: event.runId, timerId: event.timerId });
        break;
      case "bad_event":
        badEvents.inc({ deployment: event.repoId });
        publish({ type: "bad_event", repoId: event.repoId, path: event.path, seq: event.seq, code: event.error.code });
        break;
      case "commit_failed":
        commitFailures.inc({ deployment: event.repoId });
        break;
      case "recovered":
        recoveredRepos.add(event.repoId);
        failingRepos.delete(event.repoId);
        publish({ type: "recovered", repoId: event.repoId });
        break;
      case "repo_failed":
        recoveredRepos.delete(event.repoId);
        failingRepos.add(event.repoId);
        break;
      default:
        break;
    }
  }

  return {
    onEvent,
    registry,
    recentFires: () => [...ring],
    recovered: () => recoveredRepos,
    failing: () => failingRepos,
    subscribe(listener) {
      listeners.add(listener);
      return () => {
        listeners.delete(listener);
      };
    },
    recordDelivery(d) {
      deliveries.inc({ deployment: d.repoId, outcome: d.duplicate ? "duplicate" : "delivered" });
      publish({ type: "signal", ...d });
    },
    recordScheduleChange(c) {
      publish({ type: "schedule", ...c });
    },
    recordApiCommit(seconds, failed, repoId) {
      commitDuration.observe({ source: "api" }, seconds);
      if (failed) commitFailures.inc({ deployment: repoId });
    },
    recordRequest(route, method, status) {
      requests.inc({ route, method, status: String(status) });
    },
    setPendingSource(source) {
      pendingSource = source;
    },
    setHeavyReadSource(source) {
      heavyReadSource = source;
    },
  };
}
