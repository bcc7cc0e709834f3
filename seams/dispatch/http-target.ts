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
import type { Agent, ClientRequest, IncomingMessage, RequestOptions } from "node:http";
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
 * A deliver function that POSTs to `target.url`; resolves on 2xx. Redirects are not followed
 * (a 3xx is a failed attempt, like any answer that is not 2xx). Connections are kept alive and
 * reused (node's http(s) agent; an idle one does not keep the process alive): node's own client
 * costs ~0.1–0.3 ms of CPU per request where `fetch` cost ~0.5–1.1 ms (bench/RESULTS.md).
 * @throws (rejects) a WorkflowHostError `delivery_failed` carrying `status` for a non-2xx answer;
 *   the socket's error for a network failure; an AbortError when `signal` aborts
 */
export function httpDeliver(target: HttpTarget): (delivery: Delivery, signal: AbortSignal) => Promise<void> {
  const url = new URL(target.url);
  // Loaded on first use: a host with no HTTP consumer does not pay for node's http(s) and tls at start.
  type Send = (url: URL, options: RequestOptions, onResponse: (response: IncomingMessage) => void) => ClientRequest;
  let client: Promise<{ agent: Agent; send: Send }> | null = null;
  const load = (): Promise<{ agent: Agent; send: Send }> =>
    (client ??= (url.protocol === "https:" ? import("node:https") : import("node:http")).then((mod) => ({ agent: new mod.Agent({ keepAlive: true }) as Agent, send: mod.request as Send })));
  return async (delivery, signal) => {
    const { agent, send } = await load();
    return new Promise<void>((resolve, reject) => {
      const body = Buffer.from(deliveryBody(delivery), "utf8");
      const headers = {
        "content-type": "application/json",
        "content-length": String(body.length),
        [SIGNATURE_HEADER]: signBody(body, target.secret),
        [ATTEMPT_HEADER]: String(delivery.attempt),
        "idempotency-key": delivery.idempotencyKey,
      };
      const req = send(url, { method: "POST", agent, signal, headers }, (response) => {
        const status = response.statusCode ?? 0;
        // Drain the answer so the connection is reused; its content is not used.
        response.resume();
        response.on("error", reject);
        response.on("end", () => {
          if (status >= 200 && status <= 299) resolve();
          else reject(new WorkflowHostError("delivery_failed", `POST ${target.url} answered ${status} for ${delivery.idempotencyKey}`, { url: target.url, status }));
        });
      });
      req.on("error", reject);
      req.end(body);
    });
  };
}
