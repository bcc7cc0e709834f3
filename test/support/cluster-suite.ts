/**
 * What every several-hosts suite sets up per test: a fresh temp folder holding a cluster rig
 * (PostgreSQL, remotes), and afterwards every host process killed and the rig's server stopped.
 */
import { afterEach } from "vitest";
import { startClusterRig, type ClusterRig } from "../cluster/cluster-rig.js";
import { useTempDirs } from "../helpers/temp-dir.js";
import { killAllWatched } from "../integration/reliability/serve-process.js";
import { findPostgresBin } from "./postgres-server.js";

/** Whether the suites can run here (PostgreSQL installed); they are skipped otherwise. */
export const hasPostgres = findPostgresBin() !== null;

/**
 * Registers the clean-up and returns the rig starter: `startRig(n)` makes a temp folder, starts
 * PostgreSQL and creates `n` deployments (d00, d01, …) there. Call at module level.
 */
export function useClusterRig(): (deployments: number) => Promise<ClusterRig> {
  const tempDir = useTempDirs("workflow-host-cluster-");
  let rig: ClusterRig | null = null;
  afterEach(async () => {
    await killAllWatched();
    await rig?.close();
    rig = null;
  });
  return async (deployments) => {
    rig = await startClusterRig(await tempDir(), deployments);
    return rig;
  };
}
