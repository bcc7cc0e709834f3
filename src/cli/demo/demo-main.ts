/**
 * The `demo` command's work, loaded only when the demo runs (it pulls in the whole host).
 */
import { isTimerSkipped } from "../../workflow/event-guards.js";
import { DEFAULT_REF } from "../../substrate/ref-name.js";
import { isAbsolute, relative as relativePath, resolve } from "node:path";
import { WORKFLOW_RUN_KIND } from "../../workflow/workflow-run-kind.js";
import { runsPrefix } from "../../workflow/paths.js";
import { readRunLog } from "../../workflow/run-log.js";
import { openWorkflowStore } from "../../host/open-workflow-store.js";
import type { FlagValues } from "../args.js";
import { stringFlag } from "../args.js";
import { createCliLogger } from "../cli-logger.js";
import { duration } from "../format.js";
import type { CliIo } from "../io.js";
import { printLine } from "../io.js";
import { gitdirOf, shellQuote } from "../commands/paths.js";
import { cliInvocation } from "./cli-invocation.js";
import { resetDemoDataDir } from "./demo-data-dir.js";
import { DEMO_REPO, DEMO_STORIES, runDemoScenario } from "./demo-scenario.js";
import { printSummary, type RunSummary } from "./demo-view.js";

/**
 * Runs the demo on `--data-dir` (default `defaultDir`).
 * @returns the exit code: 0 when everything happened, 1 when interrupted or incomplete
 */
export async function runDemo(values: FlagValues, io: CliIo, defaultDir: string): Promise<number> {
  const raw = stringFlag(values, "data-dir") ?? defaultDir;
  const dataDir = isAbsolute(raw) ? raw : resolve(io.cwd, raw);
  const logger = createCliLogger(io);
  const beganMs = io.clock().getTime();
  printLine(io, `workflow-host demo: data dir ${dataDir}`);
  const { cleared } = await resetDemoDataDir(dataDir, logger);
  if (cleared) printLine(io, "(cleared the previous demo's data)");
  const { missing, interrupted } = await runDemoScenario(io, dataDir, logger);
  if (interrupted) {
    printLine(io, "interrupted: host stopped, lock released");
    return 1;
  }
  printLine(io);
  printLine(io, "summary (read back from the log):");
  printSummary(io, await summarize(dataDir, io));
  printLine(io);
  const gitdir = gitdirOf(dataDir, DEMO_REPO);
  const shown = relativeOrAbsolute(io.cwd, gitdir);
  printLine(io, "every event is a file and every change a commit; read the log with plain git:");
  printLine(io, `  git --git-dir=${shellQuote(shown)} log --stat`);
  printLine(io, `  git --git-dir=${shellQuote(shown)} show main:runs/approval-9/events/`);
  // As this person runs the CLI: npm run cli -- (this repository), npx workflow-host (installed).
  const cli = cliInvocation({ moduleUrl: import.meta.url, entryPath: io.entryPath, env: io.env });
  printLine(io, "or with this CLI:");
  printLine(io, `  ${cli} timers --data-dir ${shellQuote(relativeOrAbsolute(io.cwd, dataDir))}`);
  printLine(io, `  ${cli} runs show --data-dir ${shellQuote(relativeOrAbsolute(io.cwd, dataDir))} --repo ${DEMO_REPO} --run approval-9`);
  printLine(io);
  if (missing.length > 0) {
    printLine(io, `demo incomplete after ${duration(io.clock().getTime() - beganMs)}: ${missing.join("; ")}`);
    return 1;
  }
  printLine(io, `demo finished in ${duration(io.clock().getTime() - beganMs)}: timers fired, missed cron ticks skipped, signal delivered`);
  return 0;
}

async function summarize(dataDir: string, io: CliIo): Promise<RunSummary[]> {
  const store = openWorkflowStore({ dataDir, watch: false, clock: io.clock });
  try {
    const reads = await store.openCommittedReads(null, { kind: WORKFLOW_RUN_KIND, id: DEMO_REPO }, DEFAULT_REF);
    const rows: RunSummary[] = [];
    for (const entry of await reads.listDir(runsPrefix.slice(0, -1))) {
      const log = await readRunLog(reads, entry.name);
      const count = (type: string): number => log.events.filter((e) => e.type === type).length;
      const skipped = log.events
        .filter(isTimerSkipped)
        .reduce((n, e) => n + e.data.count, 0);
      const pending = log.state.pendingTimers.size;
      rows.push({
        runId: entry.name,
        story: DEMO_STORIES[entry.name] ?? "",
        events: log.events.length,
        fired: count("TimerFired"),
        skippedTicks: skipped,
        signals: count("SignalReceived"),
        state: log.state.terminal ?? (pending > 0 ? `running, ${pending} timer pending` : "running"),
      });
    }
    return rows;
  } finally {
    await store.close();
  }
}

function relativeOrAbsolute(cwd: string, path: string): string {
  const rel = relativePath(cwd, path);
  return rel.startsWith("..") || isAbsolute(rel) ? path : `./${rel}`;
}
