/**
 * The HTTP benchmark's server: a host with its HTTP face on a loopback port, in its own process
 * so the load generator does not share its event loop. Prints `{"port": N}` once listening;
 * stops when stdin closes. Arguments: dataDir repoId runs token.
 */
import type { AddressInfo } from "node:net";
import { createWorkflowHost } from "../src/host/host.js";
import { createHostMonitor } from "../src/http/host-monitor.js";
import { createHttpHandler } from "../src/http/http-handler.js";
import { parseTokenFile } from "../src/http/http-tokens.js";

const [dataDir, repoId, runsText, token] = process.argv.slice(2) as [string, string, string, string];
const runs = Number(runsText);
const monitor = createHostMonitor();
const host = createWorkflowHost({ dataDir, watch: false, durability: "none", onEvent: monitor.onEvent });
await host.start();
await host.createDeployment(repoId);
const runtime = host.runtime(repoId);
// Each run exists before the load starts (the wake-up route answers 404 for an unknown run).
for (let i = 0; i < runs; i++) await runtime.setTimer(`run-${i}`, { timerId: "far", fireAt: "2099-01-01T00:00:00Z" });
const app = createHttpHandler(host, { tokens: parseTokenFile({ tokens: { [token]: { principal: "bench", deployments: { "*": ["read", "write"] } } } }), monitor });
await app.listen({ host: "127.0.0.1", port: 0 });
process.stdout.write(`${JSON.stringify({ port: (app.server.address() as AddressInfo).port })}\n`);
process.stdin.resume();
process.stdin.on("end", () => {
  void app.close().then(() => host.stop()).then(() => process.exit(0));
});
