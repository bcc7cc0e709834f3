/**
 * A host cut off from PostgreSQL (its connection goes through a loopback relay the test
 * severs) while its process keeps running: it stops firing within the lease TTL, another host
 * takes its deployments over, and every commit it attempts afterwards (signals sent to its own
 * HTTP API) is refused by the remote and never appears in the log.
 */
import { writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { git, runGit } from "../helpers/git-cli.js";
import { hasPostgres, useClusterRig } from "../support/cluster-suite.js";
import { checkRemotes, liveOwners, remoteHistory, seedTimers, spawnClusterHost, startRelay, waitForRemotesPast, waitUntil } from "./cluster-rig.js";

const TTL_MS = 3_000;
const DEPLOYMENTS = 6;
const ONE_SHOTS = 30;
const startRig = useClusterRig();

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => resolve(typeof address === "object" && address !== null ? address.port : 0));
    });
  });
}

describe.skipIf(!hasPostgres)("a host partitioned from PostgreSQL", () => {
  test("stops firing within the TTL; the commits it attempts afterwards are refused, never in the log, and its stale pushes are rejected by the remote", async () => {
    const r = await startRig(DEPLOYMENTS);
    const dir = r.dir;
    const startMs = Date.now() + 15_000;
    const spanMs = 40_000;
    await seedTimers(r, { startMs, spanMs, oneShots: ONE_SHOTS });
    const relay = await startRelay({ port: r.pg.port }, (port) => `postgres://postgres@127.0.0.1:${port}/postgres`);
    const tokens = join(dir, "tokens.json");
    await writeFile(tokens, JSON.stringify({ tokens: { "partition-test-token-0123": { principal: "ops", deployments: { "*": ["read", "write"] } } } }));
    const httpPort = await freePort();

    const cut = spawnClusterHost(r, "cut", { ttlMs: TTL_MS, url: relay.url, extra: ["--http", `127.0.0.1:${httpPort}`, "--tokens", tokens] });
    const cutInstance = (JSON.parse(await cut.waitForLine(/"event":"serving"/, 120_000)) as { instance: string }).instance;
    const other = spawnClusterHost(r, "other", { ttlMs: TTL_MS });
    await other.waitForLine(/"event":"serving"/, 120_000);
    await waitUntil("both hosts serving 3 each", 60_000, async () => (await liveOwners(r)).get(cutInstance)?.length === DEPLOYMENTS / 2 && [...(await liveOwners(r)).values()].flat().length === DEPLOYMENTS);
    // Fires of the cut host are in the log before the cut.
    await waitUntil("the timers to start firing", 60_000, () => Date.now() > startMs + 3_000);
    const cutDeployments = (await liveOwners(r)).get(cutInstance) as string[];

    const severedAtMs = Date.now();
    await relay.sever();
    await waitUntil("the other host to take every deployment over", 60_000, async () => {
      const owners = await liveOwners(r);
      return owners.size === 1 && !owners.has(cutInstance) && [...owners.values()].flat().length === DEPLOYMENTS;
    });
    // The new holder's takeover commits are on the remote: the log has moved past the cut host.
    const otherInstance = [...(await liveOwners(r)).keys()][0] as string;
    await waitUntil("the takeover commits on the remotes", 60_000, async () => {
      for (const repoId of cutDeployments) {
        const history = await remoteHistory(r, repoId);
        if (!history.some((c) => c.subject.startsWith(`Lease of ${repoId} taken by ${otherInstance} `))) return false;
      }
      return true;
    });
    // The cut host is still running; it only knows it could not renew. Every commit it is
    // asked for now (signals to its own HTTP API) is refused, and none reaches the log.
    expect(cut.done).toBe(false);
    const attempted: string[] = [];
    const refused: string[] = [];
    for (const repoId of cutDeployments) {
      for (let i = 0; i < 3; i++) {
        const signalId = `after-cut-${repoId}-${i}`;
        attempted.push(signalId);
        const response = await fetch(`http://127.0.0.1:${httpPort}/v1/wake`, {
          method: "POST",
          headers: { authorization: "Bearer partition-test-token-0123", "content-type": "application/json" },
          body: JSON.stringify({ repoId, runId: "once", signalId, payload: { i } }),
        });
        const body = (await response.json()) as { code?: string };
        if (response.status === 409) refused.push(body.code ?? "");
      }
    }
    expect(refused.length).toBe(attempted.length);
    expect(new Set(refused)).toEqual(new Set(["lease_not_held"]));
    // A commit that had passed that check just before the deadline (a paused process) meets the
    // remote's compare-and-swap: pushed from the cut host's own clone, expecting its tip, it is
    // rejected.
    let remoteRejections = 0;
    for (const repoId of cutDeployments) {
      const clone = `--git-dir=${join(dir, "hosts", "cut", "deployments", `${repoId}.git`)}`;
      const tip = (await git([clone, "rev-parse", "refs/heads/main"])).trim();
      const commit = (await git([clone, "commit-tree", `${tip}^{tree}`, "-p", tip, "-m", "Fire 1 timer"])).trim();
      const push = await runGit([clone, "push", "--porcelain", `--force-with-lease=refs/heads/main:${tip}`, join(r.remoteBase, `${repoId}.git`), `${commit}:refs/heads/main`]);
      if (push.code !== 0 && /\[rejected\]/.test(push.stdout)) remoteRejections += 1;
    }
    expect(remoteRejections).toBe(cutDeployments.length);
    // The cut host had stopped firing each of its deployments within the TTL of the cut.
    for (const repoId of cutDeployments) {
      const line = cut.lines().find((l) => l.includes('"event":"lease-unconfirmed"') && l.includes(`"repoId":"${repoId}"`) && Date.parse((JSON.parse(l) as { ts: string }).ts) >= severedAtMs);
      expect(line, `lease-unconfirmed for ${repoId}`).toBeDefined();
      expect(Date.parse((JSON.parse(line as string) as { ts: string }).ts) - severedAtMs).toBeLessThanOrEqual(TTL_MS);
    }

    const endMs = startMs + spanMs + 2_000;
    await waitForRemotesPast(r, endMs, ONE_SHOTS, 180_000);
    other.kill("SIGTERM");
    cut.kill("SIGTERM");
    await Promise.all([other.exited, cut.exited]);

    // From the logs: no commit of the cut host after the TTL had run out, none of its attempted
    // signals, and every guarantee of the kill test.
    const lastAllowedSec = Math.ceil((severedAtMs + TTL_MS) / 1_000);
    for (const repoId of r.repoIds) {
      const history = await remoteHistory(r, repoId);
      const times = (await git([`--git-dir=${join(r.remoteBase, `${repoId}.git`)}`, "log", "--reverse", "--format=%ct", "main"])).split("\n").filter(Boolean).map(Number);
      history.forEach((commit, i) => {
        if (commit.author === `workflow-host ${cutInstance}`) expect(times[i], `${repoId} ${commit.subject}`).toBeLessThanOrEqual(lastAllowedSec);
      });
      const tree = await git([`--git-dir=${join(r.remoteBase, `${repoId}.git`)}`, "grep", "-l", "after-cut", "main", "--", "runs"]).catch(() => "");
      expect(tree).toBe("");
    }
    const verdict = await checkRemotes(r, { endMs, dueGraceMs: 0 });
    expect(verdict.violations).toEqual([]);
    expect(verdict.fired).toBe(DEPLOYMENTS * ONE_SHOTS);
    console.log(`partition: ${attempted.length} commits asked of the cut host after the takeover, ${refused.length} refused (lease_not_held); ${remoteRejections} stale pushes from its clone rejected by the remotes`);
  });
});
