/**
 * `serve --cluster` report lines: every field shown is filled. A cluster-error about the whole
 * cluster (no deployment: the lease table unreachable) printed an empty deployment field
 * ("cluster-error  : …").
 */
import { describe, expect, it } from "vitest";
import { clusterEventLine } from "../../../src/cli/cluster-event-line.js";
import { WorkflowHostError } from "../../../src/errors.js";
import type { ClusterEvent } from "../../../seams/cluster/cluster-types.js";

const TS = "2026-05-01T10:00:00.000Z";
const SHA = "0123456789abcdef0123456789abcdef01234567";

describe("cluster report lines", () => {
  const events: ClusterEvent[] = [
    { type: "lease_acquired", repoId: "payments", epoch: 3, commitSha: SHA, ms: 42 },
    { type: "lease_released", repoId: "payments", epoch: 3, reason: "rebalance" },
    { type: "lease_lost", repoId: "payments", epoch: 3 },
    { type: "lease_unconfirmed", repoId: "payments", epoch: 3 },
    { type: "lease_confirmed", repoId: "payments", epoch: 3 },
    { type: "push_rejected", repoId: "payments", ref: "refs/heads/main", from: SHA, to: SHA, reason: "stale info" },
    { type: "cluster_error", repoId: "payments", error: new WorkflowHostError("remote_unavailable", "push failed") },
    { type: "cluster_error", repoId: null, error: new WorkflowHostError("cluster_unavailable", "PostgreSQL refused the connection") },
  ];

  it.each(events.map((e) => [e.type, e] as const))("%s: no blank field", (_type, event) => {
    const line = clusterEventLine(TS, event);
    const afterName = line.slice(TS.length + 1).replace(/^\S+\s+/, "");
    expect(afterName).not.toMatch(/^[:\s]/);
    expect(line).not.toMatch(/\S {2,}:|\s:\s/);
  });

  it("a cluster-wide error says it concerns every deployment, then the error's code and message", () => {
    const line = clusterEventLine(TS, { type: "cluster_error", repoId: null, error: new WorkflowHostError("cluster_unavailable", "PostgreSQL refused the connection") });
    expect(line).toBe(`${TS} cluster-error (all deployments): cluster_unavailable: PostgreSQL refused the connection`);
  });

  it("a refused push names the ref, the tips and why", () => {
    const line = clusterEventLine(TS, { type: "push_rejected", repoId: "payments", ref: "refs/heads/main", from: SHA, to: SHA, reason: "stale info" });
    expect(line).toBe(`${TS} push-rejected payments refs/heads/main 0123456 -> 0123456: stale info`);
  });
});
