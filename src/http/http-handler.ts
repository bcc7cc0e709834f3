/**
 * `createHttpHandler(host, options)`: the host on the network. It returns a fastify instance
 * with every route registered and nothing listening, so a user can either
 * - `await app.listen({host: "127.0.0.1", port: 8080})` (what `workflow-host serve --http` does), or
 * - mount it in a server of their own: `await app.ready()` then call `app.routing(req, res)`
 *   from their `http.createServer` handler for the paths they hand over.
 *
 * Every route needs a token (`Authorization: Bearer <token>` or `X-Workflow-Host-Token`)
 * except `/healthz`, `/readyz` and the dashboard's static files, which hold no data (the page
 * asks for a token and sends it with each data request). Each request is checked in this order:
 * path and method (an unknown path 404 `route_not_found` whatever the method; a method the path
 * does not take 405 `method_not_allowed` with `Allow`, OPTIONS and TRACE included: no CORS
 * preflight is answered and nothing is echoed), token (401), query fields, ids and body (400,
 * 413: a query field the route does not take is refused, never ignored, and so is a body on a
 * GET, HEAD or DELETE), the principal's right
 * on the deployment through `authorize` (403), then the deployment and run (404). Errors are
 * `{code, message}` with the status of `HTTP_STATUS_BY_CODE`; a 500 never carries a stack trace.
 */
import { DEFAULT_REF } from "../substrate/ref-name.js";
import { METHODS } from "node:http";
import { Readable } from "node:stream";
import { fastify, type FastifyInstance, type FastifyReply, type FastifyRequest } from "fastify";
import { DuplicateJsonKeyError, parseJsonText } from "../config-json.js";
import { describeValue, isWorkflowHostError, WorkflowHostError } from "../errors.js";
import { listPendingTimers, listServedPendingTimers, type PendingTimerInfo, type PendingTimersReport } from "../host/list-pending-timers.js";
import type { WorkflowHost } from "../host/host.js";
import type { TimerSpec } from "../host/runtime-types.js";
import { silentLogger } from "../logger.js";
import type { CommittedReads, Principal, RepoAction } from "../substrate/types.js";
import { createSystemTimers, monotonicNowOf, systemClock } from "../time/clock.js";
import { createTimeSlicer, type TimeSlicer } from "../time/time-slicer.js";
import { slicedSort } from "../time/sliced-sort.js";
import { createHeavyReadGate, DEFAULT_HEAVY_READ_CONCURRENCY } from "./heavy-read-gate.js";
import { checkReason } from "../workflow/event-constructors.js";
import { parseRepoId, parseRunId, parseSignalId, parseSignalName, parseTimerId } from "../workflow/ids.js";
import { MAX_PREVIEW_TICKS, previewCron } from "../workflow/schedule/preview.js";
import { MAX_BACKFILL_TICKS } from "../workflow/schedule/schedule-controls.js";
import { parseDeclaredSchedules } from "../workflow/schedule/sync-plan.js";
import { parseInstant } from "../workflow/time.js";
import { type BadEvent, openRunFolder, readRunLogPage } from "../workflow/run-log.js";
import { isUnreadableObject } from "../substrate/object-store.js";
import { summarizeRunLog } from "../workflow/run-log-summary.js";
import { asUnreadableRunError, requireRunFolderLog, requireRunLog } from "../workflow/unreadable-runs.js";
import { ARCHIVE_REF, archivedRunError } from "../workflow/run-archive.js";
import { WORKFLOW_RUN_KIND } from "../workflow/workflow-run-kind.js";
import { loadDashboardAssets } from "./dashboard-assets.js";
import type { ScheduleAction } from "./host-monitor.js";
import { clientErrorResponse, errorReply, HTTP_STATUS_BY_CODE, HttpError, serverFailureMessage } from "./http-errors.js";
import { afterTimersCursor, countQuery, encodeTimersCursor, nextTicks, noBody, objectBody, onlyQueryFields, pageQuery, presentedToken, stringQuery, timersPageQuery, type TimersCursor } from "./http-request.js";
import { streamLiveEvents } from "./live-event-stream.js";

import type { HttpHandlerOptions } from "./http-handler-options.js";
import { principalExpiresAtMs, type ReplaceableTokens } from "./http-tokens.js";
import type { Duplex } from "node:stream";

export type { HttpHandlerOptions } from "./http-handler-options.js";

/** Longest path parameter routed (characters); ids are checked by their own parsers after that. */
const MAX_PATH_PARAM_CHARS = 1024;
/** The order of `GET …/timers`: fireAt, then repo, run and timer id (list-pending-timers.ts's, across deployments). */
function compareListed(a: { readonly fireAtMs: number; readonly info: PendingTimerInfo }, b: { readonly fireAtMs: number; readonly info: PendingTimerInfo }): number {
  if (a.fireAtMs !== b.fireAtMs) return a.fireAtMs - b.fireAtMs;
  const x = a.info;
  const y = b.info;
  if (x.repoId !== y.repoId) return x.repoId < y.repoId ? -1 : 1;
  if (x.runId !== y.runId) return x.runId < y.runId ? -1 : 1;
  return x.timerId < y.timerId ? -1 : x.timerId > y.timerId ? 1 : 0;
}

/** Timers of a `GET …/timers` answer written as JSON between two pauses of its slicer. */
const JSON_TIMERS_PER_PAUSE = 2_048;
/** The largest `limit` of `GET /v1/fires` (the fires a host keeps are fewer by default: 500). */
const MAX_RECENT_FIRES = 10_000;

/** Body fields of each writing route; any other is refused (400 body_invalid). */
const TIMER_FIELDS = ["fireAt", "delayMs", "cron", "timezone", "stepId", "misfire"] as const;
const SIGNAL_FIELDS = ["signalName", "signalId", "payload"] as const;
const WAKE_FIELDS = ["repoId", "runId", ...SIGNAL_FIELDS] as const;
/** Body fields of the schedule verbs (`workflow-host schedule pause|resume|trigger|backfill`'s flags). */
const PAUSE_FIELDS = ["reason"] as const;
const RESUME_FIELDS = ["catchUp"] as const;
const TRIGGER_FIELDS = ["requestId"] as const;
const BACKFILL_FIELDS = ["from", "to", "maxTicks"] as const;
const SYNC_FIELDS = ["schedules", "dryRun"] as const;
/** Query fields of `GET …/schedules/:timerId` (`schedule describe --next N --last M`). */
const DESCRIBE_QUERY = ["next", "last"] as const;
/** Query fields of `GET /v1/schedules/preview` (`schedule preview`'s flags, camel-cased as the bodies' fields). */
const PREVIEW_QUERY = ["cron", "timezone", "next", "after", "startAt", "endAt", "maxTicks"] as const;
/** `maxTicks` of a preview: the largest `schedule preview --max-ticks` takes. */
const MAX_PREVIEW_MAX_TICKS = 1_000_000;
/** `last` of a describe: most fires listed (`schedule describe --last`). */
const MAX_DESCRIBE_FIRES = 100_000;

/** The methods routes take, in the order an `Allow` header lists them. */
type Method = "GET" | "HEAD" | "POST" | "PUT" | "DELETE";
const ROUTE_METHODS: readonly Method[] = ["GET", "HEAD", "POST", "PUT", "DELETE"];
/**
 * Every method node parses into a request (`http.METHODS`: OPTIONS, TRACE, PATCH, QUERY,
 * PROPFIND, …) but CONNECT, which node hands to a `connect` listener instead (see below). Each
 * is routed, so a known path answers every method it does not take with 405 and `Allow`, and an
 * unknown path is 404 whatever the method.
 */
const ALL_METHODS: readonly string[] = METHODS.filter((m) => m !== "CONNECT");
type Handler = (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>;

/**
 * Builds the HTTP face of a host (see the module comment). The host may be started before or
 * after; requests made while it is not running answer 503 (`host_stopped`) where they need it.
 * @throws usage when neither `tokens` nor both `authenticate` and `authorize` are given;
 *   config_invalid for a `bodyLimitBytes` that is not a whole number of bytes >= 1
 */
export function createHttpHandler(host: WorkflowHost, opts: HttpHandlerOptions): FastifyInstance {
  const authenticate = opts.tokens?.authenticate ?? opts.authenticate;
  const authorize = opts.tokens?.authorize ?? opts.authorize;
  if (authenticate === undefined || authorize === undefined) {
    throw new WorkflowHostError("usage", "createHttpHandler needs tokens, or authenticate and authorize: every request is authenticated");
  }
  const monitor = opts.monitor;
  const clock = opts.clock ?? systemClock;
  const logger = opts.logger ?? silentLogger;
  const ref = opts.ref ?? DEFAULT_REF;
  const slicer = opts.timeSlicer ?? (() => createTimeSlicer());
  const heavyReads = createHeavyReadGate(opts.heavyReads?.concurrency, opts.heavyReads?.queue);
  /**
   * Whole timer listings at once: twice the heavy reads (a listing that folds a deployment also
   * takes a heavy read's place, so two folding ones leave room for listings served from the
   * scheduler), the same queue. A served listing reads no log but builds and sends the whole
   * answer (15 MB at 100,000 timers): unbounded, clients polling at once would each cost that.
   */
  const listings = createHeavyReadGate(2 * (opts.heavyReads?.concurrency ?? DEFAULT_HEAVY_READ_CONCURRENCY), opts.heavyReads?.queue);
  /**
   * Aborted when the client closes the connection before its answer was sent: a heavy read still
   * waiting for its turn then leaves the queue (heavy-read-gate.ts).
   */
  const clientGone = (reply: FastifyReply): AbortSignal => {
    const gone = new AbortController();
    reply.raw.once("close", () => {
      if (!reply.raw.writableFinished) gone.abort();
    });
    return gone.signal;
  };
  const storePrincipal = opts.principal ?? null;
  const bodyLimit = opts.bodyLimitBytes ?? 1_048_576;
  if (!Number.isSafeInteger(bodyLimit) || bodyLimit < 1) {
    throw new WorkflowHostError("config_invalid", `createHttpHandler: bodyLimitBytes ${describeValue(bodyLimit)} is not valid; allowed: a whole number of bytes >= 1`, { field: "bodyLimitBytes", value: bodyLimit });
  }
  const timers = opts.timers ?? createSystemTimers({ unref: true });
  const monotonicNow = monotonicNowOf(timers);
  monitor.setPendingSource(() => (host.state === "running" ? host.scheduler.queuedTimers() : []));
  monitor.setHeavyReadSource(() => heavyReads.load());

  const app = fastify({
    bodyLimit,
    logger: false,
    exposeHeadRoutes: false,
    return503OnClosing: true,
    // A request (headers and body) must arrive within a minute: fastify turns node's own limit
    // off, so a client trickling a body held its connection for ever. Responses (the live
    // feed) are not limited by it.
    requestTimeout: 60_000,
    // Node answered an HTTP/1.1 request without Host itself, 400 with an empty body; it is
    // refused in the first hook instead, with `{code, message}` like everything node refuses.
    http: { requireHostHeader: false },
    // Ids reach 128 (repo, run) and 256 (timer, signal) characters: fastify's default cap of 100
    // refused valid ones. Anything longer than an id is refused below with the API's own body.
    routerOptions: { maxParamLength: MAX_PATH_PARAM_CHARS },
    // A URL that does not decode, or a segment longer than the cap: `{code, message}` like every
    // other error, not fastify's own shape.
    // What node refuses before any route sees it (a malformed request, headers over its limit, a
    // request that never arrived whole): `{code, message}` too, not fastify's {error, statusCode}.
    clientErrorHandler: (error, socket) => {
      if ((error as NodeJS.ErrnoException).code === "ECONNRESET" || socket.destroyed) return;
      if (socket.writable) socket.write(clientErrorResponse((error as NodeJS.ErrnoException).code));
      socket.destroy(error);
    },
    frameworkErrors: (error, _request, reply) => {
      const tooLong = error.code === "FST_ERR_MAX_PARAM_LENGTH";
      const answer = errorReply(new HttpError("url_invalid", tooLong ? `a path segment is longer than ${MAX_PATH_PARAM_CHARS} characters; ids are at most 256` : "the URL is not valid (a path segment does not percent-decode)"));
      void (reply as FastifyReply).code(answer.status).send(answer.body);
    },
  });
  // fastify routes only the common methods by default; the others are taken without a body.
  const routable = new Set((app as unknown as { supportedMethods: readonly string[] }).supportedMethods);
  for (const method of ALL_METHODS) if (!routable.has(method)) app.addHttpMethod(method);
  // CONNECT asks for a tunnel, not a resource: node closed the connection without a word when
  // nobody listened; it is answered 400 {code, message} as what node refuses is.
  app.server.on("connect", (_request: unknown, socket: Duplex) => {
    // Node hands the socket over without its own error listener: a reset must not crash the host.
    socket.on("error", () => socket.destroy());
    if (socket.writable) socket.end(clientErrorResponse("CONNECT"));
    else socket.destroy();
  });
  const principals = new WeakMap<FastifyRequest, Principal>();
  const openRoutes = new Set<string>();
  const methodsByUrl = new Map<string, Set<Method>>();
  const streams = new Set<() => void>();

  // Every body is JSON whatever its content type (cloud schedulers often send
  // application/octet-stream); an empty body is "no body".
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("*", { parseAs: "string" }, (request, body, done) => {
    // Bodies are taken as sent, unencoded: a gzipped body read as text was "not valid JSON", and
    // a plain one labelled gzip was taken as if the label were not there.
    const encoding = request.headers["content-encoding"];
    if (encoding !== undefined && encoding.trim().toLowerCase() !== "identity") {
      return done(new HttpError("media_type_unsupported", `bodies are taken unencoded; this one says Content-Encoding: ${encoding.slice(0, 64)}: send the JSON as it is`), undefined);
    }
    const text = typeof body === "string" ? body : body.toString("utf8");
    if (text.trim() === "") return done(null, undefined);
    try {
      done(null, parseJsonText(text));
    } catch (error) {
      // A key given twice would count once, as whichever came last (a signalId, a payload's field).
      done(new HttpError("body_invalid", error instanceof DuplicateJsonKeyError ? `the body is not valid: ${error.message}` : "the body is not valid JSON"), undefined);
    }
  });

  app.setErrorHandler((error, request, reply) => {
    const answer = errorReply(error);
    if (answer.unexpected) logger.error(`${request.method} ${request.routeOptions.url ?? request.url} failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    return reply.code(answer.status).headers(answer.headers).send(answer.body);
  });
  // A path under /v1 is told where the routes are listed; one outside it, that the API is under /v1.
  const routeNotFound = (request: FastifyRequest): HttpError => {
    const path = request.url.split("?")[0] ?? "";
    const hint = path === "/v1" || path.startsWith("/v1/") ? "the routes are listed in the README's HTTP table (\"HTTP: API, wake-ups, metrics, dashboard\")" : "the API is under /v1";
    return new HttpError("route_not_found", `no route ${request.method} ${path}; ${hint}`);
  };
  app.setNotFoundHandler((request, reply) => {
    const answer = errorReply(routeNotFound(request));
    return reply.code(answer.status).send(answer.body);
  });

  app.addHook("onRequest", async (request) => {
    // What is not a valid request whatever its path (RFC 9112 §3.2: an HTTP/1.1 request names its
    // Host; RFC 9110 §5.3: Authorization is no list, so two of them are two different claims).
    if (request.raw.httpVersion === "1.1" && request.headers.host === undefined) throw new HttpError("request_invalid", "an HTTP/1.1 request needs a Host header");
    // Node kept the first Authorization and joined two tokens with ", ": a proxy reading the last
    // one would have checked another token than the host. (One of each is taken: a proxy's own
    // `Authorization: Basic` beside the host's X-Workflow-Host-Token.)
    const names = request.raw.rawHeaders.filter((_, i) => i % 2 === 0).map((name) => name.toLowerCase());
    for (const header of ["authorization", "x-workflow-host-token"]) {
      if (names.indexOf(header) !== names.lastIndexOf(header)) throw new HttpError("request_invalid", `${header === "authorization" ? "Authorization" : "X-Workflow-Host-Token"} is given more than once; send one token in one header`);
    }
    const url = request.routeOptions.url;
    // An unknown path (404, whatever the method) and a method its path does not take (405) need
    // no token: they reveal nothing. Both are answered here, first: a body is never parsed for
    // them, so a bad one (or a QUERY without Content-Type) cannot turn them into a 400 or 415.
    // The asterisk form (`OPTIONS * HTTP/1.1`, or `GET *`) names no path: the router took it for
    // `/` and `GET *` served the dashboard, `OPTIONS *` was 405.
    if (url === undefined || request.raw.url === "*") throw routeNotFound(request);
    const allow = (request.routeOptions.config as { allow?: string }).allow;
    if (allow !== undefined) throw new HttpError("method_not_allowed", `${url} takes ${allow}, not ${request.method}`, { allow });
    if (openRoutes.has(url)) return;
    const token = presentedToken(request);
    if (token === null) throw new HttpError("token_missing", "send a token as Authorization: Bearer <token> or X-Workflow-Host-Token", { "www-authenticate": 'Bearer realm="workflow-host"' });
    const principal = await authenticate(token);
    if (principal === null || principal === undefined) throw new HttpError("token_invalid", "the token is not known", { "www-authenticate": 'Bearer realm="workflow-host", error="invalid_token"' });
    // A token past its expiresAt (by the handler's clock): its own code, and nothing more (not
    // whose token, nor since when).
    if (isExpired(principal)) throw new HttpError("token_expired", "the token has expired", { "www-authenticate": 'Bearer realm="workflow-host", error="invalid_token", error_description="the token has expired"' });
    principals.set(request, principal);
  });
  app.addHook("onResponse", async (request, reply) => {
    monitor.recordRequest(request.routeOptions.url ?? "unmatched", request.method, reply.statusCode);
  });
  app.addHook("preClose", async () => {
    for (const end of streams) end();
  });
  // Replaced tokens (serve --tokens follows its file): a live stream keeps the principal it was
  // opened with, so each is ended and its client reconnects with its token, checked anew.
  const onReplace = (opts.tokens as Partial<ReplaceableTokens> | undefined)?.onReplace;
  if (typeof onReplace === "function") {
    const stop = onReplace.call(opts.tokens, () => {
      for (const end of [...streams]) end();
    });
    app.addHook("onClose", async () => {
      stop();
    });
  }

  /**
   * Registers a route. `query` is what it takes in the query string: the field names (default
   * none; any other field is 400 body_invalid before the handler runs), "page" for a route whose
   * handler reads its whole query with `pageQuery` (page_invalid), or "ignored" for the
   * dashboard's static files (a cache-busting `?v=` is no mistake there). A route of another
   * method than PUT and POST refuses a body (400 body_invalid, see `noBody`).
   */
  function route(method: Method, url: string, handler: Handler, options: { open?: boolean; query?: readonly string[] | "page" | "ignored" } = {}): void {
    if (options.open === true) openRoutes.add(url);
    const query = options.query ?? [];
    // Only PUT and POST routes take a body (their handlers read it with objectBody). A GET or
    // DELETE with one is refused, not dropped: `DELETE …/timers/t` with `{"reason":"paid"}`
    // cancelled without the reason, and a body on a GET would be a filter that filters nothing.
    const takesBody = method === "PUT" || method === "POST";
    const checked: Handler = async (request, reply) => {
      if (typeof query !== "string") onlyQueryFields(request.query, query);
      if (!takesBody) noBody(request, Array.isArray(query) && query.length > 0 ? `; it takes ${query.join(", ")} in the query (?${query[0]}=…)` : "");
      return handler(request, reply);
    };
    const methods = methodsByUrl.get(url) ?? new Set<Method>();
    methods.add(method);
    if (method === "GET") methods.add("HEAD");
    methodsByUrl.set(url, methods);
    app.route({ method: method === "GET" ? ["GET", "HEAD"] : method, url, handler: checked, config: {} });
  }

  const principalOf = (request: FastifyRequest): Principal => principals.get(request) ?? null;
  /** Ms until `principal`'s token expires by the clock (0 when it has), or null when it never does. */
  const expiresInMs = (principal: Principal): number | null => {
    const expiresAtMs = principalExpiresAtMs(principal);
    return expiresAtMs === null ? null : Math.max(0, expiresAtMs - clock().getTime());
  };
  /** Whether `principal`'s token has expired: its `expiresAtMs` (see `principalExpiresAtMs`) is at or before the clock's now. */
  const isExpired = (principal: Principal): boolean => {
    const expiresAtMs = principalExpiresAtMs(principal);
    return expiresAtMs !== null && clock().getTime() >= expiresAtMs;
  };

  async function allowed(principal: Principal, repoId: string | "*", action: RepoAction): Promise<boolean> {
    try {
      return (await authorize!(principal, { kind: WORKFLOW_RUN_KIND, id: repoId as "*" }, repoId === "*" ? null : ref, action)) === true;
    } catch {
      return false;
    }
  }

  async function requireAllowed(request: FastifyRequest, repoId: string | "*", action: RepoAction): Promise<void> {
    if (!(await allowed(principalOf(request), repoId, action))) {
      throw new WorkflowHostError("authorize_denied", `this token may not ${action} ${repoId === "*" ? "every deployment" : `deployment ${repoId}`}`, { repoId, action });
    }
  }

  function ensureRunning(): void {
    if (host.state !== "running") throw new WorkflowHostError("host_stopped", `the host is ${host.state}`, { state: host.state });
  }

  /**
   * Reads of the commit that holds a run's log: the tip, or, once retention moved the run out of
   * the live tree, the archive ref. Nothing of the log is read here.
   * @throws run_not_found when neither holds a folder for the run
   */
  async function openRun(repoId: string, runId: string): Promise<{ reads: CommittedReads; archived: string | null }> {
    const repo = { kind: WORKFLOW_RUN_KIND, id: repoId };
    const reads = await host.store.openCommittedReads(storePrincipal, repo, ref);
    if ((await reads.treeOid(`runs/${runId}`)) !== null) return { reads, archived: null };
    const archive = await host.store.openCommittedReads(storePrincipal, repo, ARCHIVE_REF);
    if (archive.commitSha !== null && (await archive.treeOid(`runs/${runId}`)) !== null) return { reads: archive, archived: ARCHIVE_REF };
    throw new WorkflowHostError("run_not_found", `run ${runId} has no log in deployment ${repoId}`, { repoId, runId });
  }

  async function requireRun(repoId: string, runId: string): Promise<void> {
    const reads = await host.store.openCommittedReads(storePrincipal, { kind: WORKFLOW_RUN_KIND, id: repoId }, ref);
    const entries = await reads.listDir(`runs/${runId}`).catch(async (error: unknown) => {
      // A run folder that cannot be read is the run's (409, naming it), not the host's.
      if (isUnreadableObject(error)) await openRunFolder(reads, runId).catch((named: unknown) => {
        throw asUnreadableRunError(repoId, runId, named, "nothing was written");
      });
      throw error;
    });
    if (entries.length === 0) {
      // A run retention archived is closed (409), not unknown (404).
      const archived = await archivedRunError(host.store, storePrincipal, { kind: WORKFLOW_RUN_KIND, id: repoId }, runId, ref);
      throw archived ?? new WorkflowHostError("run_not_found", `run ${runId} has no log in deployment ${repoId}`, { repoId, runId });
    }
  }

  /** One write through the HTTP face, timed for the commit histogram. */
  async function timedWrite<T>(repoId: string, write: () => Promise<T>): Promise<T> {
    const started = monotonicNow();
    try {
      const result = await write();
      monitor.recordApiCommit((monotonicNow() - started) / 1000, false, repoId);
      return result;
    } catch (error) {
      const failed = !isWorkflowHostError(error) || ["io_failed", "ref_locked", "ref_conflict", "ref_corrupt", "object_corrupt", "object_missing"].includes(error.code);
      monitor.recordApiCommit((monotonicNow() - started) / 1000, failed, repoId);
      throw error;
    }
  }

  async function deliver(request: FastifyRequest, body: Record<string, unknown>, defaults: { repoId?: string; runId?: string; signalName?: string }) {
    const repoId = parseRepoId(defaults.repoId ?? body["repoId"]);
    const runId = parseRunId(defaults.runId ?? body["runId"]);
    const signalName = parseSignalName(body["signalName"] ?? defaults.signalName);
    const signalId = body["signalId"] === undefined ? undefined : parseSignalId(body["signalId"]);
    await requireAllowed(request, repoId, "write");
    ensureRunning();
    // A run with no log is started by its first signal (as `signal send` and
    // runtime.deliverSignal do: a workflow may wait before it wrote anything); an archived run
    // is closed (409).
    const archived = await archivedRunError(host.store, storePrincipal, { kind: WORKFLOW_RUN_KIND, id: repoId }, runId, ref);
    if (archived !== null) throw archived;
    const payload = body["payload"] === undefined ? null : body["payload"];
    const result = await timedWrite(repoId, () => host.channel(repoId, runId).deliver(signalName, payload, signalId));
    monitor.recordDelivery({ repoId, runId, signalName, signalId: result.signalId, seq: result.seq, duplicate: result.duplicate });
    return { repoId, runId, signalName, ...result };
  }

  // --- open routes: probes and the dashboard's static files ---------------------------------

  route("GET", "/healthz", async () => ({ ok: true, state: host.state }), { open: true });

  route("GET", "/readyz", async (_request, reply) => {
    const reasons: string[] = [];
    if (host.state !== "running" || host.lock === null) reasons.push(`host is ${host.state}${host.lock === null ? " without its lock" : ""}`);
    let deployments: string[] = [];
    if (host.state === "running") {
      deployments = await host.store.listRepos(storePrincipal, WORKFLOW_RUN_KIND);
      const recovered = monitor.recovered();
      const failing = monitor.failing();
      // Counts only: the probe is open, so it names no deployment (GET /v1/timers names them as failedRepos).
      const failed = deployments.filter((id) => failing.has(id));
      const waiting = deployments.filter((id) => !recovered.has(id) && !failing.has(id));
      if (failed.length > 0) reasons.push(`${failed.length} of ${deployments.length} deployments failing (retried with backoff; the host's log and GET /v1/timers name them)`);
      if (waiting.length > 0) reasons.push(`${waiting.length} of ${deployments.length} deployments not recovered yet`);
    }
    return reply.code(reasons.length === 0 ? 200 : 503).send({ ready: reasons.length === 0, deployments: deployments.length, reasons });
  }, { open: true });

  if (opts.dashboard !== false) {
    const assets = loadDashboardAssets();
    for (const asset of assets) {
      route("GET", asset.url, async (_request, reply) =>
        reply
          .header("content-type", asset.contentType)
          .header("cache-control", "no-cache")
          .header("content-security-policy", "default-src 'self'; style-src 'self'; script-src 'self'; connect-src 'self'; img-src 'self' data:")
          .header("x-content-type-options", "nosniff")
          .send(asset.body),
      { open: true, query: "ignored" });
    }
  }

  // --- metrics ----------------------------------------------------------------------------

  route("GET", "/metrics", async (request, reply) => {
    await requireAllowed(request, "*", "read");
    const text = await monitor.registry.metrics();
    return reply.header("content-type", monitor.registry.contentType).send(text);
  });

  // --- /v1 ----------------------------------------------------------------------------------

  route("GET", "/v1/deployments", async (request) => {
    ensureRunning();
    const principal = principalOf(request);
    const all = await host.store.listRepos(storePrincipal, WORKFLOW_RUN_KIND);
    const pending = new Map<string, number>();
    for (const t of host.scheduler.queuedTimers()) pending.set(t.repoId, (pending.get(t.repoId) ?? 0) + 1);
    const recovered = monitor.recovered();
    const visible: { repoId: string; pendingTimers: number; recovered: boolean }[] = [];
    for (const repoId of all.sort()) {
      if (await allowed(principal, repoId, "read")) visible.push({ repoId, pendingTimers: pending.get(repoId) ?? 0, recovered: recovered.has(repoId) });
    }
    return { deployments: visible };
  });

  /**
   * Pending timers of `repoIds`. With `keepGoing` (every deployment listed), a deployment that
   * cannot be read (a damaged ref, I/O) is named in `failedRepos` and the others are still
   * listed, as `workflow-host timers` does; otherwise its error is the answer. A run whose
   * folder cannot be read (a missing or damaged object) is named in `unreadableRuns` either way
   * and the deployment's other runs are listed.
   *
   * A deployment this host serves and has recovered is listed from the scheduler's memory
   * (listServedPendingTimers: no log read, the same content as the fold at the commit it names);
   * any other (not served here: leased elsewhere, not discovered yet; not recovered yet) folds
   * its logs, through the heavy-read gate (`gone`: the client hung up). `deployments` says, per
   * deployment listed, which commit its part reflects and where it came from (design notes §76).
   */
  const timersOf = async (repoIds: readonly string[], keepGoing: boolean, gone: AbortSignal, page: { readonly after?: TimersCursor; readonly limit?: number }) => {
    // One instant for every deployment listed.
    const now = clock();
    // One slicer for the whole answer (listing each deployment, then each series' next ticks),
    // made at its first pause: a request that leaves the heavy-read queue makes none.
    let sliced: TimeSlicer | null = null;
    const pause = (): Promise<void> => (sliced ??= slicer()).pause();
    const listed: { info: PendingTimersReport["timers"][number]; fireAtMs: number }[] = [];
    const failedRepos: { repoId: string; code: string; message: string }[] = [];
    const unreadableRuns: { repoId: string; runId: string; path: string; code: string; message: string }[] = [];
    const deployments: { repoId: string; commitSha: string | null; source: "scheduler" | "log" }[] = [];
    for (const repoId of repoIds) {
      const rid = { kind: WORKFLOW_RUN_KIND, id: repoId };
      // The ref is read first (one file): a damaged one is folded, and reported as the fold reports it.
      const tip = (): Promise<string | null> => host.store.resolveRef(storePrincipal, rid, ref);
      let report: PendingTimersReport | null =
        host.state === "running" ? await listServedPendingTimers(host.scheduler, repoId, { clock: () => now, pause, tip, poke: () => host.store.poke(rid), timers }).catch(() => null) : null;
      const source = report === null ? "log" : "scheduler";
      try {
        report ??= await heavyReads.run(() => listPendingTimers(host.store, { principal: storePrincipal, repoId, ref, clock: () => now, pause }), gone);
      } catch (error) {
        if (!keepGoing || !isWorkflowHostError(error) || ["authorize_denied", "store_stopped"].includes(error.code)) throw error;
        // Its message names server paths (the log has it); the client is told the code.
        logger.error(`GET timers: deployment ${repoId} cannot be read: ${error.message}`);
        failedRepos.push({ repoId, code: error.code, message: HTTP_STATUS_BY_CODE[error.code] === 500 ? serverFailureMessage(error.code) : error.message });
        continue;
      }
      deployments.push({ repoId, commitSha: report.commits[0]?.commitSha ?? null, source });
      for (const u of report.unreadableRuns) {
        // The client is told the run, where in it and the code: the store's message may name a
        // server path (the host reported the run with it when it recovered the deployment).
        unreadableRuns.push({ repoId, runId: u.runId, path: u.path, code: u.error.code, message: `${u.path} of run ${u.runId} cannot be read (${u.error.code}); its timers are not listed; workflow-host check names the object` });
      }
      const after = page.after;
      for (const info of report.timers) {
        const fireAtMs = Date.parse(info.fireAt);
        if (after === undefined || afterTimersCursor(after, fireAtMs, info.repoId, info.runId, info.timerId)) listed.push({ info, fireAtMs });
      }
    }
    // By fireAt across deployments, then repo, run and timer id: one place per timer, which the
    // page's cursor names.
    const all = await slicedSort(listed, compareListed, pause);
    const sorted = page.limit === undefined || all.length <= page.limit ? all : all.slice(0, page.limit);
    const last = sorted.length < all.length ? sorted[sorted.length - 1] : undefined;
    const nextAfter = last === undefined ? null : encodeTimersCursor({ fireAtMs: last.fireAtMs, repoId: last.info.repoId, runId: last.info.runId, timerId: last.info.timerId });
    // Series of one cron and zone due at one tick (hundreds of runs on one schedule) share their next ticks.
    const ticksOf = new Map<string, string[]>();
    const listing = [];
    for (let i = 0; i < sorted.length; i++) {
      if (i % JSON_TIMERS_PER_PAUSE === 0) await pause();
      const t = (sorted[i] as (typeof sorted)[number]).info;
      if (t.cron === undefined) {
        // dueInMs and lateMs as the CLI's `timers --json` gives them: both ≥ 0, one of them 0.
        listing.push(t);
        continue;
      }
      const key = `${t.cron}\u0000${t.timezone ?? ""}\u0000${t.fireAt}`;
      let ticks = ticksOf.get(key);
      if (ticks === undefined) {
        await pause();
        ticks = nextTicks(t.cron, t.timezone, t.fireAt);
        ticksOf.set(key, ticks);
      }
      listing.push({ ...t, nextTicks: ticks });
    }
    // `now` is the instant every dueInMs counts from. Written as JSON here, a slice of timers
    // between two pauses: 100,000 timers are 15 MB, one JSON.stringify of them held the loop ~100 ms.
    const parts: string[] = [];
    for (let i = 0; i < listing.length; i += JSON_TIMERS_PER_PAUSE) {
      await pause();
      parts.push(JSON.stringify(listing.slice(i, i + JSON_TIMERS_PER_PAUSE)).slice(1, -1));
    }
    const head = JSON.stringify({ now: now.toISOString() }).slice(0, -1);
    const tail = JSON.stringify({ nextAfter, failedRepos, unreadableRuns, deployments }).slice(1);
    const chunks = [`${head},"timers":[`];
    for (let i = 0; i < parts.length; i++) chunks.push(i === 0 ? (parts[i] as string) : `,${parts[i] as string}`);
    chunks.push(`],${tail}`);
    return chunks;
  };

  /**
   * The timers answer, JSON text in pieces, sent as a stream of them: one 15 MB string (100,000
   * timers) was one synchronous write of its whole UTF-8 encoding.
   */
  const sendJson = (reply: FastifyReply, chunks: readonly string[]): FastifyReply => reply.header("content-type", "application/json; charset=utf-8").send(Readable.from(chunks, { objectMode: false }));

  route("GET", "/v1/timers", async (request, reply) => {
    const page = timersPageQuery(request.query);
    ensureRunning();
    const principal = principalOf(request);
    const all = await host.store.listRepos(storePrincipal, WORKFLOW_RUN_KIND);
    const readable: string[] = [];
    for (const repoId of all) if (await allowed(principal, repoId, "read")) readable.push(repoId);
    const gone = clientGone(reply);
    return sendJson(reply, await listings.run(() => timersOf(readable, true, gone, page), gone));
  }, { query: "page" });

  route("GET", "/v1/deployments/:repoId/timers", async (request, reply) => {
    const { repoId: rawRepo } = request.params as { repoId: string };
    const repoId = parseRepoId(rawRepo);
    const page = timersPageQuery(request.query);
    await requireAllowed(request, repoId, "read");
    ensureRunning();
    const gone = clientGone(reply);
    return sendJson(reply, await listings.run(() => timersOf([repoId], false, gone, page), gone));
  }, { query: "page" });

  route("PUT", "/v1/deployments/:repoId/runs/:runId/timers/:timerId", async (request) => {
    const params = request.params as { repoId: string; runId: string; timerId: string };
    const repoId = parseRepoId(params.repoId);
    const runId = parseRunId(params.runId);
    const timerId = parseTimerId(params.timerId);
    const body = objectBody(request.body, TIMER_FIELDS);
    const spec: Record<string, unknown> = { timerId };
    for (const key of TIMER_FIELDS) {
      if (body[key] !== undefined) spec[key] = body[key];
    }
    await requireAllowed(request, repoId, "write");
    ensureRunning();
    const result = await timedWrite(repoId, () => host.runtime(repoId).setTimer(runId, spec as unknown as TimerSpec));
    return { repoId, runId, ...result };
  });

  route("DELETE", "/v1/deployments/:repoId/runs/:runId/timers/:timerId", async (request) => {
    const params = request.params as { repoId: string; runId: string; timerId: string };
    const repoId = parseRepoId(params.repoId);
    const runId = parseRunId(params.runId);
    const timerId = parseTimerId(params.timerId);
    const reason = (request.query as { reason?: unknown }).reason;
    if (reason !== undefined && typeof reason !== "string") throw new HttpError("body_invalid", "reason must be one string");
    // The library's limit (event_invalid), as the CLI applies it.
    checkReason(reason);
    await requireAllowed(request, repoId, "write");
    ensureRunning();
    await requireRun(repoId, runId);
    const result = await timedWrite(repoId, () => host.scheduler.cancelTimer(repoId, runId, timerId, reason));
    if (result.outcome === "not_armed") throw new WorkflowHostError("timer_not_found", `timer ${timerId} was never set in run ${runId}`, { repoId, runId, timerId });
    return { repoId, runId, timerId, ...result };
  }, { query: ["reason"] });

  route("POST", "/v1/deployments/:repoId/runs/:runId/signals", async (request) => {
    const params = request.params as { repoId: string; runId: string };
    return deliver(request, objectBody(request.body, SIGNAL_FIELDS), { repoId: params.repoId, runId: params.runId });
  });

  // --- schedules: the verbs of `workflow-host schedule`, through the host's schedule controls ---
  // (seams/scheduler/schedule-controls.ts, the calls the CLI makes). Each write is appended under
  // the repo lock, decided from the run's log at the tip, and the running scheduler picks it up
  // through its tail; ids, body and query are checked before anything is read or written.

  route("GET", "/v1/deployments/:repoId/schedules", async (request, reply) => {
    const { repoId: rawRepo } = request.params as { repoId: string };
    const repoId = parseRepoId(rawRepo);
    await requireAllowed(request, repoId, "read");
    ensureRunning();
    const { series, unreadableRuns } = await heavyReads.run(() => host.schedules.listSeries(repoId), clientGone(reply));
    return {
      repoId,
      // Whether this token may pause, resume, trigger and backfill here (the dashboard offers
      // its controls by it); each write is still authorized on its own.
      mayWrite: await allowed(principalOf(request), repoId, "write"),
      series,
      // As GET …/timers names them: the run, where in it and the code, never a server path.
      unreadableRuns: unreadableRuns.map((u) => ({ runId: u.runId, path: u.path, code: u.error.code, message: `${u.path} of run ${u.runId} cannot be read (${u.error.code}); its series are not listed; workflow-host check names the object` })),
    };
  });

  // The next slots of a cron expression not set anywhere (`schedule preview --cron --json`):
  // reads no deployment, so any valid token may ask; the query is checked as the CLI checks
  // its flags, and `previewCron` (the CLI's call) checks the expression, zone and instants.
  route("GET", "/v1/schedules/preview", async (request) => {
    const query = request.query as Record<string, unknown>;
    const cron = stringQuery(query, "cron");
    if (cron === undefined) throw new HttpError("body_invalid", 'the query needs cron: 5 fields, or 6 with seconds first (?cron=0%202%20*%20*%20*)');
    const timezone = stringQuery(query, "timezone");
    const next = countQuery(query, "next", { min: 1, max: MAX_PREVIEW_TICKS }, 5);
    const maxTicks = query["maxTicks"] === undefined ? undefined : countQuery(query, "maxTicks", { min: 1, max: MAX_PREVIEW_MAX_TICKS }, 1);
    const after = stringQuery(query, "after") ?? clock().toISOString();
    const startAt = stringQuery(query, "startAt");
    const endAt = stringQuery(query, "endAt");
    const slots = previewCron({
      cron,
      after,
      count: next,
      ...(timezone === undefined ? {} : { timezone }),
      ...(startAt === undefined ? {} : { startAt }),
      ...(endAt === undefined ? {} : { endAt }),
      ...(maxTicks === undefined ? {} : { maxTicks }),
    });
    return { cron, timezone: timezone ?? "UTC", after, slots };
  }, { query: PREVIEW_QUERY });

  // Reconciles the deployment's sync-owned series with a declared set (`schedule sync --file`):
  // the set is checked whole before anything is read; a dry run writes nothing and needs only
  // the right to read. Conflicts are left alone and listed (the rest is applied): 200 either way.
  route("POST", "/v1/deployments/:repoId/schedules/sync", async (request, reply) => {
    const { repoId: rawRepo } = request.params as { repoId: string };
    const repoId = parseRepoId(rawRepo);
    const body = objectBody(request.body, SYNC_FIELDS);
    const { schedules, dryRun = false } = body;
    if (schedules === undefined) throw new HttpError("body_invalid", "the body needs schedules: the declared set, an array of {runId, timerId, cron, timezone?, misfire?, startAt?, endAt?, maxTicks?, jitterMs?, stepId?} ([] cancels every series sync owns)");
    if (typeof dryRun !== "boolean") throw new HttpError("body_invalid", `dryRun ${describeValue(dryRun)} is not valid; allowed: true or false`);
    parseDeclaredSchedules(schedules);
    await requireAllowed(request, repoId, dryRun ? "read" : "write");
    ensureRunning();
    const sync = () => host.schedules.syncSchedules(repoId, schedules, { dryRun });
    const r = await heavyReads.run(() => (dryRun ? sync() : timedWrite(repoId, sync)), clientGone(reply));
    if (r.commits.length > 0) monitor.recordScheduleChange({ repoId, action: "sync", outcome: "synced" });
    return {
      repoId,
      dryRun,
      plan: r.plan,
      commits: r.commits,
      unreadableRuns: r.unreadableRuns.map((u) => ({ runId: u.runId, path: u.path, code: u.error.code, message: `${u.path} of run ${u.runId} cannot be read (${u.error.code}); nothing was written to it; workflow-host check names the object` })),
    };
  });

  /** The series a route names (`:repoId`, `:runId`, `:timerId`), its ids checked. */
  const seriesOf = (request: FastifyRequest): { repoId: string; runId: string; timerId: string } => {
    const params = request.params as { repoId: string; runId: string; timerId: string };
    return { repoId: parseRepoId(params.repoId), runId: parseRunId(params.runId), timerId: parseTimerId(params.timerId) };
  };

  /** Tells live subscribers (the dashboard) of a schedule write that committed something. */
  const changed = (s: { repoId: string; runId: string; timerId: string }, action: ScheduleAction, outcome: string, commitSha: string | null): void => {
    if (commitSha !== null) monitor.recordScheduleChange({ ...s, action, outcome });
  };

  /** The principal's right, the host running and the run there (404 run_not_found, 409 archived or unreadable), then `work`. */
  async function onSeries<T>(request: FastifyRequest, s: { repoId: string; runId: string }, action: RepoAction, work: () => Promise<T>): Promise<T> {
    await requireAllowed(request, s.repoId, action);
    ensureRunning();
    await requireRun(s.repoId, s.runId);
    return action === "write" ? timedWrite(s.repoId, work) : work();
  }

  // One series: summary, the next `next` slots (UTC, local, jittered) and its history, the last
  // `last` fires of it listed (`schedule describe --json`).
  route("GET", "/v1/deployments/:repoId/runs/:runId/schedules/:timerId", async (request) => {
    const s = seriesOf(request);
    const next = countQuery(request.query, "next", { min: 1, max: MAX_PREVIEW_TICKS }, 5);
    const last = countQuery(request.query, "last", { min: 0, max: MAX_DESCRIBE_FIRES }, 10);
    const d = await onSeries(request, s, "read", () => host.schedules.describe(s.repoId, s.runId, s.timerId, { next }));
    return { repoId: s.repoId, ...d, history: { ...d.history, fires: last === 0 ? [] : d.history.fires.slice(-last) } };
  }, { query: DESCRIBE_QUERY });

  route("POST", "/v1/deployments/:repoId/runs/:runId/schedules/:timerId/pause", async (request) => {
    const s = seriesOf(request);
    const reason = objectBody(request.body, PAUSE_FIELDS)["reason"];
    if (reason !== undefined && typeof reason !== "string") throw new HttpError("body_invalid", `reason ${describeValue(reason)} is not valid; allowed: one string of at most 1000 characters`);
    checkReason(reason);
    const r = await onSeries(request, s, "write", () => host.schedules.pause(s.repoId, s.runId, s.timerId, reason === undefined ? {} : { reason }));
    changed(s, "pause", r.outcome, r.commitSha);
    return { ...s, ...r };
  });

  route("POST", "/v1/deployments/:repoId/runs/:runId/schedules/:timerId/resume", async (request) => {
    const s = seriesOf(request);
    const catchUp = objectBody(request.body, RESUME_FIELDS)["catchUp"];
    if (catchUp !== undefined && typeof catchUp !== "boolean") throw new HttpError("body_invalid", `catchUp ${describeValue(catchUp)} is not valid; allowed: true or false`);
    const r = await onSeries(request, s, "write", () => host.schedules.resume(s.repoId, s.runId, s.timerId, { catchUp: catchUp === true }));
    changed(s, "resume", r.outcome, r.commitSha);
    return { ...s, ...r };
  });

  route("POST", "/v1/deployments/:repoId/runs/:runId/schedules/:timerId/trigger", async (request) => {
    const s = seriesOf(request);
    const given = objectBody(request.body, TRIGGER_FIELDS)["requestId"];
    if (given === undefined) throw new HttpError("body_invalid", "the body needs requestId: the trigger's idempotency key (1-256 of A-Z a-z 0-9 _ . : -); the same one again fires nothing");
    const requestId = parseSignalId(given, "requestId");
    const r = await onSeries(request, s, "write", () => host.schedules.trigger(s.repoId, s.runId, s.timerId, requestId));
    changed(s, "trigger", r.outcome, r.commitSha);
    return { ...s, requestId, ...r };
  });

  route("POST", "/v1/deployments/:repoId/runs/:runId/schedules/:timerId/backfill", async (request) => {
    const s = seriesOf(request);
    const body = objectBody(request.body, BACKFILL_FIELDS);
    for (const field of ["from", "to"] as const) {
      if (body[field] === undefined) throw new HttpError("body_invalid", `the body needs ${field}: an RFC 3339 instant with its offset; the range is from..to, both included, in the past`);
    }
    const from = parseInstant(body["from"], "from");
    const to = parseInstant(body["to"], "to");
    const maxTicks = body["maxTicks"];
    if (maxTicks !== undefined && (typeof maxTicks !== "number" || !Number.isSafeInteger(maxTicks) || maxTicks < 1 || maxTicks > MAX_BACKFILL_TICKS)) {
      // JSON reading rounds a number past 2^53 − 1 (9007199254740993 reads as …992): echoing it
      // would name a value that was never sent.
      const shown = typeof maxTicks === "number" && Math.abs(maxTicks) > Number.MAX_SAFE_INTEGER ? "" : ` ${describeValue(maxTicks)}`;
      throw new HttpError("body_invalid", `maxTicks${shown} is not a whole number in 1..${MAX_BACKFILL_TICKS}`);
    }
    const r = await onSeries(request, s, "write", () => host.schedules.backfill(s.repoId, s.runId, s.timerId, { from, to, ...(maxTicks === undefined ? {} : { maxTicks }) }));
    changed(s, "backfill", r.fired.length === 0 ? "none_fired" : "fired", r.commitSha);
    return { ...s, ...r };
  });

  const problemJson = (b: BadEvent) => ({ path: b.path, seq: b.seq, code: b.error.code, message: b.error.message });

  // A run: its summary (state, counts, what is wrong; folded event by event, kept by the run's
  // tree oid) and the first page of its events. The log is never held whole.
  route("GET", "/v1/deployments/:repoId/runs/:runId", async (request) => {
    const params = request.params as { repoId: string; runId: string };
    const repoId = parseRepoId(params.repoId);
    const runId = parseRunId(params.runId);
    const { limit } = pageQuery(request.query, ["limit"]);
    await requireAllowed(request, repoId, "read");
    const { reads, archived } = await openRun(repoId, runId);
    // A run whose folders cannot be read, or whose events entry is a file or a link (no log):
    // 409 with the run named (see UNREADABLE_RUN_STATUS).
    const summary = requireRunLog(
      repoId,
      await summarizeRunLog(reads, runId).catch((error: unknown) => {
        throw asUnreadableRunError(repoId, runId, error, "nothing of it can be shown");
      }),
    );
    if (summary.eventCount === 0 && summary.badCount === 0 && summary.problemCount === 0) {
      throw new WorkflowHostError("run_not_found", `run ${runId} has no log in deployment ${repoId}`, { repoId, runId });
    }
    const page = await readRunLogPage(reads, runId, limit === undefined ? { summary } : { limit, summary });
    return {
      repoId,
      runId,
      commitSha: reads.commitSha,
      archived,
      eventCount: summary.eventCount,
      events: page.events,
      nextAfter: page.nextAfter,
      bad: summary.bad.map(problemJson),
      badCount: summary.badCount,
      problems: summary.problems.map(problemJson),
      problemCount: summary.problemCount,
      state: {
        lastSeq: summary.state.lastSeq,
        terminal: summary.state.terminal,
        pendingTimers: [...summary.state.pendingTimers.values()],
        unconsumedSignals: summary.state.unconsumedSignals,
      },
    };
  }, { query: "page" });

  // A page of a run's events: the seqs after `after`, at most `limit`; `nextAfter` is the next page's `after`.
  route("GET", "/v1/deployments/:repoId/runs/:runId/events", async (request) => {
    const params = request.params as { repoId: string; runId: string };
    const repoId = parseRepoId(params.repoId);
    const runId = parseRunId(params.runId);
    const query = pageQuery(request.query, ["after", "limit"]);
    await requireAllowed(request, repoId, "read");
    const { reads, archived } = await openRun(repoId, runId);
    // A run whose events entry is a file or a link holds no log: 409, as on the run's own route
    // (its folder listing and events index are kept, so the page reads them again for free).
    const page = await openRunFolder(reads, runId)
      .then((index) => {
        requireRunFolderLog(repoId, runId, index);
        return readRunLogPage(reads, runId, query);
      })
      .catch((error: unknown) => {
        throw asUnreadableRunError(repoId, runId, error, "nothing of it can be shown");
      });
    return {
      repoId,
      runId,
      commitSha: reads.commitSha,
      archived,
      after: query.after ?? null,
      events: page.events,
      bad: page.bad.map(problemJson),
      problems: page.problems.map(problemJson),
      nextAfter: page.nextAfter,
    };
  }, { query: "page" });

  route("GET", "/v1/fires", async (request) => {
    // The same query rules as the event pages: a bad or unknown field is page_invalid.
    const limit = pageQuery(request.query, ["limit"], MAX_RECENT_FIRES).limit ?? 200;
    const principal = principalOf(request);
    const decided = new Map<string, boolean>();
    const fires = [];
    for (const fire of monitor.recentFires()) {
      let ok = decided.get(fire.repoId);
      if (ok === undefined) decided.set(fire.repoId, (ok = await allowed(principal, fire.repoId, "read")));
      if (ok) fires.push(fire);
    }
    return { fires: fires.slice(-limit) };
  }, { query: "page" });

  route("GET", "/v1/events", async (request, reply) => {
    // HEAD: the stream's headers and nothing more (a hijacked stream never answered a HEAD).
    if (request.method === "HEAD") return reply.header("content-type", "text/event-stream; charset=utf-8").header("cache-control", "no-cache").send();
    const principal = principalOf(request);
    streamLiveEvents(request, reply, { monitor, timers, streams, mayRead: (repoId) => allowed(principal, repoId, "read"), expired: () => isExpired(principal), expiresInMs: () => expiresInMs(principal) });
  });

  // The wake-up contract of cloud schedulers: POST only, default signal name "wake".
  route("POST", "/v1/wake", async (request) => {
    const result = await deliver(request, objectBody(request.body, WAKE_FIELDS), { signalName: "wake" });
    return { ok: true, runId: result.runId, seq: result.seq, duplicate: result.duplicate, signalId: result.signalId };
  });

  // 405 for every other method of a known route (OPTIONS and TRACE too: no preflight is
  // answered, nothing is echoed), before any token check; see the onRequest hook.
  for (const [url, methods] of methodsByUrl) {
    const others = ALL_METHODS.filter((m) => !methods.has(m as Method));
    const allow = ROUTE_METHODS.filter((m) => methods.has(m)).join(", ");
    app.route({
      method: others,
      url,
      config: { allow },
      handler: async () => {
        throw new HttpError("method_not_allowed", `${url} takes ${allow}`, { allow });
      },
    });
  }

  return app;
}
