import { afterEach, describe, expect, it } from "vitest";
import { INDEX_IDLE_WAIT_MAX_MS, INDEX_WRITE_DELAY_MS } from "../../../seams/scheduler/deployment-view.js";
import type { RepoStore } from "../../../src/substrate/types.js";
import { decodeRecoveryIndex, RECOVERY_INDEX_FILE } from "../../../src/workflow/recovery-index.js";
import { WORKFLOW_RUN_KIND } from "../../../src/workflow/workflow-run-kind.js";
import { createHarness, REPO, type Harness } from "./harness.js";

let h: Harness | undefined;
const RID = { kind: WORKFLOW_RUN_KIND, id: REPO };
const MAX_EVENT_BYTES = 1_048_576;

afterEach(async () => {
  await h?.close();
  h = undefined;
});

const timerSet = (timerId: string, fireAt: string): Record<string, unknown> => ({ type: "TimerSet", data: { timerId, fireAt } });

/**
 * Records each write of the recovery index with the fires reported before it; `next()` resolves
 * when the next write has completed.
 */
function watchIndexWrites(harness: Harness): { writes: number[]; next(): Promise<void> } {
  const store = harness.store as { writeDerived: NonNullable<RepoStore["writeDerived"]> };
  const original = store.writeDerived.bind(store);
  const writes: number[] = [];
  let waiting: (() => void) | null = null;
  store.writeDerived = async (principal, repoId, name, content) => {
    const fired = harness.events.filter((e) => e.type === "fired").length;
    const result = await original(principal, repoId, name, content);
    if (name === RECOVERY_INDEX_FILE) {
      writes.push(fired);
      waiting?.();
      waiting = null;
    }
    return result;
  };
  return {
    writes,
    next: () =>
      new Promise<void>((resolve) => {
        waiting = resolve;
      }),
  };
}

describe("the recovery index written after a recovery", () => {
  it("waits for the fires due right after recovery, and is the index recovery made", async () => {
    h = await createHarness("2026-05-01T00:00:00.000Z");
    for (const run of ["r1", "r2", "r3"]) await h.append(run, timerSet("t", "2026-05-01T00:00:00.100Z"));
    const index = watchIndexWrites(h);
    // No index yet: recovery reads every log and has an index to write.
    await h.scheduler.start();
    await h.clock.advance(100);
    await h.scheduler.idle();
    expect(h.events.filter((e) => e.type === "fired")).toHaveLength(3);
    // The burst went out without the index's write beside it.
    expect(index.writes).toEqual([]);
    const written = index.next();
    await h.clock.advance(INDEX_WRITE_DELAY_MS);
    await written;
    expect(index.writes).toEqual([3]);
    // Written as recovery left the runs (each at the tree it was read at, timer pending): a next
    // start re-reads the runs the fires changed, as their trees differ.
    const bytes = await h.store.readDerived?.(null, RID, RECOVERY_INDEX_FILE);
    const decoded = decodeRecoveryIndex(bytes as Uint8Array, MAX_EVENT_BYTES);
    expect([...(decoded?.keys() ?? [])].sort()).toEqual(["r1", "r2", "r3"]);
    expect(decoded?.get("r1")?.pendingTimers.map((t) => t.timerId)).toEqual(["t"]);
    // stop() writes the runs the fires moved on.
    await h.scheduler.stop();
    expect(index.writes).toEqual([3, 3]);
    expect(decodeRecoveryIndex((await h.store.readDerived?.(null, RID, RECOVERY_INDEX_FILE)) as Uint8Array, MAX_EVENT_BYTES)?.get("r1")?.pendingTimers).toEqual([]);
  });

  it("is written without a stop when nothing fires", async () => {
    h = await createHarness("2026-05-01T00:00:00.000Z");
    await h.append("r1", timerSet("t", "2026-05-01T01:00:00.000Z"));
    const index = watchIndexWrites(h);
    const written = index.next();
    await h.scheduler.start();
    await h.clock.advance(INDEX_WRITE_DELAY_MS);
    await written;
    expect(index.writes).toEqual([0]);
    const decoded = decodeRecoveryIndex((await h.store.readDerived?.(null, RID, RECOVERY_INDEX_FILE)) as Uint8Array, MAX_EVENT_BYTES);
    expect(decoded?.get("r1")?.pendingTimers.map((t) => t.timerId)).toEqual(["t"]);
  });

  it("is written at once by a stop() before the delay", async () => {
    h = await createHarness("2026-05-01T00:00:00.000Z");
    await h.append("r1", timerSet("t", "2026-05-01T01:00:00.000Z"));
    const index = watchIndexWrites(h);
    await h.scheduler.start();
    await h.scheduler.stop();
    expect(index.writes).toEqual([0]);
  });

  it("is written while the fire loop never goes idle (a commit that does not land), once the wait for idle has lasted its limit", async () => {
    // Discovery once a day: its polls would each wait on the commit that does not land.
    h = await createHarness("2026-05-01T00:00:00.000Z", { discoverEveryMs: 24 * 3_600_000 });
    await h.append("r1", timerSet("t", "2026-05-01T00:00:00.100Z"));
    await h.append("r2", timerSet("t", "2026-05-01T01:00:00.000Z"));
    const index = watchIndexWrites(h);
    // Every fire commit from now on waits for `land` (a load that keeps the loop busy).
    const store = h.store as { writeTreeDelta: RepoStore["writeTreeDelta"] };
    const writeTreeDelta = store.writeTreeDelta.bind(store);
    let land!: () => void;
    const landed = new Promise<void>((resolve) => {
      land = resolve;
    });
    let committing!: () => void;
    const inFlight = new Promise<void>((resolve) => {
      committing = resolve;
    });
    store.writeTreeDelta = (async (...args: Parameters<RepoStore["writeTreeDelta"]>) => {
      committing();
      await landed;
      return writeTreeDelta(...args);
    }) as RepoStore["writeTreeDelta"];
    await h.scheduler.start();
    await h.clock.advance(100);
    await inFlight;
    const written = index.next();
    await h.clock.advance(INDEX_WRITE_DELAY_MS);
    expect(index.writes).toEqual([]);
    await h.clock.advance(INDEX_IDLE_WAIT_MAX_MS);
    await written;
    // The index recovery made, with the commit still in flight.
    expect(index.writes).toEqual([0]);
    const decoded = decodeRecoveryIndex((await h.store.readDerived?.(null, RID, RECOVERY_INDEX_FILE)) as Uint8Array, MAX_EVENT_BYTES);
    expect([...(decoded?.keys() ?? [])].sort()).toEqual(["r1", "r2"]);
    land();
    await h.scheduler.idle();
    await h.scheduler.stop();
    expect(index.writes).toEqual([0, 1]);
    // Each advance lets the fake clock's settle budget run out on the fire that does not land.
  }, 90_000);

  it("left stale by a crash after its delayed write (the fires moved the runs on), makes the next start re-read the fired runs and fire nothing twice", async () => {
    h = await createHarness("2026-05-01T00:00:00.000Z");
    for (const run of ["r1", "r2"]) await h.append(run, timerSet("t", "2026-05-01T00:00:00.100Z"));
    await h.append("r3", timerSet("t", "2026-05-01T05:00:00.000Z"));
    const index = watchIndexWrites(h);
    await h.scheduler.start();
    await h.clock.advance(100);
    await h.scheduler.idle();
    const written = index.next();
    await h.clock.advance(INDEX_WRITE_DELAY_MS);
    await written;
    // The index on disk holds r1 and r2 with their timers pending. A crash now: nothing more is
    // written (stop() stands in for the kill, its index write dropped).
    const store = h.store as { writeDerived: NonNullable<RepoStore["writeDerived"]> };
    store.writeDerived = async () => undefined;
    const firedBefore = h.events.filter((e) => e.type === "fired").length;
    expect(firedBefore).toBe(2);
    await h.restart();
    await h.clock.advance(0);
    await h.scheduler.idle();
    expect(h.events.filter((e) => e.type === "fired")).toHaveLength(firedBefore);
    expect(h.scheduler.queuedTimers().map((t) => `${t.runId}/${t.timerId}`)).toEqual(["r3/t"]);
    expect((await h.log("r1")).filter((e) => e.type === "TimerFired")).toHaveLength(1);
  });
});
