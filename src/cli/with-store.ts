/**
 * Opens a store for one CLI command and closes it afterwards. Commands other than `serve` and
 * `demo` take no host lock: their writes go through the store's ref lock, so they are safe next
 * to a running host, which sees them through its watcher.
 */
import { stat } from "node:fs/promises";
import { WorkflowHostError } from "../errors.js";
import { openWorkflowStore } from "../host/open-workflow-store.js";
import type { RepoStore } from "../substrate/types.js";
import type { CliIo } from "./io.js";

/**
 * Runs `work` with a store over `dataDir` (no watching: a command reads or writes and exits).
 * @param opts.create - make the data dir when missing (default false: a missing data dir is
 *   `repo_not_found`, so a mistyped path is not read as "no deployments")
 * @returns what `work` returns; the store is closed either way
 */
export async function withStore<T>(dataDir: string, io: CliIo, work: (store: RepoStore) => Promise<T>, opts: { create?: boolean } = {}): Promise<T> {
  if (opts.create !== true) {
    const found = await stat(dataDir).catch(() => null);
    if (found === null || !found.isDirectory()) {
      throw new WorkflowHostError("repo_not_found", `data dir ${dataDir} does not exist; create a deployment with workflow-host repo create`, { dataDir });
    }
  }
  const store = openWorkflowStore({ dataDir, watch: false, clock: io.clock });
  try {
    return await work(store);
  } finally {
    await store.close();
  }
}
