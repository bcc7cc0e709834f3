import { readFile } from "node:fs/promises";
import { parseDispatchConfig } from "../../../seams/dispatch/dispatch-config.js";
import { printDispatchReport } from "./dispatch-report.js";
import type { SchedulerEvent } from "../../../seams/scheduler-types.js";
import { createWorkflowHost } from "../../host/host.js";
import { stopOnSignals } from "../../host/stop-on-signals.js";
import type { MisfirePolicy } from "../../workflow/types.js";
import { choiceFlag, dataDirFlag, dataDirOption, intFlag } from "../args.js";
import { createCliLogger, replacer } from "../cli-logger.js";
import type { CliCommand } from "../command.js";
import { plural, shortSha } from "../format.js";
import type { CliIo } from "../io.js";
import { printLine } from "../io.js";

const NAME = "serve";

/** `serve`: runs the host on a data dir until SIGINT/SIGTERM. */
export const serveCommand: CliCommand = {
  name: ["serve"],
  summary: "run the host on a data dir until SIGINT/SIGTERM",
  options: {
    ...dataDirOption,
    "poll-ms": { type: "string" },
    misfire: { type: "string" },
    durability: { type: "string" },
    "lock-stale-ms": { type: "string" },
    dispatch: { type: "string" },
    json: { type: "boolean" },
  },
  help: `Usage: workflow-host serve --data-dir DIR [--poll-ms N] [--misfire P] [--durability D]
                           [--lock-stale-ms N] [--dispatch FILE] [--json]

Runs the host: takes the data dir's host lock, recovers every deployment's timers, fires them
(TimerFired, cron follow-ups, TimerSkipped) and follows new commits, including ones pushed with
git or written by other workflow-host commands. New deployments are picked up within 2 s.
Prints one line per timer event on stdout; warnings and errors go to stderr.

SIGINT or SIGTERM stops it gracefully (the commit in flight finishes, the lock is released)
and it exits 0. A second host on the same data dir exits 1 with host_locked naming the holder;
a lock left by a host that died (its pid is gone, or no heartbeat for --lock-stale-ms) is
taken over, and the takeover is logged.

Options:
  -d, --data-dir DIR      data dir (default: $WORKFLOW_HOST_DATA_DIR); created when missing
      --poll-ms N         ref check interval, the safety net under OS file events (default 1000)
      --misfire P         cron series that name no policy: skip (default) | latest | all
      --durability D      fsync (default): flush every write before its ref moves | none
      --lock-stale-ms N   a lock without heartbeat for this long is taken over (default 10000)
      --dispatch FILE     run the HTTP consumers of FILE (see README "Running code when a
                          timer fires"); status with workflow-host dispatch status
      --json              one JSON object per line on stdout and stderr

Output lines: recovered, armed, fired, skipped, cancelled, bad-event, ref-rewritten,
commit-failed, repo-failed, timer-rejected.

Examples:
  workflow-host serve --data-dir ./data
  workflow-host serve --data-dir ./data --json --poll-ms 250
`,
  async run(values, io) {
    const dataDir = dataDirFlag(NAME, values, io);
    const pollMs = intFlag(NAME, values, "poll-ms", { min: 10, max: 3_600_000 }, 1_000) ?? 1_000;
    const staleMs = intFlag(NAME, values, "lock-stale-ms", { min: 2_000, max: 86_400_000 }, 10_000) ?? 10_000;
    const misfire = choiceFlag<MisfirePolicy>(NAME, values, "misfire", ["skip", "latest", "all"], "skip");
    const durability = choiceFlag(NAME, values, "durability", ["fsync", "none"], "fsync");
    const json = values["json"] === true;
    const logger = createCliLogger(io, { json });
    const dispatchFile = values["dispatch"];
    const consumers = typeof dispatchFile === "string" ? parseDispatchConfig(await readFile(dispatchFile, "utf8"), io.env) : [];
    const host = createWorkflowHost({
      dataDir,
      logger,
      misfire,
      durability,
      watch: { pollMs, chokidar: true },
      lock: { staleMs },
      onEvent: (event) => printEvent(io, event, json),
      onDispatchEvent: (report) => printDispatchReport(io, report, json),
    });
    for (const consumer of consumers) host.dispatch(consumer);
    const signals = stopOnSignals(host, {
      source: io.signals,
      logger,
      onRepeat: () => logger.warn("already stopping; waiting for the commit in flight"),
    });
    try {
      await host.start();
      const stats = host.scheduler.stats();
      const holder = host.lock?.holder;
      if (signals.received !== null) {
        // Stopped while starting: nothing was served.
      } else if (json) {
        printLine(io, JSON.stringify({ ts: io.clock().toISOString(), event: "serving", dataDir, pid: holder?.pid, repos: stats.repos, runs: stats.runs, queued: stats.queued }));
      } else {
        printLine(io, `serving ${dataDir} (pid ${holder?.pid ?? "?"}): ${plural(stats.repos, "deployment")}, ${plural(stats.runs, "run")}, ${plural(stats.queued, "timer")} armed; stop with Ctrl-C or SIGTERM`);
      }
      // The host stops on a signal, or by itself when its lock is lost.
      await host.stopped;
      const signal = signals.received;
      if (signal === null) {
        logger.error("the host stopped because its lock was lost (another host took over the data dir)");
        return 1;
      }
      await signals.stopped;
      const end = host.scheduler.stats();
      if (json) printLine(io, JSON.stringify({ ts: io.clock().toISOString(), event: "stopped", signal, fired: end.fired, skippedTicks: end.skippedTicks }));
      else printLine(io, `stopped on ${signal}: ${end.fired} fired, ${end.skippedTicks} ticks skipped, lock released`);
      return 0;
    } finally {
      signals.dispose();
      await host.stop();
    }
  },
};

/** One line per scheduler report. */
function printEvent(io: CliIo, event: SchedulerEvent, json: boolean): void {
  const ts = io.clock().toISOString();
  if (json) {
    const { type, ...rest } = event;
    printLine(io, JSON.stringify({ ts, event: type.replace("_", "-"), ...rest }, replacer));
    return;
  }
  const line = (what: string, text: string): void => printLine(io, `${ts} ${what.padEnd(13)} ${text}`);
  switch (event.type) {
    case "recovered":
      line("recovered", `${event.repoId}: ${event.runs} runs, ${event.pending} timers pending, ${event.badEvents} bad events, main ${shortSha(event.commitSha)} (${event.ms} ms)`);
      break;
    case "armed":
      line("armed", `${event.repoId}/${event.runId}/${event.timerId} for ${event.fireAt}`);
      break;
    case "fired":
      line("fired", `${event.repoId}/${event.runId}/${event.timerId} scheduledFor ${event.scheduledFor} late ${Date.parse(event.firedAt) - Date.parse(event.scheduledFor)} ms commit ${shortSha(event.commitSha)}`);
      break;
    case "skipped":
      line("skipped", `${event.repoId}/${event.runId}/${event.timerId} ${event.count} missed ticks ${event.firstMissed}..${event.lastMissed} commit ${shortSha(event.commitSha)}`);
      break;
    case "cancelled":
      line("cancelled", `${event.repoId}/${event.runId}/${event.timerId}${event.commitSha === null ? "" : ` commit ${shortSha(event.commitSha)}`}`);
      break;
    case "bad_event":
      line("bad-event", `${event.repoId}: ${event.path}${event.seq === null ? "" : ` (seq ${event.seq})`}: ${event.error.message}`);
      break;
    case "ref_rewritten":
      line("ref-rewritten", `${event.repoId}: ${shortSha(event.from)} -> ${shortSha(event.to)}; runs re-read`);
      break;
    case "commit_failed":
      line("commit-failed", `${event.repoId}: ${event.timers} timers, retry in ${event.retryInMs} ms: ${String(event.error)}`);
      break;
    case "repo_failed":
      line("repo-failed", `${event.repoId}: retry in ${event.retryInMs} ms: ${String(event.error)}`);
      break;
    case "timer_rejected":
      line("timer-rejected", `${event.repoId}/${event.runId}/${event.timerId}: ${String(event.error)}`);
      break;
  }
}
