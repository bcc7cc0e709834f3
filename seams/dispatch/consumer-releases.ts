/**
 * Dead letters of one consumer lane: the record an event is parked with, and the watch for
 * parked events released by `dispatch retry` (moved to the consumer ref's `retry/` folder).
 *
 * Released events are found by looking at the `retry/` folder: at start, then every
 * {@link RELEASE_POLL_MS} (one ref read and one tree lookup; a subscription to the ref would
 * diff every checkpoint commit). A release by the CLI is picked up within that time. A released
 * event is handed over once per process until the checkpoint removing its record is committed
 * (`recorded`): a look before that still sees the record and must not hand it over again.
 */
import type { TimerHandle } from "../../src/time/clock.js";
import { describeError, readFolder, type ParkedRecord } from "./consumer-state.js";
import { eventId } from "./dispatch-keys.js";
import type { ConsumerRefDeps, LaneItem } from "./consumer-lane-types.js";

/** How often the consumer ref is looked at for events released by `dispatch retry` (ms). */
export const RELEASE_POLL_MS = 1_000;

/** The dead letter of `item` after its last failed attempt (`error`), parked at `parkedAt` (ISO). */
export function parkedRecord(repoId: string, item: LaneItem, error: unknown, parkedAt: string): ParkedRecord {
  return {
    repoId,
    runId: item.runId,
    seq: item.seq,
    commitSha: item.commitSha,
    idempotencyKey: item.key,
    attempts: item.failed,
    lastError: describeError(error),
    parkedAt,
    event: item.event,
  };
}

export interface ReleaseDeps extends ConsumerRefDeps {
  /** Whether the lane is running: nothing is handed over, and the watch ends, otherwise. */
  readonly running: () => boolean;
  /** Hands a released event to its run's queue. */
  readonly enqueue: (item: LaneItem) => void;
}

export interface ReleaseWatch {
  /** Hands over the released records the lane's durable state held at start. */
  take(records: Iterable<ParkedRecord>): void;
  /** Remembers the `retry/` folder of the consumer ref at `refSha` as seen. */
  seen(refSha: string): Promise<void>;
  /** Looks again every {@link RELEASE_POLL_MS} while the lane runs. */
  arm(): void;
  /** The checkpoint removing these released events' records is committed. */
  recorded(ids: readonly string[]): void;
  stop(): void;
}

export function createReleaseWatch(deps: ReleaseDeps): ReleaseWatch {
  const { store, principal, rid, timers, logger } = deps;
  const tag = { consumer: deps.consumer, repoId: rid.id };
  /** Released events handed over and not yet removed from `retry/` by a committed checkpoint. */
  const queued = new Set<string>();
  let lastRetryTree: string | null = null;
  let timer: TimerHandle | null = null;

  function itemOf(record: ParkedRecord): LaneItem | null {
    const id = eventId(record.runId, record.seq);
    if (queued.has(id) || record.runId === undefined || !Number.isInteger(record.seq) || record.event === undefined) return null;
    queued.add(id);
    return { id, runId: record.runId, seq: record.seq, commitSha: record.commitSha, event: record.event, key: record.idempotencyKey, failed: 0, entry: null, released: true };
  }

  async function scan(): Promise<void> {
    const tip = await store.resolveRef(principal, rid, deps.ref);
    if (tip === null) return;
    const reads = await store.openCommittedReads(principal, rid, tip);
    const oid = await reads.treeOid("retry");
    if (oid === lastRetryTree) return;
    lastRetryTree = oid;
    if (oid === null) return;
    const records = new Map<string, ParkedRecord>();
    await readFolder(reads, "retry", records, (message) => logger.warn(`consumer ${deps.consumer}: ${message}`, tag));
    for (const record of records.values()) {
      const item = itemOf(record);
      if (item === null || !deps.running()) continue;
      deps.report({ type: "released", ...tag, runId: item.runId, seq: item.seq, idempotencyKey: item.key });
      deps.enqueue(item);
    }
  }

  function arm(): void {
    timer = timers.setTimeout(() => {
      timer = null;
      if (!deps.running()) return;
      scan()
        .catch((error: unknown) => logger.warn(`consumer ${deps.consumer} in ${rid.id}: reading released events failed: ${describeError(error)}`, tag))
        .finally(() => {
          if (deps.running()) arm();
        });
    }, RELEASE_POLL_MS);
  }

  return {
    take(records) {
      for (const record of records) {
        const item = itemOf(record);
        if (item !== null) deps.enqueue(item);
      }
    },
    async seen(refSha) {
      lastRetryTree = await (await store.openCommittedReads(principal, rid, refSha)).treeOid("retry");
    },
    arm,
    recorded(ids) {
      for (const id of ids) queued.delete(id);
    },
    stop() {
      if (timer !== null) timers.clearTimeout(timer);
      timer = null;
    },
  };
}
