/**
 * The options, reports and handle of cluster mode (cluster-coordinator.ts; docs/cluster.md).
 */
import type { WorkflowHostError } from "../../src/errors.js";
import type { Logger } from "../../src/logger.js";
import type { RefMove } from "../../src/substrate/types.js";
import type { Clock, MonotonicNow, Timers } from "../../src/time/clock.js";
import type { GitEnv } from "./git-remote.js";

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
