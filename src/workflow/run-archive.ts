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

/** The ref holding archived runs. */
export const ARCHIVE_REF = "refs/archive/runs";

/** True when `ref` (full name) is the archive ref. */
export function isArchiveRef(ref: string): boolean {
  return ref === ARCHIVE_REF;
}
