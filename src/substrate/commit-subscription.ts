/**
 * A subscriber's walk over the commits of one ref.
 *
 * Each subscriber owns a cursor: the last commit it yielded (null: before the root). On every
 * wake it resolves the ref; if the tip moved, it walks first parents from the tip back to the
 * cursor and yields the commits oldest first, each with its blob changes against its first
 * parent. The cursor advances after each yield, so every commit after the starting point is
 * yielded exactly once, with no gap, however wakes are coalesced or repeated.
 *
 * A tip that does not descend from the cursor (a force push) is reported through `onRewrite`
 * and then yielded as ONE synthetic change set: `commitSha` is the new tip, `parentSha` is the
 * old cursor (not the tip's real parent) and `changes` is the diff from the cursor's tree to the
 * tip's tree — so a consumer that applies changes in order ends on the tip's state, never with
 * a silent gap. If the old cursor commit can no longer be read (pruned after the rewrite), the
 * diff starts from the empty tree: a full re-walk of the tip's content.
 *
 * States: waiting (for a wake) → checking (resolve, walk) → yielding → waiting …; any state →
 * done when the AbortSignal fires or the store closes (the iteration returns, it never throws
 * for either).
 */
import { createTimeSlicer } from "../time/time-slicer.js";
import { diffTrees } from "./tree-diff.js";
import type { RepoHandle } from "./repo-handle.js";
import type { CommitChange, Oid, PathChange, SubscribeOptions } from "./types.js";
import { ownCommitChangesLater } from "./write-engine.js";

export interface SubscriptionContext {
  readonly repo: RepoHandle;
  /** Full ref name (or HEAD). */
  readonly refName: string;
  /** The starting cursor, resolved when `subscribe` was called: commits after it are yielded. */
  readonly start: Promise<Oid | null>;
  /** Registers a wake listener (shared ref watcher + store close); returns its release. */
  readonly attach: (wake: () => void) => () => void;
  readonly isClosed: () => boolean;
}

/** First-parent chain from `tip` back to (excluding) `cursor`, oldest first. */
async function commitsSince(
  repo: RepoHandle,
  cursor: Oid | null,
  tip: Oid,
): Promise<{ readonly shas: Oid[]; readonly reachedCursor: boolean }> {
  const shas: Oid[] = [];
  let at: Oid | null = tip;
  while (at !== null && at !== cursor) {
    shas.push(at);
    at = (await repo.readCommit(at)).parents[0] ?? null;
  }
  shas.reverse();
  return { shas, reachedCursor: at === cursor };
}

async function treeOf(repo: RepoHandle, sha: Oid | null): Promise<Oid | null> {
  return sha === null ? null : (await repo.readCommit(sha)).tree;
}

/** The async iterable behind `RepoStore.subscribe`; see the module comment for guarantees. */
export function subscribeCommits(ctx: SubscriptionContext, opts: SubscribeOptions): AsyncIterable<CommitChange> {
  const { repo } = ctx;
  const readTree = (oid: Oid) => repo.objects.readTree(oid);

  async function* iterate(): AsyncGenerator<CommitChange, void, undefined> {
    const signal = opts.signal;
    const stopped = (): boolean => signal?.aborted === true || ctx.isClosed();
    if (stopped()) return;
    let cursor = await ctx.start;
    let seenTip: Oid | null = cursor;
    let dirty = true;
    let resume: (() => void) | undefined;
    const wake = (): void => {
      dirty = true;
      const r = resume;
      resume = undefined;
      r?.();
    };
    const release = ctx.attach(wake);
    signal?.addEventListener("abort", wake);
    try {
      while (!stopped()) {
        if (!dirty) {
          await new Promise<void>((r) => {
            resume = r;
          });
          continue;
        }
        dirty = false;
        const tip = await repo.resolveRef(ctx.refName);
        if (tip === null || tip === seenTip) continue;
        const walk = await commitsSince(repo, cursor, tip);
        if (!walk.reachedCursor) {
          opts.onRewrite?.({ from: cursor, to: tip });
          let base: Oid | null = null;
          try {
            base = await treeOf(repo, cursor);
          } catch {
            base = null;
          }
          const changes = await diffTrees(readTree, base, await treeOf(repo, tip), "", createTimeSlicer().pause);
          if (stopped()) return;
          yield { commitSha: tip, parentSha: cursor, changes };
          cursor = tip;
        } else {
          for (const sha of walk.shas) {
            if (stopped()) return;
            const commit = await repo.readCommit(sha);
            const parentSha = commit.parents[0] ?? null;
            // A commit adding or removing thousands of run folders (a retention commit) is
            // diffed in slices: the subscriber's process keeps its timers and heartbeats.
            // A commit this process just made: its write's own edit is the diff.
            const later = ownCommitChangesLater(repo, sha, parentSha);
            if (later !== undefined) {
              // Listed only if the subscriber reads them (the scheduler's tail skips a fire commit it adopted whole).
              if (stopped()) return;
              yield lazyCommitChange(sha, parentSha, later);
              cursor = sha;
              continue;
            }
            const changes = await diffTrees(readTree, await treeOf(repo, parentSha), commit.tree, "", createTimeSlicer().pause);
            if (stopped()) return;
            yield { commitSha: sha, parentSha, changes };
            cursor = sha;
          }
        }
        seenTip = tip;
      }
    } finally {
      release();
      signal?.removeEventListener("abort", wake);
    }
  }

  return { [Symbol.asyncIterator]: () => iterate() };
}

/** A {@link CommitChange} whose `changes` are listed on first read. */
function lazyCommitChange(commitSha: Oid, parentSha: Oid | null, list: () => readonly PathChange[]): CommitChange {
  return {
    commitSha,
    parentSha,
    get changes() {
      return list();
    },
  };
}
