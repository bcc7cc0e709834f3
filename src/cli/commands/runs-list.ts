import { DEFAULT_REF } from "../../substrate/ref-name.js";
import { parseRepoId } from "../../workflow/ids.js";
import { checkFlags, dataDirFlag, dataDirOption, requiredFlag } from "../args.js";
import type { CliCommand } from "../command.js";
import { shortSha, table } from "../format.js";
import { printJson, printLine } from "../io.js";
import { withStore } from "../with-store.js";

const NAME = "runs list";

interface RunRow {
  readonly runId: string;
  readonly lastSeq: number;
  readonly terminal: string | null;
  readonly pendingTimers: number;
  readonly unconsumedSignals: number;
  readonly badEvents: number;
}

/** `runs list`: the runs of one deployment with a one-line state each. */
export const runsListCommand: CliCommand = {
  name: ["runs", "list"],
  summary: "list the runs of a deployment",
  options: { ...dataDirOption, repo: { type: "string", short: "r" }, json: { type: "boolean" } },
  help: `Usage: workflow-host runs list --data-dir DIR --repo R [--json]

Lists every run of deployment R with its last seq, whether it ended, and how many timers and
unconsumed signals it holds.

Options:
  -d, --data-dir DIR   data dir (default: $WORKFLOW_HOST_DATA_DIR)
  -r, --repo R         deployment id
      --json           print {repoId, commitSha, runs: [{runId, lastSeq, terminal,
                       pendingTimers, unconsumedSignals, badEvents}]}

Example:
  workflow-host runs list -d ./data -r payments
`,
  async run(values, io) {
    const dataDir = dataDirFlag(NAME, values, io);
    const repoId = checkFlags(NAME, () => parseRepoId(requiredFlag(NAME, values, "repo")));
    const { commitSha, runs } = await withStore(dataDir, io, async (store) => {
      const [{ REPO_OR_RUN_ID_PATTERN }, { runsPrefix }, { readRunLog }, { WORKFLOW_RUN_KIND }] = await Promise.all([
        import("../../workflow/ids.js"),
        import("../../workflow/paths.js"),
        import("../../workflow/run-log.js"),
        import("../../workflow/workflow-run-kind.js"),
      ]);
      const reads = await store.openCommittedReads(null, { kind: WORKFLOW_RUN_KIND, id: repoId }, DEFAULT_REF);
      const out: RunRow[] = [];
      for (const entry of await reads.listDir(runsPrefix.slice(0, -1))) {
        if (entry.type !== "tree" || !REPO_OR_RUN_ID_PATTERN.test(entry.name)) continue;
        const log = await readRunLog(reads, entry.name);
        out.push({
          runId: entry.name,
          lastSeq: log.state.lastSeq,
          terminal: log.state.terminal,
          pendingTimers: log.state.pendingTimers.size,
          unconsumedSignals: log.state.unconsumedSignals.length,
          badEvents: log.bad.length,
        });
      }
      return { commitSha: reads.commitSha, runs: out };
    });
    if (values["json"] === true) {
      printJson(io, { repoId, commitSha, runs });
    } else if (runs.length === 0) {
      printLine(io, `no runs in ${repoId} (main ${shortSha(commitSha)})`);
    } else {
      const rows = runs.map((r) => [r.runId, String(r.lastSeq), r.terminal ?? "running", String(r.pendingTimers), String(r.unconsumedSignals), String(r.badEvents)]);
      for (const line of table(["RUN", "LAST SEQ", "STATE", "TIMERS", "SIGNALS", "BAD"], rows)) printLine(io, line);
    }
    return 0;
  },
};
