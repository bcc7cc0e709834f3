/**
 * Several hosts share deployments through PostgreSQL leases: each deployment is served by one
 * host at a time, the spread is even, and a host that joins takes its share without a double
 * fire. Verdicts come from the lease table and the remotes' logs.
 */
import { describe, expect, test } from "vitest";
import type { WatchedChild } from "../integration/reliability/serve-process.js";
import { hasPostgres, useClusterRig } from "../support/cluster-suite.js";
import { checkRemotes, liveOwners, seedTimers, spawnClusterHost, waitForRemotesPast, waitUntil, type ClusterRig } from "./cluster-rig.js";

const TTL_MS = 3_000;
/** The hosts' renewal (and rebalance) interval: TTL / 5. */
const REBALANCE_MS = TTL_MS / 5;
const startRig = useClusterRig();

const spreadOf = async (r: ClusterRig): Promise<number[]> => [...(await liveOwners(r)).values()].map((d) => d.length).sort((a, b) => a - b);

async function stopAll(hosts: readonly WatchedChild[]): Promise<void> {
  for (const host of hosts) host.kill("SIGTERM");
  for (const host of hosts) expect((await host.exited).code).toBe(0);
}

describe.skipIf(!hasPostgres)("several hosts share deployments", () => {
  test("3 hosts, 30 deployments: each served by one host at a time, 10 ± 1 each; a joining host takes its share without a double fire", async () => {
    const rig = await startRig(30);
    // Due once the hosts are up (a loaded machine takes a while to start them and recover 30 deployments).
    const startMs = Date.now() + 30_000;
    await seedTimers(rig, { startMs, spanMs: 30_000, oneShots: 20 });

    const hosts = [spawnClusterHost(rig, "h1", { ttlMs: TTL_MS }), spawnClusterHost(rig, "h2", { ttlMs: TTL_MS })];
    await Promise.all(hosts.map((h) => h.waitForLine(/"event":"serving"/, 60_000)));
    await waitUntil("two hosts serving 15 each", 30_000, async () => (await spreadOf(rig)).join() === "15,15");

    // The third host joins while timers fire; within a few rebalance intervals the leases are
    // 10 each (the two others hand over 5 each, after they stopped firing them).
    const joinedAtMs = Date.now();
    hosts.push(spawnClusterHost(rig, "h3", { ttlMs: TTL_MS }));
    await waitUntil("three hosts serving 10 ± 1 each", 30_000, async () => {
      const spread = await spreadOf(rig);
      return spread.length === 3 && spread.every((n) => n >= 9 && n <= 11) && spread.reduce((a, b) => a + b, 0) === 30;
    });
    const rebalancedInMs = Date.now() - joinedAtMs;
    // Then stable: four rebalance intervals in a row change nothing, and the spread stays even.
    let settled = await liveOwners(rig);
    await waitUntil("the leases to stay put for four rebalance intervals", 30_000, async () => {
      await new Promise((resolve) => setTimeout(resolve, 4 * REBALANCE_MS));
      const now = await liveOwners(rig);
      const same = JSON.stringify([...now].sort()) === JSON.stringify([...settled].sort());
      settled = now;
      return same;
    });
    expect([...settled.values()].map((d) => d.length).every((n) => n >= 9 && n <= 11)).toBe(true);
    expect([...settled.values()].flat().sort()).toEqual(rig.repoIds);

    // Every log gets past the end of the one-shots' span: then nothing due before it may be missing.
    const endMs = startMs + 32_000;
    await waitForRemotesPast(rig, endMs, 20, 120_000);
    await stopAll(hosts);

    const verdict = await checkRemotes(rig, { endMs, dueGraceMs: 0 });
    if (process.env["DEBUG_CLUSTER"] === "1") for (const h of hosts) console.log(h.lines().filter((l) => !/"(armed|fired)"/.test(l)).slice(0, 200).join("\n"));
    expect(verdict.violations).toEqual([]);
    expect(verdict.fired).toBe(30 * 20);
    // Every deployment was taken at least once, and the 10 handed over to h3 once more.
    expect(verdict.takeovers).toBeGreaterThanOrEqual(40);
    const h3 = [...settled.keys()].find((owner) => owner.startsWith("h3."));
    expect(settled.get(h3 as string)?.length).toBeGreaterThanOrEqual(9);
    console.log(`rebalance after a join took ${rebalancedInMs} ms (interval ${REBALANCE_MS} ms); ${verdict.fired} one-shots and ${verdict.cronFired} cron ticks fired, ${verdict.cronSkippedTicks} skipped, ${verdict.takeovers} takeovers`);
  });
});
