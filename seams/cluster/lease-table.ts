/**
 * Deployment leases in PostgreSQL: one row per deployment with its owner, an epoch and an
 * expiry, one row per live host instance, and a history of every acquisition.
 *
 * Every expiry is computed and compared by the server (`now()`), so hosts' clocks never meet. A
 * lease is held while `owner` is the instance and `expires_at > now()`; it is renewed by the
 * holder only while the owner and the epoch it acquired are unchanged; anyone may take one
 * that is free or expired, which bumps the epoch. A host whose connection dies simply stops
 * renewing: its leases expire after the TTL, whatever it believes.
 */
import pg from "pg";
import { WorkflowHostError } from "../../src/errors.js";

export interface Lease {
  readonly deployment: string;
  readonly epoch: number;
}

export interface LeaseCounts {
  /** Host instances whose registration has not expired (this one included). */
  readonly hosts: number;
  /** Deployments registered. */
  readonly deployments: number;
  /** Ms until the first lease held by another instance expires (null: none held): when it may be taken. */
  readonly nextExpiryMs: number | null;
}

export interface LeaseTable {
  /** Creates the tables (idempotent, serialised across hosts by an advisory lock). */
  migrate(): Promise<void>;
  /** Registers (or refreshes) this instance for `ttlMs`. */
  heartbeat(): Promise<void>;
  /** Renews the leases still owned by this instance at the given epochs; returns those renewed. */
  renew(held: readonly Lease[]): Promise<Lease[]>;
  counts(): Promise<LeaseCounts>;
  /** Takes up to `limit` free or expired leases (epoch + 1 each) and records them in the history. */
  acquire(limit: number): Promise<Lease[]>;
  /** Gives a lease back (only if still ours at that epoch) and announces it: another host may take it at once. */
  release(lease: Lease): Promise<void>;
  /** Adds deployments to the table (existing ones are kept). */
  register(deployments: readonly string[]): Promise<void>;
  /** Removes this instance's registration, then frees (and announces) every lease it owns. */
  leave(): Promise<void>;
  /** As `leave()` for another instance known to be gone (the previous process on this data dir). */
  evict(instanceId: string): Promise<void>;
  close(): Promise<void>;
}

export interface LeaseTableOptions {
  /** postgres://… connection string. */
  readonly url: string;
  /** This process's unique owner name. */
  readonly instanceId: string;
  /** Lease and host registration lifetime (ms). */
  readonly ttlMs: number;
  /** Longest a connect or query may take before it fails (ms). */
  readonly queryTimeoutMs: number;
  /** Called when another instance frees leases (a hand-over, a host stopping): they may be taken at once. */
  readonly onReleased?: () => void;
}

/** The channel on which freed leases are announced (NOTIFY). */
const RELEASED_CHANNEL = "workflow_host_lease_released";

const SCHEMA = `
CREATE TABLE IF NOT EXISTS workflow_host_hosts (
  instance_id text PRIMARY KEY,
  started_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL
);
CREATE TABLE IF NOT EXISTS workflow_host_leases (
  deployment text PRIMARY KEY,
  owner text,
  epoch bigint NOT NULL DEFAULT 0,
  acquired_at timestamptz,
  expires_at timestamptz
);
CREATE TABLE IF NOT EXISTS workflow_host_lease_history (
  deployment text NOT NULL,
  epoch bigint NOT NULL,
  owner text NOT NULL,
  acquired_at timestamptz NOT NULL,
  PRIMARY KEY (deployment, epoch)
);`;

/** Arbitrary key of the advisory lock that serialises migrations. */
const MIGRATION_LOCK = 7_246_153_018;

/**
 * One connection, opened on first use and dropped on any error (the next call reconnects), so
 * a cut connection shows as failed calls rather than a hang.
 * @throws cluster_unavailable from every method when the server cannot be reached or refuses
 */
export function createLeaseTable(opts: LeaseTableOptions): LeaseTable {
  let client: pg.Client | null = null;
  let connecting: Promise<pg.Client> | null = null;
  const ttl = opts.ttlMs;

  const connect = (): Promise<pg.Client> => {
    if (client !== null) return Promise.resolve(client);
    connecting ??= (async () => {
      const next = new pg.Client({
        connectionString: opts.url,
        connectionTimeoutMillis: opts.queryTimeoutMs,
        query_timeout: opts.queryTimeoutMs,
        keepAlive: true,
        application_name: `workflow-host ${opts.instanceId}`.slice(0, 63),
      });
      next.on("error", () => {
        if (client === next) client = null;
      });
      next.on("notification", (message) => {
        if (message.channel === RELEASED_CHANNEL && message.payload !== opts.instanceId) opts.onReleased?.();
      });
      try {
        await next.connect();
        if (opts.onReleased !== undefined) await next.query(`LISTEN ${RELEASED_CHANNEL}`);
      } catch (error) {
        void next.end().catch(() => undefined);
        throw error;
      }
      client = next;
      return next;
    })().finally(() => {
      connecting = null;
    });
    return connecting;
  };

  const query = async <R extends pg.QueryResultRow>(text: string, values: unknown[] = []): Promise<R[]> => {
    let c: pg.Client;
    try {
      c = await connect();
    } catch (error) {
      throw new WorkflowHostError("cluster_unavailable", `cannot reach PostgreSQL: ${String(error)}`, {}, { cause: error });
    }
    try {
      return (await c.query<R>(text, values)).rows;
    } catch (error) {
      // Whatever failed, the next call starts from a fresh connection.
      if (client === c) client = null;
      void c.end().catch(() => undefined);
      throw new WorkflowHostError("cluster_unavailable", `PostgreSQL query failed: ${String(error)}`, {}, { cause: error });
    }
  };
  /** Unregisters `instanceId` (so the others' shares grow at once), then frees and announces its leases. */
  const evict = async (instanceId: string): Promise<void> => {
    await query(`DELETE FROM workflow_host_hosts WHERE instance_id = $1`, [instanceId]);
    await query(
      `WITH freed AS (UPDATE workflow_host_leases SET owner = NULL, expires_at = NULL WHERE owner = $1 RETURNING deployment)
       SELECT pg_notify('${RELEASED_CHANNEL}', $1) FROM (SELECT 1 FROM freed LIMIT 1) AS any_freed`,
      [instanceId],
    );
  };
  const rowsToLeases = (rows: { deployment: string; epoch: string | number }[]): Lease[] => rows.map((r) => ({ deployment: r.deployment, epoch: Number(r.epoch) }));

  return {
    async migrate() {
      await query(`BEGIN; SELECT pg_advisory_xact_lock(${MIGRATION_LOCK}); ${SCHEMA} COMMIT;`);
    },

    async heartbeat() {
      await query(
        `INSERT INTO workflow_host_hosts (instance_id, expires_at) VALUES ($1, now() + $2 * interval '1 millisecond')
         ON CONFLICT (instance_id) DO UPDATE SET expires_at = EXCLUDED.expires_at`,
        [opts.instanceId, ttl],
      );
    },

    async renew(held) {
      if (held.length === 0) return [];
      const rows = await query<{ deployment: string; epoch: string }>(
        `UPDATE workflow_host_leases l SET expires_at = now() + $2 * interval '1 millisecond'
         FROM unnest($3::text[], $4::bigint[]) AS h(deployment, epoch)
         WHERE l.deployment = h.deployment AND l.epoch = h.epoch AND l.owner = $1
         RETURNING l.deployment, l.epoch`,
        [opts.instanceId, ttl, held.map((l) => l.deployment), held.map((l) => l.epoch)],
      );
      return rowsToLeases(rows);
    },

    async counts() {
      const rows = await query<{ hosts: string; deployments: string; next_expiry_ms: number | null }>(
        `SELECT (SELECT count(*) FROM workflow_host_hosts WHERE expires_at > now()) AS hosts,
                (SELECT count(*) FROM workflow_host_leases) AS deployments,
                (SELECT ceil(extract(epoch FROM min(expires_at) - now()) * 1000)::float8 FROM workflow_host_leases
                  WHERE owner IS NOT NULL AND owner <> $1 AND expires_at > now()) AS next_expiry_ms`,
        [opts.instanceId],
      );
      const next = rows[0]?.next_expiry_ms;
      return { hosts: Number(rows[0]?.hosts ?? 0), deployments: Number(rows[0]?.deployments ?? 0), nextExpiryMs: next === null || next === undefined ? null : Number(next) };
    },

    async acquire(limit) {
      if (limit <= 0) return [];
      const rows = await query<{ deployment: string; epoch: string }>(
        `WITH picked AS (
           SELECT deployment FROM workflow_host_leases
           WHERE owner IS NULL OR expires_at IS NULL OR expires_at <= now()
           ORDER BY random() LIMIT $3 FOR UPDATE SKIP LOCKED
         ), taken AS (
           UPDATE workflow_host_leases l
           SET owner = $1, epoch = l.epoch + 1, acquired_at = now(), expires_at = now() + $2 * interval '1 millisecond'
           FROM picked WHERE l.deployment = picked.deployment
           RETURNING l.deployment, l.epoch, l.acquired_at
         ), logged AS (
           INSERT INTO workflow_host_lease_history (deployment, epoch, owner, acquired_at)
           SELECT deployment, epoch, $1, acquired_at FROM taken
         )
         SELECT deployment, epoch FROM taken`,
        [opts.instanceId, ttl, limit],
      );
      return rowsToLeases(rows);
    },

    async release(lease) {
      await query(
        `WITH freed AS (UPDATE workflow_host_leases SET owner = NULL, expires_at = NULL WHERE deployment = $1 AND epoch = $2 AND owner = $3 RETURNING deployment)
         SELECT pg_notify('${RELEASED_CHANNEL}', $3) FROM freed`,
        [lease.deployment, lease.epoch, opts.instanceId],
      );
    },

    async register(deployments) {
      if (deployments.length === 0) return;
      // A deployment registered again (its row deleted by hand) continues its epochs: they
      // only ever grow, so a commit of an old epoch can never pass for a new one.
      await query(
        `INSERT INTO workflow_host_leases (deployment, epoch)
         SELECT d, COALESCE((SELECT max(h.epoch) FROM workflow_host_lease_history h WHERE h.deployment = d), 0) FROM unnest($1::text[]) AS d
         ON CONFLICT (deployment) DO NOTHING`,
        [deployments],
      );
    },

    leave: () => evict(opts.instanceId),
    evict,

    async close() {
      const c = client;
      client = null;
      await c?.end().catch(() => undefined);
    },
  };
}
