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
import { WorkflowHostError } from "../errors.js";
import { DEFAULT_REF } from "../substrate/ref-name.js";
import type { CommittedReads, Principal, RepoId, RepoStore } from "../substrate/types.js";
import { runsPrefix } from "./paths.js";
import type { BadEvent } from "./run-log.js";

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

/**
 * The oid of `folder` in the archive, by a point lookup where the reads offer one: the archive's
 * `runs/` (one entry per archived run) is then searched in its stored bytes, not parsed.
 */
function archivedFolderOid(archive: CommittedReads, folder: string): Promise<string | null> {
  return archive.pointOid !== undefined ? archive.pointOid(folder) : archive.treeOid(folder);
}

/**
 * The problem of a run folder on the live ref whose id the archive holds with another folder:
 * a run id reused after retention archived it (a `git push` of `runs/<runId>/…`). Its log is not
 * the archived run's and is never read as a live run: reported as a bad event
 * (`event_invalid`, `data.reason` "run_archived"), its timers left unarmed.
 * @param archive reads of the archive ref, as {@link openArchive} gives them (`commitSha` null,
 *   or null itself, when the ref does not exist)
 * @param liveOid the run folder's tree oid on the live ref (null: absent)
 * @returns the problem, or null when the archive does not hold the id, or holds this very folder
 *   (a retention pass between its two commits)
 */
export async function reusedArchivedRunProblem(archive: CommittedReads | null, runId: string, liveOid: string | null): Promise<BadEvent | null> {
  // No archive ref (reads of nothing): the common case, answered without a lookup per run.
  if (archive === null || archive.commitSha === null || liveOid === null) return null;
  const folder = `${runsPrefix}${runId}`;
  const archivedOid = await archivedFolderOid(archive, folder);
  if (archivedOid === null || archivedOid === liveOid) return null;
  return {
    runId,
    path: folder,
    seq: null,
    error: new WorkflowHostError("event_invalid", `${folder}: run ${runId} was archived (${ARCHIVE_REF} holds another runs/${runId}); a run id is never reused, this folder is not read`, {
      path: folder,
      seq: null,
      reason: "run_archived",
    }),
  };
}

/**
 * Reads of the archive ref at its tip; when the ref does not exist, reads of nothing
 * (`commitSha` null, every path absent), never null: a caller that opens it once and keeps it
 * (`archive ??= await openArchive(…)`) must not look the missing ref up again for every run.
 */
export async function openArchive(store: RepoStore, principal: Principal, repoId: RepoId): Promise<CommittedReads> {
  return store.openCommittedReads(principal, repoId, ARCHIVE_REF);
}

/**
 * The error for an operation on a run that retention archived: the live ref has no folder for
 * `runId` and the archive ref holds one. Such a run can be read (`runs show`, plain git), never
 * changed: its log is closed and its id is never used again.
 * @param liveRef the live ref (default "refs/heads/main")
 * @returns a `run_archived` error (`data`: repoId, runId, ref) to throw, or null when the run is
 *   live or unknown to the archive
 * @throws the store's errors (authorize_denied, ref_corrupt, …)
 */
export async function archivedRunError(store: RepoStore, principal: Principal, repoId: RepoId, runId: string, liveRef: string = DEFAULT_REF): Promise<WorkflowHostError | null> {
  const folder = `${runsPrefix}${runId}`;
  const live = await store.openCommittedReads(principal, repoId, liveRef);
  if ((await live.treeOid(folder)) !== null) return null;
  const archive = await openArchive(store, principal, repoId);
  if (archive === null || (await archivedFolderOid(archive, folder)) === null) return null;
  return new WorkflowHostError("run_archived", `run ${runId} of ${repoId.id} was archived by retention (${ARCHIVE_REF}); read it with workflow-host runs show, it cannot be changed`, {
    repoId: repoId.id,
    runId,
    ref: ARCHIVE_REF,
  });
}
