/**
 * The scheduler queue's `disarmKey`: the fire committer disarms the timers a commit fired by the
 * key the queue delivered them under, and that must do exactly what `disarm` by ids does — drop
 * the queued generation and forget the delivery (so the next arm of that generation is reported
 * as a new arm, not as one back from a delivery).
 */
import { describe, expect, it } from "vitest";
import { createFakeClock } from "../../../src/testing/fake-clock.js";
import type { PendingTimer } from "../../../src/workflow/types.js";
import { createSchedulerQueue, timerKey, type DueGeneration } from "../../../seams/scheduler/scheduler-queue.js";

const START = "2026-01-01T00:00:00.000Z";

function setup() {
  const fake = createFakeClock(START);
  const deliveries: DueGeneration[][] = [];
  const queue = createSchedulerQueue({
    clock: fake.clock,
    timers: fake.timers,
    // Held, as a fire loop holds its delivery while it commits.
    onDue: (due) => {
      deliveries.push(due);
    },
    onError: () => {},
  });
  return { fake, queue, deliveries };
}

function timer(timerId: string, fireAt: string, setSeq: number): PendingTimer {
  return { timerId, fireAt, setSeq };
}

describe("scheduler queue: disarm by a delivered key", () => {
  it("forgets the delivery as disarm by ids does: the same generation armed again is a new arm", async () => {
    for (const by of ["ids", "key"] as const) {
      const { fake, queue, deliveries } = setup();
      const one = timer("t1", START, 3);
      const two = timer("t2", START, 4);
      expect(queue.arm("repo", "run-1", one, Date.parse(START))).toBe("armed");
      expect(queue.arm("repo", "run-1", two, Date.parse(START))).toBe("armed");
      await fake.advance(1);
      const due = deliveries.flat();
      expect(due.map((d) => d.key)).toEqual([timerKey("repo", "run-1", "t1"), timerKey("repo", "run-1", "t2")]);
      // Back from a delivery (a retry): kept, not reported as a new arm.
      expect(queue.arm("repo", "run-1", two, Date.parse(START) + 10)).toBe("kept");
      const [first] = due as [DueGeneration];
      // Nothing of t1 is queued; its delivery is forgotten either way.
      expect(by === "ids" ? queue.disarm("repo", "run-1", "t1") : queue.disarmKey(first.key)).toBe(false);
      expect(queue.arm("repo", "run-1", one, Date.parse(START) + 10)).toBe("armed");
      // A queued generation is dropped.
      expect(by === "ids" ? queue.disarm("repo", "run-1", "t2") : queue.disarmKey(timerKey("repo", "run-1", "t2"))).toBe(true);
      expect(queue.queued("repo", "run-1", "t2")).toBeUndefined();
      expect(queue.queued("repo", "run-1", "t1")).toBe(one);
      await queue.stop();
    }
  });
});
