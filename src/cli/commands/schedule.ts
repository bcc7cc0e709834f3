/**
 * `schedule list|describe|preview|pause|resume|trigger|backfill|sync`: cron series as schedules
 * (seams/scheduler/schedule-controls.ts). Every write is an event in the run's log, decided under the
 * repo lock, so these are safe next to a running host, which picks them up through its tail.
 */
import { DuplicateJsonKeyError, parseJsonText } from "../../config-json.js";
import { readConfigFile } from "../read-config-file.js";
import { resolve } from "node:path";
import type { ScheduleControls } from "../../../seams/scheduler/schedule-controls.js";
import { WorkflowHostError } from "../../errors.js";
import type { RepoStore } from "../../substrate/types.js";
import { parseRepoId, parseRunId, parseSignalId, parseTimerId } from "../../workflow/ids.js";
import { parseInstant } from "../../workflow/time.js";
import { checkReason } from "../../workflow/event-constructors.js";
import type { PreviewTick } from "../../workflow/schedule/preview.js";
import { checkFlags, dataDirFlag, dataDirOption, intFlag, requiredFlag, usageError, stringFlag, type FlagValues } from "../args.js";
import type { CliCommand } from "../command.js";
import { duration, errorLine, shortSha, table } from "../format.js";
import { printJson, printLine, type CliIo } from "../io.js";
import { withStore } from "../with-store.js";

const series = { ...dataDirOption, repo: { type: "string", short: "r" }, run: { type: "string" }, timer: { type: "string", short: "t" }, json: { type: "boolean" } } as const;

const SERIES_FLAGS = `  -d, --data-dir DIR   data dir (default: $WORKFLOW_HOST_DATA_DIR)
  -r, --repo R         deployment id
      --run X          run id
  -t, --timer T        timer id of the cron series`;

interface Target {
  readonly repoId: string;
  readonly runId: string;
  readonly timerId: string;
}

function target(name: string, values: FlagValues): Target {
  return {
    repoId: checkFlags(name, () => parseRepoId(requiredFlag(name, values, "repo"))),
    runId: checkFlags(name, () => parseRunId(requiredFlag(name, values, "run"))),
    timerId: checkFlags(name, () => parseTimerId(requiredFlag(name, values, "timer"))),
  };
}

/** Runs `work` with schedule controls over the data dir (loaded on use, so `--help` stays quick). */
async function withControls<T>(name: string, values: FlagValues, io: CliIo, work: (controls: ScheduleControls, store: RepoStore) => Promise<T>): Promise<T> {
  const dataDir = dataDirFlag(name, values, io);
  const { createScheduleControls } = await import("../../../seams/scheduler/schedule-controls.js");
  return withStore(dataDir, io, (store) => work(createScheduleControls({ store, principal: null, clock: io.clock }), store));
}

function printTicks(io: CliIo, ticks: readonly PreviewTick[]): void {
  for (const line of table(["slot", "utc", "local", "jittered"], ticks.map((t) => [String(t.slot), t.utc, t.local, t.jitteredFor ?? "-"]))) printLine(io, `  ${line}`);
}

export const scheduleListCommand: CliCommand = {
  name: ["schedule", "list"],
  summary: "armed cron series of a deployment: next slot, paused, owner, bounds",
  options: { ...dataDirOption, repo: { type: "string", short: "r" }, json: { type: "boolean" } },
  help: `Usage: workflow-host schedule list --data-dir DIR --repo R [--json]

Lists every armed cron series (a TimerSet with cron that nothing ended) of deployment R: its
run, timer, expression and zone, the armed slot, whether it is paused, who owns it ("sync" for
series that schedule sync manages), and its bounds.

Options:
  -d, --data-dir DIR   data dir (default: $WORKFLOW_HOST_DATA_DIR)
  -r, --repo R         deployment id
      --json           print {repoId, series: [{runId, timerId, cron, timezone, nextAt, paused,
                       pausedAt, owner, misfire, startAt, endAt, maxTicks, slot, jitterMs}],
                       unreadableRuns: [{runId, path, code, message}]}

A run whose folder or events/ folder cannot be read (object_missing, object_corrupt), or whose
events entry is a file or a link (event_invalid: it holds no log), is named on stderr (and in
unreadableRuns); the other runs' series are listed and the exit code is 1.

Example:
  workflow-host schedule list -d ./data -r reports
`,
  async run(values, io) {
    const name = "schedule list";
    const repoId = checkFlags(name, () => parseRepoId(requiredFlag(name, values, "repo")));
    const { series: list, unreadableRuns } = await withControls(name, values, io, (c) => c.listSeries(repoId));
    const code = unreadableRuns.length === 0 ? 0 : 1;
    for (const u of unreadableRuns) io.stderr.write(`workflow-host: run ${u.runId} cannot be read (its series are not listed): ${errorLine(u.error)}\n`);
    if (values["json"] === true) {
      printJson(io, { repoId, series: list, unreadableRuns: unreadableRuns.map(unreadableJson) });
      return code;
    }
    if (list.length === 0) {
      printLine(io, `no cron series armed in ${repoId}${unreadableRuns.length === 0 ? "" : ` (${unreadableRuns.length} unreadable run${unreadableRuns.length === 1 ? "" : "s"} not listed)`}`);
      return code;
    }
    const rows = list.map((s) => [s.runId, s.timerId, `${s.cron} ${s.timezone}`, s.nextAt, s.paused ? "paused" : "running", s.owner ?? "-", bounds(s)]);
    for (const line of table(["run", "timer", "cron", "next", "state", "owner", "bounds"], rows)) printLine(io, line);
    return code;
  },
};

/** A run that could not be read, as the JSON outputs name it. */
function unreadableJson(u: { runId: string; path: string; error: { code: string; message: string } }): { runId: string; path: string; code: string; message: string } {
  return { runId: u.runId, path: u.path, code: u.error.code, message: u.error.message };
}

function bounds(s: { startAt: string | null; endAt: string | null; maxTicks: number | null; slot: number; jitterMs: number | null }): string {
  const parts: string[] = [];
  if (s.startAt !== null) parts.push(`from ${s.startAt}`);
  if (s.endAt !== null) parts.push(`until ${s.endAt}`);
  if (s.maxTicks !== null) parts.push(`slot ${s.slot}/${s.maxTicks}`);
  if (s.jitterMs !== null) parts.push(`jitter ${s.jitterMs} ms`);
  return parts.length === 0 ? "-" : parts.join(", ");
}

export const scheduleDescribeCommand: CliCommand = {
  name: ["schedule", "describe"],
  summary: "one series: next slots (UTC and local), last fires with lateness, why slots were skipped",
  options: { ...series, next: { type: "string", short: "n" }, last: { type: "string" } },
  help: `Usage: workflow-host schedule describe --data-dir DIR --repo R --run X --timer T [--next N] [--last M] [--json]

Shows a cron series: expression, zone, state (running or paused since when), owner, bounds; its
next N slots in UTC and in the series' zone (with the jittered instant of a jittered series);
its last M fires with their lateness (firedAt minus the slot, or minus the jittered instant),
marked manual (trigger) or backfill; every skipped stretch with its reason (missed: the host
was down or the clock jumped; paused: the series was paused), and pauses.

Options:
${SERIES_FLAGS}
  -n, --next N         how many next slots (1-1000, default 5)
      --last M         how many of the last fires (default 10)
      --json           print {…summary, next: [{slot, utc, local, jitteredFor?}], history: {fires, skips, pauses, end}}

Example:
  workflow-host schedule describe -d ./data -r reports --run nightly -t hourly --next 10
`,
  async run(values, io) {
    const name = "schedule describe";
    const t = target(name, values);
    const next = intFlag(name, values, "next", { min: 1, max: 1_000 }, 5) as number;
    const last = intFlag(name, values, "last", { min: 0, max: 100_000 }, 10) as number;
    const d = await withControls(name, values, io, (c) => c.describe(t.repoId, t.runId, t.timerId, { next }));
    if (values["json"] === true) {
      printJson(io, d);
      return 0;
    }
    printLine(io, `schedule ${t.timerId} of run ${t.runId} in ${t.repoId}: cron "${d.cron}" ${d.timezone}, ${d.paused ? `paused${d.pausedAt === null ? "" : ` since ${d.pausedAt}`}` : "running"}${d.owner === null ? "" : `, owner ${d.owner}`}, misfire ${d.misfire ?? "skip"}, bounds ${bounds(d)}`);
    printLine(io, `next ${d.next.length} slot${d.next.length === 1 ? "" : "s"}:`);
    printTicks(io, d.next);
    const fires = d.history.fires.slice(-last);
    printLine(io, `last ${fires.length} fire${fires.length === 1 ? "" : "s"}:`);
    for (const f of fires) {
      printLine(io, `  seq ${f.seq}  ${f.kind.padEnd(9)} slot ${f.scheduledFor ?? "-"}  fired ${f.firedAt ?? "-"}  late ${f.latenessMs === null ? "-" : duration(f.latenessMs)}${f.requestId === undefined ? "" : `  request ${f.requestId}`}`);
    }
    for (const s of d.history.skips) printLine(io, `  seq ${s.seq}  skipped ${s.count} slot${s.count === 1 ? "" : "s"} ${s.firstMissed} .. ${s.lastMissed}: ${s.reason}`);
    for (const p of d.history.pauses) printLine(io, `  seq ${p.seq}  paused${p.at === null ? "" : ` at ${p.at}`}${p.reason === undefined ? "" : ` (${p.reason})`}${p.resumedSeq === null ? ", not resumed" : `, resumed at seq ${p.resumedSeq}`}`);
    return 0;
  },
};

export const schedulePreviewCommand: CliCommand = {
  name: ["schedule", "preview"],
  summary: "the next N slots of a cron expression (UTC and local), before it is set",
  options: { cron: { type: "string" }, timezone: { type: "string" }, next: { type: "string", short: "n" }, after: { type: "string" }, "start-at": { type: "string" }, "end-at": { type: "string" }, "max-ticks": { type: "string" }, json: { type: "boolean" } },
  help: `Usage: workflow-host schedule preview --cron EXPR [--timezone Z] [--next N] [--after ISO]
                                 [--start-at ISO] [--end-at ISO] [--max-ticks K] [--json]

Lists the next N slots (default 5) of a cron expression after now (or --after), within the
bounds given, in UTC and in the zone's local time. Reads no data dir. For a series already set,
use schedule describe --next N.

Options:
      --cron EXPR      5 fields, or 6 with seconds first
      --timezone Z     IANA zone (default UTC)
  -n, --next N         how many slots (1-1000, default 5)
      --after ISO      list slots after this instant (default now)
      --start-at ISO   no slot before this instant
      --end-at ISO     no slot after this instant (not before --start-at)
      --max-ticks K    at most K slots in all
      --json           print {cron, timezone, slots: [{slot, utc, local}]}

Example:
  workflow-host schedule preview --cron "30 2 * * *" --timezone America/New_York --after 2026-03-07T00:00:00Z -n 3
`,
  async run(values, io) {
    const name = "schedule preview";
    // Given empty (`--cron ""`) is an expression that does not parse (cron_invalid), not a missing flag.
    const cron = stringFlag(values, "cron");
    if (cron === undefined) throw usageError(name, "missing --cron");
    const next = intFlag(name, values, "next", { min: 1, max: 1_000 }, 5) as number;
    const maxTicks = intFlag(name, values, "max-ticks", { min: 1, max: 1_000_000 });
    const { previewCron } = await import("../../workflow/schedule/preview.js");
    const startAt = stringFlag(values, "start-at");
    const endAt = stringFlag(values, "end-at");
    if (startAt !== undefined && endAt !== undefined) {
      const [startMs, endMs] = checkFlags(name, () => [Date.parse(parseInstant(startAt, "start-at")), Date.parse(parseInstant(endAt, "end-at"))]);
      if (startMs > endMs) throw usageError(name, `--start-at ${startAt} is after --end-at ${endAt}: no slot lies between them`);
    }
    const ticks = checkFlags(name, () =>
      previewCron({
        cron,
        after: stringFlag(values, "after") ?? io.clock().toISOString(),
        count: next,
        ...opt("timezone", stringFlag(values, "timezone")),
        ...opt("startAt", stringFlag(values, "start-at")),
        ...opt("endAt", stringFlag(values, "end-at")),
        ...opt("maxTicks", maxTicks),
      }),
    );
    if (values["json"] === true) printJson(io, { cron, timezone: stringFlag(values, "timezone") ?? "UTC", slots: ticks });
    else printTicks(io, ticks);
    return 0;
  },
};

function opt<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}

export const schedulePauseCommand: CliCommand = {
  name: ["schedule", "pause"],
  summary: "pause a cron series (appends SchedulePaused)",
  options: { ...series, reason: { type: "string" } },
  help: `Usage: workflow-host schedule pause --data-dir DIR --repo R --run X --timer T [--reason TEXT] [--json]

Appends SchedulePaused: no slot of the series fires until it is resumed. Pausing a paused
series writes nothing.

Options:
${SERIES_FLAGS}
      --reason TEXT    recorded in the event (at most 1000 characters)
      --json           print {repoId, runId, timerId, outcome, commitSha}

Example:
  workflow-host schedule pause -d ./data -r reports --run nightly -t hourly --reason "warehouse migration"
`,
  async run(values, io) {
    const t = target("schedule pause", values);
    const reason = stringFlag(values, "reason");
    checkFlags("schedule pause", () => checkReason(reason));
    const r = await withControls("schedule pause", values, io, (c) => c.pause(t.repoId, t.runId, t.timerId, reason === undefined ? {} : { reason }));
    if (values["json"] === true) printJson(io, { ...t, ...r });
    else printLine(io, r.outcome === "paused" ? `SchedulePaused: ${t.timerId} of ${t.runId} is paused (commit ${shortSha(r.commitSha)})` : `${t.timerId} of ${t.runId} was paused already; nothing written`);
    return 0;
  },
};

export const scheduleResumeCommand: CliCommand = {
  name: ["schedule", "resume"],
  summary: "resume a paused series (ScheduleResumed, TimerSkipped reason paused, next TimerSet)",
  options: { ...series, "catch-up": { type: "boolean" } },
  help: `Usage: workflow-host schedule resume --data-dir DIR --repo R --run X --timer T [--catch-up] [--json]

Appends ScheduleResumed, then one TimerSkipped (reason "paused") covering every slot that fell
due while paused, and the TimerSet of the next future slot. With --catch-up the overdue slot
stays armed instead and the series' misfire policy (skip, latest, all) applies to the stretch.

Options:
${SERIES_FLAGS}
      --catch-up       apply the misfire policy to the paused stretch
      --json           print {repoId, runId, timerId, outcome, skipped, commitSha}

Example:
  workflow-host schedule resume -d ./data -r reports --run nightly -t hourly
`,
  async run(values, io) {
    const t = target("schedule resume", values);
    const r = await withControls("schedule resume", values, io, (c) => c.resume(t.repoId, t.runId, t.timerId, { catchUp: values["catch-up"] === true }));
    if (values["json"] === true) printJson(io, { ...t, ...r });
    else printLine(io, r.outcome === "resumed" ? `ScheduleResumed: ${t.timerId} of ${t.runId} runs again; ${r.skipped} slot${r.skipped === 1 ? "" : "s"} recorded as skipped (paused) (commit ${shortSha(r.commitSha)})` : `${t.timerId} of ${t.runId} is not paused; nothing written`);
    return 0;
  },
};

export const scheduleTriggerCommand: CliCommand = {
  name: ["schedule", "trigger"],
  summary: "fire a series now (TimerFired manual, once per --request-id)",
  options: { ...series, "request-id": { type: "string" } },
  help: `Usage: workflow-host schedule trigger --data-dir DIR --repo R --run X --timer T --request-id ID [--json]

Appends a TimerFired with manual: true and the request id, scheduledFor = firedAt = now. The
same request id again for this series writes nothing (a retried request runs once) and answers
the first fire's firedAt, with commitSha null. The next
regular slot does not move.

Options:
${SERIES_FLAGS}
      --request-id ID  idempotency key: 1-256 of A-Z a-z 0-9 _ . : -
      --json           print {repoId, runId, timerId, requestId, outcome, firedAt, commitSha}

Example:
  workflow-host schedule trigger -d ./data -r reports --run nightly -t hourly --request-id deploy-412
`,
  async run(values, io) {
    const name = "schedule trigger";
    const t = target(name, values);
    const requestId = checkFlags(name, () => parseSignalId(requiredFlag(name, values, "request-id"), "requestId"));
    const r = await withControls(name, values, io, (c) => c.trigger(t.repoId, t.runId, t.timerId, requestId));
    if (values["json"] === true) printJson(io, { ...t, requestId, ...r });
    else printLine(io, r.outcome === "triggered" ? `TimerFired (manual, request ${requestId}) for ${t.timerId} of ${t.runId} at ${r.firedAt ?? "-"} (commit ${shortSha(r.commitSha)})` : `request ${requestId} already fired ${t.timerId} of ${t.runId} at ${r.firedAt ?? "-"}; nothing written`);
    return 0;
  },
};

export const scheduleBackfillCommand: CliCommand = {
  name: ["schedule", "backfill"],
  summary: "fire every slot of a past range once (TimerFired backfill: true)",
  options: { ...series, from: { type: "string" }, to: { type: "string" }, "max-ticks": { type: "string" } },
  help: `Usage: workflow-host schedule backfill --data-dir DIR --repo R --run X --timer T --from ISO --to ISO
                                  [--max-ticks K] [--json]

Appends a TimerFired with backfill: true and its scheduledFor for every slot of the series in
[from, to] (both in the past, before the armed slot) that has not fired yet. Backfilling the same
range again writes nothing; when nothing is fired the output says why (json: emptyBecause). A
range of more than K slots (default and most 1000; fired or not) is refused whole, never cut
short: backfill_too_large, exit 1, nothing written, the message naming where a range of K
slots ends and where the next starts (backfill to the one, then from the other).

Options:
${SERIES_FLAGS}
      --from ISO       first instant of the range (RFC 3339 with offset)
      --to ISO         last instant of the range, not after now
      --max-ticks K    most slots (1-1000, default 1000)
      --json           print {repoId, runId, timerId, fired, alreadyFired, emptyBecause, commitSha}

Exit codes: 0 ok (also when nothing was fired), 1 the backfill failed, 2 usage (also a
malformed --from or --to).

Example:
  workflow-host schedule backfill -d ./data -r reports --run nightly -t hourly --from 2026-04-30T00:00:00Z --to 2026-04-30T23:59:59Z
`,
  async run(values, io) {
    const name = "schedule backfill";
    const t = target(name, values);
    // A malformed --from or --to is a bad flag value (exit 2), like a bad --fire-at of timer set.
    const from = checkFlags(name, () => parseInstant(requiredFlag(name, values, "from"), "from"));
    const to = checkFlags(name, () => parseInstant(requiredFlag(name, values, "to"), "to"));
    const maxTicks = intFlag(name, values, "max-ticks", { min: 1, max: 1_000 });
    const r = await withControls(name, values, io, (c) => c.backfill(t.repoId, t.runId, t.timerId, { from, to, ...(maxTicks === undefined ? {} : { maxTicks }) }));
    if (values["json"] === true) printJson(io, { ...t, ...r });
    else if (r.fired.length === 0) printLine(io, `backfill of ${t.timerId} of ${t.runId}: 0 slots fired, ${r.alreadyFired.length} had fired already: ${r.emptyBecause ?? "nothing to fire"}; nothing written`);
    else printLine(io, `backfill of ${t.timerId} of ${t.runId}: ${r.fired.length} slot${r.fired.length === 1 ? "" : "s"} fired, ${r.alreadyFired.length} had fired already (commit ${shortSha(r.commitSha)})`);
    return 0;
  },
};

export const scheduleSyncCommand: CliCommand = {
  name: ["schedule", "sync"],
  summary: "reconcile the deployment's sync-owned series with a declared set (--file)",
  options: { ...dataDirOption, repo: { type: "string", short: "r" }, file: { type: "string", short: "f" }, "dry-run": { type: "boolean" }, json: { type: "boolean" } },
  help: `Usage: workflow-host schedule sync --data-dir DIR --repo R --file schedules.json [--dry-run] [--json]

Reads a JSON array of series, each {runId, timerId, cron, timezone?, misfire?, startAt?, endAt?,
maxTicks?, jitterMs?, stepId?}, and reconciles deployment R with it: creates the series not
armed, updates those whose fields changed, cancels the series it owns that are no longer
declared, and leaves the rest alone. Series it writes carry owner "sync"; a declared series
armed without that mark is reported as a conflict and not touched, as is a declared series with
no slot within its bounds; the rest is applied. Prints the plan; commits nothing when nothing
changed, or with --dry-run. At most 10000 series may be declared (config_invalid beyond, before
anything is written).

The sync is applied run by run: each run's changes are in one commit or in none, and several
runs share a commit (up to 1000 a commit; --json's commits lists the distinct ones), with
progress on stderr every 100 runs and at the end ("schedule sync: 300 of 1200 runs written";
with --json one object per line, {"event":"progress","done":300,"total":1200}). An interrupted
sync leaves some runs synced and others not; running the same sync again converges. When
writing some runs fails (io_failed fails every run of its commit, run_archived that run only),
the sync exits 1 once every run's write has ended, the message saying how many runs were
written and which failed; nothing is written after it exits.

Options:
  -d, --data-dir DIR   data dir (default: $WORKFLOW_HOST_DATA_DIR)
  -r, --repo R         deployment id
  -f, --file PATH      the declared set (JSON array): a regular file of at most 64 MiB (a FIFO,
                       device or folder is config_invalid, before it is read)
      --dry-run        print the plan, write nothing
      --json           print {plan: {create, update, cancel, unchanged, conflicts}, commits,
                       unreadableRuns: [{runId, path, code, message}]}

A run that cannot be read whole (its folder, events/ folder or an event missing or damaged:
object_missing, object_corrupt; its events entry a file or a link: event_invalid) is named on
stderr (and in unreadableRuns) and nothing is written to it: its series are neither updated nor cancelled, and a series declared in it is a
conflict.

Exit codes: 0 synced (or nothing to do), 1 conflicts were left alone (the rest was applied) or
the sync failed, 2 usage.

Example:
  workflow-host schedule sync -d ./data -r reports --file schedules.json --dry-run
`,
  async run(values, io) {
    const name = "schedule sync";
    const repoId = checkFlags(name, () => parseRepoId(requiredFlag(name, values, "repo")));
    const file = resolve(io.cwd, requiredFlag(name, values, "file"));
    const reason = (error: unknown): string => (error instanceof Error ? error.message : String(error));
    let text: string;
    try {
      text = await readConfigFile(file);
    } catch (error) {
      throw new WorkflowHostError("config_invalid", `schedules file ${file} could not be read (${reason(error)})`, { file }, { cause: error });
    }
    let desired: unknown;
    try {
      desired = parseJsonText(text);
    } catch (error) {
      const what = error instanceof DuplicateJsonKeyError ? `is not valid: ${reason(error)}` : `is not JSON (${reason(error)})`;
      throw new WorkflowHostError("config_invalid", `schedules file ${file} ${what}`, { file }, { cause: error });
    }
    const onRunWritten = (done: number, total: number): void => {
      if (done !== total && done % 100 !== 0) return;
      if (values["json"] === true) io.stderr.write(`${JSON.stringify({ event: "progress", done, total })}\n`);
      else io.stderr.write(`schedule sync: ${done} of ${total} runs written\n`);
    };
    const r = await withControls(name, values, io, (c) => c.syncSchedules(repoId, desired, { dryRun: values["dry-run"] === true, onRunWritten }));
    const code = r.plan.conflicts.length === 0 && r.unreadableRuns.length === 0 ? 0 : 1;
    for (const u of r.unreadableRuns) io.stderr.write(`workflow-host: run ${u.runId} cannot be read whole (nothing written to it): ${errorLine(u.error)}\n`);
    if (values["json"] === true) {
      printJson(io, { plan: r.plan, commits: r.commits, unreadableRuns: r.unreadableRuns.map(unreadableJson) });
      return code;
    }
    const p = r.plan;
    for (const d of p.create) printLine(io, `create    ${d.runId}/${d.timerId}  cron "${d.cron}" ${d.timezone ?? "UTC"}`);
    for (const u of p.update) printLine(io, `update    ${u.declared.runId}/${u.declared.timerId}  changed: ${u.changed.join(", ")}`);
    for (const c of p.cancel) printLine(io, `cancel    ${c.runId}/${c.timerId}  (not declared)`);
    for (const c of p.conflicts) printLine(io, `conflict  ${c.runId}/${c.timerId}  ${c.reason}`);
    printLine(io, `${p.create.length} to create, ${p.update.length} to update, ${p.cancel.length} to cancel, ${p.unchanged.length} unchanged, ${p.conflicts.length} conflicts; ${values["dry-run"] === true ? "dry run, nothing written" : r.commits.length === 0 ? "nothing written" : `commit ${r.commits.map(shortSha).join(", ")}`}`);
    return code;
  },
};

export const scheduleCommands: readonly CliCommand[] = [
  scheduleListCommand,
  scheduleDescribeCommand,
  schedulePreviewCommand,
  schedulePauseCommand,
  scheduleResumeCommand,
  scheduleTriggerCommand,
  scheduleBackfillCommand,
  scheduleSyncCommand,
];
