import { describe, expect, it } from "vitest";
import { createFakeClock } from "../../../src/testing/fake-clock.js";
import { expectCode } from "../../helpers/expect-code.js";

const START = "2026-01-01T00:00:00Z";
const START_MS = Date.parse(START);


describe("createFakeClock", () => {
  it("starts the wall clock at the given instant", () => {
    const fake = createFakeClock("2026-03-08T02:30:00-05:00");
    expect(fake.now()).toBe(Date.parse("2026-03-08T07:30:00.000Z"));
    expect(fake.clock().toISOString()).toBe("2026-03-08T07:30:00.000Z");
    expect(fake.clock()).not.toBe(fake.clock());
    expect(fake.pending()).toBe(0);
  });

  it("rejects instants without an offset or with an unreal date", () => {
    for (const bad of [
      "2026-02-30T00:00:00Z",
      "2026-13-01T00:00:00Z",
      "2026-03-08T24:00:00Z",
      "2026-03-08T02:30:00",
      "2026-03-08",
      "yesterday",
      "",
    ]) {
      expectCode(() => createFakeClock(bad), "time_invalid");
    }
    expect(createFakeClock("2028-02-29T00:00:00Z").now()).toBe(Date.parse("2028-02-29T00:00:00Z"));
  });
});

describe("FakeClock.advance", () => {
  it("fires due timers in due-time order, ties in scheduling order, with the clock at each due time", async () => {
    const fake = createFakeClock(START);
    const fired: [string, number][] = [];
    const at = (name: string) => () => {
      fired.push([name, fake.now() - START_MS]);
    };
    fake.timers.setTimeout(at("c30"), 30);
    fake.timers.setTimeout(at("a10"), 10);
    fake.timers.setTimeout(at("d20"), 20);
    fake.timers.setTimeout(at("b10"), 10);
    expect(fake.pending()).toBe(4);

    await fake.advance(15);
    expect(fired).toEqual([
      ["a10", 10],
      ["b10", 10],
    ]);
    expect(fake.now()).toBe(START_MS + 15);
    expect(fake.pending()).toBe(2);

    await fake.advance(100);
    expect(fired.map(([name]) => name)).toEqual(["a10", "b10", "d20", "c30"]);
    expect(fired[3]).toEqual(["c30", 30]);
    expect(fake.now()).toBe(START_MS + 115);
    expect(fake.pending()).toBe(0);
  });

  it("fires timers scheduled by callbacks within the same advance when they fall due", async () => {
    const fake = createFakeClock(START);
    const fired: number[] = [];
    fake.timers.setTimeout(() => {
      fired.push(fake.now() - START_MS);
      fake.timers.setTimeout(() => {
        fired.push(fake.now() - START_MS);
        fake.timers.setTimeout(() => fired.push(fake.now() - START_MS), 1000);
      }, 5);
    }, 10);
    await fake.advance(100);
    expect(fired).toEqual([10, 15]);
    expect(fake.pending()).toBe(1);
    await fake.advance(915);
    expect(fired).toEqual([10, 15, 1015]);
  });

  it("runs a zero delay at advance(0) and coerces NaN, negative and overflowing delays to 1 ms as node does", async () => {
    const fake = createFakeClock(START);
    const fired: string[] = [];
    fake.timers.setTimeout(() => fired.push("zero"), 0);
    fake.timers.setTimeout(() => fired.push("nan"), Number.NaN);
    fake.timers.setTimeout(() => fired.push("negative"), -50);
    fake.timers.setTimeout(() => fired.push("overflow"), 2 ** 31);
    await fake.advance(0);
    expect(fired).toEqual(["zero"]);
    await fake.advance(1);
    expect(fired).toEqual(["zero", "nan", "negative", "overflow"]);
  });

  it("awaits the promise a callback returns, including thread-pool work, before moving on", async () => {
    const fake = createFakeClock(START);
    const log: string[] = [];
    fake.timers.setTimeout(() => {
      return (async () => {
        for (let step = 0; step < 50; step += 1) await new Promise<void>((resolve) => setImmediate(resolve));
        await crypto.subtle.digest("SHA-1", new Uint8Array(1024));
        log.push(`first done at ${fake.now() - START_MS}`);
      })();
    }, 10);
    fake.timers.setTimeout(() => log.push(`second at ${fake.now() - START_MS}`), 20);
    await fake.advance(30);
    expect(log).toEqual(["first done at 10", "second at 20"]);
  });

  it("lets microtask work a callback starts without returning it settle", async () => {
    const fake = createFakeClock(START);
    let done = false;
    fake.timers.setTimeout(() => {
      void Promise.resolve()
        .then(() => Promise.resolve())
        .then(() => {
          done = true;
        });
    }, 10);
    await fake.advance(10);
    expect(done).toBe(true);
  });

  it("fires a timer a callback's work waits on when it falls due within the advance", async () => {
    const fake = createFakeClock(START, { maxSettleRounds: 50 });
    const log: string[] = [];
    const sleep = (ms: number) => new Promise<void>((resolve) => fake.timers.setTimeout(resolve, ms));
    fake.timers.setTimeout(() => {
      return (async () => {
        log.push(`retrying at ${fake.now() - START_MS}`);
        await sleep(1000);
        log.push(`retried at ${fake.now() - START_MS}`);
      })();
    }, 10);
    await fake.advance(5000);
    expect(log).toEqual(["retrying at 10", "retried at 1010"]);
  });

  it("rejects when a callback throws, after firing the earlier ones; time stays at that timer", async () => {
    const fake = createFakeClock(START);
    const fired: string[] = [];
    fake.timers.setTimeout(() => fired.push("a"), 5);
    fake.timers.setTimeout(() => {
      throw new Error("boom");
    }, 10);
    fake.timers.setTimeout(() => fired.push("c"), 20);
    await expect(fake.advance(50)).rejects.toThrow("boom");
    expect(fired).toEqual(["a"]);
    expect(fake.now()).toBe(START_MS + 10);
    await fake.advance(40);
    expect(fired).toEqual(["a", "c"]);
    expect(fake.now()).toBe(START_MS + 50);
  });

  it("rejects when a callback's promise rejects", async () => {
    const fake = createFakeClock(START);
    fake.timers.setTimeout(() => Promise.reject(new Error("async boom")), 5);
    await expect(fake.advance(10)).rejects.toThrow("async boom");
  });

  it("runs overlapping advance calls one after the other", async () => {
    const fake = createFakeClock(START);
    const fired: number[] = [];
    for (const delay of [5, 15, 25]) fake.timers.setTimeout(() => fired.push(fake.now() - START_MS), delay);
    const first = fake.advance(10);
    const second = fake.advance(10);
    await Promise.all([first, second]);
    expect(fired).toEqual([5, 15]);
    expect(fake.now()).toBe(START_MS + 20);
  });

  it("throws time_invalid for a negative or non-finite advance, before time moves", () => {
    const fake = createFakeClock(START);
    expectCode(() => fake.advance(-1), "time_invalid");
    expectCode(() => fake.advance(Number.NaN), "time_invalid");
    expectCode(() => fake.advance(Number.POSITIVE_INFINITY), "time_invalid");
    expect(fake.now()).toBe(START_MS);
  });

  it("does not fire cleared timers and ignores foreign handles", async () => {
    const fake = createFakeClock(START);
    const fired: string[] = [];
    const a = fake.timers.setTimeout(() => fired.push("a"), 10);
    fake.timers.setTimeout(() => fired.push("b"), 10);
    fake.timers.clearTimeout(a);
    fake.timers.clearTimeout(a);
    fake.timers.clearTimeout(undefined);
    fake.timers.clearTimeout({ id: 2 });
    expect(fake.pending()).toBe(1);
    await fake.advance(10);
    expect(fired).toEqual(["b"]);
  });
});

describe("FakeClock.jump", () => {
  it("moves only the wall clock and fires nothing", async () => {
    const fake = createFakeClock(START);
    const fired: string[] = [];
    fake.timers.setTimeout(() => fired.push(fake.clock().toISOString()), 60_000);
    fake.jump("2026-01-02T00:00:00Z");
    await fake.advance(0);
    expect(fired).toEqual([]);
    expect(fake.pending()).toBe(1);
    expect(fake.now()).toBe(Date.parse("2026-01-02T00:00:00Z"));
    // The timer keeps its monotonic due time: 60 s after it was set, whatever the wall clock says.
    await fake.advance(59_999);
    expect(fired).toEqual([]);
    await fake.advance(1);
    expect(fired).toEqual(["2026-01-02T00:01:00.000Z"]);
  });

  it("steps the wall clock backwards too", async () => {
    const fake = createFakeClock(START);
    await fake.advance(10_000);
    fake.jump("2025-12-31T23:00:00Z");
    expect(fake.clock().toISOString()).toBe("2025-12-31T23:00:00.000Z");
    await fake.advance(1000);
    expect(fake.clock().toISOString()).toBe("2025-12-31T23:00:01.000Z");
  });

  it("throws time_invalid for a bad instant and keeps the clock", () => {
    const fake = createFakeClock(START);
    expectCode(() => fake.jump("2026-04-31T09:00:00Z"), "time_invalid");
    expectCode(() => fake.jump("2026-01-02 00:00:00"), "time_invalid");
    expect(fake.now()).toBe(START_MS);
  });
});
