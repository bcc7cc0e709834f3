/**
 * How a commit's events reach a consumer lane: each commit of main exactly one way, in commit
 * order. Handed over (`handOver`): this process's fire committer gives the events of the commit
 * it just made; they are taken at once when the commit's parent is the last commit taken in and
 * the reader is not in the middle of reading another, so a fire reaches the handler without
 * reading the log back. Read (`subscribeKind` from the cursor): everything else — the catch-up
 * after a start, commits of other writers (signals, the CLI, `git push`), handovers that came
 * out of order. The reader skips commits already handed over, before reading any of their
 * events (`skipRead`); a handover that arrives while the reader is behind waits (at most
 * {@link MAX_WAITING_HANDOVERS} of them) until the reader reaches its parent, or is dropped and
 * read.
 */
import type { CommittedEvents } from "../scheduler/scheduler-types.js";
import type { RunEvent } from "../../src/workflow/types.js";
import type { CommitWindow } from "./consumer-window.js";

/** Handovers kept while the reader is behind them; later ones are left to the reader. */
const MAX_WAITING_HANDOVERS = 1_024;

export interface IntakeDeps {
  readonly window: () => CommitWindow;
  /** Event types the consumer takes. */
  readonly types: ReadonlySet<string>;
  /** Whether the lane has room for more events (below its `maxBuffered`). */
  readonly hasRoom: () => boolean;
  /** Whether the lane runs: otherwise nothing is taken from a handover. */
  readonly running: () => boolean;
  /** Takes one event of a commit (entry from the window) into the lane. */
  readonly admit: (commitSha: string, runId: string, seq: number, event: RunEvent) => void;
}

export interface Intake {
  /** Starts from `position`, the last commit whose events are all taken in (null: none). */
  reset(position: string | null): void;
  /** The events of a commit this process just made on the lane's ref. */
  handOver(committed: CommittedEvents): void;
  /** The reader's look at a commit before reading it: true when it was (or is now) taken from a handover. */
  skipRead(commit: { readonly commitSha: string; readonly parentSha: string | null }): boolean;
  /** The reader read every event of a commit. */
  read(commit: { readonly commitSha: string }): void;
  /** The ref was rewritten: handovers name commits of the old history; the reader reads on. */
  rewritten(): void;
}

export function createIntake(deps: IntakeDeps): Intake {
  /** The last commit of main whose events are all taken in (read or handed over); null: none yet. */
  let position: string | null = null;
  /** The commit the reader is reading now (from its first look until `read`), else null. */
  let reading: string | null = null;
  /** Commits taken from handovers that the reader has not reached yet: it skips them. */
  const takenOver = new Set<string>();
  /** Handovers that came while the reader was busy or behind, keyed by their parent commit. */
  const waiting = new Map<string, CommittedEvents>();

  /** Takes in a handed-over commit whose parent is `position`. */
  function take(committed: CommittedEvents): void {
    const window = deps.window();
    const entry = window.entryFor(committed.commitSha);
    for (const e of committed.events) {
      if (deps.types.has(e.event.type)) deps.admit(committed.commitSha, e.runId, e.seq, e.event);
    }
    takenOver.add(committed.commitSha);
    position = committed.commitSha;
    window.close(entry);
  }

  /** Takes waiting handovers that now follow `position`, while the reader is idle and there is room. */
  function drain(): void {
    for (let next = waiting.get(position ?? ""); next !== undefined && reading === null && deps.hasRoom(); next = waiting.get(position ?? "")) {
      waiting.delete(position ?? "");
      take(next);
    }
  }

  return {
    reset(start) {
      position = start;
    },
    handOver(committed) {
      if (!deps.running()) return;
      if (reading === null && committed.parentSha === position && deps.hasRoom()) {
        take(committed);
        drain();
        return;
      }
      if (waiting.size < MAX_WAITING_HANDOVERS) waiting.set(committed.parentSha ?? "", committed);
    },
    skipRead(commit) {
      if (takenOver.delete(commit.commitSha)) return true;
      if (!deps.running()) return false;
      const handed = waiting.get(commit.parentSha ?? "");
      if (handed !== undefined && handed.commitSha === commit.commitSha) {
        waiting.delete(commit.parentSha ?? "");
        if (commit.parentSha === position && deps.hasRoom()) {
          take(handed);
          takenOver.delete(commit.commitSha);
          return true;
        }
      }
      reading = commit.commitSha;
      return false;
    },
    read(commit) {
      // A skipped commit was closed when it was taken from its handover.
      if (reading !== commit.commitSha) return;
      reading = null;
      position = commit.commitSha;
      deps.window().close(deps.window().entryFor(commit.commitSha));
      drain();
    },
    rewritten() {
      takenOver.clear();
      waiting.clear();
    },
  };
}
