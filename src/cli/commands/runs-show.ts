import { isScheduleEnded, isSchedulePaused, isScheduleResumed, isSignalConsumed, isSignalReceived, isTimerCancelled, isTimerFired, isTimerSet, isTimerSkipped } from "../../workflow/event-guards.js";
import { WorkflowHostError } from "../../errors.js";
import { DEFAULT_REF } from "../../substrate/ref-name.js";
import { parseRepoId, parseRunId } from "../../workflow/ids.js";
import type { RunEvent, RunState } from "../../workflow/types.js";
import { checkFlags, dataDirFlag, dataDirOption, intFlag, requiredFlag, usageError } from "../args.js";
import type { CliCommand } from "../command.js";
import { errorLine, shortSha } from "../format.js";
import { printLine } from "../io.js";
import { withStore } from "../with-store.js";
import type { BadEvent } from "../../workflow/run-log.js";
import { shellQuote } from "./paths.js";

const NAME = "runs show";

/** Events per page by default, and the largest page (src/workflow/run-log.ts; named here so `--help` loads nothing). */
const DEFAULT_LIMIT = 100;
const MAX_LIMIT = 1_000;

/** `runs show`: one run's summary (state, counts, what is wrong) and a page of its events, or all of them a page at a time. */
export const runsShowCommand: CliCommand = {
  name: ["runs", "show"],
  summary: "show a run's state and its events, a page at a time",
  options: {
    ...dataDirOption,
    repo: { type: "string", short: "r" },
    run: { type: "string" },
    limit: { type: "string" },
    after: { type: "string" },
    all: { type: "boolean" },
    last: { type: "boolean" },
    json: { type: "boolean" },
  },
  help: `Usage: workflow-host runs show --data-dir DIR --repo R --run X [--limit N] [--after SEQ] [--all] [--json]
       workflow-host runs show --data-dir DIR --repo R --run X [--limit N] --last [--json]

Prints how many events run X holds, a page of them in seq order (the first ${DEFAULT_LIMIT}, or
--limit N after seq --after SEQ, or with --last the last ones: the seqs above the highest - N;
an entry of the page that could not be read is an UNREADABLE line at its seq), the entries
elsewhere in the log that could not be read and breaks of the log's rules (missing seqs, events after the
terminal one, which are skipped; a sealed log that is not valid; entries outside the run
folder's layout), and the state the whole log folds to: last seq, terminal event, armed
timers, signals not yet consumed. The last line says how the next page starts.

--all prints every event, a page at a time: a run's log has no size bound, and it is never
held in memory whole (nor with --json, which is still one object). The events come from
runs/<X>/events/ at the tip of main, or from its sealed runs/<X>/events.jsonl (the same events
either way); a run that retention moved out of main is read from refs/archive/runs,
unchanged. A run with no folder on main nor in the archive is run_not_found (exit 1). A run
whose folder or events/ folder cannot be read (object_missing, object_corrupt) or whose events
entry is a file or a link, not a folder (event_invalid, as runs list and check name it), is that
error, naming the run and the entry (exit 1; --json: {error: {code, message}}).
Unreadable entries and problems are listed up to 1,000 of each; the counts are always whole.

Options:
  -d, --data-dir DIR   data dir (default: $WORKFLOW_HOST_DATA_DIR)
  -r, --repo R         deployment id
      --run X          run id
      --limit N        events per page (1..${MAX_LIMIT}, default ${DEFAULT_LIMIT})
      --after SEQ      the page after seq SEQ (the previous page's nextAfter); default: from
                       the first event
      --last           the last page: the events with the N highest seqs
      --all            every event from --after on (or from the first), a page at a time:
                       with --after, a dump cut short resumes where it stopped
      --json           print {repoId, runId, commitSha, archived (the archive ref, or null),
                       eventCount, events (this page, or with --all every event), nextAfter
                       (the --after of the next page, null after the last), bad, badCount,
                       problems, problemCount, state: {lastSeq, terminal, pendingTimers,
                       observedSignalIds, unconsumedSignals}}; bad and problems entries are
                       {path, seq, code, message}

Examples:
  workflow-host runs show -d ./data -r payments --run order-17
  workflow-host runs show -d ./data -r payments --run order-17 --after 100 --limit 500
  workflow-host runs show -d ./data -r payments --run order-17 --all --json
`,
  async run(values, io) {
    const dataDir = dataDirFlag(NAME, values, io);
    const repoId = checkFlags(NAME, () => parseRepoId(requiredFlag(NAME, values, "repo")));
    const runId = checkFlags(NAME, () => parseRunId(requiredFlag(NAME, values, "run")));
    const limit = checkFlags(NAME, () => intFlag(NAME, values, "limit", { min: 1, max: MAX_LIMIT }, DEFAULT_LIMIT) ?? DEFAULT_LIMIT);
    const after = checkFlags(NAME, () => intFlag(NAME, values, "after", { min: 0, max: Number.MAX_SAFE_INTEGER }) ?? -1);
    const all = values["all"] === true;
    const last = values["last"] === true;
    if (last && (all || values["after"] !== undefined)) throw usageError(NAME, "--last takes neither --after nor --all");
    const json = values["json"] === true;
    const lostError = await withStore(dataDir, io, async (store) => {
      const [{ readRunLogPage }, { summarizeRunLog }, { WORKFLOW_RUN_KIND }, { ARCHIVE_REF }, { asUnreadableRunError, requireRunLog, STATE_NOT_KNOWN, unreadableRunError, unreadableRunOf }] = await Promise.all([
        import("../../workflow/run-log.js"),
        import("../../workflow/run-log-summary.js"),
        import("../../workflow/workflow-run-kind.js"),
        import("../../workflow/run-archive.js"),
        import("../../workflow/unreadable-runs.js"),
      ]);
      const repo = { kind: WORKFLOW_RUN_KIND, id: repoId };
      let reads = await store.openCommittedReads(null, repo, DEFAULT_REF);
      let archived: string | null = null;
      // A run retention moved out of main is read from the archive ref, as it was.
      if ((await reads.treeOid(`runs/${runId}`)) === null) {
        const archive = await store.openCommittedReads(null, repo, ARCHIVE_REF);
        // No folder on main nor in the archive: a mistyped id, or a run not started yet.
        if (archive.commitSha === null || (await archive.treeOid(`runs/${runId}`)) === null) {
          throw new WorkflowHostError("run_not_found", `run ${runId} has no log in deployment ${repoId} (neither on main nor in ${ARCHIVE_REF}); see workflow-host runs list`, { repoId, runId });
        }
        reads = archive;
        archived = ARCHIVE_REF;
      }
      const commitSha = reads.commitSha;
      // The state needs the whole log: folded event by event, none of them held; kept in the
      // process-wide summary cache (by run tree oid), which the pages below ask again.
      // A run whose folder or events/ folder cannot be read: its error, naming it and what is lost.
      // A run whose events entry is a file or a link holds no log: event_invalid, as runs list
      // and check name it (it was "0 events" with the problem, exit 0).
      const summary = requireRunLog(
        repoId,
        await summarizeRunLog(reads, runId).catch((error: unknown) => {
          throw asUnreadableRunError(repoId, runId, error, "nothing of it can be shown");
        }),
      );
      // An entry that holds no log (a file or a link pushed where a run folder belongs, a folder
      // with only grants.json): no run, as over HTTP; it was "0 events", exit 0.
      if (summary.eventCount === 0 && summary.badCount === 0 && summary.problemCount === 0) {
        throw new WorkflowHostError("run_not_found", `run ${runId} has no log in deployment ${repoId} (runs/${runId} holds none; workflow-host check names what is there); see workflow-host runs list`, { repoId, runId });
      }
      // A log not read whole (an event, blobs/ or the sealed log lost or damaged) is shown as far
      // as it reads, but its state is not: the lost event may be the one it turns on (a timer's
      // fire shown as "armed"). Named as runs list names it, and exit 1.
      const lostPart = unreadableRunOf(summary);
      const lost = lostPart === null ? null : unreadableRunError(repoId, lostPart, STATE_NOT_KNOWN);
      const state = stateJson(summary.state);
      const problem = (b: BadEvent) => ({ path: b.path, seq: b.seq, code: b.error.code, message: b.error.message });
      // Pages are printed as they are read (--all holds one page at a time).
      const pages = async function* () {
        // The last page: seqs are dense, so the N highest are those above maxFileSeq - N.
        let cursor: number | null = last ? Math.max(-1, summary.maxFileSeq - limit) : after;
        do {
          const page = await readRunLogPage(reads, runId, { after: cursor, limit, parsedEvents: null, summary });
          yield page;
          cursor = page.nextAfter;
        } while (all && cursor !== null);
      };
      if (json) {
        // One JSON object, written a page at a time: its head, each event, its tail.
        const head = { repoId, runId, commitSha, archived, eventCount: summary.eventCount };
        io.stdout.write(`${JSON.stringify(head, null, 2).slice(0, -2)},\n  "events": [`);
        let first = true;
        let nextAfter: number | null = null;
        for await (const page of pages()) {
          for (const event of page.events) {
            io.stdout.write(`${first ? "" : ","}\n${indent(JSON.stringify(event, null, 2), "    ")}`);
            first = false;
          }
          nextAfter = page.nextAfter;
        }
        const tail = {
          nextAfter,
          bad: summary.bad.map(problem),
          badCount: summary.badCount,
          problems: summary.problems.map(problem),
          problemCount: summary.problemCount,
          state: lost === null ? state : null,
          ...(lost === null || lostPart === null ? {} : { unreadable: { path: lostPart.path, code: lost.code, message: lost.message } }),
        };
        io.stdout.write(`${first ? "" : "\n  "}],\n${JSON.stringify(tail, null, 2).slice(2)}\n`);
        return lost;
      }
      const where = `run ${runId} in ${repoId} at ${shortSha(commitSha)}${archived === null ? "" : ` (archived: ${archived})`}`;
      printLine(io, `${where}: ${summary.eventCount} events${summary.eventCount === 0 ? "" : ` (seq ${summary.firstSeq ?? "?"}..${summary.state.lastSeq})`}`);
      let nextAfter: number | null = null;
      const unreadableLine = (bad: BadEvent): string => `  ${String(bad.seq ?? "?").padStart(4)}  UNREADABLE      ${bad.path}: ${bad.error.message}`;
      // An unreadable entry of a page is printed at its seq among the page's events; those of
      // the rest of the log (and any without a seq) follow the pages, as before.
      const shownBad = new Set<string>();
      for await (const page of pages()) {
        for (const row of bySeq(page.events, page.bad)) {
          if (row.bad !== undefined) {
            shownBad.add(row.bad.path);
            printLine(io, unreadableLine(row.bad));
          } else printLine(io, `  ${String(row.event.seq).padStart(4)}  ${row.event.type.padEnd(15)} ${describeEvent(row.event)}`);
        }
        nextAfter = page.nextAfter;
      }
      for (const bad of summary.bad) if (!shownBad.has(bad.path)) printLine(io, unreadableLine(bad));
      const listedBad = new Set([...shownBad, ...summary.bad.map((b) => b.path)]).size;
      if (summary.badCount > listedBad) printLine(io, `  … and ${summary.badCount - listedBad} more unreadable entries`);
      for (const p of summary.problems) printLine(io, `  ${String(p.seq ?? "?").padStart(4)}  PROBLEM         ${p.path}: ${p.error.message}`);
      if (summary.problemCount > summary.problems.length) printLine(io, `  … and ${summary.problemCount - summary.problems.length} more problems`);
      if (lost !== null) printLine(io, `state: not known: the log was not read whole (${lostPart?.path ?? ""} ${lost.code})`);
      else printLine(io, `state: lastSeq ${state.lastSeq}, ${state.terminal === null ? "running" : `ended (${state.terminal})`}`);
      for (const t of lost === null ? state.pendingTimers : []) {
        printLine(io, `  timer ${t.timerId} ${t.pausedAt === undefined ? "armed" : "paused at slot"} for ${t.fireAt}${t.cron === undefined ? "" : ` (cron "${t.cron}" ${t.timezone ?? "UTC"})`}`);
      }
      for (const s of lost === null ? state.unconsumedSignals : []) printLine(io, `  signal ${s.signalName} (${s.signalId}, seq ${s.seq}) not consumed yet`);
      if (nextAfter !== null) {
        // A command that runs as printed: the data dir as resolved, the page size as given.
        const pageSize = values["limit"] === undefined ? "" : ` --limit ${limit}`;
        printLine(io, `more events follow: workflow-host runs show -d ${shellQuote(dataDir)} -r ${repoId} --run ${runId}${pageSize} --after ${nextAfter} (or --all)`);
      }
      return lost;
    });
    if (lostError === null) return 0;
    io.stderr.write(`workflow-host: ${errorLine(lostError)}\n`);
    return 1;
  },
};

/**
 * A page's events and unreadable entries in one list by seq (each list is in seq order already);
 * an entry without a seq comes after the events.
 */
function bySeq(events: readonly RunEvent[], bad: readonly BadEvent[]): ({ event: RunEvent; bad?: undefined } | { bad: BadEvent })[] {
  const out: ({ event: RunEvent; bad?: undefined } | { bad: BadEvent })[] = [];
  const rest = [...bad].sort((a, b) => (a.seq ?? Infinity) - (b.seq ?? Infinity));
  let i = 0;
  for (const event of events) {
    for (let next = rest[i]; next !== undefined && (next.seq ?? Infinity) < event.seq; next = rest[++i]) out.push({ bad: next });
    out.push({ event });
  }
  return out.concat(rest.slice(i).map((b) => ({ bad: b })));
}

/** `text` with every line but the first indented by `pad`, and the first too. */
function indent(text: string, pad: string): string {
  return `${pad}${text.replaceAll("\n", `\n${pad}`)}`;
}

function stateJson(state: RunState) {
  return {
    lastSeq: state.lastSeq,
    terminal: state.terminal,
    pendingTimers: [...state.pendingTimers.values()],
    observedSignalIds: [...state.observedSignalIds],
    unconsumedSignals: state.unconsumedSignals,
  };
}

/** The interesting fields of an event, on one line. */
function describeEvent(event: RunEvent): string {
  const at = typeof event["at"] === "string" ? `  at ${event["at"]}` : "";
  if (isTimerSet(event)) {
    const d = event.data;
    return `${d.timerId} fireAt ${d.fireAt}${d.cron === undefined ? "" : ` cron "${d.cron}" ${d.timezone ?? "UTC"}`}${at}`;
  }
  if (isTimerFired(event)) {
    const d = event.data;
    const kind = d.manual === true ? ` (manual, request ${String(d.requestId)})` : d.backfill === true ? " (backfill)" : "";
    const jitter = d.jitteredFor === undefined ? "" : ` jitteredFor ${d.jitteredFor}`;
    // Committed late behind a backlog, taken up on time: why it fired rather than being skipped.
    const takenUp = d.takenUpAt === undefined ? "" : ` (taken up ${d.takenUpAt})`;
    return `${d.timerId} scheduledFor ${d.scheduledFor ?? "-"}${jitter} firedAt ${d.firedAt ?? "-"}${takenUp}${kind}`;
  }
  if (isTimerSkipped(event)) {
    // Why the slots did not fire: "missed" (host down, clock jump) or "paused".
    const d = event.data;
    return `${d.timerId} ${d.count} skipped ${d.firstMissed}..${d.lastMissed}: ${d.reason ?? "missed"}`;
  }
  if (isSchedulePaused(event)) return `${event.data.timerId}${event.data.reason === undefined ? "" : ` (${event.data.reason})`}${at}`;
  if (isScheduleResumed(event)) return `${event.data.timerId}${event.data.catchUp === true ? " (catch up by misfire policy)" : ""}${at}`;
  if (isScheduleEnded(event)) return `${event.data.timerId} reached ${event.data.reason}${event.data.lastTick === undefined ? "" : ` after ${event.data.lastTick}`}${at}`;
  if (isTimerCancelled(event)) return `${event.data.timerId}${event.data.reason === undefined ? "" : ` (${event.data.reason})`}${at}`;
  if (isSignalReceived(event)) return `${event.signalName} ${event.signalId} payload ${JSON.stringify(event.payload)}${at}`;
  if (isSignalConsumed(event)) return `${event.data.signalId}${event.data.stepId === undefined ? "" : ` step ${event.data.stepId}`}${at}`;
  return at.trim();
}
