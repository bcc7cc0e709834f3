import type { TimerSpec } from "../../workflow/timer-spec.js";
import { parseRepoId, parseRunId, parseTimerId } from "../../workflow/ids.js";
import { eventPath } from "../../workflow/paths.js";
import type { MisfirePolicy } from "../../workflow/types.js";
import { checkFlags, choiceFlag, dataDirFlag, dataDirOption, intFlag, requiredFlag, stringFlag, usageError } from "../args.js";
import type { CliCommand } from "../command.js";
import { dueIn, shortSha } from "../format.js";
import { printJson, printLine } from "../io.js";
import { withStore } from "../with-store.js";

const NAME = "timer set";
// 100 years: far enough for any real timer, small enough to stay a valid instant.
const MAX_DELAY_MS = 100 * 365 * 86_400_000;

/** `timer set`: appends a TimerSet (one-shot or cron series) to a run's log. */
export const timerSetCommand: CliCommand = {
  name: ["timer", "set"],
  summary: "arm a one-shot timer or a cron series (appends TimerSet)",
  options: {
    ...dataDirOption,
    repo: { type: "string", short: "r" },
    run: { type: "string" },
    timer: { type: "string", short: "t" },
    "fire-at": { type: "string" },
    "delay-ms": { type: "string" },
    cron: { type: "string" },
    timezone: { type: "string" },
    misfire: { type: "string" },
    step: { type: "string" },
    json: { type: "boolean" },
  },
  help: `Usage: workflow-host timer set --data-dir DIR --repo R --run X --timer T
                             (--fire-at ISO | --delay-ms N | --cron EXPR [--timezone Z] [--misfire P])
                             [--step S] [--json]

Appends a TimerSet to runs/<X>/events/ of deployment R, as the runtime's setTimer does: a
timer id already armed differently is re-armed (a reschedule); the same request already armed,
or a one-shot that already fired at that instant, writes nothing and prints its TimerSet. A running host arms it at once (it tails the log); without a
running host it fires when one starts, even if it is overdue by then. A run retention archived
takes no more events: run_archived (exit 1).

Options:
  -d, --data-dir DIR   data dir (default: $WORKFLOW_HOST_DATA_DIR)
  -r, --repo R         deployment id
      --run X          run id: 1-128 of A-Z a-z 0-9 _ -
  -t, --timer T        timer id: 1-256 of A-Z a-z 0-9 _ . : -, starting with a letter or digit
      --fire-at ISO    fire at this RFC 3339 instant with an offset (2026-05-01T10:00:00Z)
      --delay-ms N     fire N milliseconds from now
      --cron EXPR      a cron series: 5 fields, or 6 with seconds first
      --timezone Z     IANA zone of the series (default UTC, never the host's zone)
      --misfire P      missed ticks of the series: skip (default) | latest | all
      --step S         step id to record with the timer
      --json           print {repoId, runId, timerId, fireAt, seq, path, commitSha}

Examples:
  workflow-host timer set -d ./data -r payments --run order-17 -t reminder --delay-ms 60000
  workflow-host timer set -d ./data -r payments --run order-17 -t due --fire-at 2026-05-01T09:00:00+02:00
  workflow-host timer set -d ./data -r reports --run nightly -t tick --cron "0 2 * * *" --timezone Europe/Berlin
`,
  async run(values, io) {
    const dataDir = dataDirFlag(NAME, values, io);
    const repoId = checkFlags(NAME, () => parseRepoId(requiredFlag(NAME, values, "repo")));
    const runId = checkFlags(NAME, () => parseRunId(requiredFlag(NAME, values, "run")));
    const fireAtFlag = stringFlag(values, "fire-at");
    const delayMs = intFlag(NAME, values, "delay-ms", { min: 0, max: MAX_DELAY_MS });
    const cron = stringFlag(values, "cron");
    const given = [fireAtFlag, delayMs, cron].filter((v) => v !== undefined).length;
    if (given !== 1) throw usageError(NAME, "give exactly one of --fire-at, --delay-ms, --cron");
    const timezone = stringFlag(values, "timezone");
    if (cron === undefined && (timezone !== undefined || values["misfire"] !== undefined)) {
      throw usageError(NAME, "--timezone and --misfire apply to --cron only");
    }
    const misfire = values["misfire"] === undefined ? undefined : choiceFlag<MisfirePolicy>(NAME, values, "misfire", ["skip", "latest", "all"], "skip");
    const step = stringFlag(values, "step");
    const now = io.clock();
    const nowIso = now.toISOString();
    const timerId = checkFlags(NAME, () => parseTimerId(requiredFlag(NAME, values, "timer")));
    const base = { timerId, ...(step === undefined ? {} : { stepId: step }), ...(misfire === undefined ? {} : { misfire }) };
    const spec: TimerSpec =
      cron !== undefined
        ? { ...base, cron, ...(timezone === undefined ? {} : { timezone }) }
        : delayMs !== undefined
          ? { ...base, delayMs }
          : { ...base, fireAt: fireAtFlag ?? "" };
    const [{ resolveTimerSpec }, { setTimerDurably }, { openRunLog }] = await Promise.all([
      import("../../workflow/timer-spec.js"),
      import("../../../seams/scheduler/set-timer.js"),
      import("../../workflow/run-log-writer.js"),
    ]);
    // A bad --fire-at, --cron or --timezone is a bad flag value, like a bad --delay-ms.
    const data = checkFlags(NAME, () => resolveTimerSpec(spec, now.getTime()));
    const fireAt = data.fireAt;
    const series = data.cron === undefined ? undefined : { cron: data.cron, timezone: data.timezone ?? "UTC" };

    // The runtime's setTimer verb: the same request already armed commits nothing.
    const outcome = await withStore(dataDir, io, (store) => setTimerDurably(openRunLog({ store, principal: null, repoId, requireWhole: true }), runId, data, nowIso, `Set timer ${timerId} of ${runId}`));
    const seq = outcome.setSeq;
    const path = eventPath(runId, seq);
    if (values["json"] === true) {
      printJson(io, { repoId, runId, timerId, fireAt, ...(series ?? {}), ...(misfire === undefined ? {} : { misfire }), seq, path, commitSha: outcome.commitSha });
    } else {
      const what = series === undefined ? "fires" : `(cron "${series.cron}" ${series.timezone}) next fires`;
      printLine(io, `TimerSet seq ${seq} (${path}, commit ${shortSha(outcome.commitSha)}): timer ${timerId} of ${runId} ${what} at ${fireAt} (${dueIn(Date.parse(fireAt) - now.getTime())})`);
    }
    return 0;
  },
};
