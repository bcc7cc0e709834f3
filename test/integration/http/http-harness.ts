/**
 * A real host on a temp data dir with its HTTP face listening on a loopback port, for the HTTP
 * tests, the browser test and the HTTP benchmark.
 */
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterEach } from "vitest";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { createWorkflowHost, type WorkflowHost } from "../../../src/host/host.js";
import type { WorkflowHostOptions } from "../../../src/host/host-types.js";
import { createHostMonitor, type HostMonitor, type LiveEvent } from "../../../src/http/host-monitor.js";
import { createHttpHandler, type HttpHandlerOptions } from "../../../src/http/http-handler.js";
import { parseTokenFile } from "../../../src/http/http-tokens.js";

export const ADMIN_TOKEN = "admin-token-0123456789";
export const PAYMENTS_TOKEN = "payments-token-0123456789";
export const READER_TOKEN = "reader-token-0123456789";

export const TOKEN_FILE = {
  tokens: {
    [ADMIN_TOKEN]: { principal: "ops", deployments: { "*": ["read", "write"] } },
    [PAYMENTS_TOKEN]: { principal: "billing", deployments: { payments: ["read", "write"] } },
    [READER_TOKEN]: { principal: "viewer", deployments: { payments: ["read"] } },
  },
};

export interface HttpHarness {
  readonly host: WorkflowHost;
  readonly monitor: HostMonitor;
  readonly baseUrl: string;
  /** fetch against the server, with the admin token unless `token` says otherwise (null: none). */
  request(path: string, init?: RequestInit & { token?: string | null }): Promise<Response>;
  /** Resolves with the first live event that `match` accepts (registered before `trigger` runs). */
  nextEvent(match: (event: LiveEvent) => boolean, trigger?: () => Promise<unknown>): Promise<LiveEvent>;
  close(): Promise<void>;
}

/** `handler`: more options of the HTTP handler (the monitor is the harness's; `tokens` default {@link TOKEN_FILE}'s); `hostOptions`: of the host. */
export async function startHttpHarness(
  dataDir: string,
  deployments: readonly string[] = ["payments", "shipping"],
  handler: Omit<HttpHandlerOptions, "monitor"> = {},
  hostOptions: Pick<WorkflowHostOptions, "discoverEveryMs"> = {},
): Promise<HttpHarness> {
  const monitor = createHostMonitor();
  const host = createWorkflowHost({ dataDir, watch: false, durability: "none", onEvent: monitor.onEvent, minCommitIntervalMs: 0, ...hostOptions });
  await host.start();
  for (const id of deployments) await host.createDeployment(id);
  const app = createHttpHandler(host, { ...handler, tokens: handler.tokens ?? parseTokenFile(TOKEN_FILE), monitor });
  await app.listen({ host: "127.0.0.1", port: 0 });
  const { port } = app.server.address() as AddressInfo;
  const baseUrl = `http://127.0.0.1:${port}`;
  return {
    host,
    monitor,
    baseUrl,
    request(path, init = {}) {
      const { token = ADMIN_TOKEN, headers, ...rest } = init;
      const h = new Headers(headers);
      if (token !== null && !h.has("x-workflow-host-token")) h.set("authorization", `Bearer ${token}`);
      return fetch(`${baseUrl}${path}`, { ...rest, headers: h });
    },
    nextEvent(match, trigger) {
      return new Promise<LiveEvent>((resolve, reject) => {
        const stop = monitor.subscribe((event) => {
          if (!match(event)) return;
          stop();
          resolve(event);
        });
        trigger?.().catch((error: unknown) => {
          stop();
          reject(error);
        });
      });
    },
    async close() {
      await app.close();
      await host.stop();
    },
  };
}

/** JSON body of a response, with its status. */
export async function jsonOf(response: Response): Promise<{ status: number; body: Record<string, unknown> }> {
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

/**
 * A harness per test, on a new temp dir's `data`, closed after the test: `const start =
 * useHttpHarness("wh-http-x-")` at the top of a file, then `const h = await start()` in a test
 * (the arguments are {@link startHttpHarness}'s after the data dir).
 */
export function useHttpHarness(prefix: string): (...rest: Parameters<typeof startHttpHarness> extends [string, ...infer R] ? R : never) => Promise<HttpHarness> {
  const tempDir = useTempDirs(prefix);
  let open: HttpHarness | null = null;
  afterEach(async () => {
    await open?.close();
    open = null;
  });
  return async (...rest) => {
    open = await startHttpHarness(join(await tempDir(), "data"), ...rest);
    return open;
  };
}
