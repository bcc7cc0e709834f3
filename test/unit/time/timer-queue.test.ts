import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createFakeClock, type FakeClock } from "../../../src/testing/fake-clock.js";
import type { Clock, TimerHandle, Timers } from "../../../src/time/clock.js";
import { createTimerQueue, type TimerQueueEntry, type TimerQueueOptions } from "../../../src/time/timer-queue.js";
import { expectCode } from "../../helpers/expect-code.js";

const ms = (iso: string): number => Date.parse(iso);

/** Timers that record every delay the queue asks for, and can shorten them to simulate early wakes. */
function recordingTimers(inner: Timers, shortenMs = 0): { timers: Timers; delays: number[] } {
  const delays: number[] = [];
  return {
    delays,
    timers: {
      setTimeout(fn: () => void, delayMs: number): TimerHandle {
        delays.push(delayMs);
        return inner.setTimeout(fn, delayMs > shortenMs ? delayMs - shortenMs : delayMs);
      },
      clearTimeout(handle: TimerHandle): void {
        inner.clearTimeout(handle);
      },
    },
  };
}

/**
 * Every delay an integer in 0 … maxArmMs. One assertion over the list: a long-delay test asks
 * for ~90,000 arms, and an `expect` per delay cost seconds of CPU, which under load outgrew
 * the test's time budget.
 */
function expectSafeDelays(delays: readonly number[], maxArmMs = 30_000): void {
  expect(delays.filter((delay) => !(Number.isInteger(delay) && delay >= 0 && delay <= maxArmMs))).toEqual([]);
}

interface Delivery<T> {
  readonly key: string;
  readonly fireAtMs: number;
  readonly payload: T;
  /** Wall clock when onDue received it. */
  readonly atMs: number;
}

/** A queue on a FakeClock whose onDue records each delivery with the wall clock at that moment. */
function setup<T = string>(
  startIso: string,
  overrides: Partial<TimerQueueOptions<T>> & { shortenMs?: number; fake?: FakeClock } = {},
) {
  const fake = overrides.fake ?? createFakeClock(startIso);
  const { timers, delays } = recordingTimers(fake.timers, overrides.shortenMs ?? 0);
  const delivered: Delivery<T>[] = [];
  const batches: TimerQueueEntry<T>[][] = [];
  const queue = createTimerQueue<T>({
    clock: fake.clock,
    timers,
    onDue: (entries) => {
      batches.push(entries);
      for (const entry of entries) delivered.push({ ...entry, atMs: fake.now() });
    },
    ...overrides,
  });
  return { fake, queue, delays, delivered, batches };
}


describe("timer queue: long delays (A1)", () => {
  it("fires far-future entries once each at their fireAt, with every arm capped", async () => {
    const { fake, queue, delays, delivered } = setup("2026-01-01T00:00:00Z");
    const start = fake.now();
    const far = ms("2026-02-01T00:00:00Z");
    const edge = ms("2026-01-25T20:31:23.647Z");
    const edge1 = ms("2026-01-25T20:31:23.648Z");
    expect(edge - start).toBe(2 ** 31 - 1);
    queue.schedule("t-far", far, "far");
    queue.schedule("t-edge", edge, "edge");
    queue.schedule("t-edge1", edge1, "edge1");

    await fake.advance(1);
    await fake.advance(999);
    await fake.advance(86_400_000 - 1000);
    expect(delivered).toEqual([]);

    await fake.advance(edge - fake.now() - 1);
    expect(delivered).toEqual([]);
    await fake.advance(1);
    expect(delivered).toEqual([{ key: "t-edge", fireAtMs: edge, payload: "edge", atMs: edge }]);
    await fake.advance(1);
    expect(delivered.map((d) => [d.key, d.atMs])).toEqual([
      ["t-edge", edge],
      ["t-edge1", edge1],
    ]);
    await fake.advance(far - fake.now() - 1);
    expect(delivered).toHaveLength(2);
    await fake.advance(1);
    await fake.advance(86_400_000);
    expect(delivered.map((d) => [d.key, d.atMs])).toEqual([
      ["t-edge", edge],
      ["t-edge1", edge1],
      ["t-far", far],
    ]);
    expect(queue.size).toBe(0);
    expect(fake.pending()).toBe(0);
    expectSafeDelays(delays);
    // About one wake per 30 s of the 31 days, never one per millisecond.
    expect(delays.length).toBeLessThan((far - start) / 30_000 + 10);
  });

  it("treats a past fireAt as due now, never ignored", async () => {
    const { fake, queue, delays, delivered } = setup("2026-05-01T09:00:00Z");
    queue.schedule("overdue", ms("2026-05-01T00:00:00Z"), "x");
    expect(delays).toEqual([0]);
    expect(delivered).toEqual([]); // never synchronously from schedule
    await fake.advance(0);
    expect(delivered).toEqual([
      { key: "overdue", fireAtMs: ms("2026-05-01T00:00:00Z"), payload: "x", atMs: ms("2026-05-01T09:00:00Z") },
    ]);
  });

  it("rejects NaN and infinite fire times with time_invalid, leaving the queue untouched", () => {
    const { queue, delays } = setup("2026-01-01T00:00:00Z");
    queue.schedule("a", ms("2026-01-01T00:01:00Z"), "a");
    for (const bad of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 9e15]) {
      expectCode(() => queue.schedule("a", bad, "bad"), "time_invalid");
      expectCode(() => queue.schedule("b", bad, "bad"), "time_invalid");
    }
    expect(queue.size).toBe(1);
    expect(queue.get("a")).toEqual({ key: "a", fireAtMs: ms("2026-01-01T00:01:00Z"), payload: "a" });
    expect(delays).toEqual([30_000]);
  });

  it("rejects a maxArmMs outside 1 … 2^31−1 with time_invalid", () => {
    const fake = createFakeClock("2026-01-01T00:00:00Z");
    for (const maxArmMs of [0, -1, 1.5, Number.NaN, 2 ** 31]) {
      expectCode(
        () => createTimerQueue({ clock: fake.clock, timers: fake.timers, maxArmMs, onDue: () => undefined }),
        "time_invalid",
      );
    }
  });
});

describe("timer queue: early and late wake-ups", () => {
  it("re-arms for the remaining 1 ms when woken at 03:59:59.999 for 04:00 (E4)", async () => {
    const { fake, queue, delays, delivered } = setup("2026-05-02T03:59:50Z", { shortenMs: 1 });
    const fireAt = ms("2026-05-02T04:00:00Z");
    queue.schedule("daily", fireAt, "tick");
    expect(delays).toEqual([10_000]);
    await fake.advance(9_999); // the shortened arm wakes at 03:59:59.999
    expect(fake.clock().toISOString()).toBe("2026-05-02T03:59:59.999Z");
    expect(delivered).toEqual([]);
    expect(delays).toEqual([10_000, 1]);
    await fake.advance(1);
    expect(delivered).toEqual([{ key: "daily", fireAtMs: fireAt, payload: "tick", atMs: fireAt }]);
  });

  it("does not fire early when the wall clock steps back; fires when the clock reaches fireAt", async () => {
    const { fake, queue, delays, delivered } = setup("2026-05-01T00:00:00Z");
    const fireAt = ms("2026-05-01T00:01:00Z");
    queue.schedule("t", fireAt, "t");
    fake.jump("2026-04-30T23:00:00Z");
    await fake.advance(60_000);
    expect(delivered).toEqual([]);
    await fake.advance(3_600_000 - 1);
    expect(delivered).toEqual([]);
    await fake.advance(1);
    expect(delivered.map((d) => d.atMs)).toEqual([fireAt]);
    expectSafeDelays(delays);
  });

  it("notices a day-long forward jump within maxArmMs of monotonic time (E1)", async () => {
    const { fake, queue, delivered } = setup("2026-05-01T00:00:00Z");
    const oneShot = ms("2026-05-02T00:00:00Z");
    queue.schedule("one-shot", oneShot, "o");
    queue.schedule("later", ms("2026-05-03T00:00:00Z"), "l");
    await fake.advance(10_000);
    fake.jump("2026-05-02T00:00:30Z");
    await fake.advance(0);
    expect(delivered).toEqual([]); // a jump fires nothing by itself
    await fake.advance(19_999);
    expect(delivered).toEqual([]);
    await fake.advance(1); // the capped arm set at 00:00:00 wakes 30 s later
    expect(delivered.map((d) => [d.key, d.fireAtMs, d.atMs])).toEqual([
      ["one-shot", oneShot, ms("2026-05-02T00:00:50Z")],
    ]);
    expect(queue.has("later")).toBe(true);
  });

  it("delivers at once after a known jump when recheck is called", async () => {
    const { fake, queue, delivered } = setup("2026-05-01T00:00:00Z");
    queue.schedule("one-shot", ms("2026-05-02T00:00:00Z"), "o");
    fake.jump("2026-05-02T00:00:30Z");
    await queue.recheck();
    expect(delivered.map((d) => d.key)).toEqual(["one-shot"]);
  });

  it("treats a delay ≤ 0 from a later second clock reading as due now (E3)", async () => {
    const { fake, queue, delays, delivered } = setup("2026-05-01T12:00:00Z");
    // The owner computed the next tick from reading T; by the time it schedules, the clock says T+7 s.
    const tick = fake.now() + 3_000;
    fake.jump("2026-05-01T12:00:07Z");
    queue.schedule("tick", tick, "t");
    expect(delays).toEqual([0]);
    await fake.advance(0);
    expect(delivered).toEqual([{ key: "tick", fireAtMs: tick, payload: "t", atMs: ms("2026-05-01T12:00:07Z") }]);
  });

  it("never delivers before fireAt by the reading it used, with a clock that disagrees with itself", async () => {
    const fake = createFakeClock("2026-05-01T12:00:00Z");
    let reads = 0;
    let lastReadMs = Number.NaN;
    const flapping: Clock = () => {
      reads += 1;
      lastReadMs = fake.now() + (reads % 2 === 0 ? 7_000 : 0);
      return new Date(lastReadMs);
    };
    const { timers, delays } = recordingTimers(fake.timers);
    const delivered: [string, number][] = [];
    const queue = createTimerQueue<null>({
      clock: flapping,
      timers,
      onDue: (entries) => {
        for (const entry of entries) {
          expect(lastReadMs).toBeGreaterThanOrEqual(entry.fireAtMs);
          delivered.push([entry.key, entry.fireAtMs]);
        }
      },
    });
    const base = fake.now();
    for (const offset of [1_000, 3_000, 5_000, 9_000, 40_000]) queue.schedule(`t${offset}`, base + offset, null);
    await fake.advance(60_000);
    expect(delivered.map(([key]) => key).sort()).toEqual(["t1000", "t3000", "t40000", "t5000", "t9000"]);
    expect(queue.size).toBe(0);
    expectSafeDelays(delays);
  });

  it("waits the cap and retries when the clock cannot be read, reporting the error", async () => {
    const fake = createFakeClock("2026-05-01T00:00:00Z");
    let broken = true;
    const errors: unknown[] = [];
    const delivered: string[] = [];
    const { timers, delays } = recordingTimers(fake.timers);
    const queue = createTimerQueue<null>({
      clock: () => {
        if (broken) throw new Error("clock unavailable");
        return fake.clock();
      },
      timers,
      onDue: (entries) => {
        delivered.push(...entries.map((entry) => entry.key));
      },
      onError: (error) => errors.push(error),
    });
    queue.schedule("t", fake.now() - 1, null);
    expect(delays).toEqual([30_000]);
    expect(errors).toHaveLength(1);
    await fake.advance(30_000);
    expect(delivered).toEqual([]);
    broken = false;
    await fake.advance(30_000);
    expect(delivered).toEqual(["t"]);
  });
});

describe("timer queue: schedule, replace, cancel", () => {
  it("replaces an entry scheduled again under the same key", async () => {
    const { fake, queue, delivered } = setup("2026-01-01T00:00:00Z");
    const start = fake.now();
    queue.schedule("a", start + 10_000, "first");
    queue.schedule("a", start + 5_000, "second");
    expect(queue.size).toBe(1);
    expect(queue.get("a")).toEqual({ key: "a", fireAtMs: start + 5_000, payload: "second" });
    await fake.advance(5_000);
    expect(delivered).toEqual([{ key: "a", fireAtMs: start + 5_000, payload: "second", atMs: start + 5_000 }]);

    queue.schedule("b", start + 6_000, "early");
    queue.schedule("b", start + 20_000, "moved later");
    await fake.advance(10_000);
    expect(delivered).toHaveLength(1);
    await fake.advance(5_000);
    expect(delivered.map((d) => [d.key, d.payload, d.atMs - start])).toEqual([
      ["a", "second", 5_000],
      ["b", "moved later", 20_000],
    ]);
  });

  it("never delivers a cancelled entry and reports whether there was one", async () => {
    const { fake, queue, delivered } = setup("2026-01-01T00:00:00Z");
    const start = fake.now();
    queue.schedule("a", start + 1_000, "a");
    queue.schedule("b", start + 2_000, "b");
    expect(queue.cancel("a")).toBe(true);
    expect(queue.cancel("a")).toBe(false);
    expect(queue.cancel("nope")).toBe(false);
    expect(queue.has("a")).toBe(false);
    expect(queue.peek()?.key).toBe("b");
    await fake.advance(5_000);
    expect(delivered.map((d) => d.key)).toEqual(["b"]);
  });

  it("disarms when the last entry is cancelled", () => {
    const { fake, queue } = setup("2026-01-01T00:00:00Z");
    queue.schedule("a", fake.now() + 1_000, "a");
    expect(fake.pending()).toBe(1);
    queue.cancel("a");
    expect(fake.pending()).toBe(0);
    expect(queue.peek()).toBeUndefined();
  });

  it("re-arms only when a new entry wakes earlier than the current arm", () => {
    const { fake, queue, delays } = setup("2026-01-01T00:00:00Z");
    const start = fake.now();
    queue.schedule("late", start + 20_000, "l");
    queue.schedule("later", start + 25_000, "l");
    queue.schedule("far", start + 86_400_000, "f");
    expect(delays).toEqual([20_000]);
    queue.schedule("sooner", start + 5_000, "s");
    expect(delays).toEqual([20_000, 5_000]);
    expect(fake.pending()).toBe(1);
  });

  it("lists every pending entry and peeks the earliest, ties in scheduling order", () => {
    const { fake, queue } = setup("2026-01-01T00:00:00Z");
    const start = fake.now();
    queue.schedule("x", start + 3_000, "x");
    queue.schedule("y", start + 1_000, "y");
    queue.schedule("z", start + 1_000, "z");
    expect(queue.peek()).toEqual({ key: "y", fireAtMs: start + 1_000, payload: "y" });
    expect([...queue.entries()].map((entry) => entry.key).sort()).toEqual(["x", "y", "z"]);
    expect(queue.size).toBe(3);
  });
});

describe("timer queue: batches", () => {
  it("delivers many entries due at once in one batch, in fireAt order, ties in scheduling order", async () => {
    const { fake, queue, batches } = setup<number>("2026-01-01T00:00:00Z");
    const start = fake.now();
    const expected: [number, number][] = [];
    for (let index = 0; index < 1_000; index += 1) {
      const fireAtMs = start + ((index * 7919) % 500) * 1_000;
      queue.schedule(`k${index}`, fireAtMs, index);
      expected.push([fireAtMs, index]);
    }
    expected.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    fake.jump("2026-01-02T00:00:00Z");
    await queue.recheck();
    expect(batches).toHaveLength(1);
    expect(batches[0]!.map((entry) => [entry.fireAtMs, entry.payload])).toEqual(expected);
    expect(queue.size).toBe(0);
  });

  it("after a whole queue fell due at once, takes new entries, replacements and cancels as usual", async () => {
    const { fake, queue, batches } = setup<number>("2026-01-01T00:00:00Z");
    const start = fake.now();
    for (let index = 0; index < 300; index += 1) queue.schedule(`k${index}`, start + (index % 7) * 1_000, index);
    fake.jump("2026-01-02T00:00:00Z");
    await queue.recheck();
    expect(batches).toHaveLength(1);
    expect(batches[0]).toHaveLength(300);
    expect(queue.size).toBe(0);
    expect(queue.has("k5")).toBe(false);
    const now = fake.now();
    queue.schedule("k5", now + 3_000, 1);
    queue.schedule("k6", now + 1_000, 2);
    queue.schedule("k7", now + 2_000, 3);
    queue.schedule("k6", now + 4_000, 4);
    expect(queue.cancel("k7")).toBe(true);
    expect(queue.cancel("k8")).toBe(false);
    expect(queue.size).toBe(2);
    expect(queue.peek()?.key).toBe("k5");
    await fake.advance(5_000);
    expect(batches.slice(1).flat().map((entry) => [entry.key, entry.payload])).toEqual([
      ["k5", 1],
      ["k6", 4],
    ]);
    expect(queue.size).toBe(0);
  });

  it("does not re-enter onDue while it runs and delivers what fell due meanwhile right after", async () => {
    const fake = createFakeClock("2026-01-01T00:00:00Z", { maxSettleRounds: 50 });
    const start = fake.now();
    let running = 0;
    let maxRunning = 0;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const batches: string[][] = [];
    const queue = createTimerQueue<null>({
      clock: fake.clock,
      timers: fake.timers,
      onDue: async (entries) => {
        running += 1;
        maxRunning = Math.max(maxRunning, running);
        batches.push(entries.map((entry) => entry.key));
        if (batches.length === 1) await gate;
        running -= 1;
      },
    });
    queue.schedule("a", start + 1_000, null);
    queue.schedule("b", start + 2_000, null);
    queue.schedule("c", start + 3_000, null);
    queue.schedule("d", start + 60_000, null);
    await fake.advance(5_000);
    expect(batches).toEqual([["a"]]);
    queue.schedule("e", start + 4_000, null); // scheduled during delivery, already due
    const rechecked = queue.recheck(); // a no-op while onDue runs; settles with that delivery
    await fake.advance(0);
    expect(batches).toEqual([["a"]]);
    release();
    await rechecked;
    expect(batches).toEqual([["a"], ["b", "c", "e"]]);
    await queue.stop();
    expect(maxRunning).toBe(1);
    expect(queue.has("d")).toBe(true);
  });

  it("takeDue hands over what fell due while onDue runs, in order, and leaves the rest queued", async () => {
    const fake = createFakeClock("2026-01-01T00:00:00Z", { maxSettleRounds: 50 });
    const start = fake.now();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const batches: string[][] = [];
    const queue = createTimerQueue<null>({
      clock: fake.clock,
      timers: fake.timers,
      onDue: async (entries) => {
        batches.push(entries.map((entry) => entry.key));
        if (batches.length === 1) await gate;
      },
    });
    queue.schedule("a", start + 1_000, null);
    queue.schedule("c", start + 3_000, null);
    queue.schedule("b", start + 2_000, null);
    queue.schedule("d", start + 60_000, null);
    await fake.advance(5_000); // a delivered; onDue still at work
    expect(queue.takeDue().map((entry) => entry.key)).toEqual(["b", "c"]);
    expect(queue.takeDue()).toEqual([]);
    release();
    await queue.recheck();
    expect(batches).toEqual([["a"]]); // b and c were taken, not delivered again
    expect(queue.has("d")).toBe(true);
    await queue.stop();
    await fake.advance(60_000);
    expect(queue.takeDue()).toEqual([]); // stopped: nothing handed over
    expect(queue.has("d")).toBe(true);
  });

  it("lets onDue wait on the fake clock itself; entries due meanwhile follow in the next batch", async () => {
    const fake = createFakeClock("2026-01-01T00:00:00Z", { maxSettleRounds: 50 });
    const start = fake.now();
    const batches: [string[], number][] = [];
    const queue = createTimerQueue<null>({
      clock: fake.clock,
      timers: fake.timers,
      onDue: async (entries) => {
        batches.push([entries.map((entry) => entry.key), fake.now() - start]);
        // A retry backoff on the injected timers.
        await new Promise<void>((resolve) => fake.timers.setTimeout(resolve, 2_000));
      },
    });
    queue.schedule("a", start + 1_000, null);
    queue.schedule("b", start + 2_000, null);
    queue.schedule("c", start + 3_000, null);
    queue.schedule("d", start + 10_000, null);
    await fake.advance(20_000);
    expect(batches).toEqual([
      [["a"], 1_000],
      [["b", "c"], 3_000],
      [["d"], 10_000],
    ]);
  });

  it("lets onDue schedule new entries; those already due go out in the next batch", async () => {
    const fake = createFakeClock("2026-01-01T00:00:00Z");
    const start = fake.now();
    const batches: string[][] = [];
    const queue = createTimerQueue<number>({
      clock: fake.clock,
      timers: fake.timers,
      onDue: (entries) => {
        batches.push(entries.map((entry) => entry.key));
        for (const entry of entries) {
          if (entry.payload < 3) {
            queue.schedule(`${entry.key}+`, entry.fireAtMs, entry.payload + 1); // due now
            queue.schedule(`${entry.key}-next`, entry.fireAtMs + 60_000, 99);
          }
        }
      },
    });
    queue.schedule("a", start + 1_000, 0);
    await fake.advance(1_000);
    expect(batches).toEqual([["a"], ["a+"], ["a++"], ["a+++"]]);
    await fake.advance(60_000);
    expect(batches.at(-1)).toEqual(["a-next", "a+-next", "a++-next"]);
  });

  it("hands a failing batch to onError and keeps delivering", async () => {
    const errors: [unknown, string[]][] = [];
    const delivered: string[] = [];
    const fake = createFakeClock("2026-01-01T00:00:00Z");
    const start = fake.now();
    const queue = createTimerQueue<null>({
      clock: fake.clock,
      timers: fake.timers,
      onDue: async (entries) => {
        if (entries.some((entry) => entry.key === "bad")) throw new Error("commit failed");
        delivered.push(...entries.map((entry) => entry.key));
      },
      onError: (error, entries) => errors.push([error, entries.map((entry) => entry.key)]),
    });
    queue.schedule("bad", start + 1_000, null);
    queue.schedule("good", start + 2_000, null);
    await fake.advance(5_000);
    expect(errors.map(([error, keys]) => [(error as Error).message, keys])).toEqual([["commit failed", ["bad"]]]);
    expect(delivered).toEqual(["good"]);
  });

  it("without onError, surfaces an onDue failure through the wake and keeps running", async () => {
    const delivered: string[] = [];
    const fake = createFakeClock("2026-01-01T00:00:00Z");
    const start = fake.now();
    const queue = createTimerQueue<null>({
      clock: fake.clock,
      timers: fake.timers,
      onDue: (entries) => {
        if (entries.some((entry) => entry.key === "bad")) throw new Error("commit failed");
        delivered.push(...entries.map((entry) => entry.key));
      },
    });
    queue.schedule("bad", start + 1_000, null);
    queue.schedule("good", start + 2_000, null);
    await expect(fake.advance(1_000)).rejects.toThrow("commit failed");
    await fake.advance(1_000);
    expect(delivered).toEqual(["good"]);
  });
});

describe("timer queue: stop", () => {
  it("clears the arm, ignores later schedules and delivers nothing more", async () => {
    const { fake, queue, delivered } = setup("2026-01-01T00:00:00Z");
    const start = fake.now();
    queue.schedule("a", start + 1_000, "a");
    expect(fake.pending()).toBe(1);
    await queue.stop();
    expect(queue.stopped).toBe(true);
    expect(fake.pending()).toBe(0);
    expect(queue.schedule("b", start + 500, "b")).toBe(false);
    expect(queue.has("b")).toBe(false);
    await queue.recheck();
    await fake.advance(60_000);
    expect(delivered).toEqual([]);
    expect(queue.size).toBe(1);
    expect(queue.cancel("a")).toBe(true);
  });
});

describe("timer queue: properties", () => {
  type Op =
    | { kind: "schedule"; key: number; offsetMs: number }
    | { kind: "cancel"; key: number }
    | { kind: "advance"; ms: number }
    | { kind: "jump"; ms: number };

  const op: fc.Arbitrary<Op> = fc.oneof(
    fc.record({
      kind: fc.constant("schedule" as const),
      key: fc.integer({ min: 0, max: 9 }),
      offsetMs: fc.integer({ min: -5_000, max: 200_000 }),
    }),
    fc.record({ kind: fc.constant("cancel" as const), key: fc.integer({ min: 0, max: 9 }) }),
    fc.record({ kind: fc.constant("advance" as const), ms: fc.integer({ min: 0, max: 100_000 }) }),
    fc.record({ kind: fc.constant("jump" as const), ms: fc.integer({ min: -60_000, max: 120_000 }) }),
  );

  it("delivers every live entry exactly once, never before fireAt by the clock, cancelled ones never", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { maxLength: 40 }), fc.boolean(), async (ops, asyncOnDue) => {
        const fake = createFakeClock("2026-01-01T00:00:00Z");
        const { timers, delays } = recordingTimers(fake.timers);
        /** key → the generation that is live (scheduled, not cancelled, not yet delivered). */
        const live = new Map<string, { generation: number; fireAtMs: number }>();
        const problems: string[] = [];
        let generation = 0;
        const check = (entries: TimerQueueEntry<number>[]): void => {
          for (let index = 1; index < entries.length; index += 1) {
            if (entries[index]!.fireAtMs < entries[index - 1]!.fireAtMs) problems.push("batch out of order");
          }
          for (const entry of entries) {
            const expected = live.get(entry.key);
            if (expected?.generation !== entry.payload) problems.push(`${entry.key} delivered but not live`);
            if (fake.now() < entry.fireAtMs) problems.push(`${entry.key} delivered early`);
            live.delete(entry.key);
          }
        };
        const queue = createTimerQueue<number>({
          clock: fake.clock,
          timers,
          onDue: asyncOnDue
            ? async (entries) => {
                await Promise.resolve();
                check(entries);
              }
            : check,
        });
        for (const step of ops) {
          if (step.kind === "schedule") {
            generation += 1;
            const fireAtMs = fake.now() + step.offsetMs;
            queue.schedule(`k${step.key}`, fireAtMs, generation);
            live.set(`k${step.key}`, { generation, fireAtMs });
          } else if (step.kind === "cancel") {
            expect(queue.cancel(`k${step.key}`)).toBe(live.delete(`k${step.key}`));
          } else if (step.kind === "advance") {
            await fake.advance(step.ms);
          } else {
            fake.jump(new Date(fake.now() + step.ms).toISOString());
          }
          expect(queue.size).toBe(live.size);
        }
        // Run long enough for every live entry: the latest fireAt, plus one capped arm.
        const latest = Math.max(fake.now(), ...[...live.values()].map((entry) => entry.fireAtMs));
        await fake.advance(latest - fake.now() + 30_000);
        expect(problems).toEqual([]);
        expect(live.size).toBe(0);
        expect(queue.size).toBe(0);
        expectSafeDelays(delays);
      }),
      { numRuns: 150 },
    );
  });

  it("delivers each live generation exactly once, in (fireAt, scheduling) order, when whole queues fall due at once and onDue schedules and cancels meanwhile", async () => {
    type Burst =
      | { kind: "bulk"; from: number; count: number; instants: number; offsetMs: number }
      | { kind: "schedule"; key: number; offsetMs: number }
      | { kind: "cancel"; key: number }
      | { kind: "advance"; ms: number }
      | { kind: "jump"; ms: number };
    const burst: fc.Arbitrary<Burst> = fc.oneof(
      fc.record({
        kind: fc.constant("bulk" as const),
        from: fc.integer({ min: 0, max: 150 }),
        count: fc.integer({ min: 60, max: 160 }),
        instants: fc.integer({ min: 1, max: 3 }),
        offsetMs: fc.integer({ min: -5_000, max: 5_000 }),
      }),
      fc.record({ kind: fc.constant("schedule" as const), key: fc.integer({ min: 0, max: 300 }), offsetMs: fc.integer({ min: -2_000, max: 10_000 }) }),
      fc.record({ kind: fc.constant("cancel" as const), key: fc.integer({ min: 0, max: 300 }) }),
      fc.record({ kind: fc.constant("advance" as const), ms: fc.integer({ min: 0, max: 20_000 }) }),
      fc.record({ kind: fc.constant("jump" as const), ms: fc.integer({ min: -10_000, max: 60_000 }) }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(burst, { maxLength: 25 }), fc.integer({ min: 0, max: 300 }), fc.boolean(), async (ops, racer, asyncOnDue) => {
        const fake = createFakeClock("2026-01-01T00:00:00Z");
        const live = new Map<string, { generation: number; fireAtMs: number }>();
        const problems: string[] = [];
        let generation = 0;
        let queue!: ReturnType<typeof createTimerQueue<number>>;
        const schedule = (key: string, fireAtMs: number): void => {
          generation += 1;
          queue.schedule(key, fireAtMs, generation);
          live.set(key, { generation, fireAtMs });
        };
        let deliveries = 0;
        const check = (entries: TimerQueueEntry<number>[]): void => {
          for (let index = 1; index < entries.length; index += 1) {
            const a = entries[index - 1]!;
            const b = entries[index]!;
            if (b.fireAtMs < a.fireAtMs || (b.fireAtMs === a.fireAtMs && b.payload < a.payload)) problems.push(`batch out of order at ${index}`);
          }
          for (const entry of entries) {
            if (live.get(entry.key)?.generation !== entry.payload) problems.push(`${entry.key}#${entry.payload} delivered but not live`);
            if (fake.now() < entry.fireAtMs) problems.push(`${entry.key} delivered early`);
            live.delete(entry.key);
          }
          // A delivery racing new work: a replacement of one delivered key, a new due timer, a cancel.
          deliveries += 1;
          if (deliveries % 2 === 1 && entries.length > 0) {
            schedule(entries[0]!.key, fake.now() - 1);
            schedule(`r${racer}`, fake.now());
            if (queue.cancel(`k${racer}`)) live.delete(`k${racer}`);
          }
        };
        queue = createTimerQueue<number>({
          clock: fake.clock,
          timers: fake.timers,
          onDue: asyncOnDue
            ? async (entries) => {
                await Promise.resolve();
                check(entries);
              }
            : check,
        });
        for (const step of ops) {
          if (step.kind === "bulk") {
            for (let i = 0; i < step.count; i += 1) schedule(`k${step.from + i}`, fake.now() + step.offsetMs + (i % step.instants) * 1_000);
          } else if (step.kind === "schedule") {
            schedule(`k${step.key}`, fake.now() + step.offsetMs);
          } else if (step.kind === "cancel") {
            expect(queue.cancel(`k${step.key}`)).toBe(live.delete(`k${step.key}`));
          } else if (step.kind === "advance") {
            await fake.advance(step.ms);
          } else {
            fake.jump(new Date(fake.now() + step.ms).toISOString());
            await queue.recheck();
          }
          expect(queue.size).toBe(live.size);
        }
        const latest = Math.max(fake.now(), ...[...live.values()].map((entry) => entry.fireAtMs));
        await fake.advance(latest - fake.now() + 30_000);
        await queue.recheck();
        expect(problems).toEqual([]);
        expect(live.size).toBe(0);
        expect(queue.size).toBe(0);
      }),
      { numRuns: 150 },
    );
  });

  it("keeps the heap ordered through random schedules, replacements and cancels", () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.oneof(
            fc.record({
              kind: fc.constant("schedule" as const),
              key: fc.integer({ min: 0, max: 199 }),
              at: fc.integer({ min: 0, max: 50 }),
            }),
            fc.record({ kind: fc.constant("cancel" as const), key: fc.integer({ min: 0, max: 199 }) }),
            fc.record({ kind: fc.constant("pop" as const) }),
          ),
          { maxLength: 600 },
        ),
        (steps) => {
          const fake = createFakeClock("2026-01-01T00:00:00Z");
          const base = fake.now() + 86_400_000;
          const queue = createTimerQueue<number>({ clock: fake.clock, timers: fake.timers, onDue: () => undefined });
          const model = new Map<string, { fireAtMs: number; order: number }>();
          let order = 0;
          const modelMin = (): string | undefined => {
            let best: [string, { fireAtMs: number; order: number }] | undefined;
            for (const item of model) {
              if (
                best === undefined ||
                item[1].fireAtMs < best[1].fireAtMs ||
                (item[1].fireAtMs === best[1].fireAtMs && item[1].order < best[1].order)
              ) {
                best = item;
              }
            }
            return best?.[0];
          };
          for (const step of steps) {
            if (step.kind === "schedule") {
              order += 1;
              queue.schedule(`k${step.key}`, base + step.at, order);
              model.set(`k${step.key}`, { fireAtMs: base + step.at, order });
            } else if (step.kind === "cancel") {
              expect(queue.cancel(`k${step.key}`)).toBe(model.delete(`k${step.key}`));
            } else {
              const head = queue.peek();
              expect(head?.key).toBe(modelMin());
              if (head !== undefined) {
                queue.cancel(head.key);
                model.delete(head.key);
              }
            }
            expect(queue.size).toBe(model.size);
            expect(queue.peek()?.key).toBe(modelMin());
          }
          for (const [key, value] of model) {
            expect(queue.get(key)).toEqual({ key, fireAtMs: value.fireAtMs, payload: value.order });
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});
