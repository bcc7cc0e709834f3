import type { AddressInfo } from "node:net";
import { WorkflowHostError } from "../../errors.js";
import { DEFAULT_REF } from "../../substrate/ref-name.js";
import { printDispatchReport } from "./dispatch-report.js";
import type { SchedulerEvent } from "../../../seams/scheduler/scheduler-types.js";
import type { ClusterEvent, ClusterOptions } from "../../../seams/cluster/cluster-coordinator.js";
import type { WorkflowHost } from "../../host/host.js";
import { stopOnSignals } from "../../host/stop-on-signals.js";
import type { MisfirePolicy } from "../../workflow/types.js";
import { choiceFlag, dataDirFlag, dataDirOption, intFlag, usageError } from "../args.js";
import { createCliLogger, replacer } from "../cli-logger.js";
import { clusterEventLine } from "../cluster-event-line.js";
import { readConfigFile } from "../read-config-file.js";
import { ignoredDeploymentFolders, ignoredDeploymentsLine } from "../ignored-deployments.js";
import { checkClusterUrl, checkRemoteBase } from "../cluster-flags.js";
import type { CliCommand } from "../command.js";
import { duration, plural, shortSha } from "../format.js";
import type { CliIo } from "../io.js";
import { printLine } from "../io.js";
import { makeDataDir, requireDataDir } from "../with-store.js";
import { shellQuote } from "./paths.js";

const NAME = "serve";

/** `serve`: runs the host on a data dir until SIGINT/SIGTERM. */
export const serveCommand: CliCommand = {
  name: ["serve"],
  summary: "run the host on a data dir until SIGINT/SIGTERM",
  options: {
    ...dataDirOption,
    "poll-ms": { type: "string" },
    misfire: { type: "string" },
    durability: { type: "string" },
    "lock-stale-ms": { type: "string" },
    init: { type: "boolean" },
    dispatch: { type: "string" },
    json: { type: "boolean" },
    http: { type: "string" },
    tokens: { type: "string" },
    "retention-ms": { type: "string" },
    "retention-check-ms": { type: "string" },
    cluster: { type: "string" },
    "remote-base": { type: "string" },
    "host-id": { type: "string" },
    "lease-ttl-ms": { type: "string" },
    "fetch-every-ms": { type: "string" },
  },
  help: `Usage: workflow-host serve --data-dir DIR [--init] [--poll-ms N] [--misfire P] [--durability D]
                           [--lock-stale-ms N] [--dispatch FILE] [--json]
                           [--http ADDR --tokens FILE]
                           [--retention-ms N|off] [--retention-check-ms N]
                           [--cluster POSTGRES_URL --remote-base URL [--host-id ID]
                            [--lease-ttl-ms N] [--fetch-every-ms N]]

Runs the host: takes the data dir's host lock, recovers every deployment's timers, fires them
(TimerFired, cron follow-ups, TimerSkipped) and follows new commits, including ones pushed with
git or written by other workflow-host commands. New deployments are picked up within 2 s.
Prints one line per report on stdout: every timer fired, every tick skipped, every
cancellation and every schedule paused or resumed (whoever wrote it: this host, another
workflow-host command, a git push), every bad event. A bad event is reported once per start, and not at all once acknowledged with
workflow-host check --acknowledge. Log messages (start, stop, lock takeover) go to stderr.

SIGINT or SIGTERM stops it gracefully (the commit in flight finishes, the lock is released)
and it exits 0; so does a closed stdout or stderr (serve --json | head -1). A second host on the same data dir exits 1 with host_locked naming the holder;
a lock left by a host that died (its pid is gone, or its heartbeat unchanged for
--lock-stale-ms while watched, whatever time it claims) is taken over, and the takeover is
logged; while a lock is watched, one line says whose it is and when it will be taken over. A host whose lock was taken over commits nothing more and exits 1. A read-only or
failing data dir is not a takeover: failed heartbeats and commits are logged with their errno
and retried, and the host catches up by itself once writes succeed again.

Options:
  -d, --data-dir DIR      data dir (default: $WORKFLOW_HOST_DATA_DIR); must exist unless --init
      --init              create the data dir when it does not exist
      --poll-ms N         ref check interval, the safety net under OS file events (default 1000)
      --misfire P         cron series that name no policy: skip (default) | latest | all
      --durability D      fsync (default): flush every write before its ref moves | none
      --lock-stale-ms N   a lock whose heartbeat did not change for this long is taken over (default 10000)
      --dispatch FILE     run the HTTP consumers of FILE (see README "Running code when a
                          timer fires"); status with workflow-host dispatch status
      --json              one JSON object per line on stdout and stderr
      --http ADDR         also serve the HTTP API, wake-ups, /metrics and the dashboard on
                          PORT, HOST:PORT or [IPV6]:PORT (a bare port is 127.0.0.1); needs --tokens
      --tokens FILE       JSON token file: {"tokens": {"<token>": {"principal": "ops",
                          "deployments": {"*": ["read", "write"]}, "expiresAt"?: ISO}}} (see
                          the README's HTTP section); a token is refused from its expiresAt on
                          (401 token_expired) and its live streams end then
      --retention-ms N    a run that ended more than N ms ago leaves main for the archive ref
                          refs/archive/runs, in batched commits at quiet moments (default
                          604800000: 7 days); off keeps every run live
      --retention-check-ms N  how often deployments are looked at for retention (default
                          min(retention / 4, 600000), at least 1000); not with --retention-ms off
      --cluster URL       cluster mode (README "Running several hosts"): serve the deployments
                          whose leases this host takes in PostgreSQL at URL (postgres://...)
      --remote-base URL   each deployment's git remote is URL/<repoId>.git, its source of truth;
                          every commit is pushed there (compare-and-swap) before it counts
      --host-id ID        names this host in commits and leases (default: the machine's name)
      --lease-ttl-ms N    lease lifetime: a dead host's deployments are taken over this long
                          after its last renewal (default 10000)
      --fetch-every-ms N  fetch served deployments this often to see pushes by others
                          (default 5000, 0 = only at takeover and after a refused push)

The token file is followed while serving: a change is read and checked within a second, and a
token taken out is refused from then on (live streams reconnect); a changed file that is not
valid changes nothing and is logged.

FILE (--dispatch, --tokens) is a regular file of at most 64 MiB (tokens: 16 MiB); a FIFO,
device or folder is refused before it is read. A FILE that cannot be read or is not valid is
config_invalid, exit 1 (as for schedule sync --file); a bad flag is exit 2.

Cluster mode adds lines lease-acquired, lease-released, lease-lost, lease-unconfirmed,
lease-confirmed, push-rejected and cluster-error.

Output lines: serving, recovered, armed, fired (with how late: "late 2 ms"), skipped,
cancelled, bad-event, ref-rewritten, commit-failed, repo-failed, timer-rejected, archived,
stopped.
With --json each is one object per line: {ts, event, ...the report's fields}; fired carries
lateMs, bad-event {repoId, runId, path, seq, error: {code, message}}.

Examples:
  workflow-host serve --data-dir ./data --init
  workflow-host serve --data-dir ./data --json --poll-ms 250
  workflow-host serve --data-dir ./data --http 127.0.0.1:8080 --tokens ./tokens.json
  workflow-host serve --data-dir ./h1 --init --cluster postgres://postgres@127.0.0.1:5432/postgres \\
                      --remote-base /srv/remotes --host-id h1
`,
  async run(values, io) {
    const dataDir = dataDirFlag(NAME, values, io);
    const pollMs = intFlag(NAME, values, "poll-ms", { min: 10, max: 3_600_000 }, 1_000) ?? 1_000;
    const staleMs = intFlag(NAME, values, "lock-stale-ms", { min: 2_000, max: 86_400_000 }, 10_000) ?? 10_000;
    const misfire = choiceFlag<MisfirePolicy>(NAME, values, "misfire", ["skip", "latest", "all"], "skip");
    const durability = choiceFlag(NAME, values, "durability", ["fsync", "none"], "fsync");
    const json = values["json"] === true;
    const retention = retentionFlags(values);
    // Every flag is checked first (a bad flag is exit 2), then the files they name (a file that
    // cannot be read or is not valid is config_invalid, exit 1), all before the data dir.
    const httpAddress = await httpFlags(values);
    const cluster = clusterFlags(values);
    const dispatchFile = values["dispatch"];
    const http = httpAddress === null ? null : { address: httpAddress.address, ...(await readTokens(httpAddress.tokensFile)) };
    const consumers = typeof dispatchFile === "string" ? await dispatchConsumers(dispatchFile, io) : [];
    if (values["init"] !== true) await requireDataDir(dataDir, `workflow-host serve --data-dir ${shellQuote(dataDir)} --init`);
    else await makeDataDir(dataDir);
    const logger = createCliLogger(io, { json });
    const { createWorkflowHost } = await import("../../host/host.js");
    const bad = badEventFilter(() => host);
    const host: WorkflowHost = createWorkflowHost({
      dataDir,
      logger,
      misfire,
      durability,
      watch: { pollMs, chokidar: true },
      lock: { staleMs },
      retention,
      onRetention: (repoId, result) => {
        if (result.archived.length === 0) return;
        if (json) printLine(io, JSON.stringify({ ts: io.clock().toISOString(), event: "archived", repoId, runs: result.archived.length, remaining: result.remaining, commitSha: result.commitSha }));
        else printLine(io, `archived ${plural(result.archived.length, "ended run")} of ${repoId} to refs/archive/runs (commit ${shortSha(result.commitSha)}${result.remaining > 0 ? `, ${result.remaining} more due` : ""})`);
      },
      onEvent: (event) => {
        if (event.type === "bad_event") bad.report(event, () => printEvent(io, event, json));
        else printEvent(io, event, json);
        http?.monitor.onEvent(event);
      },
      onDispatchEvent: (report) => printDispatchReport(io, report, json),
      ...(cluster === null
        ? {}
        : {
            cluster,
            onClusterEvent: (event: ClusterEvent) => {
              const { type, ...rest } = event;
              if (json) printLine(io, JSON.stringify({ ts: io.clock().toISOString(), event: type.replace("_", "-"), ...rest }, replacer));
              else printLine(io, clusterEventLine(io.clock().toISOString(), event));
            },
          }),
    });
    for (const consumer of consumers) host.dispatch(consumer);
    const signals = stopOnSignals(host, {
      source: io.signals,
      // SIGPIPE: stdout's (or stderr's) reader went away (`serve --json | head -1`). The host
      // stops as on SIGTERM, releasing its lock, rather than the process ending under it.
      signals: ["SIGINT", "SIGTERM", "SIGPIPE"],
      logger,
      onRepeat: () => logger.warn("already stopping; waiting for the commit in flight"),
    });
    let app: { close(): Promise<unknown>; server: { closeAllConnections(): void } } | null = null;
    let stopFollowingTokens = (): void => undefined;
    const restoreWarnings = json ? warningsAsJson(logger) : (): void => undefined;
    try {
      await host.start();
      // Named once per start: later discoveries pass over them quietly.
      if (cluster === null) {
        const ignored = await ignoredDeploymentFolders(dataDir);
        const warning = ignoredDeploymentsLine(ignored);
        if (warning !== null) logger.warn(warning.replace(/^warning: /, ""), { ignored });
      }
      if (http !== null && signals.received === null) {
        const { createHttpHandler } = await import("../../http/http-handler.js");
        const server = createHttpHandler(host, { tokens: http.tokens, monitor: http.monitor, logger });
        app = server;
        await server.listen({ host: http.address.host, port: http.address.port }).catch((error: unknown) => {
          throw listenFailure(error, `${http.address.host}:${http.address.port}`);
        });
        // What the socket is bound to: fastify's own answer names 127.0.0.1 for a 0.0.0.0 bind.
        const { describeBoundAddress } = await import("../../http/listen-address.js");
        const { url, loopbackOnly } = describeBoundAddress(server.server.address() as AddressInfo);
        stopFollowingTokens = followTokenFile(http, logger);
        if (json) printLine(io, JSON.stringify({ ts: io.clock().toISOString(), event: "http", url, loopbackOnly }));
        else printLine(io, `http on ${url} (dashboard at ${url}/, API under ${url}/v1)${loopbackOnly ? "" : "; reachable from other machines"}`);
      }
      const stats = host.scheduler.stats();
      const holder = host.lock?.holder;
      if (signals.received !== null) {
        // Stopped while starting: nothing was served.
      } else if (json) {
        printLine(io, JSON.stringify({ ts: io.clock().toISOString(), event: "serving", dataDir, pid: holder?.pid, repos: stats.repos, runs: stats.runs, queued: stats.queued, ...(host.cluster === null ? {} : { instance: host.cluster.instanceId }) }));
      } else {
        printLine(io, `serving ${dataDir} (pid ${holder?.pid ?? "?"}${host.cluster === null ? "" : `, cluster instance ${host.cluster.instanceId}`}): ${plural(stats.repos, "deployment")}, ${plural(stats.runs, "run")}, ${plural(stats.queued, "timer")} armed; stop with Ctrl-C or SIGTERM`);
      }
      // The host stops on a signal, or by itself when its lock is lost.
      await host.stopped;
      const signal = signals.received;
      if (signal === null) {
        logger.error("the host stopped because its lock was lost (see the lock message above)");
        return 1;
      }
      await signals.stopped;
      const end = host.scheduler.stats();
      if (json) printLine(io, JSON.stringify({ ts: io.clock().toISOString(), event: "stopped", signal, fired: end.fired, skippedTicks: end.skippedTicks }));
      else printLine(io, `stopped on ${signal}: ${end.fired} fired, ${end.skippedTicks} ticks skipped, lock released`);
      return 0;
    } finally {
      stopFollowingTokens();
      signals.dispose();
      restoreWarnings();
      // The host has stopped (or never started): a request still open, such as a client
      // trickling its body, would be answered 503 at best, so it is not waited for (it held the
      // process up to the request timeout after "stopped" was printed).
      const closing = app?.close();
      app?.server.closeAllConnections();
      await closing;
      await host.stop();
      await bad.settled();
    }
  },
};

/**
 * The retention policy of `--retention-ms` and `--retention-check-ms`.
 * @throws usage for a bad value, or `--retention-check-ms` with `--retention-ms off`
 */
function retentionFlags(values: Parameters<CliCommand["run"]>[0]): { endedRunsAfterMs: number; checkEveryMs?: number } | false {
  const raw = values["retention-ms"];
  const checkEveryMs = intFlag(NAME, values, "retention-check-ms", { min: 1_000, max: 86_400_000 });
  if (raw === "off") {
    // Nothing is checked when retention is off: a check period given with it is a slip.
    if (checkEveryMs !== undefined) throw usageError(NAME, "--retention-check-ms is given with --retention-ms off, which checks nothing; drop one of them");
    return false;
  }
  const endedRunsAfterMs = intFlag(NAME, values, "retention-ms", { min: 0, max: 100 * 365 * 86_400_000 }, 7 * 86_400_000) ?? 7 * 86_400_000;
  return { endedRunsAfterMs, ...(checkEveryMs === undefined ? {} : { checkEveryMs }) };
}

/**
 * Decides which bad-event reports `serve` prints: each (repo, path, code) once per start, and
 * none that an operator acknowledged (`check --acknowledge`). The acknowledgements of a
 * deployment are read once, at its first bad event.
 */
/**
 * With `--json`, the process's warnings (a damaged pack's `WORKFLOW_HOST_PACK_*`, Node's own)
 * are logged as JSON lines like every other message, instead of Node's text on stderr: Node's
 * own printer is a `warning` listener, taken off here and put back by the function returned.
 */
function warningsAsJson(logger: ReturnType<typeof createCliLogger>): () => void {
  const printers = process.listeners("warning");
  const log = (warning: Error): void => {
    const code = (warning as { code?: unknown }).code;
    logger.warn(warning.message, { warning: warning.name, ...(typeof code === "string" ? { code } : {}) });
  };
  process.removeAllListeners("warning");
  process.on("warning", log);
  return () => {
    process.off("warning", log);
    for (const printer of printers) if (!process.listeners("warning").includes(printer)) process.on("warning", printer);
  };
}

function badEventFilter(hostOf: () => WorkflowHost) {
  const seen = new Set<string>();
  const acknowledged = new Map<string, Promise<Set<string>>>();
  const pending = new Set<Promise<void>>();
  const acks = import("../../host/acknowledgements.js");
  return {
    report(event: Extract<SchedulerEvent, { type: "bad_event" }>, print: () => void): void {
      const key = `${event.repoId}\u0000${event.path}\u0000${event.error.code}`;
      if (seen.has(key)) return;
      seen.add(key);
      const work = (async () => {
        let known = false;
        try {
          const a = await acks;
          const store = hostOf().store;
          let set = acknowledged.get(event.repoId);
          if (set === undefined) {
            // Handled here, where it is made: it is awaited only after other reads, and a
            // rejection nobody handles yet would end the process.
            set = a.readAcknowledgements(store, event.repoId).then(
              (list) => new Set(list.map(a.acknowledgementKey)),
              () => new Set<string>(),
            );
            acknowledged.set(event.repoId, set);
          }
          const reads = await store.openCommittedReads(null, { kind: "workflow-run", id: event.repoId }, DEFAULT_REF);
          const oid = await a.blobOidAt(reads, event.path);
          known = (await set).has(a.acknowledgementKey({ path: event.path, code: event.error.code, oid }));
        } catch {
          // Acknowledgements that cannot be read hide nothing: the event is reported.
        }
        if (!known) print();
      })();
      pending.add(work);
      void work.finally(() => pending.delete(work));
    },
    /** Resolves when every report in progress is printed (or dropped). */
    async settled(): Promise<void> {
      await Promise.all([...pending]);
    },
  };
}

/** How late a timer fired: firedAt − scheduledFor, in ms (never negative). */
function lateMsOf(event: { readonly scheduledFor: string; readonly firedAt: string }): number {
  return Math.max(0, Date.parse(event.firedAt) - Date.parse(event.scheduledFor));
}

/**
 * The consumers of a `--dispatch` file. The file is read by the command, as `schedule sync
 * --file` reads its own: one that cannot be read or does not hold a valid configuration fails
 * the command (config_invalid, exit 1); the flag itself was right.
 * @throws config_invalid (unreadable, not a regular file, over 64 MiB, or invalid: see parseDispatchConfig)
 */
async function dispatchConsumers(file: string, io: CliIo) {
  const { parseDispatchConfig } = await import("../../../seams/dispatch/dispatch-config.js");
  let text: string;
  try {
    text = await readConfigFile(file);
  } catch (error) {
    throw new WorkflowHostError("config_invalid", `dispatch config file ${file} could not be read (${error instanceof Error ? error.message : String(error)})`, { file }, { cause: error });
  }
  return parseDispatchConfig(text, io.env);
}

/** `--cluster`, `--remote-base` and their tuning flags; null in single-host mode. */
function clusterFlags(values: Parameters<CliCommand["run"]>[0]): ClusterOptions | null {
  const url = values["cluster"];
  const remoteBase = values["remote-base"];
  const tuning = ["host-id", "lease-ttl-ms", "fetch-every-ms"].filter((k) => values[k] !== undefined);
  if (url === undefined) {
    if (remoteBase !== undefined || tuning.length > 0) throw usageError(NAME, `--${remoteBase !== undefined ? "remote-base" : tuning[0]} is only used with --cluster`);
    return null;
  }
  if (typeof url !== "string") throw usageError(NAME, "--cluster takes a PostgreSQL connection string postgres://user@host:port/db");
  checkClusterUrl(NAME, url);
  if (typeof remoteBase !== "string" || remoteBase === "") throw usageError(NAME, "--cluster needs --remote-base URL: where each deployment's git remote lives");
  checkRemoteBase(NAME, remoteBase);
  const hostId = values["host-id"];
  if (hostId !== undefined && (typeof hostId !== "string" || !/^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$/.test(hostId))) {
    throw usageError(NAME, "--host-id takes 1-100 of A-Z a-z 0-9 _ . - (starting with a letter or digit)");
  }
  const leaseTtlMs = intFlag(NAME, values, "lease-ttl-ms", { min: 1_000, max: 600_000 }, 10_000) ?? 10_000;
  const fetchEveryMs = intFlag(NAME, values, "fetch-every-ms", { min: 0, max: 3_600_000 }, 5_000) ?? 5_000;
  return { url, remoteBase, leaseTtlMs, fetchEveryMs, ...(typeof hostId === "string" ? { hostId } : {}) };
}

/**
 * `--http` and `--tokens`, checked as flags (exit 2); the token file is read later, by
 * {@link readTokens}, once every flag is known to be right.
 */
async function httpFlags(values: Parameters<CliCommand["run"]>[0]) {
  const address = values["http"];
  const tokensFile = values["tokens"];
  if (address === undefined) {
    if (tokensFile !== undefined) throw usageError(NAME, "--tokens is only used with --http");
    return null;
  }
  if (typeof address !== "string" || typeof tokensFile !== "string") throw usageError(NAME, "--http needs --tokens FILE: every request is authenticated");
  const { parseListenAddress } = await import("../../http/listen-address.js");
  return { address: parseListenAddress(address), tokensFile };
}

/**
 * The token file of `--tokens`, read with a bound (a token file is a few KB; /dev/zero must not
 * fill memory) and checked as `loadTokenFile` checks it, and the monitor the HTTP face reports to.
 * @throws config_invalid for a file that cannot be read or is not a valid token file (exit 1)
 */
async function readTokens(tokensFile: string) {
  const [{ loadTokenFile, replaceableTokens }, { createHostMonitor }] = await Promise.all([import("../../http/http-tokens.js"), import("../../http/host-monitor.js")]);
  // Looked at before it is read: a change made while it is read is seen by the first look after.
  const seen = await fileIdentity(tokensFile);
  return { tokens: replaceableTokens(await loadTokenFile(tokensFile)), monitor: createHostMonitor(), tokensFile, seen, loadTokenFile };
}

/** How often `serve` looks at its token file for a change (ms). */
const TOKEN_FILE_CHECK_MS = 1_000;

/** What tells a changed file: its inode (a rename put another file there), size, mtime and ctime; null when it is gone. */
async function fileIdentity(path: string): Promise<string | null> {
  const { stat } = await import("node:fs/promises");
  try {
    const s = await stat(path, { bigint: true });
    return `${s.ino}:${s.size}:${s.mtimeNs}:${s.ctimeNs}`;
  } catch {
    return null;
  }
}

/**
 * Follows the token file while serving: it is looked at every second, and a changed one is read
 * and checked as at start and put in place, so a token taken out of the file is refused (401)
 * from then on, without a restart; open live streams end (their clients reconnect and are
 * checked anew). A file that cannot be read or is not valid (a save half done, a typo) changes
 * nothing: the tokens in place stay, and it is logged once per change.
 * @returns a function that stops following
 */
function followTokenFile(http: Awaited<ReturnType<typeof readTokens>>, logger: ReturnType<typeof createCliLogger>): () => void {
  let seen = http.seen;
  let looking = false;
  const look = async (): Promise<void> => {
    const now = await fileIdentity(http.tokensFile);
    if (now === seen) return;
    seen = now;
    try {
      const next = await http.loadTokenFile(http.tokensFile);
      http.tokens.replace(next);
      logger.info(`token file ${http.tokensFile} read again: ${plural(next.principals.length, "principal")} (${next.principals.join(", ")}); live streams reconnect`, { file: http.tokensFile, principals: next.principals });
    } catch (error) {
      logger.error(`token file ${http.tokensFile} changed but was not taken (the tokens read before stay in place until it is valid): ${error instanceof Error ? error.message : String(error)}`, { file: http.tokensFile });
    }
  };
  const timer = setInterval(() => {
    if (looking) return;
    looking = true;
    void look().finally(() => {
      looking = false;
    });
  }, TOKEN_FILE_CHECK_MS);
  timer.unref();
  return () => clearInterval(timer);
}

/**
 * A failed `listen` as `io_failed` saying what happened to the address (EADDRINUSE: in use,
 * EACCES: a privileged port, EADDRNOTAVAIL: not an address of this machine), not as a file-system
 * failure.
 */
function listenFailure(error: unknown, address: string): unknown {
  const errno = (error as { code?: unknown } | null)?.code;
  if (typeof errno !== "string" || !/^E[A-Z]+$/.test(errno)) return error;
  const why: Record<string, string> = {
    EADDRINUSE: "another process listens on it",
    EACCES: "this user may not listen on that port",
    EADDRNOTAVAIL: "it is not an address of this machine",
  };
  return new WorkflowHostError("io_failed", `cannot listen on ${address}: ${errno} (${why[errno] ?? "the system refused it"}); choose another --http address`, { errno, address }, { cause: error });
}

/** One line per scheduler report on `io.stdout`: text, or one JSON object with `json`. */
export function printEvent(io: CliIo, event: SchedulerEvent, json: boolean): void {
  const ts = io.clock().toISOString();
  if (json) {
    const { type, ...rest } = event;
    const extra = event.type === "fired" ? { lateMs: lateMsOf(event) } : {};
    printLine(io, JSON.stringify({ ts, event: type.replace("_", "-"), ...rest, ...extra }, replacer));
    return;
  }
  const line = (what: string, text: string): void => printLine(io, `${ts} ${what.padEnd(13)} ${text}`);
  switch (event.type) {
    case "recovered":
      line("recovered", `${event.repoId}: ${plural(event.runs, "run")}, ${plural(event.pending, "timer")} pending, ${plural(event.badEvents, "bad event")}, main ${shortSha(event.commitSha)} (${duration(event.ms)})`);
      break;
    case "armed":
      line("armed", `${event.repoId}/${event.runId}/${event.timerId} for ${event.fireAt}`);
      break;
    case "fired":
      line("fired", `${event.repoId}/${event.runId}/${event.timerId} scheduledFor ${event.scheduledFor} late ${duration(lateMsOf(event))} commit ${shortSha(event.commitSha)}`);
      break;
    case "skipped":
      line("skipped", `${event.repoId}/${event.runId}/${event.timerId} ${plural(event.count, "missed tick")} ${event.firstMissed}..${event.lastMissed} commit ${shortSha(event.commitSha)}`);
      break;
    case "cancelled":
      line("cancelled", `${event.repoId}/${event.runId}/${event.timerId}${event.commitSha === null ? "" : ` commit ${shortSha(event.commitSha)}`}`);
      break;
    case "paused":
      line("paused", `${event.repoId}/${event.runId}/${event.timerId}${event.reason === undefined ? "" : ` reason ${JSON.stringify(event.reason)}`} commit ${shortSha(event.commitSha)}`);
      break;
    case "resumed":
      line("resumed", `${event.repoId}/${event.runId}/${event.timerId} commit ${shortSha(event.commitSha)}`);
      break;
    case "bad_event":
      line("bad-event", `${event.repoId}: ${event.path}${event.seq === null ? "" : ` (seq ${event.seq})`}: ${event.error.message}`);
      break;
    case "ref_rewritten":
      line("ref-rewritten", `${event.repoId}: ${shortSha(event.from)} -> ${shortSha(event.to)}; runs re-read`);
      break;
    case "commit_failed":
      line("commit-failed", `${event.repoId}${event.runId === undefined ? "" : ` run ${event.runId}`}: ${plural(event.timers, "timer")}, retry in ${duration(event.retryInMs)}: ${String(event.error)}`);
      break;
    case "repo_failed":
      line("repo-failed", `${event.repoId}: retry in ${duration(event.retryInMs)}: ${String(event.error)}`);
      break;
    case "timer_rejected":
      line("timer-rejected", `${event.repoId}/${event.runId}/${event.timerId}: ${String(event.error)}`);
      break;
    case "rewind_refused":
      line("rewind-refused", `${event.repoId}: main moved back ${shortSha(event.from)} -> ${shortSha(event.to)} (an ancestor): refused; nothing is fired again or committed until main is restored (git update-ref refs/heads/main ${event.from}) or the host restarts`);
      break;
    case "index_replaced":
      line("index-replaced", `${event.repoId}: a directory sat at the recovery index path; moved to ${event.displacedTo}, index rebuilt`);
      break;
    case "archive_unreadable":
      line("archive-unreadable", `${event.repoId}: refs/archive/runs cannot be read (live runs are served; archived runs cannot be read until it is repaired): ${event.error.message}`);
      break;
  }
}
