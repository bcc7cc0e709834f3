/**
 * The one name of the store option: `store`. Components that took `repoStore` still accept it,
 * deprecated, so existing callers keep working; giving both is `config_invalid`.
 */
import { WorkflowHostError } from "../errors.js";
import type { RepoStore } from "./types.js";

/** The store of a component: `store` (one of the two is required; checked on creation). */
export interface StoreOption {
  /** Store holding the deployments; it needs the workflow-run kind handler. */
  readonly store?: RepoStore;
  /** @deprecated Use `store`. */
  readonly repoStore?: RepoStore;
}

/**
 * The store an options object names.
 * @throws config_invalid when neither or both of `store` and `repoStore` are given
 */
export function storeOf(opts: StoreOption, component: string): RepoStore {
  const store = opts.store ?? opts.repoStore;
  if (store === undefined || (opts.store !== undefined && opts.repoStore !== undefined)) {
    throw new WorkflowHostError("config_invalid", `${component}: give the store as \`store\` (once)`, { field: "store" });
  }
  return store;
}
