/**
 * The leases one cluster instance holds and the serving state of each: what the scheduler may
 * fire and what may be pushed. No I/O: the coordinator feeds it renewals, deadlines and push
 * outcomes, and reports the transitions it returns.
 *
 * Per deployment lease, states and transitions:
 *   preparing  — acquired in PostgreSQL; the clone fetches the remote and appends the "lease
 *                taken" commit (the fencing token in the log). Writes are refused (lease_not_held).
 *   serving    — listed to the scheduler and the dispatcher; commits are pushed, then land.
 *   unconfirmed— the lease was not renewed in time (PostgreSQL unreachable, a slow host), or a
 *                push was refused by the remote and the lease could not be re-confirmed: the
 *                scheduler stops firing it, and writes are refused here (lease_not_held). A
 *                later successful renewal (same owner, same epoch) returns it to serving.
 *   releasing  — being handed over: no longer listed (the scheduler stops firing it), while the
 *                commit in flight still goes to the remote; then the row is freed.
 *   (gone)     — released (rebalance, stop), or found lost at a renewal: writes are refused.
 * A serving lease whose push the remote refused is `recheck`: its next write first renews it in
 * PostgreSQL, since the remote moving may mean another host holds it now.
 */
import { WorkflowHostError } from "../../src/errors.js";
import type { Lease } from "./lease-table.js";

export type LeaseState = "preparing" | "serving" | "unconfirmed" | "releasing";

export interface HeldLease {
  readonly epoch: number;
  state: LeaseState;
  /** Monotonic ms after which the lease may have expired in PostgreSQL (minus a margin). */
  deadlineMs: number;
  /** A preparation failed (remote down): retried at the next tick. */
  prepareFailed: boolean;
  /** The remote refused a push: confirm the lease in PostgreSQL before the next one. */
  recheck: boolean;
}

/** What a renewal round changed. */
export interface RenewalOutcome {
  /** Unconfirmed leases renewed: serving again. */
  readonly confirmed: Lease[];
  /** Leases PostgreSQL no longer gives this instance: dropped. */
  readonly lost: Lease[];
}

export interface LeaseHoldings {
  get(repoId: string): HeldLease | undefined;
  entries(): [string, HeldLease][];
  /** Records a lease just acquired, in `preparing`. */
  add(repoId: string, epoch: number, deadlineMs: number): HeldLease;
  /** Drops a lease if it is still this one (a newer acquisition of the same deployment stays). */
  drop(repoId: string, lease: HeldLease): boolean;
  clear(): void;
  /** The leases to renew, at the epochs acquired. */
  held(): Lease[];
  /** Deployments the scheduler and dispatcher serve. */
  serving(): string[];
  /** Leases that count toward this instance's share (all but those being handed over). */
  kept(): number;
  /**
   * Applies a renewal sent at `sentMs` (monotonic): each renewed lease gets `deadlineMs`, is
   * confirmed again if it was unconfirmed or rechecked; each lease sent but not renewed is lost.
   */
  renewed(sent: readonly Lease[], renewed: readonly Lease[], deadlineMs: number): RenewalOutcome;
  /** Serving leases past their deadline at `nowMs`: now unconfirmed. */
  overdue(nowMs: number): Lease[];
  /**
   * The lease a write to `repoId` may be pushed under at `nowMs`.
   * @throws lease_not_held when it is not served here (preparing, unconfirmed, gone) or its
   *   deadline passed. No state changes here: call `overdue(nowMs)` first to turn (and report)
   *   a lapsed lease.
   */
  writable(repoId: string, instanceId: string, nowMs: number): HeldLease;
  /** Marks up to `count` serving or unconfirmed leases `releasing` and returns them (a share shrank). */
  handOver(count: number): [string, HeldLease][];
}

export function createLeaseHoldings(): LeaseHoldings {
  const leases = new Map<string, HeldLease>();
  const key = (l: Lease): string => `${l.deployment}@${l.epoch}`;

  return {
    get: (repoId) => leases.get(repoId),
    entries: () => [...leases],

    add(repoId, epoch, deadlineMs) {
      const lease: HeldLease = { epoch, state: "preparing", deadlineMs, prepareFailed: false, recheck: false };
      leases.set(repoId, lease);
      return lease;
    },

    drop(repoId, lease) {
      if (leases.get(repoId) !== lease) return false;
      leases.delete(repoId);
      return true;
    },

    clear: () => leases.clear(),
    held: () => [...leases].map(([deployment, l]) => ({ deployment, epoch: l.epoch })),
    serving: () => [...leases].filter(([, l]) => l.state === "serving").map(([id]) => id),
    kept: () => [...leases.values()].filter((l) => l.state !== "releasing").length,

    renewed(sent, renewed, deadlineMs) {
      const ok = new Set(renewed.map(key));
      const confirmed: Lease[] = [];
      const lost: Lease[] = [];
      for (const l of sent) {
        const lease = leases.get(l.deployment);
        if (lease === undefined || lease.epoch !== l.epoch) continue;
        if (!ok.has(key(l))) {
          leases.delete(l.deployment);
          lost.push(l);
          continue;
        }
        lease.deadlineMs = deadlineMs;
        lease.recheck = false;
        if (lease.state === "unconfirmed") {
          lease.state = "serving";
          confirmed.push(l);
        }
      }
      return { confirmed, lost };
    },

    overdue(nowMs) {
      const turned: Lease[] = [];
      for (const [deployment, lease] of leases) {
        if (lease.state === "serving" && nowMs > lease.deadlineMs) {
          lease.state = "unconfirmed";
          turned.push({ deployment, epoch: lease.epoch });
        }
      }
      return turned;
    },

    writable(repoId, instanceId, nowMs) {
      const lease = leases.get(repoId);
      // Past the renewal deadline the lease may already be someone else's in PostgreSQL while
      // their takeover commit is not on the remote yet: nothing leaves this host then. The
      // remote's compare-and-swap fences what was already on its way.
      // The state is left to `overdue`, whose caller reports the lapse: a write that finds it
      // first must not turn it unseen (the scheduler would go on firing a lease nobody said lapsed).
      if (lease === undefined || lease.state === "preparing" || lease.state === "unconfirmed" || nowMs > lease.deadlineMs) {
        throw new WorkflowHostError("lease_not_held", `deployment ${repoId} is not served by ${instanceId}: another host holds its lease (or it is being handed over); nothing was written`, {
          repoId,
          instanceId,
        });
      }
      return lease;
    },

    handOver(count) {
      const excess = [...leases].filter(([, l]) => l.state === "serving" || l.state === "unconfirmed").slice(0, Math.max(0, count));
      for (const [, lease] of excess) lease.state = "releasing";
      return excess;
    },
  };
}
