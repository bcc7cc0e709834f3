/**
 * The HTTP target of a consumer: each delivery is POSTed as JSON to a URL (a cloud function
 * woken by the host). The body is the same bytes in every attempt:
 *
 *   {"consumer", "idempotencyKey", "repoId", "runId", "seq", "commitSha", "event"}
 *
 * Headers: `Content-Type: application/json`, `X-Workflow-Host-Signature: sha256=<hex
 * HMAC-SHA256 of the body bytes with the consumer's secret>`, `X-Workflow-Host-Attempt: <n>`,
 * `Idempotency-Key: <key>`. A 2xx answer means done; anything else, a network error or no
 * answer within the consumer's `timeoutMs` is a failed attempt (retried, then parked).
 * The receiver checks the signature over the raw body before parsing it (see
 * {@link verifySignature} and the README).
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import { WorkflowHostError } from "../../src/errors.js";
import type { Delivery, HttpTarget } from "./dispatch-types.js";

export const SIGNATURE_HEADER = "X-Workflow-Host-Signature";
export const ATTEMPT_HEADER = "X-Workflow-Host-Attempt";

/** The JSON body of a delivery (attempt excluded, so retries send the same bytes). */
export function deliveryBody(delivery: Delivery): string {
  const { consumer, idempotencyKey, repoId, runId, seq, commitSha, event } = delivery;
  return JSON.stringify({ consumer, idempotencyKey, repoId, runId, seq, commitSha, event });
}

/** `sha256=<hex>`: HMAC-SHA256 of `body` (UTF-8) with `secret`. */
export function signBody(body: string | Uint8Array, secret: string): string {
  return `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`;
}

/** True when `header` is the signature of `body` with `secret` (constant-time comparison). */
export function verifySignature(body: string | Uint8Array, header: string | null | undefined, secret: string): boolean {
  if (typeof header !== "string") return false;
  const expected = Buffer.from(signBody(body, secret));
  const given = Buffer.from(header);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/**
 * A deliver function that POSTs to `target.url`; resolves on 2xx.
 * @throws (rejects) a WorkflowHostError `delivery_failed` carrying `status` for a non-2xx answer;
 *   fetch's error for a network failure or an abort
 */
export function httpDeliver(target: HttpTarget): (delivery: Delivery, signal: AbortSignal) => Promise<void> {
  return async (delivery, signal) => {
    const body = deliveryBody(delivery);
    const response = await fetch(target.url, {
      method: "POST",
      body,
      signal,
      headers: {
        "content-type": "application/json",
        [SIGNATURE_HEADER]: signBody(body, target.secret),
        [ATTEMPT_HEADER]: String(delivery.attempt),
        "idempotency-key": delivery.idempotencyKey,
      },
    });
    // Drain the answer so the connection is reused; its content is not used.
    await response.arrayBuffer().catch(() => undefined);
    if (response.status < 200 || response.status > 299) {
      throw new WorkflowHostError("delivery_failed", `POST ${target.url} answered ${response.status} for ${delivery.idempotencyKey}`, { url: target.url, status: response.status });
    }
  };
}
