/**
 * `dispatch list|retry|skip|status`: a consumer's dead letters and lag, read from (and released
 * on) its ref `refs/consumers/<name>` in each deployment. Safe next to a running host: the host
 * writes that ref by compare-and-swap too and picks up released events through its watcher.
 */
import type { ConsumerLag } from "../../../seams/dispatch/consumer-report.js";
import { parseConsumerName } from "../../../seams/dispatch/dispatch-keys.js";
import { parseRepoId } from "../../workflow/ids.js";
import type { RepoStore } from "../../substrate/types.js";
import { checkFlags, dataDirFlag, dataDirOption, requiredFlag, stringFlag, usageError, type FlagValues } from "../args.js";
import type { CliCommand } from "../command.js";
import { duration, shortSha, table } from "../format.js";
import { printJson, printLine, type CliIo } from "../io.js";
import { withStore } from "../with-store.js";

const common = {
  ...dataDirOption,
  consumer: { type: "string", short: "c" },
  repo: { type: "string", short: "r" },
  json: { type: "boolean" },
} as const;

// The kind handler and the consumer state pull in the event schemas: they are loaded when a
// command runs, so `--help` stays quick.
async function repoIds(store: RepoStore, kind: string, name: string, values: FlagValues): Promise<string[]> {
  const one = stringFlag(values, "repo");
  return one === undefined ? store.listRepos(null, kind) : [checkFlags(name, () => parseRepoId(one))];
}

async function lags(name: string, values: FlagValues, io: CliIo): Promise<{ consumer: string; rows: ConsumerLag[] }> {
  const dataDir = dataDirFlag(name, values, io);
  const consumer = checkFlags(name, () => parseConsumerName(requiredFlag(name, values, "consumer")));
  const [{ consumerLag }, { WORKFLOW_RUN_KIND }] = await Promise.all([import("../../../seams/dispatch/consumer-report.js"), import("../../workflow/workflow-run-kind.js")]);
  return withStore(dataDir, io, async (store) => {
    const out: ConsumerLag[] = [];
    for (const repoId of await repoIds(store, WORKFLOW_RUN_KIND, name, values)) {
      if ((await store.resolveRef(null, { kind: WORKFLOW_RUN_KIND, id: repoId }, `refs/consumers/${consumer}`)) === null) continue;
      out.push(await consumerLag(store, null, repoId, consumer, io.clock().getTime()));
    }
    return { consumer, rows: out };
  });
}

export const dispatchStatusCommand: CliCommand = {
  name: ["dispatch", "status"],
  summary: "a consumer's lag (events and ms) and dead letters per deployment",
  options: common,
  help: `Usage: workflow-host dispatch status --data-dir DIR --consumer NAME [--repo R] [--json]

For each deployment where the consumer has run (it has the ref refs/consumers/NAME): its
cursor, how many TimerFired/TimerSkipped/SignalReceived/terminal events were committed after
it and are not recorded as done (lag), how old the oldest of them is (lag ms, from its firedAt
or at), and how many events are parked, released for a retry, or failing.

Options:
  -d, --data-dir DIR    data dir (default: $WORKFLOW_HOST_DATA_DIR)
  -c, --consumer NAME   consumer name
  -r, --repo R          one deployment (default: all)
      --json            print {consumer, deployments: [{consumer, repoId, cursor, mainSha, lagEvents,
                        lagMs, parked, retrying, failing}]}

Example:
  workflow-host dispatch status -d ./data -c billing
`,
  async run(values, io) {
    const { consumer, rows } = await lags("dispatch status", values, io);
    if (values["json"] === true) {
      printJson(io, { consumer, deployments: rows.map(({ parkedEvents: _, ...row }) => row) });
      return 0;
    }
    if (rows.length === 0) {
      printLine(io, "the consumer has not run in any deployment");
      return 0;
    }
    for (const line of table(
      ["deployment", "cursor", "main", "lag events", "lag", "parked", "retrying", "failing"],
      rows.map((r) => [r.repoId, shortSha(r.cursor), shortSha(r.mainSha), String(r.lagEvents), duration(r.lagMs), String(r.parked), String(r.retrying), String(r.failing)]),
    )) printLine(io, line);
    return 0;
  },
};

export const dispatchListCommand: CliCommand = {
  name: ["dispatch", "list"],
  summary: "a consumer's parked events (dead letters)",
  options: common,
  help: `Usage: workflow-host dispatch list --data-dir DIR --consumer NAME [--repo R] [--json]

Lists the events the consumer parked after its last attempt failed: deployment, event
(<runId>/<seq>), type, idempotency key, attempts, when, and the last error. Release them with
dispatch retry or dispatch skip.

Options:
  -d, --data-dir DIR    data dir (default: $WORKFLOW_HOST_DATA_DIR)
  -c, --consumer NAME   consumer name
  -r, --repo R          one deployment (default: all)
      --json            print {consumer, parked: [...]}: the parked records, each with its event

Example:
  workflow-host dispatch list -d ./data -c billing -r payments
`,
  async run(values, io) {
    const { consumer, rows } = await lags("dispatch list", values, io);
    const parked = rows.flatMap((r) => r.parkedEvents);
    if (values["json"] === true) {
      printJson(io, { consumer, parked });
      return 0;
    }
    if (parked.length === 0) {
      printLine(io, "no parked events");
      return 0;
    }
    for (const line of table(
      ["deployment", "event", "type", "idempotency key", "attempts", "parked at", "last error"],
      parked.map((p) => [p.repoId, `${p.runId}/${p.seq}`, p.event.type, p.idempotencyKey, String(p.attempts), p.parkedAt, p.lastError.slice(0, 80)]),
    )) printLine(io, line);
    return 0;
  },
};

function releaseCommand(action: "retry" | "skip"): CliCommand {
  const name = `dispatch ${action}`;
  return {
    name: ["dispatch", action],
    summary: action === "retry" ? "release parked events for new attempts" : "drop parked events (history keeps them)",
    options: { ...common, event: { type: "string", short: "e" }, all: { type: "boolean" } },
    help: `Usage: workflow-host ${name} --data-dir DIR --consumer NAME --repo R (--event RUN/SEQ | --all) [--json]

${
  action === "retry"
    ? `Moves parked events back to the consumer: a running host hands them over again within a
second (otherwise the next host that runs the consumer does), with fresh attempts; one
that fails every attempt again is parked again.`
    : `Removes parked events from the consumer's dead letters; they are not handed over again.
The commit on refs/consumers/NAME keeps what was removed (git log -p).`
}

Options:
  -d, --data-dir DIR    data dir (default: $WORKFLOW_HOST_DATA_DIR)
  -c, --consumer NAME   consumer name
  -r, --repo R          deployment
  -e, --event RUN/SEQ   one parked event, as dispatch list shows it
      --all             every parked event of the consumer in the deployment
      --json            print {consumer, repoId, action, events}

A named event that is not parked is record_not_found (exit 1).

Example:
  workflow-host ${name} -d ./data -c billing -r payments --event order-17/4
`,
    async run(values, io) {
      const dataDir = dataDirFlag(name, values, io);
      const consumer = checkFlags(name, () => parseConsumerName(requiredFlag(name, values, "consumer")));
      const repoId = checkFlags(name, () => parseRepoId(requiredFlag(name, values, "repo")));
      const one = stringFlag(values, "event");
      const all = values["all"] === true;
      if ((one === undefined) === !all) throw usageError(name, "give exactly one of --event and --all");
      const { parseEventId, releaseParked } = await import("../../../seams/dispatch/consumer-state.js");
      // A malformed event id is a usage error like a malformed consumer, found before the store opens.
      if (one !== undefined) checkFlags(name, () => parseEventId(one));
      const released = await withStore(dataDir, io, (store) => releaseParked(store, null, repoId, consumer, all ? "all" : [one as string], action, io.clock().toISOString()));
      if (values["json"] === true) printJson(io, { consumer, repoId, action, events: released });
      else printLine(io, released.length === 0 ? "no parked events" : `${action === "retry" ? "released for retry" : "skipped"}: ${released.join(", ")}`);
      return 0;
    },
  };
}

export const dispatchRetryCommand = releaseCommand("retry");
export const dispatchSkipCommand = releaseCommand("skip");

/** The four `dispatch` commands, in help order. */
export const dispatchCommands: readonly CliCommand[] = [dispatchStatusCommand, dispatchListCommand, dispatchRetryCommand, dispatchSkipCommand];
