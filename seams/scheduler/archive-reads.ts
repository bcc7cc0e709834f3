/**
 * The archive ref (`refs/archive/runs`) as a deployment's view reads it: only to tell a live run
 * folder that reuses an archived run's id. A damaged archive ref (a torn or dangling ref, an
 * unreadable commit) must not cost the live runs: it is reported once per damage seen (the
 * error's message names the value found, so another damage is reported again) and read as no
 * archive meanwhile, so recovery and the tail go on; `runs show` of an archived run and new run
 * folders written through the store still fail with the store's error until the ref is repaired.
 */
import { WorkflowHostError } from "../../src/errors.js";
import type { CommittedReads, Principal, RepoId } from "../../src/substrate/types.js";
import { openArchive } from "../../src/workflow/run-archive.js";
import type { TrackerContext } from "./tracker-context.js";

export class ArchiveReads {
  /** Message of the damage last reported (null: none, or the ref read fine since). */
  private reported: string | null = null;

  constructor(
    private readonly ctx: TrackerContext,
    private readonly repoId: string,
    private readonly rid: RepoId,
  ) {}

  /**
   * Reads of the archive ref at its tip (reads of nothing when it does not exist), or null when
   * it cannot be read (`ref_corrupt`, `object_corrupt`: reported as `archive_unreadable`).
   * @throws any other error of the store (the caller's retry handles it)
   */
  async open(): Promise<CommittedReads | null> {
    try {
      const reads = await openArchive(this.ctx.store, this.ctx.principal as Principal, this.rid);
      this.reported = null;
      return reads;
    } catch (error) {
      if (!(error instanceof WorkflowHostError) || (error.code !== "ref_corrupt" && error.code !== "object_corrupt")) throw error;
      if (this.reported !== error.message) {
        this.reported = error.message;
        this.ctx.report({ type: "archive_unreadable", repoId: this.repoId, error });
      }
      return null;
    }
  }
}
