/**
 * Read-only views of consumers for `workflow-host dispatch status|list`: which consumers have
 * a ref in a deployment, how far each is behind main, and its dead letters. Nothing here writes.
 */
import { DEFAULT_REF } from "../../src/substrate/ref-name.js";
import type { Principal, RepoStore } from "../../src/substrate/types.js";
import { parseEvent } from "../../src/workflow/events.js";
import { subscribeKind } from "../../src/workflow/subscribe-kind.js";
import { isTimerFired } from "../../src/workflow/event-guards.js";
import type { RunEvent } from "../../src/workflow/types.js";
import { deploymentRepo, readConsumerState, type ParkedRecord } from "./consumer-state.js";
import { eventId } from "./dispatch-keys.js";
import { DISPATCH_EVENT_TYPES } from "./dispatch-types.js";

export interface ConsumerLag {
  readonly consumer: string;
  readonly repoId: string;
  readonly cursor: string | null;
  readonly mainSha: string | null;
  /**
   * Events of the dispatched types committed after the cursor and not recorded as done (the
   * consumer's own filter is not known here, so this is an upper bound for a filtered one).
   */
  readonly lagEvents: number;
  /** Now minus the time of the oldest such event (its `firedAt`, else `at`); 0 when none. */
  readonly lagMs: number;
  readonly parked: number;
  readonly retrying: number;
  readonly failing: number;
  readonly parkedEvents: readonly ParkedRecord[];
}

function eventTimeMs(event: RunEvent): number | null {
  const firedAt = isTimerFired(event) ? event.data.firedAt : undefined;
  const at = firedAt ?? (typeof event.at === "string" ? event.at : null);
  const ms = at === null ? NaN : Date.parse(at);
  return Number.isNaN(ms) ? null : ms;
}

/**
 * How far a consumer is behind main in a deployment, and its dead letters. Walks the commits
 * after the cursor once (O(lag)).
 * @throws the store's read errors; event_invalid for a consumer ref that is not a consumer's
 */
export async function consumerLag(store: RepoStore, principal: Principal, repoIdText: string, consumer: string, nowMs: number): Promise<ConsumerLag> {
  const repoId = deploymentRepo(repoIdText);
  const state = await readConsumerState(store, principal, repoId, consumer);
  const mainSha = await store.resolveRef(principal, repoId, DEFAULT_REF);
  let lagEvents = 0;
  let oldest: number | null = null;
  if (mainSha !== null && state.cursor !== mainSha) {
    const controller = new AbortController();
    const events = subscribeKind(store, principal, repoId, DEFAULT_REF, (bytes, where) => parseEvent(bytes, { path: where.path, expectedSeq: where.seq }), {
      from: state.cursor ?? "genesis",
      kinds: DISPATCH_EVENT_TYPES,
      signal: controller.signal,
      onCommit: (commit) => {
        if (commit.commitSha === mainSha) controller.abort();
      },
    });
    for await (const found of events) {
      if (state.done.has(eventId(found.runId, found.seq))) continue;
      lagEvents += 1;
      const at = eventTimeMs(found.event);
      if (at !== null && (oldest === null || at < oldest)) oldest = at;
      if (controller.signal.aborted) break;
    }
  }
  return {
    consumer,
    repoId: repoId.id,
    cursor: state.cursor,
    mainSha,
    lagEvents,
    lagMs: oldest === null ? 0 : Math.max(0, nowMs - oldest),
    parked: state.parked.size,
    retrying: state.retry.size,
    failing: state.failing.size,
    parkedEvents: [...state.parked.values()].sort((a, b) => (a.runId < b.runId ? -1 : a.runId > b.runId ? 1 : a.seq - b.seq)),
  };
}
