/**
 * One deployment served by the scheduler: its view of the runs (deployment-view.ts: recovery,
 * the live tail, what the queue holds) and its fire committer (fire-committer.ts: the buffer of
 * due timers, group commit, batches, retries). The tracker wires the two and is what the
 * scheduler starts, feeds and stops.
 *
 * States: recovering → tailing → stopped. A failed recovery or tail is reported and the
 * scheduler retries the whole tracker after a backoff.
 */
import { DeploymentView, type RunRecord } from "./deployment-view.js";
import type { ServedPendingTimers } from "./scheduler-types.js";
import { FireCommitter } from "./fire-committer.js";
import type { DueGeneration } from "./scheduler-queue.js";
import type { TrackerContext } from "./tracker-context.js";

export type { TrackerContext } from "./tracker-context.js";

export class RepoTracker {
  readonly repoId: string;
  private readonly view: DeploymentView;
  private readonly committer: FireCommitter;

  /** @param onTailFailed the live tail ended with an error (the scheduler drops and retries the tracker) */
  constructor(repoId: string, ctx: TrackerContext, onTailFailed: (tracker: RepoTracker, error: unknown) => void) {
    this.repoId = repoId;
    this.view = new DeploymentView(
      repoId,
      ctx,
      (error) => onTailFailed(this, error),
      // A commit read from the ref: the repo is reachable, so the next failed fire starts its backoff afresh.
      () => this.committer.resetBackoff(),
    );
    this.committer = new FireCommitter(this.view, ctx);
  }

  /** Every run this deployment holds, by id. */
  get runs(): ReadonlyMap<string, RunRecord> {
    return this.view.runs;
  }

  /** See {@link DeploymentView.recover}. */
  recover(): Promise<void> {
    return this.view.recover();
  }

  /** Ends the tail and waits for the commit in flight; queued timers of this repo are disarmed. */
  stop(): Promise<void> {
    return this.view.stop(this.committer.stop());
  }

  /** Commits due timers of this deployment (see {@link FireCommitter.fire}). */
  fire(due: readonly DueGeneration[]): Promise<void> {
    return this.committer.fire(due);
  }

  /** Resolves when the fire loop has nothing buffered and no commit in flight. */
  idle(): Promise<void> {
    return this.committer.idle();
  }

  /** See {@link FireCommitter.releaseThrottle}. */
  releaseThrottle(): void {
    this.committer.releaseThrottle();
  }

  /** See {@link DeploymentView.pendingSnapshot}. */
  pendingSnapshot(pause: () => Promise<void>): Promise<ServedPendingTimers | "unsettled" | null> {
    return this.view.pendingSnapshot(pause);
  }

  /** The run's record, or undefined for an unknown run. */
  run(runId: string): RunRecord | undefined {
    return this.view.run(runId);
  }

  /** Marks a timer as no longer queued (after `dropQueued`). */
  forget(runId: string, timerId: string): void {
    this.view.forget(runId, timerId);
  }
}
