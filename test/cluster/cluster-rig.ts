/**
 * A cluster on one machine for the cluster suites: a PostgreSQL server started by the test, a
 * folder of bare git remotes (one per deployment), and `workflow-host serve --cluster` child
 * processes, each with its own data dir. Every verdict is read from the remotes' logs and the
 * lease table, never from what a host printed.
 */
import { mkdir, writeFile } from "node:fs/promises";
import { createServer, Socket, type Server } from "node:net";
import { join } from "node:path";
import pg from "pg";
import { createWorkflowHost } from "../../src/host/host.js";
import { git } from "../helpers/git-cli.js";
import { startPostgres, type PostgresServer } from "../support/postgres-server.js";
import { spawnServe, type WatchedChild } from "../integration/reliability/serve-process.js";
import { fsckViolations, gitHistory, historyViolations, readDeploymentLog } from "../integration/reliability/deployment-log.js";
import { checkTimerLog } from "../integration/reliability/timer-invariants.js";
import { nextTick } from "../../src/workflow/cron.js";
import { DEFAULT_MISFIRE_GRACE_MS } from "../../src/workflow/timer-ledger.js";

export interface ClusterRig {
  readonly dir: string;
  readonly pg: PostgresServer;
  /** Folder holding `deployments/<id>.git`, so a store opened on it reads the remotes. */
  readonly remotesDir: string;
  /** `--remote-base` of every host. */
  readonly remoteBase: string;
  readonly repoIds: readonly string[];
  query<R extends pg.QueryResultRow>(text: string, values?: unknown[]): Promise<R[]>;
  close(): Promise<void>;
}

/** Starts PostgreSQL and creates `count` deployments (remote + lease row) named d00, d01, … */
export async function startClusterRig(dir: string, count: number): Promise<ClusterRig> {
  const server = await startPostgres();
  const remotesDir = join(dir, "remotes");
  const remoteBase = join(remotesDir, "deployments");
  await mkdir(remoteBase, { recursive: true });
  const repoIds = Array.from({ length: count }, (_, i) => `d${String(i).padStart(2, "0")}`);
  const seeder = createWorkflowHost({ dataDir: join(dir, "seed"), cluster: { url: server.url, remoteBase } });
  for (const id of repoIds) await seeder.createDeployment(id);
  const client = new pg.Client({ connectionString: server.url });
  await client.connect();
  return {
    dir,
    pg: server,
    remotesDir,
    remoteBase,
    repoIds,
    async query(text, values = []) {
      return (await client.query(text, values)).rows;
    },
    async close() {
      await client.end().catch(() => undefined);
      await server.stop();
    },
  };
}

let pushCounter = 0;

/** Commits event files into a remote with the git CLI, as a workflow runtime's other writer would. */
export async function pushEvents(rig: ClusterRig, repoId: string, files: Record<string, unknown>): Promise<void> {
  const work = join(rig.dir, "work", `${repoId}-${(pushCounter += 1)}`);
  await git(["clone", "--quiet", join(rig.remoteBase, `${repoId}.git`), work]);
  for (const [path, body] of Object.entries(files)) {
    await mkdir(join(work, path, ".."), { recursive: true });
    await writeFile(join(work, path), JSON.stringify(body));
  }
  await git(["add", "--all"], { cwd: work });
  await git(["commit", "--quiet", "-m", "Set timers"], { cwd: work });
  await git(["push", "--quiet", "origin", "HEAD:main"], { cwd: work });
}

/** Starts one host of the cluster (`serve --cluster … --json`). */
export function spawnClusterHost(rig: ClusterRig, hostId: string, opts: { ttlMs: number; url?: string; extra?: readonly string[] }): WatchedChild {
  return spawnServe(join(rig.dir, "hosts", hostId), [
    "--init",
    "--durability",
    "none",
    "--cluster",
    opts.url ?? rig.pg.url,
    "--remote-base",
    rig.remoteBase,
    "--host-id",
    hostId,
    "--lease-ttl-ms",
    String(opts.ttlMs),
    "--fetch-every-ms",
    "0",
    ...(opts.extra ?? []),
  ]);
}

export interface LeaseRow {
  deployment: string;
  owner: string | null;
  epoch: string;
  expires_at: Date | null;
}

/** Current owners: instance id → deployments whose unexpired lease it holds. */
export async function liveOwners(rig: ClusterRig): Promise<Map<string, string[]>> {
  const rows = await rig.query<LeaseRow>(`SELECT deployment, owner, epoch, expires_at FROM workflow_host_leases WHERE owner IS NOT NULL AND expires_at > now() ORDER BY deployment`);
  const owners = new Map<string, string[]>();
  for (const row of rows) owners.set(row.owner as string, [...(owners.get(row.owner as string) ?? []), row.deployment]);
  return owners;
}

/** Polls `check` every 100 ms until it returns true; throws with `what` after `timeoutMs`. */
export async function waitUntil(what: string, timeoutMs: number, check: () => Promise<boolean> | boolean): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

export interface RemoteCommit {
  readonly sha: string;
  readonly parents: readonly string[];
  readonly author: string;
  readonly subject: string;
}

/** main's history of one remote, oldest first. */
export async function remoteHistory(rig: ClusterRig, repoId: string): Promise<RemoteCommit[]> {
  const out = await git([`--git-dir=${join(rig.remoteBase, `${repoId}.git`)}`, "log", "--reverse", "--format=%H%x09%P%x09%an%x09%s", "main"]);
  return out
    .split("\n")
    .filter(Boolean)
    .map((line) => {
      const [sha = "", parents = "", author = "", subject = ""] = line.split("\t");
      return { sha, parents: parents.split(" ").filter(Boolean), author, subject };
    });
}

/**
 * Lease periods as the log records them: each "Lease of … taken by <instance> (epoch N)" commit
 * opens one; every fire commit must be authored by the instance of the period it lies in.
 * Returns the violations and the epochs in log order.
 */
export function leasePeriodViolations(repoId: string, history: readonly RemoteCommit[]): { violations: string[]; epochs: number[] } {
  const violations: string[] = [];
  const epochs: number[] = [];
  let holder: string | null = null;
  for (const commit of history) {
    const taken = /^Lease of (\S+) taken by (\S+) \(epoch (\d+)\)$/.exec(commit.subject);
    if (taken !== null) {
      holder = taken[2] as string;
      epochs.push(Number(taken[3]));
      continue;
    }
    if (!commit.subject.startsWith("Fire ")) continue;
    const author = commit.author.replace(/^workflow-host /, "");
    if (author !== holder) violations.push(`${repoId}: ${commit.sha} "${commit.subject}" by ${author} in the lease period of ${holder ?? "nobody"}`);
  }
  for (let i = 1; i < epochs.length; i++) {
    if ((epochs[i] as number) <= (epochs[i - 1] as number)) violations.push(`${repoId}: lease epochs out of order in the log: ${epochs.join(", ")}`);
  }
  return { violations, epochs };
}

/** A loopback TCP relay to PostgreSQL that the test can sever (every connection cut, new ones refused). */
export interface Relay {
  readonly url: string;
  sever(): Promise<void>;
}

export async function startRelay(target: { port: number }, urlOf: (port: number) => string): Promise<Relay> {
  const sockets = new Set<Socket>();
  let severed = false;
  const server: Server = createServer((client) => {
    if (severed) {
      client.destroy();
      return;
    }
    const upstream = new Socket();
    upstream.connect(target.port, "127.0.0.1");
    sockets.add(client);
    sockets.add(upstream);
    client.pipe(upstream);
    upstream.pipe(client);
    const drop = (): void => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on("error", drop).on("close", drop);
    upstream.on("error", drop).on("close", drop);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address !== null ? address.port : 0;
  return {
    url: urlOf(port),
    async sever() {
      severed = true;
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}


/**
 * One commit per deployment: run `cron` holding the series `*\/2 * * * * *` (one tick every 2 s,
 * misfire skip) and run `once` holding `oneShots` one-shot timers due evenly over `spanMs` from
 * `startMs`. Returns how many timers were set.
 */
export async function seedTimers(rig: ClusterRig, opts: { startMs: number; spanMs: number; oneShots: number }): Promise<number> {
  const first = nextTick("*/2 * * * * *", "UTC", new Date(opts.startMs).toISOString()) as string;
  let set = 0;
  const seedOne = async (id: string): Promise<void> => {
    const files: Record<string, unknown> = {
      "runs/cron/events/1.json": { seq: 1, type: "TimerSet", data: { timerId: "every2s", fireAt: first, cron: "*/2 * * * * *", timezone: "UTC" } },
    };
    for (let i = 1; i <= opts.oneShots; i++) {
      const fireAt = new Date(opts.startMs + Math.round((opts.spanMs * i) / opts.oneShots)).toISOString();
      files[`runs/once/events/${i}.json`] = { seq: i, type: "TimerSet", data: { timerId: `t${i}`, fireAt } };
    }
    await pushEvents(rig, id, files);
    set += 1 + opts.oneShots;
  };
  const queue = [...rig.repoIds];
  await Promise.all(Array.from({ length: 6 }, async () => {
    for (let id = queue.shift(); id !== undefined; id = queue.shift()) await seedOne(id);
  }));
  return set;
}

export interface RemoteVerdict {
  readonly violations: string[];
  readonly fired: number;
  readonly cronFired: number;
  readonly cronSkippedTicks: number;
  readonly takeovers: number;
}

/**
 * Everything the guarantees say, from the remotes alone: timer invariants (exactly once, never
 * early, cron ticks each handled once), linear history, fire commits only inside the lease
 * period of their author, lease epochs in the log matching the lease history, fsck --strict.
 */
export async function checkRemotes(rig: ClusterRig, opts: { endMs: number; dueGraceMs: number }): Promise<RemoteVerdict> {
  const violations: string[] = [];
  let fired = 0;
  let cronFired = 0;
  let cronSkippedTicks = 0;
  let takeovers = 0;
  const history = await rig.query<{ deployment: string; epoch: string }>(`SELECT deployment, epoch FROM workflow_host_lease_history ORDER BY deployment, epoch`);
  for (const id of rig.repoIds) {
    const gitdir = join(rig.remoteBase, `${id}.git`);
    const log = await readDeploymentLog(rig.remotesDir, id);
    const commits = await gitHistory(gitdir);
    const result = checkTimerLog({ runs: log.runs, history: commits, endMs: opts.endMs, dueGraceMs: opts.dueGraceMs, cronGraceMs: DEFAULT_MISFIRE_GRACE_MS });
    violations.push(...result.violations.map((v) => `${id}: ${v}`));
    violations.push(...(await historyViolations(gitdir, commits)).map((v) => `${id}: ${v}`));
    violations.push(...(await fsckViolations(gitdir)).map((v) => `${id}: ${v}`));
    const periods = leasePeriodViolations(id, await remoteHistory(rig, id));
    violations.push(...periods.violations);
    const epochs = history.filter((h) => h.deployment === id).map((h) => Number(h.epoch));
    // A lease taken by a host killed before its takeover commit landed leaves an epoch with no
    // commit; every epoch in the log must be one PostgreSQL granted, in order.
    for (const epoch of periods.epochs) if (!epochs.includes(epoch)) violations.push(`${id}: epoch ${epoch} in the log was never granted`);
    takeovers += periods.epochs.length;
    fired += result.stats.fired;
    cronFired += result.stats.cronFired;
    cronSkippedTicks += result.stats.cronSkippedTicks;
  }
  return { violations, fired, cronFired, cronSkippedTicks, takeovers };
}

/**
 * Waits (polling the remotes with git) until every deployment's log has gone past `untilMs`:
 * all `oneShots` one-shots fired and the cron series armed for a tick after it. Waiting on the
 * log, not on time, keeps the verdict independent of how fast the machine is.
 */
export async function waitForRemotesPast(rig: ClusterRig, untilMs: number, oneShots: number, timeoutMs: number): Promise<void> {
  const pending = new Set(rig.repoIds);
  await waitUntil(`every remote's log past ${new Date(untilMs).toISOString()}`, timeoutMs, async () => {
    for (const id of [...pending]) {
      const gitdir = `--git-dir=${join(rig.remoteBase, `${id}.git`)}`;
      const once = (await git([gitdir, "ls-tree", "--name-only", "main", "runs/once/events/"])).split("\n").filter(Boolean);
      if (once.length < 2 * oneShots) continue;
      const cron = (await git([gitdir, "ls-tree", "--name-only", "main", "runs/cron/events/"])).split("\n").filter(Boolean);
      const last = Math.max(...cron.map((p) => Number(p.split("/").pop()?.replace(".json", ""))));
      const event = JSON.parse(await git([gitdir, "cat-file", "-p", `main:runs/cron/events/${last}.json`])) as { type: string; data: { fireAt?: string } };
      if (event.type === "TimerSet" && Date.parse(event.data.fireAt ?? "") > untilMs) pending.delete(id);
    }
    return pending.size === 0;
  });
}
