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

/** The body as a JSON object ({} when absent). @throws body_invalid for anything else */
export function objectBody(body: unknown): Record<string, unknown> {
  if (body === undefined || body === null) return {};
  if (typeof body !== "object" || Array.isArray(body)) throw new HttpError("body_invalid", "the body must be a JSON object");
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
