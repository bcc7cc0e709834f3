/** What a consumer lane keeps in memory for the events it has taken in (see `./consumer-lane.ts`). */
import type { Logger } from "../../src/logger.js";
import type { Principal, RepoId, RepoStore } from "../../src/substrate/types.js";
import type { TimerHandle, Timers } from "../../src/time/clock.js";
import type { RunEvent } from "../../src/workflow/types.js";
import type { DispatchReport } from "./dispatch-types.js";

/** What the parts of a lane that read or write the consumer ref of one deployment share. */
export interface ConsumerRefDeps {
  readonly store: RepoStore;
  readonly principal: Principal;
  readonly rid: RepoId;
  /** The consumer ref, `refs/consumers/<name>`. */
  readonly ref: string;
  readonly consumer: string;
  readonly timers: Timers;
  readonly logger: Logger;
  /** Reports (never throws). */
  readonly report: (report: DispatchReport) => void;
}

/** One commit of main in the lane's window: the cursor moves past it once it is closed and `remaining` is 0. */
export interface CommitEntry {
  readonly sha: string;
  /** Its events taken in and not handled yet. */
  remaining: number;
  /** Every event of it is taken in. */
  closed: boolean;
  /** `<runId>/<seq>` of its events for this consumer. */
  readonly ids: string[];
}

/** One event to hand over. */
export interface LaneItem {
  readonly id: string;
  readonly runId: string;
  readonly seq: number;
  readonly commitSha: string;
  readonly event: RunEvent;
  readonly key: string;
  /** Failed attempts so far (recorded ones included). */
  failed: number;
  /** The commit entry of an event read from the log; null for a released dead letter. */
  readonly entry: CommitEntry | null;
  readonly released: boolean;
}

/** A run's events, handed over one at a time in seq order. */
export interface RunQueue {
  readonly runId: string;
  readonly items: LaneItem[];
  /** An attempt of its head is in flight or waiting for its backoff. */
  active: boolean;
  retryTimer: TimerHandle | null;
}
