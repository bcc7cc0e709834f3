/**
 * Where ended runs go when retention takes them out of the live tree: the archive ref
 * `refs/archive/runs` of the same deployment repository. Its tree holds each archived run's
 * folder at `runs/<runId>/`, exactly as it was on `main` when it left (the same blobs, so the
 * same bytes and the same folder tree oid). Nothing that recovers or fires reads it; `runs show`
 * and plain git do (`git show refs/archive/runs:runs/<runId>/events/3.json`).
 *
 * Rules (checked by the workflow-run kind's `validatePush`):
 * - the archive only grows: a commit to it adds run folders and never changes or removes one;
 * - a run leaves `main` only whole (its folder gone in one commit), only once it has ended, and
 *   only when the archive holds the very same folder (same tree oid) at that moment: nothing is
 *   lost, and such a commit is told apart from a destructive one by that alone;
 * - a run id found in the archive is never started again on `main`.
 */
import type { Principal, RepoId, RepoStore } from "../substrate/types.js";
import { runsPrefix } from "./paths.js";

/** The ref holding archived runs. */
export const ARCHIVE_REF = "refs/archive/runs";

/** True when `ref` (full name) is the archive ref. */
export function isArchiveRef(ref: string): boolean {
  return ref === ARCHIVE_REF;
}

/**
 * Of `runIds`, the runs a commit moved to the archive: their folder is gone at `commitSha`, and
 * the archive ref holds it now with the tree oid it had at `parentSha` (the archive only grows,
 * so holding it now means holding it then). The same rule `validatePush` applies to the
 * commits the host makes; readers use it for commits of any origin, so a run removed any other
 * way is still reported as a rewrite. Never throws: an unreadable archive moves nothing.
 * @param pause awaited before each run is looked at (a caller's time slicer); default none
 */
export async function runsMovedToArchive(
  store: RepoStore,
  principal: Principal,
  repoId: RepoId,
  commitSha: string,
  parentSha: string | null,
  runIds: Iterable<string>,
  pause?: () => Promise<void>,
): Promise<Set<string>> {
  const moved = new Set<string>();
  const wanted = [...new Set(runIds)];
  if (wanted.length === 0 || parentSha === null) return moved;
  try {
    const archive = await store.openCommittedReads(principal, repoId, ARCHIVE_REF);
    if (archive.commitSha === null) return moved;
    const after = await store.openCommittedReads(principal, repoId, commitSha);
    const before = await store.openCommittedReads(principal, repoId, parentSha);
    for (const runId of wanted) {
      if (pause !== undefined) await pause();
      const folder = `${runsPrefix}${runId}`;
      if ((await after.treeOid(folder)) !== null) continue;
      const oid = await before.treeOid(folder);
      if (oid !== null && oid === (await archive.treeOid(folder))) moved.add(runId);
    }
  } catch {
    return moved;
  }
  return moved;
}
