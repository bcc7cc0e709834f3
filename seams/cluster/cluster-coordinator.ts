/**
 * Cluster mode: which deployments this host serves, decided by leases in PostgreSQL, and the
 * fence on every commit it makes: the commit is pushed to the deployment's git remote with a
 * compare-and-swap before the local ref moves (docs/cluster.md).
 *
 * Each lease held goes preparing → serving ⇄ unconfirmed → releasing → gone (lease-holdings.ts).
 *
 * Every tick (`renewEveryMs`): register this instance, renew the leases held, then compare
 * with the share ceil(deployments / live hosts): release the excess (after the scheduler has
 * stopped firing them) or acquire what is missing from free and expired leases. A tick also
 * runs as soon as another instance's lease expires (its holder died: taken over without waiting
 * for the next renewal) and as soon as another instance announces that it freed leases.
 */
import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import { join } from "node:path";
import { WorkflowHostError } from "../../src/errors.js";
import { silentLogger } from "../../src/logger.js";
import { systemMonotonicNow, type TimerHandle } from "../../src/time/clock.js";
import type { ClusterCoordinator, ClusterCoordinatorOptions, ClusterEvent } from "./cluster-types.js";
import { takeCloneDir } from "./clone-dir.js";
import { createGitRemote, type GitRemote } from "./git-remote.js";
import { createLeaseHoldings, type HeldLease } from "./lease-holdings.js";
import { createLeaseTable, type LeaseTable } from "./lease-table.js";

export type { ClusterCoordinator, ClusterCoordinatorOptions, ClusterEvent, ClusterOptions, ClusterStats } from "./cluster-types.js";

export const DEFAULT_LEASE_TTL_MS = 10_000;
/** Preparations at once: a dead host's whole share is taken over together rather than in rounds. */
const PREPARE_CONCURRENCY = 8;
/** How long after another instance's lease expires (by the server's clock) this one looks again (ms). */
const EXPIRY_MARGIN_MS = 20;

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
  const table: LeaseTable = createLeaseTable({
    url: opts.url,
    instanceId,
    ttlMs,
    queryTimeoutMs: Math.max(Math.round(ttlMs / 2), 500),
    onReleased: () => tickSoon(0),
  });
  const remote: GitRemote = createGitRemote({ remoteBase: opts.remoteBase, identity, clock: opts.clock, timers, ...(opts.gitEnv === undefined ? {} : { env: opts.gitEnv }) });
  const gitdirOf = (repoId: string): string => join(opts.deploymentsDir, `${repoId}.git`);
  const deadlineAfter = (sentMs: number): number => sentMs + ttlMs - renewEveryMs;

  const leases = createLeaseHoldings();
  let started = false;
  let stopped = false;
  let tickHandle: TimerHandle = null;
  let tickDueMs = Number.POSITIVE_INFINITY;
  let watchHandle: TimerHandle = null;
  let fetchHandle: TimerHandle = null;
  let ticking: Promise<void> | null = null;
  let tickAgain = false;
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
      // The "lease taken" commit is the fencing token in the log. A preparation that outlived its
      // lease (a slow fetch on a loaded host) would put it after the next holder's. Within its
      // renewal deadline the lease is still this host's in PostgreSQL; past it (renewals run late
      // on a loaded host) it is renewed right before the push. Either way no later epoch existed
      // then, and the remote's compare-and-swap orders this push against any takeover after it.
      const fence = async (): Promise<void> => {
        const lapsed = (): WorkflowHostError =>
          new WorkflowHostError("lease_not_held", `deployment ${repoId}: the lease of epoch ${lease.epoch} was lost while it was being taken over; its takeover commit was not pushed`, { repoId, instanceId });
        if (leases.get(repoId) !== lease || stopped) throw lapsed();
        if (mono() <= lease.deadlineMs) return;
        if (!(await renewOne(repoId, lease)) || leases.get(repoId) !== lease || stopped) throw lapsed();
      };
      const commitSha = await remote.takeOver(gitdir, repoId, `Lease of ${repoId} taken by ${instanceId} (epoch ${lease.epoch})`, fence);
      if (leases.get(repoId) !== lease || stopped) return;
      // A preparation that outlasted the renewal deadline (no renewal since: PostgreSQL slow or
      // unreachable) leaves the lease unconfirmed, and says so as a lapse while serving would.
      const late = mono() > lease.deadlineMs;
      lease.state = late ? "unconfirmed" : "serving";
      lease.prepareFailed = false;
      report({ type: "lease_acquired", repoId, epoch: lease.epoch, commitSha, ms: Math.round(mono() - startedMs) });
      if (late) report({ type: "lease_unconfirmed", repoId, epoch: lease.epoch });
      await applyServing();
    } catch (error) {
      // Lost meanwhile (already reported at the renewal that found it): nothing to retry.
      if (leases.get(repoId) !== lease || stopped) return;
      lease.prepareFailed = true;
      report({ type: "cluster_error", repoId, error: asClusterError(error, repoId) });
    }
  }

  let active = 0;
  const waiting: (() => void)[] = [];
  const track = (task: Promise<void>): void => {
    const tracked = task.finally(() => preparing.delete(tracked));
    preparing.add(tracked);
  };
  function startPreparing(repoId: string, lease: HeldLease): void {
    track(
      (async () => {
        if (active >= PREPARE_CONCURRENCY) await new Promise<void>((resolve) => waiting.push(resolve));
        active += 1;
        try {
          await prepare(repoId, lease);
        } finally {
          active -= 1;
          waiting.shift()?.();
        }
      })(),
    );
  }

  const retrying = new Set<string>();
  function startPreparingOnce(repoId: string, lease: HeldLease): void {
    if (retrying.has(repoId)) return;
    retrying.add(repoId);
    lease.prepareFailed = false;
    startPreparing(repoId, lease);
    void Promise.all([...preparing]).finally(() => retrying.delete(repoId));
  }

  /** Stops firing the excess, then frees the rows for the joining host. Not awaited: renewals go on meanwhile. */
  function handOver(excess: [string, HeldLease][]): void {
    track(
      (async () => {
        await applyServing();
        for (const [repoId, lease] of excess) {
          if (leases.get(repoId) !== lease || stopped) continue;
          try {
            await table.release({ deployment: repoId, epoch: lease.epoch });
          } catch (error) {
            // Still ours in PostgreSQL: renewed (and served again) until a release succeeds.
            lease.state = "unconfirmed";
            report({ type: "cluster_error", repoId, error: asClusterError(error, repoId) });
            report({ type: "lease_unconfirmed", repoId, epoch: lease.epoch });
            continue;
          }
          leases.drop(repoId, lease);
          report({ type: "lease_released", repoId, epoch: lease.epoch, reason: "rebalance" });
        }
      })(),
    );
  }

  /** One round; returns when the next should run (ms): sooner than `renewEveryMs` when another instance's lease expires first. */
  async function tick(): Promise<number> {
    const sentMs = mono();
    let changed = false;
    let nextMs = renewEveryMs;
    try {
      await table.heartbeat();
      const held = leases.held();
      const { confirmed, lost } = leases.renewed(held, await table.renew(held), deadlineAfter(sentMs));
      for (const l of confirmed) report({ type: "lease_confirmed", repoId: l.deployment, epoch: l.epoch });
      for (const l of lost) report({ type: "lease_lost", repoId: l.deployment, epoch: l.epoch });
      changed = confirmed.length > 0 || lost.length > 0;
      if (outage) logger.info("cluster: PostgreSQL reachable again");
      outage = false;
      for (const [repoId, lease] of leases.entries()) if (lease.prepareFailed && lease.state === "preparing") startPreparingOnce(repoId, lease);
      const { hosts, deployments, nextExpiryMs } = await table.counts();
      if (nextExpiryMs !== null) nextMs = Math.min(nextMs, Math.max(0, nextExpiryMs - (mono() - sentMs)) + EXPIRY_MARGIN_MS);
      const share = Math.ceil(deployments / Math.max(hosts, 1));
      // Leases being handed over already count as gone.
      const kept = leases.kept();
      if (kept > share) handOver(leases.handOver(kept - share));
      else if (kept < share && !stopped) {
        for (const { deployment, epoch } of await table.acquire(share - kept)) startPreparing(deployment, leases.add(deployment, epoch, deadlineAfter(sentMs)));
      }
    } catch (error) {
      const clusterError = asClusterError(error, null);
      lastError = clusterError;
      if (!outage) report({ type: "cluster_error", repoId: null, error: clusterError });
      outage = true;
    }
    // Not awaited: the scheduler follows in the background while renewals go on.
    if (changed) void applyServing();
    return nextMs;
  }

  /** Runs a tick within `delayMs` (at once after a running one when asked while it runs). */
  function tickSoon(delayMs: number): void {
    // Not before start(): a coordinator used only for createDeployment never serves.
    if (stopped || !started) return;
    if (ticking !== null) {
      if (delayMs === 0) tickAgain = true;
      return;
    }
    if (mono() + delayMs >= tickDueMs) return;
    timers.clearTimeout(tickHandle);
    tickDueMs = mono() + delayMs;
    tickHandle = timers.setTimeout(() => {
      tickHandle = null;
      tickDueMs = Number.POSITIVE_INFINITY;
      let nextMs = renewEveryMs;
      ticking = tick()
        .then((ms) => {
          nextMs = ms;
        })
        .finally(() => {
          ticking = null;
          tickSoon(tickAgain ? 0 : nextMs);
          tickAgain = false;
        });
    }, delayMs);
  }

  /** Stops firing leases that may have expired in PostgreSQL; runs apart from the (maybe hung) tick. */
  function watchDeadlines(nowMs: number = mono()): void {
    const turned = leases.overdue(nowMs);
    for (const l of turned) report({ type: "lease_unconfirmed", repoId: l.deployment, epoch: l.epoch });
    if (turned.length > 0) void applyServing();
  }

  /**
   * After the remote refused a push: the lease is renewed before anything else is pushed under
   * it, since another host may hold it now (its takeover commit moved the remote).
   * @throws lease_not_held when it was lost (it stops being served) or PostgreSQL cannot say (it is unconfirmed until a renewal succeeds)
   */
  /**
   * Renews one lease in PostgreSQL now. @returns false when it was lost (dropped and reported
   * `lease_lost`) @throws what the lease table throws (PostgreSQL cannot say)
   */
  async function renewOne(repoId: string, lease: HeldLease): Promise<boolean> {
    const sentMs = mono();
    const sent = [{ deployment: repoId, epoch: lease.epoch }];
    const { lost } = leases.renewed(sent, await table.renew(sent), deadlineAfter(sentMs));
    if (lost.length > 0) report({ type: "lease_lost", repoId, epoch: lease.epoch });
    return lost.length === 0;
  }

  async function recheck(repoId: string, lease: HeldLease): Promise<void> {
    const notHeld = (why: string, cause?: unknown): WorkflowHostError =>
      new WorkflowHostError("lease_not_held", `deployment ${repoId} is not served by ${instanceId}: ${why}; nothing was written`, { repoId, instanceId }, cause === undefined ? {} : { cause });
    let held: boolean;
    try {
      held = await renewOne(repoId, lease);
    } catch (error) {
      if (leases.get(repoId) === lease && lease.state === "serving") {
        lease.state = "unconfirmed";
        report({ type: "lease_unconfirmed", repoId, epoch: lease.epoch });
        void applyServing();
      }
      throw notHeld("its remote moved and PostgreSQL cannot confirm its lease", error);
    }
    if (held) return;
    void applyServing();
    throw notHeld("another host took its lease over");
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
        for (const [repoId, lease] of leases.entries()) {
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
      // This process holds the data dir's host lock: the previous process on it is gone, and
      // the leases it held are freed now rather than when they expire. Registered first, so
      // the others, told of the freed leases, count this host in their share and leave them to it.
      const { previousInstance } = await takeCloneDir(opts.deploymentsDir, instanceId);
      if (previousInstance !== null) await table.heartbeat().then(() => table.evict(previousInstance)).catch(() => undefined);
      started = true;
      const first = tick();
      ticking = first.then(() => undefined);
      const firstNextMs = await first;
      ticking = null;
      if (outage) {
        throw new WorkflowHostError("cluster_unavailable", `cannot start in cluster mode with PostgreSQL at ${redact(opts.url)}: ${lastError?.message ?? "unreachable"}`, { url: redact(opts.url) }, lastError === null ? {} : { cause: lastError });
      }
      // Renewals go on while the first leases are prepared (that may take longer than a TTL).
      tickSoon(tickAgain ? 0 : firstNextMs);
      tickAgain = false;
      armWatch();
      armFetch();
      while (preparing.size > 0) await Promise.allSettled([...preparing]);
    },

    serving() {
      return leases.serving();
    },

    async beforeRefMove(move) {
      const repoId = move.repoId.id;
      // A lapse found by this write is reported (and the scheduler told) like one the watch finds.
      const nowMs = mono();
      watchDeadlines(nowMs);
      const lease = leases.writable(repoId, instanceId, nowMs);
      if (lease.recheck) await recheck(repoId, lease);
      const outcome = await remote.pushCas(gitdirOf(repoId), repoId, move.ref, move.from, move.to);
      if (outcome.accepted) {
        pushes += 1;
        return;
      }
      pushesRejected += 1;
      lease.recheck = true;
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
      return { instanceId, serving: leases.serving().length, leases: leases.held().length, pushes, pushesRejected };
    },

    async stop() {
      if (stopped) return;
      stopped = true;
      for (const handle of [tickHandle, watchHandle, fetchHandle]) timers.clearTimeout(handle);
      await ticking;
      await Promise.allSettled([...preparing]);
      const held = leases.entries();
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
