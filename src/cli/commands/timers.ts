import { parseRepoId } from "../../workflow/ids.js";
import { checkFlags, dataDirFlag, dataDirOption, stringFlag } from "../args.js";
import type { CliCommand } from "../command.js";
import { dueIn, errorLine, oneLine, plural, table } from "../format.js";
import { printJson, printLine } from "../io.js";
import { withStore } from "../with-store.js";
import { shellQuote } from "./paths.js";

const NAME = "timers";

/** `timers`: pending timers with their next fire time, across deployments. */
export const timersCommand: CliCommand = {
  name: ["timers"],
  summary: "list pending timers with their next fire time, across deployments",
  options: { ...dataDirOption, repo: { type: "string", short: "r" }, json: { type: "boolean" } },
  help: `Usage: workflow-host timers --data-dir DIR [--repo R] [--json]

Lists every armed timer of every run that has not ended, read from the logs at each
deployment's tip: what a host arms when it starts. Works with or without a running host.
An overdue one-shot fires as soon as a host runs; an overdue cron tick follows the series'
misfire policy (default skip).

Options:
  -d, --data-dir DIR   data dir (default: $WORKFLOW_HOST_DATA_DIR)
  -r, --repo R         only this deployment
      --json           print {now, timers: [{repoId, runId, timerId, fireAt, dueInMs, lateMs,
                       setSeq, cron?, timezone?, misfire?, stepId?}], badEvents: [{repoId,
                       runId, path, seq, code, message}], failedRepos: [{repoId, code,
                       message}], unreadableRuns: [{repoId, runId, path, code, message}],
                       repos, runs}; dueInMs is the time until fireAt and lateMs the time
                       past it, in ms (one of them is 0); a deployment that cannot be read
                       (failedRepos) or a run whose folder cannot be read (unreadableRuns:
                       object_missing, object_corrupt) or whose events entry is a file or a
                       link (event_invalid, as check names it; its timers are not listed, the
                       other runs' are), both also on stderr, make the exit code 1

Example:
  workflow-host timers --data-dir ./data
`,
  async run(values, io) {
    const dataDir = dataDirFlag(NAME, values, io);
    const rawRepo = stringFlag(values, "repo");
    const repoId = rawRepo === undefined ? undefined : checkFlags(NAME, () => parseRepoId(rawRepo));
    const now = io.clock();
    const report = await withStore(dataDir, io, async (store) => {
      const { listPendingTimers } = await import("../../host/list-pending-timers.js");
      return listPendingTimers(store, { clock: () => now, ...(repoId === undefined ? {} : { repoId }) });
    });
    // A deployment that could not be read hides nothing else: it is named, and the exit code is 1.
    for (const failed of report.failedRepos) io.stderr.write(`workflow-host: ${oneLine(failed.error.message)}\n`);
    // So is a run whose folder could not be read: its timers are unknown, the others listed.
    for (const run of report.unreadableRuns) io.stderr.write(`workflow-host: run ${run.runId} of ${run.repoId} cannot be read (its timers are not listed): ${errorLine(run.error)}\n`);
    const code = report.failedRepos.length === 0 && report.unreadableRuns.length === 0 ? 0 : 1;
    if (values["json"] === true) {
      printJson(io, {
        now: now.toISOString(),
        timers: report.timers,
        badEvents: report.badEvents.map((b) => ({ repoId: b.repoId, runId: b.runId, path: b.path, seq: b.seq, code: b.error.code, message: b.error.message })),
        failedRepos: report.failedRepos.map((f) => ({ repoId: f.repoId, code: f.error.code, message: f.error.message })),
        unreadableRuns: report.unreadableRuns.map((u) => ({ repoId: u.repoId, runId: u.runId, path: u.path, code: u.error.code, message: u.error.message })),
        repos: report.repos,
        runs: report.runs,
      });
      return code;
    }

    // A deployment that could not be read is never counted as one without timers.
    const failed = report.failedRepos.length;
    const read = failed === 0 ? plural(report.repos, "deployment") : `${report.repos - failed} of ${plural(report.repos, "deployment")}`;
    const unread = failed === 0 ? "" : `; ${plural(failed, "deployment")} could not be read: ${report.failedRepos.map((f) => f.repoId).join(", ")}`;
    if (report.timers.length === 0) {
      if (failed > 0 && failed === report.repos) printLine(io, `timers unknown: ${plural(failed, "deployment")} could not be read: ${report.failedRepos.map((f) => f.repoId).join(", ")}`);
      else printLine(io, `no pending timers ${failed === 0 ? `(${read}, ${plural(report.runs, "run")})` : `in ${read} (${plural(report.runs, "run")})${unread}`}`);
    } else {
      const rows = report.timers.map((t) => [
        t.repoId,
        t.runId,
        t.timerId,
        t.fireAt,
        t.paused === true ? "paused" : dueIn(t.lateMs > 0 ? -t.lateMs : t.dueInMs),
        t.cron === undefined ? "one-shot" : `cron "${t.cron}" ${t.timezone ?? "UTC"}${t.misfire === undefined ? "" : ` misfire=${t.misfire}`}`,
      ]);
      for (const line of table(["REPO", "RUN", "TIMER", "NEXT FIRE (UTC)", "WHEN", "KIND"], rows)) printLine(io, line);
      printLine(io, `${plural(report.timers.length, "pending timer")} in ${read}, ${plural(report.runs, "run")}${unread}`);
    }
    if (report.badEvents.length > 0) {
      printLine(io, `${plural(report.badEvents.length, "unreadable event")} skipped; run workflow-host check --data-dir ${shellQuote(dataDir)}`);
    }
    if (report.unreadableRuns.length > 0) {
      printLine(io, `${plural(report.unreadableRuns.length, "run")} could not be read (timers not listed): ${report.unreadableRuns.map((u) => `${u.repoId}/${u.runId}`).join(", ")}; run workflow-host check --data-dir ${shellQuote(dataDir)}`);
    }
    return code;
  },
};
