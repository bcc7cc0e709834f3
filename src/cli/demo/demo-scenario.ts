/**
 * The demo's story, on a real data dir with the real clock: a deployment `demo` with five runs.
 *
 *   invoice-7      a one-shot that fell due while no host was running: fires at once on start
 *   report-berlin  a cron series "every 2 s" in Europe/Berlin armed 10 s before the host
 *                  started: the missed ticks are skipped (misfire "skip"), later ticks fire
 *   welcome-42     two one-shots 1.5 s and 3 s ahead, and one a week ahead that stays pending
 *   approval-9     waits for signal "approve" (timeout 30 s); the signal arrives after ~4.5 s
 *   approval-10    waits for signal "approve" (timeout 2.5 s); nobody sends it: it times out
 *
 * Everything is written through the public API (host, runtime) except the two "while no host
 * was running" TimerSets, which are appended to the logs directly before the host starts.
 */
import type { SchedulerEvent } from "../../../seams/scheduler/scheduler-types.js";
import { createWorkflowHost, type WorkflowHost } from "../../host/host.js";
import { stopOnSignals } from "../../host/stop-on-signals.js";
import type { Logger } from "../../logger.js";
import { nextTick } from "../../workflow/cron.js";
import { setTimerDurably } from "../../../seams/scheduler/set-timer.js";
import { newTerminalEvent } from "../../workflow/event-constructors.js";
import { openRunLog } from "../../workflow/run-log-writer.js";
import type { TerminalEventType, TimerSetData } from "../../workflow/types.js";
import { isoFromMs } from "../../workflow/time.js";
import { duration, plural } from "../format.js";
import type { CliIo } from "../io.js";
import { printLine } from "../io.js";
import { localTime, progressHeader, progressLine, utcTime } from "./demo-view.js";

export const DEMO_REPO = "demo";
export const CRON = "*/2 * * * * *";
export const CRON_ZONE = "Europe/Berlin";

const RUN = {
  invoice: "invoice-7",
  report: "report-berlin",
  welcome: "welcome-42",
  approve: "approval-9",
  expire: "approval-10",
} as const;

/** What each run shows, for the summary. */
export const DEMO_STORIES: Readonly<Record<string, string>> = {
  [RUN.invoice]: "overdue one-shot, fired on recovery",
  [RUN.report]: `cron "${CRON}" ${CRON_ZONE}, misfire skip`,
  [RUN.welcome]: "one-shots +1.5 s, +3 s (and +7 d, pending)",
  [RUN.approve]: "waitForSignal, signal delivered",
  [RUN.expire]: "waitForSignal, timed out",
};

const OVERDUE_MS = 3_000;
const SERIES_DOWN_MS = 10_000;
const SIGNAL_AFTER_MS = 4_500;
const MIN_CRON_FIRES = 2;
const DEADLINE_MS = 40_000;

interface Progress {
  overdueFired: boolean;
  oneShotsFired: number;
  cronFired: number;
  cronSkipped: number;
  approved: boolean;
  timedOut: boolean;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Runs the story against `dataDir` (already reset).
 * @returns the missing expectations (empty when the story ran as told)
 * @throws what the host throws (host_locked, …); interrupted by SIGINT/SIGTERM: host_stopped
 */
export async function runDemoScenario(io: CliIo, dataDir: string, logger: Logger): Promise<{ missing: string[]; interrupted: boolean }> {
  const progress: Progress = { overdueFired: false, oneShotsFired: 0, cronFired: 0, cronSkipped: 0, approved: false, timedOut: false };
  const host = createWorkflowHost({
    dataDir,
    logger,
    durability: "none",
    watch: { pollMs: 1_000, chokidar: false },
    onEvent: (event) => onSchedulerEvent(io, event, progress),
  });
  const signals = stopOnSignals(host, { source: io.signals, logger });
  const interrupted = (): boolean => signals.received !== null;
  try {
    await host.createDeployment(DEMO_REPO);
    await seedWhileDown(io, host);
    await host.start();
    const startedMs = io.clock().getTime();
    const stats = host.scheduler.stats();
    printLine(io, `host started (pid ${host.lock?.holder.pid ?? "?"}, lock ${host.lock?.path ?? "-"}): recovered ${plural(stats.runs, "run")}, ${plural(stats.queued, "timer")} armed`);
    printLine(io);
    progressHeader(io);

    const runtime = host.runtime(DEMO_REPO);
    for (const [timerId, delayMs] of [["send-email", 1_500], ["follow-up", 3_000], ["check-in-7d", 7 * 86_400_000]] as const) {
      const set = await runtime.setTimer(RUN.welcome, { timerId, delayMs });
      progressLine(io, "set", RUN.welcome, timerId, `fires at ${delayMs < 86_400_000 ? utcTime(set.fireAt) : set.fireAt} (in ${duration(delayMs)})`);
    }
    const approval = runtime.waitForSignal(RUN.approve, "approve", { timeoutMs: 30_000, stepId: "approve-order" });
    progressLine(io, "waiting", RUN.approve, "approve", "waitForSignal(\"approve\", {timeoutMs: 30000})");
    const expiry = runtime.waitForSignal(RUN.expire, "approve", { timeoutMs: 2_500 });
    progressLine(io, "waiting", RUN.expire, "approve", "waitForSignal(\"approve\", {timeoutMs: 2500}); nobody will send it");
    const waitStartedMs = io.clock().getTime();
    void expiry.then((result) => {
      if ("timedOut" in result) {
        progress.timedOut = true;
        progressLine(io, "timed out", RUN.expire, "approve", `waitForSignal returned {timedOut: true} after ${duration(io.clock().getTime() - waitStartedMs)}`);
      }
    }, () => undefined);
    void approval.then((result) => {
      if (!("timedOut" in result)) {
        progress.approved = true;
        progressLine(io, "received", RUN.approve, "approve", `waitForSignal resolved with ${JSON.stringify(result.payload)} (seq ${result.seq}) after ${duration(io.clock().getTime() - waitStartedMs)}`);
      }
    }, () => undefined);

    await sleep(Math.max(0, startedMs + SIGNAL_AFTER_MS - io.clock().getTime()));
    if (interrupted()) return { missing: [], interrupted: true };
    const delivered = await runtime.deliverSignal(RUN.approve, "approve", { approvedBy: "ops@example.com" }, "approval-9-ops");
    progressLine(io, "signal", RUN.approve, "approve", `deliverSignal: SignalReceived committed at seq ${delivered.seq}`);

    await Promise.allSettled([approval, expiry]);
    const done = (): boolean =>
      progress.overdueFired && progress.oneShotsFired >= 2 && progress.cronFired >= MIN_CRON_FIRES && progress.cronSkipped > 0 && progress.approved && progress.timedOut;
    while (!done() && !interrupted() && io.clock().getTime() - startedMs < DEADLINE_MS) await sleep(50);
    if (interrupted()) return { missing: [], interrupted: true };

    const cancel = await runtime.cancelTimer(RUN.report, "every-2s", "demo finished");
    progressLine(io, "cancelled", RUN.report, "every-2s", `series ended: ${cancel.outcome}`);
    await finishRuns(io, host);
    await host.stop();
    return { missing: missingOf(progress), interrupted: false };
  } finally {
    signals.dispose();
    await host.stop();
  }
}

/** Appends the two TimerSets "written while no host was running". */
async function seedWhileDown(io: CliIo, host: WorkflowHost): Promise<void> {
  const nowMs = io.clock().getTime();
  const at = isoFromMs(nowMs);
  const dueAt = isoFromMs(nowMs - OVERDUE_MS);
  const firstTick = nextTick(CRON, CRON_ZONE, isoFromMs(nowMs - SERIES_DOWN_MS)) ?? at;
  const log = openRunLog({ store: host.store, principal: null, repoId: DEMO_REPO });
  const append = (runId: string, data: TimerSetData): Promise<unknown> => setTimerDurably(log, runId, data, at, `Set timer ${data.timerId} of ${runId}`);
  await append(RUN.invoice, { timerId: "payment-due", fireAt: dueAt });
  await append(RUN.report, { timerId: "every-2s", fireAt: firstTick, cron: CRON, timezone: CRON_ZONE, misfire: "skip" });
  printLine(io, "seeded while no host was running:");
  printLine(io, `  ${RUN.invoice}/payment-due   one-shot due at ${utcTime(dueAt)} (${duration(OVERDUE_MS)} ago)`);
  printLine(io, `  ${RUN.report}/every-2s  cron "${CRON}" in ${CRON_ZONE}, first tick ${utcTime(firstTick)} (${duration(nowMs - Date.parse(firstTick))} ago), misfire: skip`);
}

/** Ends the runs whose story is over, so the log shows terminal events too. */
async function finishRuns(io: CliIo, host: WorkflowHost): Promise<void> {
  const log = openRunLog({ store: host.store, principal: null, repoId: DEMO_REPO });
  const end = async (runId: string, type: TerminalEventType, extra: Record<string, unknown>): Promise<void> => {
    await log.append(runId, `${type} ${runId}`, () => ({ append: [newTerminalEvent(type, io.clock().toISOString(), extra)], result: undefined }));
    progressLine(io, "ended", runId, "", type);
  };
  await end(RUN.invoice, "RunCompleted", {});
  await end(RUN.approve, "RunCompleted", {});
  await end(RUN.expire, "RunFailed", { reason: "approval timed out" });
}

function onSchedulerEvent(io: CliIo, event: SchedulerEvent, progress: Progress): void {
  if (event.type === "fired") {
    const lateMs = Date.parse(event.firedAt) - Date.parse(event.scheduledFor);
    let note = "";
    if (event.runId === RUN.report) {
      progress.cronFired += 1;
      note = ` (${localTime(event.scheduledFor, CRON_ZONE)} in ${CRON_ZONE}; next tick set in the same commit)`;
    } else if (event.runId === RUN.invoice) {
      progress.overdueFired = true;
      note = " (fell due while no host ran: fired once, on recovery)";
    } else if (event.runId === RUN.welcome) {
      progress.oneShotsFired += 1;
    } else if (event.timerId.startsWith("wait:")) {
      note = " (the wait's timeout timer)";
    }
    progressLine(io, "fired", event.runId, event.timerId, `scheduledFor ${utcTime(event.scheduledFor)}, late ${duration(lateMs)}${note}`);
  } else if (event.type === "skipped") {
    if (event.runId === RUN.report) progress.cronSkipped += event.count;
    progressLine(io, "skipped", event.runId, event.timerId, `${plural(event.count, "missed tick")} ${utcTime(event.firstMissed)}..${utcTime(event.lastMissed)} (misfire: skip; one TimerSkipped + next TimerSet)`);
  } else if (event.type === "bad_event") {
    progressLine(io, "bad event", event.runId, "", event.error.message);
  }
}

function missingOf(progress: Progress): string[] {
  const missing: string[] = [];
  if (!progress.overdueFired) missing.push("the overdue one-shot did not fire");
  if (progress.oneShotsFired < 2) missing.push(`${progress.oneShotsFired} of 2 one-shots fired`);
  if (progress.cronSkipped === 0) missing.push("no missed cron tick was skipped");
  if (progress.cronFired < MIN_CRON_FIRES) missing.push(`${progress.cronFired} of ${MIN_CRON_FIRES} cron ticks fired`);
  if (!progress.approved) missing.push("the signal did not reach the waiting run");
  if (!progress.timedOut) missing.push("the 2.5 s wait did not time out");
  return missing;
}
