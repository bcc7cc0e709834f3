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

describe("scheduler queue: deliveries taken back in order or not", () => {
  /** Arms `count` timers due at START in runs run-0 … and delivers them (in one or `split` deliveries). */
  async function delivered(count: number, split = 1) {
    const { fake, queue, deliveries } = setup();
    const timers = Array.from({ length: count }, (_, i) => timer(`t${i}`, START, i + 1));
    const per = Math.ceil(count / split);
    for (let part = 0; part < split; part++) {
      for (let i = part * per; i < Math.min(count, (part + 1) * per); i++) expect(queue.arm("repo", `run-${i}`, timers[i] as PendingTimer, Date.parse(START) + part)).toBe("armed");
      await fake.advance(part === 0 ? 1 : 1);
    }
    return { queue, timers, due: deliveries.flat() };
  }

  /** What the queue says of arming each timer's delivered generation again: kept (still out) or armed (forgotten). */
  function outcomes(queue: ReturnType<typeof setup>["queue"], timers: readonly PendingTimer[]): string[] {
    return timers.map((t, i) => queue.arm("repo", `run-${i}`, t, Date.parse(START) + 60_000));
  }

  it("forgets exactly the deliveries disarmed, whatever the order they are disarmed in", async () => {
    const orders: ((n: number) => number[])[] = [
      (n) => Array.from({ length: n }, (_, i) => i),
      (n) => Array.from({ length: n }, (_, i) => n - 1 - i),
      (n) => [2, 0, 1, ...Array.from({ length: n - 3 }, (_, i) => i + 3)],
      (n) => Array.from({ length: n }, (_, i) => (i * 7) % n),
    ];
    for (const split of [1, 3]) {
      for (const order of orders) {
        for (const taken of [0, 4, 9, 12]) {
          const { queue, timers, due } = await delivered(12, split);
          expect(due).toHaveLength(12);
          const disarmed = order(12).slice(0, taken);
          for (const i of disarmed) expect(queue.disarmKey((due.find((d) => d.runId === `run-${i}`) as DueGeneration).key)).toBe(false);
          expect(outcomes(queue, timers)).toEqual(timers.map((_, i) => (disarmed.includes(i) ? "armed" : "kept")));
          await queue.stop();
        }
      }
    }
  });

  it("takes a delivery back by arming it again, in order or not, and a newer generation is a new arm", async () => {
    const { queue, timers, due } = await delivered(6, 2);
    expect(due).toHaveLength(6);
    // In order for the first two, then one out of order (run-4), then the rest.
    expect(queue.arm("repo", "run-0", timers[0] as PendingTimer, Date.parse(START) + 5)).toBe("kept");
    expect(queue.arm("repo", "run-1", { ...(timers[1] as PendingTimer), setSeq: 99 }, Date.parse(START) + 5)).toBe("armed");
    expect(queue.arm("repo", "run-4", timers[4] as PendingTimer, Date.parse(START) + 5)).toBe("kept");
    expect(queue.disarmKey((due[2] as DueGeneration).key)).toBe(false);
    // Each delivery is taken back once: arming the same generations again keeps them queued (kept).
    expect(outcomes(queue, timers)).toEqual(["kept", "kept", "armed", "kept", "kept", "kept"]);
    // Nothing is out any more: disarming and arming again is a new arm for every one.
    for (let i = 0; i < 6; i++) queue.disarm("repo", `run-${i}`, `t${i}`);
    expect(outcomes(queue, timers)).toEqual(Array.from({ length: 6 }, () => "armed"));
    await queue.stop();
  });
});
