/**
 * The human line `serve --cluster` prints for a cluster report: the instant, the report's name
 * (padded), then what it is about. Every field shown is filled: a report about the whole cluster
 * (a `cluster-error` of the lease table, no deployment) says so instead of leaving a blank.
 */
import type { ClusterEvent } from "../../seams/cluster/cluster-types.js";
import { shortSha } from "./format.js";

/** One line for `event` at `ts` (RFC 3339), without a trailing newline. */
export function clusterEventLine(ts: string, event: ClusterEvent): string {
  const name = event.type.replaceAll("_", "-").padEnd(13);
  return `${ts} ${name} ${clusterEventDetail(event)}`;
}

function clusterEventDetail(event: ClusterEvent): string {
  switch (event.type) {
    case "lease_acquired":
      return `${event.repoId} epoch ${event.epoch} (tip ${shortSha(event.commitSha)}, ${event.ms} ms)`;
    case "lease_released":
      return `${event.repoId} epoch ${event.epoch} (${event.reason})`;
    case "lease_lost":
    case "lease_unconfirmed":
    case "lease_confirmed":
      return `${event.repoId} epoch ${event.epoch}`;
    case "push_rejected":
      return `${event.repoId} ${event.ref} ${shortSha(event.from)} -> ${shortSha(event.to)}: ${event.reason}`;
    case "cluster_error":
      return `${event.repoId ?? "(all deployments)"}: ${event.error.message}`;
  }
}
