/**
 * A repo store whose `writeTreeDelta` shows each commit's decided changes to a check before
 * they are written (under the repo's lock): the check may throw, which fails that commit as a
 * write error would. For tests of what a caller does between planning a commit and its result.
 */
import type { RepoStore, WriteTreeDeltaOptions } from "../../src/substrate/types.js";

/** What a commit's `computeDelta` decided (null: nothing to write). */
export type PlannedDelta = Awaited<ReturnType<WriteTreeDeltaOptions<unknown>["computeDelta"]>>;

/**
 * `store`, calling `check(delta)` once each `writeTreeDelta` commit's changes are decided.
 * Every other member is the store's own.
 */
export function afterPlan(store: RepoStore, check: (delta: PlannedDelta) => void): RepoStore {
  return new Proxy(store, {
    get(target, key) {
      if (key === "writeTreeDelta") {
        return <R>(principal: Parameters<RepoStore["writeTreeDelta"]>[0], repoId: Parameters<RepoStore["writeTreeDelta"]>[1], ref: string, opts: WriteTreeDeltaOptions<R>) =>
          target.writeTreeDelta<R>(principal, repoId, ref, {
            ...opts,
            computeDelta: async (parentSha, reads) => {
              const delta = await opts.computeDelta(parentSha, reads);
              check(delta as PlannedDelta);
              return delta;
            },
          });
      }
      const value: unknown = Reflect.get(target, key, target);
      return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}
