/**
 * The HTTP target against a loopback server: a 500, then no answer (timeout), then a 200 — the
 * same signed body three times; and the README's verifying snippet tells a good signature from
 * a wrong one.
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import { readFile } from "node:fs/promises";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { verifySignature } from "../../../seams/dispatch/http-target.js";
import type { DispatchReport } from "../../../seams/dispatch/dispatch-types.js";
import { createWorkflowHost, type WorkflowHost } from "../../../src/host/host.js";
import { useTempDirs } from "../../helpers/temp-dir.js";

const tempDir = useTempDirs("wfh-dispatch-http-");
const SECRET = "a-secret-of-some-length";
const cleanups: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** The README's snippet, evaluated as the README gives it. */
async function readmeCheck(): Promise<(body: string | Buffer, header: unknown, secret: string) => boolean> {
  const readme = await readFile(new URL("../../../README.md", import.meta.url), "utf8");
  const block = /<!-- verify-signature -->\s*```js\n([\s\S]*?)```/.exec(readme)?.[1];
  expect(block, "README has the verify-signature snippet").toBeDefined();
  const code = (block as string).replace(/^import .*$/m, "");
  return new Function("createHmac", "timingSafeEqual", "Buffer", `${code}\nreturn isSignedByHost;`)(createHmac, timingSafeEqual, Buffer) as never;
}

interface Received {
  readonly body: string;
  readonly signature: string | undefined;
  readonly attempt: string | undefined;
  readonly key: string | undefined;
}

async function startServer(answer: (n: number, res: ServerResponse) => void): Promise<{ url: string; received: Received[] }> {
  const received: Received[] = [];
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      received.push({
        body: Buffer.concat(chunks).toString("utf8"),
        signature: req.headers["x-workflow-host-signature"] as string | undefined,
        attempt: req.headers["x-workflow-host-attempt"] as string | undefined,
        key: req.headers["idempotency-key"] as string | undefined,
      });
      answer(received.length, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  cleanups.push(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/wake`, received };
}

describe("dispatch to an HTTP target", () => {
  it("posts the same signed body after a 500 and a timeout until a 200, and the README check rejects a wrong signature", async () => {
    const { url, received } = await startServer((n, res) => {
      if (n === 1) res.writeHead(500).end("no");
      else if (n === 2) {
        // No answer: the attempt times out.
      } else res.writeHead(200).end("ok");
    });
    const reports: DispatchReport[] = [];
    let delivered: () => void = () => {};
    const done = new Promise<void>((resolve) => (delivered = resolve));
    const host: WorkflowHost = createWorkflowHost({
      dataDir: await tempDir(),
      watch: false,
      onDispatchEvent: (r) => {
        reports.push(r);
        if (r.type === "delivered") delivered();
      },
    });
    cleanups.push(() => host.stop());
    host.dispatch({ name: "wake-fn", http: { url, secret: SECRET }, backoff: [10], timeoutMs: 500, maxAttempts: 5 });
    await host.start();
    await host.createDeployment("dep");
    await host.runtime("dep").deliverSignal("r1", "approve", { by: "ana" }, "s-1");
    await done;

    expect(received).toHaveLength(3);
    expect(received.map((r) => r.attempt)).toEqual(["1", "2", "3"]);
    expect(new Set(received.map((r) => r.body)).size).toBe(1);
    expect(new Set(received.map((r) => r.key))).toEqual(new Set(["dep/r1/signal/s-1"]));
    const body = JSON.parse(received[0]?.body ?? "{}") as Record<string, unknown>;
    expect(body).toMatchObject({ consumer: "wake-fn", idempotencyKey: "dep/r1/signal/s-1", repoId: "dep", runId: "r1", seq: 1, event: { type: "SignalReceived", payload: { by: "ana" } } });
    const failures = reports.filter((r) => r.type === "attempt_failed") as { error: { code?: string; data?: { status?: number } } }[];
    expect(failures.map((f) => f.error.code)).toEqual(["delivery_failed", "delivery_failed"]);
    expect(failures[0]?.error.data?.status).toBe(500);

    const check = await readmeCheck();
    for (const r of received) {
      expect(check(r.body, r.signature, SECRET)).toBe(true);
      expect(verifySignature(r.body, r.signature, SECRET)).toBe(true);
    }
    const sig = received[0]?.signature as string;
    const wrong = `${sig.slice(0, -1)}${sig.endsWith("0") ? "1" : "0"}`;
    expect(check(received[0]?.body as string, wrong, SECRET)).toBe(false);
    expect(check(received[0]?.body as string, sig, "another-secret-value")).toBe(false);
    expect(check(`${received[0]?.body as string} `, sig, SECRET)).toBe(false);
    expect(check(received[0]?.body as string, undefined, SECRET)).toBe(false);
    expect(verifySignature(received[0]?.body as string, wrong, SECRET)).toBe(false);
  });
});
