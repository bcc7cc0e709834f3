/**
 * Hosts die: ≥ 20 SIGKILLs of the host serving some deployments, while thousands of one-shot
 * timers and a cron series per deployment fire. Their deployments are taken over; from the
 * remotes' logs alone: nothing lost, nothing fired twice, nothing early, linear history,
 * `git fsck --strict` clean, fire commits only inside their author's lease period. Takeover
 * times are printed (p50/p99), not asserted: they measure the machine as much as the code.
 * Every host's lines and the kills go to /tmp/kill-hosts.log when the run fails (whatever step
 * failed), and also on success with DEBUG_CLUSTER=1.
 */
import { writeFileSync } from "node:fs";
import { describe, expect, test } from "vitest";
import type { WatchedChild } from "../integration/reliability/serve-process.js";
import { createPrng } from "../integration/reliability/prng.js";
import { hasPostgres, useClusterRig } from "../support/cluster-suite.js";
import { checkRemotes, liveOwners, seedTimers, spawnClusterHost, waitForRemotesPast, waitUntil } from "./cluster-rig.js";

const TTL_MS = 3_000;
const DEPLOYMENTS = 15;
const ONE_SHOTS = 120;
const KILLS = Number(process.env["CLUSTER_KILLS"] ?? 20);
const startRig = useClusterRig();

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? Number.NaN;
}

describe.skipIf(!hasPostgres)("hosts killed while timers fire", () => {
  test(`${KILLS} SIGKILLs of serving hosts: their deployments are taken over, 0 lost, 0 duplicate, 0 early, linear history, fsck clean`, async () => {
    const r = await startRig(DEPLOYMENTS);
    const startMs = Date.now() + 25_000;
    const spanMs = Number(process.env["CLUSTER_SPAN_MS"] ?? 100_000);
    const timers = await seedTimers(r, { startMs, spanMs, oneShots: ONE_SHOTS });
    const rng = createPrng(18);

    const current = new Map<string, { child: WatchedChild; instance: Promise<string> }>();
    const every: WatchedChild[] = [];
    const start = (hostId: string): void => {
      const child = spawnClusterHost(r, hostId, { ttlMs: TTL_MS });
      const instance = child.waitForLine(/"event":"serving"/, 120_000).then((line) => (JSON.parse(line) as { instance: string }).instance);
      instance.catch(() => undefined);
      current.set(hostId, { child, instance });
      every.push(child);
    };
    const kills: { atMs: number; instance: string; deployments: string[] }[] = [];
    let passed = false;
    try {
      for (const id of ["h1", "h2", "h3"]) start(id);
      await waitUntil("all deployments served", 90_000, async () => [...(await liveOwners(r)).values()].flat().length === DEPLOYMENTS);

      // Each kill hits a host that is up and serving: the instance of a running process that
      // holds unexpired leases.
      while (kills.length < KILLS || Date.now() < startMs + spanMs) {
        await sleep(rng.int(500, 2_000));
        // Kill only a settled cluster (every host up, every deployment served), so each takeover
        // measured is one host's death, not a pile-up of restarts on a slow machine.
        const ready = await Promise.all([...current.values()].map(({ instance }) => Promise.race([instance.then(() => true), sleep(0).then(() => false)])));
        if (!ready.every(Boolean)) continue;
        const owners = await liveOwners(r);
        // …and no hand-over under way: three owners at their share each.
        if ([...owners.values()].flat().length < DEPLOYMENTS || owners.size !== 3 || [...owners.values()].some((d) => d.length !== DEPLOYMENTS / 3)) continue;
        const candidates: { hostId: string; instance: string; deployments: string[] }[] = [];
        for (const [hostId, { child, instance }] of current) {
          const name = await Promise.race([instance, sleep(0).then(() => null)]);
          const deployments = name === null ? undefined : owners.get(name);
          if (!child.done && name !== null && deployments !== undefined) candidates.push({ hostId, instance: name, deployments });
        }
        if (candidates.length === 0) continue;
        const victim = rng.pick(candidates);
        const { child } = current.get(victim.hostId) as { child: WatchedChild };
        const atMs = Date.now();
        child.kill("SIGKILL");
        await child.exited;
        kills.push({ atMs, instance: victim.instance, deployments: victim.deployments });
        // The same machine comes back at once, as a new instance on the same data dir.
        start(victim.hostId);
      }

      const endMs = startMs + spanMs + 2_000;
      await waitForRemotesPast(r, endMs, ONE_SHOTS, 300_000);
      for (const { child } of current.values()) child.kill("SIGTERM");
      for (const { child } of current.values()) await child.exited;
      const verdict = await checkRemotes(r, { endMs, dueGraceMs: 0 });
      expect(verdict.violations).toEqual([]);
      expect(verdict.fired).toBe(DEPLOYMENTS * ONE_SHOTS);
      expect(kills.length).toBeGreaterThanOrEqual(KILLS);

      // Takeover: from the kill to the first recovery of each of the victim's deployments by
      // another instance (lease expiry + fetch + takeover commit + recovery).
      const recoveries: { repoId: string; atMs: number; pid: number }[] = [];
      for (const child of every) {
        for (const line of child.lines()) {
          if (!line.includes('"event":"recovered"')) continue;
          const parsed = JSON.parse(line) as { ts: string; repoId: string };
          recoveries.push({ repoId: parsed.repoId, atMs: Date.parse(parsed.ts), pid: child.pid });
        }
      }
      const takeoverMs: number[] = [];
      for (const kill of kills) {
        for (const repoId of kill.deployments) {
          const next = recoveries.filter((x) => x.repoId === repoId && x.atMs > kill.atMs).sort((a, b) => a.atMs - b.atMs)[0];
          if (next !== undefined) takeoverMs.push(next.atMs - kill.atMs);
        }
      }
      takeoverMs.sort((a, b) => a - b);
      expect(takeoverMs.length).toBeGreaterThan(0);
      console.log(
        `${kills.length} kills, ${timers} timers set, ${verdict.fired} one-shots and ${verdict.cronFired} cron ticks fired, ${verdict.cronSkippedTicks} ticks skipped, ` +
          `${verdict.takeovers} lease takeovers; takeover (TTL ${TTL_MS} ms) p50 ${percentile(takeoverMs, 50)} ms, p99 ${percentile(takeoverMs, 99)} ms over ${takeoverMs.length}`,
      );
      passed = true;
    } finally {
      // A failed run leaves every host's lines for the post-mortem.
      if (!passed || process.env["DEBUG_CLUSTER"] === "1") {
        writeFileSync("/tmp/kill-hosts.log", every.map((c) => `== ${c.pid}\n${c.lines().join("\n")}`).join("\n") + `\n== kills\n${JSON.stringify(kills)}\n`);
      }
    }
  });
});
