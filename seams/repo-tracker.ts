/**
 * One deployment as the scheduler sees it: the state of every run, kept current by recovery
 * (a walk of the logs at tip C) and then a live tail from C, and the fire loop that commits
 * due timers of this repo, one commit per batch.
 *
 * States: recovering → tailing → stopped. A failed recovery or tail is reported and the
 * scheduler retries the whole tracker after a backoff; a ref rewritten by a force push
 * re-reads the runs the rewrite touched.
 */
import { WorkflowHostError } from "../src/errors.js";
import type { CommitChange, CommittedReads, RepoId } from "../src/substrate/types.js";
import { parseEvent, serializeEvent } from "../src/workflow/events.js";
import { eventPath, parseEventPath, runEventsPrefix, runsPrefix } from "../src/workflow/paths.js";
import { readRunLog, type BadEvent } from "../src/workflow/run-log.js";
import { applyEvent } from "../src/workflow/run-state.js";
import { planDueTimer, type FirePlan } from "../src/workflow/timer-ledger.js";
import { isoFromMs } from "../src/workflow/time.js";
import type { RunEvent, RunState } from "../src/workflow/types.js";
import { WORKFLOW_RUN_KIND } from "../src/workflow/workflow-run-kind.js";
import type { QueuedTimer, SchedulerEvent } from "./scheduler-types.js";

/** What a tracker needs from its scheduler. */
export interface TrackerContext {
  readonly store: import("../src/substrate/types.js").RepoStore;
  readonly principal: unknown;
  readonly ref: string;
  readonly nowMs: () => number;
  readonly maxBatch: number;
  readonly maxEventBytes: number;
  readonly planOptions: { misfire: "skip" | "latest" | "all"; maxCatchUp: number; misfireGraceMs: number };
  readonly retryInitialMs: number;
  readonly retryMaxMs: number;
  /** Arms (or re-arms) a timer; `atMs` is when to try, which is later than fireAt on a retry. */
  readonly arm: (timer: QueuedTimer, atMs: number) => void;
  readonly disarm: (repoId: string, runId: string, timerId: string) => void;
  /** Whether `cancelQueued` suppressed this generation. */
  readonly suppressed: (timer: QueuedTimer) => boolean;
  /** Drops a suppression once the run's log is past it and the timer is no longer armed. */
  readonly forgetSuppressed: (repoId: string, runId: string, timerId: string, lastSeq: number) => void;
  readonly report: (event: SchedulerEvent) => void;
  readonly count: (what: "fired" | "skippedTicks" | "commits" | "commitFailures" | "badEvents", n?: number) => void;
}

interface RunRecord {
  state: RunState;
  /** Highest seq among event file names (valid or not); the next append goes after it. */
  maxFileSeq: number;
  /** Oid of `runs/<runId>/events` the state was read at; null when unknown. */
  eventsOid: string | null;
  /** timerIds this run has in the queue. */
  queued: Set<string>;
  /** timerIds `cancelQueued` suppressed, until they are disarmed in the log. */
  suppressed: Set<string>;
}

export class RepoTracker {
  readonly repoId: string;
  readonly runs = new Map<string, RunRecord>();
  private readonly rid: RepoId;
  private readonly abort = new AbortController();
  private tail: Promise<void> | null = null;
  /** Due timers waiting for the fire loop, with the queue time they were delivered at. */
  private readonly buffer = new Map<string, { timer: QueuedTimer; dueMs: number }>();
  private firing: Promise<void> | null = null;
  private retryMs: number;
  private stopped = false;

  constructor(
    repoId: string,
    private readonly ctx: TrackerContext,
    private readonly onTailFailed: (tracker: RepoTracker, error: unknown) => void,
  ) {
    this.repoId = repoId;
    this.rid = { kind: WORKFLOW_RUN_KIND, id: repoId };
    this.retryMs = ctx.retryInitialMs;
  }

  /**
   * Reads every run at the current tip C, arms their timers, then starts the live tail from C,
   * so a TimerSet committed meanwhile is neither lost nor seen twice.
   * @throws ref_corrupt and read errors (the caller reports and retries)
   */
  async recover(): Promise<void> {
    const startedMs = this.ctx.nowMs();
    const { store, principal, ref } = this.ctx;
    const tip = await store.resolveRef(principal, this.rid, ref);
    const reads = await store.openCommittedReads(principal, this.rid, tip ?? ref);
    let pending = 0;
    let badEvents = 0;
    for (const entry of await reads.listDir(runsPrefix.slice(0, -1))) {
      if (entry.type !== "tree" || parseEventPath(`${runsPrefix}${entry.name}/events/1.json`) === null) continue;
      const record = await this.readRun(reads, entry.name);
      badEvents += record.bad;
      pending += record.state.terminal === null ? record.state.pendingTimers.size : 0;
    }
    this.ctx.report({
      type: "recovered",
      repoId: this.repoId,
      commitSha: tip,
      runs: this.runs.size,
      pending,
      badEvents,
      ms: this.ctx.nowMs() - startedMs,
    });
    this.tail = this.runTail(tip ?? "genesis").catch((error: unknown) => {
      if (!this.stopped) this.onTailFailed(this, error);
    });
  }

  /** Ends the tail and waits for the fire loop; queued timers of this repo are disarmed. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.abort.abort();
    for (const [runId, record] of this.runs) {
      for (const timerId of record.queued) this.ctx.disarm(this.repoId, runId, timerId);
      record.queued.clear();
    }
    await Promise.allSettled([this.tail, this.firing]);
  }

  /**
   * Adds due timers to this repo's fire buffer and runs the fire loop until it is empty.
   * `dueMs` is the queue time each was delivered at: the queue's clock reading was at least
   * that, so it is a floor for "now" (case E3: a later reading that runs behind must not turn a
   * delivered timer back into "not due" and spin).
   */
  fire(due: readonly { timer: QueuedTimer; dueMs: number }[]): Promise<void> {
    for (const item of due) this.buffer.set(`${item.timer.runId}/${item.timer.timerId}`, item);
    if (this.firing === null) {
      this.firing = this.fireLoop().finally(() => {
        this.firing = null;
      });
    }
    return this.firing;
  }

  /** Resolves when the fire loop has nothing buffered and no commit in flight. */
  async idle(): Promise<void> {
    while (this.firing !== null) await this.firing;
  }

  /** The run's current timers, to answer `queuedTimers`, or undefined for an unknown run. */
  run(runId: string): RunRecord | undefined {
    return this.runs.get(runId);
  }

  /** Marks a timer as no longer queued and suppressed (after `cancelQueued`). */
  forget(runId: string, timerId: string): void {
    const record = this.runs.get(runId);
    record?.queued.delete(timerId);
    record?.suppressed.add(timerId);
  }

  private async readRun(reads: CommittedReads, runId: string): Promise<{ state: RunState; bad: number }> {
    const log = await readRunLog(reads, runId, { maxEventBytes: this.ctx.maxEventBytes });
    for (const bad of log.bad) this.reportBad(bad);
    const eventsOid = await reads.treeOid(runEventsPrefix(runId).slice(0, -1));
    const record = this.runs.get(runId) ?? { state: log.state, maxFileSeq: -1, eventsOid: null, queued: new Set<string>(), suppressed: new Set<string>() };
    record.state = log.state;
    record.maxFileSeq = log.maxFileSeq;
    record.eventsOid = eventsOid;
    this.runs.set(runId, record);
    this.sync(runId, record);
    return { state: log.state, bad: log.bad.length };
  }

  /** Makes the queue hold exactly the run's armed, unsuppressed timers. */
  private sync(runId: string, record: RunRecord): void {
    const wanted = record.state.terminal === null ? record.state.pendingTimers : new Map();
    for (const timerId of record.queued) {
      if (!wanted.has(timerId)) {
        this.ctx.disarm(this.repoId, runId, timerId);
        record.queued.delete(timerId);
      }
    }
    for (const timerId of record.suppressed) {
      if (!wanted.has(timerId)) {
        this.ctx.forgetSuppressed(this.repoId, runId, timerId, record.state.lastSeq);
        record.suppressed.delete(timerId);
      }
    }
    for (const pending of wanted.values()) {
      const timer: QueuedTimer = {
        repoId: this.repoId,
        runId,
        timerId: pending.timerId,
        fireAt: pending.fireAt,
        setSeq: pending.setSeq,
        ...(pending.cron === undefined ? {} : { cron: pending.cron, timezone: pending.timezone ?? "UTC" }),
      };
      if (this.ctx.suppressed(timer)) continue;
      this.ctx.arm(timer, Date.parse(pending.fireAt));
      record.queued.add(pending.timerId);
    }
  }

  private async runTail(from: string): Promise<void> {
    const { store, principal, ref } = this.ctx;
    const commits = store.subscribe(principal, this.rid, ref, {
      from,
      signal: this.abort.signal,
      onRewrite: (info) => this.ctx.report({ type: "ref_rewritten", repoId: this.repoId, ...info }),
    });
    for await (const commit of commits) {
      if (this.stopped) return;
      await this.applyCommit(commit);
      this.retryMs = this.ctx.retryInitialMs;
    }
  }

  /**
   * Applies one commit: added events of a run are applied in seq order when they extend its
   * state; anything else (an edit, a deletion, an out-of-order seq) re-reads the whole run.
   */
  private async applyCommit(commit: CommitChange): Promise<void> {
    const byRun = new Map<string, { adds: { seq: number; oid: string; path: string }[]; reread: boolean }>();
    for (const change of commit.changes) {
      if (!change.path.startsWith(runsPrefix)) continue;
      const where = parseEventPath(change.path);
      const runId = where?.runId ?? change.path.slice(runsPrefix.length).split("/")[0] ?? "";
      if (runId === "") continue;
      const entry = byRun.get(runId) ?? { adds: [], reread: false };
      byRun.set(runId, entry);
      if (where !== null && change.status === "added") entry.adds.push({ seq: where.seq, oid: change.oid, path: change.path });
      else entry.reread = true;
    }
    if (byRun.size === 0) return;
    const reads = await this.ctx.store.openCommittedReads(this.ctx.principal, this.rid, commit.commitSha);
    for (const [runId, change] of byRun) {
      const record = this.runs.get(runId);
      change.adds.sort((a, b) => a.seq - b.seq);
      const extends_ = record !== undefined && !change.reread && (change.adds[0]?.seq ?? 0) > record.maxFileSeq;
      if (!extends_ || record === undefined) {
        if (record !== undefined || (await reads.treeOid(runEventsPrefix(runId).slice(0, -1))) !== null) {
          await this.readRun(reads, runId);
        }
        continue;
      }
      for (const add of change.adds) {
        record.maxFileSeq = Math.max(record.maxFileSeq, add.seq);
        let event: RunEvent;
        try {
          event = parseEvent(await reads.readBlobByOid(add.oid), { path: add.path, expectedSeq: add.seq, maxEventBytes: this.ctx.maxEventBytes });
        } catch (error) {
          this.reportBad({ runId, path: add.path, seq: add.seq, error: asHostError(error, add.path) });
          continue;
        }
        record.state = applyEvent(record.state, event);
      }
      record.eventsOid = await reads.treeOid(runEventsPrefix(runId).slice(0, -1));
      this.sync(runId, record);
    }
  }

  private reportBad(bad: BadEvent): void {
    this.ctx.count("badEvents");
    this.ctx.report({ type: "bad_event", repoId: this.repoId, runId: bad.runId, seq: bad.seq, path: bad.path, error: bad.error });
  }

  private async fireLoop(): Promise<void> {
    while (this.buffer.size > 0 && !this.stopped) {
      const batch: { timer: QueuedTimer; dueMs: number }[] = [];
      for (const [key, item] of this.buffer) {
        batch.push(item);
        this.buffer.delete(key);
        if (batch.length >= this.ctx.maxBatch) break;
      }
      await this.commitBatch(batch);
    }
  }

  /**
   * Commits one batch. Everything is decided inside `computeDelta`, under the repo lock, from
   * the log at the parent commit: that re-check is what makes firing exactly-once.
   */
  private async commitBatch(due: readonly { timer: QueuedTimer; dueMs: number }[]): Promise<void> {
    type Outcome = { timer: QueuedTimer; plan: FirePlan; runId: string };
    const batch = due.map((d) => d.timer);
    const floorMs = Math.max(...due.map((d) => d.dueMs));
    let result;
    try {
      result = await this.ctx.store.writeTreeDelta<Outcome[]>(this.ctx.principal, this.rid, this.ctx.ref, {
        message: `Fire ${batch.length} timer${batch.length === 1 ? "" : "s"}`,
        computeDelta: async (_parent, reads) => {
          const nowMs = Math.max(this.ctx.nowMs(), floorMs);
          const at = isoFromMs(nowMs);
          const puts = new Map<string, Uint8Array>();
          const outcomes: Outcome[] = [];
          const byRun = groupBy(batch, (t) => t.runId);
          for (const [runId, timers] of byRun) {
            const fresh = await this.freshRun(reads, runId);
            let state = fresh.state;
            let seq = Math.max(fresh.maxFileSeq + 1, 1);
            timers.sort((a, b) => Date.parse(a.fireAt) - Date.parse(b.fireAt));
            for (const timer of timers) {
              const plan = planDueTimer(state, timer, { nowMs, ...this.ctx.planOptions });
              outcomes.push({ timer, plan, runId });
              if (plan.kind !== "append") continue;
              for (const planned of plan.events) {
                const event = parseEvent(serializeEvent({ seq, type: planned.type, at, data: planned.data } as RunEvent), {
                  expectedSeq: seq,
                  maxEventBytes: this.ctx.maxEventBytes,
                });
                puts.set(eventPath(runId, seq), serializeEvent(event));
                state = applyEvent(state, event);
                seq += 1;
              }
            }
          }
          return { puts, result: outcomes };
        },
      });
    } catch (error) {
      await this.onCommitFailed(due, error);
      return;
    }
    this.retryMs = this.ctx.retryInitialMs;
    if (result.committed) this.ctx.count("commits");
    for (const { timer, plan, runId } of result.result ?? []) {
      if (plan.kind === "not_due") {
        this.ctx.arm(timer, Date.parse(plan.fireAt));
        continue;
      }
      if (plan.kind === "stale") continue;
      const commitSha = result.commitSha ?? "";
      for (const scheduledFor of plan.fired) {
        this.ctx.count("fired");
        this.ctx.report({ type: "fired", repoId: this.repoId, runId, timerId: timer.timerId, scheduledFor, firedAt: plan.firedAt, commitSha });
      }
      if (plan.skipped !== null) {
        this.ctx.count("skippedTicks", plan.skipped.count);
        this.ctx.report({ type: "skipped", repoId: this.repoId, runId, timerId: timer.timerId, ...plan.skipped, commitSha });
      }
    }
  }

  /** The run at the commit `reads` is pinned to: the cached state when its events tree is unchanged. */
  private async freshRun(reads: CommittedReads, runId: string): Promise<{ state: RunState; maxFileSeq: number }> {
    const oid = await reads.treeOid(runEventsPrefix(runId).slice(0, -1));
    const cached = this.runs.get(runId);
    if (cached !== undefined && oid !== null && cached.eventsOid === oid) return cached;
    const log = await readRunLog(reads, runId, { maxEventBytes: this.ctx.maxEventBytes });
    return log;
  }

  private async onCommitFailed(due: readonly { timer: QueuedTimer; dueMs: number }[], error: unknown): Promise<void> {
    const batch = due.map((d) => d.timer);
    const invalid = error instanceof WorkflowHostError && isContentError(error.code);
    if (invalid && batch.length > 1) {
      // One timer's event was refused: bisect so the healthy timers still commit.
      const half = Math.ceil(due.length / 2);
      await this.commitBatch(due.slice(0, half));
      await this.commitBatch(due.slice(half));
      return;
    }
    if (invalid) {
      const timer = batch[0] as QueuedTimer;
      this.ctx.report({ type: "timer_rejected", repoId: this.repoId, runId: timer.runId, timerId: timer.timerId, error });
      return;
    }
    this.ctx.count("commitFailures");
    const retryInMs = this.retryMs;
    this.retryMs = Math.min(this.retryMs * 2, this.ctx.retryMaxMs);
    this.ctx.report({ type: "commit_failed", repoId: this.repoId, timers: batch.length, retryInMs, error });
    const atMs = this.ctx.nowMs() + retryInMs;
    for (const timer of batch) this.ctx.arm(timer, atMs);
  }
}

/** Codes that mean "this content is refused", as opposed to "the write could not happen". */
function isContentError(code: string): boolean {
  return code === "event_invalid" || code === "time_invalid" || code === "cron_invalid" || code === "payload_too_large" || code === "id_invalid";
}

function asHostError(error: unknown, path: string): WorkflowHostError {
  return error instanceof WorkflowHostError
    ? error
    : new WorkflowHostError("event_invalid", `${path} could not be read as an event`, { path }, { cause: error });
}

function groupBy<T>(items: readonly T[], keyOf: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const key = keyOf(item);
    const group = groups.get(key);
    if (group === undefined) groups.set(key, [item]);
    else group.push(item);
  }
  return groups;
}
