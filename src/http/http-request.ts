/** Small readers of a request: the bearer token, a JSON object body, a page of a run's log, a count, a series' next ticks. */
import type { FastifyRequest } from "fastify";
import { describeValue, WorkflowHostError } from "../errors.js";
import { nextTick } from "../workflow/cron.js";
import { MAX_PAGE_EVENTS } from "../workflow/run-log.js";
import { decodeTimersCursor, type TimersCursor } from "../host/timers-cursor.js";
import { HttpError } from "./http-errors.js";

/**
 * The token of `Authorization: Bearer <t>` or `X-Workflow-Host-Token`, or null. Both may be sent
 * naming the same token; two different tokens are two claims, and taking either would check
 * another token than a proxy reading the other (as for a header given twice: design notes §62).
 * @throws request_invalid (400) when the two headers name different tokens
 */
export function presentedToken(request: FastifyRequest): string | null {
  const header = request.headers.authorization;
  const bearer = typeof header === "string" ? (/^Bearer[ ]+(\S+)\s*$/i.exec(header)?.[1] ?? null) : null;
  const raw = request.headers["x-workflow-host-token"];
  const own = typeof raw === "string" && raw.trim() !== "" ? raw.trim() : null;
  if (bearer !== null && own !== null && bearer !== own) {
    throw new HttpError("request_invalid", "Authorization: Bearer and X-Workflow-Host-Token name different tokens; send one token");
  }
  return bearer ?? own;
}

/**
 * The body as a JSON object ({} when absent: no bytes, or only whitespace) holding only the
 * route's `fields`: a field the route does not know is refused, not dropped (a misspelt
 * `timezone` or `signalId` would otherwise change what is written without a word).
 * @throws body_invalid for a body that is not an object (JSON `null` included), or that has another field
 */
export function objectBody(body: unknown, fields: readonly string[]): Record<string, unknown> {
  if (body === undefined) return {};
  if (typeof body !== "object" || body === null || Array.isArray(body)) throw new HttpError("body_invalid", "the body must be a JSON object");
  const unknown = Object.keys(body).filter((key) => !fields.includes(key));
  if (unknown.length > 0) {
    const shown = unknown.slice(0, 5).map((key) => JSON.stringify(key.length > 64 ? `${key.slice(0, 64)}…` : key));
    throw new HttpError("body_invalid", `unknown field${unknown.length === 1 ? "" : "s"} ${shown.join(", ")}${unknown.length > 5 ? ", …" : ""}; allowed: ${fields.join(", ")}`);
  }
  return body as Record<string, unknown>;
}

/**
 * Refuses a query field a route does not take: on a write route what a client puts in the query
 * instead of the body (`?signalId=…` on a signal, a misspelt `?reasn=` on a cancel) would
 * otherwise be dropped and change what is written without a word; on a read route a typo
 * (`?repo=payments` on `/v1/timers`, `?stauts=`) would be a filter that silently filters nothing.
 * (Routes that take a page check their query with {@link pageQuery}.)
 * @param fields the query fields the route takes (none for most routes)
 * @throws body_invalid naming the first unknown field and the fields the route takes
 */
export function onlyQueryFields(query: unknown, fields: readonly string[]): void {
  const unknown = Object.keys((query ?? {}) as Record<string, unknown>).filter((key) => !fields.includes(key));
  if (unknown.length === 0) return;
  throw new HttpError("body_invalid", `${unknownQueryField(unknown[0]!)}; ${fields.length === 0 ? "this route takes no query" : `allowed: ${fields.join(", ")}`}`);
}

/**
 * Refuses a body on a route that takes none (GET, HEAD, DELETE): what a client sends there
 * (`{"reason":"paid"}` on a cancel, `{"repoId":…}` on a list) would otherwise be dropped without
 * a word. A request has a body when it says `Transfer-Encoding`, or a `Content-Length` other
 * than 0 (fastify parses no GET body, and a DELETE body only with a `Content-Type`, so the
 * headers are what tells).
 * @param hint appended to the message (e.g. where the route takes its fields)
 * @throws body_invalid for a request with a body
 */
export function noBody(request: FastifyRequest, hint = ""): void {
  const length = request.headers["content-length"];
  const chunked = request.headers["transfer-encoding"] !== undefined;
  if (!chunked && (length === undefined || /^0+$/.test(length))) return;
  throw new HttpError("body_invalid", `${request.method} takes no body${hint}`);
}

/** "unknown query field "<name>"", the name cut to 64 characters. */
function unknownQueryField(name: string): string {
  return `unknown query field ${JSON.stringify(name.length > 64 ? `${name.slice(0, 64)}…` : name)}`;
}

/** The page of a run's log a query asks for (see {@link pageQuery}). */
export interface PageQuery {
  /** Seqs above this one; absent: from the first event. */
  readonly after?: number;
  /** Most events in the page; absent: the route's default. */
  readonly limit?: number;
}

/**
 * Reads `?after=<seq>&limit=<n>` (each once, decimal digits): `after` a seq >= 0, `limit` in
 * 1..{@link MAX_PAGE_EVENTS}. Checked before anything is read, so a bad page is 400 even for a
 * run that does not exist.
 * @param fields the query fields the route takes; any other is refused (a misspelt `limit`
 *   would otherwise give a default page without a word)
 * @param maxLimit the largest `limit` the route takes (default {@link MAX_PAGE_EVENTS})
 * @throws page_invalid for a value that is not a whole number in range, a field given twice, or
 *   a field the route does not take
 */
export function pageQuery(query: unknown, fields: readonly (keyof PageQuery)[], maxLimit = MAX_PAGE_EVENTS): PageQuery {
  const given = (query ?? {}) as Record<string, unknown>;
  const unknown = Object.keys(given).filter((key) => !(fields as readonly string[]).includes(key));
  if (unknown.length > 0) {
    throw new WorkflowHostError("page_invalid", `${unknownQueryField(unknown[0]!)}; allowed: ${fields.join(", ")}`, { field: unknown[0] });
  }
  const out: { after?: number; limit?: number } = {};
  const after = wholeNumber(given, "after", 0, Number.MAX_SAFE_INTEGER);
  const limit = wholeNumber(given, "limit", 1, maxLimit);
  if (after !== undefined) out.after = after;
  if (limit !== undefined) out.limit = limit;
  return out;
}

/** Most timers in one page of `GET …/timers` (`?limit=`). */
export const MAX_PAGE_TIMERS = 10_000;

export { afterTimersCursor, encodeTimersCursor, type TimersCursor } from "../host/timers-cursor.js";

/**
 * Reads a page of pending timers from `?after=<cursor>&limit=<n>` (each once): `after` a
 * `nextAfter` of an earlier page, `limit` in 1..{@link MAX_PAGE_TIMERS}. Without `limit` every
 * timer is listed (one answer: 15 MB at 100,000 timers). Keyset paging: a page starts after the
 * last timer of the one before, so timers that fire or are added between two pages never make a
 * page repeat or skip the others (a timer set again for another instant moves in the order).
 * @throws page_invalid for a limit that is not a whole number in range, a cursor this server did
 *   not hand out, a field given twice, or another field
 */
export function timersPageQuery(query: unknown): { readonly after?: TimersCursor; readonly limit?: number } {
  const given = (query ?? {}) as Record<string, unknown>;
  const { limit } = pageQuery({ ...given, after: undefined }, ["after", "limit"], MAX_PAGE_TIMERS);
  const raw = given.after;
  if (raw === undefined) return limit === undefined ? {} : { limit };
  const refuse = (): WorkflowHostError =>
    new WorkflowHostError("page_invalid", `after ${describeValue(raw)} is not valid; allowed: the nextAfter of an earlier page, given once`, { field: "after", value: raw });
  const after = typeof raw === "string" ? decodeTimersCursor(raw) : null;
  if (after === null) throw refuse();
  return limit === undefined ? { after } : { after, limit };
}

/**
 * A whole-number query field that is not a page's (`?next=5` of a schedule): decimal digits,
 * given once, in `min`..`max`. (The route's `query` list has refused other fields already.)
 * @returns the number, or `fallback` when the field is absent
 * @throws body_invalid for a value that is not a whole number in range, or a field given twice
 */
export function countQuery(query: unknown, field: string, range: { min: number; max: number }, fallback: number): number {
  return wholeNumber((query ?? {}) as Record<string, unknown>, field, range.min, range.max, (message) => new HttpError("body_invalid", message)) ?? fallback;
}

/**
 * A text query field (`?cron=…` of a preview), given once; an empty value is a value (`?cron=`
 * is an expression that does not parse, not a missing field, as `--cron ""` is for the CLI).
 * @returns the text, or undefined when the field is absent
 * @throws body_invalid for a field given more than once
 */
export function stringQuery(query: unknown, field: string): string | undefined {
  const raw = ((query ?? {}) as Record<string, unknown>)[field];
  if (raw === undefined) return undefined;
  if (typeof raw !== "string") throw new HttpError("body_invalid", `${field} is given more than once; allowed: one value`);
  return raw;
}

function wholeNumber(
  query: Record<string, unknown>,
  field: string,
  min: number,
  max: number,
  refuse: (message: string, data: Record<string, unknown>) => Error = (message, data) => new WorkflowHostError("page_invalid", message, data),
): number | undefined {
  const raw = query[field];
  if (raw === undefined) return undefined;
  const value = typeof raw === "string" && /^[0-9]{1,16}$/.test(raw) ? Number(raw) : Number.NaN;
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    const allowed = max === Number.MAX_SAFE_INTEGER ? `a whole number >= ${min}, given once` : `a whole number in ${min}..${max}, given once`;
    throw refuse(`${field} ${describeValue(raw)} is not valid; allowed: ${allowed}`, { field, value: raw });
  }
  return value;
}

/** `fireAt` and up to four ticks after it. */
export function nextTicks(cron: string, timezone: string | undefined, fireAt: string): string[] {
  const ticks = [fireAt];
  while (ticks.length < 5) {
    const next = nextTick(cron, timezone, ticks[ticks.length - 1] as string);
    if (next === null) break;
    ticks.push(next);
  }
  return ticks;
}
