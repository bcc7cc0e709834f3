/**
 * Cluster mode: which deployments this host serves, decided by leases in PostgreSQL, and the
 * fence on every commit it makes: the commit is pushed to the deployment's git remote with a
 * compare-and-swap before the local ref moves (docs/cluster.md).
 *
 * Per deployment lease, states and transitions:
 *   preparing  — acquired in PostgreSQL; the clone fetches the remote and appends the "lease
 *                taken" commit (the fencing token in the log). Writes are refused (lease_not_held).
 *   serving    — listed to the scheduler and the dispatcher; commits are pushed, then land.
 *   unconfirmed— the lease was not renewed in time (PostgreSQL unreachable, a slow host): the
 *                scheduler stops firing it before the lease can expire in PostgreSQL, and
 *                writes are refused here (lease_not_held). A later successful renewal (same
 *                owner, same epoch) returns it to serving.
 *   releasing  — being handed over: no longer listed (the scheduler stops firing it), while the
 *                commit in flight still goes to the remote; then the row is freed.
 *   (gone)     — released (rebalance, stop), or found lost at a renewal: writes are refused.
 *
 * Every tick (`renewEveryMs`): register this instance, renew the leases held, then compare
 * with the share ceil(deployments / live hosts): release the excess (after the scheduler has
 * stopped firing them) or acquire what is missing from free and expired leases.
 */
import { randomBytes } from "node:crypto";
import { readdir, rm } from "node:fs/promises";
import { hostname } from "node:os";
import { join } from "node:path";
import { WorkflowHostError } from "../../src/errors.js";
import { silentLogger, type Logger } from "../../src/logger.js";
import type { RefMove } from "../../src/substrate/types.js";
import { systemMonotonicNow, type Clock, type MonotonicNow, type TimerHandle, type Timers } from "../../src/time/clock.js";
import { createGitRemote, type GitEnv, type GitRemote } from "./git-remote.js";
import { createLeaseTable, type Lease, type LeaseTable } from "./lease-table.js";

/** Cluster options of `createWorkflowHost` (and `serve --cluster`). */
export interface ClusterOptions {
  /** PostgreSQL connection string holding the lease table (postgres://user@host:port/db). */
  readonly url: string;
  /** Each deployment's remote is `<remoteBase>/<repoId>.git`: a path, file://, ssh:// or https:// URL. */
  readonly remoteBase: string;
  /** Names this host in commits and in the lease table. Default the machine's host name. */
  readonly hostId?: string;
  /** Lease lifetime (ms, default 10 000, 1 000 … 600 000): a dead host's deployments are taken over this long after its last renewal. */
  readonly leaseTtlMs?: number;
  /** Renewal and rebalance interval (ms, default leaseTtlMs / 5). */
  readonly renewEveryMs?: number;
  /** How often served deployments are fetched, to see commits pushed to the remote by others (ms, default 5 000, 0 = only on takeover and after a refused push). */
  readonly fetchEveryMs?: number;
  /** Environment of the git processes that fetch and push (ssh keys, credential helpers, proxies). Default: this process's environment. */
  readonly gitEnv?: GitEnv;
}

export type ClusterEvent =
  | { readonly type: "lease_acquired"; readonly repoId: string; readonly epoch: number; readonly commitSha: string; readonly ms: number }
  | { readonly type: "lease_released"; readonly repoId: string; readonly epoch: number; readonly reason: "rebalance" | "stop" }
  | { readonly type: "lease_lost"; readonly repoId: string; readonly epoch: number }
  | { readonly type: "lease_unconfirmed"; readonly repoId: string; readonly epoch: number }
  | { readonly type: "lease_confirmed"; readonly repoId: string; readonly epoch: number }
  | { readonly type: "push_rejected"; readonly repoId: string; readonly ref: string; readonly from: string | null; readonly to: string; readonly reason: string }
  | { readonly type: "cluster_error"; readonly repoId: string | null; readonly error: WorkflowHostError };

export interface ClusterStats {
  readonly instanceId: string;
  readonly serving: number;
  readonly leases: number;
  readonly pushes: number;
  readonly pushesRejected: number;
}

export interface ClusterCoordinator {
  readonly instanceId: string;
  /** Commit identity of this instance (the store's author in cluster mode). */
  readonly identity: { readonly name: string; readonly email: string };
  /**
   * Creates the tables, clears ref locks a killed process left in the clones, registers this
   * instance, takes its first leases and prepares them.
   * @throws cluster_unavailable when PostgreSQL cannot be reached
   */
  start(): Promise<void>;
  /** Deployments being served (the scheduler's and the dispatcher's list). */
  serving(): string[];
  /**
   * The store's `beforeRefMove`: pushes the commit to the remote with compare-and-swap.
   * @throws lease_not_held (not served here, or its renewal is overdue: nothing is pushed), remote_rejected (the remote
   *   moved: it is fetched again; the writer's retry re-plans on the new tip),
   *   remote_unavailable (retried by the writer with backoff)
   */
  beforeRefMove(move: RefMove): Promise<void>;
  /**
   * Creates the deployment's remote when missing (a local path) with a genesis commit, and
   * registers it in the lease table; a host takes it within one renewal interval.
   */
  createDeployment(repoId: string): Promise<{ created: boolean; commitSha: string }>;
  stats(): ClusterStats;
  /** Stops renewing, has the scheduler stop firing, and frees every lease at once. */
  stop(): Promise<void>;
}

export interface ClusterCoordinatorOptions extends ClusterOptions {
  /** `<dataDir>/deployments`: where the clones live. */
  readonly deploymentsDir: string;
  readonly timers: Timers;
  readonly clock: Clock;
  readonly monoMs?: MonotonicNow;
  readonly logger?: Logger;
  /** Called when the served set changed; resolves once the scheduler and dispatcher follow it. */
  readonly onServingChanged: () => Promise<void>;
  readonly onEvent?: (event: ClusterEvent) => void;
}

type LeaseState = "preparing" | "serving" | "unconfirmed" | "releasing";
interface HeldLease {
  epoch: number;
  state: LeaseState;
  /** Monotonic ms after which the lease may have expired in PostgreSQL (minus a margin). */
  deadlineMs: number;
  /** A preparation failed (remote down): retried at the next tick. */
  prepareFailed: boolean;
}

export const DEFAULT_LEASE_TTL_MS = 10_000;
const PREPARE_CONCURRENCY = 4;

/**
 * Creates the coordinator; nothing runs until `start()`.
 * @throws config_invalid for a TTL or interval out of range, or an empty url / remoteBase
 */
export function createClusterCoordinator(opts: ClusterCoordinatorOptions): ClusterCoordinator {
  const ttlMs = opts.leaseTtlMs ?? DEFAULT_LEASE_TTL_MS;
  if (!Number.isInteger(ttlMs) || ttlMs < 1_000 || ttlMs > 600_000) {
    throw new WorkflowHostError("config_invalid", `leaseTtlMs ${String(ttlMs)} is not an integer number of milliseconds in 1000 … 600000`, { leaseTtlMs: ttlMs });
  }
  const renewEveryMs = opts.renewEveryMs ?? Math.round(ttlMs / 5);
  if (!Number.isInteger(renewEveryMs) || renewEveryMs < 50 || renewEveryMs > ttlMs / 2) {
    throw new WorkflowHostError("config_invalid", `renewEveryMs ${String(renewEveryMs)} must be an integer in 50 … leaseTtlMs / 2 (${ttlMs / 2})`, { renewEveryMs, leaseTtlMs: ttlMs });
  }
  const fetchEveryMs = opts.fetchEveryMs ?? 5_000;
  if (typeof opts.url !== "string" || opts.url === "" || typeof opts.remoteBase !== "string" || opts.remoteBase === "") {
    throw new WorkflowHostError("config_invalid", "cluster mode needs a PostgreSQL url and a remoteBase", { url: opts.url, remoteBase: opts.remoteBase });
  }
  const hostId = opts.hostId ?? hostname();
  if (!/^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$/.test(hostId)) {
    throw new WorkflowHostError("id_invalid", `hostId ${JSON.stringify(hostId)} is not 1-100 of A-Z a-z 0-9 _ . - (starting with a letter or digit)`, { hostId });
  }
  const instanceId = `${hostId}.${randomBytes(4).toString("hex")}`;
  const identity = { name: `workflow-host ${instanceId}`, email: `${hostId}@workflow-host` };
  const logger = opts.logger ?? silentLogger;
  const mono = opts.monoMs ?? systemMonotonicNow;
  const { timers } = opts;
  const table: LeaseTable = createLeaseTable({ url: opts.url, instanceId, ttlMs, queryTimeoutMs: Math.max(Math.round(ttlMs / 2), 500) });
  const remote: GitRemote = createGitRemote({ remoteBase: opts.remoteBase, identity, clock: opts.clock, timers, ...(opts.gitEnv === undefined ? {} : { env: opts.gitEnv }) });
  const gitdirOf = (repoId: string): string => join(opts.deploymentsDir, `${repoId}.git`);

  const leases = new Map<string, HeldLease>();
  let stopped = false;
  let tickHandle: TimerHandle = null;
  let watchHandle: TimerHandle = null;
  let fetchHandle: TimerHandle = null;
  let ticking: Promise<void> | null = null;
  let pushes = 0;
  let pushesRejected = 0;
  let outage = false;
  let lastError: WorkflowHostError | null = null;
  const preparing = new Set<Promise<void>>();

  // Each report goes to one place: `onEvent` when given, else the logger.
  const report = (event: ClusterEvent): void => {
    if (opts.onEvent !== undefined) {
      // reported below
    } else if (event.type === "cluster_error") logger.warn(`cluster: ${event.error.message}`, event.repoId === null ? {} : { repoId: event.repoId });
    else if (event.type === "push_rejected") logger.warn(`cluster: the remote of ${event.repoId} refused a push (${event.reason})`);
    else logger.info(`cluster: ${event.type} ${event.repoId} epoch ${event.epoch}`);
    try {
      opts.onEvent?.(event);
    } catch {
      // A listener's failure never stops the coordinator.
    }
  };

  // The served set changes one at a time, and each change waits for the scheduler to follow it.
  let applying: Promise<void> = Promise.resolve();
  const applyServing = (): Promise<void> => {
    applying = applying.then(() => opts.onServingChanged()).catch((error: unknown) => logger.error(`cluster: applying leases failed: ${String(error)}`));
    return applying;
  };

  async function prepare(repoId: string, lease: HeldLease): Promise<void> {
    const startedMs = mono();
    try {
      const gitdir = gitdirOf(repoId);
      await remote.ensureClone(gitdir);
      const commitSha = await remote.takeOver(gitdir, repoId, `Lease of ${repoId} taken by ${instanceId} (epoch ${lease.epoch})`);
      if (leases.get(repoId) !== lease || stopped) return;
      lease.state = mono() > lease.deadlineMs ? "unconfirmed" : "serving";
      lease.prepareFailed = false;
      report({ type: "lease_acquired", repoId, epoch: lease.epoch, commitSha, ms: Math.round(mono() - startedMs) });
      await applyServing();
    } catch (error) {
      lease.prepareFailed = true;
      report({ type: "cluster_error", repoId, error: asClusterError(error, repoId) });
    }
  }

  // At most PREPARE_CONCURRENCY preparations run at once (each runs a few git processes).
  let active = 0;
  const waiting: (() => void)[] = [];
  function startPreparing(repoId: string, lease: HeldLease): void {
    const run = async (): Promise<void> => {
      if (active >= PREPARE_CONCURRENCY) await new Promise<void>((resolve) => waiting.push(resolve));
      active += 1;
      try {
        await prepare(repoId, lease);
      } finally {
        active -= 1;
        waiting.shift()?.();
      }
    };
    const task = run().finally(() => preparing.delete(task));
    preparing.add(task);
  }

  async function tick(): Promise<void> {
    const sentMs = mono();
    let changed = false;
    try {
      await table.heartbeat();
      const held = [...leases].map(([deployment, l]) => ({ deployment, epoch: l.epoch }));
      const renewed = new Set((await table.renew(held)).map((l) => `${l.deployment}@${l.epoch}`));
      for (const { deployment, epoch } of held) {
        const lease = leases.get(deployment);
        if (lease === undefined || lease.epoch !== epoch) continue;
        if (renewed.has(`${deployment}@${epoch}`)) {
          lease.deadlineMs = sentMs + ttlMs - renewEveryMs;
          if (lease.state === "unconfirmed") {
            lease.state = "serving";
            changed = true;
            report({ type: "lease_confirmed", repoId: deployment, epoch });
          }
        } else {
          leases.delete(deployment);
          changed = true;
          report({ type: "lease_lost", repoId: deployment, epoch });
        }
      }
      if (outage) logger.info("cluster: PostgreSQL reachable again");
      outage = false;
      for (const [repoId, lease] of leases) if (lease.prepareFailed && lease.state === "preparing") startPreparingOnce(repoId, lease);
      const { hosts, deployments } = await table.counts();
      const share = Math.ceil(deployments / Math.max(hosts, 1));
      // Leases being handed over already count as gone.
      const kept = [...leases.values()].filter((l) => l.state !== "releasing").length;
      if (kept > share) {
        // Hand over the excess: stop firing first, then free the rows for the joining host.
        const excess = [...leases].filter(([, l]) => l.state === "serving" || l.state === "unconfirmed").slice(0, kept - share);
        for (const [, lease] of excess) lease.state = "releasing";
        // Not awaited: renewals must go on while the scheduler winds these down.
        const handOver = (async () => {
          await applyServing();
          for (const [repoId, lease] of excess) {
            if (leases.get(repoId) !== lease || stopped) continue;
            try {
              await table.release({ deployment: repoId, epoch: lease.epoch });
            } catch (error) {
              // Still ours in PostgreSQL: renewed (and served again) until a release succeeds.
              lease.state = "unconfirmed";
              report({ type: "cluster_error", repoId, error: asClusterError(error, repoId) });
              continue;
            }
            leases.delete(repoId);
            report({ type: "lease_released", repoId, epoch: lease.epoch, reason: "rebalance" });
          }
        })().finally(() => preparing.delete(handOver));
        preparing.add(handOver);
      } else if (kept < share && !stopped) {
        for (const { deployment, epoch } of await table.acquire(share - kept)) {
          const lease: HeldLease = { epoch, state: "preparing", deadlineMs: sentMs + ttlMs - renewEveryMs, prepareFailed: false };
          leases.set(deployment, lease);
          startPreparing(deployment, lease);
        }
      }
    } catch (error) {
      const clusterError = asClusterError(error, null);
      lastError = clusterError;
      if (!outage) report({ type: "cluster_error", repoId: null, error: clusterError });
      outage = true;
    }
    // Not awaited: the scheduler follows in the background while renewals go on.
    if (changed) void applyServing();
  }

  const retrying = new Set<string>();
  function startPreparingOnce(repoId: string, lease: HeldLease): void {
    if (retrying.has(repoId)) return;
    retrying.add(repoId);
    lease.prepareFailed = false;
    startPreparing(repoId, lease);
    void Promise.all([...preparing]).finally(() => retrying.delete(repoId));
  }

  /** Stops firing leases that may have expired in PostgreSQL; runs apart from the (maybe hung) tick. */
  function watchDeadlines(): void {
    let changed = false;
    const now = mono();
    for (const [repoId, lease] of leases) {
      if (lease.state === "serving" && now > lease.deadlineMs) {
        lease.state = "unconfirmed";
        changed = true;
        report({ type: "lease_unconfirmed", repoId, epoch: lease.epoch });
      }
    }
    if (changed) void applyServing();
  }

  function armTick(): void {
    if (stopped) return;
    tickHandle = timers.setTimeout(() => {
      ticking = tick().finally(() => {
        ticking = null;
        armTick();
      });
    }, renewEveryMs);
  }
  function armWatch(): void {
    if (stopped) return;
    watchHandle = timers.setTimeout(() => {
      watchDeadlines();
      armWatch();
    }, Math.max(25, Math.round(renewEveryMs / 4)));
  }
  function armFetch(): void {
    if (stopped || fetchEveryMs <= 0) return;
    fetchHandle = timers.setTimeout(() => {
      void (async () => {
        for (const [repoId, lease] of leases) {
          if (lease.state !== "serving" || stopped) continue;
          await remote.fetch(gitdirOf(repoId), repoId).catch(() => undefined);
        }
      })().finally(armFetch);
    }, fetchEveryMs);
  }

  /** After a refused push: bring the clone up to the remote once the writer let go of the ref. */
  function refetchSoon(repoId: string): void {
    let attempts = 0;
    const again = (): void => {
      timers.setTimeout(() => {
        remote.fetch(gitdirOf(repoId), repoId).catch(() => {
          if (++attempts < 20 && !stopped) again();
        });
      }, 20 + attempts * 50);
    };
    again();
  }

  return {
    instanceId,
    identity,

    async start() {
      await table.migrate();
      // This process holds the data dir's host lock: a ref lock left here was left by a killed
      // writer of this data dir, and git (fetch) would refuse to move the ref while it exists.
      const names = await readdir(opts.deploymentsDir).catch(() => [] as string[]);
      for (const name of names) {
        if (!name.endsWith(".git")) continue;
        for (const lock of ["refs/heads/main.lock", "packed-refs.lock", "HEAD.lock"]) await rm(join(opts.deploymentsDir, name, lock), { force: true });
        const consumers = await readdir(join(opts.deploymentsDir, name, "refs/consumers")).catch(() => [] as string[]);
        for (const c of consumers) if (c.endsWith(".lock")) await rm(join(opts.deploymentsDir, name, "refs/consumers", c), { force: true });
      }
      await tick();
      if (outage) {
        throw new WorkflowHostError("cluster_unavailable", `cannot start in cluster mode with PostgreSQL at ${redact(opts.url)}: ${lastError?.message ?? "unreachable"}`, { url: redact(opts.url) }, lastError === null ? {} : { cause: lastError });
      }
      // Renewals go on while the first leases are prepared (that may take longer than a TTL).
      armTick();
      armWatch();
      armFetch();
      while (preparing.size > 0) await Promise.allSettled([...preparing]);
    },

    serving() {
      return [...leases].filter(([, l]) => l.state === "serving").map(([id]) => id);
    },

    async beforeRefMove(move) {
      const repoId = move.repoId.id;
      const lease = leases.get(repoId);
      // Past the renewal deadline the lease may already be someone else's in PostgreSQL while
      // their takeover commit is not on the remote yet: nothing leaves this host then. The
      // remote's compare-and-swap fences what was already on its way.
      if (lease !== undefined && lease.state === "serving" && mono() > lease.deadlineMs) lease.state = "unconfirmed";
      if (lease === undefined || lease.state === "preparing" || lease.state === "unconfirmed") {
        throw new WorkflowHostError("lease_not_held", `deployment ${repoId} is not served by ${instanceId}: another host holds its lease (or it is being handed over); nothing was written`, {
          repoId,
          instanceId,
        });
      }
      const outcome = await remote.pushCas(gitdirOf(repoId), repoId, move.ref, move.from, move.to);
      if (outcome.accepted) {
        pushes += 1;
        return;
      }
      pushesRejected += 1;
      report({ type: "push_rejected", repoId, ref: move.ref, from: move.from, to: move.to, reason: outcome.reason });
      refetchSoon(repoId);
      throw new WorkflowHostError("remote_rejected", `the remote of ${repoId} refused ${move.ref} ${move.from ?? "(absent)"} → ${move.to}: it moved (${outcome.reason}); re-fetched, nothing was written`, {
        repoId,
        ref: move.ref,
        from: move.from,
        to: move.to,
      });
    },

    async createDeployment(repoId) {
      await table.migrate();
      const made = await remote.ensureRemote(gitdirOf(repoId), repoId);
      await table.register([repoId]);
      return made;
    },

    stats() {
      return { instanceId, serving: [...leases.values()].filter((l) => l.state === "serving").length, leases: leases.size, pushes, pushesRejected };
    },

    async stop() {
      if (stopped) return;
      stopped = true;
      for (const handle of [tickHandle, watchHandle, fetchHandle]) timers.clearTimeout(handle);
      await ticking;
      await Promise.allSettled([...preparing]);
      const held = [...leases];
      for (const [, lease] of held) if (lease.state !== "preparing") lease.state = "releasing";
      await applyServing();
      leases.clear();
      try {
        await table.leave();
        for (const [repoId, lease] of held) report({ type: "lease_released", repoId, epoch: lease.epoch, reason: "stop" });
      } catch (error) {
        report({ type: "cluster_error", repoId: null, error: asClusterError(error, null) });
      }
      await table.close();
    },
  };
}

function asClusterError(error: unknown, repoId: string | null): WorkflowHostError {
  if (error instanceof WorkflowHostError) return error;
  return new WorkflowHostError("remote_unavailable", `cluster operation failed${repoId === null ? "" : ` for ${repoId}`}: ${String(error)}`, { repoId }, { cause: error });
}

/** The url without its password. */
function redact(url: string): string {
  return url.replace(/\/\/([^:/@]+):[^@]*@/, "//$1:***@");
}
