/**
 * The commits of main a consumer lane has taken events from and not yet moved its cursor past,
 * oldest first, and the cursor itself (see `./consumer-state.ts` for what both mean on disk).
 *
 * The cursor moves past a commit once every event of it and of every commit before it is
 * handled (done or parked), and the commit is closed (all its events taken in). Events handled
 * ahead of the cursor (other runs went faster) are kept in `done`, so a restart skips them;
 * they leave `done` when the cursor passes their commit.
 *
 * The durable `done` a lane starts with is part of `done` from the start, not only once the
 * reader reaches those events again: a checkpoint written before that (the reader is slow or
 * waits for buffer room, or the lane stops first) writes `done` whole, and must not drop them.
 * An id whose event the lane never takes in again (the consumer's filter no longer matches it,
 * or main was rewritten without it) stays in `done`: kept once too often, never lost.
 */
import type { CommitEntry } from "./consumer-lane-types.js";

export interface CommitWindow {
  /** The last commit of main every event of which (and of every commit before it) is handled; null: none. */
  readonly cursor: string | null;
  /** `<runId>/<seq>` of events handled in commits after the cursor (the durable ones included), sorted. */
  done(): string[];
  /** The entry of commit `sha` (the newest one when it is `sha`, else a new one after it). */
  entryFor(sha: string): CommitEntry;
  /**
   * Puts event `id` in `entry`. @returns false when it is recorded as done already (in the
   * durable `done` the lane started from): it is not to be handed over.
   */
  admit(entry: CommitEntry, id: string): boolean;
  /** Event `id` of `entry` is not for this lane (another run): a durable `done` id leaves `done` with its commit. */
  pass(entry: CommitEntry, id: string): void;
  /** Event `id` of `entry` is handled; the cursor moves when it can. */
  handled(entry: CommitEntry, id: string): void;
  /** Every event of `entry` is taken in; the cursor moves when it can. */
  close(entry: CommitEntry): void;
}

/**
 * @param cursor where the lane starts (its durable cursor)
 * @param durableDone the durable `done` it starts with
 * @param onMoved called each time the cursor moved
 */
export function createCommitWindow(cursor: string | null, durableDone: ReadonlySet<string>, onMoved: () => void): CommitWindow {
  const entries: CommitEntry[] = [];
  const doneAhead = new Set<string>(durableDone);
  let current = cursor;

  function advance(): void {
    let moved = false;
    for (let head = entries[0]; head !== undefined && head.closed && head.remaining === 0; head = entries[0]) {
      entries.shift();
      for (const id of head.ids) doneAhead.delete(id);
      current = head.sha;
      moved = true;
    }
    if (moved) onMoved();
  }

  return {
    get cursor() {
      return current;
    },
    done() {
      return [...doneAhead].sort();
    },
    entryFor(sha) {
      const last = entries[entries.length - 1];
      if (last !== undefined && last.sha === sha) return last;
      const entry: CommitEntry = { sha, remaining: 0, closed: false, ids: [] };
      entries.push(entry);
      return entry;
    },
    admit(entry, id) {
      entry.ids.push(id);
      if (durableDone.has(id)) return false;
      entry.remaining += 1;
      return true;
    },
    pass(entry, id) {
      if (durableDone.has(id)) entry.ids.push(id);
    },
    handled(entry, id) {
      entry.remaining -= 1;
      doneAhead.add(id);
      advance();
    },
    close(entry) {
      entry.closed = true;
      advance();
    },
  };
}
