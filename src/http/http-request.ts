/** Small readers of a request: the bearer token, a JSON object body, a series' next ticks. */
import type { FastifyRequest } from "fastify";
import { nextTick } from "../workflow/cron.js";
import { HttpError } from "./http-errors.js";

/** The token of `Authorization: Bearer <t>` or `X-Workflow-Host-Token`, or null. */
export function presentedToken(request: FastifyRequest): string | null {
  const header = request.headers.authorization;
  if (typeof header === "string") {
    const match = /^Bearer[ ]+(\S+)\s*$/i.exec(header);
    if (match?.[1] !== undefined) return match[1];
  }
  const own = request.headers["x-workflow-host-token"];
  if (typeof own === "string" && own.trim() !== "") return own.trim();
  return null;
}

/**
 * The body as a JSON object ({} when absent) holding only the route's `fields`: a field the
 * route does not know is refused, not dropped (a misspelt `timezone` or `signalId` would
 * otherwise change what is written without a word).
 * @throws body_invalid for a body that is not an object, or that has another field
 */
export function objectBody(body: unknown, fields: readonly string[]): Record<string, unknown> {
  if (body === undefined || body === null) return {};
  if (typeof body !== "object" || Array.isArray(body)) throw new HttpError("body_invalid", "the body must be a JSON object");
  const unknown = Object.keys(body).filter((key) => !fields.includes(key));
  if (unknown.length > 0) {
    const shown = unknown.slice(0, 5).map((key) => JSON.stringify(key.length > 64 ? `${key.slice(0, 64)}…` : key));
    throw new HttpError("body_invalid", `unknown field${unknown.length === 1 ? "" : "s"} ${shown.join(", ")}${unknown.length > 5 ? ", …" : ""}; allowed: ${fields.join(", ")}`);
  }
  return body as Record<string, unknown>;
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
