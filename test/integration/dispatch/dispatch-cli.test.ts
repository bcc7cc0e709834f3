/**
 * `workflow-host dispatch status|list|retry|skip` on real disk, and `serve --dispatch` running an
 * HTTP consumer from a config file in a child process.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { verifySignature } from "../../../seams/dispatch/http-target.js";
import { createWorkflowHost, type WorkflowHost } from "../../../src/host/host.js";
import { gitAt } from "../../helpers/git-cli.js";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { runCli } from "../../unit/cli/cli-io.js";
import { CLI_MAIN, killAllWatched, spawnWatched } from "../reliability/serve-process.js";

const tempDir = useTempDirs("wfh-dispatch-cli-");
const cleanups: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  await killAllWatched();
});

/** Runs a host with consumer c1 until `until` reports come, then stops it. */
async function runHost(dataDir: string, handler: () => void, until: { type: string; count: number }, work: (host: WorkflowHost) => Promise<void> = async () => {}): Promise<void> {
  let seen = 0;
  let done: () => void = () => {};
  const finished = new Promise<void>((resolve) => (done = resolve));
  const host = createWorkflowHost({
    dataDir,
    watch: false,
    onDispatchEvent: (r) => {
      if (r.type === until.type && ++seen === until.count) done();
    },
  });
  host.dispatch({ name: "c1", maxAttempts: 1, handler });
  await host.start();
  await work(host);
  await finished;
  await host.stop();
}

describe("workflow-host dispatch", () => {
  it("lists parked events, skips one, releases another with retry (record_not_found for one not parked) and shows the lag", async () => {
    const dataDir = join(await tempDir(), "data");
    await runHost(dataDir, () => {
      throw new Error("receiver down");
    }, { type: "parked", count: 2 }, async (host) => {
      await host.createDeployment("dep");
      await host.runtime("dep").deliverSignal("r1", "approve", { n: 1 }, "s-1");
      await host.runtime("dep").deliverSignal("r2", "approve", { n: 2 }, "s-2");
    });

    const status = await runCli(["dispatch", "status", "-d", dataDir, "--consumer", "c1", "--json"]);
    expect(status.code).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({ consumer: "c1", deployments: [{ consumer: "c1", repoId: "dep", lagEvents: 0, parked: 2, retrying: 0, failing: 0 }] });
    const list = await runCli(["dispatch", "list", "-d", dataDir, "-c", "c1", "--json"]);
    expect((JSON.parse(list.stdout) as { consumer: string; parked: { runId: string; idempotencyKey: string; attempts: number }[] }).parked.map((p) => [p.runId, p.idempotencyKey, p.attempts])).toEqual([
      ["r1", "dep/r1/signal/s-1", 1],
      ["r2", "dep/r2/signal/s-2", 1],
    ]);
    expect((await runCli(["dispatch", "list", "-d", dataDir, "-c", "c1"])).stdout).toMatch(/r1\/1 +SignalReceived +dep\/r1\/signal\/s-1/);

    expect((await runCli(["dispatch", "skip", "-d", dataDir, "-c", "c1", "-r", "dep", "--event", "r2/1"])).code).toBe(0);
    const missing = await runCli(["dispatch", "retry", "-d", dataDir, "-c", "c1", "-r", "dep", "--event", "r2/1"]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/record_not_found/);
    const usage = await runCli(["dispatch", "retry", "-d", dataDir, "-c", "c1", "-r", "dep"]);
    expect(usage.code).toBe(2);
    const retry = await runCli(["dispatch", "retry", "-d", dataDir, "-c", "c1", "-r", "dep", "--event", "r1/1", "--json"]);
    expect(JSON.parse(retry.stdout)).toEqual({ consumer: "c1", repoId: "dep", action: "retry", events: ["r1/1"] });
    expect(JSON.parse((await runCli(["dispatch", "status", "-d", dataDir, "-c", "c1", "--json"])).stdout)).toMatchObject({ deployments: [{ parked: 0, retrying: 1 }] });

    // The next host delivers the released event (and not the skipped one).
    const delivered: string[] = [];
    const host = createWorkflowHost({ dataDir, watch: false });
    let done: () => void = () => {};
    const finished = new Promise<void>((resolve) => (done = resolve));
    host.dispatch({ name: "c1", handler: (d) => {
      delivered.push(d.idempotencyKey);
      done();
    } });
    await host.start();
    await finished;
    // A signal committed while no host runs shows as lag.
    await host.stop();
    expect(delivered).toEqual(["dep/r1/signal/s-1"]);
    const writer = createWorkflowHost({ dataDir, watch: false });
    await writer.runtime("dep").deliverSignal("r3", "approve", {}, "s-3");
    await writer.stop();
    const lagging = (JSON.parse((await runCli(["dispatch", "status", "-d", dataDir, "-c", "c1", "--json"], { clock: () => new Date(Date.now() + 60_000) })).stdout) as { deployments: { lagEvents: number; lagMs: number; parked: number; retrying: number }[] }).deployments;
    expect(lagging).toMatchObject([{ lagEvents: 1, parked: 0, retrying: 0 }]);
    expect(lagging[0]?.lagMs).toBeGreaterThanOrEqual(60_000);
    // The consumer's ref is plain git.
    expect(await gitAt(join(dataDir, "deployments", "dep.git"), ["log", "--format=%s", "refs/consumers/c1"])).toMatch(/dispatch retry: c1/);
  });

  it.each(["retry", "skip"])("dispatch %s with a malformed --event is refused as id_invalid with exit 2 (a usage error), like a malformed consumer", async (verb) => {
    const dataDir = join(await tempDir(), "data");
    expect((await runCli(["repo", "create", "-d", dataDir, "-r", "dep"])).code).toBe(0);
    const run = await runCli(["dispatch", verb, "-d", dataDir, "-c", "c1", "-r", "dep", "--event", "garbage"]);
    expect(run.code).toBe(2);
    expect(/^workflow-host: ([a-z_]+): /m.exec(run.stderr)?.[1]).toBe("id_invalid");
  });

  it("serve --dispatch posts each event to the configured URL with a valid signature; a bad config is config_invalid", async () => {
    const root = await tempDir();
    const dataDir = join(root, "data");
    const bodies: { body: string; signature: string }[] = [];
    let got: () => void = () => {};
    const arrived = new Promise<void>((resolve) => (got = resolve));
    const server: Server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        bodies.push({ body: Buffer.concat(chunks).toString("utf8"), signature: String(req.headers["x-workflow-host-signature"]) });
        res.writeHead(200).end();
        got();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    cleanups.push(async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    });
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/wake`;
    const config = join(root, "consumers.json");
    await writeFile(config, JSON.stringify({ consumers: [{ name: "wake-fn", url, secretEnv: "WAKE_SECRET", filter: { types: ["SignalReceived"] }, backoff: [100] }] }));
    const bad = join(root, "bad.json");
    await writeFile(bad, JSON.stringify({ consumers: [{ name: "x", url, secret: "0123456789abcdef", colour: "red" }] }));
    const refused = await runCli(["serve", "-d", dataDir, "--dispatch", bad]);
    // A file that is not a valid configuration fails the command (exit 1), as for schedule sync --file.
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^workflow-host: config_invalid: /);

    const setup = createWorkflowHost({ dataDir, watch: false });
    await setup.createDeployment("dep");
    await setup.runtime("dep").deliverSignal("r1", "wake", { n: 1 }, "s-1");
    await setup.stop();
    const serve = spawnWatched(CLI_MAIN, ["serve", "--data-dir", dataDir, "--json", "--dispatch", config, "--poll-ms", "100"], { WAKE_SECRET: "a-long-enough-secret" });
    await serve.waitForLine(/"serving"/, 60_000);
    await arrived;
    serve.kill("SIGTERM");
    expect((await serve.exited).code).toBe(0);
    expect(bodies).toHaveLength(1);
    expect(JSON.parse(bodies[0]?.body ?? "{}")).toMatchObject({ consumer: "wake-fn", idempotencyKey: "dep/r1/signal/s-1", event: { payload: { n: 1 } } });
    expect(verifySignature(bodies[0]?.body ?? "", bodies[0]?.signature, "a-long-enough-secret")).toBe(true);
  });
});
