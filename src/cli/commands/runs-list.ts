import { DEFAULT_REF } from "../../substrate/ref-name.js";
import { parseRepoId } from "../../workflow/ids.js";
import { checkFlags, dataDirFlag, dataDirOption, requiredFlag } from "../args.js";
import type { CliCommand } from "../command.js";
import { plural, shortSha, table } from "../format.js";
import { printJson, printLine } from "../io.js";
import { withStore } from "../with-store.js";

const NAME = "runs list";

/** The archive ref (src/workflow/run-archive.ts), named here so `--help` loads nothing. */
const ARCHIVE = "refs/archive/runs";

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
  options: { ...dataDirOption, repo: { type: "string", short: "r" }, archived: { type: "boolean" }, json: { type: "boolean" } },
  help: `Usage: workflow-host runs list --data-dir DIR --repo R [--archived] [--json]

Lists every run of deployment R at the tip of main with its last seq, whether it ended, and how
many timers and unconsumed signals it holds, then how many runs retention archived. With
--archived, lists the runs held by the archive ref ${ARCHIVE} instead (state "archived",
with the terminal event they ended with); read one with workflow-host runs show.

Options:
  -d, --data-dir DIR   data dir (default: $WORKFLOW_HOST_DATA_DIR)
  -r, --repo R         deployment id
      --archived       list the archived runs (${ARCHIVE}) instead of the live ones
      --json           print {repoId, ref, commitSha, archivedRuns, runs: [{runId, lastSeq,
                       terminal, pendingTimers, unconsumedSignals, badEvents, archived}]}
                       (ref and commitSha: what was listed; commitSha null when the archive
                       ref does not exist; archivedRuns: how many runs the archive holds)

Examples:
  workflow-host runs list -d ./data -r payments
  workflow-host runs list -d ./data -r payments --archived
`,
  async run(values, io) {
    const dataDir = dataDirFlag(NAME, values, io);
    const repoId = checkFlags(NAME, () => parseRepoId(requiredFlag(NAME, values, "repo")));
    const archived = values["archived"] === true;
    const ref = archived ? ARCHIVE : DEFAULT_REF;
    const { commitSha, runs, archivedRuns } = await withStore(dataDir, io, async (store) => {
      const [{ REPO_OR_RUN_ID_PATTERN }, { runsPrefix }, { readRunLog }, { WORKFLOW_RUN_KIND }, { openArchive }] = await Promise.all([
        import("../../workflow/ids.js"),
        import("../../workflow/paths.js"),
        import("../../workflow/run-log.js"),
        import("../../workflow/workflow-run-kind.js"),
        import("../../workflow/run-archive.js"),
      ]);
      const repo = { kind: WORKFLOW_RUN_KIND, id: repoId };
      // Main first: a deployment that does not exist is repo_not_found.
      const live = await store.openCommittedReads(null, repo, DEFAULT_REF);
      const archive = await openArchive(store, null, repo);
      const archiveRuns = archive === null ? [] : (await archive.listDir(runsPrefix.slice(0, -1))).filter((e) => e.type === "tree");
      const reads = archived ? archive : live;
      const out: RunRow[] = [];
      for (const entry of reads === null ? [] : await reads.listDir(runsPrefix.slice(0, -1))) {
        if (reads === null || entry.type !== "tree" || !REPO_OR_RUN_ID_PATTERN.test(entry.name)) continue;
        const log = await readRunLog(reads, entry.name);
        out.push({
          runId: entry.name,
          lastSeq: log.state.lastSeq,
          terminal: log.state.terminal,
          pendingTimers: log.state.pendingTimers.size,
          unconsumedSignals: log.state.unconsumedSignals.length,
          badEvents: log.bad.length,
          archived,
        });
      }
      return { commitSha: reads?.commitSha ?? null, runs: out, archivedRuns: archiveRuns.length };
    });
    if (values["json"] === true) {
      printJson(io, { repoId, ref, commitSha, archivedRuns, runs });
      return 0;
    }
    const where = archived ? `${ARCHIVE} ${commitSha === null ? "(none yet)" : shortSha(commitSha)}` : `main ${shortSha(commitSha)}`;
    if (runs.length === 0) {
      printLine(io, `no ${archived ? "archived " : ""}runs in ${repoId} (${where})`);
    } else {
      const state = (r: RunRow): string => (r.archived ? `archived (${r.terminal ?? "not ended"})` : (r.terminal ?? "running"));
      const rows = runs.map((r) => [r.runId, String(r.lastSeq), state(r), String(r.pendingTimers), String(r.unconsumedSignals), String(r.badEvents)]);
      for (const line of table(["RUN", "LAST SEQ", "STATE", "TIMERS", "SIGNALS", "BAD"], rows)) printLine(io, line);
    }
    if (!archived && archivedRuns > 0) printLine(io, `${plural(archivedRuns, "archived run")} in ${ARCHIVE} (list them with workflow-host runs list --archived)`);
    return 0;
  },
};
