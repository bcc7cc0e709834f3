import { DuplicateJsonKeyError, parseJsonText } from "../../config-json.js";
import { parseRepoId, parseRunId, parseSignalId, parseSignalName } from "../../workflow/ids.js";
import { assertJsonValue } from "../../workflow/json-value.js";
import { checkFlags, dataDirFlag, dataDirOption, requiredFlag, stringFlag, usageError } from "../args.js";
import type { CliCommand } from "../command.js";
import { printJson, printLine } from "../io.js";
import { withStore } from "../with-store.js";

const NAME = "signal send";

/** `signal send`: delivers a named signal into a run's log (deduplicated by signal id). */
export const signalSendCommand: CliCommand = {
  name: ["signal", "send"],
  summary: "deliver a signal to a run (appends SignalReceived, deduplicated by --id)",
  options: {
    ...dataDirOption,
    repo: { type: "string", short: "r" },
    run: { type: "string" },
    name: { type: "string", short: "n" },
    payload: { type: "string", short: "p" },
    id: { type: "string" },
    json: { type: "boolean" },
  },
  help: `Usage: workflow-host signal send --data-dir DIR --repo R --run X --name N [--payload JSON] [--id ID] [--json]

Appends SignalReceived to the run's log. A workflow waiting for N (runtime.waitForSignal) in
a running host receives it within the host's watch interval; a signal sent before anyone waits
is kept and handed to the first waiter. Sending the same --id again is a duplicate: nothing is
written and the first delivery's seq is reported. Without --id a random id is used. A run
with no log is started by its first signal (seq 1), as over HTTP and through the runtime: a
workflow may wait for a signal before it wrote anything. A run retention archived takes no
more events: run_archived (exit 1).

Options:
  -d, --data-dir DIR   data dir (default: $WORKFLOW_HOST_DATA_DIR)
  -r, --repo R         deployment id
      --run X          run id
  -n, --name N         signal name: 1-256 of A-Z a-z 0-9 _ . : -
  -p, --payload JSON   JSON payload (default null); the event is at most 1 MiB
      --id ID          signal id, the dedupe key (retry-safe sends)
      --json           print {repoId, runId, signalName, signalId, seq, duplicate}

Examples:
  workflow-host signal send -d ./data -r payments --run order-17 -n approve --payload '{"by":"ana"}'
  workflow-host signal send -d ./data -r payments --run order-17 -n approve --id approval-17
`,
  async run(values, io) {
    const dataDir = dataDirFlag(NAME, values, io);
    const repoId = checkFlags(NAME, () => parseRepoId(requiredFlag(NAME, values, "repo")));
    const runId = checkFlags(NAME, () => parseRunId(requiredFlag(NAME, values, "run")));
    const signalName = checkFlags(NAME, () => parseSignalName(requiredFlag(NAME, values, "name")));
    const rawId = stringFlag(values, "id");
    const signalId = rawId === undefined ? undefined : checkFlags(NAME, () => parseSignalId(rawId));
    const rawPayload = stringFlag(values, "payload");
    let payload: unknown = null;
    if (rawPayload !== undefined) {
      try {
        payload = parseJsonText(rawPayload);
      } catch (error) {
        if (error instanceof DuplicateJsonKeyError) throw usageError(NAME, `--payload is not valid: ${error.message}`);
        throw usageError(NAME, `--payload is not JSON: ${rawPayload.length > 60 ? `${rawPayload.slice(0, 57)}...` : rawPayload}`);
      }
    }
    // Parsed JSON that is still no event payload (nested too deep) is a bad flag value too.
    checkFlags(NAME, () => assertJsonValue(payload, "payload"));
    const result = await withStore(dataDir, io, async (store) => {
      const { createWorkflowHostSignalChannel } = await import("../../../seams/signals/signal-channel.js");
      const channel = createWorkflowHostSignalChannel({ store: store, principal: null, repoId, runId, clock: io.clock });
      try {
        return await channel.deliver(signalName, payload, signalId);
      } finally {
        await channel.stop();
      }
    });
    if (values["json"] === true) printJson(io, { repoId, runId, signalName, ...result });
    else if (result.duplicate) printLine(io, `duplicate: signal ${result.signalId} was already delivered to ${runId} at seq ${result.seq}; nothing written`);
    else printLine(io, `delivered ${signalName} to ${runId} as seq ${result.seq} (signalId ${result.signalId})`);
    return 0;
  },
};
