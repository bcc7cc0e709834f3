/**
 * Cluster mode against single-host mode, in the same run: fire throughput (a burst of timers
 * all due at once) and lateness (timers spread over a window) of one host, in process, first
 * on a plain data dir, then in cluster mode (PostgreSQL lease, every batch pushed to a local
 * bare remote with compare-and-swap before it counts) — the cost of pushing each batch. Then
 * takeover time: three `serve --cluster` processes, one SIGKILLed and started again at once,
 * timed from the kill to another process's recovery of each of its deployments, phase by phase
 * (lease expiry, claim, preparation: fetch + takeover commit, hand-off to the scheduler, recovery).
 *
 * Skipped, with the reason printed, when PostgreSQL is not installed.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { createWorkflowHost } from "../src/host/host.js";
import { openWorkflowStore } from "../src/host/open-workflow-store.js";
import { WORKFLOW_RUN_KIND } from "../src/workflow/workflow-run-kind.js";
import { findPostgresBin, startPostgres, type PostgresServer } from "../test/support/postgres-server.js";
import type { BenchContext, Benchmark } from "./bench-context.js";
import { percentile, sleep } from "./stats.js";
import { ms, num, row, type TableRow } from "./table.js";

const CLI_MAIN = fileURLToPath(new URL("../src/cli/main.ts", import.meta.url));
const REPO = "bench";
const TTL_MS = 3_000;

/** Writes `count` TimerSets (one run per 10 timers) due from `firstMs`, `spacingMs` apart, in one commit. */
async function seed(dataDir: string, count: number, firstMs: number, spacingMs: number): Promise<void> {
  const store = openWorkflowStore({ dataDir, watch: false });
  try {
    const rid = { kind: WORKFLOW_RUN_KIND, id: REPO };
    await store.initRepo(null, rid);
    await store.writeTreeDelta(null, rid, "refs/heads/main", {
      message: `Set ${count} timers`,
      computeDelta: async () => {
        const puts = new Map<string, Uint8Array>();
        for (let i = 0; i < count; i++) {
          const seq = (i % 10) + 1;
          const event = { seq, type: "TimerSet", data: { timerId: `t${i}`, fireAt: new Date(firstMs + i * spacingMs).toISOString() } };
          puts.set(`runs/r${Math.floor(i / 10)}/events/${seq}.json`, new TextEncoder().encode(JSON.stringify(event)));
        }
        return { puts };
      },
    });
  } finally {
    await store.close();
  }
}

interface FireRun {
  readonly firesPerSec: number;
  readonly lateP50: number;
  readonly lateP99: number;
}

/**
 * One host over `count` timers due from `leadMs` on (`spacingMs` apart; 0 = a burst); resolves
 * once every one is reported fired (in cluster mode: accepted by the remote).
 */
async function fire(dir: string, count: number, spacingMs: number, cluster: { url: string } | null): Promise<FireRun> {
  // Far enough ahead that the start (in cluster mode: lease, fetch, takeover commit) is over.
  const leadMs = 8_000;
  const firstMs = Date.now() + leadMs;
  const remotes = join(dir, "remotes");
  await seed(cluster === null ? join(dir, "host") : remotes, count, firstMs, spacingMs);
  const late: number[] = [];
  let lastMs = 0;
  let done: () => void = () => undefined;
  const all = new Promise<void>((resolve) => {
    done = resolve;
  });
  const host = createWorkflowHost({
    dataDir: join(dir, "host"),
    ...(cluster === null ? {} : { cluster: { url: cluster.url, remoteBase: join(remotes, "deployments"), leaseTtlMs: 10_000, fetchEveryMs: 0 } }),
    onEvent: (event) => {
      if (event.type !== "fired") return;
      const nowMs = Date.now();
      late.push(nowMs - Date.parse(event.scheduledFor));
      lastMs = nowMs;
      if (late.length === count) done();
    },
  });
  if (cluster !== null) await host.createDeployment(REPO);
  await host.start();
  try {
    await all;
  } finally {
    await host.stop();
  }
  late.sort((a, b) => a - b);
  const spanMs = Math.max(1, lastMs - firstMs);
  return { firesPerSec: (count / spanMs) * 1_000, lateP50: percentile(late, 50), lateP99: percentile(late, 99) };
}

/** `serve --cluster` in a child process; resolves its output lines as they come. */
function serve(dataDir: string, url: string, remoteBase: string, hostId: string): { child: ChildProcess; lines: string[] } {
  const child = spawn(process.execPath, ["--import", "tsx", CLI_MAIN, "serve", "--data-dir", dataDir, "--init", "--json", "--durability", "none", "--cluster", url, "--remote-base", remoteBase, "--host-id", hostId, "--lease-ttl-ms", String(TTL_MS), "--fetch-every-ms", "0"], {
    stdio: ["ignore", "pipe", "ignore"],
  });
  const lines: string[] = [];
  let partial = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    const parts = (partial + chunk.toString("utf8")).split("\n");
    partial = parts.pop() ?? "";
    lines.push(...parts);
  });
  return { child, lines };
}

async function until(what: string, timeoutMs: number, check: () => Promise<boolean> | boolean): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`cluster bench: timed out waiting for ${what}`);
    await sleep(50);
  }
}

/** Where one deployment's takeover time went (ms each; they add up to `totalMs`). */
export interface TakeoverPhases {
  readonly repoId: string;
  /** SIGKILL → the dead holder's lease expires in PostgreSQL (its last renewal + TTL − now). */
  readonly expiryMs: number;
  /** Expiry → another instance acquires it (`acquired_at`): how long the expired lease lay unclaimed; negative when the restarted process freed and took it before it expired. */
  readonly claimMs: number;
  /** Acquisition → the start of its preparation (waiting for other preparations, or for the new process to get there). */
  readonly queueMs: number;
  /** Fetch of the remote + the takeover commit pushed (the `lease-acquired` line's `ms`). */
  readonly prepareMs: number;
  /** Prepared → the scheduler starts recovering it (the served set's change reaching the scheduler). */
  readonly handOffMs: number;
  /** Recovery from the tip (the `recovered` line's `ms`). */
  readonly recoveryMs: number;
  /** SIGKILL → `recovered`. */
  readonly totalMs: number;
  /** Whether the restarted process (not a survivor) took it. */
  readonly byRestarted: boolean;
}

interface Line {
  readonly ts: string;
  readonly event: string;
  readonly repoId?: string;
  readonly ms?: number;
}

interface Served {
  readonly child: ChildProcess;
  readonly lines: string[];
}

const parsed = (h: Served): Line[] => h.lines.filter((l) => l.startsWith("{")).map((l) => JSON.parse(l) as Line);

/**
 * Three `serve --cluster` processes share `deployments` deployments; `kills` times one of them
 * is SIGKILLed and started again at once on its data dir (as a supervisor would), and each of its
 * deployments is timed until another process recovered it, phase by phase: from its lease row
 * (expiry), the lease history (acquisition) and the `lease-acquired` / `recovered` lines of
 * the process that took it (PostgreSQL runs on this machine: one clock for all of them).
 */
export async function takeovers(dir: string, server: PostgresServer, deployments: number, kills: number, log: (m: string) => void): Promise<TakeoverPhases[]> {
  const remoteBase = join(dir, "remotes", "deployments");
  const seeder = createWorkflowHost({ dataDir: join(dir, "seed"), cluster: { url: server.url, remoteBase } });
  for (let i = 0; i < deployments; i++) await seeder.createDeployment(`d${i}`);
  await seeder.stop();
  const db = new pg.Client({ connectionString: server.url });
  await db.connect();
  const owners = async (): Promise<Map<string, number>> => {
    const rows = (await db.query<{ owner: string; n: string }>(`SELECT owner, count(*) AS n FROM workflow_host_leases WHERE owner IS NOT NULL AND expires_at > now() GROUP BY owner`)).rows;
    return new Map(rows.map((r) => [r.owner, Number(r.n)]));
  };
  const hostIds = ["a", "b", "c"];
  const hosts = new Map<string, Served>();
  const instanceOf = (h: Served): string | null => {
    const line = h.lines.find((l) => l.includes('"event":"serving"'));
    return line === undefined ? null : (JSON.parse(line) as { instance: string }).instance;
  };
  const phases: TakeoverPhases[] = [];
  try {
    for (const id of hostIds) hosts.set(id, serve(join(dir, id), server.url, remoteBase, id));
    for (let k = 0; k < kills; k++) {
      // A settled cluster: all up, each at its share (no hand-over under way).
      await until("every host serving its share", 120_000, async () => {
        if ([...hosts.values()].some((h) => instanceOf(h) === null)) return false;
        const held = await owners();
        return held.size === hostIds.length && [...held.values()].every((n) => n === deployments / hostIds.length);
      });
      // At a random point of the renewal interval, as a crash would be.
      await sleep(Math.random() * (TTL_MS / 5));
      const victimId = hostIds[k % hostIds.length] as string;
      const victim = hosts.get(victimId) as Served;
      const survivors = [...hosts].filter(([id]) => id !== victimId).map(([, h]) => h);
      const seen = new Map(survivors.map((h) => [h, h.lines.length]));
      const killedAtMs = Date.now();
      victim.child.kill("SIGKILL");
      await new Promise((resolve) => victim.child.once("close", resolve));
      const restarted = serve(join(dir, victimId), server.url, remoteBase, victimId);
      hosts.set(victimId, restarted);
      seen.set(restarted, 0);
      // Dead: its rows keep the expiry of its last renewal until someone takes them.
      const expiries = new Map(
        (await db.query<{ deployment: string; expires_at: Date }>(`SELECT deployment, expires_at FROM workflow_host_leases WHERE owner = $1`, [instanceOf(victim)])).rows.map((r) => [r.deployment, r.expires_at.getTime()]),
      );
      const after = (h: Served): Line[] => parsed({ child: h.child, lines: h.lines.slice(seen.get(h) ?? 0) });
      const firstOf = (event: string, repoId: string): { line: Line; host: Served } | null => {
        const found = [...seen.keys()]
          .flatMap((h) => after(h).filter((l) => l.event === event && l.repoId === repoId).map((line) => ({ line, host: h })))
          .sort((x, y) => Date.parse(x.line.ts) - Date.parse(y.line.ts));
        return found[0] ?? null;
      };
      await until("the victim's deployments recovered elsewhere", 120_000, () => [...expiries.keys()].every((id) => firstOf("recovered", id) !== null));
      const acquired = new Map(
        (
          await db.query<{ deployment: string; acquired_at: Date }>(`SELECT DISTINCT ON (deployment) deployment, acquired_at FROM workflow_host_lease_history WHERE deployment = ANY($1::text[]) AND acquired_at > to_timestamp($2 / 1000.0) ORDER BY deployment, epoch`, [
            [...expiries.keys()],
            killedAtMs,
          ])
        ).rows.map((r) => [r.deployment, r.acquired_at.getTime()]),
      );
      for (const [repoId, expiresAtMs] of expiries) {
        const recovered = firstOf("recovered", repoId);
        const prepared = recovered === null ? undefined : after(recovered.host).find((l) => l.event === "lease-acquired" && l.repoId === repoId);
        const acquiredAtMs = acquired.get(repoId);
        if (recovered === null || prepared === undefined || acquiredAtMs === undefined) continue;
        const preparedAtMs = Date.parse(prepared.ts);
        const recoveredAtMs = Date.parse(recovered.line.ts);
        const prepareMs = prepared.ms ?? 0;
        const recoveryMs = recovered.line.ms ?? 0;
        phases.push({
          repoId,
          expiryMs: expiresAtMs - killedAtMs,
          claimMs: acquiredAtMs - expiresAtMs,
          queueMs: preparedAtMs - prepareMs - acquiredAtMs,
          prepareMs,
          handOffMs: recoveredAtMs - recoveryMs - preparedAtMs,
          recoveryMs,
          totalMs: recoveredAtMs - killedAtMs,
          byRestarted: recovered.host === restarted,
        });
      }
      const these = phases.slice(-expiries.size);
      log(`cluster: kill ${k + 1}/${kills}: ${expiries.size} deployments taken over (${these.filter((p) => p.byRestarted).length} by the restarted process), slowest ${Math.max(...these.map((p) => p.totalMs))} ms`);
    }
  } finally {
    for (const h of hosts.values()) h.child.kill("SIGKILL");
    await db.end();
  }
  return phases;
}

/** "p50 / p99" of one phase over every takeover. */
function phaseFigures(phases: readonly TakeoverPhases[], key: keyof Omit<TakeoverPhases, "repoId" | "byRestarted">): string {
  const values = phases.map((p) => p[key]);
  return `${ms(percentile(values, 50))} / ${ms(percentile(values, 99))}`;
}

export const cluster: Benchmark = {
  name: "cluster",
  async run(ctx: BenchContext) {
    const title = "Cluster mode: one host pushing every batch to its remote, against single-host mode; takeover time";
    const baseline = "single-host mode, same run";
    if (findPostgresBin() === null) {
      const reason = "skipped: PostgreSQL is not installed (no initdb under /usr/lib/postgresql/*/bin or on PATH; Debian: apt-get install postgresql)";
      ctx.log(`cluster: ${reason}`);
      return { name: "cluster", title, baseline, rows: [], notes: [reason] };
    }
    const server = await startPostgres();
    const rows: TableRow[] = [];
    const notes: string[] = [];
    const burst = ctx.quick ? 200 : 2_000;
    const spread = ctx.quick ? { count: 100, spacingMs: 20 } : { count: 1_000, spacingMs: 5 };
    try {
      const measure = async (kind: "single" | "cluster", count: number, spacingMs: number): Promise<FireRun> => {
        const dir = await mkdtemp(join(tmpdir(), "workflow-host-bench-cluster-"));
        try {
          return await fire(dir, count, spacingMs, kind === "cluster" ? { url: server.url } : null);
        } finally {
          await rm(dir, { recursive: true, force: true });
        }
      };
      const single = await measure("single", burst, 0);
      const clustered = await measure("cluster", burst, 0);
      rows.push(row(`burst of ${num(burst)} timers due at once: fires/s`, { value: clustered.firesPerSec, text: num(clustered.firesPerSec) }, { value: single.firesPerSec, text: num(single.firesPerSec) }, "higher"));
      await resetLeases(server.url);
      const singleSpread = await measure("single", spread.count, spread.spacingMs);
      const clusterSpread = await measure("cluster", spread.count, spread.spacingMs);
      // The takeover hosts would otherwise count the lease of "bench", whose remote is gone.
      await resetLeases(server.url);
      const rate = `${num(1_000 / spread.spacingMs)} timers/s`;
      rows.push(row(`${num(spread.count)} timers at ${rate}: lateness p50`, { value: clusterSpread.lateP50, text: ms(clusterSpread.lateP50) }, { value: singleSpread.lateP50, text: ms(singleSpread.lateP50) }, "lower"));
      rows.push(row(`${num(spread.count)} timers at ${rate}: lateness p99`, { value: clusterSpread.lateP99, text: ms(clusterSpread.lateP99) }, { value: singleSpread.lateP99, text: ms(singleSpread.lateP99) }, "lower"));

      const dir = await mkdtemp(join(tmpdir(), "workflow-host-bench-takeover-"));
      try {
        const deployments = ctx.quick ? 3 : 9;
        const kills = ctx.quick ? 1 : 6;
        const phases = await takeovers(dir, server, deployments, kills, ctx.log);
        const times = phases.map((p) => p.totalMs);
        const target = TTL_MS + 2_000;
        rows.push(row(`takeover after SIGKILL, p50 (${kills} kills, ${deployments} deployments, TTL ${ms(TTL_MS)})`, { value: percentile(times, 50), text: ms(percentile(times, 50)) }, { value: target, text: `${ms(target)} (target: TTL + 2 s)` }, "lower"));
        rows.push(row(`takeover after SIGKILL, p99`, { value: percentile(times, 99), text: ms(percentile(times, 99)) }, { value: target, text: `${ms(target)} (target: TTL + 2 s)` }, "lower"));
        notes.push(
          `Takeover phases, p50 / p99 over ${phases.length} takeovers: kill → lease expiry ${phaseFigures(phases, "expiryMs")}; expiry → claimed ${phaseFigures(phases, "claimMs")}; ` +
            `claimed → preparation starts ${phaseFigures(phases, "queueMs")}; fetch + takeover commit ${phaseFigures(phases, "prepareMs")}; ` +
            `prepared → recovery starts ${phaseFigures(phases, "handOffMs")}; recovery ${phaseFigures(phases, "recoveryMs")}.`,
        );
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
      notes.push(
        "Throughput and lateness: one host in this process, durability none both ways; in cluster mode every fire batch is pushed (`git push --force-with-lease`) to a bare remote on the same disk before the local ref moves and before the fire is reported, so the figures include one git process per batch.",
        "Takeover: three `serve --cluster` processes on one machine, TTL 3 s; one is SIGKILLed at a random point of its renewal interval and started again at once on its data dir (as a supervisor would); from the SIGKILL to the first `recovered` line of another process for each deployment the victim served; the baseline column holds the target, not a measurement.",
      );
    } finally {
      await server.stop();
    }
    return { name: "cluster", title, baseline, rows, notes };
  },
};

/** Frees every lease (between tries that reuse the deployment name). */
async function resetLeases(url: string): Promise<void> {
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  try {
    await db.query(`DELETE FROM workflow_host_leases; DELETE FROM workflow_host_hosts`);
  } finally {
    await db.end();
  }
}
