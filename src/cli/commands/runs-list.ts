import { DEFAULT_REF } from "../../substrate/ref-name.js";
import { parseRepoId, parseRunId } from "../../workflow/ids.js";
import { checkFlags, dataDirFlag, dataDirOption, intFlag, MAX_LIST_LIMIT, requiredFlag, stringFlag } from "../args.js";
import type { CliCommand } from "../command.js";
import { oneLine, plural, shortSha, table } from "../format.js";
import { printJson, printLine } from "../io.js";
import { withStore } from "../with-store.js";
import { shellQuote } from "./paths.js";

const NAME = "runs list";

/** The archive ref (src/workflow/run-archive.ts), named here so `--help` loads nothing. */
const ARCHIVE = "refs/archive/runs";

/** Runs `--archived` lists when no `--limit` is given: each listed run's log is read. */
export const DEFAULT_ARCHIVED_LIMIT = 1_000;
/** Largest `--limit`. */
const MAX_LIMIT = MAX_LIST_LIMIT;
/** A listing that reads logs for longer than this says how far it got on stderr, then as often (ms). */
const PROGRESS_EVERY_MS = 2_000;
/** A count with thousands separators. */
const num = (n: number): string => n.toLocaleString("en-US");

/** A listed run whose folder or events/ folder could not be read, or that holds no log (its events entry is no folder). */
interface UnreadableRow {
  readonly runId: string;
  readonly path: string;
  readonly code: string;
  readonly message: string;
}

interface RunRow {
  readonly runId: string;
  readonly lastSeq: number;
  readonly terminal: string | null;
  readonly pendingTimers: number;
  readonly unconsumedSignals: number;
  readonly badEvents: number;
  /** True for a run read from the archive ref. */
  readonly archived: boolean;
}

/** `runs list`: the runs of one deployment with a one-line state each; `--archived`: those retention moved out. */
export const runsListCommand: CliCommand = {
  name: ["runs", "list"],
  summary: "list the runs of a deployment (--archived: the runs retention archived)",
  options: { ...dataDirOption, repo: { type: "string", short: "r" }, archived: { type: "boolean" }, limit: { type: "string" }, after: { type: "string" }, json: { type: "boolean" } },
  help: `Usage: workflow-host runs list --data-dir DIR --repo R [--archived] [--limit N] [--after RUN] [--json]

Lists the runs of deployment R at the tip of main with its last seq, whether it ended, and how
many timers and unconsumed signals it holds, then how many runs retention archived.
With --archived, lists the runs held by the archive ref ${ARCHIVE} instead (state "archived",
with the terminal event they ended with); read one with workflow-host runs show.

Runs are listed by run id (plain byte order). Each listed run's log is read (event by
event, never held whole: a long log costs time, not memory), so a
long listing is read a page at a time: --limit N lists at most N runs (default: all of main;
${num(DEFAULT_ARCHIVED_LIMIT)} of the archive, which only grows), and --after RUN starts after run RUN; the
last line (--json: nextAfter) says where the next page starts. Counting the archived runs reads
no log. A listing that reads logs for more than ${PROGRESS_EVERY_MS / 1000} s says how far it got on stderr.

Options:
  -d, --data-dir DIR   data dir (default: $WORKFLOW_HOST_DATA_DIR)
  -r, --repo R         deployment id
      --archived       list the archived runs (${ARCHIVE}) instead of the live ones
      --limit N        list at most N runs (1..${num(MAX_LIMIT)})
      --after RUN      list the runs after run id RUN (the previous page's last)
      --json           print {repoId, ref, commitSha, archivedRuns, runs: [{runId, lastSeq,
                       terminal, pendingTimers, unconsumedSignals, badEvents, archived}],
                       unreadableRuns: [{runId, path, code, message}], nextAfter} (ref and
                       commitSha: what was listed; commitSha null when the archive ref does
                       not exist; archivedRuns: how many runs the archive holds;
                       unreadableRuns: the runs of the page that could not be read;
                       nextAfter: the --after of the next page, null after the last)

A run whose folder or events/ folder cannot be read (object_missing: not in the repository;
object_corrupt: damaged), or whose events entry is a file or a link, not a folder (event_invalid,
as check names it), is listed with state "unreadable (<code>)" and named on stderr, the other
runs are listed as usual, and the exit code is 1; workflow-host check names the object.

Examples:
  workflow-host runs list -d ./data -r payments
  workflow-host runs list -d ./data -r payments --archived
  workflow-host runs list -d ./data -r payments --archived --limit 500 --after order-0042
`,
  async run(values, io) {
    const dataDir = dataDirFlag(NAME, values, io);
    const repoId = checkFlags(NAME, () => parseRepoId(requiredFlag(NAME, values, "repo")));
    const archived = values["archived"] === true;
    const limit = checkFlags(NAME, () => intFlag(NAME, values, "limit", { min: 1, max: MAX_LIMIT }, archived ? DEFAULT_ARCHIVED_LIMIT : MAX_LIMIT) ?? MAX_LIMIT);
    const after = checkFlags(NAME, () => {
      const raw = stringFlag(values, "after");
      return raw === undefined ? null : parseRunId(raw, "after");
    });
    const ref = archived ? ARCHIVE : DEFAULT_REF;
    const { commitSha, runs, unreadableRuns, archivedRuns, nextAfter } = await withStore(dataDir, io, async (store) => {
      const [{ REPO_OR_RUN_ID_PATTERN }, { runsPrefix }, { summarizeRunLog }, { WORKFLOW_RUN_KIND }, { openArchive }, { readRunOrReport, requireWholeRunLog }] = await Promise.all([
        import("../../workflow/ids.js"),
        import("../../workflow/paths.js"),
        import("../../workflow/run-log-summary.js"),
        import("../../workflow/workflow-run-kind.js"),
        import("../../workflow/run-archive.js"),
        import("../../workflow/unreadable-runs.js"),
      ]);
      const repo = { kind: WORKFLOW_RUN_KIND, id: repoId };
      // Main first: a deployment that does not exist is repo_not_found.
      const live = await store.openCommittedReads(null, repo, DEFAULT_REF);
      const archive = await openArchive(store, null, repo);
      // Counted from the archive's listing alone: no archived log is read for the count.
      const archiveRuns = archive === null ? [] : (await archive.listDir(runsPrefix.slice(0, -1))).filter((e) => e.type === "tree");
      const reads = archived ? archive : live;
      const listed = (reads === null ? [] : archived ? archiveRuns : await reads.listDir(runsPrefix.slice(0, -1))).filter(
        (entry) => entry.type === "tree" && REPO_OR_RUN_ID_PATTERN.test(entry.name) && (after === null || entry.name > after),
      );
      const page = listed.slice(0, limit);
      const out: RunRow[] = [];
      const unreadable: UnreadableRow[] = [];
      const startedMs = io.clock().getTime();
      let toldMs = startedMs;
      for (const entry of page) {
        if (reads === null) break;
        // The state needs the whole log, folded event by event (none held): a run of a million
        // events costs time here, never memory. Kept in the process-wide summary cache (by run
        // tree oid) with the limits a run's view asks for, so the two share one fold per version.
        // A run whose folders cannot be read, whose events entry is no folder (a file or a link
        // pushed with git: no log, as check names it), or whose log was not read whole (an event
        // lost or damaged: its state is not known) is named; the others are listed.
        const read = await readRunOrReport(entry.name, async () => requireWholeRunLog(repoId, await summarizeRunLog(reads, entry.name)));
        if (read.unreadable !== null) {
          const { error, path } = read.unreadable;
          unreadable.push({ runId: entry.name, path, code: error.code, message: error.message });
          continue;
        }
        const summary = read.value;
        out.push({
          runId: entry.name,
          lastSeq: summary.state.lastSeq,
          terminal: summary.state.terminal,
          pendingTimers: summary.state.pendingTimers.size,
          unconsumedSignals: summary.state.unconsumedSignals.length,
          badEvents: summary.badCount,
          archived,
        });
        const nowMs = io.clock().getTime();
        if (nowMs - toldMs >= PROGRESS_EVERY_MS) {
          toldMs = nowMs;
          io.stderr.write(`runs list: read ${num(out.length + unreadable.length)} of ${num(page.length)} logs (${archived ? ARCHIVE : "main"})\n`);
        }
      }
      const more = listed.length > page.length;
      return { commitSha: reads?.commitSha ?? null, runs: out, unreadableRuns: unreadable, archivedRuns: archiveRuns.length, nextAfter: more ? (page.at(-1)?.name ?? null) : null };
    });
    // A run that could not be read hides nothing else: it is named, and the exit code is 1.
    for (const u of unreadableRuns) io.stderr.write(`workflow-host: run ${u.runId} cannot be read: ${oneLine(u.message)}\n`);
    const code = unreadableRuns.length === 0 ? 0 : 1;
    if (values["json"] === true) {
      printJson(io, { repoId, ref, commitSha, archivedRuns, runs, unreadableRuns, nextAfter });
      return code;
    }
    const where = archived ? `${ARCHIVE} ${commitSha === null ? "(none yet)" : shortSha(commitSha)}` : `main ${shortSha(commitSha)}`;
    if (runs.length === 0 && unreadableRuns.length === 0) {
      printLine(io, `no ${archived ? "archived " : ""}runs ${after === null ? "" : `after ${after} `}in ${repoId} (${where})`);
    } else {
      const state = (r: RunRow): string => (r.archived ? `archived (${r.terminal ?? "not ended"})` : (r.terminal ?? "running"));
      // The rows in run id order, an unreadable run in its place.
      const rows = [
        ...runs.map((r) => [r.runId, String(r.lastSeq), state(r), String(r.pendingTimers), String(r.unconsumedSignals), String(r.badEvents)]),
        ...unreadableRuns.map((u) => [u.runId, "-", `unreadable (${u.code})`, "-", "-", "-"]),
      ].sort((a, b) => ((a[0] as string) < (b[0] as string) ? -1 : (a[0] as string) > (b[0] as string) ? 1 : 0));
      for (const line of table(["RUN", "LAST SEQ", "STATE", "TIMERS", "SIGNALS", "BAD"], rows)) printLine(io, line);
    }
    // Commands that run as printed: the data dir as resolved, the page size as given.
    const base = `workflow-host runs list -d ${shellQuote(dataDir)} -r ${repoId}`;
    const pageSize = values["limit"] === undefined ? "" : ` --limit ${limit}`;
    if (nextAfter !== null) printLine(io, `more runs follow: ${base}${archived ? " --archived" : ""}${pageSize} --after ${nextAfter}`);
    if (!archived && archivedRuns > 0) printLine(io, `${plural(archivedRuns, "archived run")} in ${ARCHIVE} (list them with ${base} --archived)`);
    if (unreadableRuns.length > 0) printLine(io, `${plural(unreadableRuns.length, "run")} could not be read; workflow-host check -d ${shellQuote(dataDir)} -r ${repoId} names the objects`);
    return code;
  },
};

