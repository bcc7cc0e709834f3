/**
 * The one mapping from error codes to HTTP statuses. Every `ErrorCode` of `src/errors.ts` has
 * exactly one status here (the `Record` type makes a new code fail to compile until it is
 * mapped), plus the few codes only the HTTP face raises; one exception: `object_missing` and
 * `object_corrupt` naming one run are {@link UNREADABLE_RUN_STATUS}. Error bodies are `{code, message}`:
 * the stable code and the error's one-sentence message, never a stack trace.
 */
import { isWorkflowHostError, type ErrorCode } from "../errors.js";
import { isMissingRunObject } from "../workflow/run-log.js";
import { asUnreadableRunError, isNoRunLogError } from "../workflow/unreadable-runs.js";

/** Codes raised by the HTTP face itself, beside the library's {@link ErrorCode}s. */
export type HttpOnlyErrorCode =
  /** No token in `Authorization: Bearer` or `X-Workflow-Host-Token` (401). */
  | "token_missing"
  /** A token that the token file (or `authenticate`) does not know (401). */
  | "token_invalid"
  /**
   * A known token past its `expiresAt` (the principal's `expiresAtMs`) by the handler's clock
   * (401); the body says no more than that (not whose token, nor since when).
   */
  | "token_expired"
  /**
   * The body is not JSON, or not the object the route takes, or the query holds a field the
   * route does not take (400; a route that takes a page says `page_invalid` instead).
   */
  | "body_invalid"
  /** The body's content type is not accepted (415). */
  | "media_type_unsupported"
  /** No such route (404). */
  | "route_not_found"
  /** The URL does not decode (bad percent-encoding), or a path segment is longer than any id (400). */
  | "url_invalid"
  /** The route exists but not for this method (405, with an `Allow` header). */
  | "method_not_allowed"
  /** Bytes that are not an HTTP request node can parse (a bad request line, a bad Content-Length…), or a CONNECT (400). */
  | "request_invalid"
  /** The request line and headers together are larger than node's limit (16 KiB by default) (431). */
  | "headers_too_large"
  /** The request (headers and body) did not arrive within the request timeout (408). */
  | "request_timeout"
  /**
   * Too many heavy reads (timers across runs, schedule lists, sync plans) run and wait already
   * (503, `Retry-After: 1`); see src/http/heavy-read-gate.ts.
   */
  | "busy"
  /** A failure that is not a `WorkflowHostError` (500); the message says nothing more. */
  | "internal";

export type HttpErrorCode = ErrorCode | HttpOnlyErrorCode;

/**
 * The status of a run that cannot be read whole (`object_missing` or `object_corrupt` naming one
 * run: its folder, `events/` folder, or, for a write that decides from its whole history, an
 * event; `isMissingRunObject`): 409 Conflict, "the request conflicts with the current state of
 * the target resource", which an operator can resolve (restore the object) before the request is
 * sent again. Not 500: the server is not broken, every other run is served. Not 503: the host is
 * available (a proxy or balancer would take the whole host out). Not 410: the run is not gone
 * (restoring its object brings it back, a damaged object is still there) and 410 may be cached.
 * Not 422: the request itself is well-formed and valid. The same code as the store's or the
 * run's error in a `{code, message}` body; the message names the run and what is lost, never a
 * server path. The same codes for a `runs/` folder, root or tip commit (the whole deployment)
 * stay 500. A run that holds no log because its `events` entry is a file or a link
 * (`event_invalid` with `data.noRunLog`, src/workflow/unreadable-runs.ts `noRunLogError`) is 409
 * too: the stored run is at fault, not the request (`event_invalid` is otherwise 400).
 */
export const UNREADABLE_RUN_STATUS = 409;

/** HTTP status of every error code. */
export const HTTP_STATUS_BY_CODE: Readonly<Record<HttpErrorCode, number>> = {
  // Bad input: the request can be fixed by the caller.
  repo_id_invalid: 400,
  id_invalid: 400,
  time_invalid: 400,
  cron_invalid: 400,
  event_invalid: 400,
  path_violation: 400,
  content_invalid: 400,
  usage: 400,
  body_invalid: 400,
  url_invalid: 400,
  config_invalid: 400,
  page_invalid: 400,
  request_invalid: 400,
  headers_too_large: 431,
  request_timeout: 408,
  payload_too_large: 413,
  media_type_unsupported: 415,
  // Who is asking.
  token_missing: 401,
  token_invalid: 401,
  token_expired: 401,
  authorize_denied: 403,
  // What is asked for.
  repo_not_found: 404,
  run_not_found: 404,
  timer_not_found: 404,
  schedule_not_found: 404,
  backfill_too_large: 400,
  record_not_found: 404,
  route_not_found: 404,
  method_not_allowed: 405,
  // Someone else moved first: retrying (after re-reading) may succeed.
  ref_conflict: 409,
  /** An archived run is read-only: its log is closed (retention moved it to refs/archive/runs). */
  run_archived: 409,
  push_rejected: 409,
  consumer_exists: 409,
  remote_rejected: 409,
  lease_not_held: 409,
  // The host is not (or no longer) able to serve: retry later or elsewhere.
  ref_locked: 503,
  store_stopped: 503,
  channel_stopped: 503,
  scheduler_stopped: 503,
  host_locked: 503,
  host_stopped: 503,
  aborted: 503,
  dispatcher_stopped: 503,
  remote_unavailable: 503,
  busy: 503,
  cluster_unavailable: 503,
  // Damage or failures inside the host.
  ref_corrupt: 500,
  ref_rewound: 500,
  object_corrupt: 500,
  object_missing: 500,
  io_failed: 500,
  path_escapes_data_dir: 500,
  delivery_failed: 500,
  data_dir_not_found: 500,
  kind_unknown: 500,
  internal: 500,
};

/** An error the HTTP face raises on its own (auth, routing, bodies). */
export class HttpError extends Error {
  override readonly name = "HttpError";
  readonly code: HttpErrorCode;
  readonly headers: Readonly<Record<string, string>>;
  constructor(code: HttpErrorCode, detail: string, headers: Record<string, string> = {}) {
    super(`${code}: ${detail}`);
    this.code = code;
    this.headers = headers;
  }
}

/**
 * The raw HTTP/1.1 answer to a request node refused before any route saw it (its `clientError`):
 * `{code, message}` like every other error, then the connection is closed.
 * @param nodeCode the error's `code` (`HPE_HEADER_OVERFLOW`, `ERR_HTTP_REQUEST_TIMEOUT`, any other HPE_… code),
 *   or "CONNECT" for a CONNECT request (a tunnel, which this server never opens)
 */
export function clientErrorResponse(nodeCode: unknown): string {
  const [code, detail]: [HttpErrorCode, string] =
    nodeCode === "HPE_HEADER_OVERFLOW"
      ? ["headers_too_large", "the request line and headers are larger than the server takes; ids are at most 256 characters and tokens at most 512"]
      : nodeCode === "ERR_HTTP_REQUEST_TIMEOUT"
        ? ["request_timeout", "the request did not arrive whole in time"]
        : nodeCode === "CONNECT"
          ? ["request_invalid", "CONNECT is not taken: this server is not a proxy"]
          : ["request_invalid", "the request is not valid HTTP/1.1"];
  const status = HTTP_STATUS_BY_CODE[code];
  const body = JSON.stringify({ code, message: `${code}: ${detail}` });
  const reason = status === 431 ? "Request Header Fields Too Large" : status === 408 ? "Request Timeout" : "Bad Request";
  return `HTTP/1.1 ${status} ${reason}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nContent-Type: application/json; charset=utf-8\r\nConnection: close\r\n\r\n${body}`;
}

/** What an error turns into on the wire. */
export interface ErrorReply {
  readonly status: number;
  readonly body: { readonly code: HttpErrorCode; readonly message: string };
  readonly headers: Readonly<Record<string, string>>;
  /** True when the error is not one the host raises on purpose (worth logging in full). */
  readonly unexpected: boolean;
}

/**
 * Maps any thrown value to its status and `{code, message}` body. A run that cannot be read whole
 * is {@link UNREADABLE_RUN_STATUS} (409) with its code and a message naming the run and what is
 * lost. `WorkflowHostError`s and
 * `HttpError`s keep their code and message, but a failure inside the host (a 500: ref_corrupt,
 * io_failed, …) keeps only its code, with a fixed message (see {@link serverFailureMessage}),
 * and is `unexpected` (logged in full); fastify's own errors (body too large, bad JSON,
 * bad content type) get the matching code; anything else is `internal` with a fixed message.
 */
export function errorReply(error: unknown): ErrorReply {
  if (isWorkflowHostError(error)) {
    if (isMissingRunObject(error) && typeof error.data["runId"] === "string") {
      const named = asUnreadableRunError(null, null, error, "the run cannot be served until the object is restored") as typeof error;
      return { status: UNREADABLE_RUN_STATUS, body: { code: named.code, message: named.message }, headers: {}, unexpected: false };
    }
    // A run that holds no log (its events entry is a file or a link): the stored run is at
    // fault, not the request, so 409 as for a lost object, with event_invalid as check names it.
    if (isNoRunLogError(error)) return { status: UNREADABLE_RUN_STATUS, body: { code: error.code, message: error.message }, headers: {}, unexpected: false };
    if (HTTP_STATUS_BY_CODE[error.code] === 500) return { ...reply(error.code, serverFailureMessage(error.code)), unexpected: true };
    return reply(error.code, error.code === "repo_not_found" ? unknownDeploymentMessage(error.data) ?? error.message : error.message);
  }
  if (error instanceof HttpError) return { ...reply(error.code, error.message), headers: error.headers };
  const fastifyStatus = (error as { statusCode?: unknown } | null)?.statusCode;
  const fastifyCode = (error as { code?: unknown } | null)?.code;
  if (typeof fastifyStatus === "number" && typeof fastifyCode === "string" && fastifyCode.startsWith("FST_")) {
    if (fastifyStatus === 413) return reply("payload_too_large", "payload_too_large: the request body is larger than the limit; nothing was written");
    if (fastifyStatus === 415) return reply("media_type_unsupported", "media_type_unsupported: send the body as application/json");
    if (fastifyStatus >= 400 && fastifyStatus < 500) return reply("body_invalid", `body_invalid: ${(error as Error).message}`);
  }
  if (error instanceof SyntaxError) return reply("body_invalid", "body_invalid: the body is not valid JSON");
  return { ...reply("internal", "internal: the host failed to serve this request; see its log"), unexpected: true };
}

/**
 * The message a client gets for a failure inside the host (status 500): the code and a fixed
 * sentence. The error's own message names files and folders on the server, which are the
 * operator's business: the host's log has it in full.
 */
export function serverFailureMessage(code: HttpErrorCode): string {
  return `${code}: the host failed to serve this request; the operator finds the details in its log`;
}

/**
 * The store's `repo_not_found` names the repository's folder on the server and how to create it
 * with the library: a client is told only which deployment does not exist.
 */
function unknownDeploymentMessage(data: Readonly<Record<string, unknown>>): string | null {
  const repoId = data["repoId"];
  const id = typeof repoId === "string" ? repoId : (repoId as { id?: unknown } | null | undefined)?.id;
  return typeof id === "string" ? `repo_not_found: deployment ${id} does not exist` : null;
}

function reply(code: HttpErrorCode, message: string): ErrorReply {
  return { status: HTTP_STATUS_BY_CODE[code], body: { code, message }, headers: {}, unexpected: false };
}
