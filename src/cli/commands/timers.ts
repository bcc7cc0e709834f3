import { WorkflowHostError } from "../../errors.js";
import { decodeTimersCursor, encodeTimersCursor, type TimersCursor } from "../../host/timers-cursor.js";
import { parseRepoId } from "../../workflow/ids.js";
import { checkFlags, dataDirFlag, dataDirOption, intFlag, MAX_LIST_LIMIT, stringFlag } from "../args.js";
import type { CliCommand } from "../command.js";
import { dueIn, errorLine, oneLine, plural, table } from "../format.js";
import { printJson, printLine } from "../io.js";
import { withStore } from "../with-store.js";
import { shellQuote } from "./paths.js";

const NAME = "timers";
/** A count with thousands separators. */
const num = (n: number): string => n.toLocaleString("en-US");

/** `timers`: pending timers with their next fire time, across deployments. */
export const timersCommand: CliCommand = {
  name: ["timers"],
  summary: "list pending timers with their next fire time, across deployments",
  options: { ...dataDirOption, repo: { type: "string", short: "r" }, limit: { type: "string" }, after: { type: "string" }, json: { type: "boolean" } },
  help: `Usage: workflow-host timers --data-dir DIR [--repo R] [--limit N] [--after CURSOR] [--json]

Lists every armed timer of every run that has not ended, read from the logs at each
deployment's tip: what a host arms when it starts. Works with or without a running host.
An overdue one-shot fires as soon as a host runs; an overdue cron tick follows the series'
misfire policy (default skip).

Timers are listed by next fire time, then deployment, run and timer id (plain byte order).
Every run's log is read (to count and order the timers), but a long listing is printed a page
at a time: --limit N lists at most N timers (default: all), and --after CURSOR starts after the
timer CURSOR names; the last line (--json: nextAfter) says where the next page starts, and the
summary counts every timer ("showing N of M" on a partial page). CURSOR is a page's nextAfter
(the one GET /v1/timers?after= takes too): opaque, it names the last timer listed, so a timer
set or fired between two pages moves no other timer into or out of the next page.

Options:
  -d, --data-dir DIR   data dir (default: $WORKFLOW_HOST_DATA_DIR)
  -r, --repo R         only this deployment
      --limit N        list at most N timers (1..${num(MAX_LIST_LIMIT)})
      --after CURSOR   list the timers after CURSOR (the previous page's nextAfter)
      --json           print {now, timers: [{repoId, runId, timerId, fireAt, dueInMs, lateMs,
                       setSeq, cron?, timezone?, misfire?, stepId?}], pendingTimers,
                       badEvents: [{repoId, runId, path, seq, code, message}],
                       failedRepos: [{repoId, code, message}], unreadableRuns: [{repoId,
                       runId, path, code, message}], repos, runs, nextAfter}; dueInMs is the time until fireAt and lateMs the time
                       past it, in ms (one of them is 0); a deployment that cannot be read
                       (failedRepos) or a run whose folder cannot be read (unreadableRuns:
                       object_missing, object_corrupt) or whose events entry is a file or a
                       link (event_invalid, as check names it; its timers are not listed, the
                       other runs' are), both also on stderr, make the exit code 1;
                       pendingTimers: how many timers there are, on this page or not;
                       nextAfter: the --after of the next page, null after the last

Examples:
  workflow-host timers --data-dir ./data
  workflow-host timers --data-dir ./data --limit 500 --after WzE3Nzc2ODAwMDAwMDAsImIiLCJyIiwidCJd
`,
  async run(values, io) {
    const dataDir = dataDirFlag(NAME, values, io);
    const rawRepo = stringFlag(values, "repo");
    const repoId = rawRepo === undefined ? undefined : checkFlags(NAME, () => parseRepoId(rawRepo));
    const limit = checkFlags(NAME, () => intFlag(NAME, values, "limit", { min: 1, max: MAX_LIST_LIMIT }));
    const after = checkFlags(NAME, () => afterFlag(stringFlag(values, "after")));
    const now = io.clock();
    const report = await withStore(dataDir, io, async (store) => {
      const { listPendingTimers } = await import("../../host/list-pending-timers.js");
      return listPendingTimers(store, { clock: () => now, ...(repoId === undefined ? {} : { repoId }), ...(limit === undefined ? {} : { limit }), ...(after === undefined ? {} : { after }) });
    });
    const nextAfter = report.nextAfter === null ? null : encodeTimersCursor(report.nextAfter);
    // A deployment that could not be read hides nothing else: it is named, and the exit code is 1.
    for (const failed of report.failedRepos) io.stderr.write(`workflow-host: ${oneLine(failed.error.message)}\n`);
    // So is a run whose folder could not be read: its timers are unknown, the others listed.
    for (const run of report.unreadableRuns) io.stderr.write(`workflow-host: run ${run.runId} of ${run.repoId} cannot be read (its timers are not listed): ${errorLine(run.error)}\n`);
    const code = report.failedRepos.length === 0 && report.unreadableRuns.length === 0 ? 0 : 1;
    if (values["json"] === true) {
      printJson(io, {
        now: now.toISOString(),
        timers: report.timers,
        pendingTimers: report.pendingTimers,
        badEvents: report.badEvents.map((b) => ({ repoId: b.repoId, runId: b.runId, path: b.path, seq: b.seq, code: b.error.code, message: b.error.message })),
        failedRepos: report.failedRepos.map((f) => ({ repoId: f.repoId, code: f.error.code, message: f.error.message })),
        unreadableRuns: report.unreadableRuns.map((u) => ({ repoId: u.repoId, runId: u.runId, path: u.path, code: u.error.code, message: u.error.message })),
        repos: report.repos,
        runs: report.runs,
        nextAfter,
      });
      return code;
    }

    // A deployment that could not be read is never counted as one without timers.
    const failed = report.failedRepos.length;
    const read = failed === 0 ? plural(report.repos, "deployment") : `${report.repos - failed} of ${plural(report.repos, "deployment")}`;
    const unread = failed === 0 ? "" : `; ${plural(failed, "deployment")} could not be read: ${report.failedRepos.map((f) => f.repoId).join(", ")}`;
    if (report.timers.length === 0) {
      if (failed > 0 && failed === report.repos) printLine(io, `timers unknown: ${plural(failed, "deployment")} could not be read: ${report.failedRepos.map((f) => f.repoId).join(", ")}`);
      // Past the last page: the deployments hold timers, none after the cursor.
      else if (report.pendingTimers > 0) printLine(io, `no pending timers after the cursor (${plural(report.pendingTimers, "pending timer")} in ${read}, ${plural(report.runs, "run")}${unread})`);
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
      // The summary counts every timer; a page that lists fewer says how many it shows.
      const shown = report.timers.length < report.pendingTimers ? `showing ${report.timers.length} of ` : "";
      printLine(io, `${shown}${plural(report.pendingTimers, "pending timer")} in ${read}, ${plural(report.runs, "run")}${unread}`);
    }
    // A command that runs as printed: the data dir as resolved, the deployment and page size as given.
    if (nextAfter !== null) {
      printLine(io, `more timers follow: workflow-host timers -d ${shellQuote(dataDir)}${repoId === undefined ? "" : ` -r ${repoId}`}${limit === undefined ? "" : ` --limit ${limit}`} --after ${nextAfter}`);
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

/**
 * The `--after` cursor: a page's `nextAfter` (src/host/timers-cursor.ts), or undefined when absent.
 * @throws page_invalid for text that is not one
 */
function afterFlag(raw: string | undefined): TimersCursor | undefined {
  if (raw === undefined) return undefined;
  const cursor = decodeTimersCursor(raw);
  if (cursor === null) throw new WorkflowHostError("page_invalid", `--after ${JSON.stringify(raw)} is not valid; allowed: the nextAfter of an earlier page`, { field: "after", value: raw });
  return cursor;
}
