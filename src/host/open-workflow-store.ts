/**
 * A repo store set up for deployment repos: the workflow-run kind handler (validated appends)
 * and, unless told otherwise, every principal allowed. The host and every CLI command open their
 * store through here, so both see the same layout and the same validation.
 */
import { allowAll } from "../substrate/allow-all.js";
import { createRepoStore } from "../substrate/repo-store.js";
import type { RepoStore, RepoStoreOptions } from "../substrate/types.js";
import { workflowRunKind } from "../workflow/workflow-run-kind.js";

export interface OpenWorkflowStoreOptions extends Partial<Omit<RepoStoreOptions, "dataDir" | "kindHandlers">> {
  readonly dataDir: string;
  /** Largest event accepted on write (bytes, default 1 MiB). */
  readonly maxEventBytes?: number;
}

/**
 * Opens a store over `<dataDir>/deployments/<repoId>.git`.
 * @param opts every {@link RepoStoreOptions} but `kindHandlers`; `authorize` defaults to
 *   {@link allowAll}, `watch` to the store's default (`{pollMs: 1000, chokidar: true}`)
 * @returns the store; close it with `close()` (watchers and poll timers keep a process alive)
 * @throws TypeError for a bad option
 */
export function openWorkflowStore(opts: OpenWorkflowStoreOptions): RepoStore {
  const { maxEventBytes, ...rest } = opts;
  return createRepoStore({
    ...rest,
    authorize: opts.authorize ?? allowAll,
    kindHandlers: [workflowRunKind(maxEventBytes === undefined ? {} : { maxEventBytes })],
  });
}
